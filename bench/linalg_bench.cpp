// perfex::linalg benchmarks: portable team kernels vs the host LAPACK path (one matrix per
// RangePolicy index), on every enabled host backend, at the sizes of a DESI patch, batches of
// one patch and of ten. Names: linalg/<op>/<portable|lapack>/<backend>.
//
// Band ops (the pipeline's; arguments n/kd/batch): a patch's normal matrix ordered
// wavelength-major is a band matrix, n = 518 (7 solved fibres x 74 wavelengths), half-bandwidth
// kd = 58, in LAPACK lower band storage. The pipeline stage band_cholesky_inverse_blocks is the
// band factor + the 5 kept fibres' 74x74 blocks of H^-1 (rows 1 + f + 7a): portable
// batched_band_cholesky + batched_band_cholesky_inverse_strided_blocks; LAPACK dpbtrf, then
// dpbtrs on the kept fibres' 370 identity columns. band_cholesky and band_solve are its parts.
//
// Dense ops (arguments n/batch): cholesky, solve and inverse_diag_blocks at n = 518 are dense
// references for the band ops; syev and inverse_sqrt at n = 74 (one fibre's block, 5 per
// patch) are the pipeline's per-fibre C^-1/2 stage and its eigendecomposition.
//
// Flop models (counter GFLOP/s): perfex::linalg::flops, the work of the algorithm each path
// runs (LAPACK band stage: band_cholesky + 370 band_solve; dense diagonal blocks via potri).
#include "perfex_bench.hpp"

#include <perfex/config.hpp>
#include <perfex/linalg/batched.hpp>
#include <perfex/linalg/flops.hpp>

#include <cmath>
#include <random>
#include <string>
#include <vector>

