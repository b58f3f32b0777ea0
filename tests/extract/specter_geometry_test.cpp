// specter's patch geometry (specter_geometry.hpp) and the solver's fitted wavelengths: a
// patch's bins left out of its fit change nothing of the others' solution; specter's plan
// follows its rules (bundles from specmin, boxes on the CCD, padding patch by patch).
#include "perfex_test.hpp"
#include "scene.hpp"

#include <perfex/extract/extract_frame.hpp>

#include <algorithm>
#include <cmath>
#include <vector>

namespace {

namespace ex = perfex::extract;
using perfex_extract_test::scene;
using perfex_extract_test::scene_options;

template <class Mem>
void set_patches(ex::FramePlan<Mem>& plan, const std::vector<ex::PatchDesc>& patches) {
  plan.patches = patches;
  Kokkos::View<ex::PatchDesc*, Mem> device("patches", patches.size());
  Kokkos::deep_copy(device, Kokkos::View<const ex::PatchDesc*, Kokkos::HostSpace>(patches.data(),
                                                                                  patches.size()));
  plan.device_patches = device;
}

// Largest |a - b| over the largest |b|.
double max_rel_diff(const std::vector<double>& a, const std::vector<double>& b) {
  double scale = 0, worst = 0;
  for (double x : b) scale = std::max(scale, std::abs(x));
  for (std::size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::abs(a[i] - b[i]));
  return worst / scale;
}

}  // namespace

PERFEX_BACKEND_TEST_CASE("bins left out of a patch's fit change nothing else", "[extract]") {
  PERFEX_ONLY_SELECTED_BACKEND();
  const TestType exec;
  const auto psf = perfex::psf::upload_psf(exec, scene().psf);
  const auto image = ex::upload_image(exec, scene().image);
  // Plan a pads by 12 bins; plan b by 14, with 2 left out on each side and a's windows: the
  // system b solves is a's, its other unknowns decoupled.
  const ex::ExtractionOptions oa = scene_options();
  ex::ExtractionOptions ob = oa;
  ob.wavepad0 = 12;  // 12 + int(12 x 0.2) = 14 bins
  const auto a = ex::plan_frame(exec, psf, image.nrows(), image.ncols(), oa);
  auto b = ex::plan_frame(exec, psf, image.nrows(), image.ncols(), ob);
  REQUIRE(b.geometry.wavepad == a.geometry.wavepad + 2);
  REQUIRE(a.npatches() == b.npatches());
  std::vector<ex::PatchDesc> patches = b.patches;
  for (std::size_t i = 0; i < patches.size(); ++i) {
    const ex::PatchDesc& p = a.patches[i];
    patches[i].row0 = p.row0;
    patches[i].row1 = p.row1;
    patches[i].col0 = p.col0;
    patches[i].col1 = p.col1;
    patches[i].wave_lo = 2;
    patches[i].wave_hi = b.geometry.nwt - 2;
  }
  set_patches(b, patches);
  const ex::Frame fa = ex::extract_frame(exec, a, psf, image);
  const ex::Frame fb = ex::extract_frame(exec, b, psf, image);
  CHECK(fb.failed_patches == 0);
  CHECK(max_rel_diff(fb.flux, fa.flux) < 1e-10);
  CHECK(max_rel_diff(fb.ivar, fa.ivar) < 1e-10);
  CHECK(max_rel_diff(fb.resolution, fa.resolution) < 1e-10);
  CHECK(max_rel_diff(fb.chi2pix, fa.chi2pix) < 1e-8);
  // One more bin left out below in every patch: a different system, a different flux.
  for (auto& p : patches) p.wave_lo = 3;
  set_patches(b, patches);
  CHECK(max_rel_diff(ex::extract_frame(exec, b, psf, image).flux, fa.flux) > 1e-8);
}

