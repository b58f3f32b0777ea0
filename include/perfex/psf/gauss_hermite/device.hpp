#pragma once
// The device side of specex's GaussHermite PSF (host data: psf/gauss_hermite/data.hpp; its
// model of the PSF concept: psf/gauss_hermite/model.hpp): Legendre traces and parameters, and
// pixel-integrated Gauss-Hermite spots (normalised).
//
// Conventions:
//  * Legendre series on two domains: traces on XTRACE/YTRACE WAVEMIN/WAVEMAX, table
//    parameters on the PSF HDU's; u = (λ − w0)·(2/(w1 − w0)) − 1, no clipping (extrapolation).
//  * Spot box: corner c0 = floor(X − hx + 0.5), r0 = floor(Y − hy + 0.5) (specter truncates
//    toward zero: specter_corner, one later for boxes starting off the CCD); 1-D bases are pixel
//    integrals (erf differences for degree 0, differences of φ·He_{m−1} for degree m); the 2-D
//    core is combined separably (T = a·Bx, then core = By·T); clipped at 0 and normalised to 1.
//  * Tails (specex's PSF tails) are added before clipping only when TAILAMP ≠ 0 at that (fibre, λ),
//    with specter's convention: ρ² = (Δx·TAILXSCA)² + (Δy·TAILYSCA)² (scales multiply),
//    tail = TAILAMP·ρ²/(TAILCORE² + ρ²)^(1 + TAILINDE/2), Δ = pixel centre − trace.
#include <Kokkos_Core.hpp>

#include <perfex/detail/kokkos_compat.hpp>
#include <perfex/psf/device.hpp>
#include <perfex/psf/gauss_hermite/data.hpp>
#include <perfex/psf/model.hpp>

namespace perfex {
namespace psf {

// What GAUSS-HERMITE and GAUSS-HERMITE2 share on the device: the traces, the spot box's half
// sizes, and the parameter table (Legendre coefficients per parameter and fibre on the PSF
// HDU's domain) with the rows of the widths and tails.
template <class MemorySpace>
struct GaussHermiteTable : detail::LegendreTraces<MemorySpace> {
  Kokkos::View<const double***, Kokkos::LayoutRight, MemorySpace> pcoeff;  // [nparam][nfib][ncp]
  int ncp = 0, hx = 0, hy = 0;
  int row_sigx = -1, row_sigy = -1;
  int row_tailamp = -1, row_tailcore = -1, row_tailxsca = -1, row_tailysca = -1, row_tailinde = -1;
  double pw0 = 0, pscale = 0;

  // Parameter row p of fibre f given P_m(u_PSF).
  KOKKOS_INLINE_FUNCTION double param(int p, int f, const double* P) const {
    double s = 0;
    for (int m = 0; m < ncp; ++m) s = math::mul_add(pcoeff(p, f, m), P[m], s);
    return s;
  }
};

namespace detail {
// The table of host data in exec's memory (the tails' rows where TAILAMP is a parameter).
template <class ExecSpace, class MemorySpace>
void upload_table(const ExecSpace& exec, const GaussHermitePsfData& data,
                  GaussHermiteTable<MemorySpace>& t) {
  upload_traces(exec, data.xtrace, data.ytrace, data.nfib, t);
  t.ncp = data.ncoeff();
  t.hx = data.hsizex;
  t.hy = data.hsizey;
  t.pw0 = data.wavemin;
  t.pscale = 2.0 / (data.wavemax - data.wavemin);
  t.row_sigx = data.param_index("GHSIGX");
  t.row_sigy = data.param_index("GHSIGY");
  t.row_tailamp = data.find_param("TAILAMP");
  if (t.row_tailamp >= 0) {
    t.row_tailcore = data.param_index("TAILCORE");
    t.row_tailxsca = data.param_index("TAILXSCA");
    t.row_tailysca = data.param_index("TAILYSCA");
    t.row_tailinde = data.param_index("TAILINDE");
  }
  Kokkos::View<double***, Kokkos::LayoutRight, MemorySpace> pc("perfex::psf::coeff", data.nparam(),
                                                               data.nfib, t.ncp);
  copy_to_device(exec, pc, data.coeff);
  t.pcoeff = pc;
}
}  // namespace detail

// Views and scalars a kernel needs (cheap to copy into functors): the model's device_type.
template <class MemorySpace>
struct GaussHermiteDevice : GaussHermiteTable<MemorySpace> {
  // Legendre coefficients of the Gauss-Hermite coefficients a_ij, contiguous in ij = i*(dy+1)+j
  // so that a spot's a_ij are one vector sweep per Legendre degree: [nfib][ncp][(dx+1)(dy+1)].
  Kokkos::View<const double***, Kokkos::LayoutRight, MemorySpace> ghcoeff;
  int nfib = 0, nparam = 0, dx = 0, dy = 0;
  bool tails = false;  // some TAILAMP coefficient is non-zero

