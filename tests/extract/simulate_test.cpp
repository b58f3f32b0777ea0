#include "perfex_test.hpp"

#include <perfex/extract/simulate.hpp>
#include <perfex/psf/gauss_hermite/model.hpp>
#include <perfex/psf/synthetic.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

namespace {

// A small CCD (1100 rows × 200 columns) holding 5 fibres of a synthetic DESI-like PSF.
perfex::psf::GaussHermitePsfData small_psf() {
  perfex::psf::SyntheticPsfOptions o;
  o.nfib = 5;
  o.npix_x = 200;
  o.npix_y = 1100;
  o.y_first = -5.0;
  o.y_last = 1000.0;
  return perfex::psf::make_synthetic_psf(o);
}

std::vector<double> grid(double w0, double w1, double dw) {
  return perfex::extract::make_wavelength_grid(w0, w1, dw);
}

}  // namespace

PERFEX_BACKEND_TEST_CASE("simulate_image: flux conservation and noise statistics", "[extract]") {
  PERFEX_ONLY_SELECTED_BACKEND();
  using Mem = typename TestType::memory_space;
  const perfex::psf::GaussHermitePsf<Mem> psf(small_psf());
  const TestType exec;

  // Spectra entirely on the CCD: every photon lands on it.
  const auto wave = grid(6000.0, 7000.0, 2.0);
  const int nspec = 5, K = static_cast<int>(wave.size());
  const auto photons = perfex::extract::make_test_spectra(nspec, wave, 7u);
  const double total = std::accumulate(photons.begin(), photons.end(), 0.0);
  const auto sim = perfex::extract::simulate_image(exec, psf, 0, nspec, wave, photons, 3.0, 11u);
  REQUIRE(sim.ccd.nrows == 1100);
  REQUIRE(sim.ccd.ncols == 200);
  REQUIRE(sim.model.size() == 1100u * 200u);
  const double msum = std::accumulate(sim.model.begin(), sim.model.end(), 0.0);
  CHECK(msum == Approx(total).epsilon(1e-12));
  CHECK(sim.projected_photons == Approx(total).epsilon(1e-12));
  CHECK(std::count_if(sim.model.begin(), sim.model.end(), [](double m) { return !(m >= 0.0); }) ==
        0);

  // One fibre alone: its photons, and only in its own columns.
  std::vector<double> one(photons.size(), 0.0);
  std::copy(photons.begin() + 2 * K, photons.begin() + 3 * K, one.begin() + 2 * K);
  const auto sim1 = perfex::extract::simulate_image(exec, psf, 0, nspec, wave, one, 0.0, 1u);
  const double total1 = std::accumulate(one.begin(), one.end(), 0.0);
  CHECK(sim1.projected_photons == Approx(total1).epsilon(1e-12));
  // Without read noise the pixels are Poisson integers.
  CHECK(std::count_if(sim1.ccd.pixels.begin(), sim1.ccd.pixels.end(),
                      [](double v) { return v != std::round(v); }) == 0);

  // Noise: (pixel - model)·sqrt(ivar) has mean 0 and RMS 1, ivar = 1/(rn² + model).
  double s = 0, s2 = 0;
  long n = 0, bad_ivar = 0;
  for (std::size_t i = 0; i < sim.model.size(); ++i) {
    bad_ivar += std::abs(sim.ccd.ivar[i] * (9.0 + sim.model[i]) - 1.0) > 1e-14;
    const double pull = (sim.ccd.pixels[i] - sim.model[i]) * std::sqrt(sim.ccd.ivar[i]);
    s += pull;
    s2 += pull * pull;
    ++n;
  }
  CHECK(bad_ivar == 0);
  const double mean = s / n, rms = std::sqrt(s2 / n);
  CHECK(std::abs(mean) < 0.01);
  CHECK(rms == Approx(1.0).margin(0.01));
  // Pixels with signal alone (Poisson dominated) too.
  s = s2 = 0;
  n = 0;
  for (std::size_t i = 0; i < sim.model.size(); ++i) {
    if (sim.model[i] < 50) continue;
    const double pull = (sim.ccd.pixels[i] - sim.model[i]) * std::sqrt(sim.ccd.ivar[i]);
    s += pull;
    s2 += pull * pull;
    ++n;
  }
  REQUIRE(n > 1000);
  CHECK(std::abs(s / n) < 0.1);
  CHECK(std::sqrt(s2 / n) == Approx(1.0).margin(0.05));

  // Reproducible for a seed, different for another.
  const auto again = perfex::extract::simulate_image(exec, psf, 0, nspec, wave, photons, 3.0, 11u);
  CHECK(again.ccd.pixels == sim.ccd.pixels);
  const auto other = perfex::extract::simulate_image(exec, psf, 0, nspec, wave, photons, 3.0, 12u);
  CHECK(other.ccd.pixels != sim.ccd.pixels);
  CHECK(other.model == sim.model);
}

