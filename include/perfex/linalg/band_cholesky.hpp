#pragma once
// Team-level Cholesky of a symmetric positive-definite band matrix, its solve, and selected
// entries of the inverse. A patch's normal matrix ordered wavelength-major is a band matrix
// (half-bandwidth ~58 for N = 518): the band factor costs N kd^2 / 2 multiply-adds instead of
// N^3 / 6, and the factor keeps the band (no fill-in).
//
// Storage (LAPACK's lower band, "AB"): AB(d, j) = A(j + d, j) for d = 0 .. kd, j = 0 .. n-1;
// a (kd+1) x n rank-2 view, unit row stride preferred (each column of the band contiguous).
// Called inside a TeamPolicy functor by every thread of the team; one team per matrix.
#include <perfex/detail/kokkos_compat.hpp>
#include <perfex/linalg/cholesky.hpp>
#include <perfex/linalg/matref.hpp>
#include <perfex/linalg/status.hpp>

namespace perfex {
namespace linalg {
namespace detail {

KOKKOS_INLINE_FUNCTION int band_rows_below(int j, int n, int kd) {
  return kd < n - 1 - j ? kd : n - 1 - j;
}

// Right-looking column by column: scale column j, then a rank-1 update of the kd x kd window
// below it (each trailing column a contiguous axpy).
template <bool Unit, class Member>
KOKKOS_INLINE_FUNCTION int team_band_cholesky_impl(const Member& member, const MatRef<Unit>& AB,
                                                   int n, int kd) {
  const long rs = AB.rs();
  for (int j = 0; j < n; ++j) {
    const double ajj = AB(0, j);
    if (!good_pivot(ajj)) return not_positive_definite;
    const int kn = band_rows_below(j, n, kd);
    const double djj = perfex::math::sqrt(ajj);
    const double inv = 1.0 / djj;
    member.team_barrier();  // everybody has read AB(0, j)
    Kokkos::parallel_for(Kokkos::TeamThreadRange(member, 0, kn + 1),
                         [&](int d) { AB(d, j) = d == 0 ? djj : AB(d, j) * inv; });
    member.team_barrier();
    Kokkos::parallel_for(Kokkos::TeamThreadRange(member, 1, kn + 1), [&](int k) {
      const double t = AB(k, j);
      double* a = AB.ptr(0, j + k);
      const double* l = AB.ptr(k, j);
      for (int d = 0; d <= kn - k; ++d) a[d * rs] -= l[d * rs] * t;
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

template <bool UnitL, bool UnitX, class Member>
KOKKOS_INLINE_FUNCTION void team_band_solve(const Member& member, const MatRef<UnitL>& L, int n,
                                            int kd, const VecRef<UnitX>& x) {
  for (int j = 0; j < n; ++j) {
    const double xj = x(j) / L(0, j);
    member.team_barrier();
    const int kn = band_rows_below(j, n, kd);
    Kokkos::parallel_for(Kokkos::TeamThreadRange(member, 0, kn + 1), [&](int d) {
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
        Kokkos::TeamThreadRange(member, 1, kn + 1),
        [&](int d, double& acc) { acc += L(d, j) * x(j + d); }, s);
    const double xj = (x(j) - s) / L(0, j);
    member.team_barrier();
    Kokkos::single(Kokkos::PerTeam(member), [&]() { x(j) = xj; });
    member.team_barrier();
  }
}

// Columns [c0, c1) of Y <- L^{-1} Y, starting at row j0 (rows above j0 are zero in these
// columns). Up to four columns share each column of L.
template <bool UnitL, bool UnitY>
KOKKOS_INLINE_FUNCTION void band_forward_columns(const MatRef<UnitL>& L, int n, int kd,
                                                 const MatRef<UnitY>& Y, int j0, int c0, int c1) {
  const long ls = L.rs(), ys = Y.rs();
  double* y[4];
  const int nc = c1 - c0;
  for (int c = 0; c < 4; ++c) y[c] = Y.ptr(0, c0 + (c < nc ? c : 0));
  for (int j = j0; j < n; ++j) {
    const double inv = 1.0 / L(0, j);
    const int kn = band_rows_below(j, n, kd);
    const double* l = L.ptr(0, j);
    if (nc == 4) {
      const double a0 = (y[0][j * ys] *= inv), a1 = (y[1][j * ys] *= inv);
      const double a2 = (y[2][j * ys] *= inv), a3 = (y[3][j * ys] *= inv);
      for (int d = 1; d <= kn; ++d) {
        const double ld = l[d * ls];
        const long r = (j + d) * ys;
        y[0][r] -= ld * a0;
        y[1][r] -= ld * a1;
        y[2][r] -= ld * a2;
        y[3][r] -= ld * a3;
      }
    } else {
      for (int c = 0; c < nc; ++c) {
        const double a = (y[c][j * ys] *= inv);
        for (int d = 1; d <= kn; ++d) y[c][(j + d) * ys] -= l[d * ls] * a;
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
  // Column a of Y = L^{-1} e_{s_a}, s_a = first + a * stride: zero above s_a. A group of four
  // columns is solved together from its first start (the later columns are zero until theirs).
  const int ngroups = (count + 3) / 4;
  Kokkos::parallel_for(Kokkos::TeamThreadRange(member, 0, ngroups), [&](int g) {
    const int c0 = 4 * g, c1 = c0 + 4 < count ? c0 + 4 : count;
    const int j0 = first + c0 * stride;
    for (int c = c0; c < c1; ++c) {
      const int s = first + c * stride;
      for (int r = j0; r < n; ++r) Y(r, c) = r == s ? 1.0 : 0.0;
    }
    band_forward_columns<UnitL, UnitY>(L, n, kd, Y, j0, c0, c1);
  });
  member.team_barrier();
  // C(a, c) = sum over r >= s_max(a, c) of Y(r, a) Y(r, c).
  Kokkos::parallel_for(Kokkos::TeamThreadRange(member, 0, count), [&](int a) {
    const int rs = first + a * stride;
    for (int c = 0; c <= a; ++c) {
      const double s = dot<UnitY>(n - rs, Y.ptr(rs, a), Y.ptr(rs, c), Y.rs(), Y.rs());
      C(a, c) = s;
      C(c, a) = s;
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
  if (detail::unit_rows(AB))
    return detail::team_band_cholesky_impl<true>(member, detail::mat<true>(AB), n, kd);
  return detail::team_band_cholesky_impl<false>(member, detail::mat<false>(AB), n, kd);
}

// x <- H^{-1} x with the band factor L from team_band_cholesky (x rank 1, length n).
template <class Member, class BandView, class XView>
KOKKOS_INLINE_FUNCTION void team_band_cholesky_solve(const Member& member, const BandView& L,
                                                     const XView& x) {
  static_assert(XView::rank == 1, "team_band_cholesky_solve: x must be rank 1");
  const int n = int(L.extent(1)), kd = band_width(L);
  const bool ul = detail::unit_rows(L), ux = detail::unit_rows(x);
  if (member.team_size() == 1) {
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
