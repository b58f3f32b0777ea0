#pragma once
// The gpu_specter geometry (Geometry::gpu_specter), gpu_specter's extract_frame as desispec
// runs it: physical bundles; every patch's core padded by wavepad() bins on each side, that
// padding widened to span the PSF's spots and clamped to the grid before planning; pixel windows
// over the padded spots, their rows cut to pixpad_frac of the padding rows (patches.hpp); the
// model image summed over the patches. geometry.hpp chooses a plan's geometry.
#include <perfex/error.hpp>
#include <perfex/extract/grid_limits.hpp>
#include <perfex/extract/model_image.hpp>
#include <perfex/extract/options.hpp>
#include <perfex/extract/patch_geometry.hpp>
#include <perfex/extract/patches.hpp>
#include <perfex/psf/any_psf.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

namespace perfex {
namespace extract {

// The wavelength padding (wavepad0 + int(wavepad0 * wavepad_frac) bins each side of a patch's
// core) must span more CCD rows than a spot (1.25 spot boxes, at the PSF's smallest dispersion
// over the padded grid and the requested fibres): else the core's edge bins are fitted with their
// neighbours' light cut off and differ from specter's by tenths of a sigma. DESI's default of 12
// bins spans ~17 rows of an 11-row spot; a PSF with taller spots or a finer grid gets more, by
// raising wavepad0 (wavepad_frac kept). Returns a warning when it changes the padding.
inline std::vector<std::string> fit_padding_to_psf(ExtractionOptions& o,
                                                   const psf::AnyPsfData& psf) {
  const double n = wavelength_grid_length(o.wmin, o.wmax, o.dw);
  const psf::PsfSummary ps = psf.summary();
  if (!(n >= 1 && n <= kMaxGridLength) ||
      !psf::fibre_range_problem(o.specmin, o.nspec, ps.nfib, "specmin", "nspec").empty())
    return {};  // the other checks' business
  const double lo = std::max(ps.trace_wavemin, o.wmin - o.wavepad() * o.dw);
  const double hi = std::min(ps.trace_wavemax, o.wmin + (n - 1 + o.wavepad() + o.nwavestep) * o.dw);
  if (!(hi > lo)) return {};
  const double rows_per_bin = psf.rows().min_slope(o.specmin, o.nspec, lo, hi) * o.dw;
  if (!(rows_per_bin > 0) || !std::isfinite(rows_per_bin)) return {};
  const double needed = std::ceil(1.25 * ps.spot_rows / rows_per_bin);
  if (o.wavepad() >= needed || needed > kMaxGridLength) return {};
  const int requested = o.wavepad(), requested_pad0 = o.wavepad0;
  while (o.wavepad() < needed) ++o.wavepad0;
  return {"wavelength padding of " + std::to_string(requested) + " bins (wavepad " +
          std::to_string(requested_pad0) + ") spans " +
          preflight_detail::number(requested * rows_per_bin) +
          " CCD rows, less than 1.25 times the PSF's " + std::to_string(ps.spot_rows) +
          "-row spots: using " + std::to_string(o.wavepad()) + " bins (wavepad " +
          std::to_string(o.wavepad0) + ")"};
}

// A patch needs at most the grid's own wavelengths as padding: the padding on each side
// (wavepad0 + int(wavepad0 * wavepad_frac)) is clamped to the larger of the grid length and the
// default padding (12 bins: wavepad0 10, wavepad_frac 0.2), through wavepad_frac or, when
// wavepad0 alone exceeds it, through wavepad0. Larger values only add unknowns (the time grows
// with their cube) for the same frame. Returns a warning when it changes the padding; the
// options then say what is used (for the frame header).
inline std::vector<std::string> clamp_padding_to_grid(ExtractionOptions& o) {
  const double n = wavelength_grid_length(o.wmin, o.wmax, o.dw);
  if (!(n >= 1 && n <= kMaxGridLength)) return {};  // check_wavelength_grid's business
  const int nwave = static_cast<int>(n);
  const int limit = std::max(nwave, ExtractionOptions{}.wavepad());
  if (o.wavepad() <= limit) return {};
  const int requested = o.wavepad(), requested_pad0 = o.wavepad0;
  const double requested_frac = o.wavepad_frac;
  if (o.wavepad0 > limit) {
    o.wavepad0 = limit;
    o.wavepad_frac = 0;
  } else {
    // The smallest wavepad_frac giving exactly `limit` bins (wavepad() truncates).
    double frac = o.wavepad0 > 0 ? static_cast<double>(limit - o.wavepad0) / o.wavepad0 : 0.0;
    while (o.wavepad0 > 0 && o.wavepad0 + static_cast<int>(o.wavepad0 * frac) < limit)
      frac = std::nextafter(frac, HUGE_VAL);
    o.wavepad_frac = frac;
  }
  return {"wavelength padding of " + std::to_string(requested) + " bins per side (wavepad " +
          std::to_string(requested_pad0) + ", wavepad_frac " +
          preflight_detail::number(requested_frac) + ") exceeds the grid's " +
          std::to_string(nwave) + " wavelengths: using " + std::to_string(o.wavepad()) +
          " (wavepad " + std::to_string(o.wavepad0) + ", wavepad_frac " +
          preflight_detail::number(o.wavepad_frac) + ")"};
}

// nwavestep and the padding clamped to the grid (clamp_nwavestep_to_grid, clamp_padding_to_grid),
// one warning per change.
inline std::vector<std::string> fit_patches_to_grid(ExtractionOptions& o) {
  std::vector<std::string> warnings = clamp_nwavestep_to_grid(o);
  for (std::string& w : clamp_padding_to_grid(o)) warnings.push_back(std::move(w));
  return warnings;
}

struct GpuSpecterGeometry {
  static constexpr Geometry id = Geometry::gpu_specter;
  static constexpr ModelFold model_fold = ModelFold::sum;

