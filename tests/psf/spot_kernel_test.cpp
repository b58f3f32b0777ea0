// The spot kernel against a straightforward host evaluation (pixel integrals of the
// Gauss-Hermite functions by Gauss-Legendre quadrature) for spot boxes and degrees other than
// DESI's, its results for every team shape, and its view types (subviews, other layouts).
#include "perfex_test.hpp"
#include "psf/psf_test_util.hpp"

#include <cmath>

#include <perfex/psf/gauss_hermite/model.hpp>
#include <perfex/psf/synthetic.hpp>

using perfex::psf::GaussHermitePsf;
using perfex::psf::SyntheticPsfOptions;
using perfex_psf_test::evaluate_all;
using perfex_psf_test::Mem;

namespace {

// Legendre series Σ c_m P_m(u) on [w0, w1], P_m by the three-term recurrence.
double series(const double* c, int n, double wave, double w0, double w1) {
  const double u = (wave - w0) * (2.0 / (w1 - w0)) - 1.0;
  double p0 = 1.0, p1 = u, s = c[0] + (n > 1 ? c[1] * u : 0.0);
  for (int m = 2; m < n; ++m) {
    const double p2 = ((2 * m - 1) * u * p1 - (m - 1) * p0) / m;
    s += c[m] * p2;
    p0 = p1;
    p1 = p2;
  }
  return s;
}

// 20-point Gauss-Legendre nodes and weights on [-1, 1] (Newton on P_20).
struct GaussLegendre {
  static constexpr int n = 20;
  double x[n], w[n];
  GaussLegendre() {
    for (int i = 0; i < n; ++i) {
      double t = std::cos(M_PI * (i + 0.75) / (n + 0.5)), dp = 1;
      for (int it = 0; it < 100; ++it) {
        double p0 = 1, p1 = t;
        for (int m = 2; m <= n; ++m) {
          const double p2 = ((2 * m - 1) * t * p1 - (m - 1) * p0) / m;
          p0 = p1;
          p1 = p2;
        }
        dp = n * (t * p1 - p0) / (t * t - 1);
        const double step = p1 / dp;
        t -= step;
        if (std::abs(step) < 1e-16) break;
      }
      x[i] = t;
      w[i] = 2 / ((1 - t * t) * dp * dp);
    }
  }
  // ∫_a^b f
  template <class F>
  double integrate(double a, double b, const F& f) const {
    double s = 0;
    for (int i = 0; i < n; ++i) s += w[i] * f(0.5 * (a + b) + 0.5 * (b - a) * x[i]);
    return 0.5 * (b - a) * s;
  }
};

// ∫ over each pixel of φ(t)·He_m(t), t = (x − centre)/σ, for pixels first..first+n-1: [m][q].
std::vector<double> pixel_integrals(int first, int n, int deg, double centre, double sigma) {
  static const GaussLegendre gl;
  std::vector<double> B(static_cast<std::size_t>(deg + 1) * n);
  for (int q = 0; q < n; ++q) {
    const double a = (first + q - 0.5 - centre) / sigma, b = (first + q + 0.5 - centre) / sigma;
    for (int m = 0; m <= deg; ++m) {
      B[m * n + q] = gl.integrate(a, b, [&](double t) {
        double h0 = 1, h1 = t;  // He_0, He_1, then He_k+1 = t He_k − k He_k−1
        for (int k = 1; k < m; ++k) {
          const double h2 = t * h1 - k * h0;
          h0 = h1;
          h1 = h2;
        }
        return std::exp(-0.5 * t * t) / std::sqrt(2 * M_PI) * (m == 0 ? 1.0 : h1);
      });
    }
  }
  return B;
}

// Spot of fibre f at wave: Σ_ij a_ij Bx_i By_j (+ tail), clipped at 0, normalised; corners.
std::vector<double> reference_spot(const perfex::psf::GaussHermitePsfData& d, int f, double wave,
                                   int& c0, int& r0) {
  auto param = [&](const std::string& name) {
    return series(
        &d.coeff[(static_cast<std::size_t>(d.param_index(name)) * d.nfib + f) * d.ncoeff()],
        d.ncoeff(), wave, d.wavemin, d.wavemax);
  };
  const double X = series(&d.xtrace.coeff[static_cast<std::size_t>(f) * d.xtrace.ncoeff],
                          d.xtrace.ncoeff, wave, d.xtrace.wavemin, d.xtrace.wavemax);
  const double Y = series(&d.ytrace.coeff[static_cast<std::size_t>(f) * d.ytrace.ncoeff],
                          d.ytrace.ncoeff, wave, d.ytrace.wavemin, d.ytrace.wavemax);
  const int nx = 2 * d.hsizex + 1, ny = 2 * d.hsizey + 1;
  c0 = static_cast<int>(std::floor(X - d.hsizex + 0.5));
  r0 = static_cast<int>(std::floor(Y - d.hsizey + 0.5));
  const auto Bx = pixel_integrals(c0, nx, d.ghdegx, X, param("GHSIGX"));
  const auto By = pixel_integrals(r0, ny, d.ghdegy, Y, param("GHSIGY"));
  const double tamp = param("TAILAMP");
  std::vector<double> a(static_cast<std::size_t>(d.ghdegx + 1) * (d.ghdegy + 1));
  for (int i = 0; i <= d.ghdegx; ++i)
    for (int j = 0; j <= d.ghdegy; ++j)
      a[i * (d.ghdegy + 1) + j] = param("GH-" + std::to_string(i) + "-" + std::to_string(j));
  std::vector<double> s(static_cast<std::size_t>(ny) * nx);
  double total = 0;
  for (int p = 0; p < ny; ++p)
    for (int q = 0; q < nx; ++q) {
      double v = 0;
      for (int i = 0; i <= d.ghdegx; ++i)
        for (int j = 0; j <= d.ghdegy; ++j)
          v += a[i * (d.ghdegy + 1) + j] * Bx[i * nx + q] * By[j * ny + p];
      if (tamp != 0) {
        const double dx = (c0 + q - X) * param("TAILXSCA"), dy = (r0 + p - Y) * param("TAILYSCA");
        const double rho2 = dx * dx + dy * dy, core = param("TAILCORE");
        v += tamp * rho2 / std::pow(core * core + rho2, 1 + 0.5 * param("TAILINDE"));
      }
      s[p * nx + q] = std::max(v, 0.0);
      total += s[p * nx + q];
    }
  for (double& v : s) v /= total;
  return s;
}

// Spot boxes and degrees the kernel must handle besides DESI's 17 × 11, degree 6.
std::vector<SyntheticPsfOptions> psf_variants() {
  std::vector<SyntheticPsfOptions> v;
  auto add = [&](int hx, int hy, int dx, int dy, double tail) {
    SyntheticPsfOptions o;
    o.nfib = 6;
    o.hsizex = hx;
    o.hsizey = hy;
    o.ghdegx = dx;
    o.ghdegy = dy;
    o.tailamp = tail;
    v.push_back(o);
  };
  add(8, 5, 6, 6, 0.0);      // DESI
  add(6, 9, 2, 8, 0.0);      // tall box, low x and high y degree
  add(10, 3, 8, 2, 0.02);    // wide box, tails
  add(2, 2, 0, 1, 0.0);      // small box, degree 0 in x
  add(20, 20, 10, 10, 0.0);  // the largest supported: scratch beyond the fast level
  return v;
}

}  // namespace

