// Spot evaluation throughput: one bundle (25 fibres × 2400 wavelengths, 17 × 11 pixels each)
// of the synthetic DESI-like PSF per call, on every enabled backend; smoke mode: 2 × 50.
#include "perfex_bench.hpp"

#include <perfex/psf/gauss_hermite.hpp>
#include <perfex/psf/synthetic.hpp>

namespace {

template <class ExecSpace>
void spots(benchmark::State& state) {
  using M = typename ExecSpace::memory_space;
  const ExecSpace exec;
  const bool smoke = perfex_bench::smoke();
  const int nf = smoke ? 2 : 25;
  const int K = smoke ? 50 : 2400;
  static const perfex::psf::GaussHermitePsfData data = perfex::psf::make_synthetic_psf();
  perfex::psf::GaussHermitePsf<M> psf(data);
  Kokkos::View<double*, M> wave("perfex::bench::wave", K);
  auto hw = Kokkos::create_mirror_view(wave);
  for (int k = 0; k < K; ++k) hw(k) = 5600.0 + 0.8 * k;  // 5600 … 7519 Å
  Kokkos::deep_copy(wave, hw);
  Kokkos::View<double****, Kokkos::LayoutRight, M> s("perfex::bench::spots", nf, K, psf.ny(), psf.nx());
  Kokkos::View<int**, M> xc("perfex::bench::xc", nf, K), yc("perfex::bench::yc", nf, K);
  const int f0 = 100;  // bundle 4
  for (auto _ : state) {
    perfex_bench::timed(state, exec, [&] {
      perfex::psf::compute_spots(exec, psf, f0, nf, Kokkos::View<const double*, M>(wave), s, xc, yc);
    });
  }
  state.counters["spots"] = static_cast<double>(nf) * K;
  state.counters["spots/s"] =
      benchmark::Counter(static_cast<double>(nf) * K, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["threads"] = perfex::concurrency(exec);
}

template <class ExecSpace>
void register_psf(const std::string& backend) {
  benchmark::RegisterBenchmark(("psf/spots/" + backend).c_str(), spots<ExecSpace>)
      ->UseManualTime()
      ->Unit(benchmark::kMillisecond);
}

const int registered = [] {
#ifdef KOKKOS_ENABLE_SERIAL
  register_psf<Kokkos::Serial>("serial");
#endif
#ifdef KOKKOS_ENABLE_OPENMP
  register_psf<Kokkos::OpenMP>("openmp");
#endif
#ifdef KOKKOS_ENABLE_CUDA
  register_psf<Kokkos::Cuda>("cuda");
#endif
  return 0;
}();

}  // namespace
