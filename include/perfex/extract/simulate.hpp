#pragma once
// Simulated CCD images with known input spectra (for the demo and the tests), in the way the
// reference data were made: spectra (photons per wavelength bin) are projected with the PSF's
// normalised spots, then pixels = Poisson(model) + N(0, read_noise), ivar = 1/(read_noise² +
// model).
//
// The spots are computed on the execution space (psf::compute_spots); the accumulation into
// the image and the noise draws are done on the host in a fixed order with a seeded
// std::mt19937_64, so a given (PSF, spectra, seed) gives the same image on every backend.
#include <perfex/error.hpp>
#include <perfex/extract/image.hpp>
#include <perfex/extract/wavelength_grid.hpp>
#include <perfex/psf/kernels.hpp>
#include <perfex/psf/model.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace perfex {
namespace extract {

struct SimulatedImage {
  CcdImage ccd;                  // noisy pixels and ivar, [npix_y][npix_x]
  std::vector<double> model;     // noiseless projected spectra, [npix_y][npix_x]
  double projected_photons = 0;  // Σ model: the photons that landed on the CCD
};

// Projects photons[nspec][nwave] (photons per bin, bin centres `wave`) of fibres
// [specmin, specmin+nspec) through a PSF model (psf/model.hpp) onto the full CCD
// (psf.npix_y() × psf.npix_x()) and adds noise.
// Spot pixels outside the CCD are lost. read_noise >= 0; a pixel with read_noise² + model == 0
// gets ivar 0.
template <class ExecSpace, class Psf>
SimulatedImage simulate_image(const ExecSpace& exec, const Psf& psf, int specmin, int nspec,
                              const std::vector<double>& wave, const std::vector<double>& photons,
                              double read_noise, unsigned seed) {
  static_assert(psf::require_psf_model<Psf>(), "");
  using Mem = typename Psf::memory_space;
  const int K = static_cast<int>(wave.size());
  const std::string problem =
      psf::fibre_range_problem(specmin, nspec, psf.nfib(), "specmin", "nspec");
  if (!problem.empty()) throw Error("simulate_image: " + problem);
  if (K < 1) throw Error("simulate_image: empty wavelength grid");
  if (photons.size() != static_cast<std::size_t>(nspec) * static_cast<std::size_t>(K))
    throw Error("simulate_image: photons has " + std::to_string(photons.size()) +
                " values, expected nspec x nwave = " + std::to_string(nspec) + " x " +
                std::to_string(K));
  if (!(read_noise >= 0) || !std::isfinite(read_noise))
    throw Error("simulate_image: read noise must be >= 0, got " + std::to_string(read_noise));

  const int nrows = psf.npix_y(), ncols = psf.npix_x(), ny = psf.spot_rows(), nx = psf.spot_cols();
  SimulatedImage sim;
  sim.ccd.nrows = nrows;
  sim.ccd.ncols = ncols;
  const std::size_t npix = static_cast<std::size_t>(nrows) * static_cast<std::size_t>(ncols);
  sim.model.assign(npix, 0.0);

  Kokkos::View<double*, Mem> dwave("perfex::simulate::wave", static_cast<std::size_t>(K));
  Kokkos::deep_copy(exec, dwave,
                    Kokkos::View<const double*, Kokkos::HostSpace>(wave.data(), wave.size()));
  // Fibres in blocks to bound the spot memory (block × K × ny × nx doubles).
  const int block = std::max(
      1, std::min(nspec, static_cast<int>(4000000 / (static_cast<long>(K) * ny * nx) + 1)));
  Kokkos::View<double****, Kokkos::LayoutRight, Mem> spots("perfex::simulate::spots", block, K, ny,
                                                           nx);
  Kokkos::View<int**, Mem> xc("perfex::simulate::xcorner", block, K),
      yc("perfex::simulate::ycorner", block, K);
  auto hspots = Kokkos::create_mirror_view(spots);
  auto hxc = Kokkos::create_mirror_view(xc);
  auto hyc = Kokkos::create_mirror_view(yc);
  for (int f0 = 0; f0 < nspec; f0 += block) {
    const int nf = std::min(block, nspec - f0);
    psf::compute_spots(exec, psf, specmin + f0, nf, Kokkos::View<const double*, Mem>(dwave), spots,
                       xc, yc);
    Kokkos::deep_copy(exec, hspots, spots);
    Kokkos::deep_copy(exec, hxc, xc);
    Kokkos::deep_copy(exec, hyc, yc);
    exec.fence();
    for (int f = 0; f < nf; ++f) {
      for (int k = 0; k < K; ++k) {
        const double phot = photons[static_cast<std::size_t>(f0 + f) * K + k];
        if (phot == 0) continue;
        const int c0 = hxc(f, k), r0 = hyc(f, k);
        for (int p = 0; p < ny; ++p) {
          const int r = r0 + p;
          if (r < 0 || r >= nrows) continue;
          double* row = sim.model.data() + static_cast<std::size_t>(r) * ncols;
          for (int q = 0; q < nx; ++q) {
            const int c = c0 + q;
            if (c < 0 || c >= ncols) continue;
            row[c] += phot * hspots(f, k, p, q);
          }
        }
      }
    }
  }

  std::mt19937_64 rng(seed);
  std::normal_distribution<double> gauss(0.0, 1.0);
  sim.ccd.pixels.resize(npix);
  sim.ccd.ivar.resize(npix);
  const double var0 = read_noise * read_noise;
  double total = 0;
  for (std::size_t i = 0; i < npix; ++i) {
    const double m = sim.model[i];
    total += m;
    double value = 0;
    if (m > 0) value = static_cast<double>(std::poisson_distribution<long long>(m)(rng));
    if (read_noise > 0) value += read_noise * gauss(rng);
    sim.ccd.pixels[i] = value;
    const double var = var0 + std::max(m, 0.0);
    sim.ccd.ivar[i] = var > 0 ? 1.0 / var : 0.0;
  }
  sim.projected_photons = total;
  return sim;
}

// Test spectra for fibres 0..nspec-1 on the bin centres `wave` (uniform or not), in photons
// per bin: a continuum of 20–200 photons/Å with a slope and a slow wiggle, 2–5 Gaussian
// emission lines per fibre (σ 0.8–2.5 Å), and the r-band night-sky lines common to all
// fibres (±5 % throughput per fibre). Lines are integrated exactly over each bin (erf); the
// continuum is density × bin width. Deterministic for a seed.
inline std::vector<double> make_test_spectra(int nspec, const std::vector<double>& wave,
                                             unsigned seed) {
  const int K = static_cast<int>(wave.size());
  if (nspec < 1 || K < 2)
    throw Error("make_test_spectra: need nspec >= 1 and at least 2 wavelengths");
  // Bin edges half-way between centres; the outer edges mirror the first/last step.
  std::vector<double> edges(static_cast<std::size_t>(K) + 1);
  for (int k = 1; k < K; ++k) edges[k] = 0.5 * (wave[k - 1] + wave[k]);
  edges[0] = wave[0] - 0.5 * (wave[1] - wave[0]);
  edges[K] = wave[K - 1] + 0.5 * (wave[K - 1] - wave[K - 2]);
  const double w0 = wave.front(), w1 = wave.back(), span = std::max(w1 - w0, 1e-9);

  struct Line {
    double centre, sigma, flux;
  };
  // Night-sky lines (Å, relative strength) in and around the DESI r band.
  static const double sky[][2] = {{5577.34, 3.0}, {5889.95, 0.8}, {5895.92, 0.6}, {6300.30, 2.0},
                                  {6363.78, 0.7}, {6498.73, 0.4}, {6533.04, 0.6}, {6553.62, 0.5},
                                  {6577.28, 0.6}, {6604.13, 0.5}, {6827.46, 0.4}, {6834.01, 0.4},
                                  {6863.96, 1.0}, {6923.22, 0.9}, {6948.94, 0.6}, {7276.41, 0.8},
                                  {7316.28, 1.2}, {7340.89, 1.1}, {7369.25, 0.9}, {7401.69, 0.7},
                                  {7524.12, 0.5}, {7571.75, 0.7}, {7750.64, 1.2}, {7794.11, 1.1}};
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<double> out(static_cast<std::size_t>(nspec) * K);
  for (int f = 0; f < nspec; ++f) {
    const double level = 20.0 + 180.0 * u(rng) * 0.7;  // 20 … 146 photons/Å at the blue end
    const double slope = (u(rng) - 0.5) * 0.6;         // ±30 % across the range
    const double wiggle = 0.05 * u(rng), period = 200.0 + 400.0 * u(rng),
                 phase = 6.283185307179586 * u(rng);
    const double throughput = 1.0 + 0.1 * (u(rng) - 0.5);
    std::vector<Line> lines;
    const int nlines = 2 + static_cast<int>(u(rng) * 4.0);  // 2 … 5
    for (int l = 0; l < nlines; ++l)
      lines.push_back(
          {w0 + span * (0.05 + 0.9 * u(rng)), 0.8 + 1.7 * u(rng), 100.0 + 900.0 * u(rng)});
    for (const auto& s : sky) lines.push_back({s[0], 0.9, 400.0 * s[1] * throughput});
    for (int k = 0; k < K; ++k) {
      const double lam = wave[k], width = edges[k + 1] - edges[k];
      double density = level * (1.0 + slope * (lam - w0) / span) *
                       (1.0 + wiggle * std::sin(6.283185307179586 * (lam - w0) / period + phase));
      density = std::min(200.0, std::max(20.0, density));
      double value = density * width;
      for (const auto& ln : lines) {
        const double a = (edges[k] - ln.centre) / (std::sqrt(2.0) * ln.sigma);
        const double b = (edges[k + 1] - ln.centre) / (std::sqrt(2.0) * ln.sigma);
        if (a > 8 || b < -8) continue;
        value += ln.flux * 0.5 * (std::erf(b) - std::erf(a));
      }
      out[static_cast<std::size_t>(f) * K + k] = value;
    }
  }
  return out;
}

}  // namespace extract
}  // namespace perfex
