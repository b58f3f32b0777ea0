#pragma once
// Shared helpers of the benchmarks: backend list, smoke-size switch, fenced manual timing.
#include <benchmark/benchmark.h>
#include <Kokkos_Core.hpp>

#include <cstdlib>
#include <string>

namespace perfex_bench {

// True in the CTest smoke run: benchmarks use their smallest problem and one iteration.
inline bool smoke() {
  const char* s = std::getenv("PERFEX_BENCH_SMOKE");
  return s && std::string(s) == "1";
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

// Peak resident set size of this process in bytes (Linux getrusage).
double peak_rss_bytes();

}  // namespace perfex_bench
