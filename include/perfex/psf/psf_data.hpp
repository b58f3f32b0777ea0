#pragma once
// Host description of a GaussHermite PSF (the content of a specex "PSFVER 3" file): trace
// Legendre coefficients with their own wavelength domain, and the PSF table's parameters
// (Legendre coefficients per parameter and fibre, on the PSF HDU's domain).
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include <perfex/error.hpp>

namespace perfex {
namespace psf {

// Hard limits of the device model (sizes of per-spot local arrays); validate() checks them.
constexpr int kMaxGhDegree = 10;        // GHDEGX, GHDEGY
constexpr int kMaxHalfSize = 20;        // HSIZEX, HSIZEY (box up to 41 pixels)
constexpr int kMaxLegendreCoeffs = 24;  // trace coefficients, LEGDEG + 1

// What every PSF format tells the front ends before any device work (the request's defaults
// and checks): psf::PsfData::summary().
struct PsfSummary {
  std::string type;                             // PSFTYPE: "GAUSS-HERMITE", ...
  std::string source;                           // the file ("" when built in memory)
  int nfib = 0, npix_x = 0, npix_y = 0;         // fibres, CCD columns and rows
  int spot_rows = 0, spot_cols = 0;             // the spot box
  double psferr = 0.01;                         // PSFERR (0.01 when absent)
  double wavemin = 0, wavemax = 0;              // the default grid's ends (the PSF's own domain)
  double trace_wavemin = 0, trace_wavemax = 0;  // where the traces are defined
};

// Legendre coefficients of x(λ) or y(λ) for every fibre, on [wavemin, wavemax].
struct LegendreTraceSet {
  double wavemin = 0, wavemax = 0;
  int ncoeff = 0;
  std::vector<double> coeff;  // [nfib][ncoeff]

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
};

// Parses "GH-i-j" into (i, j); false for any other name.
inline bool parse_gh_name(const std::string& name, int& i, int& j) {
  if (name.size() < 6 || name.compare(0, 3, "GH-") != 0) return false;
  const std::size_t dash = name.find('-', 3);
  if (dash == std::string::npos || dash == 3 || dash + 1 >= name.size()) return false;
  for (std::size_t c = 3; c < name.size(); ++c) {
    if (c != dash && (name[c] < '0' || name[c] > '9')) return false;
  }
  i = std::atoi(name.substr(3, dash - 3).c_str());
  j = std::atoi(name.substr(dash + 1).c_str());
  return true;
}

struct GaussHermitePsfData {
  std::string source;  // file it came from ("" for synthetic): used in messages and IN_PSF
  int nfib = 0, fibermin = 0;
  int hsizex = 0, hsizey = 0, ghdegx = 0, ghdegy = 0, legdeg = 0, npix_x = 0, npix_y = 0;
  double psferr = 0.01;                  // PSFERR, 0.01 when absent
  LegendreTraceSet xtrace, ytrace;       // each with its own WAVEMIN/WAVEMAX domain
  double wavemin = 0, wavemax = 0;       // PSF-table domain
  std::vector<std::string> param_names;  // table rows (trailing blanks stripped)
  std::vector<double> coeff;             // [nparam][nfib][legdeg+1]
  // Where the file keeps the parameters and the traces, as the messages name them: specex's
  // HDUs by default; the one-table layouts (PSFVER 1-2, GAUSS-HERMITE2) set their table's HDU.
  std::string params_at = "HDU 'PSF'", xtrace_at = "HDU 'XTRACE'", ytrace_at = "HDU 'YTRACE'";
  std::string origin = "synthetic PSF";  // what label() says when there is no source file

  int nparam() const { return static_cast<int>(param_names.size()); }
  int ncoeff() const { return legdeg + 1; }
  std::string label() const { return source.empty() ? origin : "PSF '" + source + "'"; }

