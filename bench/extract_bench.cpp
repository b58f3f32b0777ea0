// Extraction benchmarks, on the benchmark PSF (the real DESI r0 PSF when ../shared/data is
// there, else a synthetic one of the same geometry) and a sky-like full-CCD image, on every
// enabled backend:
//   extract/normal_equations  weighted spots, b, ω and H0 = AᵀWA of DESI-default patches
//   extract/patch             the whole patch solve (normal equations → Cholesky → blocks of
//                             H⁻¹ → per-fibre C^-1/2 → flux, ivar, resolution, chi2pix)
//   extract/bundle            extract_frame of one bundle, 25 fibres × 1251 λ (5760-6760 Å)
//   extract/frame             extract_frame of the 500-fibre frame, 2326 λ (5760-7620 Å)
// The image and the PSF are put in the device's memory before the timed region, as a pipeline
// does once (upload_image, upload_psf); bundle and frame report their spot and solver launches
// and the scratch they used within the default memory budget.
// The patch benchmarks take "patches": 1 = the middle patch of the reference data (fibres 4-10
// solved, 5-9 kept, N = 518, wavelengths from 6000 Å), 10 = the 5 sub-bundles of bundle 0 at
// two wavelength steps (N = 444 or 518). Their spots are computed before the timed region.
// Flop models (counter GFLOP/s): normal equations count exactly what the kernel does on the
// patch geometry, 4 flop per spot pixel inside the window (weights, b, ω) and 2 per pixel of
// every overlapping spot pair J ≥ J' (H0); patch, bundle and frame count the linear algebra
// of each patch as performed (band Cholesky and solve, strided blocks of H⁻¹, C^-1/2:
// perfex::extract::patch_flops with the patch's measured bandwidth).
#include "perfex_bench.hpp"

#include <perfex/extract/extract_frame.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