  // The spot box: the trace rounded to a pixel, stepped back by the half-size.
  KOKKOS_INLINE_FUNCTION SpotCorner spot_corner(int f, double wave) const {
    const double X = this->trace_x(f, wave), Y = this->trace_y(f, wave);
    return {static_cast<int>(math::floor(X - this->hx + 0.5)),
            static_cast<int>(math::floor(Y - this->hy + 0.5))};
  }
  // specter's box: int(X − hx + 0.5), int(Y − hy + 0.5), Python's int truncating toward zero.
  KOKKOS_INLINE_FUNCTION SpotCorner specter_corner(int f, double wave) const {
    return {static_cast<int>(this->trace_x(f, wave) - this->hx + 0.5),
            static_cast<int>(this->trace_y(f, wave) - this->hy + 0.5)};
  }

  // Per-spot scalars at the start of a thread's scratch.
  enum Scalar {
    X,
    Y,
    C0,
    R0,
    SIGX,
    SIGY,
    DELTAX,
    DELTAY,
    TAILAMP,
    TAILCORE2,
    TAILXSCA,
    TAILYSCA,
    TAILEXP
  };
  static constexpr int kScalars = 13;

  // A thread's scratch, in words from its start: the spot's scalars, the Legendre values P_m,
  // the coefficients a_ij, per degree m the edge integrals E_m and pixel integrals B_m of both
  // axes (edges 0..nx in x, then 0..ny in y: B_m[e] = E_m[e+1] − E_m[e]), the edges' t, φ(t)
  // and two Hermite values, T, the spot and its column sums. (B_m[nx], between the axes, and
  // the E_m, B_m of an axis beyond its degree are computed and never used.)
  struct Layout {
    int nx, ny, nbx, nby, ne, nd;  // box, degrees + 1, edges of both axes, max degree + 1
    int P, a, E, B, t, phi, he, T, core, colsum, words;
    KOKKOS_INLINE_FUNCTION explicit Layout(const GaussHermiteDevice& d)
        : nx(2 * d.hx + 1),
          ny(2 * d.hy + 1),
          nbx(d.dx + 1),
          nby(d.dy + 1),
          ne(nx + ny + 2),
          nd(math::max(nbx, nby)),
          P(kScalars),
          a(P + d.ncp),
          E(a + nbx * nby),
          B(E + nd * ne),
          t(B + nd * ne),
          phi(t + ne),
          he(phi + ne),
          T(he + 2 * ne),
          core(T + nby * nx),
          colsum(core + ny * nx),
          words(colsum + nx) {}
  };
  KOKKOS_INLINE_FUNCTION int spot_scratch() const { return Layout(*this).words; }

  // Four weights and rows of a sum Σ_m w_m·row_m[q] from term m0 on, zero weights past count:
  // a vector sweep adds four terms at once, in order.
  struct FourTerms {
    double w[4];
    const double* row[4];
  };
  template <class Weight, class Row>
  KOKKOS_INLINE_FUNCTION static FourTerms four_terms(int m0, int count, const Weight& weight,
                                                     const Row& row) {
    FourTerms t;
    for (int u = 0; u < 4; ++u) {
      t.w[u] = m0 + u < count ? weight(m0 + u) : 0.0;
      t.row[u] = row(m0 + u < count ? m0 + u : m0);
    }
    return t;
  }

  // The arrays of a thread's scratch (Layout), each at its place.
  struct Scratch {
    double* s;
    double* P;
    double* a;  // a[i * nby + j]
    double* E;  // E[m * ne + e]
    double* B;  // B[m * ne + e]: Bx_i[q] at e = q, By_j[p] at e = nx + 1 + p
    double* t;
    double* phi;
    double* he;
    double* T;     // T[j * nx + q]
    double* core;  // core[p * nx + q]
    double* colsum;
    KOKKOS_INLINE_FUNCTION Scratch(const Layout& L, double* buf)
        : s(buf),
          P(buf + L.P),
          a(buf + L.a),
          E(buf + L.E),
          B(buf + L.B),
          t(buf + L.t),
          phi(buf + L.phi),
          he(buf + L.he),
          T(buf + L.T),
          core(buf + L.core),
          colsum(buf + L.colsum) {}
  };

