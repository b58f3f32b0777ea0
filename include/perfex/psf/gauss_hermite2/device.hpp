#pragma once
// The device side of specex's GAUSS-HERMITE2 PSF, as specter's GaussHermite2PSF evaluates it
// (host data: psf/gauss_hermite2/data.hpp; its model of the PSF concept:
// psf/gauss_hermite2/model.hpp): two Gauss-Hermite cores of different widths plus power-law
// tails, all parameters Legendre series in wavelength.
//
//  * Box: 2·HSIZEX columns × 2·HSIZEY rows from c0 = floor(x − HSIZEX), r0 = floor(y − HSIZEY)
//    (specter truncates toward zero, specter_corner: one later for boxes starting off the CCD).
//  * core1 = Σ_ij GH-i-j · By_j(σy = GHSIGY) ⊗ Bx_i(σx = GHSIGX), kept only at pixels whose
//    centre offset (Δx, Δy) from the trace has (Δx/GHSIGX)² + (Δy/GHSIGY)² < GHNSIG²;
//    core2 = Σ_ij GH2-i-j · By_j(GHSIGY2) ⊗ Bx_i(GHSIGX2), degrees GHDEGX2, GHDEGY2;
//    B_m[q] the integral over pixel q of He_m(t)·φ(t), t = (edge − trace)/σ, evaluated as
//    differences of ½·erf(t/√2) (m = 0) and −φ(t)·He_{m−1}(t) at the pixel edges.
//  * tail = TAILAMP·ρ²/(TAILCORE² + ρ²)^(1 + TAILINDE/2), ρ² = (Δx·TAILXSCA)² + (Δy·TAILYSCA)²
//    at pixel centres; spot = max(core1 + core2 + tail, 0), normalised to sum 1.
#include <Kokkos_Core.hpp>

#include <perfex/detail/kokkos_compat.hpp>
#include <perfex/psf/device.hpp>
#include <perfex/psf/gauss_hermite/device.hpp>
#include <perfex/psf/model.hpp>

namespace perfex {
namespace psf {

namespace detail {

// The integrals B_m[q], m = 0..deg, over pixels q = 0..n−1 of He_m(t)·φ(t) where pixel q spans
// t ∈ [(first + q)/σ, (first + q + 1)/σ]: E (deg+1)·(n+1) and B (deg+1)·n doubles, by one
// thread over its vector lanes.
template <class Member>
KOKKOS_INLINE_FUNCTION void pixel_hermite_integrals(const Member& member, int n, double first,
                                                    double sigma, int deg, double* E, double* B) {
  const int ne = n + 1;
  Kokkos::parallel_for(Kokkos::ThreadVectorRange(member, ne), [&](int e) {
    const double t = (first + e) / sigma;
    const double phi = math::inv_sqrt_2pi * math::exp(-0.5 * t * t);
    E[e] = 0.5 * math::erf(t / math::sqrt2);
    double h0 = 0.0, h1 = 1.0;  // He_{m-2}, He_{m-1}
    for (int m = 1; m <= deg; ++m) {
      E[m * ne + e] = -phi * h1;
      const double h2 = t * h1 - (m - 1) * h0;  // He_m
      h0 = h1;
      h1 = h2;
    }
  });
  Kokkos::parallel_for(Kokkos::ThreadVectorRange(member, (deg + 1) * n), [&](int i) {
    const int m = i / n, q = i - m * n;
    B[i] = E[m * ne + q + 1] - E[m * ne + q];
  });
}

}  // namespace detail

template <class MemorySpace>
struct GaussHermite2Device : GaussHermiteTable<MemorySpace> {
  using Table = GaussHermiteTable<MemorySpace>;
  using Table::hx, Table::hy, Table::ncp, Table::param, Table::pscale, Table::pw0;
  using Table::row_sigx, Table::row_sigy, Table::row_tailamp, Table::row_tailcore;
  using Table::row_tailinde, Table::row_tailxsca, Table::row_tailysca;
  Kokkos::View<const int*, MemorySpace> rows1, rows2;  // rows of GH-i-j, GH2-i-j at i·(dy+1)+j
  int dx1 = 0, dy1 = 0, dx2 = 0, dy2 = 0;
  int row_nsig = 0, row_sigx2 = 0, row_sigy2 = 0;

  enum Scalar {
    X,
    Y,
    SIGX,
    SIGY,
    CUTOFF,
    SIGX2,
    SIGY2,
    TAILAMP,
    TAILCORE,
    TAILXSCA,
    TAILYSCA,
    TAILINDE,
    kScalars
  };
  // Scratch, in words: the scalars, P_m, a1, a2, the edge values E of the widest axis and
  // degree, Bx1, By1, Bx2, By2, T (the larger core's) and the spot.
  struct Layout {
    int nx, ny, P, a1, a2, E, bx1, by1, bx2, by2, T, core, words;
    KOKKOS_INLINE_FUNCTION explicit Layout(const GaussHermite2Device& d)
        : nx(2 * d.hx),
          ny(2 * d.hy),
          P(kScalars),
          a1(P + d.ncp),
          a2(a1 + (d.dx1 + 1) * (d.dy1 + 1)),
          E(a2 + (d.dx2 + 1) * (d.dy2 + 1)),
          bx1(E + (math::max(math::max(d.dx1, d.dy1), math::max(d.dx2, d.dy2)) + 1) *
                      (math::max(nx, ny) + 1)),
          by1(bx1 + (d.dx1 + 1) * nx),
          bx2(by1 + (d.dy1 + 1) * ny),
          by2(bx2 + (d.dx2 + 1) * nx),
          T(by2 + (d.dy2 + 1) * ny),
          core(T + (math::max(d.dy1, d.dy2) + 1) * nx),
          words(core + ny * nx) {}
  };

