#pragma once
// Device model of specex's GaussHermite PSF: Legendre traces and parameters, and
// pixel-integrated Gauss-Hermite spots (normalised) for many fibres × wavelengths in one kernel.
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
#include <perfex/detail/team_shape.hpp>
#include <perfex/error.hpp>
#include <perfex/psf/psf_data.hpp>

namespace perfex {
namespace psf {

namespace detail {

// Legendre polynomials P_0..P_{n-1}(u) by the forward recurrence.
KOKKOS_INLINE_FUNCTION void legendre_values(double u, int n, double* P) {
  P[0] = 1.0;
  if (n > 1) P[1] = u;
  for (int m = 2; m < n; ++m) P[m] = ((2 * m - 1) * u * P[m - 1] - (m - 1) * P[m - 2]) / m;
}

KOKKOS_INLINE_FUNCTION double reduced(double wave, double w0, double scale) {
  return (wave - w0) * scale - 1.0;
}

// Views and scalars a kernel needs (cheap to copy into functors).
template <class MemorySpace>
struct PsfDeviceData {
  Kokkos::View<const double**, Kokkos::LayoutRight, MemorySpace> xcoeff, ycoeff;  // [nfib][ncoeff]
  Kokkos::View<const double***, Kokkos::LayoutRight, MemorySpace> pcoeff;  // [nparam][nfib][L]
  // Legendre coefficients of the Gauss-Hermite coefficients a_ij, contiguous in ij = i*(dy+1)+j
  // so that a spot's a_ij are one vector sweep per Legendre degree: [nfib][ncp][(dx+1)(dy+1)].
  Kokkos::View<const double***, Kokkos::LayoutRight, MemorySpace> ghcoeff;
  int nfib = 0, nparam = 0, ncx = 0, ncy = 0, ncp = 0;
  int hx = 0, hy = 0, dx = 0, dy = 0;
  int row_sigx = -1, row_sigy = -1;
  int row_tailamp = -1, row_tailcore = -1, row_tailxsca = -1, row_tailysca = -1, row_tailinde = -1;
  bool tails = false;  // some TAILAMP coefficient is non-zero
  double xw0 = 0, xscale = 0, yw0 = 0, yscale = 0, pw0 = 0, pscale = 0;

