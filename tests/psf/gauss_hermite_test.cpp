// Self-contained tests of the device PSF model (synthetic PSFs, no reference data).
#include "perfex_test.hpp"
#include "psf/psf_test_util.hpp"

#include <cmath>

#include <perfex/psf/gauss_hermite/model.hpp>
#include <perfex/psf/synthetic.hpp>

using perfex::psf::GaussHermitePsf;
using perfex::psf::make_synthetic_psf;
using perfex::psf::SyntheticPsfOptions;
using perfex_psf_test::evaluate_all;
using perfex_psf_test::Mem;

namespace {

std::vector<double> test_waves() {
  return {5533.0, 5543.0, 5600.25, 6000.0, 6500.4, 7000.0, 7620.0, 7826.0, 7837.0};
}

// Host Legendre series (Clenshaw) on [w0, w1].
double host_series(const double* c, int n, double wave, double w0, double w1) {
  const double u = (wave - w0) * (2.0 / (w1 - w0)) - 1.0;
  double b1 = 0, b2 = 0;
  for (int m = n - 1; m >= 1; --m) {
    const double b0 = c[m] + (2.0 * m + 1) / (m + 1) * u * b1 - (m + 1.0) / (m + 2) * b2;
    b2 = b1;
    b1 = b0;
  }
  return c[0] + u * b1 - 0.5 * b2;
}

}  // namespace

PERFEX_BACKEND_TEST_CASE("psf: traces and parameters use their own Legendre domains", "[psf]") {
  PERFEX_ONLY_SELECTED_BACKEND();
  SyntheticPsfOptions o;
  o.nfib = 30;
  auto data = make_synthetic_psf(o);
  GaussHermitePsf<Mem<TestType>> psf(data);
  const auto w = test_waves();
  auto r = evaluate_all(TestType(), psf, 3, 5, w);
  double maxdx = 0, maxdp = 0;
  for (int f = 0; f < 5; ++f) {
    const int fib = 3 + f;
    for (int k = 0; k < r.K; ++k) {
      const double x = host_series(&data.xtrace.coeff[fib * data.xtrace.ncoeff], data.xtrace.ncoeff,
                                   w[k], data.xtrace.wavemin, data.xtrace.wavemax);
      const double y = host_series(&data.ytrace.coeff[fib * data.ytrace.ncoeff], data.ytrace.ncoeff,
                                   w[k], data.ytrace.wavemin, data.ytrace.wavemax);
      maxdx = std::max({maxdx, std::abs(x - r.x[f * r.K + k]), std::abs(y - r.y[f * r.K + k])});
      for (int p = 0; p < data.nparam(); ++p) {
        const double v = host_series(
            &data.coeff[(static_cast<std::size_t>(p) * data.nfib + fib) * data.ncoeff()],
            data.ncoeff(), w[k], data.wavemin, data.wavemax);
        maxdp = std::max(maxdp, std::abs(v - r.param(p, f, k)));
      }
    }
  }
  CHECK(maxdx < 1e-9);
  CHECK(maxdp < 1e-14);
  // Evaluating y with the PSF domain instead would differ visibly: the domains are distinct.
  const double y_wrong = host_series(&data.ytrace.coeff[3 * data.ytrace.ncoeff], data.ytrace.ncoeff,
                                     7620.0, data.wavemin, data.wavemax);
  CHECK(std::abs(y_wrong - r.y[6]) > 0.5);
}

PERFEX_BACKEND_TEST_CASE("psf: degree-0 spot is the product of erf differences", "[psf]") {
  PERFEX_ONLY_SELECTED_BACKEND();
  SyntheticPsfOptions o;
  o.nfib = 3;
  o.ghdegx = 0;
  o.ghdegy = 0;
  auto data = make_synthetic_psf(o);
  GaussHermitePsf<Mem<TestType>> psf(data);
  const auto w = test_waves();
  auto r = evaluate_all(TestType(), psf, 0, 3, w);
  const int sx = data.param_index("GHSIGX"), sy = data.param_index("GHSIGY");
  double maxd = 0;
  for (int f = 0; f < 3; ++f) {
    for (int k = 0; k < r.K; ++k) {
      const double X = r.x[f * r.K + k], Y = r.y[f * r.K + k];
      const int c0 = static_cast<int>(std::floor(X - 8 + 0.5)),
                r0 = static_cast<int>(std::floor(Y - 5 + 0.5));
      REQUIRE(r.xc[f * r.K + k] == c0);
      REQUIRE(r.yc[f * r.K + k] == r0);
      const double sigx = r.param(sx, f, k), sigy = r.param(sy, f, k);
      auto mass = [](double lo, double hi, double c, double s) {
        return 0.5 * (std::erf((hi - c) / (s * std::sqrt(2.0))) -
                      std::erf((lo - c) / (s * std::sqrt(2.0))));
      };
      double sum = 0;
      std::vector<double> e(11 * 17);
      for (int p = 0; p < 11; ++p) {
        for (int q = 0; q < 17; ++q) {
          e[p * 17 + q] =
              mass(c0 + q - 0.5, c0 + q + 0.5, X, sigx) * mass(r0 + p - 0.5, r0 + p + 0.5, Y, sigy);
          sum += e[p * 17 + q];
        }
      }
      for (int p = 0; p < 11; ++p)
        for (int q = 0; q < 17; ++q)
          maxd = std::max(maxd, std::abs(e[p * 17 + q] / sum - r.spot(f, k, p, q)));
    }
  }
  CHECK(maxd < 1e-12);
}