namespace {

namespace ex = perfex::extract;

// A smooth, sky-like image with Poisson-like ivar, made in exec's memory (through a host mirror
// where that is another space): the values do not change the work done. Made anew by each
// benchmark, so that its peak RSS counts its own input only, once.
template <class ExecSpace>
ex::DeviceImage<typename ExecSpace::memory_space> bench_image(const ExecSpace& exec) {
  using Pixels = Kokkos::View<double**, Kokkos::LayoutRight, typename ExecSpace::memory_space>;
  const auto& psf = perfex_bench::bench_psf();
  const Pixels pixels(perfex::uninitialized("perfex::bench::image"), psf.npix_y, psf.npix_x);
  const Pixels ivar(perfex::uninitialized("perfex::bench::ivar"), psf.npix_y, psf.npix_x);
  const auto hp = Kokkos::create_mirror_view(pixels);
  const auto hw = Kokkos::create_mirror_view(ivar);
  for (std::size_t i = 0; i < hp.size(); ++i) {
    const double v = 50.0 + 30.0 * std::sin(0.001 * static_cast<double>(i));
    hp.data()[i] = v;
    hw.data()[i] = 1.0 / (9.0 + v);
  }
  Kokkos::deep_copy(exec, pixels, hp);
  Kokkos::deep_copy(exec, ivar, hw);
  exec.fence();
  ex::DeviceImage<typename ExecSpace::memory_space> image;
  image.pixels = pixels;
  image.ivar = ivar;
  return image;
}

// ---- PatchSolver internals --------------------------------------------------------------
// Everything below up to the next rule is the only code of the suite that builds a
// PatchSolver or reaches into its steps; adapt it when include/perfex/extract/patch_solver.hpp
// changes (e.g. H in band storage).

template <class ExecSpace>
struct PatchBatch {
  using Mem = typename ExecSpace::memory_space;
  std::vector<ex::PatchDesc> plan;
  // Spot corners (bundle fibre, padded λ), host copies in the device views' layout (LayoutLeft on
  // CUDA).
  Kokkos::View<int**, typename Kokkos::View<int**, Mem>::array_layout, Kokkos::HostSpace> xcorner,
      ycorner;
  int nwt = 0, nx = 0, ny = 0;  // wavelengths per fibre, spot size
  ex::PatchSolver<ExecSpace, Mem> solver;
  Kokkos::View<const ex::PatchDesc*, Mem> patches;
};

// DESI-default patches of bundle 0 on the 5760-6760 Å grid: sub-bundle 1 at the wavelength
// step of 6000 Å for one patch, else sub-bundles round-robin over the steps from there.
template <class ExecSpace>
PatchBatch<ExecSpace> make_patch_batch(const ExecSpace& exec, int npatches) {
  using Mem = typename ExecSpace::memory_space;
  const auto& data = perfex_bench::bench_psf();
  ex::ExtractionOptions opt;  // DESI defaults
  opt.nspec = opt.bundlesize;
  opt.wmax = 6760.0;
  const ex::BundlePlan bundle = ex::plan_bundles(opt, data.nfib).front();
  const int wavepad = opt.wavepad(), nwt = opt.nwavestep + 2 * wavepad;
  const std::vector<double> wave = ex::make_wavelength_grid(opt.wmin, opt.wmax, opt.dw);
  const std::vector<double> full = ex::make_padded_grid(wave, opt.dw, wavepad, opt.nwavestep);
  const int K = static_cast<int>(full.size());
  const ex::FibreRange fibres = ex::spot_fibres(bundle);
  const int nb = fibres.hi - fibres.lo;

  const perfex::psf::GaussHermitePsf<Mem> psf(data);
  Kokkos::View<double*, Mem> dwave("perfex::bench::fullwave", K);
  Kokkos::deep_copy(dwave,
                    Kokkos::View<const double*, Kokkos::HostSpace>(full.data(), full.size()));
  Kokkos::View<double****, Kokkos::LayoutRight, Mem> spots("perfex::bench::spots", nb, K, psf.ny(),
                                                           psf.nx());
  Kokkos::View<int**, Mem> xc("perfex::bench::xcorner", nb, K), yc("perfex::bench::ycorner", nb, K);
  perfex::psf::compute_spots(exec, psf, fibres.lo, nb, Kokkos::View<const double*, Mem>(dwave),
                             spots, xc, yc);
  PatchBatch<ExecSpace> batch;
  batch.xcorner = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), xc);
  batch.ycorner = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), yc);
  batch.nwt = nwt;
  batch.nx = psf.nx();
  batch.ny = psf.ny();
  const auto& hx = batch.xcorner;
  const auto& hy = batch.ycorner;
  // The bundle's plan is sub-bundle-major: patch (sub, step) at sub * nsteps + step.
  const std::vector<ex::PatchDesc> all = ex::plan_patches(
      bundle, opt, static_cast<int>(wave.size()), psf.nx(), psf.ny(), data.npix_x, data.npix_y,
      [&](int f, int k) { return hx(f, k); }, [&](int f, int k) { return hy(f, k); });
  const int nsub = static_cast<int>(bundle.subbundles.size()),
            nsteps = static_cast<int>(all.size()) / nsub;
  const int step_first = 300 / opt.nwavestep;  // 6000 Å, the reference data's middle patch
  int maxpix = 0;
  for (int i = 0; i < npatches; ++i) {
    const int sub = npatches == 1 ? 1 : i % nsub,
              step = step_first + (npatches == 1 ? 0 : i / nsub);
    const ex::PatchDesc& p = all[static_cast<std::size_t>(sub * nsteps + step)];
    maxpix = std::max(maxpix, (p.row1 - p.row0) * (p.col1 - p.col0));
    batch.plan.push_back(p);
  }

  const auto image = bench_image(exec);
  Kokkos::View<ex::PatchDesc*, Mem> dplan("perfex::bench::patches", batch.plan.size());
  Kokkos::deep_copy(dplan, Kokkos::View<const ex::PatchDesc*, Kokkos::HostSpace>(
                               batch.plan.data(), batch.plan.size()));
  const int band =
      ex::measure_bandwidths(exec, Kokkos::View<const int**, Mem>(xc),
                             Kokkos::View<const int**, Mem>(yc), dplan, nwt, psf.ny(), psf.nx());
  Kokkos::deep_copy(
      Kokkos::View<ex::PatchDesc*, Kokkos::HostSpace>(batch.plan.data(), batch.plan.size()), dplan);
  ex::PatchGeometry geometry = ex::patch_geometry(opt, psf.ny(), psf.nx(), psf.spot_rows() / 2);
  for (const ex::PatchDesc& p : batch.plan) geometry.nfib = std::max(geometry.nfib, p.nfib);
  geometry.band = band;
  geometry.maxpix = maxpix;
  opt.psferr = data.psferr;
  batch.solver = ex::PatchSolver<ExecSpace, Mem>(geometry, opt, npatches);
  batch.solver.spots = spots;
  batch.solver.xcorner = xc;
  batch.solver.ycorner = yc;
  batch.solver.image = image;
  // Frame-shaped results of the bundle (its fibres x the grid's wavelengths).
  const int nspec = opt.nspec, nwave = static_cast<int>(wave.size());
  batch.solver.out = ex::PatchResults<Mem>(
      typename ex::PatchResults<Mem>::Bins("perfex::bench::flux", nspec, nwave),
      typename ex::PatchResults<Mem>::Bins("perfex::bench::ivar", nspec, nwave),
      typename ex::PatchResults<Mem>::Bins("perfex::bench::chi2pix", nspec, nwave),
      typename ex::PatchResults<Mem>::Bins("perfex::bench::pixmask", nspec, nwave),
      typename ex::PatchResults<Mem>::Diagonals("perfex::bench::resolution", nspec, psf.spot_rows(),
                                                nwave),
      Kokkos::View<int*, Mem>("perfex::bench::status", npatches));
  batch.patches = dplan;
  batch.solver.patches = dplan;  // the normal-equation steps run on their own over these
  return batch;
}

