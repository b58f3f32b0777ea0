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
#include <perfex/psf/data.hpp>

namespace perfex {
namespace psf {

// Hard limits of the device model (sizes of per-spot local arrays); validate() checks them.
constexpr int kMaxGhDegree = 10;  // GHDEGX, GHDEGY
constexpr int kMaxHalfSize = 20;  // HSIZEX, HSIZEY (box up to 41 pixels)

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

template <class MemorySpace>
class GaussHermitePsf;

struct GaussHermitePsfData {
  static constexpr const char* psftype = "GAUSS-HERMITE";
  template <class MemorySpace>
  using Model = GaussHermitePsf<MemorySpace>;  // its model, psf/gauss_hermite/model.hpp
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

  // Its named fields (psf/data.hpp): what messages call the PSF and its parts is optional (a
  // dict made by hand keeps the defaults).
  template <class V>
  void fields(V& v) {
    v.file("source", source);
    v.optional("origin", origin);
    v.optional("params_at", params_at);
    v.optional("xtrace_at", xtrace_at);
    v.optional("ytrace_at", ytrace_at);
    v.value("fibermin", fibermin);
    v.value("hsizex", hsizex);
    v.value("hsizey", hsizey);
    v.value("ghdegx", ghdegx);
    v.value("ghdegy", ghdegy);
    v.value("legdeg", legdeg);
    v.value("npix_x", npix_x);
    v.value("npix_y", npix_y);
    v.value("psferr", psferr);
    v.value("wavemin", wavemin);
    v.value("wavemax", wavemax);
    trace_fields(v, xtrace, ytrace, nfib);
    v.value("param_names", param_names);
    v.array("coeff", coeff, {{"nparam", nparam()}, {"nfib", nfib}, {"legdeg+1", ncoeff()}});
  }

  // specex's HDUs PSF, XTRACE and YTRACE (or a gpu_specter PSF dict): what gpu_specter reads.
  bool specex_layout() const {
    return params_at == "HDU 'PSF'" && xtrace_at == "HDU 'XTRACE'" && ytrace_at == "HDU 'YTRACE'";
  }
  int nparam() const { return static_cast<int>(param_names.size()); }
  int ncoeff() const { return legdeg + 1; }
  std::string label() const { return psf_label(source, origin); }
  // The name of the core's coefficient a_ij, "GH-i-j".
  static std::string core_name(int i, int j) {
    return "GH-" + std::to_string(i) + "-" + std::to_string(j);
  }

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
      fail_in_hdu(who, where, what);
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
    check_domain(who, params_at, wavemin, wavemax);
    xtrace.check(who, xtrace_at, nfib);
    ytrace.check(who, ytrace_at, nfib);
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
      for (int i = 0; i <= ghdegx; ++i) param_index(core_name(i, j));
    }
    // Tails: all or nothing (TAILAMP alone cannot be evaluated).
    if (find_param("TAILAMP") >= 0) {
      for (const char* t : {"TAILCORE", "TAILXSCA", "TAILYSCA", "TAILINDE"}) param_index(t);
    }
    check_widths(wavemin, wavemax);
  }

  const LegendreTraceSet& rows() const { return ytrace; }     // y(λ): CCD rows
  const LegendreTraceSet& columns() const { return xtrace; }  // x(λ): CCD columns
  PsfSummary summary() const {
    return {psftype,
            source,
            nfib,
            npix_x,
            npix_y,
            2 * hsizey + 1,
            2 * hsizex + 1,
            psferr,
            wavemin,
            wavemax,
            std::max(xtrace.wavemin, ytrace.wavemin),
            std::min(xtrace.wavemax, ytrace.wavemax)};
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

  // The Gauss-Hermite core widths GHSIGX/GHSIGY of every fibre over [w0, w1]: positive and
  // finite, and at most the spot box's half size HSIZEX/HSIZEY (a wider core would fall mostly
  // outside its box).
  void check_widths(double w0, double w1) const {
    check_width(params_at, "GHSIGX", hsizex, w0, w1);
    check_width(params_at, "GHSIGY", hsizey, w0, w1);
  }
  // Width parameter `name` of every fibre over [w0, w1] (sampled 16 times per Legendre
  // degree): positive and finite, and at most HSIZE<X|Y> = hsize pixels where hsize > 0.
  // Throws naming the HDU (where), parameter, fibre, wavelength and value.
  void check_width(const std::string& where, const char* name, int hsize, double w0,
                   double w1) const {
    const int nsample = 16 * (legdeg + 1) + 1;
    const int p = param_index(name);
    for (int f = 0; f < nfib; ++f)
      for (int i = 0; i < nsample; ++i) {
        const double w = w0 + (w1 - w0) * i / (nsample - 1);
        const double v = param_value(p, f, w);
        if (std::isfinite(v) && v > 0 && (hsize <= 0 || v <= hsize)) continue;
        throw Error(label() + ", " + where + ": parameter '" + name + "' = " + std::to_string(v) +
                    " at fibre " + std::to_string(f) + ", wavelength " + std::to_string(w) +
                    ": a Gauss-Hermite width must be > 0" +
                    (hsize > 0 ? " and at most HSIZE" + std::string(1, name[5]) + " = " +
                                     std::to_string(hsize) + " pixels"
                               : std::string()));
      }
  }
};

}  // namespace psf
}  // namespace perfex