PERFEX_BACKEND_TEST_CASE("psf: spots are non-negative, sum to 1, centred on symmetric traces",
                         "[psf]") {
  PERFEX_ONLY_SELECTED_BACKEND();
  SyntheticPsfOptions o;
  o.nfib = 50;
  std::vector<double> w;
  for (int k = 0; k < 40; ++k) w.push_back(5550.0 + 57.3 * k);
  {
    GaussHermitePsf<Mem<TestType>> psf(make_synthetic_psf(o));
    auto r = evaluate_all(TestType(), psf, 20, 10, w);
    double worst = 0, minv = 1;
    for (int f = 0; f < r.nf; ++f) {
      for (int k = 0; k < r.K; ++k) {
        double s = 0;
        for (int p = 0; p < r.ny; ++p)
          for (int q = 0; q < r.nx; ++q) {
            s += r.spot(f, k, p, q);
            minv = std::min(minv, r.spot(f, k, p, q));
          }
        worst = std::max(worst, std::abs(s - 1.0));
      }
    }
    CHECK(worst < 1e-12);
    CHECK(minv >= 0.0);
  }
  o.gh_amplitude = 0.0;  // only GH-0-0: a symmetric Gaussian
  GaussHermitePsf<Mem<TestType>> psf(make_synthetic_psf(o));
  auto r = evaluate_all(TestType(), psf, 0, 50, w);
  double worst = 0;
  for (int f = 0; f < r.nf; ++f) {
    for (int k = 0; k < r.K; ++k) {
      double cx = 0, cy = 0;
      for (int p = 0; p < r.ny; ++p)
        for (int q = 0; q < r.nx; ++q) {
          cx += r.spot(f, k, p, q) * (r.xc[f * r.K + k] + q);
          cy += r.spot(f, k, p, q) * (r.yc[f * r.K + k] + p);
        }
      worst = std::max({worst, std::abs(cx - r.x[f * r.K + k]), std::abs(cy - r.y[f * r.K + k])});
    }
  }
  CHECK(worst < 0.1);
}

PERFEX_BACKEND_TEST_CASE("psf: tails follow specter's convention when TAILAMP != 0", "[psf]") {
  PERFEX_ONLY_SELECTED_BACKEND();
  SyntheticPsfOptions o;
  o.nfib = 2;
  o.ghdegx = o.ghdegy = 0;
  o.tailamp = 0.02;
  auto data = make_synthetic_psf(o);
  const int core_row = data.param_index("TAILCORE"), xs = data.param_index("TAILXSCA");
  const int ys = data.param_index("TAILYSCA"), ind = data.param_index("TAILINDE");
  for (int f = 0; f < 2; ++f) {
    data.c(core_row, f, 0) = 1.3;
    data.c(xs, f, 0) = 0.8;
    data.c(ys, f, 0) = 1.2;
    data.c(ind, f, 0) = 2.5;
  }
  GaussHermitePsf<Mem<TestType>> psf(data);
  CHECK(psf.has_tails());
  const std::vector<double> w{6000.0, 7000.0};
  auto r = evaluate_all(TestType(), psf, 0, 2, w);
  const int sx = data.param_index("GHSIGX"), sy = data.param_index("GHSIGY");
  double maxd = 0;
  for (int f = 0; f < 2; ++f) {
    for (int k = 0; k < 2; ++k) {
      const double X = r.x[f * 2 + k], Y = r.y[f * 2 + k];
      const int c0 = r.xc[f * 2 + k], r0 = r.yc[f * 2 + k];
      auto mass = [](double lo, double hi, double c, double s) {
        return 0.5 * (std::erf((hi - c) / (s * std::sqrt(2.0))) -
                      std::erf((lo - c) / (s * std::sqrt(2.0))));
      };
      std::vector<double> e(11 * 17);
      double sum = 0;
      for (int p = 0; p < 11; ++p)
        for (int q = 0; q < 17; ++q) {
          const double dx = (c0 + q - X) * 0.8, dy = (r0 + p - Y) * 1.2, rho2 = dx * dx + dy * dy;
          double v = mass(c0 + q - 0.5, c0 + q + 0.5, X, r.param(sx, f, k)) *
                     mass(r0 + p - 0.5, r0 + p + 0.5, Y, r.param(sy, f, k));
          v += 0.02 * rho2 / std::pow(1.3 * 1.3 + rho2, 1.0 + 2.5 / 2);
          e[p * 17 + q] = std::max(v, 0.0);
          sum += e[p * 17 + q];
        }
      for (int p = 0; p < 11; ++p)
        for (int q = 0; q < 17; ++q)
          maxd = std::max(maxd, std::abs(e[p * 17 + q] / sum - r.spot(f, k, p, q)));
    }
  }
  CHECK(maxd < 1e-12);
}

