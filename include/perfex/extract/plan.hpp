#pragma once
// Host-side patch planning (spec §5.2-5.4): bundles, sub-bundles with padding fibres,
// wavelength patches and their pixel windows.
#include <perfex/error.hpp>
#include <perfex/extract/options.hpp>

#include <algorithm>
#include <string>
#include <vector>

namespace perfex {
namespace extract {

// One patch, as the device solver sees it. Fibre indices are local to the bundle's spot
// arrays; wavelength indices are in the padded grid.
struct PatchDesc {
  int fib0 = 0;      // first solved fibre (local)
  int nfib = 0;      // solved fibres, padding included
  int keep0 = 0;     // position of the first kept fibre in the solved set
  int nkeepfib = 0;  // kept fibres
  int kf0 = 0;       // first padded-grid wavelength (= output index of the first core bin)
  int nkeep = 0;     // kept (core) wavelengths, <= nwavestep
  int row0 = 0, row1 = 0, col0 = 0, col1 = 0;  // pixel window, half-open, clipped to the CCD
  int out_fibre0 = 0;  // frame row (fibre - specmin) of the first kept fibre
  // Half-bandwidth of the normal matrix, unknowns wavelength-major (set on the device).
  int band = 0;
};

struct SubBundle {
  int first = 0;  // first fibre of the sub-bundle (absolute)
  int count = 0;  // fibres kept
};

// Splits n fibres into nsub sub-bundles like specter's split_bundle: numpy.array_split sizes,
// the larger ones at the two ends so any smaller ones sit in the middle.
inline std::vector<int> split_sizes(int n, int nsub) {
  nsub = std::max(1, std::min(nsub, n));
  const int base = n / nsub, extra = n % nsub;
  std::vector<int> sizes(static_cast<std::size_t>(nsub), base);
  for (int i = 0; i < extra; ++i) {
    const int pos = (i % 2 == 0) ? i / 2 : nsub - 1 - i / 2;
    sizes[static_cast<std::size_t>(pos)] += 1;
  }
  return sizes;
}

// Bundles are the physical ones, [b*bundlesize, (b+1)*bundlesize), intersected with the
// requested fibres; padding fibres may come from the rest of the physical bundle.
struct BundlePlan {
  int bundle_lo = 0, bundle_hi = 0;  // physical bundle, clipped to the PSF's fibres
  int req_lo = 0, req_hi = 0;        // requested fibres inside it
  std::vector<SubBundle> subbundles;
};

inline std::vector<BundlePlan> plan_bundles(const ExtractionOptions& opt, int psf_nfib) {
  std::vector<BundlePlan> plans;
  const int lo = opt.specmin, hi = opt.specmin + opt.nspec;
  if (lo < 0 || hi > psf_nfib)
    throw Error("fibres [" + std::to_string(lo) + ", " + std::to_string(hi) +
                ") outside the PSF's " + std::to_string(psf_nfib) + " fibres (specmin/nspec)");
  for (int b0 = (lo / opt.bundlesize) * opt.bundlesize; b0 < hi; b0 += opt.bundlesize) {
    BundlePlan p;
    p.bundle_lo = b0;
    p.bundle_hi = std::min(b0 + opt.bundlesize, psf_nfib);
    p.req_lo = std::max(b0, lo);
    p.req_hi = std::min(p.bundle_hi, hi);
    int first = p.req_lo;
    for (int size : split_sizes(p.req_hi - p.req_lo, opt.nsubbundles)) {
      p.subbundles.push_back({first, size});
      first += size;
    }
    plans.push_back(p);
  }
  return plans;
}

// Pixel window of a patch from its spot corners (spec §5.4). corner(f, k) gives the corner of
// local fibre f at padded wavelength k. Rows keep pixpad_frac of the padding rows each side
// (with Python int() truncation), columns span every solved spot; then clipped to the CCD.
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
// inside the physical bundle (spec §5.3), half-open [lo, hi).
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
// of nwavestep, with their pixel windows. Fibre indices are local to spot_fibres(bundle);
// corner functions as for set_patch_window; npix_x x npix_y is the CCD.
template <class XCornerFn, class YCornerFn>
std::vector<PatchDesc> plan_patches(const BundlePlan& bundle, const ExtractionOptions& opt,
                                    int nwave, int nx, int ny, int npix_x, int npix_y,
                                    const XCornerFn& xcorner, const YCornerFn& ycorner) {
  const int wavepad = opt.wavepad(), nwt = opt.nwavestep + 2 * wavepad;
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
      set_patch_window(p, nwt, wavepad, opt.nwavestep, nx, ny, opt.pixpad_frac, npix_x, npix_y,
                       xcorner, ycorner);
      plan.push_back(p);
    }
  }
  return plan;
}

}  // namespace extract
}  // namespace perfex
