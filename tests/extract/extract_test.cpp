// Self-contained extraction tests on a synthetic DESI-like PSF and simulated images (no
// ../shared needed): planning rules, accuracy against the truth, decomposition invariance,
// reproducibility and every robustness case of the frame driver.
#include "perfex_test.hpp"
#include "scene.hpp"

#include <perfex/extract/extract_frame.hpp>
#include <perfex/extract/simulate.hpp>
#include <perfex/psf/synthetic.hpp>

#include <limits>

#include <algorithm>
#include <cmath>

namespace {

using perfex::extract::ExtractionOptions;
using perfex::extract::Frame;
using perfex_extract_test::extract;
using perfex_extract_test::Scene;
using perfex_extract_test::scene;
using perfex_extract_test::scene_options;

bool all_finite(const Frame& f) {
  auto fin = [](const std::vector<double>& v) {
    return std::all_of(v.begin(), v.end(), [](double x) { return std::isfinite(x); });
  };
  return fin(f.flux) && fin(f.ivar) && fin(f.resolution) && fin(f.chi2pix) &&
         fin(f.pixmask_fraction);
}

// (flux - R * truth / dlambda) * sqrt(ivar) over interior bins, R from the stored band.
std::vector<double> pulls(const Frame& f) {
  const Scene& s = scene();
  const int nd = f.ndiag, nt = static_cast<int>(s.truth_wave.size());
  std::vector<double> out;
  for (int fib = 0; fib < f.nspec; ++fib)
    for (int k = nd; k < f.nwave - nd; ++k) {
      double expect = 0;
      for (int d = 0; d <= 2 * nd; ++d) {  // row k of R: R[k][c] = band[d'][c] with d' = k - c + nd
        const int c = k + d - nd;
        const int dd = k - c + nd;
        expect += f.resolution[(static_cast<std::size_t>(fib) * (2 * nd + 1) + dd) * f.nwave + c] *
                  s.truth_photons[static_cast<std::size_t>(fib) * nt + c + s.margin];
      }
      const double dl = f.wave[1] - f.wave[0];
      out.push_back((f.flux[f.index(fib, k)] - expect / dl) * std::sqrt(f.ivar[f.index(fib, k)]));
    }
  return out;
}

}  // namespace

TEST_CASE("patch planning follows gpu_specter and specter's rules", "[extract]") {
  using namespace perfex::extract;
  CHECK(split_sizes(25, 5) == std::vector<int>{5, 5, 5, 5, 5});
  CHECK(split_sizes(25, 4) == std::vector<int>{6, 6, 6, 7});
  CHECK(split_sizes(11, 3) == std::vector<int>{4, 3, 4});
  CHECK(split_sizes(5, 2) == std::vector<int>{2, 3});
  CHECK(split_sizes(8, 3) == std::vector<int>{3, 2, 3});
  CHECK(split_sizes(3, 5) == std::vector<int>{1, 1, 1});
  const auto wave = make_wavelength_grid(5760.0, 7620.0, 0.8);
  REQUIRE(wave.size() == 2326);
  CHECK(wave[1] - wave[0] == 0.8000000000001819);
  CHECK(wave.back() == 7620.000000000423);
  const auto full = make_padded_grid(wave, 0.8, 12, 50);
  CHECK(full.size() == 2400);
  CHECK(full[12] == wave[0]);
  CHECK(gradient(wave)[100] == Approx(0.8).epsilon(1e-12));

  ExtractionOptions o;
  o.specmin = 3;  // not a multiple of the bundle size
  o.nspec = 30;
  const auto bundles = plan_bundles(o, 500);
  REQUIRE(bundles.size() == 2);
  CHECK(bundles[0].bundle_lo == 0);
  CHECK(bundles[0].req_lo == 3);
  CHECK(bundles[0].req_hi == 25);
  CHECK(bundles[1].req_hi == 33);
  CHECK(o.wavepad() == 12);
  o.nspec = 600;
  CHECK_THROWS_WITH(plan_bundles(o, 500),
                    Catch::Contains("nspec 600) requested, but the PSF has 500 fibres (0-499)"));
}

