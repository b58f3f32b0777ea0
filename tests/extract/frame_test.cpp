// The frame's execution shape: planning (corners, spot groups, launches within the memory
// budget), the scratch's size against its estimate, results independent of how the work is
// cut (launches, team sizes, stored image region), device-resident inputs, progress.
#include "perfex_test.hpp"
#include "scene.hpp"

#include <perfex/extract/extract_frame.hpp>
#include <perfex/psf/synthetic.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace {

namespace ex = perfex::extract;
using perfex_extract_test::extract;
using perfex_extract_test::scene;
using perfex_extract_test::scene_options;

// Largest |a - b| relative to the largest |b| of the array (entries near 0 count absolutely).
double max_rel_diff(const std::vector<double>& a, const std::vector<double>& b) {
  double scale = 0, worst = 0;
  for (double x : b) scale = std::max(scale, std::abs(x));
  for (std::size_t i = 0; i < a.size(); ++i)
    worst = std::max(worst, std::abs(a[i] - b[i]) / std::max(scale, 1e-300));
  return worst;
}

// Index of the scene image's pixel under fibre f's trace at wavelength w.
std::size_t on_trace(int f, double w) {
  const perfex::psf::GaussHermitePsf<Kokkos::HostSpace> psf(scene().psf);
  Kokkos::View<double*, Kokkos::HostSpace> wave("w", 1);
  wave(0) = w;
  Kokkos::View<double**, Kokkos::HostSpace> x("x", 1, 1), y("y", 1, 1);
  perfex::psf::evaluate_traces(Kokkos::DefaultHostExecutionSpace(), psf, f, 1,
                               Kokkos::View<const double*, Kokkos::HostSpace>(wave), x, y);
  return static_cast<std::size_t>(std::lround(y(0, 0))) * scene().image.ncols +
         static_cast<std::size_t>(std::lround(x(0, 0)));
}

// Bitwise on everything a patch computes alone.
void check_bitwise_equal(const ex::Frame& a, const ex::Frame& b) {
  CHECK(a.flux == b.flux);
  CHECK(a.ivar == b.ivar);
  CHECK(a.resolution == b.resolution);
  CHECK(a.chi2pix == b.chi2pix);
  CHECK(a.pixmask_fraction == b.pixmask_fraction);
  CHECK(a.mask == b.mask);
  // Each pixel sums its patches' blocks in the plan's order, whatever ran at the same time.
  CHECK(a.model == b.model);
}

}  // namespace

TEST_CASE("launch planning: fewest solver launches, then fewest spot groups, within budget",
          "[extract]") {
  // Four bundles of two sub-bundles, 10 patches each, 6 solved fibres each, disjoint.
  std::vector<ex::SubBundleSpan> spans;
  for (int i = 0; i < 8; ++i) spans.push_back({6 * i, 6 * i + 6, 10 * i, 10 * i + 10});
  const double fibre = 100, patch = 10;

  const ex::LaunchPlan all = ex::plan_launches(spans, fibre, patch, 48 * fibre + 80 * patch);
  REQUIRE(all.groups.size() == 1);
  CHECK(all.solver_launches == 1);
  CHECK(all.batch == 80);
  CHECK(all.bytes == 48 * fibre + 80 * patch);

  // Half the patches' scratch beside every spot: two launches; halving the spots instead
  // gives the same count in two groups, so one group wins.
  const ex::LaunchPlan two = ex::plan_launches(spans, fibre, patch, 48 * fibre + 45 * patch);
  CHECK(two.groups.size() == 1);
  CHECK(two.solver_launches == 2);
  CHECK(two.batch == 40);  // the launches evened out

  // Spots dominate: four groups of two sub-bundles, one launch each.
  const ex::LaunchPlan four =
      ex::plan_launches(spans, 100 * fibre, patch, 1200 * fibre + 20 * patch);
  REQUIRE(four.groups.size() == 4);
  CHECK(four.solver_launches == 4);
  CHECK(four.spot_fibres == 12);
  CHECK(four.groups[1].fibre_lo == 12);
  CHECK(four.groups[1].fibre_hi == 24);
  CHECK(four.groups[1].patch_lo == 20);
  CHECK(four.groups[3].patch_hi == 80);
  CHECK(four.bytes <= 1200 * fibre + 20 * patch);

  // A cap on the batch.
  CHECK(ex::plan_launches(spans, fibre, patch, 1e9, 30).solver_launches == 3);

  // One sub-bundle's spots and one patch are the least.
  CHECK(ex::plan_launches(spans, fibre, patch, 6 * fibre + patch).solver_launches == 80);
  CHECK_THROWS_WITH(ex::plan_launches(spans, fibre, patch, 6 * fibre + patch - 1),
                    Catch::Contains("memory_budget"));
}