  KOKKOS_INLINE_FUNCTION double trace_x(int f, double wave) const {
    return trace(xcoeff, ncx, f, reduced(wave, xw0, xscale));
  }
  KOKKOS_INLINE_FUNCTION double trace_y(int f, double wave) const {
    return trace(ycoeff, ncy, f, reduced(wave, yw0, yscale));
  }
  // Σ_m coeff(f, m) P_m(u) of a trace, P_m by the forward recurrence as it goes.
  template <class Coeffs>
  KOKKOS_INLINE_FUNCTION static double trace(const Coeffs& coeff, int nc, int f, double u) {
    double s = coeff(f, 0);
    if (nc > 1) s += coeff(f, 1) * u;
    double p0 = 1.0, p1 = u;
    for (int m = 2; m < nc; ++m) {
      const double p2 = ((2 * m - 1) * u * p1 - (m - 1) * p0) / m;
      s += coeff(f, m) * p2;
      p0 = p1;
      p1 = p2;
    }
    return s;
  }
  // y_f(λ) and dy/dλ.
  KOKKOS_INLINE_FUNCTION void trace_y_deriv(int f, double wave, double& y, double& dydw) const {
    const double u = reduced(wave, yw0, yscale);
    double p0 = 1.0, p1 = u, d1 = 1.0;
    y = ycoeff(f, 0);
    double dy_du = 0;
    if (ncy > 1) {
      y += ycoeff(f, 1) * u;
      dy_du += ycoeff(f, 1);
    }
    for (int m = 2; m < ncy; ++m) {
      const double p2 = ((2 * m - 1) * u * p1 - (m - 1) * p0) / m;
      const double d2 = m * p1 + u * d1;  // P'_m = m P_{m-1} + u P'_{m-1}
      y += ycoeff(f, m) * p2;
      dy_du += ycoeff(f, m) * d2;
      p0 = p1;
      p1 = p2;
      d1 = d2;
    }
    dydw = dy_du * yscale;
  }
  // Parameter row p of fibre f given P_m(u_PSF).
  KOKKOS_INLINE_FUNCTION double param(int p, int f, const double* P) const {
    double s = 0;
    for (int m = 0; m < ncp; ++m) s += pcoeff(p, f, m) * P[m];
    return s;
  }
};

}  // namespace detail

template <class MemorySpace>
class GaussHermitePsf {
 public:
  using memory_space = MemorySpace;
  using device_data = detail::PsfDeviceData<MemorySpace>;

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
    d_.ncx = data.xtrace.ncoeff;
    d_.ncy = data.ytrace.ncoeff;
    d_.ncp = data.ncoeff();
    d_.hx = data.hsizex;
    d_.hy = data.hsizey;
    d_.dx = data.ghdegx;
    d_.dy = data.ghdegy;
    d_.xw0 = data.xtrace.wavemin;
    d_.xscale = 2.0 / (data.xtrace.wavemax - data.xtrace.wavemin);
    d_.yw0 = data.ytrace.wavemin;
    d_.yscale = 2.0 / (data.ytrace.wavemax - data.ytrace.wavemin);
    d_.pw0 = data.wavemin;
    d_.pscale = 2.0 / (data.wavemax - data.wavemin);
    ywave0_ = data.ytrace.wavemin;
    ywave1_ = data.ytrace.wavemax;
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

    Kokkos::View<double**, Kokkos::LayoutRight, MemorySpace> xc("perfex::psf::xtrace", d_.nfib,
                                                                d_.ncx);
    Kokkos::View<double**, Kokkos::LayoutRight, MemorySpace> yc("perfex::psf::ytrace", d_.nfib,
                                                                d_.ncy);
    Kokkos::View<double***, Kokkos::LayoutRight, MemorySpace> pc("perfex::psf::coeff", d_.nparam,
                                                                 d_.nfib, d_.ncp);
    const int nij = (d_.dx + 1) * (d_.dy + 1);
    Kokkos::View<double***, Kokkos::LayoutRight, MemorySpace> gh("perfex::psf::ghcoeff", d_.nfib,
                                                                 d_.ncp, nij);
    copy_to(exec, xc, data.xtrace.coeff);
    copy_to(exec, yc, data.ytrace.coeff);
    copy_to(exec, pc, data.coeff);
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
    copy_to(exec, gh, ghc);
    d_.xcoeff = xc;
    d_.ycoeff = yc;
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
  // YTRACE domain (used as the initial bracket of the inverse trace).
  double trace_wavemin() const { return ywave0_; }
  double trace_wavemax() const { return ywave1_; }
  // Views and scalars for kernels.
  const device_data& data() const { return d_; }

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
  template <class ExecSpace, class V>
  static void copy_to(const ExecSpace& exec, const V& dst,
                      const std::vector<typename V::value_type>& src) {
    Kokkos::View<const typename V::value_type*, Kokkos::HostSpace,
                 Kokkos::MemoryTraits<Kokkos::Unmanaged>>
        s(src.data(), src.size());
    auto mirror = Kokkos::create_mirror_view(dst);
    typename V::value_type* m = mirror.data();
    for (std::size_t n = 0; n < src.size(); ++n) m[n] = s(n);
    Kokkos::deep_copy(exec, dst, mirror);
    exec.fence();  // the mirror goes out of scope
  }

