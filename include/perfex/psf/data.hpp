#pragma once
// What the host data of every PSF format shares (psf/<format>/data.hpp): Legendre traces, the
// summary the front ends read, and how messages name a PSF and its HDUs.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <string>
#include <vector>

#include <perfex/error.hpp>

namespace perfex {
namespace psf {

constexpr int kMaxLegendreCoeffs = 24;  // coefficients of a Legendre series, LEGDEG + 1

// What every PSF format tells the front ends before any device work (the request's defaults
// and checks): psf::AnyPsfData::summary().
struct PsfSummary {
  std::string type;                             // PSFTYPE: "GAUSS-HERMITE", ...
  std::string source;                           // the file ("" when built in memory)
  int nfib = 0, npix_x = 0, npix_y = 0;         // fibres, CCD columns and rows
  int spot_rows = 0, spot_cols = 0;             // the spot box
  double psferr = 0.01;                         // PSFERR (0.01 when absent)
  double wavemin = 0, wavemax = 0;              // the default grid's ends (the PSF's own domain)
  double trace_wavemin = 0, trace_wavemax = 0;  // where the traces are defined
};

// Why fibres [first, first + count) are not all among a PSF's nfib fibres, in the caller's names
// for first and count ("specmin", "nspec"; no count name: one fibre), or "" when they are. Every
// front end's and kernel's check of a fibre range (the arguments are 64-bit: no int overflows).
inline std::string fibre_range_problem(long long first, long long count, int nfib,
                                       const std::string& first_name,
                                       const std::string& count_name = "") {
  const std::string has =
      "the PSF has " + std::to_string(nfib) + " fibres (0-" + std::to_string(nfib - 1) + ")";
  if (count < 1) return count_name + " " + std::to_string(count) + ": at least one fibre is needed";
  if (first < 0)
    return first_name + " " + std::to_string(first) + ": fibres are numbered from 0 (" + has + ")";
  if (first + count <= nfib) return "";
  if (count_name.empty())
    return first_name + " " + std::to_string(first) + " requested, but " + has;
  return "fibres " + std::to_string(first) + "-" + std::to_string(first + count - 1) + " (" +
         first_name + " " + std::to_string(first) + ", " + count_name + " " +
         std::to_string(count) + ") requested, but " + has;
}

// How messages name a PSF: "PSF '<file>'", or its origin ("synthetic PSF", "gpu_specter PSF
// dict") for one built in memory.
inline std::string psf_label(const std::string& source,
                             const std::string& origin = "synthetic PSF") {
  return source.empty() ? origin : "PSF '" + source + "'";
}

// Throws "<who>, <where>: <what>", the form of every message about a PSF's content; `where`
// names the HDU ("HDU 'PSF'", or "HDU 1, row 'X'" in the one-table layouts).
[[noreturn]] inline void fail_in_hdu(const std::string& who, const std::string& where,
                                     const std::string& what) {
  throw Error(who + ", " + where + ": " + what);
}

// Throws unless [w0, w1] is a domain of a Legendre series (the HDU's WAVEMIN/WAVEMAX).
inline void check_domain(const std::string& who, const std::string& where, double w0, double w1) {
  if (!std::isfinite(w0) || !std::isfinite(w1) || !(w1 > w0))
    fail_in_hdu(who, where,
                "keywords WAVEMIN/WAVEMAX = " + std::to_string(w0) + "/" + std::to_string(w1) +
                    " is not a valid domain");
}

// Legendre coefficients of x(λ) or y(λ) for every fibre, on [wavemin, wavemax].
struct LegendreTraceSet {
  double wavemin = 0, wavemax = 0;
  int ncoeff = 0;
  std::vector<double> coeff;  // [nfib][ncoeff]

  int nfib() const { return ncoeff > 0 ? static_cast<int>(coeff.size() / ncoeff) : 0; }