PERFEX_BACKEND_TEST_CASE("psf: spots of other boxes and degrees equal a direct host evaluation",
                         "[psf]") {
  PERFEX_ONLY_SELECTED_BACKEND();
  const std::vector<double> waves{5600.25, 6281.0, 7377.7};
  for (const SyntheticPsfOptions& o : psf_variants()) {
    CAPTURE(o.hsizex, o.hsizey, o.ghdegx, o.ghdegy, o.tailamp);
    const auto data = perfex::psf::make_synthetic_psf(o);
    GaussHermitePsf<Mem<TestType>> psf(data);
    const auto r = evaluate_all(TestType(), psf, 2, 3, waves);
    double worst = 0;
    long corners_off = 0;
    for (int f = 0; f < 3; ++f)
      for (int k = 0; k < r.K; ++k) {
        int c0 = 0, r0 = 0;
        const auto ref = reference_spot(data, 2 + f, waves[k], c0, r0);
        corners_off += (r.xc[f * r.K + k] != c0) + (r.yc[f * r.K + k] != r0);
        for (int p = 0; p < r.ny; ++p)
          for (int q = 0; q < r.nx; ++q)
            worst = std::max(worst, std::abs(r.spot(f, k, p, q) - ref[p * r.nx + q]));
      }
    INFO("max |spot - reference| = " << worst);
    CHECK(corners_off == 0);
    CHECK(worst < 1e-12);
  }
}

