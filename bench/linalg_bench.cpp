// perfex::linalg benchmarks: portable team kernels vs the host LAPACK path (one matrix per
// RangePolicy index), on every enabled host backend, at the sizes of a DESI patch: n = 518
// (7 solved fibres x 74 wavelengths) and n = 74 (one fibre's block), batches of one patch
// and of ten. Names: linalg/<op>/<portable|lapack>/<backend>, arguments n/batch.
// The two pipeline stages are cholesky_inverse_blocks (factor + the 5 kept fibres' diagonal
// blocks of H^-1) and inverse_sqrt at n = 74 (eigendecomposition of the per-fibre blocks and
// C^-1/2); the other ops are their parts.
// Flop models (perfex_bench::flops, counter GFLOP/s): Cholesky n^3/3; solve 2n^2; diagonal
// blocks of H^-1 sum over blocks (n - r0)^2 bs + (n - r0) bs^2 (LAPACK: potri, 2n^3/3, forms
// the whole inverse); syev 9n^3; inverse_sqrt 9n^3 + n^3.
#include "perfex_bench.hpp"

#include <perfex/config.hpp>
#include <perfex/linalg/batched.hpp>

#include <cmath>
#include <random>
#include <string>
#include <vector>

namespace {

namespace pl = perfex::linalg;
namespace fl = perfex_bench::flops;

enum class Op { cholesky, solve, inverse_diag_blocks, cholesky_inverse_blocks, syev, inverse_sqrt };

constexpr int kBlock = 74;  // one fibre's wavelengths in a DESI patch (50 + 2 x 12)

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

// Diagonal blocks an op computes: all of them, or for the pipeline stage those of the kept
// fibres (all but the first and last padding fibre when there are at least three).
struct Blocks {
  int first, count;
};
Blocks blocks_of(Op op, int n) {
  const int total = n / kBlock;
  if (op == Op::cholesky_inverse_blocks && total >= 3) return {1, total - 2};
  return {0, total};
}

double flops(Op op, int n, bool lapack) {
  const Blocks bl = blocks_of(op, n);
  switch (op) {
    case Op::cholesky: return fl::cholesky(n);
    case Op::solve: return fl::solve(n);
    case Op::inverse_diag_blocks: return lapack ? fl::potri(n) : fl::inverse_diag_blocks(n, kBlock, bl.first, bl.count);
    case Op::cholesky_inverse_blocks:
      return fl::cholesky(n) + (lapack ? fl::potri(n) : fl::inverse_diag_blocks(n, kBlock, bl.first, bl.count));
    case Op::syev: return fl::syev(n);
    case Op::inverse_sqrt: return fl::inverse_sqrt(n);
  }
  return 0;
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
// the factor, then copy out blocks first .. first + C.extent(2) - 1.
template <class Exec>
struct LapackInverseBlocks {
  Mat3<Exec> L, W;
  Kokkos::View<double****, Kokkos::LayoutLeft, typename Exec::memory_space> C;
  int bs, first;
  void operator()(int b) const {
    const int n = int(L.extent(0));
    for (int j = 0; j < n; ++j)
      for (int i = j; i < n; ++i) W(i, j, b) = L(i, j, b);
    pl::lapack::potri(n, &W(0, 0, b), int(W.stride(1)));
    for (int k = 0; k < int(C.extent(2)); ++k)
      for (int j = 0; j < bs; ++j)
        for (int i = 0; i < bs; ++i) {
          const int r0 = (first + k) * bs, gi = r0 + (i > j ? i : j), gj = r0 + (i > j ? j : i);
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
void run(benchmark::State& state, Op op, pl::Backend backend) {
  perfex_bench::reset_peak_rss();
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
  const Blocks bl = blocks_of(op, n);
  const bool blocks = op == Op::inverse_diag_blocks || op == Op::cholesky_inverse_blocks;
  Kokkos::View<double****, Kokkos::LayoutLeft, typename Exec::memory_space> C("perfex::bench::C", kBlock, kBlock,
                                                                              blocks ? bl.count : 0, nbatch);
  const int nv = (op == Op::inverse_sqrt || blocks) ? n : 0;
  Mat3<Exec> V("perfex::bench::V", nv, nv, nbatch);
  const bool lapack = backend == pl::Backend::lapack;
  for (auto _ : state) {
    if (op != Op::solve && op != Op::inverse_diag_blocks) Kokkos::deep_copy(exec, A, H);
    if (op == Op::solve) Kokkos::deep_copy(exec, x, 1.0);
    perfex_bench::timed(state, exec, [&]() {
      // The factor the block inverse starts from: the precomputed L, or A factored in the timed region.
      const Mat3<Exec> F = op == Op::cholesky_inverse_blocks ? A : L;
      switch (op) {
        case Op::cholesky: pl::batched_cholesky(exec, A, status, backend); break;
        case Op::solve: pl::batched_cholesky_solve(exec, L, x, backend); break;
        case Op::syev: pl::batched_syev(exec, A, w, status, backend); break;
        case Op::cholesky_inverse_blocks: pl::batched_cholesky(exec, A, status, backend); [[fallthrough]];
        case Op::inverse_diag_blocks:
#if PERFEX_HAVE_LAPACK
          if (lapack) {
            Kokkos::parallel_for("perfex::bench::lapack_inverse_blocks", Kokkos::RangePolicy<Exec>(exec, 0, nbatch),
                                 LapackInverseBlocks<Exec>{F, V, C, kBlock, bl.first});
            break;
          }
#endif
          pl::batched_cholesky_inverse_diag_blocks(exec, F, kBlock, C, bl.first);
          break;
        case Op::inverse_sqrt:
#if PERFEX_HAVE_LAPACK
          if (lapack) {
            Kokkos::parallel_for("perfex::bench::lapack_inverse_sqrt", Kokkos::RangePolicy<Exec>(exec, 0, nbatch),
                                 LapackInverseSqrt<Exec>{A, V, w});
            break;
          }
#endif
          Kokkos::TeamPolicy<Exec> policy(exec, nbatch, Kokkos::AUTO);
          Kokkos::parallel_for("perfex::bench::inverse_sqrt", policy, InverseSqrt<Exec>{A, V, w, work});
          break;
      }
    });
  }
  state.counters["GFLOP/s"] = perfex_bench::rate(flops(op, n, lapack) * nbatch / 1e9);
  state.counters["matrices/s"] = perfex_bench::rate(nbatch);
  perfex_bench::common_counters(state, exec);
}

const char* op_name(Op op) {
  switch (op) {
    case Op::cholesky: return "cholesky";
    case Op::solve: return "solve";
    case Op::inverse_diag_blocks: return "inverse_diag_blocks";
    case Op::cholesky_inverse_blocks: return "cholesky_inverse_blocks";
    case Op::syev: return "syev";
    case Op::inverse_sqrt: return "inverse_sqrt";
  }
  return "";
}

// Matrix size of an op in a patch: the whole system (7 x 74) or one fibre's block (74).
int patch_size(Op op) { return (op == Op::syev || op == Op::inverse_sqrt) ? kBlock : 7 * kBlock; }
// Matrices of one patch: one system, or the blocks of its 5 kept fibres.
int per_patch(Op op) { return patch_size(op) == kBlock ? 5 : 1; }

const int registered = [] {
  perfex_bench::for_each_backend([](auto exec, const std::string& backend) {
    using Exec = decltype(exec);
    if constexpr (Kokkos::SpaceAccessibility<Exec, Kokkos::HostSpace>::accessible) {
      for (Op op : {Op::cholesky, Op::solve, Op::inverse_diag_blocks, Op::cholesky_inverse_blocks, Op::syev,
                    Op::inverse_sqrt}) {
        for (pl::Backend be : {pl::Backend::portable, pl::Backend::lapack}) {
          if (be == pl::Backend::lapack && !PERFEX_HAVE_LAPACK) continue;
          const std::string name =
              std::string("linalg/") + op_name(op) + (be == pl::Backend::lapack ? "/lapack/" : "/portable/") + backend;
          auto* b = benchmark::RegisterBenchmark(name.c_str(), run<Exec>, op, be)
                        ->UseManualTime()
                        ->Unit(benchmark::kMillisecond)
                        ->ArgNames({"n", "batch"});
          if (perfex_bench::smoke())
            b->Args({2 * kBlock, 2});
          else
            b->Args({patch_size(op), per_patch(op)})->Args({patch_size(op), 10 * per_patch(op)});
        }
      }
    }
  });
  return 0;
}();

}  // namespace
