// perfex::linalg benchmarks: portable team kernels vs the host LAPACK path (one matrix per
// RangePolicy index), on every enabled host backend, at the sizes of a DESI patch, batches of
// one patch and of ten. Names: linalg/<op>/<portable|lapack>/<backend>.
//
// Band ops (the pipeline's; arguments n/kd/batch): a patch's normal matrix ordered
// wavelength-major is a band matrix, n = 518 (7 solved fibres x 74 wavelengths), half-bandwidth
// kd = 58, in LAPACK lower band storage. The pipeline stage band_cholesky_inverse_blocks is the
// band factor + the 5 kept fibres' 74x74 blocks of H^-1 (rows 1 + f + 7a): portable
// batched_band_cholesky_twisted + batched_band_cholesky_inverse_strided_blocks from the twisted
// factors (as the patch solver); LAPACK dpbtrf, then
// dpbtrs on the kept fibres' 370 identity columns. band_cholesky and band_solve are its parts.
//
// Dense ops (arguments n/batch): cholesky, solve and inverse_diag_blocks at n = 518 are dense
// references for the band ops; syev and inverse_sqrt at n = 74 (one fibre's block, 5 per
// patch) are the pipeline's per-fibre C^-1/2 stage and its eigendecomposition.
//
// Flop models (counter GFLOP/s): perfex::linalg::flops, the work of the algorithm each path
// runs (LAPACK band stage: band_cholesky + 370 band_solve; dense diagonal blocks via potri;
// LAPACK's dsyevd is counted with perfex's divide and conquer model, the same method).
//
// linalg/kk/...: the products the one-thread kernels hand-code against KokkosBatched's Serial
// kernels (see below).
#include "perfex_bench.hpp"

#include <KokkosBatched_Gemm_Decl.hpp>
#include <KokkosBatched_Gemm_Serial_Impl.hpp>
#include <KokkosBatched_Trsm_Decl.hpp>
#include <KokkosBatched_Trsm_Serial_Impl.hpp>
#include <KokkosBatched_Trsv_Decl.hpp>
#include <KokkosBatched_Trsv_Serial_Impl.hpp>
#include <perfex/config.hpp>
#include <perfex/linalg/flops.hpp>
#include <perfex/linalg/reference/batched.hpp>

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
      const int twist = pl::band_twist(n);  // the twisted factor costs band_cholesky(n) too
      for (int blk = 0; blk < kKept; ++blk)
        f += fl::band_strided_block(n, kd, 1 + blk, kFibres, count, twist);
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
  Mat3<Exec> tail("perfex::bench::tail", stage && !lapack ? kd + 1 : 0,
                  stage && !lapack ? pl::band_tail_columns(n) : 0, nbatch);
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
          if constexpr (host_backend<Exec>()) {
            if (lapack) {
              pl::batched_band_cholesky(exec, A, status, backend);
              Kokkos::parallel_for("perfex::bench::lapack_band_inverse_blocks",
                                   Kokkos::RangePolicy<Exec>(exec, 0, nbatch),
                                   LapackBandInverseBlocks<Exec>{A, Y, C, kFibres, 1});
              break;
            }
          }
          // As the patch solver: the factor twisted at the middle, then the blocks.
          pl::batched_band_cholesky_twisted(exec, A, tail, status);
          pl::batched_band_cholesky_inverse_strided_blocks(exec, A, tail, kFibres, C, 1);
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

// ---- The linalg products against KokkosBatched's serial kernels ------------------------------
// Each product the one-thread kernels hand-code, timed against the KokkosBatched Serial kernel
// that computes the same thing (same build, same run; Serial backend, one team of one thread),
// names linalg/kk/<product>/<perfex|kokkoskernels>/serial:
//   compose        C^-1/2 = V f V^T, n = 74: perfex's lower-triangle kernel (n^3 flop) vs
//                  SerialGemm(W, W^T), W = V f^1/2 (2 n^3)
//   gram           one fibre's C = Y^T Y from the strided solve (518 x 74, Y zero above each
//                  column's start): perfex's four-row outer products over the started columns
//                  (Y row by row) vs SerialGemm^T over the fibre's rows (Y by columns)
//   back_transform Q Z for the 72 reflectors of a 74 x 74 reduction: perfex's 4-reflector
//                  compact WY vs the same blocks through two SerialGemm calls each
//   trsm           L^-1 on 74 identity columns of a dense 518 x 518 factor (a diagonal block of
//                  H^-1): perfex's 4-column forward substitution vs SerialTrsm (blocked)
//   trsv           one Cholesky solve, n = 518: a hand-written column sweep and dot-product
//                  sweep (perfex's one-thread solve until KokkosBatched measured faster here;
//                  the library now calls two SerialTrsv) vs two SerialTrsv
// (KokkosBatched's Team/TeamVector variants run the same loops on a one-thread host team.)
namespace kb = KokkosBatched;
// The columns of each row of the one-thread strided block's storage from the plain factor (the
// gram product's argument; a functor, as the kernel is also compiled for devices).
struct PlainColumns {
  pl::detail::TwistedColumns tc;
  KOKKOS_INLINE_FUNCTION pl::detail::ColRange operator()(int r) const { return tc.above(r); }
};