PERFEX_BACKEND_TEST_CASE("psf: inverse trace and CCD coverage", "[psf]") {
  PERFEX_ONLY_SELECTED_BACKEND();
  using M = Mem<TestType>;
  SyntheticPsfOptions o;
  o.nfib = 40;
  GaussHermitePsf<M> psf(make_synthetic_psf(o));
  std::vector<double> rows{-0.5, 0.0, 1000.25, 2500.0, 4127.5, 4300.0};
  auto drows = perfex_psf_test::device_waves<TestType>(rows);
  Kokkos::View<double**, M> wave("wave", 40, rows.size());
  perfex::psf::invert_ytrace(TestType(), psf, 0, 40, drows, wave);
  auto hw = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), wave);
  std::vector<double> flat;
  for (int f = 0; f < 40; ++f)
    for (std::size_t k = 0; k < rows.size(); ++k) flat.push_back(hw(f, k));
  // y(λ(y)) == y for each fibre: evaluate the traces at the recovered wavelengths.
  double worst = 0;
  for (int f = 0; f < 40; ++f) {
    std::vector<double> wf(flat.begin() + f * rows.size(), flat.begin() + (f + 1) * rows.size());
    auto r = evaluate_all(TestType(), psf, f, 1, wf);
    for (std::size_t k = 0; k < rows.size(); ++k)
      worst = std::max(worst, std::abs(r.y[k] - rows[k]));
  }
  CHECK(worst < 1e-8);
  auto cov = perfex::psf::wavelength_coverage(TestType(), psf, 0, 40);
  REQUIRE(cov.wmin.size() == 40);
  CHECK(cov.wmin[0] == Approx(flat[0]).epsilon(1e-14));
  CHECK(cov.wmax[0] == Approx(flat[4]).epsilon(1e-14));
  CHECK(cov.wmin_all <= cov.wmin_common);
  CHECK(cov.wmax_common <= cov.wmax_all);
  CHECK(cov.wmin[0] > 5543.0);
  CHECK(cov.wmax[0] < 7826.0);
}

PERFEX_BACKEND_TEST_CASE("psf: fibre ranges and output shapes are checked", "[psf]") {
  PERFEX_ONLY_SELECTED_BACKEND();
  using M = Mem<TestType>;
  SyntheticPsfOptions o;
  o.nfib = 10;
  GaussHermitePsf<M> psf(make_synthetic_psf(o));
  auto w = perfex_psf_test::device_waves<TestType>({6000.0});
  Kokkos::View<double****, Kokkos::LayoutRight, M> spots("s", 2, 1, 11, 17);
  Kokkos::View<int**, M> xc("xc", 2, 1), yc("yc", 2, 1);
  REQUIRE_THROWS_WITH(
      perfex::psf::compute_spots(TestType(), psf, 9, 2, w, spots, xc, yc),
      Catch::Contains("fibres 9-10 (f0 9, nf 2) requested, but the PSF has 10 fibres"));
  Kokkos::View<double****, Kokkos::LayoutRight, M> wrong("s", 2, 1, 11, 16);
  REQUIRE_THROWS_WITH(perfex::psf::compute_spots(TestType(), psf, 0, 2, w, wrong, xc, yc),
                      Catch::Contains("[11][17]"));
}

