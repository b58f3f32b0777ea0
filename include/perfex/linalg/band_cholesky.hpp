#pragma once
// Team-level Cholesky of a symmetric positive-definite band matrix, its solve, and selected
// entries of the inverse. A patch's normal matrix ordered wavelength-major is a band matrix
// (half-bandwidth ~58 for N = 518): the band factor costs N kd^2 / 2 multiply-adds instead of
// N^3 / 6, and the factor keeps the band (no fill-in).
//
// Storage (LAPACK's lower band, "AB"): AB(d, j) = A(j + d, j) for d = 0 .. kd, j = 0 .. n-1;
// a (kd+1) x n rank-2 view, unit row stride preferred (each column of the band contiguous).
// Called inside a TeamPolicy functor by every thread of the team; one team per matrix.
//
// Two execution shapes. A one-thread host team runs blocked loops written for one core: the
// factor takes panels of `band_panel` pivots, each panel's update of the trailing window a
// register-tiled matrix product (bands narrower than two panels: `band_block` pivots at a time);
// the forward solves take `band_block` pivot columns at a time, so every element of the
// right-hand sides is loaded and stored once per block instead of once per pivot (rank-4 updates
// the compiler vectorises); the strided blocks keep their right-hand sides row by row (row
// operations over all started columns) and sum their Gram products by chunks of rows as matrix
// products. Any other team (several threads, or a device team with vector lanes) splits the
// work over threads and vector lanes: trailing columns or right-hand sides over
// TeamThreadRange, rows over ThreadVectorRange.
#include <perfex/detail/kokkos_compat.hpp>
#include <perfex/linalg/gemm.hpp>
#include <perfex/linalg/matref.hpp>
#include <perfex/linalg/status.hpp>