PERFEX_BACKEND_TEST_CASE("patch scratch allocates what bytes_per_patch estimates", "[extract]") {
  PERFEX_ONLY_SELECTED_BACKEND();
  using Mem = typename TestType::memory_space;
  for (const auto decorrelation : {ex::Decorrelation::signal, ex::Decorrelation::noise}) {
    ex::PatchGeometry g = ex::patch_geometry(ex::ExtractionOptions{}, 11, 17, 5);
    g.decorrelation = decorrelation;
    g.nfib = 7;
    g.band = 58;
    g.maxpix = 6800;
    const int batch = 3;
    const ex::PatchWorkspace<Mem> ws(g, batch);
    std::size_t words = 0;
    for (std::size_t span :
         {ws.H.span(), ws.Htail.span(), ws.Hsym.span(), ws.V.span(), ws.blockwork.span(),
          ws.cblock.span(), ws.b.span(), ws.omega.span(), ws.phi.span(), ws.eigval.span(),
          ws.eigwork.span(), ws.wspot.span(), ws.pixmodel.span(), ws.pixtest.span(),
          ws.rowsum.span(), ws.rowflux.span()})
      words += span;
    CHECK(words * sizeof(double) == batch * ex::PatchWorkspace<Mem>::bytes_per_patch(g));
    CHECK(ws.H.extent(0) == 59);
    CHECK(ws.H.extent(1) == 7 * 74);
    // Noise: H's eigenvectors; signal: a fibre's resolution band, 2 * 5 + 1 rows x 50 columns.
    CHECK(ws.V.extent(0) == (decorrelation == ex::Decorrelation::noise ? 7u * 74 : 11u));
    CHECK(ws.V.extent(1) == (decorrelation == ex::Decorrelation::noise ? 7u * 74 : 50u));
    CHECK(ws.wspot.extent(0) == 7u * 74 * 11 * 17);
    CHECK(ws.Hsym.span() == (decorrelation == ex::Decorrelation::noise ? 518u * 518 * 3 : 0u));
    // Signal: the twisted factor's tail, 59 rows x (518 - 256) columns at least.
    CHECK(ws.Htail.span() ==
          (decorrelation == ex::Decorrelation::signal ? 59u * (259 + 4) * 3 : 0u));
  }
}

PERFEX_BACKEND_TEST_CASE("the plan's corners are the spot kernel's", "[extract]") {
  PERFEX_ONLY_SELECTED_BACKEND();
  using Mem = typename TestType::memory_space;
  const TestType exec;
  const auto psf = perfex::psf::upload_psf(exec, scene().psf);
  ex::ExtractionOptions o = scene_options();
  const auto plan = ex::plan_frame(exec, psf, scene().image.nrows, scene().image.ncols, o);
  const int nf = psf.nfib(), nk = static_cast<int>(plan.fullwave.size());
  Kokkos::View<double****, Kokkos::LayoutRight, Mem> spots("spots", nf, nk, psf.ny(), psf.nx());
  Kokkos::View<int**, Mem> xc("xc", nf, nk), yc("yc", nf, nk), px("px", nf, nk), py("py", nf, nk);
  perfex::psf::compute_spots(exec, psf, 0, nf, plan.device_fullwave, spots, xc, yc);
  Kokkos::parallel_for("perfex::test::corners",
                       Kokkos::MDRangePolicy<TestType, Kokkos::Rank<2>>(exec, {0, 0}, {nf, nk}),
                       ex::detail::SpotCornersFunctor<typename decltype(psf)::device_type, Mem>{
                           psf.device(), 0, plan.device_fullwave, px, py});
  auto hx = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), xc);
  auto hy = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), yc);
  auto hpx = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), px);
  auto hpy = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), py);
  int differ = 0;
  for (int f = 0; f < nf; ++f)
    for (int k = 0; k < nk; ++k) differ += (hx(f, k) != hpx(f, k)) + (hy(f, k) != hpy(f, k));
  CHECK(differ == 0);
}

