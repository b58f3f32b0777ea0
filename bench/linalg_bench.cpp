// perfex::linalg benchmarks: portable team kernels vs the host LAPACK (one matrix per
// RangePolicy index), per size (74, 444, 518) and batch size, on every enabled backend (the
// LAPACK variants on host backends only).
// Names: linalg/<op>/<portable|lapack>/<backend>, arguments n/batch.
// Flop models (counter GFLOP/s): Cholesky n^3/3; solve 2n^2 (one right-hand side);
// inverse diagonal blocks (bs = 74, all n/74 blocks): portable sum_I (n - I bs)^2 bs +
// (n - I bs) bs^2, LAPACK potri (whole inverse) 2n^3/3; syev 9n^3 (both);
// inverse_sqrt 9n^3 + n^3 (eigendecomposition + composition of the lower triangle).
#include "perfex_bench.hpp"

#include <perfex/config.hpp>
#include <perfex/linalg/batched.hpp>

#include <cmath>
#include <random>
#include <string>
#include <vector>

namespace {

namespace pl = perfex::linalg;

enum class Op { cholesky, solve, inverse_diag_blocks, syev, inverse_sqrt };

template <class Exec>
using Mat3 = Kokkos::View<double***, Kokkos::LayoutLeft, typename Exec::memory_space>;

// Batch of SPD matrices: diagonally dominant random symmetric (kappa ~ 10).
template <class Exec>
Mat3<Exec> make_spd(int n, int nbatch) {
  Mat3<Exec> H("perfex::bench::H", n, n, nbatch);
  auto h = Kokkos::create_mirror_view(H);
  std::mt19937_64 rng(12345);
  std::uniform_real_distribution<double> u(-1, 1);
  for (int b = 0; b < nbatch; ++b)
    for (int j = 0; j < n; ++j) {
      for (int i = j; i < n; ++i) h(i, j, b) = h(j, i, b) = u(rng);
      h(j, j, b) = n + 1.0 + u(rng);
    }
  Kokkos::deep_copy(H, h);
  return H;
}

double flops(Op op, int n) {
  const double N = n;
  switch (op) {
    case Op::cholesky: return N * N * N / 3;
    case Op::solve: return 2 * N * N;
    case Op::inverse_diag_blocks: {
      const int bs = 74;
      double f = 0;
      for (int r0 = 0; r0 + bs <= n; r0 += bs) f += double(n - r0) * (n - r0) * bs + double(n - r0) * bs * bs;
      return f;
    }
    case Op::syev: return 9 * N * N * N;
    case Op::inverse_sqrt: return 10 * N * N * N;
  }
  return 0;
}
double lapack_flops(Op op, int n) {
  return op == Op::inverse_diag_blocks ? 2.0 * n * n * n / 3 : flops(op, n);
}

template <class Exec>
struct InverseSqrt {
  Mat3<Exec> A, V;
  Kokkos::View<double**, Kokkos::LayoutLeft, typename Exec::memory_space> w, work;
  KOKKOS_INLINE_FUNCTION void operator()(const typename Kokkos::TeamPolicy<Exec>::member_type& m) const {
    const int b = m.league_rank();
    pl::team_inverse_sqrt(m, Kokkos::subview(A, Kokkos::ALL(), Kokkos::ALL(), b),
                          Kokkos::subview(V, Kokkos::ALL(), Kokkos::ALL(), b), Kokkos::subview(w, Kokkos::ALL(), b),
                          Kokkos::subview(work, Kokkos::ALL(), b));
  }
};

#if PERFEX_HAVE_LAPACK
// LAPACK reference of the inverse diagonal blocks: potri (whole inverse, lower) on a copy of
// the factor, then copy out the blocks.
template <class Exec>
struct LapackInverseBlocks {
  Mat3<Exec> L, W;
  Kokkos::View<double****, Kokkos::LayoutLeft, typename Exec::memory_space> C;
  int bs;
  void operator()(int b) const {
    const int n = int(L.extent(0));
    for (int j = 0; j < n; ++j)
      for (int i = j; i < n; ++i) W(i, j, b) = L(i, j, b);
    pl::lapack::potri(n, &W(0, 0, b), int(W.stride(1)));
    for (int k = 0; k < int(C.extent(2)); ++k)
      for (int j = 0; j < bs; ++j)
        for (int i = 0; i < bs; ++i) {
          const int gi = k * bs + (i > j ? i : j), gj = k * bs + (i > j ? j : i);
          C(i, j, k, b) = W(gi, gj, b);
        }
  }
};
template <class Exec>
struct LapackInverseSqrt {
  Mat3<Exec> A, V;
  Kokkos::View<double**, Kokkos::LayoutLeft, typename Exec::memory_space> w;
  void operator()(int b) const {
    const int n = int(A.extent(0));
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < n; ++i) V(i, j, b) = A(i, j, b);
    pl::lapack::syevd(n, &V(0, 0, b), n, &w(0, b));
    std::vector<double> f(n);
    const double floor_mu = 1e-14 * w(n - 1, b);
    for (int k = 0; k < n; ++k) f[k] = 1.0 / std::sqrt(w(k, b) < floor_mu ? floor_mu : w(k, b));
    for (int j = 0; j < n; ++j)
      for (int i = j; i < n; ++i) {
        double s = 0;
        for (int k = 0; k < n; ++k) s += V(i, k, b) * f[k] * V(j, k, b);
        A(i, j, b) = A(j, i, b) = s;
      }
  }
};
#endif