  device_data d_;
  std::string source_;
  int npix_x_ = 0, npix_y_ = 0;
  double psferr_ = 0.01;
  double ywave0_ = 0, ywave1_ = 0;
};

// ---- kernels -------------------------------------------------------------------------------

template <class MemorySpace>
struct EvaluateTracesFunctor {
  detail::PsfDeviceData<MemorySpace> d;
  int f0;
  Kokkos::View<const double*, MemorySpace> wave;
  Kokkos::View<double**, MemorySpace> x, y;
  KOKKOS_INLINE_FUNCTION void operator()(int f, int k) const {
    x(f, k) = d.trace_x(f0 + f, wave(k));
    y(f, k) = d.trace_y(f0 + f, wave(k));
  }
};

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

// Pixel-integrated, normalised spots of fibres [f0, f0+nf) × wave[K]. A team per run of
// wavelengths of one fibre; each thread of the team evaluates one spot at a time in its own
// scratch, sized from the PSF's degrees and spot box: the Legendre values of the wavelength,
// the Gauss-Hermite coefficients a_ij, the 1-D edge integrals in x and y (one erf and one exp
// per pixel edge), T = Σ_i a_ij·Bx_i and the clipped spot. The thread's vector lanes run over
// the coefficients, the edges and the spot's columns, and write the normalised spot row by row
// (consecutive lanes, consecutive addresses).
template <class ExecSpace, class MemorySpace, class WaveView, class SpotView, class XCornerView,
          class YCornerView>
struct ComputeSpotsFunctor {
  using Member = typename Kokkos::TeamPolicy<ExecSpace>::member_type;
  using Scratch = Kokkos::View<double*, typename ExecSpace::scratch_memory_space,
                               Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
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

  detail::PsfDeviceData<MemorySpace> d;
  int f0 = 0, nwave = 0;
  int run = 1;              // wavelengths per team
  int scratch_level = 0;    // 0 when a team's scratch fits the fast level
  bool contiguous = false;  // each spot's rows are consecutive in spots (LayoutRight-like)
  WaveView wave;
  SpotView spots;
  XCornerView xcorner;
  YCornerView ycorner;

  // A thread's scratch, in words from its start: the spot's scalars, the Legendre values P_m,
  // the coefficients a_ij, per degree m the edge integrals E_m and pixel integrals B_m of both
  // axes (edges 0..nx in x, then 0..ny in y: B_m[e] = E_m[e+1] − E_m[e]), the edges' t, φ(t)
  // and two Hermite values, T, the spot and its column sums. (B_m[nx], between the axes, and
  // the E_m, B_m of an axis beyond its degree are computed and never used.)
  struct Layout {
    int nx, ny, nbx, nby, ne, nd;  // box, degrees + 1, edges of both axes, max degree + 1
    int P, a, E, B, t, phi, he, T, core, colsum, words;
    KOKKOS_INLINE_FUNCTION explicit Layout(const detail::PsfDeviceData<MemorySpace>& d)
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
  std::size_t thread_scratch_bytes() const { return Scratch::shmem_size(Layout(d).words); }
  int league_size(int nf) const { return nf * ((nwave + run - 1) / run); }

  KOKKOS_INLINE_FUNCTION void operator()(const Member& member) const {
    const int runs = (nwave + run - 1) / run;
    const int f = member.league_rank() / runs;
    const int k0 = (member.league_rank() - f * runs) * run;
    const Layout L(d);
    const Scratch buf(member.thread_scratch(scratch_level), L.words);
    Kokkos::parallel_for(Kokkos::TeamThreadRange(member, k0, math::min(nwave, k0 + run)),
                         [&](int k) { spot(member, L, buf.data(), f, k); });
  }

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

