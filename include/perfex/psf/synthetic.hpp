#pragma once
// A realistic DESI-like GaussHermite PSF built in memory (no files needed): r-camera geometry
// (bundles of 25 fibres, pitch 7.28 px, bundle gap 19.7 px, first fibre at x ≈ 111), traces
// from y ≈ −5 at 5543 Å to y ≈ 4312 at 7826 Å (dispersion ≈ 1.8 → 2.0 px/Å), sigmas ≈ 1.0–1.15
// px varying smoothly, small Gauss-Hermite terms from a fixed seed, the 59 parameter rows of
// the real files (TAILAMP 0 unless asked otherwise).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <perfex/psf/gauss_hermite/data.hpp>
#include <perfex/psf/gauss_hermite2/data.hpp>
#include <perfex/psf/spot_grid/data.hpp>

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
      d.param_names.push_back(GaussHermitePsfData::core_name(i, j));
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
        const std::string name = GaussHermitePsfData::core_name(i, j);
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

// A GaussHermite PSF in the other layouts perfex reads: as a GAUSS-HERMITE2 PSF (the same core,
// no second core, no cut-off, an even box of 2·HSIZE + 2 pixels per side).
inline GaussHermite2PsfData as_gauss_hermite2(const GaussHermitePsfData& gh) {
  GaussHermite2PsfData d;
  d.gh = gh;
  d.gh.hsizex += 1;
  d.gh.hsizey += 1;
  d.ghdegx2 = d.ghdegy2 = 0;
  const int nc = gh.ncoeff();
  auto add = [&](const std::string& name, double c0) {
    d.gh.param_names.push_back(name);
    for (int f = 0; f < gh.nfib; ++f)
      for (int m = 0; m < nc; ++m) d.gh.coeff.push_back(m == 0 ? c0 : 0.0);
  };
  add("GHNSIG", 100.0);
  add("GHSIGX2", 2.0);
  add("GHSIGY2", 2.0);
  add("GH2-0-0", 0.0);
  if (gh.find_param("TAILAMP") < 0)
    for (const char* t : {"TAILAMP", "TAILCORE", "TAILXSCA", "TAILYSCA", "TAILINDE"})
      add(t, std::string(t) == "TAILAMP" ? 0.0 : 1.0);
  d.validate();
  return d;
}

struct SpotGridSampling {
  int rebin = 4;       // spot pixels per CCD pixel
  int box = 15;        // CCD pixels sampled along each side (odd: the trace at the centre)
  int fibre_step = 5;  // a sample every fibre_step fibres, and at the last
  int nwave = 16;      // sample wavelengths over the PSF's domain
};

// The PSF sampled into a SPOTGRID: at fibres 0, fibre_step, ..., nfib − 1 and nwave wavelengths
// over the PSF's domain, the Gauss-Hermite core (tails are not sampled) integrated over spot
// pixels of 1/rebin CCD pixel around the trace, clipped at 0 and normalised; the same traces;
// fibre f at slit position f.
inline SpotGridPsfData make_spot_grid_psf(const GaussHermitePsfData& gh,
                                          const SpotGridSampling& o = {}) {
  SpotGridPsfData d;
  d.nfib = gh.nfib;
  d.npix_x = gh.npix_x;
  d.npix_y = gh.npix_y;
  d.psferr = gh.psferr;
  d.xtrace = gh.xtrace;
  d.ytrace = gh.ytrace;
  d.ccd_pixel_size = 0.015;
  d.spot_pixel_size = 0.015 / o.rebin;
  const int n = o.box * o.rebin;
  d.spot_ny = d.spot_nx = n;
  for (int f = 0; f < gh.nfib; ++f) d.fiberpos.push_back(f);
  for (int f = 0; f < gh.nfib - 1; f += std::max(1, o.fibre_step)) d.spotpos.push_back(f);
  d.spotpos.push_back(gh.nfib - 1);
  for (int k = 0; k < o.nwave; ++k)
    d.spotwave.push_back(gh.wavemin + (gh.wavemax - gh.wavemin) * k / (o.nwave - 1));
  // B_m[j]: integral over spot pixel j (offsets (j − n/2)/rebin .. from the trace) of He_m·φ.
  auto bases = [&](double sigma, int deg) {
    std::vector<double> E((deg + 1) * (n + 1)), B((deg + 1) * n);
    for (int e = 0; e <= n; ++e) {
      const double t = (e - 0.5 * n) / o.rebin / sigma;
      const double phi = std::exp(-0.5 * t * t) / std::sqrt(2 * M_PI);
      E[e] = 0.5 * std::erf(t / std::sqrt(2.0));
      double h0 = 0, h1 = 1;
      for (int m = 1; m <= deg; ++m) {
        E[m * (n + 1) + e] = -phi * h1;
        const double h2 = t * h1 - (m - 1) * h0;
        h0 = h1;
        h1 = h2;
      }
    }
    for (int m = 0; m <= deg; ++m)
      for (int j = 0; j < n; ++j) B[m * n + j] = E[m * (n + 1) + j + 1] - E[m * (n + 1) + j];
    return B;
  };
  for (double pos : d.spotpos)
    for (double w : d.spotwave) {
      const int f = static_cast<int>(pos);
      const auto bx = bases(gh.param_value(gh.param_index("GHSIGX"), f, w), gh.ghdegx);
      const auto by = bases(gh.param_value(gh.param_index("GHSIGY"), f, w), gh.ghdegy);
      std::vector<double> spot(static_cast<std::size_t>(n) * n, 0.0);
      for (int i = 0; i <= gh.ghdegx; ++i)
        for (int j = 0; j <= gh.ghdegy; ++j) {
          const double a =
              gh.param_value(gh.param_index(GaussHermitePsfData::core_name(i, j)), f, w);
          for (int p = 0; p < n; ++p)
            for (int q = 0; q < n; ++q) spot[p * n + q] += a * by[j * n + p] * bx[i * n + q];
        }
      double total = 0;
      for (double& v : spot) total += (v = std::max(v, 0.0));
      for (double v : spot) d.spots.push_back(v / total);
    }
  d.validate();
  return d;
}

}  // namespace psf
}  // namespace perfex
