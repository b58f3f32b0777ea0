#pragma once
// Device model of specex's GAUSS-HERMITE2 PSF (specter's GaussHermite2PSF; host data
// GaussHermite2PsfData in psf/psf_data.hpp): two Gauss-Hermite cores of different widths plus
// power-law tails, all parameters Legendre series in wavelength. A model of the PSF concept
// (psf/model.hpp).
//
//  * Box: 2·HSIZEX columns × 2·HSIZEY rows from c0 = floor(x − HSIZEX), r0 = floor(y − HSIZEY)
//    (specter truncates toward zero; the two differ only for boxes starting off the CCD).
//  * core1 = Σ_ij GH-i-j · By_j(σy = GHSIGY) ⊗ Bx_i(σx = GHSIGX), kept only at pixels whose
//    centre offset (Δx, Δy) from the trace has (Δx/GHSIGX)² + (Δy/GHSIGY)² < GHNSIG²;
//    core2 = Σ_ij GH2-i-j · By_j(GHSIGY2) ⊗ Bx_i(GHSIGX2), degrees GHDEGX2, GHDEGY2;
//    B_m[q] the integral over pixel q of He_m(t)·φ(t), t = (edge − trace)/σ, evaluated as
//    differences of ½·erf(t/√2) (m = 0) and −φ(t)·He_{m−1}(t) at the pixel edges.
//  * tail = TAILAMP·ρ²/(TAILCORE² + ρ²)^(1 + TAILINDE/2), ρ² = (Δx·TAILXSCA)² + (Δy·TAILYSCA)²
//    at pixel centres; spot = max(core1 + core2 + tail, 0), normalised to sum 1.
#include <Kokkos_Core.hpp>

#include <string>
#include <vector>

#include <perfex/detail/kokkos_compat.hpp>
#include <perfex/error.hpp>
#include <perfex/psf/legendre_traces.hpp>
#include <perfex/psf/model.hpp>
#include <perfex/psf/psf_data.hpp>

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

template <class MemorySpace>
struct GaussHermite2Device : LegendreTraces<MemorySpace> {
  Kokkos::View<const double***, Kokkos::LayoutRight, MemorySpace> pcoeff;  // [nparam][nfib][ncp]
  Kokkos::View<const int*, MemorySpace> rows1, rows2;  // rows of GH-i-j, GH2-i-j at i·(dy+1)+j
  int ncp = 0, hx = 0, hy = 0, dx1 = 0, dy1 = 0, dx2 = 0, dy2 = 0;
  int row_sigx = 0, row_sigy = 0, row_nsig = 0, row_sigx2 = 0, row_sigy2 = 0;
  int row_tailamp = 0, row_tailcore = 0, row_tailxsca = 0, row_tailysca = 0, row_tailinde = 0;
  double pw0 = 0, pscale = 0;

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

  KOKKOS_INLINE_FUNCTION double param(int p, int f, const double* P) const {
    double s = 0;
    for (int m = 0; m < ncp; ++m) s = math::mul_add(pcoeff(p, f, m), P[m], s);
    return s;
  }
  KOKKOS_INLINE_FUNCTION SpotCorner spot_corner(int f, double wave) const {
    return {static_cast<int>(math::floor(this->trace_x(f, wave) - hx)),
            static_cast<int>(math::floor(this->trace_y(f, wave) - hy))};
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
      legendre_values(reduced(lam, pw0, pscale), ncp, P);
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
    pixel_hermite_integrals(member, nx, ex, s[SIGX], dx1, buf + L.E, buf + L.bx1);
    pixel_hermite_integrals(member, ny, ey, s[SIGY], dy1, buf + L.E, buf + L.by1);
    pixel_hermite_integrals(member, nx, ex, s[SIGX2], dx2, buf + L.E, buf + L.bx2);
    pixel_hermite_integrals(member, ny, ey, s[SIGY2], dy2, buf + L.E, buf + L.by2);
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
    double total = 0;
    Kokkos::parallel_reduce(
        Kokkos::ThreadVectorRange(member, ny * nx),
        [&](int pq, double& sum) {
          const int p = pq / nx, q = pq - p * nx;
          double v = core[pq];
          if (tail) {
            const double ddx = ((c0 + q) - x) * s[TAILXSCA], ddy = ((r0 + p) - y) * s[TAILYSCA];
            const double rho2 = ddx * ddx + ddy * ddy;
            v += s[TAILAMP] * rho2 / math::pow(core2 + rho2, expo);
          }
          v = v > 0.0 ? v : 0.0;
          core[pq] = v;
          sum += v;
        },
        total);
    const double inv = total > 0.0 ? 1.0 / total : 1.0;
    double* values = out.values;
    Kokkos::parallel_for(Kokkos::ThreadVectorRange(member, ny * nx),
                         [&](int i) { values[i] = core[i] * inv; });
  }
};

}  // namespace detail

