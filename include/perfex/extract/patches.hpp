#pragma once
// A frame's patches on the host: bundles, sub-bundles with padding fibres, wavelength patches
// and, by gpu_specter's rules, their pixel windows (specter's: specter_geometry.hpp). Which
// bundles and windows a frame takes is its geometry's choice (extract/geometry/); plan.hpp cuts
// the patches into spot groups and solver launches.
#include <perfex/error.hpp>
#include <perfex/extract/options.hpp>
#include <perfex/psf/data.hpp>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

namespace perfex {
namespace extract {

// One patch, as the device solver sees it. Fibre indices are local to the spot arrays the
// patch is solved with (those of its spot group in a frame); wavelength indices are in the
// padded grid.
struct PatchDesc {
  int fib0 = 0;      // first solved fibre (local)
  int nfib = 0;      // solved fibres, padding included
  int keep0 = 0;     // position of the first kept fibre in the solved set
  int nkeepfib = 0;  // kept fibres
  int kf0 = 0;       // first padded-grid wavelength (= output index of the first core bin)
  int nkeep = 0;     // kept (core) wavelengths, <= nwavestep
  int row0 = 0, row1 = 0, col0 = 0, col1 = 0;  // pixel window, half-open, clipped to the CCD
  int out_fibre0 = 0;  // frame row (fibre - specmin) of the first kept fibre
  // The fitted wavelengths [wave_lo, wave_hi) of the patch's nwt (all with gpu_specter's
  // geometry; specter's pads each patch by its own number of bins): the others are left out.
  int wave_lo = 0, wave_hi = 0;
  // Half-bandwidth of the normal matrix, unknowns wavelength-major (set on the device).
  int band = 0;
};

struct SubBundle {
  int first = 0;  // first fibre of the sub-bundle (absolute)
  int count = 0;  // fibres kept
};

// Splits n fibres into nsub sub-bundles as specter's split_bundle does: numpy.array_split's
// sizes (the larger first), then one pass that swaps each part larger than the next, so the
// last part and the first extra - 1 are the larger (25 / 4: 6, 6, 6, 7; 11 / 3: 4, 3, 4).
inline std::vector<int> split_sizes(int n, int nsub) {
  nsub = std::max(1, std::min(nsub, n));
  const int base = n / nsub, extra = n % nsub;
  std::vector<int> sizes(static_cast<std::size_t>(nsub), base);
  for (int i = 0; i < extra; ++i) sizes[static_cast<std::size_t>(i)] += 1;
  for (std::size_t i = 0; i + 1 < sizes.size(); ++i)
    if (sizes[i] > sizes[i + 1]) std::swap(sizes[i], sizes[i + 1]);
  return sizes;
}

// A bundle: bundlesize fibres [bundle_lo, bundle_hi) intersected with the requested fibres
// [req_lo, req_hi), its padding fibres possibly from the rest of the bundle; where bundles start
// and end is each geometry's rule (extract/geometry/).
struct BundlePlan {
  int bundle_lo = 0, bundle_hi = 0;  // the bundle, clipped as its geometry says
  int req_lo = 0, req_hi = 0;        // requested fibres inside it
  std::vector<SubBundle> subbundles;
};

// The bundles over the requested fibres: bundlesize fibres each from fibre `first` on (at most
// specmin), each ending at fibre `last` at the latest, each split into sub-bundles (split_sizes).
inline std::vector<BundlePlan> make_bundles(const ExtractionOptions& opt, int psf_nfib, int first,
                                            int last) {
  std::vector<BundlePlan> plans;
  const std::string problem =
      psf::fibre_range_problem(opt.specmin, opt.nspec, psf_nfib, "specmin", "nspec");
  if (!problem.empty()) throw RequestError(problem);
  const int lo = opt.specmin, hi = opt.specmin + opt.nspec;
  for (int b0 = first; b0 < hi; b0 += opt.bundlesize) {
    BundlePlan p;
    p.bundle_lo = b0;
    p.bundle_hi = std::min(b0 + opt.bundlesize, last);
    p.req_lo = std::max(b0, lo);
    p.req_hi = std::min(p.bundle_hi, hi);
    int first_fibre = p.req_lo;
    for (int size : split_sizes(p.req_hi - p.req_lo, opt.nsubbundles)) {
      p.subbundles.push_back({first_fibre, size});
      first_fibre += size;
    }
    plans.push_back(p);
  }
  return plans;
}

// Pixel window of a patch from its spot corners (gpu_specter's ex2d_padded). corner(f, k) gives the
// corner of local fibre f at padded wavelength k. Rows keep pixpad_frac of the padding rows each
// side (with Python int() truncation), columns span every solved spot; then clipped to the CCD.
template <class XCornerFn, class YCornerFn>
void set_patch_window(PatchDesc& p, int nwt, int wavepad, int nwavestep, int nx, int ny,
                      double pixpad_frac, int npix_x, int npix_y, const XCornerFn& xcorner,
                      const YCornerFn& ycorner) {
  int xmin = 1 << 30, xmax = -(1 << 30), ypadmin = 1 << 30, ypadmax = -(1 << 30);
  int ymin = 1 << 30, ymax = -(1 << 30);
  for (int f = p.fib0; f < p.fib0 + p.nfib; ++f) {
    for (int k = p.kf0; k < p.kf0 + nwt; ++k) {
      const int c0 = xcorner(f, k), r0 = ycorner(f, k);
      xmin = std::min(xmin, c0);
      xmax = std::max(xmax, c0 + nx);
      ypadmin = std::min(ypadmin, r0);
      ypadmax = std::max(ypadmax, r0 + ny);
      if (k >= p.kf0 + wavepad && k < p.kf0 + wavepad + nwavestep) {
        ymin = std::min(ymin, r0);
        ymax = std::max(ymax, r0 + ny);
      }
    }
  }
  const int lo = static_cast<int>((ymin - ypadmin) * (1.0 - pixpad_frac));
  const int hi = static_cast<int>((ymax - ypadmin) + (ypadmax - ymax) * pixpad_frac);
  p.row0 = std::max(0, std::min(npix_y, ypadmin + lo));
  p.row1 = std::max(p.row0, std::min(npix_y, ypadmin + hi));
  p.col0 = std::max(0, std::min(npix_x, xmin));
  p.col1 = std::max(p.col0, std::min(npix_x, xmax));
}

// Fibres solved for a sub-bundle: its own plus one padding neighbour on each side that lies
// inside the physical bundle (spectral padding), half-open [lo, hi).
struct FibreRange {
  int lo = 0, hi = 0;
};
inline FibreRange solved_fibres(const BundlePlan& bundle, const SubBundle& sub) {
  return {
      sub.first > bundle.bundle_lo ? sub.first - 1 : sub.first,
      sub.first + sub.count < bundle.bundle_hi ? sub.first + sub.count + 1 : sub.first + sub.count};
}

// Fibres whose spots a bundle's patches use.
inline FibreRange spot_fibres(const BundlePlan& bundle) {
  return {solved_fibres(bundle, bundle.subbundles.front()).lo,
          solved_fibres(bundle, bundle.subbundles.back()).hi};
}

// A bundle's patches, sub-bundle by sub-bundle, each over the nwave output wavelengths in steps
// of nwavestep, all nwt wavelengths fitted, without pixel windows. Fibre indices are local to
// spot_fibres(bundle).
inline std::vector<PatchDesc> bundle_patches(const BundlePlan& bundle, const ExtractionOptions& opt,
                                             int nwave, int nwt) {
  const int spot_lo = spot_fibres(bundle).lo;
  std::vector<PatchDesc> plan;
  for (const auto& sub : bundle.subbundles) {
    const FibreRange solved = solved_fibres(bundle, sub);
    for (int k0 = 0; k0 < nwave; k0 += opt.nwavestep) {
      PatchDesc p;
      p.fib0 = solved.lo - spot_lo;
      p.nfib = solved.hi - solved.lo;
      p.keep0 = sub.first - solved.lo;
      p.nkeepfib = sub.count;
      p.kf0 = k0;
      p.nkeep = std::min(opt.nwavestep, nwave - k0);
      p.out_fibre0 = sub.first - opt.specmin;
      p.wave_lo = 0;
      p.wave_hi = nwt;
      plan.push_back(p);
    }
  }
  return plan;
}

// gpu_specter's pixel windows of patches of nwavestep + 2 wavepad() bins (set_patch_window;
// corner functions as there, taking the patches' fibre indices); npix_x x npix_y is the CCD.
template <class XCornerFn, class YCornerFn>
void set_patch_windows(std::vector<PatchDesc>& patches, const ExtractionOptions& opt, int nx,
                       int ny, int npix_x, int npix_y, const XCornerFn& xcorner,
                       const YCornerFn& ycorner) {
  const int wavepad = opt.wavepad(), nwt = opt.nwavestep + 2 * wavepad;
  for (PatchDesc& p : patches)
    set_patch_window(p, nwt, wavepad, opt.nwavestep, nx, ny, opt.pixpad_frac, npix_x, npix_y,
                     xcorner, ycorner);
}

// bundle_patches with gpu_specter's pixel windows.
template <class XCornerFn, class YCornerFn>
std::vector<PatchDesc> plan_patches(const BundlePlan& bundle, const ExtractionOptions& opt,
                                    int nwave, int nx, int ny, int npix_x, int npix_y,
                                    const XCornerFn& xcorner, const YCornerFn& ycorner) {
  std::vector<PatchDesc> plan =
      bundle_patches(bundle, opt, nwave, opt.nwavestep + 2 * opt.wavepad());
  set_patch_windows(plan, opt, nx, ny, npix_x, npix_y, xcorner, ycorner);
  return plan;
}

// Every patch of the frame, bundle by bundle, without pixel windows, fibre indices relative to
// the frame's first spot fibre, spot_fibres(bundles.front()).lo.
inline std::vector<PatchDesc> frame_patches(const std::vector<BundlePlan>& bundles,
                                            const ExtractionOptions& opt, int nwave, int nwt) {
  std::vector<PatchDesc> all;
  if (bundles.empty()) return all;
  const int frame_lo = spot_fibres(bundles.front()).lo;
  for (const BundlePlan& bundle : bundles) {
    const int offset = spot_fibres(bundle).lo - frame_lo;
    for (PatchDesc& p : bundle_patches(bundle, opt, nwave, nwt)) {
      p.fib0 += offset;
      all.push_back(p);
    }
  }
  return all;
}

// frame_patches with gpu_specter's pixel windows; the corner functions take frame-relative
// fibre indices.
template <class XCornerFn, class YCornerFn>
std::vector<PatchDesc> plan_frame_patches(const std::vector<BundlePlan>& bundles,
                                          const ExtractionOptions& opt, int nwave, int nx, int ny,
                                          int npix_x, int npix_y, const XCornerFn& xcorner,
                                          const YCornerFn& ycorner) {
  std::vector<PatchDesc> all =
      frame_patches(bundles, opt, nwave, opt.nwavestep + 2 * opt.wavepad());
  set_patch_windows(all, opt, nx, ny, npix_x, npix_y, xcorner, ycorner);
  return all;
}

}  // namespace extract
}  // namespace perfex
