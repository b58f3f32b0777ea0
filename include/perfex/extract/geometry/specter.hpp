#pragma once
// The specter geometry (Geometry::specter), specter's ex2d: bundles of bundlesize fibres from
// specmin on; each patch's pixel box PSF.xyrange over its fibres and core, its rows padded by
// round(pixpad_frac x spot rows), and its own padding, reaching the bins of its first fibre
// int(wavepad_frac x spot rows) rows beyond that box (specter_geometry.hpp); before planning,
// wavepad bounded to hold every patch's padding; the model image overwritten patch by patch.
// geometry.hpp chooses a plan's geometry.
#include <perfex/extract/grid_limits.hpp>
#include <perfex/extract/model_image.hpp>
#include <perfex/extract/options.hpp>
#include <perfex/extract/patch_geometry.hpp>
#include <perfex/extract/patches.hpp>
#include <perfex/extract/specter_geometry.hpp>
#include <perfex/profiling.hpp>
#include <perfex/psf/any_psf.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace perfex {
namespace extract {

// wavepad0 raised until wavepad() bounds every patch's padding (the plan computes each exactly):
// the rows from a core's edge to the end of its padding (a spot, round(pixpad_frac x spot rows),
// int(wavepad_frac x spot rows), the spread of a bundle's traces and two more) in bins at the
// PSF's smallest dispersion over the grid, and at least half a spot. What the padded grid then
// spans is what check_psf_over_grid and the memory estimate see.
inline void bound_specter_padding(ExtractionOptions& o, const psf::AnyPsfData& psf) {
  const double n = wavelength_grid_length(o.wmin, o.wmax, o.dw);
  const psf::PsfSummary ps = psf.summary();
  if (!(n >= 1 && n <= kMaxGridLength) || o.specmin < 0 || o.nspec < 1 ||
      o.specmin + static_cast<long long>(o.nspec) > ps.nfib)
    return;  // the other checks' business
  const double lo = std::max(ps.trace_wavemin, o.wmin);
  const double hi = std::min(ps.trace_wavemax, o.wmin + (n - 1) * o.dw);
  const psf::LegendreTraceSet& rows = psf.rows();
  double spread = 0;
  for (int b0 = o.specmin; b0 < o.specmin + o.nspec; b0 += o.bundlesize) {
    const int f1 = std::min(b0 + o.bundlesize, o.specmin + o.nspec);
    for (int i = 0; i <= 16; ++i) {
      const double w = hi > lo ? lo + (hi - lo) * i / 16 : lo;
      double ylo = HUGE_VAL, yhi = -HUGE_VAL;
      for (int f = b0; f < f1; ++f) {
        ylo = std::min(ylo, rows.value(f, w));
        yhi = std::max(yhi, rows.value(f, w));
      }
      spread = std::max(spread, yhi - ylo);
    }
  }
  const double span = ps.spot_rows + std::nearbyint(o.pixpad_frac * ps.spot_rows) +
                      std::floor(o.wavepad_frac * ps.spot_rows) + spread + 2;
  const double rows_per_bin = rows.min_slope(o.specmin, o.nspec, lo, hi) * o.dw;
  if (!(rows_per_bin > 0) || !std::isfinite(rows_per_bin)) return;
  const double needed = std::max(std::ceil(span / rows_per_bin) + 1, ps.spot_rows / 2.0);
  if (!(needed <= kMaxGridLength)) return;
  while (o.wavepad() < needed) ++o.wavepad0;
}

struct SpecterGeometry {
  static constexpr Geometry id = Geometry::specter;
  static constexpr ModelFold model_fold = ModelFold::overwrite;

  // bundlesize fibres from specmin on, the requested ones alone.
  static std::vector<BundlePlan> bundles(const ExtractionOptions& o, int psf_nfib) {
    return make_bundles(o, psf_nfib, o.specmin, o.specmin + o.nspec);
  }

  // nwavestep clamped to the grid, then wavepad bounded (the padding follows the traces).
  static std::vector<std::string> fit_padding(ExtractionOptions& o, const psf::AnyPsfData& psf) {
    std::vector<std::string> warnings = clamp_nwavestep_to_grid(o);
    bound_specter_padding(o, psf);
    return warnings;
  }

  // Each patch's padding holds the band by construction (specter_patches).
  static void check_padding(const PatchGeometry&) {}

  // Every patch's box and padding (specter_patches, in frame_patches' order; the phase
  // plan_frame::specter_geometry, two small launches); the plan's padding becomes the largest
  // patch's, its padded grid that.
  using Layout = std::vector<SpecterPatch>;
  template <class ExecSpace, class Psf, class Plan>
  static Layout layout(const ExecSpace& exec, const Psf& psf,
                       const std::vector<BundlePlan>& bundles, Plan& plan) {
    Phase phase("plan_frame::specter_geometry", plan.phases);
    const ExtractionOptions& opt = plan.options;
    const int frame_lo = spot_fibres(bundles.front()).lo;
    Layout patches;
    for (const PatchDesc& p : frame_patches(bundles, opt, static_cast<int>(plan.wave.size()), 0)) {
      SpecterPatch s;
      s.speclo = frame_lo + p.fib0;
      s.spechi = s.speclo + p.nfib;
      s.k0 = p.kf0;
      s.nkeep = p.nkeep;
      patches.push_back(s);
    }
    PatchGeometry& g = plan.geometry;
    specter_patches(exec, psf, plan.wave, opt, g.ndiag, patches);
    g.wavepad = g.ndiag;
    for (const SpecterPatch& s : patches) g.wavepad = std::max({g.wavepad, s.nlo, s.nhi});
    g.nwt = g.nwavestep + 2 * g.wavepad;
    plan.set_padded_grid(exec);
    phase.stop(exec);
    return patches;
  }

  // The windows of the layout (specter_frame_patches).
  template <class Psf, class Plan, class Corners>
  static std::vector<PatchDesc> windows(const Layout& layout,
                                        const std::vector<BundlePlan>& bundles, const Psf&,
                                        const Plan& plan, const Corners&) {
    return specter_frame_patches(bundles, plan.options, static_cast<int>(plan.wave.size()), layout,
                                 plan.geometry.wavepad);
  }

  // specter's spots where its boxes start later than psf::compute_spots' (specter_spot_boxes).
  template <class ExecSpace, class Psf, class Wave, class Spots, class Corners>
  static void spot_boxes(const ExecSpace& exec, const Psf& psf, int f0, int nf, const Wave& wave,
                         const Spots& spots, const Corners& xcorner, const Corners& ycorner) {
    specter_spot_boxes(exec, psf, f0, nf, wave, spots, xcorner, ycorner);
  }
};

}  // namespace extract
}  // namespace perfex