  // The physical bundles, [b * bundlesize, (b + 1) * bundlesize), padding fibres possibly from
  // their fibres outside the request.
  static std::vector<BundlePlan> bundles(const ExtractionOptions& o, int psf_nfib) {
    return make_bundles(o, psf_nfib, (o.specmin / o.bundlesize) * o.bundlesize, psf_nfib);
  }

  // The padding fitted to the PSF's spots, then nwavestep and the padding to the grid.
  static std::vector<std::string> fit_padding(ExtractionOptions& o, const psf::AnyPsfData& psf) {
    std::vector<std::string> warnings = fit_padding_to_psf(o, psf);
    for (std::string& w : fit_patches_to_grid(o)) warnings.push_back(std::move(w));
    return warnings;
  }

  // Every patch's padding is the plan's, which must hold the resolution band.
  static void check_padding(const PatchGeometry& g) {
    if (g.wavepad < g.ndiag)
      throw Error("extraction option wavepad (" + std::to_string(g.wavepad) +
                  ") must be >= half the PSF's spot rows (" + std::to_string(g.ndiag) +
                  ") to store the resolution band");
  }

  // Nothing to plan before the spot corners: the windows come from them.
  struct Layout {};
  template <class ExecSpace, class Psf, class Plan>
  static Layout layout(const ExecSpace&, const Psf&, const std::vector<BundlePlan>&, Plan&) {
    return {};
  }

  // The windows from the plan's spot corners (host_x, host_y: frame-relative fibres).
  template <class Psf, class Plan, class Corners>
  static std::vector<PatchDesc> windows(const Layout&, const std::vector<BundlePlan>& bundles,
                                        const Psf& psf, const Plan& plan, const Corners& c) {
    return plan_frame_patches(
        bundles, plan.options, static_cast<int>(plan.wave.size()), psf.spot_cols(), psf.spot_rows(),
        plan.ccd_cols, plan.ccd_rows, [&](int f, int k) { return c.host_x(f, k); },
        [&](int f, int k) { return c.host_y(f, k); });
  }

  // The spots as psf::compute_spots makes them.
  template <class ExecSpace, class Psf, class Wave, class Spots, class Corners>
  static void spot_boxes(const ExecSpace&, const Psf&, int, int, const Wave&, const Spots&,
                         const Corners&, const Corners&) {}
};

}  // namespace extract
}  // namespace perfex