  KOKKOS_INLINE_FUNCTION SpotCorner spot_corner(int f, double wave) const {
    return {static_cast<int>(math::floor(this->trace_x(f, wave) - hx)),
            static_cast<int>(math::floor(this->trace_y(f, wave) - hy))};
  }
  // specter's box: int(x − HSIZEX), int(y − HSIZEY), Python's int truncating toward zero.
  KOKKOS_INLINE_FUNCTION SpotCorner specter_corner(int f, double wave) const {
    return {static_cast<int>(this->trace_x(f, wave) - hx),
            static_cast<int>(this->trace_y(f, wave) - hy)};
  }
  KOKKOS_INLINE_FUNCTION int spot_scratch() const { return Layout(*this).words; }

  // core[p][q] (+)= Σ_j By_j[p]·(Σ_i a_ij·Bx_i[q]), only where keep(p, q).
  template <class Member, class Keep>
  KOKKOS_INLINE_FUNCTION static void add_core(const Member& member, int nx, int ny, int dx, int dy,
                                              const double* a, const double* bx, const double* by,
                                              double* T, double* core, bool first,
                                              const Keep& keep) {
    for (int j = 0; j <= dy; ++j)
      Kokkos::parallel_for(Kokkos::ThreadVectorRange(member, nx), [&](int q) {
        double t = 0;
        for (int i = 0; i <= dx; ++i) t += a[i * (dy + 1) + j] * bx[i * nx + q];
        T[j * nx + q] = t;
      });
    Kokkos::parallel_for(Kokkos::ThreadVectorRange(member, ny * nx), [&](int pq) {
      const int p = pq / nx, q = pq - p * nx;
      double v = 0;
      for (int j = 0; j <= dy; ++j) v += by[j * ny + p] * T[j * nx + q];
      v = keep(p, q) ? v : 0.0;
      core[pq] = first ? v : core[pq] + v;
    });
  }

  template <class Member>
  KOKKOS_INLINE_FUNCTION void spot(const Member& member, int fib, double lam, double* buf,
                                   const SpotOutput& out) const {
    const Layout L(*this);
    const int nx = L.nx, ny = L.ny;
    double* s = buf;
    double* P = buf + L.P;
    double* a1 = buf + L.a1;
    double* a2 = buf + L.a2;
    double* core = buf + L.core;
    Kokkos::single(Kokkos::PerThread(member), [&]() {
      s[X] = this->trace_x(fib, lam);
      s[Y] = this->trace_y(fib, lam);
      detail::legendre_values(detail::reduced(lam, pw0, pscale), ncp, P);
      const int rows[] = {row_sigx,    row_sigy,     row_nsig,     row_sigx2,    row_sigy2,
                          row_tailamp, row_tailcore, row_tailxsca, row_tailysca, row_tailinde};
      for (int i = 0; i < 10; ++i) s[SIGX + i] = param(rows[i], fib, P);
      *out.col0 = static_cast<int>(math::floor(s[X] - hx));
      *out.row0 = static_cast<int>(math::floor(s[Y] - hy));
    });
    const double x = s[X], y = s[Y];
    const int c0 = static_cast<int>(math::floor(x - hx)),
              r0 = static_cast<int>(math::floor(y - hy));
    const int n1 = (dx1 + 1) * (dy1 + 1), n2 = (dx2 + 1) * (dy2 + 1);
    Kokkos::parallel_for(Kokkos::ThreadVectorRange(member, n1 + n2), [&](int ij) {
      if (ij < n1)
        a1[ij] = param(rows1(ij), fib, P);
      else
        a2[ij - n1] = param(rows2(ij - n1), fib, P);
    });
    // Pixel edges relative to the trace: the first at (c0 − x) − 0.5.
    const double ex = (c0 - x) - 0.5, ey = (r0 - y) - 0.5;
    detail::pixel_hermite_integrals(member, nx, ex, s[SIGX], dx1, buf + L.E, buf + L.bx1);
    detail::pixel_hermite_integrals(member, ny, ey, s[SIGY], dy1, buf + L.E, buf + L.by1);
    detail::pixel_hermite_integrals(member, nx, ex, s[SIGX2], dx2, buf + L.E, buf + L.bx2);
    detail::pixel_hermite_integrals(member, ny, ey, s[SIGY2], dy2, buf + L.E, buf + L.by2);
    const double nsig2 = s[CUTOFF] * s[CUTOFF];
    add_core(member, nx, ny, dx1, dy1, a1, buf + L.bx1, buf + L.by1, buf + L.T, core, true,
             [&](int p, int q) {
               const double u = ((c0 + q) - x) / s[SIGX], v = ((r0 + p) - y) / s[SIGY];
               return u * u + v * v < nsig2;
             });
    add_core(member, nx, ny, dx2, dy2, a2, buf + L.bx2, buf + L.by2, buf + L.T, core, false,
             [](int, int) { return true; });
    // Tails at the pixel centres, then the clip and the normalisation.
    const bool tail = s[TAILAMP] != 0.0;
    const double core2 = s[TAILCORE] * s[TAILCORE], expo = 1.0 + 0.5 * s[TAILINDE];
    detail::clip_and_normalise(
        member, ny * nx, core,
        [&](int pq) {
          const int p = pq / nx, q = pq - p * nx;
          double v = core[pq];
          if (tail) {
            const double ddx = ((c0 + q) - x) * s[TAILXSCA], ddy = ((r0 + p) - y) * s[TAILYSCA];
            const double rho2 = ddx * ddx + ddy * ddy;
            v += s[TAILAMP] * rho2 / math::pow(core2 + rho2, expo);
          }
          return v;
        },
        out);
  }
};

}  // namespace psf
}  // namespace perfex
