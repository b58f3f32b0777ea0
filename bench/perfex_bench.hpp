#pragma once
// Shared helpers of the benchmarks: backend registration, smoke-size switch, fenced manual
// timing, peak-memory and common counters, the benchmark PSF, and the spot flop model.
#include <benchmark/benchmark.h>
#include <Kokkos_Core.hpp>

#include <perfex/detail/kokkos_compat.hpp>
#include <perfex/linalg/flops.hpp>
#include <perfex/psf/gauss_hermite/data.hpp>
#include <perfex/runtime.hpp>

#include <cstdlib>
#include <string>

namespace perfex_bench {

// True in the CTest smoke run: benchmarks use their smallest problem and one iteration.
inline bool smoke() {
  const char* s = std::getenv("PERFEX_BENCH_SMOKE");
  return s && std::string(s) == "1";
}

// Calls reg(exec, "cuda" | "openmp" | "serial") for every enabled backend, so each benchmark
// file registers its benchmarks once, generically.
template <class Register>
void for_each_backend(const Register& reg) {
  perfex::for_each_backend([&](auto exec) { reg(exec, perfex::backend_name<decltype(exec)>()); });
}

// Times one call of f on exec with fences around it (Google Benchmark manual time).
template <class ExecSpace, class F>
void timed(benchmark::State& state, const ExecSpace& exec, F&& f) {
  exec.fence();
  Kokkos::Timer timer;
  f();
  exec.fence();
  state.SetIterationTime(timer.seconds());
}

// Resets the process's peak resident set size to its current value (Linux ≥ 4.0,
// /proc/self/clear_refs); false where that is not possible (the peak then covers the whole run).
bool reset_peak_rss();
// Peak resident set size of this process in bytes since the last reset (VmHWM).
double peak_rss_bytes();

// Counters every benchmark reports: the execution space's concurrency (its threads) and the
// peak RSS (MB) of the benchmark, setup included (call reset_peak_rss() before the setup).
template <class ExecSpace>
void common_counters(benchmark::State& state, const ExecSpace& exec) {
  // Not "threads": that is Google Benchmark's own key.
  state.counters["concurrency"] = perfex::concurrency(exec);
  state.counters["peak_rss_MB"] = peak_rss_bytes() / 1e6;
}

// Invariant work per iteration reported as a rate (per second of manual time).
inline benchmark::Counter rate(double per_iteration) {
  return benchmark::Counter(per_iteration, benchmark::Counter::kIsIterationInvariantRate);
}

// The PSF of every benchmark: the real DESI r0 PSF from ../shared/data when it is there
// (and perfex::io is built), else the synthetic DESI-like PSF of the same geometry. The choice
// is recorded in the JSON context ("psf").
const perfex::psf::GaussHermitePsfData& bench_psf();

// Flop models of the benchmarks' own stages (1 multiply-add = 2 flop). Those of the linear
// algebra and of a patch are the library's (perfex::linalg::flops, perfex::extract::patch_flops).
namespace flops {

// One spot, separable evaluation: Σ_ij a_ij Bx_i (2 (dx+1)(dy+1) nx), the tensor product with
// By_j (2 (dy+1) nx ny), clipping and normalisation (2 nx ny); erf/exp count as one flop each
// (2 (nx+ny+2)), the Legendre sums of the (dx+1)(dy+1)+4 parameters 2 (legdeg+1) each.
inline double spot(const perfex::psf::GaussHermitePsfData& p) {
  const double nx = 2 * p.hsizex + 1, ny = 2 * p.hsizey + 1, dx = p.ghdegx + 1, dy = p.ghdegy + 1;
  return 2 * dx * dy * nx + 2 * dy * nx * ny + 2 * nx * ny + 2 * (nx + ny + 2) +
         2 * (dx * dy + 4) * (p.legdeg + 1);
}

}  // namespace flops

}  // namespace perfex_bench