PERFEX_BACKEND_TEST_CASE("the memory budget cuts the launches; the results stay bitwise",
                         "[extract]") {
  PERFEX_ONLY_SELECTED_BACKEND();
  using Mem = typename TestType::memory_space;
  const TestType exec;
  ex::ExtractionOptions o = scene_options();
  o.model_image = true;
  o.batch_patches = 1000;  // no cap: every patch in one launch
  const ex::Frame one = extract<TestType>(scene().image, o);
  CHECK(one.npatches == 16);
  CHECK(one.spot_launches == 1);
  CHECK(one.solver_launches == 1);
  CHECK(one.scratch_bytes > 0);

  // The automatic cap: four patches per thread on host backends, the same spot groups.
  o.batch_patches = 0;
  const ex::Frame automatic = extract<TestType>(scene().image, o);
  const int per_launch = std::min(16, 4 * exec.concurrency());
  CHECK(automatic.spot_launches == 1);
  CHECK(automatic.solver_launches == (16 + per_launch - 1) / per_launch);
  if (per_launch < 16) CHECK(automatic.scratch_bytes < one.scratch_bytes);
  check_bitwise_equal(automatic, one);

  // Room for the largest sub-bundle's spots (4 solved fibres) and three patches.
  const auto psf = perfex::psf::upload_psf(exec, scene().psf);
  const auto plan = ex::plan_frame(exec, psf, scene().image.nrows, scene().image.ncols, o);
  const double per_fibre = double(plan.fullwave.size()) *
                           (double(psf.nx()) * psf.ny() * sizeof(double) + 2 * sizeof(int));
  const double per_patch = double(ex::PatchWorkspace<Mem>::bytes_per_patch(plan.geometry));
  o.memory_budget = static_cast<std::int64_t>(4 * per_fibre + 3 * per_patch);
  const ex::Frame small = extract<TestType>(scene().image, o);
  CHECK(small.scratch_bytes <= o.memory_budget);
  CHECK(small.spot_launches >= 2);    // the 10 fibres' spots do not fit at once
  CHECK(small.solver_launches >= 6);  // nor more than 3 patches beside 4 fibres' spots
  check_bitwise_equal(small, one);

  ex::ExtractionOptions capped = scene_options();
  capped.model_image = true;
  capped.batch_patches = 5;
  const ex::Frame five = extract<TestType>(scene().image, capped);
  CHECK(five.solver_launches == 4);
  check_bitwise_equal(five, one);

  o.memory_budget = static_cast<std::int64_t>(4 * per_fibre);
  CHECK_THROWS_WITH(extract<TestType>(scene().image, o), Catch::Contains("memory_budget"));
}

PERFEX_BACKEND_TEST_CASE("a 500-fibre r frame plans at most 2 solver launches in 8192 MB",
                         "[extract]") {
  PERFEX_ONLY_SELECTED_BACKEND();
  const TestType exec;
  const auto data = perfex::psf::make_synthetic_psf();  // the DESI r camera's geometry
  const auto psf = perfex::psf::upload_psf(exec, data);
  ex::ExtractionOptions o;  // DESI defaults: 500 fibres, 5760-7620 A
  o.memory_budget = std::int64_t(8192) << 20;
  o.batch_patches = 1 << 20;  // as a device plans: the budget alone bounds the batch
  const auto plan = ex::plan_frame(exec, psf, data.npix_y, data.npix_x, o);
  INFO("spot groups " << plan.launches.groups.size() << ", batch " << plan.launches.batch << ", "
                      << plan.launches.bytes / 1048576.0 << " MiB");
  CHECK(plan.npatches() == 4700);
  CHECK(plan.launches.solver_launches <= 2);
  CHECK(plan.launches.bytes <= o.memory_budget);
  // The geometry the README quotes: 7 solved fibres, bands up to 58 on the real PSF.
  CHECK(plan.geometry.nfib == 7);
  CHECK(plan.geometry.band > 30);
  CHECK(plan.geometry.band < 70);
}

