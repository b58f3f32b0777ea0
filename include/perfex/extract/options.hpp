#pragma once
#include <perfex/detail/team_shape.hpp>
#include <perfex/error.hpp>

#include <cmath>
#include <cstdint>
#include <string>

namespace perfex {
namespace extract {

// wavepad_frac's upper bound: 10 + int(10 x 10) = 110 bins of padding on each side, about ten
// spot heights (desispec uses 0.2). The cost of a patch grows with the cube of its
// wavelengths, so larger values only make a run endless.
constexpr double kMaxWavepadFrac = 10.0;

// How the flux covariance is decorrelated (Bolton & Schlegel's resolution matrix R = Q / rowsum):
// per-fibre blocks of H^-1 (gpu_specter's and DESI's choice) or the full H^(1/2).
enum class Decorrelation { signal /* per-fibre blocks, DESI default */, noise /* full H^(1/2) */ };

// A decorrelation's name in options, command lines and frame headers.
inline const char* decorrelation_name(Decorrelation d) {
  return d == Decorrelation::noise ? "noise" : "signal";
}
// The decorrelation of a name; throws RequestError naming `what` (the option) for any other.
inline Decorrelation parse_decorrelation(const std::string& name,
                                         const std::string& what = "decorrelation") {
  for (Decorrelation d : {Decorrelation::signal, Decorrelation::noise})
    if (name == decorrelation_name(d)) return d;
  throw RequestError(what + " must be 'signal' or 'noise', got '" + name + "'");
}

// How a frame is cut into patches (a sub-bundle's fibres, nwavestep core bins, their padding
// and pixel window):
//   gpu_specter  gpu_specter's extract_frame: physical bundles; each core padded by wavepad()
//                bins on each side; the pixel window spans the padded spots, its rows cut to
//                pixpad_frac of the padding rows.
//   specter      specter's ex2d: bundles of bundlesize fibres from specmin; each patch's pixel
//                box is PSF.xyrange over its fibres and core, its rows padded by
//                round(pixpad_frac x spot rows); its padding reaches the bins of the first
//                fibre int(wavepad_frac x spot rows) rows beyond that box (at least the
//                resolution half-width), so it differs from patch to patch.
//   automatic    by the PSF's format (resolve_geometry, geometry.hpp; every front end and
//                extract_frame on PSF data): gpu_specter for the PSFs gpu_specter reads
//                (GAUSS-HERMITE with specex's PSF, XTRACE and YTRACE HDUs, and gpu_specter's
//                PSF dicts), specter for every other format; without PSF data (a plan from a
//                PSF model alone) gpu_specter.
// Each geometry is a header of extract/geometry/, chosen by geometry.hpp.
enum class Geometry { automatic, gpu_specter, specter };

// Each geometry's name in options, command lines and frame headers, in Geometry's order.
constexpr const char* kGeometryNames[] = {"automatic", "gpu_specter", "specter"};

inline const char* geometry_name(Geometry g) { return kGeometryNames[static_cast<int>(g)]; }
// The geometry of a name; throws RequestError naming `what` (the option) for any other.
inline Geometry parse_geometry(const std::string& name, const std::string& what = "geometry") {
  constexpr int count = static_cast<int>(sizeof kGeometryNames / sizeof kGeometryNames[0]);
  for (int i = 0; i < count; ++i)
    if (name == kGeometryNames[i]) return static_cast<Geometry>(i);
  std::string names;  // the concrete ones, then automatic
  for (int i = 1; i < count; ++i)
    names += std::string(i > 1 ? ", '" : "'") + kGeometryNames[i] + "'";
  throw RequestError(what + " must be " + names + " or '" + kGeometryNames[0] + "', got '" + name +
                     "'");
}

// Every setting of a frame extraction, with the DESI / gpu_specter production defaults
// (desi_extract_spectra's). The numerical policy lives here too and is written into the frame
// header; the execution settings at the end change how the work is cut, never the results.
struct ExtractionOptions {
  // Output wavelength grid "wmin,wmax,dw" (numpy.arange(wmin, wmax + dw/2, dw) semantics).
  double wmin = 5760.0, wmax = 7620.0, dw = 0.8;
  int specmin = 0;
  int nspec = 500;  // front ends clip this default to the PSF's fibres (resolve_request)
  int bundlesize = 25;
  int nsubbundles = 5;
  int nwavestep = 50;
  Geometry geometry = Geometry::automatic;
  // wavepad = wavepad0 + int(wavepad0 * wavepad_frac); with the specter geometry, the bound
  // on every patch's padding that resolve_request sets from the PSF's traces.
  int wavepad0 = 10;
  double wavepad_frac = 0.2;
  double pixpad_frac = 0.8;
  // The specter geometry's image rows [row_min, row_max) (row_max -1: the CCD's last): its
  // patch boxes are clipped to them, as specter's ex2d clips them to its xyrange's rows.
  int row_min = 0, row_max = -1;
  double regularize = 0.0;
  double psferr = -1.0;  // -1: the PSF file's PSFERR (0.01 when absent); else finite, >= 0
  Decorrelation decorrelation = Decorrelation::signal;
  double eigen_clip = 1e-14;  // eigenvalues clipped at eigen_clip * max (gpu_specter GPU)
  bool model_image = false;   // also make the model image (the geometry's: model_image.hpp)