// The normal-equation steps of PatchSolver alone: weighted spots, b, ω, then the band of H0.
template <class ExecSpace>
struct NormalEquations {
  using Mem = typename ExecSpace::memory_space;
  ex::PatchSolver<ExecSpace, Mem> s;
  KOKKOS_INLINE_FUNCTION void operator()(
      const typename Kokkos::TeamPolicy<ExecSpace>::member_type& member) const {
    const int ip = member.league_rank();
    const ex::PatchDesc p = s.patches(ip);
    const int n = p.nfib * s.nwt;
    s.normal_equations(member, ip, p, n);
  }
};

// ---- end of PatchSolver internals -------------------------------------------------------

// Flops of the normal equations of these patches (model in the file comment), from their
// spot corners.
template <class ExecSpace>
double normal_equation_flops(const PatchBatch<ExecSpace>& batch) {
  const auto& hx = batch.xcorner;
  const auto& hy = batch.ycorner;
  const int nx = batch.nx, ny = batch.ny, nwt = batch.nwt;
  auto overlap = [](int a0, int b0, int len, int lo,
                    int hi) {  // of [a0, a0+len) ∩ [b0, b0+len) ∩ [lo, hi)
    return std::max(0, std::min({a0 + len, b0 + len, hi}) - std::max({a0, b0, lo}));
  };
  double f = 0;
  for (const ex::PatchDesc& p : batch.plan) {
    const int n = p.nfib * nwt;
    for (int jc = 0; jc < n; ++jc) {
      const int fc = p.fib0 + jc % p.nfib, kc = p.kf0 + jc / p.nfib;
      f += 4.0 * overlap(hy(fc, kc), hy(fc, kc), ny, p.row0, p.row1) *
           overlap(hx(fc, kc), hx(fc, kc), nx, p.col0, p.col1);
      for (int jr = jc; jr <= std::min(n - 1, jc + p.band); ++jr) {
        const int fr = p.fib0 + jr % p.nfib, kr = p.kf0 + jr / p.nfib;
        f += 2.0 * overlap(hy(fc, kc), hy(fr, kr), ny, -(1 << 30), 1 << 30) *
             overlap(hx(fc, kc), hx(fr, kr), nx, -(1 << 30), 1 << 30);
      }
    }
  }
  return f;
}

enum class Stage { normal_equations, patch };

