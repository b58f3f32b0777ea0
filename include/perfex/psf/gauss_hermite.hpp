#pragma once
// Device model of specex's GaussHermite PSF (a model of the PSF concept, psf/model.hpp):
// Legendre traces and parameters, and pixel-integrated Gauss-Hermite spots (normalised).
//
// Conventions:
//  * Legendre series on two domains: traces on XTRACE/YTRACE WAVEMIN/WAVEMAX, table
//    parameters on the PSF HDU's; u = (λ − w0)·(2/(w1 − w0)) − 1, no clipping (extrapolation).
//  * Spot box: corner c0 = floor(X − hx + 0.5), r0 = floor(Y − hy + 0.5); 1-D bases are pixel
//    integrals (erf differences for degree 0, differences of φ·He_{m−1} for degree m); the 2-D
//    core is combined separably (T = a·Bx, then core = By·T); clipped at 0 and normalised to 1.
//  * Tails (specex's PSF tails) are added before clipping only when TAILAMP ≠ 0 at that (fibre, λ),
//    with specter's convention: ρ² = (Δx·TAILXSCA)² + (Δy·TAILYSCA)² (scales multiply),
//    tail = TAILAMP·ρ²/(TAILCORE² + ρ²)^(1 + TAILINDE/2), Δ = pixel centre − trace.
#include <Kokkos_Core.hpp>

#include <algorithm>
#include <string>
#include <type_traits>
#include <vector>

#include <perfex/detail/kokkos_compat.hpp>
#include <perfex/error.hpp>
#include <perfex/psf/legendre_traces.hpp>
#include <perfex/psf/model.hpp>
#include <perfex/psf/psf_data.hpp>

namespace perfex {
namespace psf {

namespace detail {

// Views and scalars a kernel needs (cheap to copy into functors): the model's device_type.
template <class MemorySpace>
struct PsfDeviceData : LegendreTraces<MemorySpace> {
  Kokkos::View<const double***, Kokkos::LayoutRight, MemorySpace> pcoeff;  // [nparam][nfib][L]
  // Legendre coefficients of the Gauss-Hermite coefficients a_ij, contiguous in ij = i*(dy+1)+j
  // so that a spot's a_ij are one vector sweep per Legendre degree: [nfib][ncp][(dx+1)(dy+1)].
  Kokkos::View<const double***, Kokkos::LayoutRight, MemorySpace> ghcoeff;
  int nfib = 0, nparam = 0, ncp = 0;
  int hx = 0, hy = 0, dx = 0, dy = 0;
  int row_sigx = -1, row_sigy = -1;
  int row_tailamp = -1, row_tailcore = -1, row_tailxsca = -1, row_tailysca = -1, row_tailinde = -1;
  bool tails = false;  // some TAILAMP coefficient is non-zero
  double pw0 = 0, pscale = 0;

  // Parameter row p of fibre f given P_m(u_PSF).
  KOKKOS_INLINE_FUNCTION double param(int p, int f, const double* P) const {
    double s = 0;
    for (int m = 0; m < ncp; ++m) s = math::mul_add(pcoeff(p, f, m), P[m], s);
    return s;
  }

