#pragma once
// What the checks of a request share (preflight.hpp and each geometry's padding rules,
// extract/geometry/): the longest grid accepted, a grid's length without building it, the
// nwavestep clamp every geometry makes, and numbers as their messages print them.
#include <perfex/extract/options.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

namespace perfex {
namespace extract {

// Longest output grid accepted: far beyond any spectrograph (DESI's is ~2900 bins), and every
// index of the padded grid and of a fibre's bins stays well inside 32-bit integers.
constexpr double kMaxGridLength = 1 << 24;

namespace preflight_detail {

inline std::string number(double x) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.10g", x);
  return buf;
}

inline std::string grid_text(const ExtractionOptions& o) {
  return number(o.wmin) + "," + number(o.wmax) + "," + number(o.dw);
}

}  // namespace preflight_detail

// Length of make_wavelength_grid(wmin, wmax, dw), without building it (a double: an absurd
// request gives an absurd number, not an allocation).
inline double wavelength_grid_length(double wmin, double wmax, double dw) {
  return std::ceil((wmax + 0.5 * dw - wmin) / dw);
}

// A patch needs at most the grid's own wavelengths as core: nwavestep is clamped to the larger
// of the grid length and the DESI default (50), which is never changed, so small grids still
// match gpu_specter. Returns a warning when it changes nwavestep.
inline std::vector<std::string> clamp_nwavestep_to_grid(ExtractionOptions& o) {
  const double n = wavelength_grid_length(o.wmin, o.wmax, o.dw);
  if (!(n >= 1 && n <= kMaxGridLength)) return {};  // check_wavelength_grid's business
  const int nwave = static_cast<int>(n);
  const int max_step = std::max(nwave, ExtractionOptions{}.nwavestep);
  if (o.nwavestep <= max_step) return {};
  const std::string warning = "nwavestep " + std::to_string(o.nwavestep) + " exceeds the grid's " +
                              std::to_string(nwave) + " wavelengths: using " +
                              std::to_string(max_step);
  o.nwavestep = max_step;
  return {warning};
}

}  // namespace extract
}  // namespace perfex