  // One pixel-integrated, normalised spot by one thread, its vector lanes over the
  // coefficients, the edges and the spot's columns, in named steps: the spot's scalars (with
  // the Legendre values of the wavelength), the Gauss-Hermite coefficients a_ij, the 1-D edge
  // and pixel integrals in x and y (one erf and one exp per pixel edge), T = Σ_i a_ij·Bx_i,
  // then the clipped spot and its normalisation, each in the thread's scratch.
  template <class Member>
  KOKKOS_INLINE_FUNCTION void spot(const Member& member, int fib, double lam, double* buf,
                                   const SpotOutput& out) const {
    const Layout L(*this);
    const Scratch w(L, buf);
    spot_scalars(member, fib, lam, w, out);
    spot_coefficients(member, fib, L, w);
    edge_integrals(member, L, w);
    x_sums(member, L, w);
    spot_pixels(member, L, w);
    double total = 0.0;
    Kokkos::parallel_reduce(
        Kokkos::ThreadVectorRange(member, L.nx), [&](int q, double& sum) { sum += w.colsum[q]; },
        total);
    detail::write_normalised(member, L.ny * L.nx, w.core, total, out);
  }

  // The spot's scalars (trace, widths, corner, the trace's offsets from the centre pixel's
  // centre, the tail's parameters) and the Legendre values P_m of the wavelength; the corner
  // also to out.
  template <class Member>
  KOKKOS_INLINE_FUNCTION void spot_scalars(const Member& member, int fib, double lam,
                                           const Scratch& w, const SpotOutput& out) const {
    const GaussHermiteDevice& d = *this;
    double* s = w.s;
    Kokkos::single(Kokkos::PerThread(member), [&]() {
      const double x = d.trace_x(fib, lam), y = d.trace_y(fib, lam);
      detail::legendre_values(detail::reduced(lam, d.pw0, d.pscale), d.ncp, w.P);
      s[X] = x;
      s[Y] = y;
      s[SIGX] = d.param(d.row_sigx, fib, w.P);
      s[SIGY] = d.param(d.row_sigy, fib, w.P);
      const int c0 = static_cast<int>(math::floor(x - d.hx + 0.5));
      const int r0 = static_cast<int>(math::floor(y - d.hy + 0.5));
      *out.col0 = c0;
      *out.row0 = r0;
      s[C0] = c0;
      s[R0] = r0;
      // Offsets of the trace from the centre pixel's centre, in [−0.5, 0.5) (gs's form).
      const double ax = x + 0.5, ay = y + 0.5;
      s[DELTAX] = (ax - math::floor(ax)) - 0.5;
      s[DELTAY] = (ay - math::floor(ay)) - 0.5;
      s[TAILAMP] = d.tails ? d.param(d.row_tailamp, fib, w.P) : 0.0;
      if (s[TAILAMP] != 0.0) {
        const double tc = d.param(d.row_tailcore, fib, w.P);
        s[TAILCORE2] = tc * tc;
        s[TAILXSCA] = d.param(d.row_tailxsca, fib, w.P);
        s[TAILYSCA] = d.param(d.row_tailysca, fib, w.P);
        s[TAILEXP] = 1.0 + 0.5 * d.param(d.row_tailinde, fib, w.P);
      }
    });
  }

  // a_ij = Σ_m c_ijm P_m, summed over m in order as d.param does.
  template <class Member>
  KOKKOS_INLINE_FUNCTION void spot_coefficients(const Member& member, int fib, const Layout& L,
                                                const Scratch& w) const {
    const GaussHermiteDevice& d = *this;
    const int nab = L.nbx * L.nby;
    const double* ghc = &d.ghcoeff(fib, 0, 0);
    for (int m = 0; m < d.ncp; ++m) {
      const double pm = w.P[m];
      const double* c = ghc + m * nab;
      Kokkos::parallel_for(Kokkos::ThreadVectorRange(member, nab), [&](int ij) {
        const double v = c[ij] * pm;
        w.a[ij] = m == 0 ? v : w.a[ij] + v;
      });
    }
  }

