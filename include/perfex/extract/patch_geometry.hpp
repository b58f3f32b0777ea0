#pragma once
// A patch's shape as the solver sees it: the geometry that sizes the solver's scratch and loops
// (patch_geometry), where its unknowns sit (wavelength-major: unknown j is bin j / nfib of fibre
// j % nfib), and the flop count of its linear algebra (patch_flops).
#include <perfex/extract/model_image.hpp>
#include <perfex/extract/options.hpp>
#include <perfex/extract/patches.hpp>
#include <perfex/linalg/band_cholesky.hpp>
#include <perfex/linalg/flops.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace perfex {
namespace extract {

// The shape of the patches a solver handles: what sizes its scratch (PatchWorkspace) and its
// loops. patch_geometry fills the part the options and the PSF fix; the plan sets the model
// fold of its geometry and measures nfib, band and maxpix.
struct PatchGeometry {
  int nwt = 0;        // wavelengths per fibre: nwavestep core + 2 * wavepad padding
  int wavepad = 0;    // padding wavelengths on each side of the core
  int nwavestep = 0;  // core wavelengths
  int ndiag = 0;      // resolution half-width (the PSF's HSIZEY)
  int spot_rows = 0, spot_cols = 0;
  int nfib = 0;    // solved fibres of the largest patch, padding included
  int band = 0;    // widest half-bandwidth of a patch's normal matrix
  int maxpix = 0;  // largest pixel window
  Decorrelation decorrelation = Decorrelation::signal;
  bool model_image = false;               // the patches also make their blocks of the model image
  ModelFold model_fold = ModelFold::sum;  // what the blocks hold (the plan's geometry's)

  int nmax() const { return nfib * nwt; }  // unknowns of the largest patch
  // Order of the eigenproblems: a fibre's block, or all unknowns for the noise variant.
  int neig() const { return decorrelation == Decorrelation::noise ? nmax() : nwt; }
};

inline PatchGeometry patch_geometry(const ExtractionOptions& options, int spot_rows, int spot_cols,
                                    int ndiag) {
  PatchGeometry g;
  g.wavepad = options.wavepad();
  g.nwavestep = options.nwavestep;
  g.nwt = g.nwavestep + 2 * g.wavepad;
  g.ndiag = ndiag;
  g.spot_rows = spot_rows;
  g.spot_cols = spot_cols;
  g.decorrelation = options.decorrelation;
  g.model_image = options.model_image;
  return g;
}

// Where a fibre's wavelength bins sit in an index space: first + i * step.
struct Strided {
  int first, step;
  KOKKOS_INLINE_FUNCTION int operator()(int i) const { return first + i * step; }
};

// Fibre and wavelength of a patch's unknowns (wavelength-major: unknown j is bin j / nfib of
// fibre j % nfib). The division is a multiply-shift by ⌊2^32 / nfib⌋ + 1, exact for
// j < 2^32 / nfib: it runs once per matrix entry, where a hardware integer division costs
// tens of cycles on a CPU.
struct PatchUnknowns {
  int fib0, kf0, nfib;
  std::uint64_t reciprocal;
  KOKKOS_INLINE_FUNCTION explicit PatchUnknowns(const PatchDesc& p)
      : fib0(p.fib0),
        kf0(p.kf0),
        nfib(p.nfib),
        reciprocal((std::uint64_t(1) << 32) / static_cast<std::uint64_t>(p.nfib) + 1) {}
  // Wavelength bin of unknown j, counted from the patch's first.
  KOKKOS_INLINE_FUNCTION int bin(int j) const {
    return static_cast<int>((static_cast<std::uint64_t>(j) * reciprocal) >> 32);
  }
  KOKKOS_INLINE_FUNCTION int fibre(int j) const { return fib0 + j - bin(j) * nfib; }
  KOKKOS_INLINE_FUNCTION int wave(int j) const { return kf0 + bin(j); }
};

// Flops of one patch's linear algebra (patch.band set, ndiag the resolution half-width): band
// Cholesky and solve, then the kept fibres' blocks of H^-1 and their decorrelation, or H^(1/2)
// for noise decorrelation.
inline double patch_flops(const PatchDesc& p, int nwt, int ndiag, Decorrelation decorrelation) {
  namespace fl = linalg::flops;
  const int n = p.nfib * nwt;
  double f = fl::band_cholesky(n, p.band) + fl::band_solve(n, p.band);
  if (decorrelation == Decorrelation::noise) return f + fl::inverse_sqrt(n);
  const int twist = linalg::band_twist(n);  // the twisted factor costs band_cholesky(n) too
  for (int k = 0; k < p.nkeepfib; ++k)
    f += fl::band_strided_block(n, p.band, p.keep0 + k, p.nfib, nwt, twist) +
         fl::fibre_decorrelation(nwt, ndiag, p.nkeep);
  return f;
}

}  // namespace extract
}  // namespace perfex
