#pragma once
// Checks of an extraction request against its PSF and image, made before anything large is
// allocated, so a bad request fails at once with the numbers instead of running for minutes,
// exhausting memory or returning a frame of empty bins. Host only: every front end calls them
// (through resolve_request) between reading the inputs and planning.
//
//   check_fibres            the fibres exist in the PSF
//   check_wavelength_grid   the grid has a sane length and reaches the PSF's domain
//   resolve_geometry        an automatic patch geometry chosen by the PSF's format (geometry.hpp)
//   fit_geometry_padding    nwavestep clamped to the grid and the wavelength padding fitted to
//                           the PSF and the grid, by the geometry's rules (its fit_padding)
//   check_psf_over_grid     the PSF's widths stay valid where the padded grid extrapolates
//   check_image_size        the image is the PSF's CCD (not transposed, not cut)
//   estimate_run_size       the memory the extraction will use, to compare with what is free
//   check_host_memory,      that it fits in what this process may still allocate, or in what
//   check_device_memory     is free on the device (the numbers come from perfex/memory.hpp)
//   preflight               all of them (the image size only when asked)
//   resolve_request         what every front end (perfex-extract, the Python API, command
//                           line and drop-in) calls: the PSF's defaults filled in, every check
//                           above, refusals as RequestError naming the front end's parameter
//
// Refusals of a request (fibres, grid, sizes) are RequestError; an image that is not the PSF's
// CCD is an Error (invalid input).
#include <perfex/error.hpp>
#include <perfex/extract/geometry.hpp>
#include <perfex/extract/grid_limits.hpp>
#include <perfex/extract/options.hpp>
#include <perfex/memory.hpp>
#include <perfex/psf/any_psf.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

