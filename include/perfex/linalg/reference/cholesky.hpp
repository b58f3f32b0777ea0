#pragma once
// Team-level dense Cholesky factorisation, solve and diagonal blocks of the inverse. A
// reference: the extraction factors band matrices (band_cholesky.hpp); the tests use these as
// the dense formulation the band one must reproduce, the benchmarks as its baseline.
//
// All kernels are called inside a Kokkos TeamPolicy functor, by every thread of the team, with
// the same arguments; one team works on one matrix. Matrices are any rank-2 Kokkos views (usually
// LayoutLeft subviews of View<double***, LayoutLeft> (nmax, nmax, batch)); a unit row stride gets
// the contiguous, vectorisable loops, any other stride a plain fallback.
//
// Algorithm: blocked right-looking Cholesky (lower, column-major). Panel of `cholesky_block`
// columns factored column by column, then the trailing lower triangle updated: by a 4x4
// register-blocked kernel on a one-thread host team, else a trailing column per thread and its
// rows over vector lanes.
#include <perfex/detail/kokkos_compat.hpp>
#include <perfex/linalg/matref.hpp>
#include <perfex/linalg/reference/kokkos_kernels.hpp>
#include <perfex/linalg/status.hpp>

namespace perfex {
namespace linalg {

constexpr int cholesky_block = 32;

namespace detail {

// A(j0.., j0..j0+nc) lower part -= A(j0.., k0..k0+kb) * A(j0..j0+nc, k0..k0+kb)^T.
template <bool Unit>
KOKKOS_INLINE_FUNCTION void syrk_column_group(const MatRef<Unit>& A, int n, int k0, int kb, int j0,
                                              int nc) {
  constexpr int NB = cholesky_block;
  double lt[4][NB];
  for (int c = 0; c < 4; ++c)
    for (int p = 0; p < kb; ++p) lt[c][p] = c < nc ? A(j0 + c, k0 + p) : 0.0;
  // Top triangle (rows j0 .. j0+nc-1).
  for (int c = 0; c < nc; ++c)
    for (int i = j0 + c; i < j0 + nc; ++i) {
      double s = 0;
      for (int p = 0; p < kb; ++p) s += A(i, k0 + p) * lt[c][p];
      A(i, j0 + c) -= s;
    }
  int i = j0 + nc;
  if (Unit && nc == 4) {
    const long ld = A.s1;
    double* c0 = A.ptr(0, j0);
    const double* L = A.ptr(0, k0);
    for (; i + 4 <= n; i += 4) {
      double acc[4][4];
      for (int c = 0; c < 4; ++c)
        for (int r = 0; r < 4; ++r) acc[c][r] = 0;
      const double* Lp = L + i;
      for (int p = 0; p < kb; ++p, Lp += ld) {
        double l[4];
        for (int r = 0; r < 4; ++r) l[r] = Lp[r];
        for (int c = 0; c < 4; ++c) {
          const double t = lt[c][p];
          for (int r = 0; r < 4; ++r) acc[c][r] += l[r] * t;
        }
      }
      for (int c = 0; c < 4; ++c)
        for (int r = 0; r < 4; ++r) c0[i + r + c * ld] -= acc[c][r];
    }
  }
  for (; i < n; ++i)
    for (int c = 0; c < nc; ++c) {
      double s = 0;
      for (int p = 0; p < kb; ++p) s += A(i, k0 + p) * lt[c][p];
      A(i, j0 + c) -= s;
    }
}

template <bool Unit, class Member>
KOKKOS_INLINE_FUNCTION int team_cholesky_impl(const Member& member, const MatRef<Unit>& A, int n) {
  constexpr int NB = cholesky_block;
  for (int k0 = 0; k0 < n; k0 += NB) {
    const int kb = n - k0 < NB ? n - k0 : NB;
    const int k1 = k0 + kb;
    // Panel: columns k0..k1-1, rows k0..n-1, right-looking column by column.
    for (int j = k0; j < k1; ++j) {
      const double ajj = A(j, j);
      if (!good_pivot(ajj)) return not_positive_definite;
      const double djj = perfex::math::sqrt(ajj);
      const double inv = 1.0 / djj;
      member.team_barrier();  // everybody has read A(j, j)
      Kokkos::parallel_for(Kokkos::TeamVectorRange(member, j, n), [&](int i) {
        if (i == j)
          A(j, j) = djj;
        else
          A(i, j) *= inv;
      });
      member.team_barrier();
      Kokkos::parallel_for(Kokkos::TeamThreadRange(member, j + 1, k1), [&](int jj) {
        const double t = A(jj, j);
        Kokkos::parallel_for(Kokkos::ThreadVectorRange(member, jj, n),
                             [&](int i) { A(i, jj) -= A(i, j) * t; });
      });
      member.team_barrier();
    }
    // Trailing update of the lower triangle of A(k1:n, k1:n).
    if (sequential_team(member)) {
      for (int j0 = k1; j0 < n; j0 += 4)
        syrk_column_group<Unit>(A, n, k0, kb, j0, n - j0 < 4 ? n - j0 : 4);
    } else {
      Kokkos::parallel_for(Kokkos::TeamThreadRange(member, k1, n), [&](int jc) {
        Kokkos::parallel_for(Kokkos::ThreadVectorRange(member, jc, n), [&](int i) {
          double s = 0;
          for (int p = k0; p < k1; ++p) s += A(i, p) * A(jc, p);
          A(i, jc) -= s;
        });
      });
    }
    member.team_barrier();
  }
  return ok;
}

// Solve L L^T x = b for one right-hand side (vector reference x, overwritten).
template <bool UnitL, bool UnitB, class Member>
KOKKOS_INLINE_FUNCTION void team_cholesky_solve_impl(const Member& member, const MatRef<UnitL>& L,
                                                     int n, const VecRef<UnitB>& x) {
  // Forward: L y = b (column-oriented: after x(j) is final, axpy into the rest).
  for (int j = 0; j < n; ++j) {
    const double xj = x(j) / L(j, j);
    member.team_barrier();
    Kokkos::parallel_for(Kokkos::TeamVectorRange(member, j, n), [&](int i) {
      if (i == j)
        x(j) = xj;
      else
        x(i) -= L(i, j) * xj;
    });
    member.team_barrier();
  }
  // Backward: L^T x = y (row of L^T = column of L: dot products).
  for (int j = n - 1; j >= 0; --j) {
    double s = 0;
    Kokkos::parallel_reduce(
        Kokkos::TeamVectorRange(member, j + 1, n),
        [&](int i, double& acc) { acc += L(i, j) * x(i); }, s);
    const double xj = (x(j) - s) / L(j, j);
    member.team_barrier();
    Kokkos::single(Kokkos::PerTeam(member), [&]() { x(j) = xj; });
    member.team_barrier();
  }
}

// X (n x nrhs, leading dimension ldx, unit row stride) <- L^{-1} X over rows r0..n-1 (rows
// above r0 are zero), columns [c0, c1). With `tri` (identity right-hand side) column c is zero
// above row r0+c and the solve starts there.
template <bool UnitL>
KOKKOS_INLINE_FUNCTION void forward_columns(const MatRef<UnitL>& L, int n, int r0, double* X,
                                            long ldx, int c0, int c1, bool tri) {
  // Groups of 4 right-hand sides share each column of L.
  int c = c0;
  for (; c + 4 <= c1; c += 4) {
    double* x0 = X + c * ldx;
    double* x1 = x0 + ldx;
    double* x2 = x1 + ldx;
    double* x3 = x2 + ldx;
    const int jstart = tri ? r0 + c : r0;
    for (int j = jstart; j < n; ++j) {
      const double inv = 1.0 / L(j, j);
      const double a0 = (x0[j] *= inv);
      const double a1 = (x1[j] *= inv);
      const double a2 = (x2[j] *= inv);
      const double a3 = (x3[j] *= inv);
      if (UnitL) {
        const double* l = L.ptr(0, j);
        for (int i = j + 1; i < n; ++i) {
          const double li = l[i];
          x0[i] -= li * a0;
          x1[i] -= li * a1;
          x2[i] -= li * a2;
          x3[i] -= li * a3;
        }
      } else {
        for (int i = j + 1; i < n; ++i) {
          const double li = L(i, j);
          x0[i] -= li * a0;
          x1[i] -= li * a1;
          x2[i] -= li * a2;
          x3[i] -= li * a3;
        }
      }
    }
  }
  for (; c < c1; ++c) {
    double* x0 = X + c * ldx;
    const int jstart = tri ? r0 + c : r0;
    for (int j = jstart; j < n; ++j) {
      const double a0 = (x0[j] /= L(j, j));
      for (int i = j + 1; i < n; ++i) x0[i] -= L(i, j) * a0;
    }
  }
}

}  // namespace detail

// Lower triangle of A <- L with H = L L^T (H read from the lower triangle of A; the strict upper
// triangle is neither read nor written). Returns ok or not_positive_definite (a pivot <= 0, NaN
// or inf), the same value on every thread of the team; on failure A's content is unspecified.
template <class Member, class AView>
KOKKOS_INLINE_FUNCTION int team_cholesky(const Member& member, const AView& A) {
  const int n = int(A.extent(0));
  if (detail::unit_rows(A))
    return detail::team_cholesky_impl<true>(member, detail::mat<true>(A), n);
  return detail::team_cholesky_impl<false>(member, detail::mat<false>(A), n);
}

// b <- H^{-1} b with H = L L^T, L from team_cholesky (lower triangle of L used, n = L.extent(0)).
// b is rank 1 (n) or rank 2 (n x nrhs).
template <class Member, class LView, class BView>
KOKKOS_INLINE_FUNCTION void team_cholesky_solve(const Member& member, const LView& L,
                                                const BView& b) {
  const int n = int(L.extent(0));
  if constexpr (BView::rank == 1) {
    // One host thread: Kokkos Kernels' blocked triangular solves (faster than a column sweep).
    if (detail::sequential_team(member)) {
      detail::serial_cholesky_solve_kk(L, b);
      return;
    }
    const bool ul = detail::unit_rows(L), ub = detail::unit_rows(b);
    if (ul && ub)
      detail::team_cholesky_solve_impl<true, true>(member, detail::mat<true>(L), n,
                                                   detail::vec<true>(b));
    else if (ul)
      detail::team_cholesky_solve_impl<true, false>(member, detail::mat<true>(L), n,
                                                    detail::vec<false>(b));
    else
      detail::team_cholesky_solve_impl<false, false>(member, detail::mat<false>(L), n,
                                                     detail::vec<false>(b));
  } else {
    static_assert(BView::rank == 2, "team_cholesky_solve: b must be rank 1 or 2");
    const int nrhs = int(b.extent(1));
    for (int k = 0; k < nrhs; ++k) {
      auto bk = Kokkos::subview(b, Kokkos::ALL(), k);
      team_cholesky_solve(member, L, bk);
    }
  }
}

// Diagonal blocks of H^{-1} = L^{-T} L^{-1} from the factor L (n x n, n = nblocks_total * bs),
// without forming H^{-1}: for block I (rows/columns I*bs .. I*bs+bs-1), X = L^{-1} E_I (E_I: those
// columns of the identity; X is zero above row I*bs) and C_II = X^T X. Cost per block about
// (n - I*bs)^2 * bs flops (+ (n - I*bs) * bs^2 for X^T X).
// Computes blocks first_block .. first_block+nblocks-1 into C(b, i, j), b = 0..nblocks-1
// (C: anything with operator()(b, i, j), e.g. a rank-3 view). work: rank-2 view, at least n x bs,
// unit row stride (LayoutLeft) preferred; used as scratch.
template <class Member, class LView, class CView, class WView>
KOKKOS_INLINE_FUNCTION void team_cholesky_inverse_diag_blocks(const Member& member, const LView& L,
                                                              int bs, int first_block, int nblocks,
                                                              const CView& C, const WView& work) {
  using detail::sequential_team;
  const int n = int(L.extent(0));
  const bool unit_work = detail::unit_rows(work);
  for (int blk = 0; blk < nblocks; ++blk) {
    const int r0 = (first_block + blk) * bs;
    // X(r, c) lives in work(r, c) for r in [r0, n): column c starts as e_{r0+c}.
    if (sequential_team(member) && unit_work) {
      for (int c = 0; c < bs; ++c)
        for (int r = r0; r < n; ++r) work(r, c) = (r == r0 + c) ? 1.0 : 0.0;
      double* X = work.data();
      const long ldx = long(work.stride(1));
      // Groups of four columns share each column of L; each starts at its own triangle.
      if (detail::unit_rows(L))
        detail::forward_columns<true>(detail::mat<true>(L), n, r0, X, ldx, 0, bs, true);
      else
        detail::forward_columns<false>(detail::mat<false>(L), n, r0, X, ldx, 0, bs, true);
    } else {
      // A column per thread, each pivot's update over its vector lanes.
      Kokkos::parallel_for(Kokkos::TeamThreadRange(member, 0, bs), [&](int c) {
        Kokkos::parallel_for(Kokkos::ThreadVectorRange(member, r0, n),
                             [&](int r) { work(r, c) = (r == r0 + c) ? 1.0 : 0.0; });
        for (int j = r0 + c; j < n; ++j) {
          const double a = work(j, c) / L(j, j);
          Kokkos::parallel_for(Kokkos::ThreadVectorRange(member, j + 1, n),
                               [&](int i) { work(i, c) -= L(i, j) * a; });
          Kokkos::single(Kokkos::PerThread(member), [&]() { work(j, c) = a; });
        }
      });
    }
    member.team_barrier();
    // C_II(a, c) = sum_r X(r, a) X(r, c), r >= r0 + max(a, c): a row per thread, the sums over
    // vector lanes.
    Kokkos::parallel_for(Kokkos::TeamThreadRange(member, 0, bs), [&](int a) {
      for (int c = 0; c <= a; ++c) {
        const int rs = r0 + a;
        double s = 0;
        if (sequential_team(member) && unit_work)
          s = detail::dot<true>(n - rs, &work(rs, a), &work(rs, c), 1, 1);
        else
          Kokkos::parallel_reduce(
              Kokkos::ThreadVectorRange(member, rs, n),
              [&](int r, double& acc) { acc += work(r, a) * work(r, c); }, s);
        Kokkos::single(Kokkos::PerThread(member), [&]() {
          C(blk, a, c) = s;
          C(blk, c, a) = s;
        });
      }
    });
    member.team_barrier();
  }
}

}  // namespace linalg
}  // namespace perfex