  // Execution settings.
  // Bytes the extraction may allocate besides its input and output (spots, corners and the
  // patch solver's scratch); they bound the patches per solver launch. 0 = automatic: half the
  // free device memory on CUDA, 512 MiB on host backends. Processes sharing a GPU (MPI ranks
  // under MPS) each set their share.
  std::int64_t memory_budget = 0;
  // Upper bound on the patches per solver launch. 0 = automatic: four per thread on host
  // backends (their scratch stays in cache), as many as memory_budget allows on a device.
  int batch_patches = 0;
  // Team shape of the patch kernels (0 = the backend's default, perfex/detail/team_shape.hpp);
  // for tests and tuning.
  int team_size = 0;
  int vector_length = 0;
  // Throws perfex::Error naming the first invalid parameter.
  void validate() const {
    auto fail = [](const std::string& what) { throw Error("extraction option " + what); };
    if (!(dw > 0) || !(wmax >= wmin))
      fail("wavelength grid (-w wmin,wmax,dw): need wmin <= wmax and dw > 0");
    if (specmin < 0) fail("specmin must be >= 0");
    if (nspec < 1) fail("nspec must be >= 1");
    if (bundlesize < 1) fail("bundlesize must be >= 1");
    if (nsubbundles < 1) fail("nsubbundles must be >= 1");
    if (nwavestep < 1) fail("nwavestep must be >= 1");
    if (wavepad0 < 0) fail("wavepad must be >= 0");
    if (!(wavepad_frac >= 0 && wavepad_frac <= kMaxWavepadFrac))
      fail("wavepad_frac must be in [0, 10]");
    if (!(pixpad_frac >= 0 && pixpad_frac <= 1)) fail("pixpad_frac must be in [0, 1]");
    if (row_min < 0 || (row_max != -1 && row_max <= row_min))
      fail("row_min, row_max must be 0 <= row_min < row_max (or row_max -1: the CCD's)");
    if (!(regularize >= 0) || !std::isfinite(regularize))
      fail("regularize must be finite and >= 0");
    if (!(std::isfinite(psferr) && (psferr >= 0 || psferr == -1.0)))
      fail("psferr must be finite and >= 0 (or -1: the PSF's PSFERR)");
    if (!(eigen_clip >= 0 && eigen_clip < 1)) fail("eigen_clip must be in [0, 1)");
    if (memory_budget < 0) fail("memory_budget must be >= 0 (0 = automatic)");
    if (batch_patches < 0) fail("batch_patches must be >= 0");
    if (team_size < 0 || vector_length < 0) fail("team_size and vector_length must be >= 0");
    if (vector_length > 0 && !perfex::detail::is_vector_length(vector_length))
      fail("vector_length must be 0 (the backend's default) or a power of two");
  }
  // Saturates at INT_MAX (resolve_request then clamps it to the grid) instead of overflowing.
  int wavepad() const {
    const double pad = static_cast<double>(wavepad0) + std::floor(wavepad0 * wavepad_frac);
    return pad < 2147483647.0 ? static_cast<int>(pad) : 2147483647;
  }
};

}  // namespace extract
}  // namespace perfex