PERFEX_BACKEND_TEST_CASE("specter's geometry: its bundles, boxes and padding", "[extract]") {
  PERFEX_ONLY_SELECTED_BACKEND();
  const TestType exec;
  const auto psf = perfex::psf::upload_psf(exec, scene().psf);
  ex::ExtractionOptions o = scene_options();
  o.geometry = ex::Geometry::specter;
  o.specmin = 1;  // bundles of 5 from fibre 1: [1, 6) and [6, 10)
  o.nspec = 9;
  const auto plan = ex::plan_frame(exec, psf, scene().image.nrows, scene().image.ncols, o);
  CHECK(plan.options.geometry == ex::Geometry::specter);
  const ex::PatchGeometry& g = plan.geometry;
  CHECK(g.wavepad >= g.ndiag);
  CHECK(g.nwt == o.nwavestep + 2 * g.wavepad);
  CHECK(plan.fullwave.size() == plan.wave.size() + 2 * g.wavepad + o.nwavestep);
  // Sub-bundles of [1, 6): specter's split of 5 in 2 is 2 + 3; of [6, 10), 2 + 2.
  std::vector<int> firsts, solved;
  int lowest_pad = g.nwt, widest_pad = 0;
  for (const ex::PatchDesc& p : plan.patches) {
    if (p.kf0 == 0) {
      firsts.push_back(o.specmin + p.out_fibre0);
      solved.push_back(p.nfib);
    }
    const int nlo = g.wavepad - p.wave_lo, nhi = p.wave_hi - g.wavepad - p.nkeep;
    CHECK(nlo >= g.ndiag);
    CHECK(nhi >= g.ndiag);
    CHECK(p.wave_lo >= 0);
    CHECK(p.wave_hi <= g.nwt);
    lowest_pad = std::min({lowest_pad, nlo, nhi});
    widest_pad = std::max({widest_pad, nlo, nhi});
    // Boxes on the CCD, rows padded beyond a spot on each side of the core.
    CHECK(p.row0 >= 0);
    CHECK(p.row1 <= scene().image.nrows);
    CHECK(p.col0 >= 0);
    CHECK(p.col1 <= scene().image.ncols);
    CHECK(p.row1 - p.row0 > 2 * g.spot_rows);
    CHECK(p.col1 - p.col0 >= g.spot_cols);
  }
  CHECK(firsts == std::vector<int>{1, 3, 6, 8});
  CHECK(solved == std::vector<int>{3, 4, 3, 3});
  CHECK(widest_pad == g.wavepad);
  // The padding reaches a spot and more beyond the core's spots (round(0.8 x 11) + int(0.2 x
  // 11) rows): more bins than the resolution's half-width, its least.
  CHECK(lowest_pad > g.ndiag);

  // The photons come back: pulls of the flux against the truth smoothed by the frame's
  // resolution (interior bins: their band lies inside the grid) of unit RMS, none beyond 5.
  const ex::Frame frame = ex::extract_frame(exec, plan, psf, ex::upload_image(exec, scene().image));
  CHECK(frame.failed_patches == 0);
  CHECK(frame.options.geometry == ex::Geometry::specter);
  const int nd = frame.ndiag, nt = static_cast<int>(scene().truth_wave.size());
  double sum2 = 0, worst = 0;
  int n = 0;
  for (int f = 0; f < frame.nspec; ++f)
    for (int k = nd; k < frame.nwave - nd; ++k) {
      double expect = 0;
      for (int c = k - nd; c <= k + nd; ++c)  // R[k][c] is band row k - c + nd of column c
        expect +=
            frame.resolution[(static_cast<std::size_t>(f) * (2 * nd + 1) + (k - c + nd)) *
                                 frame.nwave +
                             c] *
            scene()
                .truth_photons[static_cast<std::size_t>(o.specmin + f) * nt + c + scene().margin];
      const double pull = (frame.flux[frame.index(f, k)] - expect / o.dw) *
                          std::sqrt(frame.ivar[frame.index(f, k)]);
      sum2 += pull * pull;
      worst = std::max(worst, std::abs(pull));
      ++n;
    }
  INFO("pull RMS " << std::sqrt(sum2 / n) << ", largest " << worst << " over " << n << " bins");
  CHECK(std::sqrt(sum2 / n) == Approx(1.0).margin(0.1));
  CHECK(worst < 5);
}