PERFEX_BACKEND_TEST_CASE("team sizes 2 to 8 give team size 1's results", "[extract][team]") {
  PERFEX_ONLY_SELECTED_BACKEND();
  const TestType exec;
  // Host backends: a team's threads come from the pool (run with OMP_NUM_THREADS >= 8 to
  // cover every size; CTest's openmp.8threads entry does).
  const bool host = perfex::reaches_host_memory<TestType>();
  const int largest = host ? std::min(8, perfex::concurrency(exec)) : 8;
  if (largest < 2) {
    WARN("SKIPPED team sizes > 1: " << TestType::name() << " runs " << largest
                                    << " thread(s) per team at most");
    return;
  }
  if (largest < 8) WARN("team sizes " << largest + 1 << "-8 skipped: " << largest << " threads");

  // Every path of the solver: signal with the model image, 1 in 7 pixels masked, a patch that
  // fails (overflow), noise decorrelation.
  auto masked = scene().image;
  for (std::size_t i = 0; i < masked.ivar.size(); i += 7) masked.ivar[i] = 0;
  auto failing = scene().image;
  const std::size_t hot = on_trace(7, 6040.0);
  failing.pixels[hot] = 1e308;
  failing.ivar[hot] = 1e10;
  struct Case {
    std::string name;
    const ex::CcdImage* image;
    ex::Decorrelation decorrelation;
  };
  const std::vector<Case> cases{{"signal + model", &scene().image, ex::Decorrelation::signal},
                                {"masked", &masked, ex::Decorrelation::signal},
                                {"failing patch", &failing, ex::Decorrelation::signal},
                                {"noise", &scene().image, ex::Decorrelation::noise}};
  // Vector lanes exist on GPUs only (host backends run them as one).
  const std::vector<int> vector_lengths = host ? std::vector<int>{1} : std::vector<int>{1, 4};
  for (const Case& c : cases) {
    ex::ExtractionOptions o = scene_options();
    o.specmin = 5;  // the second bundle, where the failing patch is: 8 patches
    o.nspec = 5;
    o.model_image = true;
    o.decorrelation = c.decorrelation;
    o.team_size = 1;
    const ex::Frame ref = extract<TestType>(*c.image, o);
    if (c.name == "failing patch") REQUIRE(ref.failed_patches >= 1);
    for (int team = 2; team <= largest; ++team)
      for (int vector : vector_lengths) {
        INFO(c.name << ", team size " << team << ", vector length " << vector);
        o.team_size = team;
        o.vector_length = vector;
        const ex::Frame f = extract<TestType>(*c.image, o);
        CHECK(f.failed_patches == ref.failed_patches);
        CHECK(max_rel_diff(f.flux, ref.flux) <= 1e-12);
        CHECK(max_rel_diff(f.ivar, ref.ivar) <= 1e-12);
        CHECK(max_rel_diff(f.resolution, ref.resolution) <= 1e-12);
        // Accumulated with atomics when a team has several threads: the order varies.
        CHECK(max_rel_diff(f.chi2pix, ref.chi2pix) <= 1e-10);
        CHECK(max_rel_diff(f.pixmask_fraction, ref.pixmask_fraction) <= 1e-12);
        CHECK(max_rel_diff(f.model, ref.model) <= 1e-12);  // as the flux it is made of
      }
  }
}

PERFEX_BACKEND_TEST_CASE("ranges of the plan, their model blocks folded in turn, give the model",
                         "[extract]") {
  PERFEX_ONLY_SELECTED_BACKEND();
  const TestType exec;
  const auto geometry = GENERATE(ex::Geometry::gpu_specter, ex::Geometry::specter);
  CAPTURE(ex::geometry_name(geometry));
  ex::ExtractionOptions o = scene_options();
  o.geometry = geometry;
  o.model_image = true;
  o.batch_patches = 3;  // several launches per range
  const auto psf = perfex::psf::upload_psf(exec, scene().psf);
  const auto image = ex::upload_image(exec, scene().image);
  const auto plan = ex::plan_frame(exec, psf, scene().image.nrows, scene().image.ncols, o);
  const ex::Frame whole = ex::extract_frame(exec, plan, psf, image);
  REQUIRE(plan.npatches() >= 16);
  // As perfex.mpi splits a frame: the first range makes the image, the others send their
  // blocks, which the first process folds in after its own, range after range.
  const int n = plan.npatches();
  for (const std::vector<int> cuts : {std::vector<int>{0, 5, n}, {0, 1, 2, 9, n}, {0, 0, n}}) {
    ex::Frame first = ex::extract_frame(exec, plan, psf, image, {}, {cuts[0], cuts[1]});
    if (first.model.empty()) first.model.assign(whole.model.size(), 0.0);  // an empty range
    for (std::size_t r = 1; r + 1 < cuts.size(); ++r) {
      const ex::PatchRange range{cuts[r], cuts[r + 1], true};
      const ex::Frame part = ex::extract_frame(exec, plan, psf, image, {}, range);
      CHECK(part.model.empty());
      ex::fold_model_blocks(first.model.data(), plan.ccd_rows, plan.ccd_cols,
                            {plan.patches.begin() + range.first, plan.patches.begin() + range.last},
                            part.model_blocks.data(), part.model_blocks.size(),
                            plan.geometry.model_fold);
    }
    CAPTURE(cuts.size());
    CHECK(first.model == whole.model);
  }
  std::vector<double> scratch(whole.model.size());
  CHECK_THROWS_WITH(ex::fold_model_blocks(scratch.data(), plan.ccd_rows, plan.ccd_cols,
                                          plan.patches, nullptr, 3, ex::ModelFold::sum),
                    Catch::Contains("3 values for patches of"));
}