  // The spot box: the trace rounded to a pixel, stepped back by the half-size.
  KOKKOS_INLINE_FUNCTION SpotCorner spot_corner(int f, double wave) const {
    const double X = this->trace_x(f, wave), Y = this->trace_y(f, wave);
    return {static_cast<int>(math::floor(X - hx + 0.5)),
            static_cast<int>(math::floor(Y - hy + 0.5))};
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
    KOKKOS_INLINE_FUNCTION explicit Layout(const PsfDeviceData& d)
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

  // One pixel-integrated, normalised spot by one thread, its vector lanes over the
  // coefficients, the edges and the spot's columns: the Legendre values of the wavelength,
  // the Gauss-Hermite coefficients a_ij, the 1-D edge integrals in x and y (one erf and one exp
  // per pixel edge), T = Σ_i a_ij·Bx_i and the clipped spot, each in the thread's scratch.
  template <class Member>
  KOKKOS_INLINE_FUNCTION void spot(const Member& member, int fib, double lam, double* buf,
                                   const SpotOutput& out) const {
    const PsfDeviceData& d = *this;
    const Layout L(d);
    const int nx = L.nx, ny = L.ny, nbx = L.nbx, nby = L.nby, ne = L.ne;
    double* s = buf;
    double* P = buf + L.P;
    double* a = buf + L.a;  // a[i * nby + j]
    double* E = buf + L.E;  // E[m * ne + e]
    double* B = buf + L.B;  // B[m * ne + e]: Bx_i[q] at e = q, By_j[p] at e = nx + 1 + p
    double* tt = buf + L.t;
    double* phi = buf + L.phi;
    double* he = buf + L.he;
    double* T = buf + L.T;        // T[j * nx + q]
    double* core = buf + L.core;  // core[p * nx + q]
    double* colsum = buf + L.colsum;

    Kokkos::single(Kokkos::PerThread(member), [&]() {
      const double x = d.trace_x(fib, lam), y = d.trace_y(fib, lam);
      legendre_values(reduced(lam, d.pw0, d.pscale), d.ncp, P);
      s[X] = x;
      s[Y] = y;
      s[SIGX] = d.param(d.row_sigx, fib, P);
      s[SIGY] = d.param(d.row_sigy, fib, P);
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
      s[TAILAMP] = d.tails ? d.param(d.row_tailamp, fib, P) : 0.0;
      if (s[TAILAMP] != 0.0) {
        const double tc = d.param(d.row_tailcore, fib, P);
        s[TAILCORE2] = tc * tc;
        s[TAILXSCA] = d.param(d.row_tailxsca, fib, P);
        s[TAILYSCA] = d.param(d.row_tailysca, fib, P);
        s[TAILEXP] = 1.0 + 0.5 * d.param(d.row_tailinde, fib, P);
      }
    });
    // a_ij = Σ_m c_ijm P_m, summed over m in order as d.param does.
    const double* ghc = &d.ghcoeff(fib, 0, 0);
    for (int m = 0; m < d.ncp; ++m) {
      const double pm = P[m];
      const double* c = ghc + m * nbx * nby;
      Kokkos::parallel_for(Kokkos::ThreadVectorRange(member, nbx * nby), [&](int ij) {
        const double v = c[ij] * pm;
        a[ij] = m == 0 ? v : a[ij] + v;
      });
    }
    // Edge integrals: E_0 = ½·erf(t/√2) and E_m = −φ(t)·He_{m−1}(t) at t = (edge − trace)/σ,
    // one erf and one exp per edge; then degree by degree over all edges the Hermite
    // recurrence He_{m−1} = t·He_{m−2} − (m−2)·He_{m−3}; then every B_m in one sweep.
    Kokkos::parallel_for(Kokkos::ThreadVectorRange(member, ne), [&](int e) {
      const bool inx = e <= nx;
      const int edge = inx ? e - d.hx : e - nx - 1 - d.hy;  // from the centre pixel's centre
      const double t =
          ((edge - 0.5) - (inx ? s[DELTAX] : s[DELTAY])) * (1.0 / (inx ? s[SIGX] : s[SIGY]));
      E[e] = 0.5 * math::erf(t / math::sqrt2);
      tt[e] = t;
      phi[e] = math::inv_sqrt_2pi * math::exp(-0.5 * t * t);
    });
    for (int m = 1; m < L.nd; ++m) {
      Kokkos::parallel_for(Kokkos::ThreadVectorRange(member, ne), [&](int e) {
        double h;  // He_{m-1}(t_e)
        if (m == 1) {
          h = 1.0;
        } else if (m == 2) {
          h = tt[e];
        } else {
          h = tt[e] * he[ne + e] - (m - 2) * he[e];
        }
        if (m >= 2) {
          he[e] = m == 2 ? 1.0 : he[ne + e];
          he[ne + e] = h;
        }
        E[m * ne + e] = -phi[e] * h;
      });
    }
    Kokkos::parallel_for(Kokkos::ThreadVectorRange(member, L.nd * ne - 1),
                         [&](int i) { B[i] = E[i + 1] - E[i]; });
    // T[j][q] = Σ_i a_ij · Bx_i[q], four i per vector sweep (zero-padded), summed in order.
    for (int j = 0; j < nby; ++j) {
      double* t = T + j * nx;
      for (int i0 = 0; i0 < nbx; i0 += 4) {
        const FourTerms in = four_terms(
            i0, nbx, [&](int i) { return a[i * nby + j]; }, [&](int i) { return B + i * ne; });
        Kokkos::parallel_for(Kokkos::ThreadVectorRange(member, nx), [&](int q) {
          double v = i0 == 0 ? 0.0 : t[q];
          for (int u = 0; u < 4; ++u) v += in.w[u] * in.row[u][q];
          t[q] = v;
        });
      }
    }
    // core[p][q] = Σ_j By_j[p] · T[j][q] (four j per sweep), plus the tail; clipped at 0.
    // colsum[q] sums the columns (running sums in a vector: no serial chain over the pixels).
    const bool tail = s[TAILAMP] != 0.0;
    for (int p = 0; p < ny; ++p) {
      double* c = core + p * nx;
      for (int j0 = 0; j0 < nby; j0 += 4) {
        const FourTerms in = four_terms(
            j0, nby, [&](int j) { return B[j * ne + nx + 1 + p]; },
            [&](int j) { return T + j * nx; });
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
    double total = 0.0;
    Kokkos::parallel_reduce(
        Kokkos::ThreadVectorRange(member, nx), [&](int q, double& sum) { sum += colsum[q]; },
        total);
    const double inv = total > 0.0 ? 1.0 / total : 1.0;
    double* values = out.values;
    Kokkos::parallel_for(Kokkos::ThreadVectorRange(member, ny * nx),
                         [&](int i) { values[i] = core[i] * inv; });
  }
};

}  // namespace detail

template <class MemorySpace>
class GaussHermitePsf {
 public:
  using memory_space = MemorySpace;
  using device_type = detail::PsfDeviceData<MemorySpace>;

  explicit GaussHermitePsf(const GaussHermitePsfData& data)
      : GaussHermitePsf(typename MemorySpace::execution_space(), data) {}

  // Copies the coefficients with exec (extract::upload_psf).
  template <class ExecSpace>
  GaussHermitePsf(const ExecSpace& exec, const GaussHermitePsfData& data)
      : source_(data.source), psferr_(data.psferr) {
    data.validate();
    npix_x_ = data.npix_x;
    npix_y_ = data.npix_y;
    d_.nfib = data.nfib;
    d_.nparam = data.nparam();
    d_.ncp = data.ncoeff();
    d_.hx = data.hsizex;
    d_.hy = data.hsizey;
    d_.dx = data.ghdegx;
    d_.dy = data.ghdegy;
    d_.pw0 = data.wavemin;
    d_.pscale = 2.0 / (data.wavemax - data.wavemin);
    wavemin_ = std::max(data.xtrace.wavemin, data.ytrace.wavemin);
    wavemax_ = std::min(data.xtrace.wavemax, data.ytrace.wavemax);
    d_.row_sigx = data.param_index("GHSIGX");
    d_.row_sigy = data.param_index("GHSIGY");
    d_.row_tailamp = data.find_param("TAILAMP");
    if (d_.row_tailamp >= 0) {
      d_.row_tailcore = data.param_index("TAILCORE");
      d_.row_tailxsca = data.param_index("TAILXSCA");
      d_.row_tailysca = data.param_index("TAILYSCA");
      d_.row_tailinde = data.param_index("TAILINDE");
      for (int f = 0; f < data.nfib; ++f) {
        for (int m = 0; m < data.ncoeff(); ++m)
          d_.tails = d_.tails || data.c(d_.row_tailamp, f, m) != 0.0;
      }
    }

    detail::upload_traces(exec, data.xtrace, data.ytrace, d_.nfib, d_);
    Kokkos::View<double***, Kokkos::LayoutRight, MemorySpace> pc("perfex::psf::coeff", d_.nparam,
                                                                 d_.nfib, d_.ncp);
    const int nij = (d_.dx + 1) * (d_.dy + 1);
    Kokkos::View<double***, Kokkos::LayoutRight, MemorySpace> gh("perfex::psf::ghcoeff", d_.nfib,
                                                                 d_.ncp, nij);
    detail::copy_to_device(exec, pc, data.coeff);
    std::vector<double> ghc(static_cast<std::size_t>(d_.nfib) * d_.ncp * nij);
    for (int i = 0; i <= d_.dx; ++i) {
      for (int j = 0; j <= d_.dy; ++j) {
        const int row = data.param_index("GH-" + std::to_string(i) + "-" + std::to_string(j));
        for (int f = 0; f < d_.nfib; ++f) {
          for (int m = 0; m < d_.ncp; ++m)
            ghc[(static_cast<std::size_t>(f) * d_.ncp + m) * nij + i * (d_.dy + 1) + j] =
                data.c(row, f, m);
        }
      }
    }
    detail::copy_to_device(exec, gh, ghc);
    d_.pcoeff = pc;
    d_.ghcoeff = gh;
  }

  int nfib() const { return d_.nfib; }
  int nparam() const { return d_.nparam; }
  int hsizex() const { return d_.hx; }
  int hsizey() const { return d_.hy; }
  int nx() const { return 2 * d_.hx + 1; }
  int ny() const { return 2 * d_.hy + 1; }
  int ghdegx() const { return d_.dx; }
  int ghdegy() const { return d_.dy; }
  int legdeg() const { return d_.ncp - 1; }
  int npix_x() const { return npix_x_; }
  int npix_y() const { return npix_y_; }
  double psferr() const { return psferr_; }
  bool has_tails() const { return d_.tails; }
  const std::string& source() const { return source_; }
  // The PSF concept: spot box, coverage (where both traces are defined), device data.
  int spot_rows() const { return ny(); }
  int spot_cols() const { return nx(); }
  double wavemin() const { return wavemin_; }
  double wavemax() const { return wavemax_; }
  const device_type& device() const { return d_; }

  // Throws unless [f0, f0+nf) is a valid fibre range.
  void check_fibres(int f0, int nf, const char* who) const {
    if (f0 < 0 || nf < 0 || f0 + nf > d_.nfib) {
      throw Error(std::string(who) + ": fibres [" + std::to_string(f0) + ", " +
                  std::to_string(f0 + nf) + ") outside the PSF's 0.." +
                  std::to_string(d_.nfib - 1) +
                  (source_.empty() ? std::string() : " of '" + source_ + "'"));
    }
  }

 private:
  device_type d_;
  std::string source_;
  int npix_x_ = 0, npix_y_ = 0;
  double psferr_ = 0.01;
  double wavemin_ = 0, wavemax_ = 0;
};

static_assert(require_psf_model<GaussHermitePsf<Kokkos::HostSpace>>(), "");

// ---- kernels -------------------------------------------------------------------------------

template <class MemorySpace>
struct EvaluateParamsFunctor {
  detail::PsfDeviceData<MemorySpace> d;
  int f0;
  Kokkos::View<const double*, MemorySpace> wave;
  Kokkos::View<double***, MemorySpace> params;
  KOKKOS_INLINE_FUNCTION void operator()(int f, int k) const {
    double P[kMaxLegendreCoeffs];
    detail::legendre_values(detail::reduced(wave(k), d.pw0, d.pscale), d.ncp, P);
    for (int p = 0; p < d.nparam; ++p) params(p, f, k) = d.param(p, f0 + f, P);
  }
};

template <class ExecSpace, class MemorySpace>
void evaluate_params(const ExecSpace& exec, const GaussHermitePsf<MemorySpace>& psf, int f0, int nf,
                     Kokkos::View<const double*, MemorySpace> wave,
                     Kokkos::View<double***, MemorySpace> params) {
  psf.check_fibres(f0, nf, "perfex::psf::evaluate_params");
  const int K = static_cast<int>(wave.extent(0));
  if (static_cast<int>(params.extent(0)) < psf.nparam() ||
      static_cast<int>(params.extent(1)) < nf || static_cast<int>(params.extent(2)) < K) {
    throw Error("perfex::psf::evaluate_params: output view smaller than [nparam][nf][K]");
  }
  if (nf == 0 || K == 0) return;
  using Policy = Kokkos::MDRangePolicy<ExecSpace, Kokkos::Rank<2>, Kokkos::IndexType<int>>;
  Kokkos::parallel_for("perfex::psf::evaluate_params", Policy(exec, {0, 0}, {nf, K}),
                       EvaluateParamsFunctor<MemorySpace>{psf.device(), f0, wave, params});
}

}  // namespace psf
}  // namespace perfex