PERFEX_BACKEND_TEST_CASE("extraction of a simulated image: pulls against the truth", "[extract]") {
  PERFEX_ONLY_SELECTED_BACKEND();
  const Frame f = extract<TestType>(scene().image);
  REQUIRE(f.failed_patches == 0);
  REQUIRE(all_finite(f));
  const auto p = pulls(f);
  double sum = 0, sum2 = 0;
  for (double x : p) {
    sum += x;
    sum2 += x * x;
  }
  const double mean = sum / double(p.size()), rms = std::sqrt(sum2 / double(p.size()));
  INFO("pull mean " << mean << ", RMS " << rms << " over " << p.size() << " bins");
  CHECK(rms == Approx(1.0).margin(0.05));
  CHECK(std::abs(mean) < 0.1);
  // Resolution rows rebuilt from the band sum to 1 up to the truncation at +-nd.
  const int nd = f.ndiag;
  const int k = f.nwave / 2;
  double rowsum = 0;
  for (int d = 0; d <= 2 * nd; ++d)
    rowsum += f.resolution[static_cast<std::size_t>(2 * nd - d) * f.nwave + k + d - nd];
  CHECK(rowsum == Approx(1.0).margin(2e-3));
  // Run statistics. Bundles of 5 in 2 sub-bundles (3 + 2 fibres, up to 2 padding fibres): a
  // patch solves at most 5 fibres and keeps 2 or 3. The flops lie between every patch's
  // eigendecompositions alone and the largest patch's full count at the widest band.
  const ExtractionOptions o = scene_options();
  const int nwt = o.nwavestep + 2 * o.wavepad();
  perfex::extract::PatchDesc widest;
  widest.nfib = 5;
  widest.keep0 = 1;
  widest.nkeepfib = 3;
  widest.band = f.max_band;
  CHECK(f.max_band > 0);
  CHECK(f.max_band < widest.nfib * nwt);
  CHECK(f.linalg_flops >= f.npatches * 2 * perfex::linalg::flops::syev(nwt));
  CHECK(f.linalg_flops <=
        f.npatches * perfex::extract::patch_flops(widest, nwt, f.ndiag, o.decorrelation));
}

PERFEX_BACKEND_TEST_CASE("extraction does not depend on the patch decomposition", "[extract]") {
  PERFEX_ONLY_SELECTED_BACKEND();
  const Frame a = extract<TestType>(scene().image);
  ExtractionOptions o = scene_options();
  o.nsubbundles = 1;
  o.nwavestep = 40;
  const Frame b = extract<TestType>(scene().image, o);
  double worst = 0;
  for (std::size_t i = 0; i < a.flux.size(); ++i)
    worst =
        std::max(worst, std::abs(a.flux[i] - b.flux[i]) / std::sqrt(1 / a.ivar[i] + 1 / b.ivar[i]));
  INFO("max |dflux|/sigma between decompositions " << worst);
  CHECK(worst < 0.1);
}

TEST_CASE("extraction is reproducible and identical on every CPU backend", "[extract]") {
  const Frame a = extract<Kokkos::DefaultHostExecutionSpace>(scene().image);
  const Frame b = extract<Kokkos::DefaultHostExecutionSpace>(scene().image);
  CHECK(a.flux == b.flux);  // bitwise
  CHECK(a.ivar == b.ivar);
  CHECK(a.resolution == b.resolution);
#if defined(KOKKOS_ENABLE_SERIAL) && defined(KOKKOS_ENABLE_OPENMP)
  const Frame s = extract<Kokkos::Serial>(scene().image);
  const Frame o = extract<Kokkos::OpenMP>(scene().image);
  for (std::size_t i = 0; i < s.flux.size(); ++i) {
    CHECK(std::abs(s.flux[i] - o.flux[i]) <= 1e-12 * std::abs(s.flux[i]) + 1e-300);
    CHECK(std::abs(s.ivar[i] - o.ivar[i]) <= 1e-12 * std::abs(s.ivar[i]) + 1e-300);
  }
#endif
}