PERFEX_BACKEND_TEST_CASE("simulate_image: spots off the CCD are lost; bad input throws",
                         "[extract]") {
  PERFEX_ONLY_SELECTED_BACKEND();
  using Mem = typename TestType::memory_space;
  const perfex::psf::GaussHermitePsf<Mem> psf(small_psf());
  const TestType exec;
  // The blue end of the trace lies below row 0.
  const auto wave = grid(5545.0, 5800.0, 1.0);
  const auto photons = perfex::extract::make_test_spectra(2, wave, 3u);
  const double total = std::accumulate(photons.begin(), photons.end(), 0.0);
  const auto sim = perfex::extract::simulate_image(exec, psf, 1, 2, wave, photons, 1.0, 5u);
  CHECK(sim.projected_photons > 0.2 * total);
  CHECK(sim.projected_photons < 0.95 * total);

  CHECK_THROWS_AS(perfex::extract::simulate_image(exec, psf, 4, 2, wave, photons, 1.0, 5u),
                  perfex::Error);
  // specmin + nspec beyond int: refused, not wrapped into a range that passes
  CHECK_THROWS_WITH(perfex::extract::simulate_image(exec, psf, std::numeric_limits<int>::max(), 2,
                                                    wave, photons, 1.0, 5u),
                    Catch::Contains("(specmin 2147483647, nspec 2) requested, but the PSF has"));
  CHECK_THROWS_AS(
      perfex::extract::simulate_image(exec, psf, 0, 2, wave, std::vector<double>(3, 1.0), 1.0, 5u),
      perfex::Error);
  CHECK_THROWS_AS(perfex::extract::simulate_image(exec, psf, 0, 2, wave, photons, -1.0, 5u),
                  perfex::Error);
}

TEST_CASE("make_test_spectra: continuum, lines, determinism", "[extract]") {
  const auto wave = grid(5700.0, 6820.0, 0.8);
  const int K = static_cast<int>(wave.size());
  const auto a = perfex::extract::make_test_spectra(10, wave, 42u);
  const auto b = perfex::extract::make_test_spectra(10, wave, 42u);
  const auto c = perfex::extract::make_test_spectra(10, wave, 43u);
  REQUIRE(a.size() == 10u * K);
  CHECK(a == b);
  CHECK(a != c);
  for (int f = 0; f < 10; ++f) {
    double lo = 1e300, hi = 0;
    for (int k = 0; k < K; ++k) {
      const double v = a[static_cast<std::size_t>(f) * K + k] / 0.8;  // per Angstrom
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
    CHECK(lo >= 20.0 * (1 - 1e-9));  // continuum floor
    CHECK(hi > 250.0);               // emission / sky lines stand out
  }
  // The 6300 Å sky line is in every fibre.
  const int k6300 = static_cast<int>(std::lround((6300.3 - 5700.0) / 0.8));
  for (int f = 0; f < 10; ++f)
    CHECK(a[static_cast<std::size_t>(f) * K + k6300] >
          2 * a[static_cast<std::size_t>(f) * K + k6300 - 20]);
}
