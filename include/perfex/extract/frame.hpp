#pragma once
#include <perfex/extract/options.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace perfex {
namespace extract {

// desispec frame mask bits (desispec.maskbits.specmask).
enum FrameMaskBits : std::uint32_t {
  somebadpix = 1u << 0,  // pixmask_fraction > 0.5
  allbadpix = 1u << 1,   // pixmask_fraction == 1
  bad2dfit = 1u << 7,    // chi2pix outlier (spec §6.8)
};

// An extracted frame on the host, in DESI units (flux per Angstrom, spec §5.6).
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
  ExtractionOptions options;  // the settings actually used (psferr resolved)
  // Run statistics.
  int npatches = 0;
  int failed_patches = 0;          // singular / non-finite systems: flux 0, ivar 0
  long long nonfinite_pixels = 0;  // NaN/Inf image or ivar pixels treated as masked
  double seconds = 0.0;
  // Patch linear algebra by patch_flops (band Cholesky, solve, blocks, eigen).
  double linalg_flops = 0.0;
  int max_band = 0;                   // widest half-bandwidth of a patch's normal matrix
  std::vector<std::string> warnings;  // one line per problem met (failed patches, bad pixels)

  std::size_t index(int fibre, int k) const { return static_cast<std::size_t>(fibre) * nwave + k; }
};

}  // namespace extract
}  // namespace perfex