namespace {

namespace pl = perfex::linalg;
namespace fl = perfex::linalg::flops;

enum class Op {
  band_cholesky,
  band_solve,
  band_cholesky_inverse_blocks,
  cholesky,
  solve,
  inverse_diag_blocks,
  syev,
  inverse_sqrt
};

constexpr int kBlock = 74;  // one fibre's wavelengths in a DESI patch (50 + 2 x 12)
constexpr int kFibres = 7;  // solved fibres of a patch; the first and last are padding
constexpr int kKept = 5;    // kept fibres (1 .. 5)
constexpr int kBand = 58;   // half-bandwidth of a DESI patch's wavelength-major H

bool is_band(Op op) {
  return op == Op::band_cholesky || op == Op::band_solve || op == Op::band_cholesky_inverse_blocks;
}

template <class Exec>
constexpr bool host_backend() {
  return Kokkos::SpaceAccessibility<Exec, Kokkos::HostSpace>::accessible;
}

template <class Exec>
using Mat3 = Kokkos::View<double***, Kokkos::LayoutLeft, typename Exec::memory_space>;
template <class Exec>
using Mat2 = Kokkos::View<double**, Kokkos::LayoutLeft, typename Exec::memory_space>;
template <class Exec>
using Blocks4 = Kokkos::View<double****, Kokkos::LayoutLeft, typename Exec::memory_space>;

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

// Batch of SPD band matrices in lower band storage ((kd+1) x n, AB(d, j) = A(j+d, j)):
// diagonally dominant random symmetric band (a row has at most 2 kd off-diagonal entries in
// [-1, 1], its diagonal is 2 kd + 1 + [-1, 1]).
template <class Exec>
Mat3<Exec> make_spd_band(int n, int kd, int nbatch) {
  Mat3<Exec> AB("perfex::bench::AB", kd + 1, n, nbatch);
  auto h = Kokkos::create_mirror_view(AB);
  std::mt19937_64 rng(12345);
  std::uniform_real_distribution<double> u(-1, 1);
  for (int b = 0; b < nbatch; ++b)
    for (int j = 0; j < n; ++j) {
      h(0, j, b) = 2 * kd + 2.0 + u(rng);
      for (int d = 1; d <= kd; ++d) h(d, j, b) = j + d < n ? u(rng) : 0.0;
    }
  Kokkos::deep_copy(AB, h);
  return AB;
}

// Wavelengths per fibre of a band problem of size n (n = kFibres x count).
int band_count(int n) { return n / kFibres; }

double flops(Op op, int n, int kd, bool lapack) {
  switch (op) {
    case Op::band_cholesky:
      return fl::band_cholesky(n, kd);
    case Op::band_solve:
      return fl::band_solve(n, kd);
    case Op::band_cholesky_inverse_blocks: {
      const int count = band_count(n);
      double f = fl::band_cholesky(n, kd);
      if (lapack) return f + kKept * count * fl::band_solve(n, kd);
      for (int blk = 0; blk < kKept; ++blk)
        f += fl::band_strided_block(n, kd, 1 + blk, kFibres, count);
      return f;
    }
    case Op::cholesky:
      return fl::cholesky(n);
    case Op::solve:
      return fl::solve(n);
    case Op::inverse_diag_blocks:
      return lapack ? fl::potri(n) : fl::inverse_diag_blocks(n, kBlock, 0, n / kBlock);
    case Op::syev:
      return fl::syev(n);
    case Op::inverse_sqrt:
      return fl::inverse_sqrt(n);
  }
  return 0;
}

template <class Exec>
struct InverseSqrt {
  Mat3<Exec> A, V;
  Mat2<Exec> w, work;
  KOKKOS_INLINE_FUNCTION void operator()(
      const typename Kokkos::TeamPolicy<Exec>::member_type& m) const {
    const int b = m.league_rank();
    pl::team_inverse_sqrt(m, Kokkos::subview(A, Kokkos::ALL(), Kokkos::ALL(), b),
                          Kokkos::subview(V, Kokkos::ALL(), Kokkos::ALL(), b),
                          Kokkos::subview(w, Kokkos::ALL(), b),
                          Kokkos::subview(work, Kokkos::ALL(), b));
  }
};

// LAPACK reference of the inverse diagonal blocks: potri (whole inverse, lower) on a copy of
// the factor, then copy out blocks first .. first + C.extent(2) - 1.
template <class Exec>
struct LapackInverseBlocks {
  Mat3<Exec> L, W;
  Blocks4<Exec> C;
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
// LAPACK path of the band stage's blocks: dpbtrs on the identity columns of the C.extent(2)
// kept fibres (column blk * count + a = e_{first + blk + a * stride}), then copy out the blocks.
template <class Exec>
struct LapackBandInverseBlocks {
  Mat3<Exec> L, Y;
  Blocks4<Exec> C;
  int stride, first;
  void operator()(int b) const {
    const int n = int(L.extent(1)), kd = int(L.extent(0)) - 1;
    const int count = int(C.extent(0)), nblocks = int(C.extent(2)), ncol = count * nblocks;
    for (int c = 0; c < ncol; ++c)
      for (int i = 0; i < n; ++i) Y(i, c, b) = 0.0;
    for (int blk = 0; blk < nblocks; ++blk)
      for (int a = 0; a < count; ++a) Y(first + blk + a * stride, blk * count + a, b) = 1.0;
    pl::lapack::pbtrs(n, kd, ncol, &L(0, 0, b), int(L.stride(1)), &Y(0, 0, b), int(Y.stride(1)));
    for (int blk = 0; blk < nblocks; ++blk)
      for (int c = 0; c < count; ++c)
        for (int a = 0; a < count; ++a)
          C(a, c, blk, b) = Y(first + blk + a * stride, blk * count + c, b);
  }
};
template <class Exec>
struct LapackInverseSqrt {
  Mat3<Exec> A, V;
  Mat2<Exec> w;
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

// Band ops: arguments n, kd, batch.
template <class Exec>
void run_band(benchmark::State& state, Op op, pl::Backend backend) {
  perfex_bench::reset_peak_rss();
  const int n = int(state.range(0)), kd = int(state.range(1)), nbatch = int(state.range(2));
  Exec exec;
  const Mat3<Exec> H = make_spd_band<Exec>(n, kd, nbatch);
  Mat3<Exec> A("perfex::bench::A", kd + 1, n, nbatch);
  Mat3<Exec> L("perfex::bench::L", kd + 1, n, nbatch);
  Kokkos::deep_copy(L, H);
  Kokkos::View<int*, typename Exec::memory_space> status("perfex::bench::status", nbatch);
  pl::batched_band_cholesky(exec, L, status);
  Mat2<Exec> x("perfex::bench::x", n, nbatch);
  const bool stage = op == Op::band_cholesky_inverse_blocks;
  const bool lapack = backend == pl::Backend::lapack;
  const int count = band_count(n);
  Blocks4<Exec> C("perfex::bench::C", count, count, stage ? kKept : 0, nbatch);
  Mat3<Exec> Y("perfex::bench::Y", stage && lapack ? n : 0, stage && lapack ? kKept * count : 0,
               nbatch);
  for (auto _ : state) {
    if (op == Op::band_solve)
      Kokkos::deep_copy(exec, x, 1.0);
    else
      Kokkos::deep_copy(exec, A, H);
    perfex_bench::timed(state, exec, [&]() {
      switch (op) {
        case Op::band_cholesky:
          pl::batched_band_cholesky(exec, A, status, backend);
          break;
        case Op::band_solve:
          pl::batched_band_cholesky_solve(exec, L, x, backend);
          break;
        default:
          pl::batched_band_cholesky(exec, A, status, backend);
          if constexpr (host_backend<Exec>()) {
            if (lapack) {
              Kokkos::parallel_for("perfex::bench::lapack_band_inverse_blocks",
                                   Kokkos::RangePolicy<Exec>(exec, 0, nbatch),
                                   LapackBandInverseBlocks<Exec>{A, Y, C, kFibres, 1});
              break;
            }
          }
          pl::batched_band_cholesky_inverse_strided_blocks(exec, A, kFibres, C, 1);
          break;
      }
    });
  }
  state.counters["GFLOP/s"] = perfex_bench::rate(flops(op, n, kd, lapack) * nbatch / 1e9);
  state.counters["matrices/s"] = perfex_bench::rate(nbatch);
  perfex_bench::common_counters(state, exec);
}

// Dense ops: arguments n, batch.
template <class Exec>
void run_dense(benchmark::State& state, Op op, pl::Backend backend) {
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
  Mat2<Exec> x("perfex::bench::x", n, nbatch), w("perfex::bench::w", n, nbatch),
      work("perfex::bench::work", pl::syev_work_size(n), nbatch);
  const bool blocks = op == Op::inverse_diag_blocks;
  Blocks4<Exec> C("perfex::bench::C", kBlock, kBlock, blocks ? n / kBlock : 0, nbatch);
  const int nv = (op == Op::inverse_sqrt || blocks) ? n : 0;
  Mat3<Exec> V("perfex::bench::V", nv, nv, nbatch);
  const bool lapack = backend == pl::Backend::lapack;
  for (auto _ : state) {
    if (op != Op::solve && op != Op::inverse_diag_blocks) Kokkos::deep_copy(exec, A, H);
    if (op == Op::solve) Kokkos::deep_copy(exec, x, 1.0);
    perfex_bench::timed(state, exec, [&]() {
      switch (op) {
        case Op::cholesky:
          pl::batched_cholesky(exec, A, status, backend);
          break;
        case Op::solve:
          pl::batched_cholesky_solve(exec, L, x, backend);
          break;
        case Op::syev:
          pl::batched_syev(exec, A, w, status, backend);
          break;
        case Op::inverse_diag_blocks:
          if constexpr (host_backend<Exec>()) {
            if (lapack) {
              Kokkos::parallel_for("perfex::bench::lapack_inverse_blocks",
                                   Kokkos::RangePolicy<Exec>(exec, 0, nbatch),
                                   LapackInverseBlocks<Exec>{L, V, C, kBlock, 0});
              break;
            }
          }
          pl::batched_cholesky_inverse_diag_blocks(exec, L, kBlock, C, 0);
          break;
        case Op::inverse_sqrt: {
          if constexpr (host_backend<Exec>()) {
            if (lapack) {
              Kokkos::parallel_for("perfex::bench::lapack_inverse_sqrt",
                                   Kokkos::RangePolicy<Exec>(exec, 0, nbatch),
                                   LapackInverseSqrt<Exec>{A, V, w});
              break;
            }
          }
          Kokkos::TeamPolicy<Exec> policy(exec, nbatch, Kokkos::AUTO);
          Kokkos::parallel_for("perfex::bench::inverse_sqrt", policy,
                               InverseSqrt<Exec>{A, V, w, work});
          break;
        }
        default:
          break;
      }
    });
  }
  state.counters["GFLOP/s"] = perfex_bench::rate(flops(op, n, 0, lapack) * nbatch / 1e9);
  state.counters["matrices/s"] = perfex_bench::rate(nbatch);
  perfex_bench::common_counters(state, exec);
}

const char* op_name(Op op) {
  switch (op) {
    case Op::band_cholesky:
      return "band_cholesky";
    case Op::band_solve:
      return "band_solve";
    case Op::band_cholesky_inverse_blocks:
      return "band_cholesky_inverse_blocks";
    case Op::cholesky:
      return "cholesky";
    case Op::solve:
      return "solve";
    case Op::inverse_diag_blocks:
      return "inverse_diag_blocks";
    case Op::syev:
      return "syev";
    case Op::inverse_sqrt:
      return "inverse_sqrt";
  }
  return "";
}

// Matrix size of an op in a patch: the whole system (7 x 74) or one fibre's block (74).
int patch_size(Op op) {
  return (op == Op::syev || op == Op::inverse_sqrt) ? kBlock : kFibres * kBlock;
}
// Matrices of one patch: one system, or the blocks of its 5 kept fibres.
int per_patch(Op op) { return patch_size(op) == kBlock ? kKept : 1; }

const int registered = [] {
  perfex_bench::for_each_backend([](auto exec, const std::string& backend) {
    using Exec = decltype(exec);
    for (Op op : {Op::band_cholesky_inverse_blocks, Op::band_cholesky, Op::band_solve, Op::cholesky,
                  Op::solve, Op::inverse_diag_blocks, Op::syev, Op::inverse_sqrt}) {
      for (pl::Backend be : {pl::Backend::portable, pl::Backend::lapack}) {
        // The LAPACK path runs where LAPACK is built in and only on host backends.
        if (be == pl::Backend::lapack && (!PERFEX_HAVE_LAPACK || !host_backend<Exec>())) continue;
        const std::string name = std::string("linalg/") + op_name(op) +
                                 (be == pl::Backend::lapack ? "/lapack/" : "/portable/") + backend;
        auto* b = benchmark::RegisterBenchmark(
                      name.c_str(), is_band(op) ? run_band<Exec> : run_dense<Exec>, op, be)
                      ->UseManualTime()
                      ->Unit(benchmark::kMillisecond);
        if (is_band(op)) {
          b->ArgNames({"n", "kd", "batch"});
          if (perfex_bench::smoke())
            b->Args({kFibres * 8, 12, 2});  // 8 wavelengths per fibre
          else
            b->Args({kFibres * kBlock, kBand, 1})->Args({kFibres * kBlock, kBand, 10});
        } else {
          b->ArgNames({"n", "batch"});
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