namespace perfex {
namespace linalg {

// Pivot columns per block of the one-thread band kernels.
constexpr int band_block = 4;

namespace detail {

KOKKOS_INLINE_FUNCTION int band_rows_below(int j, int n, int kd) {
  return kd < n - 1 - j ? kd : n - 1 - j;
}

// One-thread band Cholesky of the pivot columns [j0, j1), band_block pivots at a time (the
// columns before j0 factored already): the pivot columns j .. j+jb-1 are factored among
// themselves, then the trailing window (columns j+jb .. j+jb-1+kd) gets one rank-jb update in
// which each entry is read and written once. After pivots [0, j1) the columns from j1 hold the
// Schur complement of the leading j1 rows. (Bands narrower than two panels of
// band_cholesky_panels, or a strided band.)
template <bool Unit>
KOKKOS_INLINE_FUNCTION int band_cholesky_by_pivots(const MatRef<Unit>& AB, int n, int kd, int j0,
                                                   int j1) {
  constexpr int KB = band_block;
  const long rs = AB.rs();
  for (int j = j0; j < j1; j += KB) {
    const int jb = KB < j1 - j ? KB : j1 - j;
    // The block's own columns, one pivot at a time (their updates from earlier blocks are done).
    for (int p = 0; p < jb; ++p) {
      const int c = j + p;
      const double ajj = AB(0, c);
      if (!good_pivot(ajj)) return not_positive_definite;
      const double djj = perfex::math::sqrt(ajj), inv = 1.0 / djj;
      const int kn = band_rows_below(c, n, kd);
      double* l = AB.ptr(0, c);
      l[0] = djj;
      for (int d = 1; d <= kn; ++d) l[d * rs] *= inv;
      for (int q = p + 1; q < jb && q - p <= kn; ++q) {
        const double t = l[(q - p) * rs];
        double* a = AB.ptr(0, j + q);
        for (int d = 0; d <= kn - (q - p); ++d) a[d * rs] -= l[(q - p + d) * rs] * t;
      }
    }
    // Trailing columns k: A(i, k) -= sum_p L(i, j+p) L(k, j+p) over the pivots whose band
    // reaches row k (p >= k - j - kd) and rows i <= j + p + kd.
    // Rows are addressed relative to the block's first row j: L(j + i, j + p) = l[p][i - p].
    const int klast = j + jb - 1 + kd < n - 1 ? j + jb - 1 + kd : n - 1;
    const double* l[KB];
    for (int p = 0; p < KB; ++p) l[p] = AB.ptr(0, p < jb ? j + p : j);
    for (int k = j + jb; k <= klast; ++k) {
      double* a = AB.ptr(0, k);  // A(j + i, k) = a[i - (k - j)]
      const int kk = k - j;
      const int p0 = kk - kd > 0 ? kk - kd : 0;
      if (p0 == 0 && jb == KB) {
        const double t0 = l[0][kk * rs], t1 = l[1][(kk - 1) * rs], t2 = l[2][(kk - 2) * rs],
                     t3 = l[3][(kk - 3) * rs];
        // Rows every pivot reaches, then the last rows only the later pivots reach.
        const int iend = kd < n - 1 - j ? kd : n - 1 - j;
        for (int i = kk; i <= iend; ++i)
          a[(i - kk) * rs] -= (l[0][i * rs] * t0 + l[1][(i - 1) * rs] * t1) +
                              (l[2][(i - 2) * rs] * t2 + l[3][(i - 3) * rs] * t3);
        for (int p = 1; p < KB; ++p) {
          const int ilast = p + kd < n - 1 - j ? p + kd : n - 1 - j;
          const double t = l[p][(kk - p) * rs];
          for (int i = iend + 1; i <= ilast; ++i) a[(i - kk) * rs] -= l[p][(i - p) * rs] * t;
        }
      } else {
        for (int p = p0; p < jb; ++p) {
          const int ilast = p + kd < n - 1 - j ? p + kd : n - 1 - j;
          const double t = l[p][(kk - p) * rs];
          for (int i = kk; i <= ilast; ++i) a[(i - kk) * rs] -= l[p][(i - p) * rs] * t;
        }
      }
    }
  }
  return ok;
}

// Pivots per panel of the one-thread band factor.
constexpr int band_panel = 8;

// One-thread band Cholesky of the pivot columns [j0, j1) in panels of band_panel pivots, the
// trailing update of each panel a level-3 product (LAPACK dpbtrf's shape). In lower band storage
// with unit rows, A(r, c) lies at p[r + c (ld - 1)] for 0 <= r - c <= kd: the band is a
// column-major matrix of leading dimension ld - 1, so the panel's columns below it (L21) and the
// trailing window (A22, the kd x kd lower triangle after the panel) are plain matrices there,
// and A22 -= L21 L21^T is register-tiled matrix products (gemm.hpp) in place. Only L21's last
// rows, which its first columns' band does not reach (those addresses hold other columns'
// entries), are copied, with zeros, into a panel x panel triangle. Same results as
// band_cholesky_by_pivots up to rounding; each entry takes a panel's updates in pivot order.
KOKKOS_INLINE_FUNCTION int band_cholesky_panels(const MatRef<true>& AB, int n, int kd, int j0,
                                                int j1) {
  constexpr int NB = band_panel;
  const long ld = AB.s1 - 1;  // A(r, c) = a[r + c * ld]
  double* const a = AB.p;
  for (int j = j0; j < j1; j += NB) {
    const int jb = NB < j1 - j ? NB : j1 - j;
    // The panel's columns among themselves, one pivot at a time.
    for (int p = 0; p < jb; ++p) {
      const int c = j + p;
      double* l = a + c * (ld + 1);  // L(c + d, c) = l[d]
      const double ajj = l[0];
      if (!good_pivot(ajj)) return not_positive_definite;
      const double djj = perfex::math::sqrt(ajj), inv = 1.0 / djj;
      const int kn = band_rows_below(c, n, kd);
      l[0] = djj;
      for (int d = 1; d <= kn; ++d) l[d] *= inv;
      for (int q = p + 1; q < jb && q - p <= kn; ++q) {
        const double t = l[q - p];
        double* x = a + (j + q) * (ld + 1);
        for (int d = 0; d <= kn - (q - p); ++d) x[d] -= l[q - p + d] * t;
      }
    }
    // Trailing window: rows and columns r0 .. r0+m-1, r0 = j + jb.
    const int r0 = j + jb, m = (j + jb - 1 + kd < n - 1 ? j + jb - 1 + kd : n - 1) - r0 + 1;
    if (m <= 0) continue;
    // L21 = L(r0 + r, j + q), r < m, q < jb: rows r < mf are in every pivot's band; row mf + s
    // (s < m - mf <= jb - 1) only in those of pivots q > s, copied to T(s, q) with zeros (T has
    // NB rows, the ones past m - mf zero too).
    const int mf = kd - jb + 1 < m ? kd - jb + 1 : m, mt = m - mf;
    const double* L21 = a + r0 + j * ld;
    double* A22 = a + r0 + r0 * ld;
    double T[NB * NB];
    for (int q = 0; q < jb; ++q)
      for (int s = 0; s < NB; ++s) T[s + q * NB] = q > s && s < mt ? L21[mf + s + q * ld] : 0.0;
    // Rows r of L21 or T as the left operand: (pointer, leading dimension).
    auto rows = [&](int r, const double*& x, long& lx) {
      x = r < mf ? L21 + r : T + (r - mf);
      lx = r < mf ? ld : NB;
    };
    // An nr x nc block of A22 at (r, c) (nr <= NB, nc <= 4) updated through a copy: its diagonal
    // blocks, whose upper addresses hold other columns' entries (lower entries written back
    // only), and the rows of T.
    double tile[NB * 4], ycopy[4 * NB];
    auto through_copy = [&](int r, int nr, int c, int nc, const double* x, long lx, const double* y,
                            long ly, bool diagonal) {
      for (int k = 0; k < nc; ++k)
        for (int i = 0; i < nr; ++i) tile[i + k * NB] = A22[r + i + (c + k) * ld];
      gemm_nn_sequential<true, true>(nr, nc, jb, x, lx, y, ly, 1, tile, NB);
      for (int k = 0; k < nc; ++k)
        for (int i = diagonal ? k : 0; i < nr; ++i) A22[r + i + (c + k) * ld] = tile[i + k * NB];
    };
    // Columns c of A22 four at a time: their diagonal block, the rows below it in the full part
    // (L21 in place), then those in T.
    for (int c = 0; c < m; c += 4) {
      const int nc = m - c < 4 ? m - c : 4;
      const double* y;
      long ly;
      if (c + nc <= mf) {
        y = L21 + c;
        ly = ld;
      } else {  // columns reaching into T: their rows as the right operand, from a copy
        for (int q = 0; q < jb; ++q)
          for (int k = 0; k < nc; ++k) {
            const double* x;
            long lx;
            rows(c + k, x, lx);
            ycopy[k + q * 4] = x[q * lx];
          }
        y = ycopy;
        ly = 4;
      }
      if (c + nc <= mf) {
        through_copy(c, nc, c, nc, L21 + c, ld, y, ly, true);
        if (c + nc < mf)
          gemm_nn_sequential<true, true>(mf - c - nc, nc, jb, L21 + c + nc, ld, y, ly, 1,
                                         A22 + c + nc + c * ld, ld);
        if (mt > 0) through_copy(mf, mt, c, nc, T, NB, y, ly, false);
      } else {
        for (int k = 0; k < nc; ++k)  // entry by entry: at most a few columns per panel
          for (int r = c + k; r < m; ++r) {
            const double* x;
            long lx;
            rows(r, x, lx);
            double acc = A22[r + (c + k) * ld];
            for (int q = 0; q < jb; ++q) acc -= x[q * lx] * y[k + q * ly];
            A22[r + (c + k) * ld] = acc;
          }
      }
    }
  }
  return ok;
}

// The one-thread band factor of pivots [j0, j1): in panels where the band allows it.
template <bool Unit>
KOKKOS_INLINE_FUNCTION int band_cholesky_sequential(const MatRef<Unit>& AB, int n, int kd, int j0,
                                                    int j1) {
#ifdef PERFEX_HOST_TILES
  if constexpr (Unit) {
    if (kd >= 2 * band_panel) return band_cholesky_panels(AB, n, kd, j0, j1);
  }
#endif
  return band_cholesky_by_pivots(AB, n, kd, j0, j1);
}

// Team band Cholesky, column by column: the pivot column is scaled over the team's lanes, then
// the rank-1 update of the kd x kd window below it, a trailing column per thread and its rows
// over vector lanes.
template <bool Unit, class Member>
KOKKOS_INLINE_FUNCTION int band_cholesky_team(const Member& member, const MatRef<Unit>& AB, int n,
                                              int kd, int j0, int j1) {
  for (int j = j0; j < j1; ++j) {
    const double ajj = AB(0, j);
    if (!good_pivot(ajj)) return not_positive_definite;
    const int kn = band_rows_below(j, n, kd);
    const double djj = perfex::math::sqrt(ajj);
    const double inv = 1.0 / djj;
    member.team_barrier();  // everybody has read AB(0, j)
    Kokkos::parallel_for(Kokkos::TeamVectorRange(member, 0, kn + 1),
                         [&](int d) { AB(d, j) = d == 0 ? djj : AB(d, j) * inv; });
    member.team_barrier();
    Kokkos::parallel_for(Kokkos::TeamThreadRange(member, 1, kn + 1), [&](int k) {
      const double t = AB(k, j);
      Kokkos::parallel_for(Kokkos::ThreadVectorRange(member, 0, kn - k + 1),
                           [&](int d) { AB(d, j + k) -= AB(k + d, j) * t; });
    });
    member.team_barrier();
  }
  return ok;
}

// Forward (L y = x over the pivots [0, j1), the later rows updated) and backward (L^T w = y
// over the pivots j1-1 .. 0, the rows from j1 on solved already) band substitutions in place,
// sequential (teams of one thread). j1 = n: x <- (L L^T)^{-1} x.
template <bool UnitL, bool UnitX>
KOKKOS_INLINE_FUNCTION void serial_band_forward(const MatRef<UnitL>& L, int n, int kd, int j1,
                                                const VecRef<UnitX>& x) {
  for (int j = 0; j < j1; ++j) {
    const double xj = x(j) / L(0, j);
    x(j) = xj;
    const int kn = band_rows_below(j, n, kd);
    for (int d = 1; d <= kn; ++d) x(j + d) -= L(d, j) * xj;
  }
}
template <bool UnitL, bool UnitX>
KOKKOS_INLINE_FUNCTION void serial_band_backward(const MatRef<UnitL>& L, int n, int kd, int j1,
                                                 const VecRef<UnitX>& x) {
  for (int j = j1 - 1; j >= 0; --j) {
    const int kn = band_rows_below(j, n, kd);
    double s = 0;
    for (int d = 1; d <= kn; ++d) s += L(d, j) * x(j + d);
    x(j) = (x(j) - s) / L(0, j);
  }
}

// The same on a team: each pivot's update (forward) or dot product (backward) over the team's
// lanes.
template <bool UnitL, bool UnitX, class Member>
KOKKOS_INLINE_FUNCTION void team_band_forward(const Member& member, const MatRef<UnitL>& L, int n,
                                              int kd, int j1, const VecRef<UnitX>& x) {
  for (int j = 0; j < j1; ++j) {
    const double xj = x(j) / L(0, j);
    member.team_barrier();
    const int kn = band_rows_below(j, n, kd);
    Kokkos::parallel_for(Kokkos::TeamVectorRange(member, 0, kn + 1), [&](int d) {
      if (d == 0)
        x(j) = xj;
      else
        x(j + d) -= L(d, j) * xj;
    });
    member.team_barrier();
  }
}
template <bool UnitL, bool UnitX, class Member>
KOKKOS_INLINE_FUNCTION void team_band_backward(const Member& member, const MatRef<UnitL>& L, int n,
                                               int kd, int j1, const VecRef<UnitX>& x) {
  for (int j = j1 - 1; j >= 0; --j) {
    const int kn = band_rows_below(j, n, kd);
    double s = 0;
    Kokkos::parallel_reduce(
        Kokkos::TeamVectorRange(member, 1, kn + 1),
        [&](int d, double& acc) { acc += L(d, j) * x(j + d); }, s);
    const double xj = (x(j) - s) / L(0, j);
    member.team_barrier();
    Kokkos::single(Kokkos::PerTeam(member), [&]() { x(j) = xj; });
    member.team_barrier();
  }
}

// x <- H^{-1} x from the factor twisted at t (L's first t columns, the reversed tail F of order
// n - t; t = n: L alone): forward with L above t, then the tail's rows, reversed through a
// negative stride, solved with F both ways, then backward with L above t.
template <bool UnitL, bool UnitF, bool UnitX, class Member>
KOKKOS_INLINE_FUNCTION void band_solve_twisted(const Member& member, const MatRef<UnitL>& L,
                                               const MatRef<UnitF>& F, int n, int kd, int t,
                                               const VecRef<UnitX>& x) {
  const int m = n - t;
  const long xs = UnitX ? 1 : x.s0;
  const VecRef<false> xtail{x.p + (n - 1) * xs, -xs};
  if (sequential_team(member)) {
    serial_band_forward(L, n, kd, t, x);
    serial_band_forward(F, m, kd, m, xtail);
    serial_band_backward(F, m, kd, m, xtail);
    serial_band_backward(L, n, kd, t, x);
  } else {
    team_band_forward(member, L, n, kd, t, x);
    team_band_forward(member, F, m, kd, m, xtail);
    team_band_backward(member, F, m, kd, m, xtail);
    team_band_backward(member, L, n, kd, t, x);
  }
}

// ---- Strided blocks of H^{-1} ------------------------------------------------------------
// Column a of a strided block is x_a = M^{-1} e_{s_a}, s_a = first + a * stride, for a factor
// H = M M^T, and C(a, c) = x_a . x_c. With M = L (the band factor) x_a fills rows s_a .. n-1:
// n/2 rows on average, the columns being spread over the whole matrix. The factor twisted at
// row t, M = [L_T 0; G R] (L_T, G: the first t columns of L; R upper triangular with
// R R^T = S, the Schur complement of H's leading t rows), keeps a column that starts above t
// within rows s_a .. t+kd-1 and one that starts at or below t within rows t .. s_a: about
// n/4 + kd/2 rows each, and columns on opposite sides of t share at most kd rows. R is stored
// as the band factor F of S with rows and columns reversed (J S J = F F^T, R = J F J), so every
// solve is a forward band substitution; x's rows are kept in twisted order: row i < t at i,
// row i >= t at t + (n - 1 - i) (the tail's row n - 1 - i). t = n is the plain factor.

// Columns [lo, hi) of a row of right-hand sides that can be nonzero.
struct ColRange {
  int lo, hi;
};

// Where the columns of a twisted strided block live (see above): the rows before t that
// column a fills are s_a .. t-1, its tail rows (reversed) tail_start(a) .. n-t-1.
struct TwistedColumns {
  int n, kd, t, first, stride, count;
  KOKKOS_INLINE_FUNCTION int tail_rows() const { return n - t; }
  KOKKOS_INLINE_FUNCTION int start(int a) const { return first + a * stride; }
  KOKKOS_INLINE_FUNCTION int position(int i) const { return i < t ? i : t + (n - 1 - i); }
  KOKKOS_INLINE_FUNCTION int tail_start(int a) const {
    const int s = start(a), m = tail_rows();
    return s < t ? (m - kd > 0 ? m - kd : 0) : n - 1 - s;
  }
  // Columns that can be nonzero in row r < t: those started by r.
  KOKKOS_INLINE_FUNCTION ColRange above(int r) const {
    if (r < first) return {0, 0};
    const int a = (r - first) / stride + 1;
    return {0, a < count ? a : count};
  }
  // Columns that can be nonzero in tail rows up to q: those whose reversed start is <= q (they
  // start at or below row n-1-q), and from the last kd tail rows on all (the ones above t).
  KOKKOS_INLINE_FUNCTION ColRange tail(int q) const {
    if (q >= tail_rows() - kd) return {0, count};
    const int smin = n - 1 - q;
    const int a = smin <= first ? 0 : (smin - first + stride - 1) / stride;
    return {a < count ? a : count, count};
  }
  // First row (twisted order) of the block's storage.
  KOKKOS_INLINE_FUNCTION int first_row() const { return first < t ? first : t; }
};

// Forward substitution by rows with the band factor F (order nf, half-bandwidth kd) over the
// pivots [p0, p1): row(i) is the address of the right-hand sides' row i, cols(i) the columns
// that can be nonzero in rows up to i (a range that only grows with i). The pivots are taken
// band_block at a time: the block's triangle, then one pass over each row below it for all
// of the block's updates (long contiguous row operations, no per-column dependence chains).
template <bool UnitF, class Row, class Cols>
KOKKOS_INLINE_FUNCTION void forward_by_rows(const MatRef<UnitF>& F, int nf, int kd, int p0, int p1,
                                            const Row& row, const Cols& cols) {
  constexpr int KB = band_block;
  const long ls = F.rs();
  for (int j = p0; j < p1; j += KB) {
    const int jb = KB < p1 - j ? KB : p1 - j;
    const ColRange cr = cols(j + jb - 1);
    const int lo = cr.lo, hi = cr.hi;
    const double* l[KB];  // F(j + i, j + p) = l[p][(i - p) * ls]
    for (int p = 0; p < KB; ++p) l[p] = F.ptr(0, p < jb ? j + p : j);
    for (int p = 0; p < jb; ++p) {
      double* KOKKOS_RESTRICT yp = row(j + p);
      const double inv = 1.0 / l[p][0];
      for (int a = lo; a < hi; ++a) yp[a] *= inv;
      for (int q = p + 1; q < jb && q - p <= kd; ++q) {
        double* KOKKOS_RESTRICT yq = row(j + q);
        const double t = l[p][(q - p) * ls];
        for (int a = lo; a < hi; ++a) yq[a] -= t * yp[a];
      }
    }
    // Rows every pivot of the block reaches, then the last rows only the later pivots reach.
    const int iend = kd < nf - 1 - j ? kd : nf - 1 - j;
    if (jb == KB) {
      const double* KOKKOS_RESTRICT y0 = row(j);
      const double* KOKKOS_RESTRICT y1 = row(j + 1);
      const double* KOKKOS_RESTRICT y2 = row(j + 2);
      const double* KOKKOS_RESTRICT y3 = row(j + 3);
      for (int i = KB; i <= iend; ++i) {
        double* KOKKOS_RESTRICT yi = row(j + i);
        const double t0 = l[0][i * ls], t1 = l[1][(i - 1) * ls], t2 = l[2][(i - 2) * ls],
                     t3 = l[3][(i - 3) * ls];
        for (int a = lo; a < hi; ++a)
          yi[a] -= (t0 * y0[a] + t1 * y1[a]) + (t2 * y2[a] + t3 * y3[a]);
      }
    } else {
      for (int p = 0; p < jb; ++p)
        for (int i = jb; i <= iend; ++i) {
          double* KOKKOS_RESTRICT yi = row(j + i);
          const double* KOKKOS_RESTRICT yp = row(j + p);
          const double t = l[p][(i - p) * ls];
          for (int a = lo; a < hi; ++a) yi[a] -= t * yp[a];
        }
    }
    for (int p = 1; p < jb; ++p) {
      const int ilast = p + kd < nf - 1 - j ? p + kd : nf - 1 - j;
      const double* KOKKOS_RESTRICT yp = row(j + p);
      for (int i = (iend + 1 > jb ? iend + 1 : jb); i <= ilast; ++i) {
        double* KOKKOS_RESTRICT yi = row(j + i);
        const double t = l[p][(i - p) * ls];
        for (int a = lo; a < hi; ++a) yi[a] -= t * yp[a];
      }
    }
  }
}

// Rows per chunk of gram_by_rows.
constexpr int gram_rows = 32;

// C = sum over rows r in [r0, r1) of Y_r^T Y_r (count x count; row r at Y + r * count, nonzero
// only in cols(r)): chunks of gram_rows rows, each adding chunk^T chunk over the union of its
// rows' columns to C's lower triangle as register-tiled products (gemm.hpp), four columns at a
// time (their diagonal blocks' upper entries too, which the final mirror overwrites). Each entry
// adds its rows in order.
template <bool UnitC, class Cols>
KOKKOS_INLINE_FUNCTION void gram_by_rows(int r0, int r1, int count, const double* Y,
                                         const Cols& cols, const MatRef<UnitC>& C) {
#ifdef PERFEX_HOST_TILES
  for (int c = 0; c < count; ++c)
    for (int a = 0; a < count; ++a) C(a, c) = 0;
  for (int r = r0; r < r1; r += gram_rows) {
    const int nr = r1 - r < gram_rows ? r1 - r : gram_rows;
    int lo = count, hi = 0;
    for (int k = 0; k < nr; ++k) {
      const ColRange cr = cols(r + k);
      if (cr.lo < cr.hi) {
        lo = cr.lo < lo ? cr.lo : lo;
        hi = cr.hi > hi ? cr.hi : hi;
      }
    }
    const double* y = Y + long(r) * count;
    for (int c = lo; c < hi; c += 4) {
      const int nc = hi - c < 4 ? hi - c : 4;
      if constexpr (UnitC)
        gemm_nn_sequential<true, false>(hi - c, nc, nr, y + c, count, y + c, count, 1, C.ptr(c, c),
                                        C.s1);
      else
        for (int k = 0; k < nc; ++k)
          for (int a = c; a < hi; ++a) {
            double acc = C(a, c + k);
            for (int q = 0; q < nr; ++q) acc += y[a + q * count] * y[c + k + q * count];
            C(a, c + k) = acc;
          }
    }
  }
  for (int c = 0; c < count; ++c)
    for (int a = c + 1; a < count; ++a) C(c, a) = C(a, c);
#else
  Kokkos::abort("perfex::linalg: a one-thread host kernel reached on a device");
#endif
}

// One-thread twisted strided block with the right-hand sides stored row by row: Y (count
// doubles per row, row p of the twisted order at Y + p * count) holds the columns x_a; the
// substitution above t with L, then the tail's with F, then C = x^T x.
template <bool UnitL, bool UnitF, bool UnitC>
KOKKOS_INLINE_FUNCTION void strided_block_by_rows(const MatRef<UnitL>& L, const MatRef<UnitF>& F,
                                                  const TwistedColumns& tc, double* Y,
                                                  const MatRef<UnitC>& C) {
  const int n = tc.n, t = tc.t, count = tc.count;
  auto at = [&](int p) { return Y + long(p) * count; };
  for (int p = tc.first_row(); p < n; ++p)
    for (int a = 0; a < count; ++a) at(p)[a] = 0;
  for (int a = 0; a < count; ++a) at(tc.position(tc.start(a)))[a] = 1.0;
  if (tc.first < t)
    forward_by_rows(
        L, n, tc.kd, tc.first, t, [&](int i) { return at(tc.position(i)); },
        [&](int i) { return tc.above(i); });
  forward_by_rows(
      F, tc.tail_rows(), tc.kd, 0, tc.tail_rows(), [&](int q) { return at(t + q); },
      [&](int q) { return tc.tail(q); });
  gram_by_rows(
      tc.first_row(), n, count, Y, [&](int p) { return p < t ? tc.above(p) : tc.tail(p - t); }, C);
}

template <bool UnitL, bool UnitF, bool UnitY, class Member, class CView>
KOKKOS_INLINE_FUNCTION void team_band_inverse_strided_block_impl(
    const Member& member, const MatRef<UnitL>& L, const MatRef<UnitF>& F, const TwistedColumns& tc,
    const CView& C, const MatRef<UnitY>& Y) {
  if constexpr (Kokkos::is_view<CView>::value) {
    // One host thread: x row by row in work's memory (n x count doubles, work has ld >= n).
    if (sequential_team(member) && UnitY) {
      if (unit_rows(C))
        strided_block_by_rows(L, F, tc, Y.p, mat<true>(C));
      else
        strided_block_by_rows(L, F, tc, Y.p, mat<false>(C));
      return;
    }
  }
  const int n = tc.n, kd = tc.kd, t = tc.t, m = tc.tail_rows();
  // A column per thread, each pivot's update over its vector lanes: the columns are
  // independent, so no team barrier until all are solved.
  Kokkos::parallel_for(Kokkos::TeamThreadRange(member, 0, tc.count), [&](int a) {
    const int s = tc.start(a), ps = tc.position(s);
    Kokkos::parallel_for(Kokkos::ThreadVectorRange(member, tc.first_row(), n),
                         [&](int p) { Y(p, a) = p == ps ? 1.0 : 0.0; });
    for (int j = s; j < t; ++j) {
      const double yj = Y(j, a) / L(0, j);
      const int kn = band_rows_below(j, n, kd);
      Kokkos::parallel_for(Kokkos::ThreadVectorRange(member, 1, kn + 1),
                           [&](int d) { Y(tc.position(j + d), a) -= L(d, j) * yj; });
      Kokkos::single(Kokkos::PerThread(member), [&]() { Y(j, a) = yj; });
    }
    for (int q = tc.tail_start(a); q < m; ++q) {
      const double yq = Y(t + q, a) / F(0, q);
      const int kn = band_rows_below(q, m, kd);
      Kokkos::parallel_for(Kokkos::ThreadVectorRange(member, 1, kn + 1),
                           [&](int d) { Y(t + q + d, a) -= F(d, q) * yq; });
      Kokkos::single(Kokkos::PerThread(member), [&]() { Y(t + q, a) = yq; });
    }
  });
  member.team_barrier();
  // C(a, c) over the rows both columns can fill, before t and in the tail: a column a per
  // thread, rows over lanes.
  Kokkos::parallel_for(Kokkos::TeamThreadRange(member, 0, tc.count), [&](int a) {
    const int sa = tc.start(a), qa = tc.tail_start(a);
    for (int c = 0; c <= a; ++c) {
      const int sc = tc.start(c), qc = tc.tail_start(c);
      const int above0 = sa > sc ? sa : sc, tail0 = t + (qa > qc ? qa : qc);
      double s = 0;
      Kokkos::parallel_reduce(
          Kokkos::ThreadVectorRange(member, above0 < t ? t - above0 : 0),
          [&](int k, double& acc) { acc += Y(above0 + k, a) * Y(above0 + k, c); }, s);
      double st = 0;
      Kokkos::parallel_reduce(
          Kokkos::ThreadVectorRange(member, tail0, n),
          [&](int p, double& acc) { acc += Y(p, a) * Y(p, c); }, st);
      Kokkos::single(Kokkos::PerThread(member), [&]() {
        C(a, c) = s + st;
        C(c, a) = s + st;
      });
    }
  });
  member.team_barrier();
}

// tail(d, q) = S(n-1-q-d, n-1-q) for the Schur complement S held in AB's columns t .. n-1 after
// the pivots before t: the lower band of J S J.
template <bool UnitA, bool UnitT, class Member>
KOKKOS_INLINE_FUNCTION void reverse_band_tail(const Member& member, const MatRef<UnitA>& AB, int n,
                                              int kd, int t, const MatRef<UnitT>& tail) {
  const int m = n - t;
  Kokkos::parallel_for(Kokkos::TeamThreadRange(member, 0, m), [&](int q) {
    const int kn = band_rows_below(q, m, kd);
    Kokkos::parallel_for(Kokkos::ThreadVectorRange(member, 0, kn + 1),
                         [&](int d) { tail(d, q) = AB(d, n - 1 - q - d); });
  });
  member.team_barrier();
}

template <bool UnitA, bool UnitT, class Member>
KOKKOS_INLINE_FUNCTION int band_cholesky_twisted_impl(const Member& member, const MatRef<UnitA>& AB,
                                                      int n, int kd, int t,
                                                      const MatRef<UnitT>& tail) {
  const bool seq = sequential_team(member);
  auto factor = [&](const auto& M, int order, int j0, int j1) {
    return seq ? band_cholesky_sequential(M, order, kd, j0, j1)
               : band_cholesky_team(member, M, order, kd, j0, j1);
  };
  const int st = factor(AB, n, 0, t);
  if (st != ok || t == n) return st;  // t = n: the plain factor, no tail
  reverse_band_tail(member, AB, n, kd, t, tail);
  return factor(tail, n - t, 0, n - t);
}

}  // namespace detail

// Half-bandwidth of a lower band view: kd = AB.extent(0) - 1.
template <class BandView>
KOKKOS_INLINE_FUNCTION int band_width(const BandView& AB) {
  return int(AB.extent(0)) - 1;
}

// Twist row for a matrix of order n (see team_band_cholesky_twisted): the middle, rounded down
// to a band_block boundary (the one-thread factor's last panel before it may be half a panel).
KOKKOS_INLINE_FUNCTION constexpr int band_twist(int n) { return n / 2 / band_block * band_block; }

// Columns a tail needs for any order up to n with the twist band_twist: n - band_twist(n') <=
// n / 2 + band_block for n' <= n.
KOKKOS_INLINE_FUNCTION constexpr int band_tail_columns(int n) { return n / 2 + band_block; }

// The factor of H twisted at row `twist`, H = M M^T, M = [L_T 0; G J F J]: AB (lower band of
// H, (kd+1) x n) <- in its first twist columns those of the band factor L (L_T and G), in the
// others the Schur complement S of H's leading twist rows; tail ((kd+1) x at least n - twist)
// <- the band factor F of S with its rows and columns reversed (J S J = F F^T, tail(d, q) =
// F(q + d, q)). Its strided blocks of H^{-1} (team_band_cholesky_inverse_strided_block with the
// tail) take about half the work of those from L alone; team_band_cholesky_solve with the tail
// solves with it. 0 <= twist <= n (n: L alone). Returns ok or not_positive_definite (then both
// unspecified).
template <class Member, class BandView, class TailView>
KOKKOS_INLINE_FUNCTION int team_band_cholesky_twisted(const Member& member, const BandView& AB,
                                                      const TailView& tail, int twist) {
  const int n = int(AB.extent(1)), kd = band_width(AB);
  if (detail::unit_rows(AB) && detail::unit_rows(tail))
    return detail::band_cholesky_twisted_impl(member, detail::mat<true>(AB), n, kd, twist,
                                              detail::mat<true>(tail));
  return detail::band_cholesky_twisted_impl(member, detail::mat<false>(AB), n, kd, twist,
                                            detail::mat<false>(tail));
}

// AB (lower band, (kd+1) x n) <- its band Cholesky factor L, H = L L^T (the twisted factor at
// twist = n). Returns ok or not_positive_definite (a pivot <= 0, NaN or inf), the same on every
// thread of the team; on failure AB's content is unspecified.
template <class Member, class BandView>
KOKKOS_INLINE_FUNCTION int team_band_cholesky(const Member& member, const BandView& AB) {
  return team_band_cholesky_twisted(member, AB, AB, int(AB.extent(1)));
}

// x <- H^{-1} x with the twisted factor of team_band_cholesky_twisted (AB, tail, twist).
template <class Member, class BandView, class TailView, class XView>
KOKKOS_INLINE_FUNCTION void team_band_cholesky_solve(const Member& member, const BandView& AB,
                                                     const TailView& tail, int twist,
                                                     const XView& x) {
  static_assert(XView::rank == 1, "team_band_cholesky_solve: x must be rank 1");
  const int n = int(AB.extent(1)), kd = band_width(AB);
  if (detail::unit_rows(AB) && detail::unit_rows(tail) && detail::unit_rows(x))
    detail::band_solve_twisted(member, detail::mat<true>(AB), detail::mat<true>(tail), n, kd, twist,
                               detail::vec<true>(x));
  else
    detail::band_solve_twisted(member, detail::mat<false>(AB), detail::mat<false>(tail), n, kd,
                               twist, detail::vec<false>(x));
}

// x <- H^{-1} x with the band factor L from team_band_cholesky (x rank 1, length n).
template <class Member, class BandView, class XView>
KOKKOS_INLINE_FUNCTION void team_band_cholesky_solve(const Member& member, const BandView& L,
                                                     const XView& x) {
  team_band_cholesky_solve(member, L, L, int(L.extent(1)), x);
}

// The count x count block of H^{-1} on the rows and columns first, first + stride, ...,
// first + (count-1) * stride (e.g. one fibre's wavelengths in a wavelength-major patch), from
// the factors of team_band_cholesky_twisted (L, tail, twist), into C(a, c) (anything with
// operator()(i, j)). work: n x count scratch, unit row stride preferred; with a unit row stride
// a one-thread host team uses its memory as one block of n * count doubles from work.data()
// (row by row), so the whole span, column padding included, is overwritten. Cost at the middle
// twist: about count * (n/4 + kd/2) * kd for the solves plus count^2 n / 24 for the products
// (twice that from L alone).
template <class Member, class BandView, class TailView, class CView, class WView>
KOKKOS_INLINE_FUNCTION void team_band_cholesky_inverse_strided_block(
    const Member& member, const BandView& L, const TailView& tail, int twist, int first, int stride,
    int count, const CView& C, const WView& work) {
  const detail::TwistedColumns tc{int(L.extent(1)), band_width(L), twist, first, stride, count};
  if (detail::unit_rows(L) && detail::unit_rows(tail) && detail::unit_rows(work))
    detail::team_band_inverse_strided_block_impl(
        member, detail::mat<true>(L), detail::mat<true>(tail), tc, C, detail::mat<true>(work));
  else
    detail::team_band_inverse_strided_block_impl(
        member, detail::mat<false>(L), detail::mat<false>(tail), tc, C, detail::mat<false>(work));
}

// The same from the band factor L of team_band_cholesky alone (no tail: twist = n).
template <class Member, class BandView, class CView, class WView>
KOKKOS_INLINE_FUNCTION void team_band_cholesky_inverse_strided_block(const Member& member,
                                                                     const BandView& L, int first,
                                                                     int stride, int count,
                                                                     const CView& C,
                                                                     const WView& work) {
  team_band_cholesky_inverse_strided_block(member, L, L, int(L.extent(1)), first, stride, count, C,
                                           work);
}

}  // namespace linalg
}  // namespace perfex