  // The series of fibre f at w (host; the device models evaluate it the same way).
  double value(int f, double w) const {
    const double u = (w - wavemin) * (2.0 / (wavemax - wavemin)) - 1.0;
    const double* c = &coeff[static_cast<std::size_t>(f) * ncoeff];
    double p0 = 1.0, p1 = u, s = c[0];
    if (ncoeff > 1) s += c[1] * u;
    for (int m = 2; m < ncoeff; ++m) {
      const double p2 = ((2 * m - 1) * u * p1 - (m - 1) * p0) / m;
      s += c[m] * p2;
      p0 = p1;
      p1 = p2;
    }
    return s;
  }
  // The smallest |d value / dw| of fibres [f0, f0 + nf) over [w0, w1] (65 samples each).
  double min_slope(int f0, int nf, double w0, double w1) const {
    double slope = HUGE_VAL;
    const double h = 1e-3 * (wavemax - wavemin);
    for (int f = f0; f < f0 + nf; ++f)
      for (int i = 0; i <= 64; ++i) {
        const double w = w0 + (w1 - w0) * i / 64;
        slope = std::min(slope, std::abs(value(f, w + h) - value(f, w - h)) / (2 * h));
      }
    return slope;
  }

  // A valid domain, 1..kMaxLegendreCoeffs finite coefficients for each of nfib fibres; throws
  // naming who and where the trace is (its HDU).
  void check(const std::string& who, const std::string& hdu, int nfib) const {
    check_domain(who, hdu, wavemin, wavemax);
    if (ncoeff < 1 || ncoeff > kMaxLegendreCoeffs) {
      fail_in_hdu(who, hdu,
                  std::to_string(ncoeff) + " coefficients per fibre (1.." +
                      std::to_string(kMaxLegendreCoeffs) + " supported)");
    }
    if (coeff.size() != static_cast<std::size_t>(nfib) * ncoeff) {
      fail_in_hdu(who, hdu,
                  std::to_string(coeff.size() / ncoeff) + " fibres x " + std::to_string(ncoeff) +
                      " coefficients (" + std::to_string(coeff.size()) + " values), expected " +
                      std::to_string(nfib) + " fibres");
    }
    for (std::size_t n = 0; n < coeff.size(); ++n) {
      if (!std::isfinite(coeff[n])) {
        fail_in_hdu(who, hdu,
                    "coefficient " + std::to_string(n % ncoeff) + " of fibre " +
                        std::to_string(n / ncoeff) + " is not finite");
      }
    }
  }
};

// ---- named fields ---------------------------------------------------------------------------
// Each format's data names its content, for the conversions that take a PSF apart and build it
// again outside the library (the Python package's dicts: pickles, MPI broadcasts, PSFs built
// from arrays), so that a format brings its own and they loop over the formats:
// `template <class V> void fields(V& v)` calls, field by field, in the dicts' order,
//   v.value(name, member)        an int, double, std::string or std::vector<std::string>;
//   v.optional(name, member)     a std::string that keeps its default where a source lacks it;
//   v.file(name, member)         the name of the file the PSF came from (bytes);
//   v.array(name, values, axes)  a std::vector<double>, row-major over axes (none: 1-D, any
//                                length).
// Reading, a field comes after those its axes' sizes depend on.

// An axis of an array field: its name (messages) and size; where `set` is given, an array that
// comes in sets that member to its size instead of being checked against `size`.
struct FieldAxis {
  const char* name;
  int size;
  int* set = nullptr;
};

// The x and y traces' fields: "xtrace" [nfib][ncoeff], "xtrace_wavemin", "xtrace_wavemax", then
// ytrace's, of the same fibres (nfib: xtrace's).
template <class V>
void trace_fields(V& v, LegendreTraceSet& x, LegendreTraceSet& y, int& nfib) {
  v.array("xtrace", x.coeff, {{"nfib", nfib, &nfib}, {"ncoeff", x.ncoeff, &x.ncoeff}});
  v.value("xtrace_wavemin", x.wavemin);
  v.value("xtrace_wavemax", x.wavemax);
  v.array("ytrace", y.coeff, {{"nfib", nfib}, {"ncoeff", y.ncoeff, &y.ncoeff}});
  v.value("ytrace_wavemin", y.wavemin);
  v.value("ytrace_wavemax", y.wavemax);
}

}  // namespace psf
}  // namespace perfex
