// Spot evaluation: one bundle (25 fibres × 2400 wavelengths, 5600-7519 Å, 17 × 11 pixels each)
// of the benchmark PSF per call, on every enabled backend; smoke mode: 2 × 50.
// GFLOP/s from perfex_bench::flops::spot (separable evaluation, ≈ 4.9 k flop per DESI spot).
#include "perfex_bench.hpp"

#include <perfex/psf/gauss_hermite/model.hpp>

namespace {

template <class ExecSpace>
void spots(benchmark::State& state) {
  using M = typename ExecSpace::memory_space;
  perfex_bench::reset_peak_rss();
  const ExecSpace exec;
  const bool smoke = perfex_bench::smoke();
  const int nf = smoke ? 2 : 25;
  const int K = smoke ? 50 : 2400;
  const auto& data = perfex_bench::bench_psf();
  perfex::psf::GaussHermitePsf<M> psf(data);
  Kokkos::View<double*, M> wave("perfex::bench::wave", K);
  auto hw = Kokkos::create_mirror_view(wave);
  for (int k = 0; k < K; ++k) hw(k) = 5600.0 + 0.8 * k;
  Kokkos::deep_copy(wave, hw);
  Kokkos::View<double****, Kokkos::LayoutRight, M> s("perfex::bench::spots", nf, K, psf.ny(),
                                                     psf.nx());
  Kokkos::View<int**, M> xc("perfex::bench::xc", nf, K), yc("perfex::bench::yc", nf, K);
  const int f0 = 100;  // bundle 4
  for (auto _ : state) {
    perfex_bench::timed(state, exec, [&] {
      perfex::psf::compute_spots(exec, psf, f0, nf, Kokkos::View<const double*, M>(wave), s, xc,
                                 yc);
    });
  }
  const double nspots = static_cast<double>(nf) * K;
  state.counters["spots"] = nspots;
  state.counters["fibre_wavelengths/s"] = perfex_bench::rate(nspots);  // one spot each
  state.counters["GFLOP/s"] = perfex_bench::rate(nspots * perfex_bench::flops::spot(data) / 1e9);
  perfex_bench::common_counters(state, exec);
}

const int registered = [] {
  perfex_bench::for_each_backend([](auto exec, const std::string& backend) {
    benchmark::RegisterBenchmark(("psf/spots/" + backend).c_str(), spots<decltype(exec)>)
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond);
  });
  return 0;
}();

}  // namespace
