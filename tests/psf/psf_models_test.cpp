// The PSF concept and its models (GaussHermite, GaussHermite2, SpotGrid): the concept check,
// spots that are normalised boxes at their corners around the trace, the project's synthetic
// PSF in every file layout read back as written, refusals of other formats, and simulation +
// extraction through each model.
#include "perfex_test.hpp"

#include <perfex/extract/extract_frame.hpp>
#include <perfex/extract/simulate.hpp>
#include <perfex/psf/synthetic.hpp>

#ifdef PERFEX_TEST_HAVE_IO
#include "io/io_test_util.hpp"

#include <perfex/io/fits.hpp>
#include <perfex/io/psf_files.hpp>
#endif

#include <algorithm>
#include <cmath>
#include <vector>

namespace {

using perfex::psf::GaussHermite2Psf;
using perfex::psf::GaussHermitePsf;
using perfex::psf::SpotGridPsf;

static_assert(perfex::psf::is_psf_model<GaussHermitePsf<Kokkos::HostSpace>>::value, "");
static_assert(perfex::psf::is_psf_model<GaussHermite2Psf<Kokkos::HostSpace>>::value, "");
static_assert(perfex::psf::is_psf_model<SpotGridPsf<Kokkos::HostSpace>>::value, "");
static_assert(!perfex::psf::is_psf_model<perfex::psf::GaussHermitePsfData>::value, "");

// 10 fibres of the synthetic PSF on a CCD 300 columns wide.
perfex::psf::GaussHermitePsfData small_psf(double tailamp = 0.0) {
  perfex::psf::SyntheticPsfOptions o;
  o.nfib = 10;
  o.bundlesize = 10;
  o.npix_x = 300;
  o.trace_wavemax = o.wavemax;
  o.tailamp = tailamp;
  return perfex::psf::make_synthetic_psf(o);
}

// The synthetic PSF in every format, as host data.
std::vector<perfex::psf::AnyPsfData> every_format() {
  const auto gh = small_psf(0.002);
  return {gh, perfex::psf::as_gauss_hermite2(gh), perfex::psf::make_spot_grid_psf(small_psf())};
}

struct HostSpots {
  int ny = 0, nx = 0;
  std::vector<double> spots, x, y;
  std::vector<int> c0, r0;
};

template <class Exec, class Psf>
HostSpots spots_of(const Exec& exec, const Psf& psf, const std::vector<double>& waves) {
  using Mem = typename Exec::memory_space;
  const int nf = psf.nfib(), K = static_cast<int>(waves.size());
  HostSpots h;
  h.ny = psf.spot_rows();
  h.nx = psf.spot_cols();
  Kokkos::View<double*, Mem> w("w", K);
  Kokkos::deep_copy(w, Kokkos::View<const double*, Kokkos::HostSpace>(waves.data(), K));
  Kokkos::View<double****, Kokkos::LayoutRight, Mem> s("s", nf, K, h.ny, h.nx);
  Kokkos::View<int**, Mem> xc("xc", nf, K), yc("yc", nf, K);
  Kokkos::View<double**, Mem> x("x", nf, K), y("y", nf, K);
  perfex::psf::compute_spots(exec, psf, 0, nf, w, s, xc, yc);
  perfex::psf::evaluate_traces(exec, psf, 0, nf, Kokkos::View<const double*, Mem>(w), x, y);
  auto hs = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), s);
  auto hx = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), xc);
  auto hy = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), yc);
  auto tx = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), x);
  auto ty = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), y);
  h.spots.assign(hs.data(), hs.data() + hs.size());
  for (int f = 0; f < nf; ++f)
    for (int k = 0; k < K; ++k) {
      h.c0.push_back(hx(f, k));
      h.r0.push_back(hy(f, k));
      h.x.push_back(tx(f, k));
      h.y.push_back(ty(f, k));
    }
  return h;
}

}  // namespace