  // Row of parameter `name`, or -1.
  int find_param(const std::string& name) const {
    for (std::size_t p = 0; p < param_names.size(); ++p) {
      if (param_names[p] == name) return static_cast<int>(p);
    }
    return -1;
  }
  // Row of parameter `name`; throws naming the parameter and the source.
  int param_index(const std::string& name) const {
    const int p = find_param(name);
    if (p < 0) throw Error(label() + ": missing parameter '" + name + "'");
    return p;
  }
  // Coefficient m of parameter row p for fibre f.
  double& c(int p, int f, int m) {
    return coeff[(static_cast<std::size_t>(p) * nfib + f) * ncoeff() + m];
  }
  double c(int p, int f, int m) const {
    return coeff[(static_cast<std::size_t>(p) * nfib + f) * ncoeff() + m];
  }

  // Consistent degrees and shapes, finite coefficients, required parameters present. Messages
  // name what is wrong in the file's terms: "PSF '<source>', HDU 'PSF': keywords HSIZEX/...".
  void validate() const {
    const std::string who = label();
    auto fail = [&](const std::string& where, const std::string& what) {
      throw Error(who + ", " + where + ": " + what);
    };
    if (nfib <= 0) fail(xtrace_at, "no fibres (nfib = " + std::to_string(nfib) + ")");
    // A spot box of one pixel (HSIZE 0) holds no Gauss-Hermite profile.
    if (hsizex < 1 || hsizey < 1 || hsizex > kMaxHalfSize || hsizey > kMaxHalfSize) {
      fail(params_at, "keywords HSIZEX/HSIZEY = " + std::to_string(hsizex) + "/" +
                          std::to_string(hsizey) + " outside [1, " + std::to_string(kMaxHalfSize) +
                          "]");
    }
    if (ghdegx < 0 || ghdegy < 0 || ghdegx > kMaxGhDegree || ghdegy > kMaxGhDegree) {
      fail(params_at, "keywords GHDEGX/GHDEGY = " + std::to_string(ghdegx) + "/" +
                          std::to_string(ghdegy) + " outside [0, " + std::to_string(kMaxGhDegree) +
                          "]");
    }
    if (legdeg < 0 || legdeg + 1 > kMaxLegendreCoeffs) {
      fail(params_at, "keyword LEGDEG = " + std::to_string(legdeg) + " outside [0, " +
                          std::to_string(kMaxLegendreCoeffs - 1) + "]");
    }
    if (npix_x <= 0 || npix_y <= 0) {
      fail(params_at, "keywords NPIX_X/NPIX_Y = " + std::to_string(npix_x) + "/" +
                          std::to_string(npix_y) + " not positive");
    }
    if (!(psferr >= 0) || !std::isfinite(psferr))
      fail(params_at, "keyword PSFERR = " + std::to_string(psferr) + " invalid");
    auto check_domain = [&](const std::string& hdu, double w0, double w1) {
      if (!std::isfinite(w0) || !std::isfinite(w1) || !(w1 > w0)) {
        fail(hdu, "keywords WAVEMIN/WAVEMAX = " + std::to_string(w0) + "/" + std::to_string(w1) +
                      " is not a valid domain");
      }
    };
    check_domain(params_at, wavemin, wavemax);
    auto check_trace = [&](const std::string& hdu, const LegendreTraceSet& t) {
      check_domain(hdu, t.wavemin, t.wavemax);
      if (t.ncoeff < 1 || t.ncoeff > kMaxLegendreCoeffs) {
        fail(hdu, std::to_string(t.ncoeff) + " coefficients per fibre (1.." +
                      std::to_string(kMaxLegendreCoeffs) + " supported)");
      }
      if (t.coeff.size() != static_cast<std::size_t>(nfib) * t.ncoeff) {
        fail(hdu, std::to_string(t.coeff.size() / t.ncoeff) + " fibres x " +
                      std::to_string(t.ncoeff) + " coefficients (" +
                      std::to_string(t.coeff.size()) + " values), expected " +
                      std::to_string(nfib) + " fibres");
      }
      for (std::size_t n = 0; n < t.coeff.size(); ++n) {
        if (!std::isfinite(t.coeff[n])) {
          fail(hdu, "coefficient " + std::to_string(n % t.ncoeff) + " of fibre " +
                        std::to_string(n / t.ncoeff) + " is not finite");
        }
      }
    };
    check_trace(xtrace_at, xtrace);
    check_trace(ytrace_at, ytrace);
    const std::size_t expected = param_names.size() * static_cast<std::size_t>(nfib) * ncoeff();
    if (coeff.size() != expected) {
      fail(params_at, "column 'COEFF' has " + std::to_string(coeff.size()) + " values, expected " +
                          std::to_string(param_names.size()) + " parameters x " +
                          std::to_string(nfib) + " fibres x (LEGDEG " + std::to_string(legdeg) +
                          " + 1)");
    }
    for (std::size_t p = 0; p < param_names.size(); ++p) {
      for (std::size_t q = 0; q < p; ++q) {
        if (param_names[p] == param_names[q])
          fail(params_at, "column 'PARAM': parameter '" + param_names[p] + "' appears twice");
      }
      int i = 0, j = 0;
      if (parse_gh_name(param_names[p], i, j) && (i > ghdegx || j > ghdegy)) {
        fail(params_at, "parameter '" + param_names[p] + "' is inconsistent with GHDEGX " +
                            std::to_string(ghdegx) + " / GHDEGY " + std::to_string(ghdegy));
      }
      const std::size_t n0 = p * static_cast<std::size_t>(nfib) * ncoeff();
      for (std::size_t n = 0; n < static_cast<std::size_t>(nfib) * ncoeff(); ++n) {
        if (!std::isfinite(coeff[n0 + n])) {
          fail(params_at, "column 'COEFF', parameter '" + param_names[p] + "': coefficient " +
                              std::to_string(n % ncoeff()) + " of fibre " +
                              std::to_string(n / ncoeff()) + " is not finite");
        }
      }
    }
    param_index("GHSIGX");
    param_index("GHSIGY");
    for (int j = 0; j <= ghdegy; ++j) {
      for (int i = 0; i <= ghdegx; ++i)
        param_index("GH-" + std::to_string(i) + "-" + std::to_string(j));
    }
    // Tails: all or nothing (TAILAMP alone cannot be evaluated).
    if (find_param("TAILAMP") >= 0) {
      for (const char* t : {"TAILCORE", "TAILXSCA", "TAILYSCA", "TAILINDE"}) param_index(t);
    }
    check_widths(wavemin, wavemax);
  }