  // Edge integrals: E_0 = ½·erf(t/√2) and E_m = −φ(t)·He_{m−1}(t) at t = (edge − trace)/σ,
  // one erf and one exp per edge; then degree by degree over all edges the Hermite
  // recurrence He_{m−1} = t·He_{m−2} − (m−2)·He_{m−3}; then every B_m in one sweep.
  template <class Member>
  KOKKOS_INLINE_FUNCTION void edge_integrals(const Member& member, const Layout& L,
                                             const Scratch& w) const {
    const GaussHermiteDevice& d = *this;
    const int nx = L.nx, ne = L.ne;
    const double* s = w.s;
    Kokkos::parallel_for(Kokkos::ThreadVectorRange(member, ne), [&](int e) {
      const bool inx = e <= nx;
      const int edge = inx ? e - d.hx : e - nx - 1 - d.hy;  // from the centre pixel's centre
      const double t =
          ((edge - 0.5) - (inx ? s[DELTAX] : s[DELTAY])) * (1.0 / (inx ? s[SIGX] : s[SIGY]));
      w.E[e] = 0.5 * math::erf(t / math::sqrt2);
      w.t[e] = t;
      w.phi[e] = math::inv_sqrt_2pi * math::exp(-0.5 * t * t);
    });
    for (int m = 1; m < L.nd; ++m) {
      Kokkos::parallel_for(Kokkos::ThreadVectorRange(member, ne), [&](int e) {
        double h;  // He_{m-1}(t_e)
        if (m == 1) {
          h = 1.0;
        } else if (m == 2) {
          h = w.t[e];
        } else {
          h = w.t[e] * w.he[ne + e] - (m - 2) * w.he[e];
        }
        if (m >= 2) {
          w.he[e] = m == 2 ? 1.0 : w.he[ne + e];
          w.he[ne + e] = h;
        }
        w.E[m * ne + e] = -w.phi[e] * h;
      });
    }
    Kokkos::parallel_for(Kokkos::ThreadVectorRange(member, L.nd * ne - 1),
                         [&](int i) { w.B[i] = w.E[i + 1] - w.E[i]; });
  }

  // T[j][q] = Σ_i a_ij · Bx_i[q], four i per vector sweep (zero-padded), summed in order.
  template <class Member>
  KOKKOS_INLINE_FUNCTION void x_sums(const Member& member, const Layout& L,
                                     const Scratch& w) const {
    const int nx = L.nx, nbx = L.nbx, nby = L.nby, ne = L.ne;
    for (int j = 0; j < nby; ++j) {
      double* t = w.T + j * nx;
      for (int i0 = 0; i0 < nbx; i0 += 4) {
        const FourTerms in = four_terms(
            i0, nbx, [&](int i) { return w.a[i * nby + j]; }, [&](int i) { return w.B + i * ne; });
        Kokkos::parallel_for(Kokkos::ThreadVectorRange(member, nx), [&](int q) {
          double v = i0 == 0 ? 0.0 : t[q];
          for (int u = 0; u < 4; ++u) v += in.w[u] * in.row[u][q];
          t[q] = v;
        });
      }
    }
  }

  // core[p][q] = Σ_j By_j[p] · T[j][q] (four j per sweep), plus the tail; clipped at 0.
  // colsum[q] sums the columns (running sums in a vector: no serial chain over the pixels).
  template <class Member>
  KOKKOS_INLINE_FUNCTION void spot_pixels(const Member& member, const Layout& L,
                                          const Scratch& w) const {
    const int nx = L.nx, nby = L.nby, ne = L.ne;
    const double* s = w.s;
    double* colsum = w.colsum;
    const bool tail = s[TAILAMP] != 0.0;
    for (int p = 0; p < L.ny; ++p) {
      double* c = w.core + p * nx;
      for (int j0 = 0; j0 < nby; j0 += 4) {
        const FourTerms in = four_terms(
            j0, nby, [&](int j) { return w.B[j * ne + nx + 1 + p]; },
            [&](int j) { return w.T + j * nx; });
        if (j0 + 4 >= nby && !tail) {  // last sweep: clip and sum as well
          Kokkos::parallel_for(Kokkos::ThreadVectorRange(member, nx), [&](int q) {
            double v = j0 == 0 ? 0.0 : c[q];
            for (int u = 0; u < 4; ++u) v += in.w[u] * in.row[u][q];
            v = v > 0.0 ? v : 0.0;
            c[q] = v;
            colsum[q] = p == 0 ? v : colsum[q] + v;
          });
        } else {
          Kokkos::parallel_for(Kokkos::ThreadVectorRange(member, nx), [&](int q) {
            double v = j0 == 0 ? 0.0 : c[q];
            for (int u = 0; u < 4; ++u) v += in.w[u] * in.row[u][q];
            c[q] = v;
          });
        }
      }
      if (tail) {
        Kokkos::parallel_for(Kokkos::ThreadVectorRange(member, nx), [&](int q) {
          const double ddx = ((s[C0] + q) - s[X]) * s[TAILXSCA];
          const double ddy = ((s[R0] + p) - s[Y]) * s[TAILYSCA];
          const double rho2 = ddx * ddx + ddy * ddy;
          double v = c[q] + s[TAILAMP] * rho2 / math::pow(s[TAILCORE2] + rho2, s[TAILEXP]);
          v = v > 0.0 ? v : 0.0;
          c[q] = v;
          colsum[q] = p == 0 ? v : colsum[q] + v;
        });
      }
    }
  }
};

}  // namespace psf
}  // namespace perfex