enum class Product { compose, gram, back_transform, trsm, trsv };

const char* product_name(Product p) {
  switch (p) {
    case Product::compose:
      return "compose";
    case Product::gram:
      return "gram";
    case Product::back_transform:
      return "back_transform";
    case Product::trsm:
      return "trsm";
    case Product::trsv:
      return "trsv";
  }
  return "";
}

using HostMatrix = Kokkos::View<double**, Kokkos::LayoutLeft, Kokkos::HostSpace>;
using HostMember = Kokkos::TeamPolicy<Kokkos::Serial>::member_type;

// The hand-written one-thread Cholesky solve the trsv comparison measures: forward by column
// sweeps, backward by dot products.
void column_sweep_solve(const HostMatrix& L, double* x) {
  const int n = int(L.extent(0));
  for (int j = 0; j < n; ++j) {
    const double xj = (x[j] /= L(j, j));
    for (int i = j + 1; i < n; ++i) x[i] -= L(i, j) * xj;
  }
  for (int j = n - 1; j >= 0; --j) {
    double s0 = 0, s1 = 0;
    int i = j + 1;
    for (; i + 2 <= n; i += 2) {
      s0 += L(i, j) * x[i];
      s1 += L(i + 1, j) * x[i + 1];
    }
    if (i < n) s0 += L(i, j) * x[i];
    x[j] = (x[j] - (s0 + s1)) / L(j, j);
  }
}

HostMatrix random_matrix(int m, int n, unsigned seed) {
  HostMatrix A("perfex::bench::kk", m, n);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  for (std::size_t k = 0; k < A.size(); ++k) A.data()[k] = u(rng);
  return A;
}

// Lower factor of a dense diagonally dominant SPD matrix.
HostMatrix dense_factor(int n) {
  HostMatrix L = random_matrix(n, n, 3);
  for (int j = 0; j < n; ++j) {
    for (int i = j; i < n; ++i) L(j, i) = L(i, j);
    L(j, j) = n + 1.0;
  }
  Kokkos::parallel_for(Kokkos::TeamPolicy<Kokkos::Serial>(1, 1),
                       [=](const HostMember& m) { pl::team_cholesky(m, L); });
  return L;
}

