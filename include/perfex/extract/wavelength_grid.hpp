#pragma once
// Output and padded wavelength grids (gpu_specter's extract_frame), bit-compatible with
// numpy.arange and numpy.gradient as gpu_specter uses them.
#include <perfex/error.hpp>

#include <cmath>
#include <cstdio>
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

// A grid given by its values (gpu_specter's extract_frame takes numpy.arange(wmin, wmax +
// dw/2, dw) itself): its wmin, wmax and dw = wave[1] - wave[0] (gradient(wave)[0], the step
// gpu_specter pads with), when the values are the grid make_wavelength_grid makes of them to
// 1e-6 dw. Otherwise a RequestError naming `what` and the first value at fault: fewer than two
// values, a value not finite, a step that is not positive, values off the uniform grid.
struct GridSpec {
  double wmin = 0, wmax = 0, dw = 0;
};
inline GridSpec grid_of_values(const std::vector<double>& wave,
                               const std::string& what = "wavelength") {
  const auto number = [](double x) {
    char text[32];
    std::snprintf(text, sizeof(text), "%.17g", x);
    return std::string(text);
  };
  const auto value = [&](std::size_t k) {
    return "[" + std::to_string(k) + "] = " + number(wave[k]);
  };
  if (wave.size() < 2)
    throw RequestError(what + ": a grid needs at least two wavelengths, got " +
                       std::to_string(wave.size()));
  for (std::size_t k = 0; k < wave.size(); ++k)
    if (!std::isfinite(wave[k]))
      throw RequestError(what + ": value " + value(k) + " is not finite");
  for (std::size_t k = 0; k + 1 < wave.size(); ++k)
    if (!(wave[k + 1] > wave[k]))
      throw RequestError(what + ": the grid must increase, but " + value(k + 1) +
                         " does not exceed " + value(k));
  const GridSpec g{wave.front(), wave.back(), wave[1] - wave[0]};
  const std::vector<double> uniform = make_wavelength_grid(g.wmin, g.wmax, g.dw);
  for (std::size_t k = 0; k < wave.size(); ++k)
    if (k >= uniform.size() || !(std::abs(uniform[k] - wave[k]) <= 1e-6 * g.dw))
      throw RequestError(
          what + ": perfex extracts on uniform grids (numpy.arange(wmin, wmax + dw/2, dw)); " +
          value(k) + " is off the grid of step " + number(g.dw) + " from " + number(g.wmin));
  if (uniform.size() != wave.size())
    throw RequestError(what +
                       ": perfex extracts on uniform grids (numpy.arange(wmin, wmax + "
                       "dw/2, dw)); this one has " +
                       std::to_string(wave.size()) + " values where that grid has " +
                       std::to_string(uniform.size()));
  return g;
}

}  // namespace extract
}  // namespace perfex