TEST_CASE("host arrays are used in place when clean, copied and sanitised otherwise", "[extract]") {
  using perfex::extract::wrap_host_image;
  auto img = scene().image;
  const auto wrapped = wrap_host_image(img.pixels.data(), img.ivar.data(), img.nrows, img.ncols);
  CHECK(wrapped.pixels.data() == img.pixels.data());
  CHECK(wrapped.ivar.data() == img.ivar.data());
  CHECK(wrapped.nonfinite_pixels == 0);
  const Frame direct = perfex::extract::extract_frame(Kokkos::DefaultHostExecutionSpace(),
                                                      scene().psf, wrapped, scene_options());
  const Frame uploaded = extract<Kokkos::DefaultHostExecutionSpace>(img);
  CHECK(direct.flux == uploaded.flux);  // bitwise: same pixels, same solver

  img.pixels[5] = std::nan("");
  const auto copied = wrap_host_image(img.pixels.data(), img.ivar.data(), img.nrows, img.ncols);
  CHECK(copied.pixels.data() != img.pixels.data());
  CHECK(copied.nonfinite_pixels == 1);
  CHECK(copied.value(0, 5) == 0.0);
  CHECK(copied.weight(0, 5) == 0.0);
  img.ivar[7] = -1.0;
  CHECK_THROWS_WITH(wrap_host_image(img.pixels.data(), img.ivar.data(), img.nrows, img.ncols),
                    Catch::Contains("negative inverse variance"));
}

TEST_CASE("host arrays are checked and copied only in the box an extraction reads", "[extract]") {
  using perfex::extract::ImageRegion;
  using perfex::extract::PixelBox;
  using perfex::extract::wrap_host_image;
  auto img = scene().image;
  const int cols = img.ncols;
  auto at = [&](int r, int c) { return static_cast<std::size_t>(r) * cols + c; };
  const PixelBox box{100, 140, 20, 50};
  img.pixels[at(10, 5)] = std::nan("");  // outside the box: neither read nor counted
  img.ivar[at(11, 6)] = -1.0;
  const auto clean = wrap_host_image(img.pixels.data(), img.ivar.data(), img.nrows, cols, {}, box);
  CHECK(clean.pixels.data() == img.pixels.data());
  CHECK(clean.nonfinite_pixels == 0);

  img.pixels[at(120, 30)] = INFINITY;
  const auto copied = wrap_host_image(img.pixels.data(), img.ivar.data(), img.nrows, cols, {}, box);
  CHECK(copied.pixels.extent(0) == 40);
  CHECK(copied.pixels.extent(1) == 30);
  CHECK(copied.nonfinite_pixels == 1);
  CHECK(copied.nrows() == img.nrows);
  CHECK(copied.ncols() == cols);
  CHECK(copied.holds(box));
  CHECK_FALSE(copied.holds(PixelBox{99, 140, 20, 50}));
  CHECK(copied.value(120, 30) == 0.0);
  CHECK(copied.weight(120, 30) == 0.0);
  CHECK(copied.value(139, 49) == img.pixels[at(139, 49)]);
  CHECK(copied.weight(100, 20) == img.ivar[at(100, 20)]);

  // Arrays that are a rectangle of the CCD (an MPI rank's share): the box in CCD coordinates,
  // a negative ivar named at its CCD row and column.
  const ImageRegion share{90, 10, img.nrows + 90, cols + 10};
  const auto inner = wrap_host_image(img.pixels.data(), img.ivar.data(), img.nrows, cols, share,
                                     PixelBox{190, 230, 30, 60});
  CHECK(inner.nonfinite_pixels == 1);
  CHECK(inner.value(210, 40) == 0.0);
  CHECK(inner.value(229, 59) == img.pixels[at(139, 49)]);
  img.ivar[at(121, 31)] = -2.0;
  CHECK_THROWS_WITH(wrap_host_image(img.pixels.data(), img.ivar.data(), img.nrows, cols, share,
                                    PixelBox{190, 230, 30, 60}),
                    Catch::Contains("negative inverse variance -2.000000 at row 211, column 41"));
}