PERFEX_BACKEND_TEST_CASE("psf models: normalised spots around the trace", "[psf]") {
  PERFEX_ONLY_SELECTED_BACKEND();
  const TestType exec;
  const std::vector<double> waves{5600.0, 6000.5, 6412.3, 7000.0, 7700.9};
  for (const perfex::psf::AnyPsfData& data : every_format()) {
    CAPTURE(data.summary().type);
    perfex::psf::with_psf_model(exec, data, [&](const auto& psf) {
      const HostSpots h = spots_of(exec, psf, waves);
      const std::size_t box = static_cast<std::size_t>(h.ny) * h.nx;
      for (std::size_t s = 0; s < h.c0.size(); ++s) {
        double sum = 0, mx = 0, my = 0, lowest = 0;
        for (int p = 0; p < h.ny; ++p)
          for (int q = 0; q < h.nx; ++q) {
            const double v = h.spots[s * box + p * h.nx + q];
            lowest = std::min(lowest, v);
            sum += v;
            mx += v * (h.c0[s] + q);
            my += v * (h.r0[s] + p);
          }
        CHECK(lowest >= 0);
        CHECK(std::abs(sum - 1) < 1e-12);
        // Centroid on the trace (the Gauss-Hermite terms move it by a few hundredths).
        CHECK(std::abs(mx - h.x[s]) < 0.3);
        CHECK(std::abs(my - h.y[s]) < 0.3);
      }
      return 0;
    });
  }
}

PERFEX_BACKEND_TEST_CASE("psf models: the plan's corners are each model's spot corners",
                         "[psf][extract]") {
  PERFEX_ONLY_SELECTED_BACKEND();
  const TestType exec;
  const std::vector<double> waves{5700.0, 6100.25, 6900.0};
  for (const perfex::psf::AnyPsfData& data : every_format()) {
    CAPTURE(data.summary().type);
    perfex::psf::with_psf_model(exec, data, [&](const auto& psf) {
      using Psf = std::decay_t<decltype(psf)>;
      using Mem = typename TestType::memory_space;
      const HostSpots h = spots_of(exec, psf, waves);
      const int nf = psf.nfib(), K = static_cast<int>(waves.size());
      Kokkos::View<double*, Mem> w("w", K);
      Kokkos::deep_copy(w, Kokkos::View<const double*, Kokkos::HostSpace>(waves.data(), K));
      Kokkos::View<int**, Mem> px("px", nf, K), py("py", nf, K);
      Kokkos::parallel_for(
          "perfex::test::corners",
          Kokkos::MDRangePolicy<TestType, Kokkos::Rank<2>>(exec, {0, 0}, {nf, K}),
          perfex::extract::detail::SpotCornersFunctor<typename Psf::device_type, Mem>{
              psf.device(), 0, w, px, py});
      auto hx = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), px);
      auto hy = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), py);
      int differ = 0;
      for (int f = 0; f < nf; ++f)
        for (int k = 0; k < K; ++k)
          differ += (hx(f, k) != h.c0[f * K + k]) + (hy(f, k) != h.r0[f * K + k]);
      CHECK(differ == 0);
      return 0;
    });
  }
}

PERFEX_BACKEND_TEST_CASE("psf models: simulate and extract through each model", "[psf][extract]") {
  PERFEX_ONLY_SELECTED_BACKEND();
  namespace ex = perfex::extract;
  const TestType exec;
  ex::ExtractionOptions opt;
  opt.wmin = 6000;
  opt.wmax = 6200;
  opt.specmin = 0;
  opt.nspec = 10;
  opt.bundlesize = 10;
  opt.nsubbundles = 2;
  const std::vector<double> wave = ex::make_wavelength_grid(opt.wmin, opt.wmax, opt.dw);
  const std::vector<double> truth = ex::make_test_spectra(opt.nspec, wave, 3);
  for (const perfex::psf::AnyPsfData& data : every_format()) {
    CAPTURE(data.summary().type);
    const ex::SimulatedImage sim = perfex::psf::with_psf_model(exec, data, [&](const auto& psf) {
      return ex::simulate_image(exec, psf, 0, opt.nspec, wave, truth, 3.0, 17);
    });
    const ex::Frame frame = ex::extract_frame(exec, data, sim.ccd, opt);
    CHECK(frame.failed_patches == 0);
    double sum2 = 0;
    long n = 0;
    for (int f = 0; f < frame.nspec; ++f)
      for (int k = 0; k < frame.nwave; ++k) {
        const std::size_t i = frame.index(f, k);
        if (frame.ivar[i] <= 0) continue;
        const double pull = (frame.flux[i] - truth[i] / opt.dw) * std::sqrt(frame.ivar[i]);
        sum2 += pull * pull;
        ++n;
      }
    CHECK(n == static_cast<long>(frame.nspec) * frame.nwave);
    CHECK(std::sqrt(sum2 / n) == Approx(1.0).margin(0.1));
  }
}

