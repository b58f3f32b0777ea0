// The core's double-precision peak: independent multiply-add chains on one host thread, built
// for the build machine's own vector units (FMA where it has them) whatever PERFEX_SIMD is.
// The report shows each stage's GFLOP/s as a share of it.
#include "perfex_bench.hpp"

#include <cmath>

namespace {

// 64 chains: enough independent work for two FMA pipes of latency 4 at 8 doubles per vector.
constexpr int kChains = 64;

void fma_peak(benchmark::State& state) {
  const long iterations = perfex_bench::smoke() ? 1000 : 4'000'000;
  alignas(64) double acc[kChains];
  for (int j = 0; j < kChains; ++j) acc[j] = 1.0 + 1e-3 * j;
  const double a = 0.999999, b = 1e-7;
  for (auto _ : state) {
    Kokkos::Timer timer;
    for (long i = 0; i < iterations; ++i) {
      for (int j = 0; j < kChains; ++j) {
#ifdef __FMA__
        acc[j] = std::fma(acc[j], a, b);
#else
        acc[j] = acc[j] * a + b;
#endif
      }
    }
    benchmark::DoNotOptimize(acc);
    state.SetIterationTime(timer.seconds());
  }
  state.counters["GFLOP/s"] = perfex_bench::rate(2.0 * kChains * iterations / 1e9);
  state.counters["concurrency"] = 1;
  state.counters["peak_rss_MB"] = perfex_bench::peak_rss_bytes() / 1e6;
}

const bool registered = [] {
  benchmark::RegisterBenchmark("peak/fma/serial", fma_peak)
      ->UseManualTime()
      ->Unit(benchmark::kMillisecond);
  return true;
}();

}  // namespace