namespace perfex {
namespace extract {

// Throws unless fibres [specmin, specmin + nspec) are all in the PSF.
inline void check_fibres(const ExtractionOptions& o, const psf::AnyPsfData& psf) {
  const std::string problem =
      psf::fibre_range_problem(o.specmin, o.nspec, psf.summary().nfib, "specmin", "nspec");
  if (!problem.empty()) throw RequestError(problem);
}

// Throws unless the grid wmin,wmax,dw has 1 to kMaxGridLength bins and at least one where a
// requested fibre has a spot (the PSF's trace domain, extended while the spot stays near the
// CCD: psf::spot_wavelengths). Returns a warning ("" if none) when some bins fall outside the
// trace domain: there the traces are extrapolated, and bins off the CCD end up NODATA.
inline std::string check_wavelength_grid(const ExtractionOptions& o, const psf::AnyPsfData& psf) {
  using namespace preflight_detail;
  const double n = wavelength_grid_length(o.wmin, o.wmax, o.dw);
  if (!(o.dw > 0) || !std::isfinite(o.wmin) || !std::isfinite(o.wmax) || !(o.wmax >= o.wmin))
    throw RequestError("wavelength grid " + grid_text(o) + ": need finite wmin <= wmax and dw > 0");
  if (!(n <= kMaxGridLength))
    throw RequestError("wavelength grid " + grid_text(o) + " has " + number(n) +
                       " wavelengths (at most " + number(kMaxGridLength) + " supported)");
  const psf::PsfSummary ps = psf.summary();
  const double lo = ps.trace_wavemin, hi = ps.trace_wavemax;
  const double last = o.wmin + (n - 1) * o.dw;
  if (last < lo || o.wmin > hi) {
    const int f0 = std::max(0, std::min(o.specmin, ps.nfib - 1));
    const int f1 = std::max(f0, std::min(o.specmin + std::max(o.nspec, 1) - 1, ps.nfib - 1));
    double spot_lo = lo, spot_hi = hi;
    for (int f = f0; f <= f1; ++f) {
      const psf::SpotWavelengths spots = psf::spot_wavelengths(psf, f);
      spot_lo = std::min(spot_lo, spots.lo);
      spot_hi = std::max(spot_hi, spots.hi);
    }
    if (last < spot_lo || o.wmin > spot_hi)
      throw RequestError("wavelength grid " + grid_text(o) + " (" + number(o.wmin) + "-" +
                         number(last) + " A) lies entirely outside the PSF's domain " + number(lo) +
                         "-" + number(hi) + " A and where fibres " + std::to_string(f0) + "-" +
                         std::to_string(f1) + " have spots beyond it (" + number(spot_lo) + "-" +
                         number(spot_hi) + " A, while they stay on the CCD)");
  }
  const double below = o.wmin < lo ? std::ceil((lo - o.wmin) / o.dw) : 0.0;
  const double above = last > hi ? std::ceil((last - hi) / o.dw) : 0.0;
  if (below + above == 0) return "";
  return number(below + above) + " of the grid's " + number(n) + " wavelengths lie outside the " +
         "PSF's domain " + number(lo) + "-" + number(hi) +
         " A: its traces are extrapolated there (bins off the CCD are masked NODATA)";
}

// nwavestep and the wavelength padding fitted to the PSF and the grid by the options' (resolved)
// geometry's rules; returns one warning per change.
inline std::vector<std::string> fit_geometry_padding(ExtractionOptions& o,
                                                     const psf::AnyPsfData& psf) {
  return with_geometry(o.geometry, [&](auto geometry) { return geometry.fit_padding(o, psf); });
}

// The PSF's validity (for a Gauss-Hermite PSF: its widths) over the padded grid the extraction
// evaluates, where it reaches beyond the PSF's domain (inside, validate() checked it).
inline void check_psf_over_grid(const ExtractionOptions& o, const psf::AnyPsfData& psf) {
  const double n = wavelength_grid_length(o.wmin, o.wmax, o.dw);
  const double lo = o.wmin - o.wavepad() * o.dw;
  const double hi = o.wmin + (n - 1 + o.wavepad() + o.nwavestep) * o.dw;
  const psf::PsfSummary ps = psf.summary();
  if (lo < ps.wavemin) psf.check_over(lo, ps.wavemin);
  if (hi > ps.wavemax) psf.check_over(ps.wavemax, hi);
}

// Throws unless an image of rows x cols is the PSF's CCD (NPIX_Y rows, NPIX_X columns).
inline void check_image_size(const psf::AnyPsfData& psf, int rows, int cols) {
  const psf::PsfSummary ps = psf.summary();
  if (rows == ps.npix_y && cols == ps.npix_x) return;
  const bool transposed = rows == ps.npix_x && cols == ps.npix_y;
  throw Error("image of " + std::to_string(rows) + " rows x " + std::to_string(cols) +
              " columns, but the PSF's CCD has NPIX_Y = " + std::to_string(ps.npix_y) +
              " rows x NPIX_X = " + std::to_string(ps.npix_x) + " columns" +
              (transposed ? " (the image is transposed?)" : ""));
}

// Memory an extraction needs, by part (approximate: the sizes of what it allocates). Host:
// the image as read (value, ivar and mask: 24 bytes/pixel), the model (two copies), the frame
// (flux, ivar, chi2pix, pixmask_fraction, mask and resolution, plus their float32 copies when
// written) and the memory budget of spots and patch scratch. A device backend holds the image,
// the model, the frame's arrays, the spots and the scratch again in its own memory.
struct RunSize {
  double nwave = 0, nspec = 0;
  double host_image = 0, host_model = 0, host_frame = 0;
  double device_image = 0, device_model = 0, device_frame = 0;
  double spots = 0, scratch = 0;

