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
// factor and the forward solves take `band_block` pivot columns at a time, so every element of
// the trailing window or of the right-hand sides is loaded and stored once per block instead of
// once per pivot (rank-4 updates the compiler vectorises), and the strided blocks keep their
// right-hand sides row by row (row operations over all started columns). Any other team (several
// threads, or a device team with vector lanes) splits the work over threads and vector lanes:
// trailing columns or right-hand sides over TeamThreadRange, rows over ThreadVectorRange.
#include <perfex/detail/kokkos_compat.hpp>
#include <perfex/linalg/cholesky.hpp>
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

// One-thread blocked right-looking band Cholesky: the pivot columns j .. j+jb-1 are factored
// among themselves, then the trailing window (columns j+jb .. j+jb-1+kd) gets one rank-jb
// update in which each entry is read and written once.
template <bool Unit>
KOKKOS_INLINE_FUNCTION int band_cholesky_sequential(const MatRef<Unit>& AB, int n, int kd) {
  constexpr int KB = band_block;
  const long rs = AB.rs();
  for (int j = 0; j < n; j += KB) {
    const int jb = KB < n - j ? KB : n - j;
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

// Team band Cholesky, column by column: the pivot column is scaled over the team's lanes, then
// the rank-1 update of the kd x kd window below it, a trailing column per thread and its rows
// over vector lanes.
template <bool Unit, class Member>
KOKKOS_INLINE_FUNCTION int band_cholesky_team(const Member& member, const MatRef<Unit>& AB, int n,
                                              int kd) {
  for (int j = 0; j < n; ++j) {
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

// x <- (L L^T)^{-1} x, sequential (teams of one thread).
template <bool UnitL, bool UnitX>
KOKKOS_INLINE_FUNCTION void serial_band_solve(const MatRef<UnitL>& L, int n, int kd,
                                              const VecRef<UnitX>& x) {
  for (int j = 0; j < n; ++j) {
    const double xj = x(j) / L(0, j);
    x(j) = xj;
    const int kn = band_rows_below(j, n, kd);
    for (int d = 1; d <= kn; ++d) x(j + d) -= L(d, j) * xj;
  }
  for (int j = n - 1; j >= 0; --j) {
    const int kn = band_rows_below(j, n, kd);
    double s = 0;
    for (int d = 1; d <= kn; ++d) s += L(d, j) * x(j + d);
    x(j) = (x(j) - s) / L(0, j);
  }
}

// x <- (L L^T)^{-1} x on a team: each pivot's update (forward) or dot product (backward) over
// the team's lanes.
template <bool UnitL, bool UnitX, class Member>
KOKKOS_INLINE_FUNCTION void team_band_solve(const Member& member, const MatRef<UnitL>& L, int n,
                                            int kd, const VecRef<UnitX>& x) {
  for (int j = 0; j < n; ++j) {
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
  for (int j = n - 1; j >= 0; --j) {
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

// C = Y^T Y for Y stored row by row as strided_block_by_rows leaves it (count columns, column
// a zero above first + a * stride): lower triangle first, column c contiguous in a, four rows'
// outer products per pass; then mirrored.
template <bool UnitC>
KOKKOS_INLINE_FUNCTION void strided_gram_by_rows(const double* Y, int n, int first, int stride,
                                                 int count, const MatRef<UnitC>& C) {
  const long cs = C.rs();
  auto started = [&](int r) {
    const int a = (r - first) / stride + 1;
    return a < count ? a : count;
  };
  auto row = [&](int r) { return Y + long(r) * count; };
  for (int c = 0; c < count; ++c)
    for (int a = c; a < count; ++a) C(a, c) = 0;
  int r = first;
  for (; r < n; r += 4) {
    const int nr = n - r < 4 ? n - r : 4;
    const int na = started(r + nr - 1);
    const double* y[4];
    for (int k = 0; k < 4; ++k) y[k] = row(k < nr ? r + k : r);
    const double* KOKKOS_RESTRICT y0 = y[0];
    const double* KOKKOS_RESTRICT y1 = y[1];
    const double* KOKKOS_RESTRICT y2 = y[2];
    const double* KOKKOS_RESTRICT y3 = y[3];
    for (int c = 0; c < na; ++c) {
      double* KOKKOS_RESTRICT cc = C.ptr(0, c);
      if (nr == 4) {
        const double u0 = y0[c], u1 = y1[c], u2 = y2[c], u3 = y3[c];
        for (int a = c; a < na; ++a)
          cc[a * cs] += (y0[a] * u0 + y1[a] * u1) + (y2[a] * u2 + y3[a] * u3);
      } else {
        for (int k = 0; k < nr; ++k) {
          const double uk = y[k][c];
          for (int a = c; a < na; ++a) cc[a * cs] += y[k][a] * uk;
        }
      }
    }
  }
  for (int c = 0; c < count; ++c)
    for (int a = c + 1; a < count; ++a) C(c, a) = C(a, c);
}

// One-thread strided block of H^{-1} with the right-hand sides stored row by row: Y (n rows of
// count, contiguous, row r at Y + r * count) holds Y(r, a) = (L^{-1} e_{s_a})(r), s_a = first +
// a * stride, zero above s_a. Every step is then a row operation over all the columns a row has
// started (long contiguous loops, no per-column dependence chains): the solve takes band_block
// pivots at a time (the block's triangle, then one pass over each row below for the block's
// updates), and C = Y^T Y (lower triangle, column-major C) adds four rows' outer products per
// pass. Rows above a column's start are zero, so whole rows can be summed.
template <bool UnitL, bool UnitC>
KOKKOS_INLINE_FUNCTION void strided_block_by_rows(const MatRef<UnitL>& L, int n, int kd, int first,
                                                  int stride, int count, double* Y,
                                                  const MatRef<UnitC>& C) {
  constexpr int KB = band_block;
  const long ls = L.rs(), cs = C.rs();
  // Columns started at row r (s_a <= r).
  auto started = [&](int r) {
    const int a = (r - first) / stride + 1;
    return a < count ? a : count;
  };
  auto row = [&](int r) { return Y + long(r) * count; };
  for (int r = first; r < n; ++r)
    for (int a = 0; a < count; ++a) row(r)[a] = 0;
  for (int a = 0; a < count; ++a) row(first + a * stride)[a] = 1.0;
  for (int j = first; j < n; j += KB) {
    const int jb = KB < n - j ? KB : n - j;
    const int na = started(j + jb - 1);
    const double* l[KB];  // L(j + i, j + p) = l[p][(i - p) * ls]
    for (int p = 0; p < KB; ++p) l[p] = L.ptr(0, p < jb ? j + p : j);
    for (int p = 0; p < jb; ++p) {
      double* KOKKOS_RESTRICT yp = row(j + p);
      const double inv = 1.0 / l[p][0];
      for (int a = 0; a < na; ++a) yp[a] *= inv;
      for (int q = p + 1; q < jb && q - p <= kd; ++q) {
        double* KOKKOS_RESTRICT yq = row(j + q);
        const double t = l[p][(q - p) * ls];
        for (int a = 0; a < na; ++a) yq[a] -= t * yp[a];
      }
    }
    // Rows every pivot of the block reaches, then the last rows only the later pivots reach.
    const int iend = kd < n - 1 - j ? kd : n - 1 - j;
    if (jb == KB) {
      const double* KOKKOS_RESTRICT y0 = row(j);
      const double* KOKKOS_RESTRICT y1 = row(j + 1);
      const double* KOKKOS_RESTRICT y2 = row(j + 2);
      const double* KOKKOS_RESTRICT y3 = row(j + 3);
      for (int i = KB; i <= iend; ++i) {
        double* KOKKOS_RESTRICT yi = row(j + i);
        const double t0 = l[0][i * ls], t1 = l[1][(i - 1) * ls], t2 = l[2][(i - 2) * ls],
                     t3 = l[3][(i - 3) * ls];
        for (int a = 0; a < na; ++a) yi[a] -= (t0 * y0[a] + t1 * y1[a]) + (t2 * y2[a] + t3 * y3[a]);
      }
    } else {
      for (int p = 0; p < jb; ++p)
        for (int i = jb; i <= iend; ++i) {
          double* KOKKOS_RESTRICT yi = row(j + i);
          const double* KOKKOS_RESTRICT yp = row(j + p);
          const double t = l[p][(i - p) * ls];
          for (int a = 0; a < na; ++a) yi[a] -= t * yp[a];
        }
    }
    for (int p = 1; p < jb; ++p) {
      const int ilast = p + kd < n - 1 - j ? p + kd : n - 1 - j;
      const double* KOKKOS_RESTRICT yp = row(j + p);
      for (int i = (iend + 1 > jb ? iend + 1 : jb); i <= ilast; ++i) {
        double* KOKKOS_RESTRICT yi = row(j + i);
        const double t = l[p][(i - p) * ls];
        for (int a = 0; a < na; ++a) yi[a] -= t * yp[a];
      }
    }
  }
  strided_gram_by_rows(Y, n, first, stride, count, C);
}

template <bool UnitL, bool UnitY, class Member, class CView>
KOKKOS_INLINE_FUNCTION void team_band_inverse_strided_block_impl(const Member& member,
                                                                 const MatRef<UnitL>& L, int n,
                                                                 int kd, int first, int stride,
                                                                 int count, const CView& C,
                                                                 const MatRef<UnitY>& Y) {
  // Column a of Y = L^{-1} e_{s_a}, s_a = first + a * stride: zero above s_a.
  if constexpr (Kokkos::is_view<CView>::value) {
    // One host thread: Y row by row in work's memory (n x count doubles, work has ld >= n).
    if (sequential_team(member) && UnitY) {
      if (unit_rows(C))
        strided_block_by_rows(L, n, kd, first, stride, count, Y.p, mat<true>(C));
      else
        strided_block_by_rows(L, n, kd, first, stride, count, Y.p, mat<false>(C));
      return;
    }
  }
  // A column per thread, each pivot's update over its vector lanes: the columns are
  // independent, so no team barrier until all are solved.
  Kokkos::parallel_for(Kokkos::TeamThreadRange(member, 0, count), [&](int a) {
    const int s = first + a * stride;
    Kokkos::parallel_for(Kokkos::ThreadVectorRange(member, s, n),
                         [&](int r) { Y(r, a) = r == s ? 1.0 : 0.0; });
    for (int j = s; j < n; ++j) {
      const double yj = Y(j, a) / L(0, j);
      const int kn = band_rows_below(j, n, kd);
      Kokkos::parallel_for(Kokkos::ThreadVectorRange(member, 1, kn + 1),
                           [&](int d) { Y(j + d, a) -= L(d, j) * yj; });
      Kokkos::single(Kokkos::PerThread(member), [&]() { Y(j, a) = yj; });
    }
  });
  member.team_barrier();
  // C(a, c) over the rows below the later start: a column a per thread, rows over lanes.
  Kokkos::parallel_for(Kokkos::TeamThreadRange(member, 0, count), [&](int a) {
    const int rs = first + a * stride;
    for (int c = 0; c <= a; ++c) {
      double s = 0;
      Kokkos::parallel_reduce(
          Kokkos::ThreadVectorRange(member, rs, n),
          [&](int r, double& acc) { acc += Y(r, a) * Y(r, c); }, s);
      Kokkos::single(Kokkos::PerThread(member), [&]() {
        C(a, c) = s;
        C(c, a) = s;
      });
    }
  });
  member.team_barrier();
}

}  // namespace detail

// Half-bandwidth of a lower band view: kd = AB.extent(0) - 1.
template <class BandView>
KOKKOS_INLINE_FUNCTION int band_width(const BandView& AB) {
  return int(AB.extent(0)) - 1;
}

// AB (lower band, (kd+1) x n) <- its band Cholesky factor L, H = L L^T. Returns ok or
// not_positive_definite (a pivot <= 0, NaN or inf), the same on every thread of the team; on
// failure AB's content is unspecified.
template <class Member, class BandView>
KOKKOS_INLINE_FUNCTION int team_band_cholesky(const Member& member, const BandView& AB) {
  const int n = int(AB.extent(1)), kd = band_width(AB);
  if (detail::unit_rows(AB)) {
    const auto M = detail::mat<true>(AB);
    return detail::sequential_team(member) ? detail::band_cholesky_sequential<true>(M, n, kd)
                                           : detail::band_cholesky_team<true>(member, M, n, kd);
  }
  const auto M = detail::mat<false>(AB);
  return detail::sequential_team(member) ? detail::band_cholesky_sequential<false>(M, n, kd)
                                         : detail::band_cholesky_team<false>(member, M, n, kd);
}

// x <- H^{-1} x with the band factor L from team_band_cholesky (x rank 1, length n).
template <class Member, class BandView, class XView>
KOKKOS_INLINE_FUNCTION void team_band_cholesky_solve(const Member& member, const BandView& L,
                                                     const XView& x) {
  static_assert(XView::rank == 1, "team_band_cholesky_solve: x must be rank 1");
  const int n = int(L.extent(1)), kd = band_width(L);
  const bool ul = detail::unit_rows(L), ux = detail::unit_rows(x);
  if (detail::sequential_team(member)) {
    if (ul && ux)
      detail::serial_band_solve<true, true>(detail::mat<true>(L), n, kd, detail::vec<true>(x));
    else
      detail::serial_band_solve<false, false>(detail::mat<false>(L), n, kd, detail::vec<false>(x));
  } else {
    detail::team_band_solve<false, false>(member, detail::mat<false>(L), n, kd,
                                          detail::vec<false>(x));
  }
}

// The count x count block of H^{-1} on the rows and columns first, first + stride, ...,
// first + (count-1) * stride (e.g. one fibre's wavelengths in a wavelength-major patch), from
// the band factor L, into C(a, c) (anything with operator()(i, j)). work: n x count scratch,
// unit row stride preferred; with a unit row stride a one-thread host team uses its memory as
// one block of n * count doubles from work.data() (row by row), so the whole span, column
// padding included, is overwritten. Cost: about count * (n - first) * kd for the solves plus
// count^2 (n - first) / 6 for the products.
template <class Member, class BandView, class CView, class WView>
KOKKOS_INLINE_FUNCTION void team_band_cholesky_inverse_strided_block(const Member& member,
                                                                     const BandView& L, int first,
                                                                     int stride, int count,
                                                                     const CView& C,
                                                                     const WView& work) {
  const int n = int(L.extent(1)), kd = band_width(L);
  if (detail::unit_rows(L) && detail::unit_rows(work))
    detail::team_band_inverse_strided_block_impl<true, true>(
        member, detail::mat<true>(L), n, kd, first, stride, count, C, detail::mat<true>(work));
  else
    detail::team_band_inverse_strided_block_impl<false, false>(
        member, detail::mat<false>(L), n, kd, first, stride, count, C, detail::mat<false>(work));
}

}  // namespace linalg
}  // namespace perfex