  const LegendreTraceSet& rows() const { return ytrace; }  // y(λ): CCD rows
  PsfSummary summary() const {
    PsfSummary s;
    s.type = "GAUSS-HERMITE";
    s.source = source;
    s.nfib = nfib;
    s.npix_x = npix_x;
    s.npix_y = npix_y;
    s.spot_rows = 2 * hsizey + 1;
    s.spot_cols = 2 * hsizex + 1;
    s.psferr = psferr;
    s.wavemin = wavemin;
    s.wavemax = wavemax;
    s.trace_wavemin = std::max(xtrace.wavemin, ytrace.wavemin);
    s.trace_wavemax = std::min(xtrace.wavemax, ytrace.wavemax);
    return s;
  }
  // What validate() checks of the domain, over [w0, w1] where a grid extrapolates.
  void check_over(double w0, double w1) const { check_widths(w0, w1); }

  // Value at wavelength w of parameter row p for fibre f (Legendre series on the PSF domain).
  double param_value(int p, int f, double w) const {
    const double u = 2.0 * (w - wavemin) / (wavemax - wavemin) - 1.0;
    double prev = 1.0, cur = u, sum = c(p, f, 0);
    for (int m = 1; m <= legdeg; ++m) {
      sum += c(p, f, m) * cur;
      const double next = ((2 * m + 1) * u * cur - m * prev) / (m + 1);
      prev = cur;
      cur = next;
    }
    return sum;
  }

