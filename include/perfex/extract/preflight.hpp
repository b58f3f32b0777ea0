#pragma once
// Checks of an extraction request against its PSF and image, made before anything large is
// allocated, so a bad request fails at once with the numbers instead of running for minutes,
// exhausting memory or returning a frame of empty bins. Host only: every front end calls them
// (through resolve_request) between reading the inputs and planning.
//
//   check_fibres            the fibres exist in the PSF
//   check_wavelength_grid   the grid has a sane length and reaches the PSF's domain
//   resolve_geometry        an automatic patch geometry chosen by the PSF's format
//   fit_padding_to_psf      the wavelength padding widened to cover the PSF's spots
//   fit_patches_to_grid     nwavestep and the wavelength padding clamped to the grid
//   bound_specter_padding   the specter geometry's padding bounded from the traces
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

// Longest output grid accepted: far beyond any spectrograph (DESI's is ~2900 bins), and every
// index of the padded grid and of a fibre's bins stays well inside 32-bit integers.
constexpr double kMaxGridLength = 1 << 24;

namespace preflight_detail {

inline std::string number(double x) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.10g", x);
  return buf;
}

inline std::string grid_text(const ExtractionOptions& o) {
  return number(o.wmin) + "," + number(o.wmax) + "," + number(o.dw);
}

}  // namespace preflight_detail

// Length of make_wavelength_grid(wmin, wmax, dw), without building it (a double: an absurd
// request gives an absurd number, not an allocation).
inline double wavelength_grid_length(double wmin, double wmax, double dw) {
  return std::ceil((wmax + 0.5 * dw - wmin) / dw);
}

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

// The wavelength padding (wavepad0 + int(wavepad0 * wavepad_frac) bins each side of a patch's
// core) must span more CCD rows than a spot (1.25 spot boxes, at the PSF's smallest dispersion
// over the padded grid and the requested fibres): else the core's edge bins are fitted with their
// neighbours' light cut off and differ from specter's by tenths of a sigma. DESI's default of 12
// bins spans ~17 rows of an 11-row spot; a PSF with taller spots or a finer grid gets more, by
// raising wavepad0 (wavepad_frac kept). Returns a warning when it changes the padding.
inline std::vector<std::string> fit_padding_to_psf(ExtractionOptions& o,
                                                   const psf::AnyPsfData& psf) {
  if (o.geometry == Geometry::specter) return {};  // its padding follows the traces
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

// A patch needs at most the grid's own wavelengths as core and as padding: nwavestep is
// clamped to the larger of the grid length and the DESI default (50), the padding on each side
// (wavepad0 + int(wavepad0 * wavepad_frac)) to the larger of the grid length and the default
// padding (12 bins: wavepad0 10, wavepad_frac 0.2), through wavepad_frac or, when wavepad0
// alone exceeds it, through wavepad0. Larger values only add unknowns (the time grows with their
// cube) for the same frame; the defaults are never changed, so small grids still match gpu_specter.
// Returns one warning per change; the options then say what is used (for the frame header).
inline std::vector<std::string> fit_patches_to_grid(ExtractionOptions& o) {
  std::vector<std::string> warnings;
  const double n = wavelength_grid_length(o.wmin, o.wmax, o.dw);
  if (!(n >= 1 && n <= kMaxGridLength)) return warnings;  // check_wavelength_grid's business
  const int nwave = static_cast<int>(n);
  const ExtractionOptions desi;
  const int max_step = std::max(nwave, desi.nwavestep);
  if (o.nwavestep > max_step) {
    warnings.push_back("nwavestep " + std::to_string(o.nwavestep) + " exceeds the grid's " +
                       std::to_string(nwave) + " wavelengths: using " + std::to_string(max_step));
    o.nwavestep = max_step;
  }
  const int limit = std::max(nwave, desi.wavepad());
  if (o.geometry != Geometry::specter && o.wavepad() > limit) {
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
    warnings.push_back("wavelength padding of " + std::to_string(requested) +
                       " bins per side (wavepad " + std::to_string(requested_pad0) +
                       ", wavepad_frac " + preflight_detail::number(requested_frac) +
                       ") exceeds the grid's " + std::to_string(nwave) + " wavelengths: using " +
                       std::to_string(o.wavepad()) + " (wavepad " + std::to_string(o.wavepad0) +
                       ", wavepad_frac " + preflight_detail::number(o.wavepad_frac) + ")");
  }
  return warnings;
}

// An automatic geometry (options.hpp) made gpu_specter's for the PSFs gpu_specter reads
// (GAUSS-HERMITE in specex's HDUs, gpu_specter's PSF dicts), specter's for every other.
inline void resolve_geometry(ExtractionOptions& o, const psf::AnyPsfData& psf) {
  if (o.geometry != Geometry::automatic) return;
  const auto* gh = psf.get_if<psf::GaussHermitePsfData>();
  o.geometry = gh && gh->specex_layout() ? Geometry::gpu_specter : Geometry::specter;
}

// With the specter geometry, wavepad0 raised until wavepad() bounds every patch's padding (the
// plan computes each exactly): the rows from a core's edge to the end of its padding (a spot,
// round(pixpad_frac x spot rows), int(wavepad_frac x spot rows), the spread of a bundle's traces
// and two more) in bins at the PSF's smallest dispersion over the grid, and at least half a
// spot. What the padded grid then spans is what check_psf_over_grid and the memory estimate see.
inline void bound_specter_padding(ExtractionOptions& o, const psf::AnyPsfData& psf) {
  if (o.geometry != Geometry::specter) return;
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
  for (auto& w : fit_padding_to_psf(o, psf)) warnings.push_back(w);
  for (auto& w : fit_patches_to_grid(o)) warnings.push_back(w);
  bound_specter_padding(o, psf);
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
  for (const std::string& w : fit_padding_to_psf(o, psf))
    r.warnings.push_back(names.patches + ": " + w);
  for (const std::string& w : fit_patches_to_grid(o))
    r.warnings.push_back(names.patches + ": " + w);
  bound_specter_padding(o, psf);
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
