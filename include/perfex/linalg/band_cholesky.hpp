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
// the trailing window or of the right-hand side is loaded and stored once per block instead of
// once per pivot (rank-4 updates the compiler vectorises over rows). Any other team (several
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

// One-thread forward solve of the columns c0 .. c0+G-1 of Y (zero above row j0) by L, from row
// j0: blocks of band_block pivots; within a block the small triangle is solved pivot by pivot,
// then the rows below take the block's band_block updates in one pass per column.
template <int G, bool UnitL, bool UnitY>
KOKKOS_INLINE_FUNCTION void band_forward_block(const MatRef<UnitL>& L, int n, int kd,
                                               const MatRef<UnitY>& Y, int c0, int j0) {
  constexpr int KB = band_block;
  const long ls = L.rs(), ys = Y.rs();
  double* y[G];
  for (int c = 0; c < G; ++c) y[c] = Y.ptr(0, c0 + c);
  for (int j = j0; j < n; j += KB) {
    const int jb = KB < n - j ? KB : n - j;
    // Rows relative to the block's first row j: L(j + i, j + p) = l[p][i - p], Y(j + i, .) =
    // yc[i].
    const double* l[KB];
    double a[G][KB];
    for (int p = 0; p < KB; ++p) {
      l[p] = L.ptr(0, p < jb ? j + p : j);
      for (int c = 0; c < G; ++c) a[c][p] = 0;
    }
    for (int p = 0; p < jb; ++p) {
      const double inv = 1.0 / l[p][0];
      for (int c = 0; c < G; ++c) {
        const double v = y[c][(j + p) * ys] * inv;
        y[c][(j + p) * ys] = v;
        a[c][p] = v;
        for (int q = p + 1; q < jb && q - p <= kd; ++q)
          y[c][(j + q) * ys] -= l[p][(q - p) * ls] * v;
      }
    }
    // Rows every pivot of the block reaches, then the last rows only the later pivots reach.
    const int iend = kd < n - 1 - j ? kd : n - 1 - j;
    for (int c = 0; c < G; ++c) {
      double* yc = y[c] + j * ys;
      if (jb == KB) {
        const double a0 = a[c][0], a1 = a[c][1], a2 = a[c][2], a3 = a[c][3];
        for (int i = KB; i <= iend; ++i)
          yc[i * ys] -= (l[0][i * ls] * a0 + l[1][(i - 1) * ls] * a1) +
                        (l[2][(i - 2) * ls] * a2 + l[3][(i - 3) * ls] * a3);
      } else {
        for (int p = 0; p < jb; ++p)
          for (int i = jb; i <= iend; ++i) yc[i * ys] -= l[p][(i - p) * ls] * a[c][p];
      }
      for (int p = 1; p < jb; ++p) {
        const int ilast = p + kd < n - 1 - j ? p + kd : n - 1 - j;
        for (int i = (iend + 1 > jb ? iend + 1 : jb); i <= ilast; ++i)
          yc[i * ys] -= l[p][(i - p) * ls] * a[c][p];
      }
    }
  }
}

// C(a, c) = sum over rows r >= s_max(a, c) of Y(r, a) Y(r, c) for a, c < count, s_a = first +
// a * stride, rows below a column's start zero in Y. One thread: pairs of columns a against
// groups of four columns c, each row of Y read once per tile.
template <bool UnitY, class CView>
KOKKOS_INLINE_FUNCTION void strided_gram_sequential(const MatRef<UnitY>& Y, int n, int first,
                                                    int stride, int count, const CView& C) {
  const long ys = Y.rs();
  for (int a0 = 0; a0 < count; a0 += 2) {
    const int na = count - a0 < 2 ? count - a0 : 2;
    for (int c0 = 0; c0 <= a0 + na - 1; c0 += 4) {
      const int nc = a0 + na - c0 < 4 ? a0 + na - c0 : 4;
      // Rows from the latest start among the tile's columns (the others are zero above it
      // only down to their own start, so the tile starts at its latest start).
      const int amax = a0 + na - 1, cmax = c0 + nc - 1;
      const int r0 = first + (amax > cmax ? amax : cmax) * stride;
      double acc[2][4] = {{0, 0, 0, 0}, {0, 0, 0, 0}};
      const double* ya[2] = {Y.ptr(0, a0), Y.ptr(0, a0 + na - 1)};
      const double* yc[4];
      for (int c = 0; c < 4; ++c) yc[c] = Y.ptr(0, c0 + (c < nc ? c : nc - 1));
      for (int r = r0; r < n; ++r) {
        const double u0 = ya[0][r * ys], u1 = ya[1][r * ys];
        for (int c = 0; c < 4; ++c) {
          const double v = yc[c][r * ys];
          acc[0][c] += u0 * v;
          acc[1][c] += u1 * v;
        }
      }
      // Rows between a pair's own start and the tile's start.
      for (int ia = 0; ia < na; ++ia)
        for (int ic = 0; ic < nc; ++ic) {
          const int a = a0 + ia, c = c0 + ic;
          if (c > a) continue;
          double s = acc[ia][ic];
          for (int r = first + a * stride; r < r0; ++r) s += Y(r, a) * Y(r, c);
          C(a, c) = s;
          C(c, a) = s;
        }
    }
  }
}

template <bool UnitL, bool UnitY, class Member, class CView>
KOKKOS_INLINE_FUNCTION void team_band_inverse_strided_block_impl(const Member& member,
                                                                 const MatRef<UnitL>& L, int n,
                                                                 int kd, int first, int stride,
                                                                 int count, const CView& C,
                                                                 const MatRef<UnitY>& Y) {
  // Column a of Y = L^{-1} e_{s_a}, s_a = first + a * stride: zero above s_a.
  if (sequential_team(member)) {
    // Pairs of columns share the pivots' loads; the second starts at the first's start (its
    // rows in between are zero).
    for (int a = 0; a < count; a += 2) {
      const int s = first + a * stride;
      const int na = count - a < 2 ? count - a : 2;
      for (int c = a; c < a + na; ++c)
        for (int r = s; r < n; ++r) Y(r, c) = r == first + c * stride ? 1.0 : 0.0;
      if (na == 2)
        band_forward_block<2>(L, n, kd, Y, a, s);
      else
        band_forward_block<1>(L, n, kd, Y, a, s);
    }
    strided_gram_sequential(Y, n, first, stride, count, C);
    return;
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
// unit row stride preferred. Cost: about count * (n - first) * kd for the solves plus
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
