#pragma once
// Host-side patch planning: bundles, sub-bundles with padding fibres, wavelength patches and,
// by gpu_specter's rules, their pixel windows (specter's: specter_geometry.hpp); then how the
// frame's patches are cut into spot groups and solver launches within a memory budget.
#include <perfex/error.hpp>
#include <perfex/extract/options.hpp>
#include <perfex/psf/data.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
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

// Bundles are the physical ones, [b*bundlesize, (b+1)*bundlesize), intersected with the
// requested fibres, padding fibres possibly from the rest of the physical bundle (gpu_specter);
// with the specter geometry, bundlesize fibres from specmin on, the requested ones alone.
struct BundlePlan {
  int bundle_lo = 0, bundle_hi = 0;  // physical bundle, clipped to the PSF's fibres
  int req_lo = 0, req_hi = 0;        // requested fibres inside it
  std::vector<SubBundle> subbundles;
};

inline std::vector<BundlePlan> plan_bundles(const ExtractionOptions& opt, int psf_nfib) {
  std::vector<BundlePlan> plans;
  const std::string problem =
      psf::fibre_range_problem(opt.specmin, opt.nspec, psf_nfib, "specmin", "nspec");
  if (!problem.empty()) throw RequestError(problem);
  const int lo = opt.specmin, hi = opt.specmin + opt.nspec;
  const bool specter = opt.geometry == Geometry::specter;
  for (int b0 = specter ? lo : (lo / opt.bundlesize) * opt.bundlesize; b0 < hi;
       b0 += opt.bundlesize) {
    BundlePlan p;
    p.bundle_lo = b0;
    p.bundle_hi = std::min(b0 + opt.bundlesize, specter ? hi : psf_nfib);
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

// The frame's sub-bundles in order, each with the fibres its patches solve (absolute, with the
// padding) and its patches' positions in plan_frame_patches' list.
struct SubBundleSpan {
  int fibre_lo = 0, fibre_hi = 0;
  int patch_lo = 0, patch_hi = 0;
};

inline std::vector<SubBundleSpan> subbundle_spans(const std::vector<BundlePlan>& bundles,
                                                  int patches_per_subbundle) {
  std::vector<SubBundleSpan> spans;
  int patch = 0;
  for (const BundlePlan& b : bundles)
    for (const SubBundle& sub : b.subbundles) {
      const FibreRange solved = solved_fibres(b, sub);
      spans.push_back({solved.lo, solved.hi, patch, patch + patches_per_subbundle});
      patch += patches_per_subbundle;
    }
  return spans;
}

// Consecutive sub-bundles whose spots are computed in one launch and kept while their patches
// are solved.
struct SpotGroup {
  int fibre_lo = 0, fibre_hi = 0;  // absolute fibres whose spots the group's patches use
  int patch_lo = 0, patch_hi = 0;  // the group's patches in the frame's list
};

// How a frame's patches run within a memory budget: the spot groups, the patches per solver
// launch, and what that allocates.
struct LaunchPlan {
  std::vector<SpotGroup> groups;
  int batch = 0;            // patches per solver launch at most (the scratch's slices)
  int spot_fibres = 0;      // fibres of the largest group (the spot buffer's)
  int solver_launches = 0;  // over all groups
  std::int64_t bytes = 0;   // spot buffer + patch scratch
};

// Sets plan's batch from at most batch patches per launch, as many launches per group, as even
// as they can be (the least scratch), with the launches and bytes that follow.
inline void set_batch(LaunchPlan& plan, int batch, double spot_bytes_per_fibre,
                      double bytes_per_patch) {
  int even = 1, launches = 0;
  for (const SpotGroup& g : plan.groups) {
    const int n = g.patch_hi - g.patch_lo, per = (n + batch - 1) / batch;
    if (per > 0) even = std::max(even, (n + per - 1) / per);
    launches += per;
  }
  plan.batch = even;
  plan.solver_launches = launches;
  plan.bytes =
      static_cast<std::int64_t>(spot_bytes_per_fibre * plan.spot_fibres + bytes_per_patch * even);
}

// Chooses the spot groups (consecutive sub-bundles, near-equal in size) and the batch so that
// the spots of a group (spot_bytes_per_fibre each) and batch patches' scratch
// (bytes_per_patch each) fit in budget bytes together, with the fewest solver launches, then
// the fewest groups (spot launches). max_batch > 0 caps the batch. Throws when even one
// sub-bundle's spots and one patch do not fit.
inline LaunchPlan plan_launches(const std::vector<SubBundleSpan>& spans,
                                double spot_bytes_per_fibre, double bytes_per_patch, double budget,
                                int max_batch = 0) {
  const int nspans = static_cast<int>(spans.size());
  LaunchPlan best;
  double smallest_need = -1;
  for (int ngroups = 1; ngroups <= nspans; ++ngroups) {
    std::vector<SpotGroup> groups;
    int spot_fibres = 0, largest = 0;
    for (int g = 0; g < ngroups; ++g) {
      const SubBundleSpan& first = spans[static_cast<std::size_t>(g * nspans / ngroups)];
      const SubBundleSpan& last = spans[static_cast<std::size_t>((g + 1) * nspans / ngroups - 1)];
      groups.push_back({first.fibre_lo, last.fibre_hi, first.patch_lo, last.patch_hi});
      spot_fibres = std::max(spot_fibres, last.fibre_hi - first.fibre_lo);
      largest = std::max(largest, last.patch_hi - first.patch_lo);
    }
    const double spot_bytes = spot_bytes_per_fibre * spot_fibres;
    const double need = spot_bytes + bytes_per_patch;
    if (smallest_need < 0 || need < smallest_need) smallest_need = need;
    if (need > budget) continue;
    int batch = static_cast<int>(
        std::min<double>(largest, std::floor((budget - spot_bytes) / bytes_per_patch)));
    if (max_batch > 0) batch = std::min(batch, max_batch);
    int launches = 0;
    for (const SpotGroup& g : groups) launches += (g.patch_hi - g.patch_lo + batch - 1) / batch;
    if (!best.groups.empty() && launches >= best.solver_launches) continue;
    best.groups = groups;
    best.spot_fibres = spot_fibres;
    set_batch(best, batch, spot_bytes_per_fibre, bytes_per_patch);
  }
  if (best.groups.empty() && nspans > 0) {
    auto mib = [](double bytes) {
      char text[32];
      std::snprintf(text, sizeof text, "%.1f MiB", bytes / 1048576.0);
      return std::string(text);
    };
    throw Error("extraction option memory_budget: " + mib(budget) + " is less than the " +
                mib(smallest_need) + " that one sub-bundle's spots and one patch's scratch need");
  }
  return best;
}

}  // namespace extract
}  // namespace perfex