  // The Gauss-Hermite core widths GHSIGX/GHSIGY of every fibre over [w0, w1] (sampled
  // 16 times per Legendre degree): positive and finite, and at most the spot box's half
  // size HSIZEX/HSIZEY (a wider core would fall mostly outside its box). Throws naming the
  // HDU, parameter, fibre, wavelength and value.
  void check_widths(double w0, double w1) const {
    const int nsample = 16 * (legdeg + 1) + 1;
    for (const char* name : {"GHSIGX", "GHSIGY"}) {
      const int p = param_index(name);
      const int hsize = name[5] == 'X' ? hsizex : hsizey;
      for (int f = 0; f < nfib; ++f)
        for (int i = 0; i < nsample; ++i) {
          const double w = w0 + (w1 - w0) * i / (nsample - 1);
          const double v = param_value(p, f, w);
          if (std::isfinite(v) && v > 0 && v <= hsize) continue;
          throw Error(label() + ", " + params_at + ": parameter '" + name + "' = " +
                      std::to_string(v) + " at fibre " + std::to_string(f) + ", wavelength " +
                      std::to_string(w) + ": a Gauss-Hermite width must be > 0 and at most HSIZE" +
                      (name + 5) + " = " + std::to_string(hsize) + " pixels");
        }
    }
  }
};

// specex's GAUSS-HERMITE2 PSF (device model: psf/gauss_hermite2.hpp).
struct GaussHermite2PsfData {
  // Traces, keywords (HSIZEX/Y, GHDEGX/Y of the first core, NPIX_X/Y, PSFERR) and every
  // parameter row (GH-i-j, GH2-i-j, GHNSIG, GHSIGX2, GHSIGY2, TAIL*, ...).
  GaussHermitePsfData gh;
  int ghdegx2 = 0, ghdegy2 = 0;  // the second core's degrees

  std::string label() const { return gh.label(); }
  const LegendreTraceSet& rows() const { return gh.ytrace; }
  PsfSummary summary() const {
    PsfSummary s = gh.summary();
    s.type = "GAUSS-HERMITE2";
    s.spot_rows = 2 * gh.hsizey;
    s.spot_cols = 2 * gh.hsizex;
    return s;
  }
  static std::string core2_name(int i, int j) {
    return "GH2-" + std::to_string(i) + "-" + std::to_string(j);
  }
  void validate() const {
    gh.validate();
    auto fail = [&](const std::string& what) { throw Error(label() + ", HDU 1: " + what); };
    if (ghdegx2 < 0 || ghdegy2 < 0 || ghdegx2 > kMaxGhDegree || ghdegy2 > kMaxGhDegree)
      fail("keywords GHDEGX2/GHDEGY2 = " + std::to_string(ghdegx2) + "/" + std::to_string(ghdegy2) +
           " outside [0, " + std::to_string(kMaxGhDegree) + "]");
    for (const char* p : {"GHNSIG", "GHSIGX2", "GHSIGY2", "TAILAMP"}) gh.param_index(p);
    for (int i = 0; i <= ghdegx2; ++i)
      for (int j = 0; j <= ghdegy2; ++j) gh.param_index(core2_name(i, j));
    check_over(gh.wavemin, gh.wavemax);
  }
  // Both cores' widths positive and finite over [w0, w1] (the first also within the box).
  void check_over(double w0, double w1) const {
    gh.check_widths(w0, w1);
    const int nsample = 16 * (gh.legdeg + 1) + 1;
    for (const char* name : {"GHSIGX2", "GHSIGY2"}) {
      const int p = gh.param_index(name);
      for (int f = 0; f < gh.nfib; ++f)
        for (int i = 0; i < nsample; ++i) {
          const double w = w0 + (w1 - w0) * i / (nsample - 1);
          const double v = gh.param_value(p, f, w);
          if (std::isfinite(v) && v > 0) continue;
          throw Error(label() + ", HDU 1: parameter '" + name + "' = " + std::to_string(v) +
                      " at fibre " + std::to_string(f) + ", wavelength " + std::to_string(w) +
                      ": a Gauss-Hermite width must be > 0");
        }
    }
  }
};

}  // namespace psf
}  // namespace perfex