PERFEX_BACKEND_TEST_CASE("masked, non-finite and overflowing pixels never produce NaN",
                         "[extract]") {
  PERFEX_ONLY_SELECTED_BACKEND();
  const Frame clean = extract<TestType>(scene().image);
  const ExtractionOptions o = scene_options();

  SECTION("a fully masked region gives flux 0 and ivar 0") {
    auto img = scene().image;
    std::fill(img.ivar.begin(), img.ivar.end(), 0.0);
    const Frame f = extract<TestType>(img);
    REQUIRE(all_finite(f));
    CHECK(std::all_of(f.ivar.begin(), f.ivar.end(), [](double v) { return v == 0; }));
    CHECK(std::all_of(f.flux.begin(), f.flux.end(), [](double v) { return v == 0; }));
    CHECK(std::all_of(f.pixmask_fraction.begin(), f.pixmask_fraction.end(),
                      [](double v) { return v > 0.999; }));
    CHECK((f.mask[0] & perfex::extract::allbadpix) != 0);
  }
  SECTION("NaN and Inf pixels are masked and counted") {
    auto img = scene().image;
    img.pixels[static_cast<std::size_t>(img.ncols) * 1000 + 120] = std::nan("");
    img.ivar[static_cast<std::size_t>(img.ncols) * 1001 + 121] = INFINITY;
    const Frame f = extract<TestType>(img);
    CHECK(f.nonfinite_pixels == 2);
    CHECK(all_finite(f));
    CHECK_FALSE(f.warnings.empty());
  }
  SECTION("an overflowing patch fails alone: flux and ivar 0 there, reported, the rest intact") {
    auto img = scene().image;
    // A pixel on fibre 7's trace in the middle of the range: only that sub-bundle's patch sees it.
    perfex::psf::GaussHermitePsf<Kokkos::HostSpace> dpsf(scene().psf);
    Kokkos::View<double*, Kokkos::HostSpace> w("w", 1);
    w(0) = 6040.0;
    Kokkos::View<double**, Kokkos::HostSpace> x("x", 1, 1), y("y", 1, 1);
    perfex::psf::evaluate_traces(Kokkos::DefaultHostExecutionSpace(), dpsf, 7, 1,
                                 Kokkos::View<const double*, Kokkos::HostSpace>(w), x, y);
    const std::size_t pix = static_cast<std::size_t>(std::lround(y(0, 0))) * img.ncols +
                            static_cast<std::size_t>(std::lround(x(0, 0)));
    img.pixels[pix] = 1e308;
    img.ivar[pix] = 1e10;
    const Frame f = extract<TestType>(img);
    CHECK(f.failed_patches >= 1);
    REQUIRE(f.warnings.size() == static_cast<std::size_t>(f.failed_patches));
    CHECK_THAT(f.warnings[0], Catch::Contains("fibres"));
    CHECK(all_finite(f));
    int zeroed = 0, intact = 0;
    for (std::size_t i = 0; i < f.flux.size(); ++i) {
      if (f.ivar[i] == 0 && f.flux[i] == 0) ++zeroed;
      if (f.flux[i] == clean.flux[i] && f.ivar[i] == clean.ivar[i]) ++intact;
    }
    CHECK(zeroed > 0);
    CHECK(zeroed + intact == static_cast<int>(f.flux.size()));
  }
  SECTION("wavelengths running off the CCD and outside the PSF domain") {
    ExtractionOptions off = o;
    off.wmin = 5480.0;  // below the PSF domain (5543) and below row 0
    off.wmax = 5600.0;
    const Frame f = extract<TestType>(scene().image, off);
    CHECK(all_finite(f));
    CHECK(f.failed_patches == 0);
    CHECK(f.ivar[f.index(0, 0)] == 0);  // 5480 A lands far below the CCD
  }
}