#ifdef PERFEX_TEST_HAVE_IO

TEST_CASE("psf files: the synthetic PSF in every layout reads back as written", "[io][psf]") {
  perfex_io_test::TempDir tmp;
  const auto gh = small_psf(0.002);
  using perfex::io::read_psf;
  using perfex::io::write_psf;

  SECTION("GAUSS-HERMITE PSFVER 2: the same PSF, its series padded to one length") {
    write_psf(tmp.file("v2.fits"), gh, 2);
    const perfex::psf::AnyPsfData back = read_psf(tmp.file("v2.fits"));
    const auto* d = back.get_if<perfex::psf::GaussHermitePsfData>();
    REQUIRE(d != nullptr);
    CHECK(back.summary().type == "GAUSS-HERMITE");
    CHECK(d->param_names == gh.param_names);
    CHECK(d->xtrace.wavemin == gh.xtrace.wavemin);
    CHECK(d->ytrace.wavemax == gh.ytrace.wavemax);
    for (double w : {5600.0, 6500.5, 7800.0})
      for (int f : {0, 9})
        for (int p = 0; p < gh.nparam(); ++p)
          CHECK(d->param_value(p, f, w) == gh.param_value(p, f, w));
    // Spots bitwise the PSFVER 3 layout's.
    const Kokkos::DefaultHostExecutionSpace exec;
    const std::vector<double> waves{5800.0, 6300.7, 7100.0};
    const HostSpots a = spots_of(exec, GaussHermitePsf<Kokkos::HostSpace>(exec, gh), waves);
    const HostSpots b = spots_of(exec, GaussHermitePsf<Kokkos::HostSpace>(exec, *d), waves);
    CHECK(a.spots == b.spots);
    CHECK(a.c0 == b.c0);
    CHECK(a.r0 == b.r0);
  }
  SECTION("GAUSS-HERMITE2") {
    const auto gh2 = perfex::psf::as_gauss_hermite2(gh);
    write_psf(tmp.file("gh2.fits"), gh2);
    const perfex::psf::AnyPsfData back = read_psf(tmp.file("gh2.fits"));
    const auto* d = back.get_if<perfex::psf::GaussHermite2PsfData>();
    REQUIRE(d != nullptr);
    CHECK(d->ghdegx2 == gh2.ghdegx2);
    CHECK(d->gh.hsizex == gh2.gh.hsizex);
    CHECK(d->gh.param_names == gh2.gh.param_names);
    CHECK(back.summary().spot_rows == 2 * gh2.gh.hsizey);
  }
  SECTION("SPOTGRID") {
    const auto grid = perfex::psf::make_spot_grid_psf(gh);
    write_psf(tmp.file("spots.fits"), grid);
    const perfex::psf::AnyPsfData back = read_psf(tmp.file("spots.fits"));
    const auto* d = back.get_if<perfex::psf::SpotGridPsfData>();
    REQUIRE(d != nullptr);
    CHECK(d->spots == grid.spots);
    CHECK(d->spotpos == grid.spotpos);
    CHECK(d->spotwave == grid.spotwave);
    CHECK(d->fiberpos == grid.fiberpos);
    CHECK(d->rebin() == 4);
    CHECK(back.summary().spot_rows == 16);
  }
}