PERFEX_BACKEND_TEST_CASE("psf: spots are the same for every team shape", "[psf]") {
  PERFEX_ONLY_SELECTED_BACKEND();
  using M = Mem<TestType>;
  using Spots = Kokkos::View<double****, Kokkos::LayoutRight, M>;
  using Corners = Kokkos::View<int**, M>;
  std::vector<double> hw;
  for (int k = 0; k < 37; ++k) hw.push_back(5560.0 + 61.3 * k);  // not a multiple of a team's run
  const auto wave = perfex_psf_test::device_waves<TestType>(hw);
  const int K = static_cast<int>(hw.size()), nf = 3;
  for (const SyntheticPsfOptions& o : psf_variants()) {
    CAPTURE(o.hsizex, o.hsizey, o.ghdegx, o.ghdegy);
    GaussHermitePsf<M> psf(perfex::psf::make_synthetic_psf(o));
    auto run = [&](const perfex::detail::TeamShape& shape) {
      Spots s("spots", nf, K, psf.ny(), psf.nx());
      Corners xc("xc", nf, K), yc("yc", nf, K);
      perfex::psf::compute_spots(TestType(), psf, 1, nf, wave, s, xc, yc, shape);
      auto hs = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), s);
      auto hx = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), xc);
      auto hy = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), yc);
      std::vector<double> v(hs.data(), hs.data() + hs.size());
      for (int f = 0; f < nf; ++f)
        for (int k = 0; k < K; ++k) v.insert(v.end(), {double(hx(f, k)), double(hy(f, k))});
      return v;
    };
    const auto one = run({1, 1});
    using Functor =
        perfex::psf::ComputeSpotsFunctor<TestType, typename GaussHermitePsf<M>::device_type,
                                         decltype(wave), Spots, Corners, Corners>;
    const auto shapes = perfex_psf_test::multi_thread_shapes<TestType>(Functor{});
    REQUIRE(!shapes.empty());
    for (const auto& shape : shapes) {
      CAPTURE(shape.team_size, shape.vector_length);
      const auto v = run(shape);
      REQUIRE(v.size() == one.size());
      double worst = 0;
      for (std::size_t i = 0; i < v.size(); ++i)
        worst = std::max(worst, std::abs(v[i] - one[i]) / (std::abs(one[i]) + 1e-3));
      CHECK(worst <= 1e-12);
    }
  }
}

PERFEX_BACKEND_TEST_CASE("psf: spots into subviews and other layouts", "[psf]") {
  PERFEX_ONLY_SELECTED_BACKEND();
  using M = Mem<TestType>;
  SyntheticPsfOptions o;
  o.nfib = 8;
  GaussHermitePsf<M> psf(perfex::psf::make_synthetic_psf(o));
  const int nf = 3, K = 11, ny = psf.ny(), nx = psf.nx();
  std::vector<double> hw;
  for (int k = 0; k < K + 4; ++k) hw.push_back(5800.0 + 97.0 * k);
  const auto allwaves = perfex_psf_test::device_waves<TestType>(hw);
  const auto wave = Kokkos::subview(allwaves, Kokkos::make_pair(2, 2 + K));
  const auto ref =
      evaluate_all(TestType(), psf, 4, nf, std::vector<double>(hw.begin() + 2, hw.begin() + 2 + K));

  // A block of a larger spot array, rows padded (not one contiguous block per spot), and
  // corners in a block of larger arrays.
  Kokkos::View<double****, Kokkos::LayoutRight, M> big("big", nf + 2, K + 3, ny, nx + 5);
  Kokkos::View<int**, M> bigx("bigx", nf + 1, K + 2), bigy("bigy", nf + 1, K + 2);
  const auto spots = Kokkos::subview(big, Kokkos::make_pair(1, 1 + nf), Kokkos::make_pair(3, 3 + K),
                                     Kokkos::ALL, Kokkos::make_pair(0, nx));
  const auto xc = Kokkos::subview(bigx, Kokkos::make_pair(1, 1 + nf), Kokkos::make_pair(2, 2 + K));
  const auto yc = Kokkos::subview(bigy, Kokkos::make_pair(1, 1 + nf), Kokkos::make_pair(2, 2 + K));
  perfex::psf::compute_spots(TestType(), psf, 4, nf, wave, spots, xc, yc);
  // LayoutLeft spots.
  Kokkos::View<double****, Kokkos::LayoutLeft, M> left("left", nf, K, ny, nx);
  Kokkos::View<int**, Kokkos::LayoutLeft, M> lx("lx", nf, K), ly("ly", nf, K);
  perfex::psf::compute_spots(TestType(), psf, 4, nf, wave, left, lx, ly);

  auto hs = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), big);
  auto hl = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), left);
  auto hx = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), bigx);
  auto hlx = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), lx);
  auto hly = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), ly);
  double worst = 0;
  long corners_off = 0, untouched = 0;
  for (int f = 0; f < nf; ++f)
    for (int k = 0; k < K; ++k) {
      corners_off += (hx(1 + f, 2 + k) != ref.xc[f * K + k]) + (hlx(f, k) != ref.xc[f * K + k]) +
                     (hly(f, k) != ref.yc[f * K + k]);
      for (int p = 0; p < ny; ++p) {
        for (int q = 0; q < nx; ++q) {
          worst = std::max({worst, std::abs(hs(1 + f, 3 + k, p, q) - ref.spot(f, k, p, q)),
                            std::abs(hl(f, k, p, q) - ref.spot(f, k, p, q))});
        }
        for (int q = nx; q < nx + 5; ++q) untouched += hs(1 + f, 3 + k, p, q) == 0.0;
      }
    }
  CHECK(worst == 0.0);
  CHECK(corners_off == 0);
  CHECK(untouched == nf * K * ny * 5);  // the padding columns are left alone
}