template <class ExecSpace>
void patches(benchmark::State& state, Stage stage) {
  perfex_bench::reset_peak_rss();
  const ExecSpace exec;
  const int npatches = static_cast<int>(state.range(0));
  PatchBatch<ExecSpace> batch = make_patch_batch(exec, npatches);
  const Kokkos::TeamPolicy<ExecSpace> policy(exec, npatches, Kokkos::AUTO);
  for (auto _ : state) {
    perfex_bench::timed(state, exec, [&] {
      if (stage == Stage::patch)
        ex::solve_patches(exec, batch.solver, batch.patches, 0, npatches);
      else
        Kokkos::parallel_for("perfex::bench::normal_equations", policy,
                             NormalEquations<ExecSpace>{batch.solver});
    });
  }
  double flops = 0, fibre_wavelengths = 0;
  for (const ex::PatchDesc& p : batch.plan) {
    flops += ex::patch_flops(p, batch.nwt, batch.solver.ndiag, ex::Decorrelation::signal);
    fibre_wavelengths += double(p.nkeepfib) * p.nkeep;
  }
  if (stage == Stage::normal_equations) flops = normal_equation_flops(batch);
  state.counters["patches"] = npatches;
  state.counters["patches/s"] = perfex_bench::rate(npatches);
  state.counters["fibre_wavelengths/s"] = perfex_bench::rate(fibre_wavelengths);
  state.counters["GFLOP/s"] = perfex_bench::rate(flops / 1e9);
  perfex_bench::common_counters(state, exec);
}

enum class Scope { bundle, frame };

template <class ExecSpace>
void extraction(benchmark::State& state, Scope scope) {
  perfex_bench::reset_peak_rss();
  ex::ExtractionOptions opt;  // DESI defaults: 25-fibre bundles, 5 sub-bundles, 5760-7620 Å
  const bool smoke = perfex_bench::smoke();
  if (scope == Scope::bundle) {
    opt.nspec = smoke ? 5 : 25;
    opt.bundlesize = smoke ? 5 : 25;
    opt.nsubbundles = smoke ? 1 : 5;
    opt.wmax = smoke ? 5800.0 : 6760.0;
  } else {
    opt.nspec = smoke ? 10 : 500;
    opt.wmax = smoke ? 5800.0 : 7620.0;
  }
  const auto& psf = perfex_bench::bench_psf();
  const ExecSpace exec;
  const auto image = bench_image(exec);
  const auto device_psf = perfex::psf::upload_psf(exec, psf);
  ex::Frame frame;
  for (auto _ : state)
    perfex_bench::timed(state, exec,
                        [&] { frame = ex::extract_frame(exec, device_psf, image, opt); });
  state.counters["fibres"] = frame.nspec;
  state.counters["wavelengths"] = frame.nwave;
  state.counters["patches"] = frame.npatches;
  state.counters["patches/s"] = perfex_bench::rate(frame.npatches);
  state.counters["fibre_wavelengths/s"] = perfex_bench::rate(double(frame.nspec) * frame.nwave);
  state.counters["GFLOP/s"] = perfex_bench::rate(frame.linalg_flops / 1e9);
  state.counters["spot_launches"] = frame.spot_launches;
  state.counters["solver_launches"] = frame.solver_launches;
  state.counters["scratch_MB"] = double(frame.scratch_bytes) / 1e6;
  // The library's phases (as perfex-extract --timing prints them), numbered in their order.
  int i = 0;
  for (const perfex::PhaseTime& p : frame.phases.list()) {
    char key[96];
    std::snprintf(key, sizeof(key), "phase:%02d:%s", i++, p.name.c_str());
    state.counters[key] = p.seconds;
  }
  perfex_bench::common_counters(state, exec);
}

const int registered = [] {
  perfex_bench::for_each_backend([](auto exec, const std::string& backend) {
    using Exec = decltype(exec);
    for (Stage stage : {Stage::normal_equations, Stage::patch}) {
      const std::string name = std::string("extract/") +
                               (stage == Stage::patch ? "patch/" : "normal_equations/") + backend;
      auto* b = benchmark::RegisterBenchmark(name.c_str(), patches<Exec>, stage)
                    ->UseManualTime()
                    ->Unit(benchmark::kMillisecond)
                    ->ArgName("patches");
      if (perfex_bench::smoke())
        b->Arg(2);
      else
        b->Arg(1)->Arg(10);
    }
    // One iteration each: a bundle takes seconds, the frame minutes on one core.
    benchmark::RegisterBenchmark(("extract/bundle/" + backend).c_str(), extraction<Exec>,
                                 Scope::bundle)
        ->UseManualTime()
        ->Unit(benchmark::kSecond)
        ->Iterations(1);
    benchmark::RegisterBenchmark(("extract/frame/" + backend).c_str(), extraction<Exec>,
                                 Scope::frame)
        ->UseManualTime()
        ->Unit(benchmark::kSecond)
        ->Iterations(1)
        ->Repetitions(1);
  });
  return 0;
}();

}  // namespace
