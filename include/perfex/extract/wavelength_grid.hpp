#pragma once
// Output and padded wavelength grids (gpu_specter's extract_frame), bit-compatible with
// numpy.arange and numpy.gradient as gpu_specter uses them.
#include <perfex/error.hpp>

#include <cmath>
#include <string>
#include <vector>

namespace perfex {
namespace extract {

// numpy.arange(wmin, wmax + 0.5*dw, dw): length ceil((stop - start)/dw), values
// start + i*delta with delta = (start + dw) - start evaluated in double.
inline std::vector<double> make_wavelength_grid(double wmin, double wmax, double dw) {
  if (!(dw > 0) || !std::isfinite(wmin) || !std::isfinite(wmax) || !std::isfinite(dw) ||
      wmax < wmin)
    throw Error("wavelength grid: need finite wmin <= wmax and dw > 0, got " +
                std::to_string(wmin) + "," + std::to_string(wmax) + "," + std::to_string(dw));
  const double stop = wmax + 0.5 * dw;
  const auto n = static_cast<long>(std::ceil((stop - wmin) / dw));
  const double delta = (wmin + dw) - wmin;
  std::vector<double> wave(static_cast<std::size_t>(n));
  for (long i = 0; i < n; ++i)
    wave[static_cast<std::size_t>(i)] = wmin + static_cast<double>(i) * delta;
  return wave;
}

// Padded grid: wavepad bins below, the grid, wavepad + nwavestep bins above, so every patch
// solves a full-size system (index k of the grid is index k + wavepad here).
inline std::vector<double> make_padded_grid(const std::vector<double>& wave, double dw, int wavepad,
                                            int nwavestep) {
  std::vector<double> full;
  full.reserve(wave.size() + 2 * static_cast<std::size_t>(wavepad) +
               static_cast<std::size_t>(nwavestep));
  for (int i = 0; i < wavepad; ++i) full.push_back(wave.front() - (wavepad - i) * dw);
  full.insert(full.end(), wave.begin(), wave.end());
  for (int i = 0; i < wavepad + nwavestep; ++i) full.push_back(wave.back() + (1 + i) * dw);
  return full;
}

// numpy.gradient: central differences inside, one-sided at the ends.
inline std::vector<double> gradient(const std::vector<double>& x) {
  const std::size_t n = x.size();
  std::vector<double> g(n, 1.0);
  if (n < 2) return g;
  g[0] = x[1] - x[0];
  g[n - 1] = x[n - 1] - x[n - 2];
  for (std::size_t i = 1; i + 1 < n; ++i) g[i] = (x[i + 1] - x[i - 1]) / 2.0;
  return g;
}

}  // namespace extract
}  // namespace perfex