template <class Exec>
constexpr bool host_exec = Kokkos::SpaceAccessibility<Exec, Kokkos::HostSpace>::accessible;

template <class Exec>
void run(benchmark::State& state, Op op, pl::Backend backend) {
  const int n = int(state.range(0));
  const int nbatch = int(state.range(1));
  Exec exec;
  const Mat3<Exec> H = make_spd<Exec>(n, nbatch);
  Mat3<Exec> A("perfex::bench::A", n, n, nbatch);
  Mat3<Exec> L("perfex::bench::L", n, n, nbatch);
  Kokkos::deep_copy(L, H);
  Kokkos::View<int*, typename Exec::memory_space> status("perfex::bench::status", nbatch);
  pl::batched_cholesky(exec, L, status);
  Kokkos::View<double**, Kokkos::LayoutLeft, typename Exec::memory_space> x("perfex::bench::x", n, nbatch),
      w("perfex::bench::w", n, nbatch), work("perfex::bench::work", pl::syev_work_size(n), nbatch);
  const int bs = 74;
  Kokkos::View<double****, Kokkos::LayoutLeft, typename Exec::memory_space> C("perfex::bench::C", bs, bs,
                                                                              n >= bs ? n / bs : 0, nbatch);
  Mat3<Exec> V("perfex::bench::V", (op == Op::inverse_sqrt || op == Op::inverse_diag_blocks) ? n : 0,
               (op == Op::inverse_sqrt || op == Op::inverse_diag_blocks) ? n : 0, nbatch);
  const bool lapack = backend == pl::Backend::lapack;
  for (auto _ : state) {
    if (op == Op::cholesky || op == Op::syev || op == Op::inverse_sqrt) Kokkos::deep_copy(exec, A, H);
    if (op == Op::solve) Kokkos::deep_copy(exec, x, 1.0);
    perfex_bench::timed(state, exec, [&]() {
      switch (op) {
        case Op::cholesky: pl::batched_cholesky(exec, A, status, backend); break;
        case Op::solve: pl::batched_cholesky_solve(exec, L, x, backend); break;
        case Op::syev: pl::batched_syev(exec, A, w, status, backend); break;
        case Op::inverse_diag_blocks:
#if PERFEX_HAVE_LAPACK
          if constexpr (host_exec<Exec>) {
            if (lapack) {
              Kokkos::parallel_for("perfex::bench::lapack_inverse_blocks", Kokkos::RangePolicy<Exec>(exec, 0, nbatch),
                                   LapackInverseBlocks<Exec>{L, V, C, bs});
              break;
            }
          }
#endif
          pl::batched_cholesky_inverse_diag_blocks(exec, L, bs, C);
          break;
        case Op::inverse_sqrt:
#if PERFEX_HAVE_LAPACK
          if constexpr (host_exec<Exec>) {
            if (lapack) {
              Kokkos::parallel_for("perfex::bench::lapack_inverse_sqrt", Kokkos::RangePolicy<Exec>(exec, 0, nbatch),
                                   LapackInverseSqrt<Exec>{A, V, w});
              break;
            }
          }
#endif
          Kokkos::TeamPolicy<Exec> policy(exec, nbatch, Kokkos::AUTO);
          Kokkos::parallel_for("perfex::bench::inverse_sqrt", policy, InverseSqrt<Exec>{A, V, w, work});
          break;
      }
    });
  }
  const double f = (lapack ? lapack_flops(op, n) : flops(op, n)) * nbatch;
  state.counters["GFLOP/s"] = benchmark::Counter(f / 1e9, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["matrices/s"] = benchmark::Counter(nbatch, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["threads"] = perfex::concurrency(exec);
}

const char* op_name(Op op) {
  switch (op) {
    case Op::cholesky: return "cholesky";
    case Op::solve: return "solve";
    case Op::inverse_diag_blocks: return "inverse_diag_blocks";
    case Op::syev: return "syev";
    case Op::inverse_sqrt: return "inverse_sqrt";
  }
  return "";
}

template <class Exec>
void register_backend() {
  std::string backend = Exec::name();
  for (auto& c : backend) c = char(std::tolower(static_cast<unsigned char>(c)));
  const bool smoke = perfex_bench::smoke();
  for (Op op : {Op::cholesky, Op::solve, Op::inverse_diag_blocks, Op::syev, Op::inverse_sqrt}) {
    for (pl::Backend be : {pl::Backend::portable, pl::Backend::lapack}) {
      if (be == pl::Backend::lapack && (!PERFEX_HAVE_LAPACK || !host_exec<Exec>)) continue;
      const std::string name =
          std::string("linalg/") + op_name(op) + (be == pl::Backend::lapack ? "/lapack/" : "/portable/") + backend;
      auto* b = benchmark::RegisterBenchmark(name.c_str(), run<Exec>, op, be)->UseManualTime()->Unit(
          benchmark::kMillisecond);
      if (smoke) {
        b->Args({74, 2});
        continue;
      }
      b->Args({74, 1})->Args({74, 64})->Args({444, 4})->Args({518, 1})->Args({518, 4});
    }
  }
}

const bool registered = []() {
#ifdef KOKKOS_ENABLE_SERIAL
  register_backend<Kokkos::Serial>();
#endif
#ifdef KOKKOS_ENABLE_OPENMP
  register_backend<Kokkos::OpenMP>();
#endif
#ifdef KOKKOS_ENABLE_CUDA
  register_backend<Kokkos::Cuda>();
#endif
  return true;
}();

}  // namespace