PERFEX_BACKEND_TEST_CASE("patch bandwidth is the widest overlap of spot boxes", "[extract]") {
  PERFEX_ONLY_SELECTED_BACKEND();
  using Exec = TestType;
  using Mem = typename Exec::memory_space;
  // Default pitch (next two fibres overlap) and a crowded one (five neighbours overlap).
  for (const double pitch : {7.28, 3.0}) {
    CAPTURE(pitch);
    perfex::psf::SyntheticPsfOptions po;
    po.nfib = 10;
    po.bundlesize = 10;
    po.pitch = pitch;
    const perfex::psf::GaussHermitePsf<Mem> psf(perfex::psf::make_synthetic_psf(po));
    const int nf = 10, nk = 60;
    Kokkos::View<double*, Mem> wave("wave", nk);
    auto hw = Kokkos::create_mirror_view(wave);
    for (int k = 0; k < nk; ++k) hw(k) = 6000.0 + 0.8 * k;
    Kokkos::deep_copy(wave, hw);
    Kokkos::View<double****, Kokkos::LayoutRight, Mem> spots("spots", nf, nk, psf.ny(), psf.nx());
    Kokkos::View<int**, Mem> xc("xc", nf, nk), yc("yc", nf, nk);
    perfex::psf::compute_spots(Exec(), psf, 0, nf, Kokkos::View<const double*, Mem>(wave), spots,
                               xc, yc);
    std::vector<perfex::extract::PatchDesc> plan(3);
    plan[0].fib0 = 0, plan[0].nfib = 7, plan[0].kf0 = 0;
    plan[1].fib0 = 2, plan[1].nfib = 8, plan[1].kf0 = 10;
    plan[2].fib0 = 9, plan[2].nfib = 1, plan[2].kf0 = 20;
    const int nwt = 40;
    Kokkos::View<perfex::extract::PatchDesc*, Mem> dplan("plan", plan.size());
    Kokkos::deep_copy(dplan, Kokkos::View<const perfex::extract::PatchDesc*, Kokkos::HostSpace>(
                                 plan.data(), plan.size()));
    const int widest_patch = perfex::extract::measure_bandwidths(
        Exec(), Kokkos::View<const int**, Mem>(xc), Kokkos::View<const int**, Mem>(yc), dplan, nwt,
        psf.ny(), psf.nx());
    auto got = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), dplan);
    auto hx = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), xc);
    auto hy = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), yc);
    int widest_all = 0;
    for (std::size_t i = 0; i < plan.size(); ++i) {
      const auto& p = plan[i];
      int widest = 0;
      for (int a = 0; a < p.nfib * nwt; ++a)
        for (int b = a + 1; b < p.nfib * nwt; ++b) {
          const int fa = p.fib0 + a % p.nfib, ka = p.kf0 + a / p.nfib;
          const int fb = p.fib0 + b % p.nfib, kb = p.kf0 + b / p.nfib;
          if (std::abs(hx(fa, ka) - hx(fb, kb)) < psf.nx() &&
              std::abs(hy(fa, ka) - hy(fb, kb)) < psf.ny())
            widest = std::max(widest, b - a);
        }
      CAPTURE(i);
      CHECK(got(i).band == widest);
      CHECK(widest < p.nfib * nwt);
      widest_all = std::max(widest_all, widest);
    }
    CHECK(widest_patch == widest_all);
    // Crowded fibres widen the band; a single fibre's band is its wavelength overlap.
    if (pitch < 4) CHECK(got(1).band > 6 * 8);
  }
}

PERFEX_BACKEND_TEST_CASE("an eigenvalue clip near 1 makes every fibre's R the identity",
                         "[extract]") {
  // Every eigenvalue of C_ff raised to ~max mu: Q_f = mu_max^-1/2 V V^T, so R = I and ivar is
  // one value per fibre and patch. With the default clip R's main diagonal is ~0.5.
  PERFEX_ONLY_SELECTED_BACKEND();
  ExtractionOptions o = scene_options();
  o.eigen_clip = 1 - 1e-9;
  const Frame c = extract<TestType>(scene().image, o);
  const Frame s = extract<TestType>(scene().image);
  REQUIRE(c.failed_patches == 0);
  REQUIRE(all_finite(c));
  const int nd = c.ndiag, nw = c.nwave, step = o.nwavestep;
  double worst_diag = 0, worst_off = 0, worst_ivar = 0, default_diag = 0;
  for (int f = 0; f < c.nspec; ++f)
    for (int k = 0; k < nw; ++k) {
      const std::size_t row = static_cast<std::size_t>(f) * (2 * nd + 1);
      for (int d = 0; d <= 2 * nd; ++d) {
        const double r = c.resolution[(row + d) * nw + k];
        if (d == nd)
          worst_diag = std::max(worst_diag, std::abs(r - 1));
        else
          worst_off = std::max(worst_off, std::abs(r));
      }
      default_diag = std::max(default_diag, s.resolution[(row + nd) * nw + k]);
      // Bins of one patch (the same wavelength step) share one ivar.
      const std::size_t i = static_cast<std::size_t>(f) * nw + k;
      if (k % step != 0) worst_ivar = std::max(worst_ivar, std::abs(c.ivar[i] / c.ivar[i - 1] - 1));
    }
  INFO("clip near 1: max |R_kk - 1| " << worst_diag << ", max |R_jk|, j != k " << worst_off
                                      << ", ivar spread in a patch " << worst_ivar);
  CHECK(worst_diag < 1e-6);
  CHECK(worst_off < 1e-6);
  CHECK(worst_ivar < 1e-6);
  CHECK(default_diag < 0.9);
}