  KOKKOS_INLINE_FUNCTION void spot(const Member& member, const Layout& L, double* buf, int f,
                                   int k) const {
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
    const int fib = f0 + f;

    Kokkos::single(Kokkos::PerThread(member), [&]() {
      const double lam = wave(k);
      const double x = d.trace_x(fib, lam), y = d.trace_y(fib, lam);
      detail::legendre_values(detail::reduced(lam, d.pw0, d.pscale), d.ncp, P);
      s[X] = x;
      s[Y] = y;
      s[SIGX] = d.param(d.row_sigx, fib, P);
      s[SIGY] = d.param(d.row_sigy, fib, P);
      const int c0 = static_cast<int>(math::floor(x - d.hx + 0.5));
      const int r0 = static_cast<int>(math::floor(y - d.hy + 0.5));
      xcorner(f, k) = c0;
      ycorner(f, k) = r0;
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
    if (contiguous) {  // the spot's ny × nx values are consecutive in memory
      double* out = &spots(f, k, 0, 0);
      Kokkos::parallel_for(Kokkos::ThreadVectorRange(member, ny * nx),
                           [&](int i) { out[i] = core[i] * inv; });
    } else {
      for (int p = 0; p < ny; ++p) {
        Kokkos::parallel_for(Kokkos::ThreadVectorRange(member, nx),
                             [&](int q) { spots(f, k, p, q) = core[p * nx + q] * inv; });
      }
    }
  }
};

// Wavelength at which fibre f's trace reaches row y (Newton on y_f(λ), started from the
// linear interpolation over the YTRACE domain); NaN when it does not converge.
template <class MemorySpace>
struct InvertTraceFunctor {
  detail::PsfDeviceData<MemorySpace> d;
  int f0;
  double w0, w1;
  Kokkos::View<const double*, MemorySpace> rows;
  Kokkos::View<double**, MemorySpace> wave;

  KOKKOS_INLINE_FUNCTION static double solve(const detail::PsfDeviceData<MemorySpace>& d, int fib,
                                             double w0, double w1, double target) {
    const double y0 = d.trace_y(fib, w0), y1 = d.trace_y(fib, w1);
    double lam = (y1 != y0) ? w0 + (target - y0) * (w1 - w0) / (y1 - y0) : 0.5 * (w0 + w1);
    for (int it = 0; it < 100; ++it) {
      double y = 0, dydw = 0;
      d.trace_y_deriv(fib, lam, y, dydw);
      if (!(dydw != 0.0)) break;
      const double step = (y - target) / dydw;
      lam -= step;
      if (math::fabs(step) <= 1e-12 * math::fabs(lam) + 1e-13) return lam;
    }
    const double zero = 0.0;
    return zero / zero;  // NaN: no convergence
  }
  KOKKOS_INLINE_FUNCTION void operator()(int f, int k) const {
    wave(f, k) = solve(d, f0 + f, w0, w1, rows(k));
  }
};

template <class ExecSpace, class MemorySpace>
void evaluate_traces(const ExecSpace& exec, const GaussHermitePsf<MemorySpace>& psf, int f0, int nf,
                     Kokkos::View<const double*, MemorySpace> wave,
                     Kokkos::View<double**, MemorySpace> x, Kokkos::View<double**, MemorySpace> y) {
  psf.check_fibres(f0, nf, "perfex::psf::evaluate_traces");
  const int K = static_cast<int>(wave.extent(0));
  if (static_cast<int>(x.extent(0)) < nf || static_cast<int>(x.extent(1)) < K ||
      static_cast<int>(y.extent(0)) < nf || static_cast<int>(y.extent(1)) < K) {
    throw Error("perfex::psf::evaluate_traces: output views smaller than [nf][K]");
  }
  if (nf == 0 || K == 0) return;
  using Policy = Kokkos::MDRangePolicy<ExecSpace, Kokkos::Rank<2>, Kokkos::IndexType<int>>;
  Kokkos::parallel_for("perfex::psf::evaluate_traces", Policy(exec, {0, 0}, {nf, K}),
                       EvaluateTracesFunctor<MemorySpace>{psf.data(), f0, wave, x, y});
}

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
                       EvaluateParamsFunctor<MemorySpace>{psf.data(), f0, wave, params});
}

// Normalised spots S(f, k, p, q) and corners (first column, first row) for fibres
// [f0, f0+nf) × wave[K]; spots must be [≥ nf][≥ K][ny][nx], the corners [≥ nf][≥ K]. Any
// views (subviews too) of those ranks and value types that exec can access; the team shape
// is the backend's (perfex::detail::TeamKernel::spots) unless given.
template <class ExecSpace, class MemorySpace, class WaveView, class SpotView, class XCornerView,
          class YCornerView>
void compute_spots(
    const ExecSpace& exec, const GaussHermitePsf<MemorySpace>& psf, int f0, int nf,
    const WaveView& wave, const SpotView& spots, const XCornerView& xcorner,
    const YCornerView& ycorner,
    const ::perfex::detail::TeamShape& shape =
        ::perfex::detail::default_team_shape<ExecSpace>(::perfex::detail::TeamKernel::spots)) {
  static_assert(Kokkos::is_view<WaveView>::value && WaveView::rank == 1 &&
                    std::is_same<typename WaveView::non_const_value_type, double>::value,
                "compute_spots: wave must be a rank-1 view of double");
  static_assert(Kokkos::is_view<SpotView>::value && SpotView::rank == 4 &&
                    std::is_same<typename SpotView::value_type, double>::value,
                "compute_spots: spots must be a rank-4 view of (non-const) double");
  static_assert(Kokkos::is_view<XCornerView>::value && XCornerView::rank == 2 &&
                    std::is_same<typename XCornerView::value_type, int>::value &&
                    Kokkos::is_view<YCornerView>::value && YCornerView::rank == 2 &&
                    std::is_same<typename YCornerView::value_type, int>::value,
                "compute_spots: xcorner and ycorner must be rank-2 views of (non-const) int");
  static_assert(
      Kokkos::SpaceAccessibility<ExecSpace, MemorySpace>::accessible &&
          Kokkos::SpaceAccessibility<ExecSpace, typename WaveView::memory_space>::accessible &&
          Kokkos::SpaceAccessibility<ExecSpace, typename SpotView::memory_space>::accessible &&
          Kokkos::SpaceAccessibility<ExecSpace, typename XCornerView::memory_space>::accessible &&
          Kokkos::SpaceAccessibility<ExecSpace, typename YCornerView::memory_space>::accessible,
      "compute_spots: the PSF and every view must be accessible from the execution space");
  psf.check_fibres(f0, nf, "perfex::psf::compute_spots");
  const int K = static_cast<int>(wave.extent(0));
  if (static_cast<int>(spots.extent(0)) < nf || static_cast<int>(spots.extent(1)) < K ||
      static_cast<int>(spots.extent(2)) != psf.ny() ||
      static_cast<int>(spots.extent(3)) != psf.nx() || static_cast<int>(xcorner.extent(0)) < nf ||
      static_cast<int>(xcorner.extent(1)) < K || static_cast<int>(ycorner.extent(0)) < nf ||
      static_cast<int>(ycorner.extent(1)) < K) {
    throw Error("perfex::psf::compute_spots: output views must be [nf][K][" +
                std::to_string(psf.ny()) + "][" + std::to_string(psf.nx()) + "] and [nf][K]");
  }
  if (nf == 0 || K == 0) return;
  using Functor =
      ComputeSpotsFunctor<ExecSpace, MemorySpace, WaveView, SpotView, XCornerView, YCornerView>;
  Functor fn;
  fn.d = psf.data();
  fn.f0 = f0;
  fn.nwave = K;
  // A thread per spot; on host backends (one-thread teams) a team runs 8 spots in turn.
  fn.run = shape.team_size > 0 ? shape.team_size : 8;
  fn.wave = wave;
  fn.spots = spots;
  fn.xcorner = xcorner;
  fn.ycorner = ycorner;
  fn.contiguous = spots.stride(3) == 1 && spots.stride(2) == static_cast<std::size_t>(psf.nx());
  auto policy = ::perfex::detail::team_policy(exec, fn.league_size(nf), shape);
  const std::size_t per_thread = fn.thread_scratch_bytes();
  const std::size_t team_threads = shape.team_size > 0 ? shape.team_size : 1;
  fn.scratch_level =
      team_threads * per_thread <= static_cast<std::size_t>(decltype(policy)::scratch_size_max(0))
          ? 0
          : 1;
  policy.set_scratch_size(fn.scratch_level, Kokkos::PerThread(per_thread));
  Kokkos::parallel_for("perfex::psf::compute_spots", policy, fn);
}

// wave(f, k) = λ at which fibre f0+f's trace reaches row rows(k) (Newton; extrapolates).
template <class ExecSpace, class MemorySpace>
void invert_ytrace(const ExecSpace& exec, const GaussHermitePsf<MemorySpace>& psf, int f0, int nf,
                   Kokkos::View<const double*, MemorySpace> rows,
                   Kokkos::View<double**, MemorySpace> wave) {
  psf.check_fibres(f0, nf, "perfex::psf::invert_ytrace");
  const int K = static_cast<int>(rows.extent(0));
  if (static_cast<int>(wave.extent(0)) < nf || static_cast<int>(wave.extent(1)) < K) {
    throw Error("perfex::psf::invert_ytrace: output view smaller than [nf][K]");
  }
  if (nf == 0 || K == 0) return;
  using Policy = Kokkos::MDRangePolicy<ExecSpace, Kokkos::Rank<2>, Kokkos::IndexType<int>>;
  Kokkos::parallel_for("perfex::psf::invert_ytrace", Policy(exec, {0, 0}, {nf, K}),
                       InvertTraceFunctor<MemorySpace>{psf.data(), f0, psf.trace_wavemin(),
                                                       psf.trace_wavemax(), rows, wave});
}

// Per-fibre wavelength coverage of the CCD rows [−0.5, NPIX_Y − 0.5] (specter's wmin/wmax).
struct WavelengthCoverage {
  std::vector<double> wmin, wmax;           // [nf]
  double wmin_all = 0, wmax_all = 0;        // min of wmin, max of wmax (the union)
  double wmin_common = 0, wmax_common = 0;  // max of wmin, min of wmax (the intersection)
};

template <class ExecSpace, class MemorySpace>
WavelengthCoverage wavelength_coverage(const ExecSpace& exec,
                                       const GaussHermitePsf<MemorySpace>& psf, int f0, int nf) {
  Kokkos::View<double*, MemorySpace> rows("perfex::psf::coverage_rows", 2);
  auto hrows = Kokkos::create_mirror_view(rows);
  hrows(0) = -0.5;
  hrows(1) = psf.npix_y() - 0.5;
  Kokkos::deep_copy(exec, rows, hrows);
  Kokkos::View<double**, MemorySpace> wave("perfex::psf::coverage", nf, 2);
  invert_ytrace(exec, psf, f0, nf, Kokkos::View<const double*, MemorySpace>(rows), wave);
  auto h = Kokkos::create_mirror_view(wave);
  Kokkos::deep_copy(exec, h, wave);
  exec.fence();
  WavelengthCoverage c;
  for (int f = 0; f < nf; ++f) {
    c.wmin.push_back(h(f, 0));
    c.wmax.push_back(h(f, 1));
  }
  if (nf > 0) {
    c.wmin_all = c.wmin_common = c.wmin[0];
    c.wmax_all = c.wmax_common = c.wmax[0];
    for (int f = 1; f < nf; ++f) {
      c.wmin_all = std::min(c.wmin_all, c.wmin[f]);
      c.wmin_common = std::max(c.wmin_common, c.wmin[f]);
      c.wmax_all = std::max(c.wmax_all, c.wmax[f]);
      c.wmax_common = std::min(c.wmax_common, c.wmax[f]);
    }
  }
  return c;
}

}  // namespace psf
}  // namespace perfex
