#pragma once
// A realistic DESI-like GaussHermite PSF built in memory (no files needed): r-camera geometry
// (bundles of 25 fibres, pitch 7.28 px, bundle gap 19.7 px, first fibre at x ≈ 111), traces
// from y ≈ −5 at 5543 Å to y ≈ 4312 at 7826 Å (dispersion ≈ 1.8 → 2.0 px/Å), sigmas ≈ 1.0–1.15
// px varying smoothly, small Gauss-Hermite terms from a fixed seed, the 59 parameter rows of
// the real files (TAILAMP 0 unless asked otherwise).
#include <cstdint>
#include <string>
#include <vector>

#include <perfex/psf/psf_data.hpp>

namespace perfex {
namespace psf {

struct SyntheticPsfOptions {
  int nfib = 500;
  int bundlesize = 25;
  double pitch = 7.28;       // px between fibres of a bundle
  double bundle_gap = 19.7;  // px between the last fibre of a bundle and the first of the next
  double x_first = 111.0;    // x of fibre 0 at the middle of the domain
  double wavemin = 5543.0, wavemax = 7827.0;              // PSF-table domain
  double trace_wavemin = 5543.0, trace_wavemax = 7826.0;  // XTRACE/YTRACE domain
  double y_first = -5.0, y_last = 4312.0;  // fibre 0's y at trace_wavemin / trace_wavemax
  double dispersion_ratio = 2.0 / 1.8;     // dy/dλ at the red end over the blue end
  int npix_x = 4114, npix_y = 4128;
  int hsizex = 8, hsizey = 5, ghdegx = 6, ghdegy = 6, legdeg = 3;
  int trace_ncoeff = 7;
  double gh_amplitude = 0.05;  // bound of |GH-i-j| (i+j > 0)
  double tailamp = 0.0;
  double psferr = 0.01;
  std::uint64_t seed = 20260101;
};

namespace detail {
// splitmix64: a portable, fully specified generator (std distributions are not portable).
struct SplitMix64 {
  std::uint64_t state;
  std::uint64_t next() {
    std::uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  double uniform() {
    return static_cast<double>(next() >> 11) * (1.0 / 9007199254740992.0);
  }                                                     // [0, 1)
  double symmetric() { return 2.0 * uniform() - 1.0; }  // [−1, 1)
};
}  // namespace detail

inline GaussHermitePsfData make_synthetic_psf(const SyntheticPsfOptions& o = {}) {
  GaussHermitePsfData d;
  d.source = "";
  d.nfib = o.nfib;
  d.fibermin = 0;
  d.hsizex = o.hsizex;
  d.hsizey = o.hsizey;
  d.ghdegx = o.ghdegx;
  d.ghdegy = o.ghdegy;
  d.legdeg = o.legdeg;
  d.npix_x = o.npix_x;
  d.npix_y = o.npix_y;
  d.psferr = o.psferr;
  d.wavemin = o.wavemin;
  d.wavemax = o.wavemax;
  const int ntc = o.trace_ncoeff < 3 ? 3 : o.trace_ncoeff;
  const int L = o.legdeg + 1;
  const int bs = o.bundlesize > 0 ? o.bundlesize : 1;
  for (LegendreTraceSet* t : {&d.xtrace, &d.ytrace}) {
    t->wavemin = o.trace_wavemin;
    t->wavemax = o.trace_wavemax;
    t->ncoeff = ntc;
    t->coeff.assign(static_cast<std::size_t>(o.nfib) * ntc, 0.0);
  }

  // Fibre positions at the middle of the domain; s ∈ [−1, 1] across the CCD.
  std::vector<double> x0(o.nfib), s(o.nfib);
  for (int f = 0; f < o.nfib; ++f) {
    const int b = f / bs, i = f % bs;
    x0[f] = o.x_first + b * ((bs - 1) * o.pitch + o.bundle_gap) + i * o.pitch;
  }
  const double xmid = 0.5 * (x0.front() + x0.back());
  const double xhalf = o.nfib > 1 ? 0.5 * (x0.back() - x0.front()) : 1.0;
  for (int f = 0; f < o.nfib; ++f) s[f] = (x0[f] - xmid) / xhalf;

  // y(u) = y0 + A·u + B·u² on the trace domain: y(−1) = y_first, y(1) = y_last and
  // (A + 2B)/(A − 2B) = dispersion_ratio; a small fibre-dependent shift (centre fibres lower).
  const double A = 0.5 * (o.y_last - o.y_first);
  const double r = o.dispersion_ratio;
  const double B = A * (r - 1.0) / (2.0 * (r + 1.0));
  const double y0 = o.y_first + A - B;
  for (int f = 0; f < o.nfib; ++f) {
    double* xc = &d.xtrace.coeff[static_cast<std::size_t>(f) * ntc];
    double* yc = &d.ytrace.coeff[static_cast<std::size_t>(f) * ntc];
    // x(u) = x0 + (−5 + 2s)·u + curv·u²: a slight, fibre-dependent curvature.
    const double curv = -3.0 - 2.0 * s[f];
    xc[0] = x0[f] + curv / 3.0;  // u² = (2·P2 + P0)/3
    xc[1] = -5.0 + 2.0 * s[f];
    xc[2] = 2.0 * curv / 3.0;
    const double dy = -40.0 * (1.0 - s[f] * s[f]);
    yc[0] = y0 + dy + B / 3.0;
    yc[1] = A;
    yc[2] = 2.0 * B / 3.0;
  }

  // Parameter rows in the real files' order.
  d.param_names = {"GHSIGX", "GHSIGY"};
  for (int j = 0; j <= o.ghdegy; ++j) {
    for (int i = 0; i <= o.ghdegx; ++i)
      d.param_names.push_back("GH-" + std::to_string(i) + "-" + std::to_string(j));
  }
  for (const char* n :
       {"TAILAMP", "TAILCORE", "TAILXSCA", "TAILYSCA", "TAILINDE", "BUNDLE", "STATUS", "CONT"}) {
    d.param_names.push_back(n);
  }
  d.coeff.assign(d.param_names.size() * static_cast<std::size_t>(o.nfib) * L, 0.0);
  auto set = [&](const std::string& name, int f, int m, double v) {
    if (m < L) d.c(d.param_index(name), f, m) = v;
  };
  detail::SplitMix64 rng{o.seed};
  // Shared GH shape with small per-fibre variations; amplitude decreasing with degree.
  std::vector<double> base((o.ghdegx + 1) * (o.ghdegy + 1));
  for (auto& b : base) b = rng.symmetric();
  for (int f = 0; f < o.nfib; ++f) {
    set("GHSIGX", f, 0, 1.07 + 0.02 * s[f] * s[f]);
    set("GHSIGX", f, 1, 0.05);
    set("GHSIGX", f, 2, -0.01);
    set("GHSIGY", f, 0, 1.08 - 0.01 * s[f] * s[f]);
    set("GHSIGY", f, 1, 0.055);
    set("GHSIGY", f, 2, 0.005);
    for (int j = 0; j <= o.ghdegy; ++j) {
      for (int i = 0; i <= o.ghdegx; ++i) {
        const std::string name = "GH-" + std::to_string(i) + "-" + std::to_string(j);
        if (i == 0 && j == 0) {
          set(name, f, 0, 1.0);
          continue;
        }
        const double scale = o.gh_amplitude / (1.0 + 0.5 * (i + j));
        set(name, f, 0, scale * (0.7 * base[i * (o.ghdegy + 1) + j] + 0.2 * rng.symmetric()));
        set(name, f, 1, scale * 0.1 * rng.symmetric());
      }
    }
    set("TAILAMP", f, 0, o.tailamp);
    set("TAILCORE", f, 0, 1.0);
    set("TAILXSCA", f, 0, 1.0);
    set("TAILYSCA", f, 0, 1.0);
    set("TAILINDE", f, 0, 2.0);
    set("BUNDLE", f, 0, static_cast<double>(f / bs));
  }
  d.validate();
  return d;
}

}  // namespace psf
}  // namespace perfex