TEST_CASE("psf files: other formats and damaged new layouts are refused by name", "[io][psf]") {
  perfex_io_test::TempDir tmp;
  using perfex::io::FitsFile;
  using perfex::io::read_psf;
  const auto gh = small_psf();
  SECTION("MONOSPOT and PCA-PIX") {
    for (const char* type : {"MONOSPOT", "PCA-PIX"}) {
      const std::string path = tmp.file(std::string(type) + ".fits");
      perfex::io::write_psf(path, perfex::psf::make_spot_grid_psf(gh));
      FitsFile(FitsFile::open_readwrite(path)).write_key("PSFTYPE", type);
      REQUIRE_THROWS_WITH(read_psf(path), Catch::Contains(std::string("'") + type + "'") &&
                                              Catch::Contains("GAUSS-HERMITE2") &&
                                              Catch::Contains(path));
    }
  }
  SECTION("PSFVER 2 parameters on different domains") {
    const std::string path = tmp.file("domains.fits");
    perfex::io::write_psf(path, gh, 2);
    {
      FitsFile f = FitsFile::open_readwrite(path);
      f.move_to_index(1);
      auto w = f.read_column<double>("WAVEMAX");
      w.back() += 1;
      f.write_column<double>("WAVEMAX", w);
    }
    REQUIRE_THROWS_WITH(read_psf(path), Catch::Contains("one domain") && Catch::Contains(path));
  }
  SECTION("the one-table layouts' messages name their table, not specex's HDUs") {
    // PSFVER 2 and GAUSS-HERMITE2 keep keywords, parameters and traces in HDU 1: a bad
    // keyword is reported there, a bad trace coefficient at its row X of that table.
    for (const bool second_core : {false, true}) {
      const std::string path = tmp.file(second_core ? "hsize-gh2.fits" : "hsize-v2.fits");
      if (second_core)
        perfex::io::write_psf(path, perfex::psf::as_gauss_hermite2(gh));
      else
        perfex::io::write_psf(path, gh, 2);
      {
        FitsFile f = FitsFile::open_readwrite(path);
        f.move_to_index(1);
        f.write_key("HSIZEX", 0);
      }
      REQUIRE_THROWS_WITH(read_psf(path), Catch::Contains(", HDU 1: keywords HSIZEX/HSIZEY = 0/") &&
                                              !Catch::Contains("'PSF'") && Catch::Contains(path));
    }
    const std::string path = tmp.file("nan-x.fits");
    perfex::io::write_psf(path, gh, 2);
    {
      FitsFile f = FitsFile::open_readwrite(path);
      f.move_to_index(1);
      f.write_key("EXTNAME", "PSFPARAMS");
      auto c = f.read_column<double>("COEFF");
      c[0] = std::nan("");  // row X (the first), fibre 0, coefficient 0
      f.write_column<double>("COEFF", c);
    }
    REQUIRE_THROWS_WITH(read_psf(path),
                        Catch::Contains("HDU 1 ('PSFPARAMS'), row 'X': coefficient 0 "
                                        "of fibre 0 is not finite") &&
                            !Catch::Contains("XTRACE"));
  }
  SECTION("GAUSS-HERMITE2 without its second core's degrees") {
    const std::string path = tmp.file("gh2.fits");
    perfex::io::write_psf(path, perfex::psf::as_gauss_hermite2(gh));
    {
      FitsFile f = FitsFile::open_readwrite(path);
      f.move_to_index(1);
      f.delete_key("GHDEGX2");
    }
    REQUIRE_THROWS_WITH(read_psf(path), Catch::Contains("GHDEGX2") && Catch::Contains(path));
  }
  SECTION("SPOTGRID: NSPEC, spot sizes") {
    const std::string path = tmp.file("spots.fits");
    perfex::io::write_psf(path, perfex::psf::make_spot_grid_psf(gh));
    FitsFile(FitsFile::open_readwrite(path)).write_key("NSPEC", 11);
    REQUIRE_THROWS_WITH(read_psf(path), Catch::Contains("NSPEC") && Catch::Contains(path));
    FitsFile(FitsFile::open_readwrite(path)).write_key("NSPEC", 10);
    FitsFile(FitsFile::open_readwrite(path)).write_key("PIXSIZE", 0.015 / 9);
    REQUIRE_THROWS_WITH(read_psf(path), Catch::Contains("SPOTS") && Catch::Contains("multiple"));
  }
}

#endif