  double bins() const { return nwave * nspec; }
  double host_bytes() const { return host_image + host_model + host_frame + spots + scratch; }
  double device_bytes() const {
    return device_image + device_model + device_frame + spots + scratch;
  }
};

inline RunSize estimate_run_size(const ExtractionOptions& o, const psf::AnyPsfData& psf,
                                 int ccd_rows, int ccd_cols) {
  RunSize s;
  s.nwave = wavelength_grid_length(o.wmin, o.wmax, o.dw);
  s.nspec = o.nspec;
  const double pixels = static_cast<double>(ccd_rows) * ccd_cols;
  const double diagonals = 2.0 * (psf.summary().spot_rows / 2) + 1;
  s.host_image = 24 * pixels;
  s.device_image = 16 * pixels;
  s.host_model = o.model_image ? 16 * pixels : 0;
  s.device_model = o.model_image ? 8 * pixels : 0;
  s.host_frame = s.bins() * (4 * 8 + 4 + diagonals * 8 + 4 * 4 + diagonals * 4);
  s.device_frame = s.bins() * (4 * 8 + diagonals * 8);
  // Spots and patch scratch share memory_budget (plan_frame); 512 MiB is the host default
  // (a device's default is a share of its free memory, checked by plan_frame itself).
  s.spots = 0;
  s.scratch = o.memory_budget > 0 ? static_cast<double>(o.memory_budget) : 512.0 * 1024 * 1024;
  return s;
}

// One line: "500 fibres x 2326 wavelengths: about 1.2 GB of host memory (image 408 MB, model 0
// bytes, frame 214 MB, spots and patch scratch 634 MB)".
inline std::string describe(const RunSize& s, bool device) {
  const std::string shape = preflight_detail::number(s.nspec) + " fibres x " +
                            preflight_detail::number(s.nwave) + " wavelengths";
  if (device)
    return shape + ": about " + human_bytes(s.device_bytes()) + " of device memory (image " +
           human_bytes(s.device_image) + ", model " + human_bytes(s.device_model) + ", frame " +
           human_bytes(s.device_frame) + ", spots and patch scratch " +
           human_bytes(s.spots + s.scratch) + ")";
  return shape + ": about " + human_bytes(s.host_bytes()) + " of host memory (image " +
         human_bytes(s.host_image) + ", model " + human_bytes(s.host_model) + ", frame " +
         human_bytes(s.host_frame) + ", spots and patch scratch " +
         human_bytes(s.spots + s.scratch) + ")";
}

// Throws RequestError unless the run's host memory fits in `available` bytes.
inline void check_host_memory(const RunSize& size, double available) {
  if (size.host_bytes() > available)
    throw RequestError("the run needs " + describe(size, false) + "; " + human_bytes(available) +
                       " are available");
}

// Throws RequestError unless a run of this size fits in the memory free on exec's device
// (host backends: check_host_memory's business).
template <class ExecSpace>
void check_device_memory(const RunSize& size) {
  const double free = free_device_memory<ExecSpace>();
  if (size.device_bytes() > free)
    throw RequestError("the run needs " + describe(size, true) + "; " + human_bytes(free) +
                       " are free on the GPU");
}

// Every check above for a library caller: throws perfex::Error for a request that cannot
// work, adapts what can be adapted and returns the warnings. The image size is checked when
// ccd_rows and ccd_cols are given (> 0).
inline std::vector<std::string> preflight(ExtractionOptions& o, const psf::AnyPsfData& psf,
                                          int ccd_rows = 0, int ccd_cols = 0) {
  o.validate();
  check_fibres(o, psf);
  std::vector<std::string> warnings;
  const std::string outside = check_wavelength_grid(o, psf);
  if (!outside.empty()) warnings.push_back(outside);
  resolve_geometry(o, psf);
  for (auto& w : fit_geometry_padding(o, psf)) warnings.push_back(w);
  check_psf_over_grid(o, psf);
  if (ccd_rows > 0 && ccd_cols > 0) check_image_size(psf, ccd_rows, ccd_cols);
  return warnings;
}

// An extraction as a front end was asked for it, before the PSF is known.
struct Request {
  ExtractionOptions options;
  bool wavelength_given = true;  // else the PSF's WAVEMIN,WAVEMAX with dw 0.8 (PSF HDU)
  bool nspec_given = true;       // else options.nspec (500) is clipped to the PSF's fibres
  bool allow_image_size_mismatch = false;  // an image that is not the PSF's CCD: warn only
};

// How a front end names the request's parameters in its messages (the defaults: the Python
// API's keyword names).
struct ParameterNames {
  std::string fibres = "specmin, nspec";  // fibres refused, nspec given
  std::string specmin = "specmin";        // fibres refused, nspec defaulted
  std::string grid = "wavelength";        // the grid refused, given
  std::string patches = "nwavestep / wavepad_frac";
  std::string image = "image";  // the image (CLI: "image FILE")
  std::string allow_mismatch = "allow_image_size_mismatch=True";
};

struct ResolvedRequest {
  ExtractionOptions options;          // the options to extract with
  std::vector<std::string> warnings;  // what was adapted or noticed, for the frame header
  RunSize size;                       // memory estimate (host; device parts for a device)
};

// What every front end does before it extracts: fills in desi_extract_spectra's PSF-dependent
// defaults (the grid from WAVEMIN,WAVEMAX with dw 0.8, the default nspec clipped to the PSF's
// fibres, with a warning), validates the options, checks the fibres, the grid, the PSF over the
// padded grid, clamps the patch sizes to the grid (warnings), checks the image's size against
// the PSF's CCD and the host memory the run needs against what is available. Throws
// RequestError for a refused request (its message starting with the parameter's name) and Error
// for an image that is not the PSF's CCD (unless allowed: then a warning).
inline ResolvedRequest resolve_request(const Request& request, const psf::AnyPsfData& psf,
                                       int ccd_rows, int ccd_cols, const ParameterNames& names = {},
                                       double available = available_host_memory()) {
  ResolvedRequest r;
  ExtractionOptions& o = r.options;
  o = request.options;
  const psf::PsfSummary ps = psf.summary();
  if (!request.wavelength_given) {
    o.wmin = ps.wavemin;
    o.wmax = ps.wavemax;
    o.dw = 0.8;
  }
  try {
    o.validate();
  } catch (const Error& e) {
    throw RequestError(e.what());
  }
  const std::string fibre_names = request.nspec_given ? names.fibres : names.specmin;
  if (!request.nspec_given && o.specmin >= 0 && o.specmin < ps.nfib &&
      o.specmin + static_cast<long long>(o.nspec) > ps.nfib) {
    r.warnings.push_back("the PSF has " + std::to_string(ps.nfib) + " fibres: extracting " +
                         std::to_string(ps.nfib - o.specmin) + " (fibres " +
                         std::to_string(o.specmin) + "-" + std::to_string(ps.nfib - 1) +
                         ") instead of the default " + std::to_string(o.nspec));
    o.nspec = ps.nfib - o.specmin;
  }
  const std::string grid_name = request.wavelength_given ? names.grid : "the PSF's default grid";
  auto refuse = [](const std::string& name, const std::string& what) {
    throw RequestError(name + ": " + what);
  };
  try {
    check_fibres(o, psf);
  } catch (const Error& e) {
    refuse(fibre_names, e.what());
  }
  try {
    const std::string outside = check_wavelength_grid(o, psf);
    if (!outside.empty()) r.warnings.push_back(outside);
  } catch (const Error& e) {
    refuse(grid_name, e.what());
  }
  resolve_geometry(o, psf);
  for (const std::string& w : fit_geometry_padding(o, psf))
    r.warnings.push_back(names.patches + ": " + w);
  try {
    check_psf_over_grid(o, psf);
  } catch (const Error& e) {
    refuse(grid_name, std::string("beyond the PSF's domain: ") + e.what());
  }
  try {
    check_image_size(psf, ccd_rows, ccd_cols);
  } catch (const Error& e) {
    if (!request.allow_image_size_mismatch)
      throw Error(names.image + ": " + e.what() + "; " + names.allow_mismatch +
                  " extracts it anyway");
    r.warnings.push_back(names.image + ": " + e.what());
  }
  r.size = estimate_run_size(o, psf, ccd_rows, ccd_cols);
  check_host_memory(r.size, available);
  return r;
}

}  // namespace extract
}  // namespace perfex