TEST_CASE("psf: synthetic PSF is DESI-like", "[psf]") {
  auto d = make_synthetic_psf();
  REQUIRE(d.nfib == 500);
  CHECK(d.nparam() == 59);
  CHECK(d.param_names[0] == "GHSIGX");
  CHECK(d.param_names[2] == "GH-0-0");
  CHECK(d.param_names[3] == "GH-1-0");
  CHECK(d.param_names[50] == "GH-6-6");
  CHECK(d.param_names[51] == "TAILAMP");
  CHECK(d.param_names[58] == "CONT");
  CHECK(d.xtrace.wavemax == 7826.0);
  CHECK(d.wavemax == 7827.0);
  auto xat = [&](int f, double w) {
    return host_series(&d.xtrace.coeff[f * d.xtrace.ncoeff], d.xtrace.ncoeff, w, d.xtrace.wavemin,
                       d.xtrace.wavemax);
  };
  auto yat = [&](int f, double w) {
    return host_series(&d.ytrace.coeff[f * d.ytrace.ncoeff], d.ytrace.ncoeff, w, d.ytrace.wavemin,
                       d.ytrace.wavemax);
  };
  CHECK(xat(0, 6685.0) == Approx(111.0).margin(3.0));
  CHECK(xat(1, 6685.0) - xat(0, 6685.0) == Approx(7.28).margin(0.05));
  CHECK(xat(25, 6685.0) - xat(24, 6685.0) == Approx(19.7).margin(0.1));
  CHECK(xat(499, 6685.0) == Approx(3980.0).margin(10.0));
  CHECK(yat(0, 5543.0) == Approx(-5.0).margin(0.5));
  CHECK(yat(0, 7826.0) == Approx(4312.0).margin(0.5));
  const double disp_blue = (yat(0, 5601.0) - yat(0, 5599.0)) / 2.0;
  const double disp_red = (yat(0, 7701.0) - yat(0, 7699.0)) / 2.0;
  CHECK(disp_blue == Approx(1.8).margin(0.05));
  CHECK(disp_red == Approx(2.0).margin(0.05));
  CHECK(std::abs(xat(0, 5543.0) - xat(0, 7826.0)) < 20.0);
  double smin = 10, smax = 0, amax = 0;
  for (int f = 0; f < 500; f += 7) {
    for (double w = 5543.0; w <= 7827.0; w += 100.0) {
      for (const char* n : {"GHSIGX", "GHSIGY"}) {
        const int p = d.param_index(n);
        const double s = host_series(&d.coeff[(static_cast<std::size_t>(p) * 500 + f) * 4], 4, w,
                                     d.wavemin, d.wavemax);
        smin = std::min(smin, s);
        smax = std::max(smax, s);
      }
      for (int p = 3; p <= 50; ++p) {
        amax = std::max(
            amax, std::abs(host_series(&d.coeff[(static_cast<std::size_t>(p) * 500 + f) * 4], 4, w,
                                       d.wavemin, d.wavemax)));
      }
      CHECK(host_series(&d.coeff[(static_cast<std::size_t>(2) * 500 + f) * 4], 4, w, d.wavemin,
                        d.wavemax) == 1.0);
    }
  }
  CHECK(smin > 0.95);
  CHECK(smax < 1.2);
  CHECK(amax < 0.05);
  CHECK(amax > 0.005);
  // Deterministic: the same seed gives the same PSF.
  CHECK(make_synthetic_psf().coeff == d.coeff);
}

#if defined(KOKKOS_ENABLE_SERIAL) && defined(KOKKOS_ENABLE_OPENMP)
TEST_CASE("psf: Serial and OpenMP spots are identical", "[psf]") {
  SyntheticPsfOptions o;
  o.nfib = 25;
  auto data = make_synthetic_psf(o);
  std::vector<double> w;
  for (int k = 0; k < 64; ++k) w.push_back(5540.0 + 36.0 * k);
  GaussHermitePsf<Kokkos::HostSpace> psf(data);
  auto a = evaluate_all(Kokkos::Serial(), psf, 0, 25, w);
  auto b = evaluate_all(Kokkos::OpenMP(), psf, 0, 25, w);
  CHECK(a.spots == b.spots);
  CHECK(a.xc == b.xc);
  CHECK(a.yc == b.yc);
  CHECK(a.x == b.x);
  CHECK(a.params == b.params);
}
#endif
