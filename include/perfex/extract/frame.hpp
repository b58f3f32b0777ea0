#pragma once
#include <perfex/extract/options.hpp>
#include <perfex/profiling.hpp>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace perfex {
namespace extract {

// desispec frame mask bits (desispec.maskbits.specmask).
enum FrameMaskBits : std::uint32_t {
  somebadpix = 1u << 0,  // pixmask_fraction > 0.5
  allbadpix = 1u << 1,   // pixmask_fraction == 1
  bad2dfit = 1u << 7,    // chi2pix outlier, or the bin's patch could not be solved
  nodata = 1u << 8,      // ivar 0: no pixel measures the bin (off the CCD or the PSF's domain,
                         // every pixel masked, or a failed patch)
};

// A block of frame bins: fibres [fibre0, fibre0 + nfibres) x wavelengths [wave0, wave0 + nwaves)
// (frame-relative indices).
struct BinBlock {
  int fibre0 = 0, nfibres = 0, wave0 = 0, nwaves = 0;
};

// An extracted frame on the host, in DESI units (flux per Angstrom, as gpu_specter and
// desispec write it).
struct Frame {
  int specmin = 0;
  int nspec = 0;
  int nwave = 0;
  int ndiag = 0;                         // resolution half-width nd; 2*nd+1 stored diagonals
  std::vector<double> wave;              // [nwave]
  std::vector<double> flux;              // [nspec][nwave]  electron / Angstrom
  std::vector<double> ivar;              // [nspec][nwave]
  std::vector<std::uint32_t> mask;       // [nspec][nwave]  FrameMaskBits
  std::vector<double> resolution;        // [nspec][2*nd+1][nwave]  DIA layout: R_f[k-nd+d][k]
  std::vector<double> chi2pix;           // [nspec][nwave]
  std::vector<double> pixmask_fraction;  // [nspec][nwave]
  std::vector<double> model;             // [npix_y][npix_x] when options.model_image, else empty
  int model_rows = 0, model_cols = 0;
  // Instead of `model` when a range asks for them (PatchRange::model_blocks): the blocks of the
  // range's patches, one after another in the plan's order (model_image.hpp).
  std::vector<double> model_blocks;
  ExtractionOptions options;  // the settings actually used (psferr resolved)
  // Run statistics.
  int npatches = 0;
  int failed_patches = 0;             // singular / non-finite systems: flux 0, ivar 0
  std::vector<BinBlock> failed_bins;  // the bins those patches should have given (BAD2DFIT)
  long long nonfinite_pixels = 0;     // NaN/Inf image or ivar pixels treated as masked
  double seconds = 0.0;
  // Patch linear algebra by patch_flops (band Cholesky, solve, blocks, eigen).
  double linalg_flops = 0.0;
  int max_band = 0;  // widest half-bandwidth of a patch's normal matrix
  // Execution: launches of the spot kernel and of the patch solver, and the bytes of spots and
  // patch scratch they used (within ExtractionOptions::memory_budget).
  int spot_launches = 0;
  int solver_launches = 0;
  std::int64_t scratch_bytes = 0;
  std::vector<std::string> warnings;  // one line per problem met (failed patches, bad pixels)
  PhaseTimes phases;                  // the drivers' phases that made it, with their times

  std::size_t index(int fibre, int k) const { return static_cast<std::size_t>(fibre) * nwave + k; }
};

namespace detail {

inline double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  const std::size_t h = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<long>(h), v.end());
  const double hi = v[h];
  if (v.size() % 2) return hi;
  return 0.5 * (hi + *std::max_element(v.begin(), v.begin() + static_cast<long>(h)));
}

}  // namespace detail

// desispec's spectrum mask: SOMEBADPIX / ALLBADPIX from pixmask_fraction, BAD2DFIT where
// chi2pix exceeds 5x its median over fibres at that wavelength and 5x its median over
// wavelengths for that fibre, and on the failed_bins; NODATA where ivar is 0 (gpu_specter
// masks those bins too). Computed on the whole frame (the medians span every fibre): a frame
// assembled from parts (MPI ranks) gets its mask once, after the assembly (with the parts'
// failed_bins shifted to the frame's fibres).
inline void set_frame_mask(Frame& frame) {
  frame.mask.assign(frame.flux.size(), 0u);
  std::vector<double> wave_median(static_cast<std::size_t>(frame.nwave)),
      fibre_median(static_cast<std::size_t>(frame.nspec));
  std::vector<double> tmp;
  for (int k = 0; k < frame.nwave; ++k) {
    tmp.clear();
    for (int f = 0; f < frame.nspec; ++f) tmp.push_back(frame.chi2pix[frame.index(f, k)]);
    wave_median[static_cast<std::size_t>(k)] = detail::median(tmp);
  }
  for (int f = 0; f < frame.nspec; ++f) {
    tmp.assign(frame.chi2pix.begin() + static_cast<long>(frame.index(f, 0)),
               frame.chi2pix.begin() + static_cast<long>(frame.index(f, 0) + frame.nwave));
    fibre_median[static_cast<std::size_t>(f)] = detail::median(tmp);
  }
  for (int f = 0; f < frame.nspec; ++f)
    for (int k = 0; k < frame.nwave; ++k) {
      const std::size_t i = frame.index(f, k);
      std::uint32_t m = 0;
      if (frame.pixmask_fraction[i] > 0.5) m |= somebadpix;
      if (frame.pixmask_fraction[i] >= 1.0 - 1e-9) m |= allbadpix;  // a spot's sum is 1 to rounding
      const double c = frame.chi2pix[i];
      if (c > 5 * wave_median[static_cast<std::size_t>(k)] &&
          c > 5 * fibre_median[static_cast<std::size_t>(f)])
        m |= bad2dfit;
      if (!(frame.ivar[i] > 0)) m |= nodata;
      frame.mask[i] = m;
    }
  for (const BinBlock& b : frame.failed_bins)
    for (int f = std::max(b.fibre0, 0); f < std::min(b.fibre0 + b.nfibres, frame.nspec); ++f)
      for (int k = std::max(b.wave0, 0); k < std::min(b.wave0 + b.nwaves, frame.nwave); ++k)
        frame.mask[frame.index(f, k)] |= bad2dfit | nodata;
}

}  // namespace extract
}  // namespace perfex