void run_kk(benchmark::State& state, Product product, bool kokkoskernels) {
  perfex_bench::reset_peak_rss();
  namespace pd = pl::detail;
  const int n = perfex_bench::smoke() ? 2 * kBlock / 3 : kBlock;  // 74 (49 in the smoke run)
  const int N = kFibres * n, count = n;
  Kokkos::Serial exec;
  Kokkos::TeamPolicy<Kokkos::Serial> one(exec, 1, 1);
  HostMatrix A, B, C, W, L = HostMatrix();
  std::vector<double> f(n), tau(n), T;
  double flop = 0;
  switch (product) {
    case Product::compose: {
      A = HostMatrix("perfex::bench::A", n, n);
      C = HostMatrix("perfex::bench::C", n, n);
      W = HostMatrix("perfex::bench::W", n, n);
      // V: the eigenvectors of a random symmetric matrix.
      B = random_matrix(n, n, 5);
      for (int j = 0; j < n; ++j)
        for (int i = 0; i < j; ++i) B(i, j) = B(j, i);
      Kokkos::View<double*, Kokkos::HostSpace> w("w", n), work("work", pl::syev_work_size(n));
      Kokkos::parallel_for(one, [=](const HostMember& m) { pl::team_syev(m, B, w, work); });
      for (int k = 0; k < n; ++k) f[k] = 1.0 / std::sqrt(1.0 + k);
      flop = kokkoskernels ? 2.0 * n * n * n : double(n) * n * n;
      break;
    }
    case Product::gram: {
      // Y: the strided block's forward solves for fibre 1 of a DESI-like band.
      const int kd = perfex_bench::smoke() ? 12 : kBand;
      Kokkos::View<double**, Kokkos::LayoutLeft, Kokkos::HostSpace> band("band", kd + 1, N);
      std::mt19937_64 rng(12345);
      std::uniform_real_distribution<double> u(-1, 1);
      for (int j = 0; j < N; ++j) {
        band(0, j) = 2 * kd + 2.0 + u(rng);
        for (int d = 1; d <= kd; ++d) band(d, j) = j + d < N ? u(rng) : 0.0;
      }
      // The one-thread kernel leaves Y row by row in its work (B); A: the same by columns.
      B = HostMatrix("perfex::bench::Yrows", N, count);
      C = HostMatrix("perfex::bench::C", count, count);
      Kokkos::parallel_for(one, [=](const HostMember& m) {
        pl::team_band_cholesky(m, band);
        pl::team_band_cholesky_inverse_strided_block(m, band, 1, kFibres, count, C, B);
      });
      A = HostMatrix("perfex::bench::Y", N, count);
      for (int r = 1; r < N; ++r)
        for (int a = 0; a < count; ++a) A(r, a) = B.data()[std::size_t(r) * count + a];
      for (int a = 0; a < count; ++a) flop += 2.0 * (a + 1) * (N - 1 - a * kFibres);
      if (kokkoskernels) flop = 2.0 * (N - 1) * count * count;
      break;
    }
    case Product::back_transform: {
      // Reflectors of the reduction of a random symmetric matrix to tridiagonal form.
      A = random_matrix(n, n, 7);
      for (int j = 0; j < n; ++j)
        for (int i = 0; i < j; ++i) A(i, j) = A(j, i);
      Kokkos::View<double*, Kokkos::HostSpace> work("work", pl::syev_work_size(n));
      Kokkos::parallel_for(one, [=](const HostMember&) {
        const pd::SyevWork sw(work.data(), n);
        pd::tridiagonalize_sequential(pd::mat<true>(A), n, sw, sw.z);
      });
      for (int k = 0; k < n; ++k) tau[k] = work(2 * n + k);
      B = random_matrix(n, n, 9);
      C = HostMatrix("perfex::bench::Z", n, n);
      W = HostMatrix("perfex::bench::W", pd::apply_q_block, n);
      T.assign(pd::apply_q_work_size(n), 0.0);
      flop = 2.0 * n * n * n;
      break;
    }
    case Product::trsm:
      L = dense_factor(N);
      C = HostMatrix("perfex::bench::X", N, count);
      flop = double(N) * N * count;
      break;
    case Product::trsv:
      L = dense_factor(N);
      C = HostMatrix("perfex::bench::x", N, 1);
      flop = 2.0 * N * N;
      break;
  }
  auto reset = [&]() {
    if (product == Product::back_transform) Kokkos::deep_copy(C, B);
    if (product == Product::trsm) {
      Kokkos::deep_copy(C, 0.0);
      for (int c = 0; c < count; ++c) C(c, c) = 1.0;
    }
    if (product == Product::trsv) Kokkos::deep_copy(C, 1.0);
  };
  auto run = [&](bool kokkoskernels) {
    switch (product) {
      case Product::compose:
        if (kokkoskernels) {
          for (int k = 0; k < n; ++k)
            for (int i = 0; i < n; ++i) W(i, k) = B(i, k) * std::sqrt(f[k]);
          kb::SerialGemm<kb::Trans::NoTranspose, kb::Trans::Transpose,
                         kb::Algo::Gemm::Blocked>::invoke(1.0, W, W, 0.0, C);
        } else {
          Kokkos::View<double*, Kokkos::HostSpace> fw("f", n), scratch("s", n);
          for (int k = 0; k < n; ++k) fw(k) = 1.0 / (f[k] * f[k]);  // compose takes mu
          Kokkos::parallel_for(one, [&](const HostMember& m) {
            pd::compose<true, true>(m, pd::mat<true>(C), pd::mat<true>(B), n, fw, scratch.data(),
                                    0.0, true);
          });
        }
        break;
      case Product::gram:
        if (kokkoskernels) {
          auto Y = Kokkos::subview(A, Kokkos::make_pair(1, N), Kokkos::ALL());
          kb::SerialGemm<kb::Trans::Transpose, kb::Trans::NoTranspose,
                         kb::Algo::Gemm::Blocked>::invoke(1.0, Y, Y, 0.0, C);
        } else {
          // The plain factor's layout (twist = N): row r holds the columns started by r.
          pd::gram_by_rows(1, N, count, B.data(), PlainColumns{{N, 0, N, 1, kFibres, count}},
                           pd::mat<true>(C));
        }
        break;
      case Product::back_transform:
        if (kokkoskernels) {
          // Blocks of reflectors as perfex's, last block first: Z -= V (T (V^T Z)).
          constexpr int NB = pd::apply_q_block;
          for (int top = n - 2; top > 0; top -= NB) {
            const int kb0 = top - NB > 0 ? top - NB : 0, nb = top - kb0, r0 = kb0 + 1;
            HostMatrix V("V", n - r0, nb), TW("TW", nb, n);
            double Tm[NB][NB] = {};
            for (int p = 0; p < nb; ++p) {
              for (int i = 0; i < n - r0; ++i) V(i, p) = i < p ? 0.0 : A(r0 + i, kb0 + p);
              Tm[p][p] = tau[kb0 + p];
              double c[NB] = {};
              for (int l = 0; l < p; ++l) {
                double dot = 0;
                for (int i = 0; i < n - r0; ++i) dot += V(i, l) * V(i, p);
                c[l] = -tau[kb0 + p] * dot;
              }
              for (int q = 0; q < p; ++q)
                for (int l = q; l < p; ++l) Tm[q][p] += Tm[q][l] * c[l];
            }
            auto Zr = Kokkos::subview(C, Kokkos::make_pair(r0, n), Kokkos::ALL());
            auto Wb = Kokkos::subview(W, Kokkos::make_pair(0, nb), Kokkos::ALL());
            kb::SerialGemm<kb::Trans::Transpose, kb::Trans::NoTranspose,
                           kb::Algo::Gemm::Blocked>::invoke(1.0, V, Zr, 0.0, Wb);
            for (int j = 0; j < n; ++j)
              for (int p = 0; p < nb; ++p) {
                double t = 0;
                for (int q = p; q < nb; ++q) t += Tm[p][q] * Wb(q, j);
                TW(p, j) = t;
              }
            kb::SerialGemm<kb::Trans::NoTranspose, kb::Trans::NoTranspose,
                           kb::Algo::Gemm::Blocked>::invoke(-1.0, V, TW, 1.0, Zr);
          }
        } else {
          pd::apply_q_sequential<true>(pd::mat<true>(A), n, tau.data(), C.data(), n, T.data());
        }
        break;
      case Product::trsm:
        if (kokkoskernels)
          kb::SerialTrsm<kb::Side::Left, kb::Uplo::Lower, kb::Trans::NoTranspose, kb::Diag::NonUnit,
                         kb::Algo::Trsm::Blocked>::invoke(1.0, L, C);
        else
          pd::forward_columns<true>(pd::mat<true>(L), N, 0, C.data(), N, 0, count, true);
        break;
      case Product::trsv: {
        auto x = Kokkos::subview(C, Kokkos::ALL(), 0);
        if (kokkoskernels) {
          kb::SerialTrsv<kb::Uplo::Lower, kb::Trans::NoTranspose, kb::Diag::NonUnit,
                         kb::Algo::Trsv::Blocked>::invoke(1.0, L, x);
          kb::SerialTrsv<kb::Uplo::Lower, kb::Trans::Transpose, kb::Diag::NonUnit,
                         kb::Algo::Trsv::Blocked>::invoke(1.0, L, x);
        } else {
          column_sweep_solve(L, x.data());
        }
        break;
      }
    }
  };
  // Both compute the same: their largest difference relative to the result's largest entry.
  reset();
  run(false);
  HostMatrix ref("perfex::bench::ref", C.extent(0), C.extent(1));
  Kokkos::deep_copy(ref, C);
  reset();
  run(true);
  double diff = 0, big = 0;
  for (std::size_t k = 0; k < C.size(); ++k) {
    diff = std::max(diff, std::abs(C.data()[k] - ref.data()[k]));
    big = std::max(big, std::abs(ref.data()[k]));
  }
  for (auto _ : state) {
    reset();
    perfex_bench::timed(state, exec, [&]() { run(kokkoskernels); });
  }
  state.counters["GFLOP/s"] = perfex_bench::rate(flop / 1e9);
  state.counters["rel_diff"] = diff / big;
  perfex_bench::common_counters(state, exec);
}

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
#ifdef KOKKOS_ENABLE_SERIAL
  for (Product p :
       {Product::compose, Product::gram, Product::back_transform, Product::trsm, Product::trsv})
    for (bool kk : {false, true}) {
      const std::string name = std::string("linalg/kk/") + product_name(p) +
                               (kk ? "/kokkoskernels" : "/perfex") + "/serial";
      benchmark::RegisterBenchmark(name.c_str(), run_kk, p, kk)
          ->UseManualTime()
          ->Unit(benchmark::kMicrosecond);
    }
#endif
  return 0;
}();

}  // namespace