PERFEX_BACKEND_TEST_CASE("noise decorrelation (H^1/2 over all fibres) is unbiased and finite",
                         "[extract]") {
  PERFEX_ONLY_SELECTED_BACKEND();
  ExtractionOptions o = scene_options();
  o.decorrelation = perfex::extract::Decorrelation::noise;
  const Frame n = extract<TestType>(scene().image, o);
  const Frame s = extract<TestType>(scene().image);
  REQUIRE(n.failed_patches == 0);
  REQUIRE(all_finite(n));
  // R = H^1/2 mixes neighbouring fibres, which the stored own-fibre band leaves out: the pulls
  // against the truth through that band stay near unit width, and the flux stays near the
  // per-fibre decorrelation's.
  const auto p = pulls(n);
  double sum = 0, sum2 = 0, diff2 = 0;
  for (double x : p) {
    sum += x;
    sum2 += x * x;
  }
  for (std::size_t i = 0; i < s.flux.size(); ++i) {
    const double d = (n.flux[i] - s.flux[i]) * std::sqrt(s.ivar[i]);
    diff2 += d * d;
  }
  const double mean = sum / double(p.size()), rms = std::sqrt(sum2 / double(p.size()));
  const double diff_rms = std::sqrt(diff2 / double(s.flux.size()));
  INFO("noise decorrelation: pull mean " << mean << ", RMS " << rms
                                         << "; RMS of (noise - signal) flux in sigma " << diff_rms);
  CHECK(std::abs(mean) < 0.1);
  CHECK(rms == Approx(1.0).margin(0.05));
  CHECK(diff_rms < 0.1);
  CHECK(diff_rms > 0.0);  // a different estimator, not the same numbers
}

PERFEX_BACKEND_TEST_CASE("arrays in the backend's memory are used in place when clean",
                         "[extract]") {
  PERFEX_ONLY_SELECTED_BACKEND();
  using Exec = TestType;
  using Mem = typename Exec::memory_space;
  const Exec exec;
  const int rows = 30, cols = 40;
  std::vector<double> hp(rows * cols), hw(rows * cols, 2.0);
  for (int i = 0; i < rows * cols; ++i) hp[i] = 0.5 * i;
  Kokkos::View<double*, Mem> p("p", rows * cols), w("w", rows * cols);
  auto upload = [&] {
    Kokkos::deep_copy(exec, p,
                      Kokkos::View<const double*, Kokkos::HostSpace>(hp.data(), hp.size()));
    Kokkos::deep_copy(exec, w,
                      Kokkos::View<const double*, Kokkos::HostSpace>(hw.data(), hw.size()));
    exec.fence();
  };
  upload();
  auto clean = perfex::extract::wrap_device_image(exec, p.data(), w.data(), rows, cols);
  CHECK(clean.pixels.data() == p.data());
  CHECK(clean.nonfinite_pixels == 0);
  hp[7] = std::numeric_limits<double>::quiet_NaN();
  hw[99] = std::numeric_limits<double>::infinity();
  upload();
  auto copied = perfex::extract::wrap_device_image(exec, p.data(), w.data(), rows, cols);
  CHECK(copied.pixels.data() != p.data());
  CHECK(copied.nonfinite_pixels == 2);
  auto back = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), copied.ivar);
  CHECK(back(2, 19) == 0.0);  // pixel 99: masked
  CHECK(back(0, 8) == 2.0);
  hw[123] = -1.0;
  upload();
  CHECK_THROWS_WITH(perfex::extract::wrap_device_image(exec, p.data(), w.data(), rows, cols),
                    "image: negative inverse variance -1.000000 at row 3, column 3");
}