template <class MemorySpace>
class GaussHermite2Psf {
 public:
  using memory_space = MemorySpace;
  using device_type = detail::GaussHermite2Device<MemorySpace>;

  template <class ExecSpace>
  GaussHermite2Psf(const ExecSpace& exec, const GaussHermite2PsfData& data)
      : summary_(data.summary()) {
    data.validate();
    const GaussHermitePsfData& g = data.gh;
    detail::upload_traces(exec, g.xtrace, g.ytrace, g.nfib, d_);
    d_.ncp = g.ncoeff();
    d_.hx = g.hsizex;
    d_.hy = g.hsizey;
    d_.dx1 = g.ghdegx;
    d_.dy1 = g.ghdegy;
    d_.dx2 = data.ghdegx2;
    d_.dy2 = data.ghdegy2;
    d_.pw0 = g.wavemin;
    d_.pscale = 2.0 / (g.wavemax - g.wavemin);
    d_.row_sigx = g.param_index("GHSIGX");
    d_.row_sigy = g.param_index("GHSIGY");
    d_.row_nsig = g.param_index("GHNSIG");
    d_.row_sigx2 = g.param_index("GHSIGX2");
    d_.row_sigy2 = g.param_index("GHSIGY2");
    d_.row_tailamp = g.param_index("TAILAMP");
    d_.row_tailcore = g.param_index("TAILCORE");
    d_.row_tailxsca = g.param_index("TAILXSCA");
    d_.row_tailysca = g.param_index("TAILYSCA");
    d_.row_tailinde = g.param_index("TAILINDE");
    Kokkos::View<double***, Kokkos::LayoutRight, MemorySpace> pc("perfex::psf::gh2_coeff",
                                                                 g.nparam(), g.nfib, d_.ncp);
    detail::copy_to_device(exec, pc, g.coeff);
    d_.pcoeff = pc;
    std::vector<int> r1, r2;
    for (int i = 0; i <= d_.dx1; ++i)
      for (int j = 0; j <= d_.dy1; ++j)
        r1.push_back(g.param_index("GH-" + std::to_string(i) + "-" + std::to_string(j)));
    for (int i = 0; i <= d_.dx2; ++i)
      for (int j = 0; j <= d_.dy2; ++j)
        r2.push_back(g.param_index(GaussHermite2PsfData::core2_name(i, j)));
    Kokkos::View<int*, MemorySpace> v1("perfex::psf::gh2_rows1", r1.size()),
        v2("perfex::psf::gh2_rows2", r2.size());
    detail::copy_to_device(exec, v1, r1);
    detail::copy_to_device(exec, v2, r2);
    d_.rows1 = v1;
    d_.rows2 = v2;
  }

  int nfib() const { return summary_.nfib; }
  int npix_x() const { return summary_.npix_x; }
  int npix_y() const { return summary_.npix_y; }
  int spot_rows() const { return summary_.spot_rows; }
  int spot_cols() const { return summary_.spot_cols; }
  double wavemin() const { return summary_.trace_wavemin; }
  double wavemax() const { return summary_.trace_wavemax; }
  double psferr() const { return summary_.psferr; }
  const device_type& device() const { return d_; }

 private:
  PsfSummary summary_;
  device_type d_;
};

static_assert(require_psf_model<GaussHermite2Psf<Kokkos::HostSpace>>(), "");

}  // namespace psf
}  // namespace perfex