PERFEX_BACKEND_TEST_CASE("an image region holding every patch window gives the same frame",
                         "[extract]") {
  PERFEX_ONLY_SELECTED_BACKEND();
  const TestType exec;
  const ex::CcdImage& full = scene().image;
  const auto psf = perfex::psf::upload_psf(exec, scene().psf);
  const auto plan = ex::plan_frame(exec, psf, full.nrows, full.ncols, scene_options());
  const auto box = plan.pixel_box();
  REQUIRE(box.row1 - box.row0 < full.nrows);  // the region is smaller than the CCD
  auto cut = [&](int row0, int row1, int col0, int col1) {
    ex::CcdImage part;
    part.nrows = row1 - row0;
    part.ncols = col1 - col0;
    part.region = {row0, col0, full.nrows, full.ncols};
    for (int r = row0; r < row1; ++r)
      for (int c = col0; c < col1; ++c) {
        const std::size_t i = static_cast<std::size_t>(r) * full.ncols + c;
        part.pixels.push_back(full.pixels[i]);
        part.ivar.push_back(full.ivar[i]);
      }
    return part;
  };
  ex::ExtractionOptions o = scene_options();
  o.model_image = true;
  const ex::Frame whole = extract<TestType>(full, o);
  const ex::Frame part = extract<TestType>(cut(box.row0, box.row1, box.col0, box.col1), o);
  check_bitwise_equal(part, whole);
  CHECK(part.model_rows == full.nrows);
  CHECK_THROWS_WITH(extract<TestType>(cut(box.row0 + 1, box.row1, box.col0, box.col1), o),
                    Catch::Contains("do not cover rows"));
  auto outside = cut(box.row0, box.row1, box.col0, box.col1);
  outside.region.row0 = full.nrows - 1;
  CHECK_THROWS_WITH(ex::upload_image(exec, outside), Catch::Contains("does not fit"));
}

PERFEX_BACKEND_TEST_CASE("a device-resident PSF and image are extracted again without uploads",
                         "[extract]") {
  PERFEX_ONLY_SELECTED_BACKEND();
  const TestType exec;
  const auto psf = perfex::psf::upload_psf(exec, scene().psf);
  const auto image = ex::upload_image(exec, scene().image);
  const ex::Frame host = extract<TestType>(scene().image);
  const ex::Frame first = ex::extract_frame(exec, psf, image, scene_options());
  const ex::Frame again = ex::extract_frame(exec, psf, image, scene_options());
  check_bitwise_equal(first, host);
  check_bitwise_equal(again, host);
  // A plan made once serves every image of that CCD.
  const auto plan = ex::plan_frame(exec, psf, image.nrows(), image.ncols(), scene_options());
  check_bitwise_equal(ex::extract_frame(exec, plan, psf, image), host);
}

PERFEX_BACKEND_TEST_CASE("progress is reported after every solver launch", "[extract]") {
  PERFEX_ONLY_SELECTED_BACKEND();
  ex::ExtractionOptions o = scene_options();
  o.batch_patches = 6;
  std::vector<std::pair<int, int>> calls;
  const ex::Frame f =
      ex::extract_frame(TestType(), scene().psf, scene().image, o,
                        [&](int done, int total) { calls.emplace_back(done, total); });
  REQUIRE(calls.size() == static_cast<std::size_t>(f.solver_launches));
  CHECK(f.solver_launches == 3);
  CHECK(calls.front() == std::make_pair(6, 16));
  CHECK(calls.back() == std::make_pair(16, 16));
}
