#pragma once
// specter's patch geometry (specter.extract.ex2d, PSF.xyrange and PSF.xypix), for plans with
// ExtractionOptions::geometry == Geometry::specter. For each patch (a sub-bundle's solved fibres
// [speclo, spechi) and its core bins wlo..whi):
//   * its pixel box is PSF.xyrange((speclo, spechi), (wlo, whi)), rows padded by
//     round(pixpad_frac x spot rows) on each side and clipped to the image's rows (the CCD's, or
//     ex2d's xyrange: ExtractionOptions::row_min, row_max);
//   * its wavelengths reach nlo bins below the core and nhi above: the bins between the core and
//     fibre speclo's wavelength int(wavepad_frac x spot rows) rows beyond the box, less one, and
//     at least the resolution half-width.
// One thread computes a patch from the PSF's traces (psf/model.hpp): its spot corners, trace
// positions and the trace's inverse, each where specter evaluates them. The spots themselves
// are specter's where its box starts later than perfex's (specter_spot_boxes).
#include <perfex/detail/kokkos_compat.hpp>
#include <perfex/extract/patches.hpp>
#include <perfex/memory.hpp>
#include <perfex/psf/model.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cmath>
#include <vector>

namespace perfex {
namespace extract {

// A patch as specter's ex2d cuts it: its pixel box (columns xlo..xhi, rows ylo..yhi, half-open,
// on the CCD) and its padding in bins below (nlo) and above (nhi) its core.
struct SpecterPatch {
  int speclo = 0, spechi = 0;  // solved fibres (absolute), half-open
  int k0 = 0, nkeep = 0;       // core: output bins k0 .. k0 + nkeep - 1
  int xlo = 0, xhi = 0, ylo = 0, yhi = 0;
  int nlo = 0, nhi = 0;
};

// PSF.xypix's column and row slices, [start, stop) each.
struct SpecterSlices {
  int x0, x1, y0, y1;
};

// The PSF geometry specter's ex2d reads (PSF.xypix's and PSF.xyrange's boxes), on the device
// or, for a model in host memory, on the host (the specter drop-in's PSF). Wavelengths where
// fibre f's trace crosses the CCD's first and last row edges (specter's _wmin_spec, _wmax_spec)
// bound its spots; wmin and wmax are their extremes over every fibre (PSF.wmin, PSF.wmax).
template <class Device>
struct SpecterTraces {
  Device d;
  int npix_x, npix_y, nx, ny;
  double wmin, wmax;

  KOKKOS_INLINE_FUNCTION double wmin_spec(int f) const { return d.trace_wavelength(f, -0.5); }
  KOKKOS_INLINE_FUNCTION double wmax_spec(int f) const {
    return d.trace_wavelength(f, npix_y - 0.5);
  }

  // PSF.xypix(f, w, xmin, xmax, ymin, ymax)'s slices: the spot's box clipped to the image of
  // columns [xmin, xmax) and rows [ymin, ymax), relative to xmin and ymin; empty, at specter's
  // places, off that image and where the trace is off the CCD's rows. specter's box starts at
  // its own corner (psf::specter_corner: at most one later than perfex's) and ends at perfex's.
  KOKKOS_INLINE_FUNCTION SpecterSlices xypix(int f, double w, int xmin, int xmax, int ymin,
                                             int ymax) const {
    if (w < wmin_spec(f)) return {0, 0, 0, 0};
    if (w > wmax_spec(f)) return {0, 0, ymax, ymax};
    const psf::SpotCorner c = d.spot_corner(f, w), start = psf::specter_corner(d, f, w);
    const int xlo = start.col, xhi = c.col + nx, ylo = start.row, yhi = c.row + ny;
    if (ylo >= ymax) return {0, 0, ymax, ymax};
    if (yhi < ymin) return {0, 0, ymin, ymin};
    if (xlo >= xmax) return {xmax, xmax, 0, 0};
    if (xhi <= xmin) return {xmin, xmin, 0, 0};
    return {math::max(xlo, xmin) - xmin, math::min(xhi, xmax) - xmin, math::max(ylo, ymin) - ymin,
            math::min(yhi, ymax) - ymin};
  }
  // PSF.xypix(f, w)'s slices on the CCD.
  KOKKOS_INLINE_FUNCTION SpecterSlices xypix(int f, double w) const {
    return xypix(f, w, 0, npix_x, 0, npix_y);
  }

  // The wavelength of PSF.xyrange's extreme column of fibre f over [wavemin, wavemax]: among
  // the fibre's wavelengths at every CCD row in that range, then wavemin and wavemax, those
  // whose row y has ylo_edge <= y < npix_y - 0.5, the first smallest (largest: !smallest)
  // column. Returns false when none is on the CCD; x_out is that column.
  KOKKOS_INLINE_FUNCTION bool extreme_column(int f, double wavemin, double wavemax, double ylo_edge,
                                             bool smallest, double& w_out, double& x_out) const {
    bool found = false;
    const auto consider = [&](double w) {
      const double y = d.trace_y(f, w);
      if (!(y >= ylo_edge && y < npix_y - 0.5)) return;
      const double x = d.trace_x(f, w);
      if (!found || (smallest ? x < x_out : x > x_out)) {
        found = true;
        x_out = x;
        w_out = w;
      }
    };
    // Rows whose wavelength can lie in [wavemin, wavemax].
    const double y0 = d.trace_y(f, wavemin), y1 = d.trace_y(f, wavemax);
    const double r0 = math::floor(math::min(y0, y1)) - 1, r1 = math::floor(math::max(y0, y1)) + 2;
    const int first = static_cast<int>(math::max(0.0, math::min(r0, npix_y - 1.0)));
    const int last = static_cast<int>(math::max(0.0, math::min(r1, npix_y - 1.0)));
    for (int r = first; r <= last; ++r) {
      const double w = d.trace_wavelength(f, r);
      if (w >= wavemin && w <= wavemax) consider(w);
    }
    consider(wavemin);
    consider(wavemax);
    return found;
  }

  // PSF.xyrange((speclo, spechi), (wlo, whi)) as (xlo, xhi, ylo, yhi); false, with no
  // columns, where specter's fails (no wavelength of the range on the CCD).
  KOKKOS_INLINE_FUNCTION bool xyrange(int speclo, int spechi, double wlo, double whi,
                                      SpecterPatch& p) const {
    const double wavemin = math::max(wlo, wmin), wavemax = math::min(whi, wmax);
    int fy0 = speclo, fy1 = speclo;
    for (int f = speclo + 1; f < spechi; ++f) {
      if (d.trace_y(f, wavemin) < d.trace_y(fy0, wavemin)) fy0 = f;
      if (d.trace_y(f, wavemax) > d.trace_y(fy1, wavemax)) fy1 = f;
    }
    p.ylo = xypix(fy0, wavemin).y0;
    p.yhi = xypix(fy1, wavemax).y1;
    double w = 0, x = 0;
    if (!extreme_column(speclo, wavemin, wavemax, 0.5, true, w, x)) {
      p.xlo = p.xhi = 0;
      return false;
    }
    p.xlo = x < 0 ? 0 : xypix(speclo, w).x0;
    if (!extreme_column(spechi - 1, wavemin, wavemax, -0.5, false, w, x)) {
      p.xlo = p.xhi = 0;
      return false;
    }
    p.xhi = x > npix_x ? npix_x : d.spot_corner(spechi - 1, w).col + nx;
    return true;
  }
};

namespace detail {

template <class Device, class MemorySpace>
struct SpecterPatchFunctor {
  SpecterTraces<Device> t;
  Kokkos::View<SpecterPatch*, MemorySpace> patches;
  Kokkos::View<const double*, MemorySpace> wave;  // output grid
  double dw;
  int extra_rows, pad_rows, ndiag;
  int row_min, row_max;  // the image's rows

  KOKKOS_INLINE_FUNCTION void operator()(int i) const {
    SpecterPatch p = patches(i);
    const double wlo = wave(p.k0), whi = wave(p.k0 + p.nkeep - 1);
    t.xyrange(p.speclo, p.spechi, wlo, whi, p);
    p.ylo = math::max(p.ylo - extra_rows, row_min);
    p.yhi = math::min(p.yhi + extra_rows, row_max);
    p.xhi = math::min(p.xhi, t.npix_x);
    const double below = t.d.trace_wavelength(p.speclo, p.ylo - pad_rows);
    const double above = t.d.trace_wavelength(p.speclo, p.yhi + pad_rows);
    p.nlo = math::max(static_cast<int>((wlo - below) / dw) - 1, ndiag);
    p.nhi = math::max(static_cast<int>((above - whi) / dw) - 1, ndiag);
    patches(i) = p;
  }
};

template <class Device>
struct SpecterEdgeFunctor {
  Device d;
  double edge;  // the row edge: -0.5 or npix_y - 0.5
  KOKKOS_INLINE_FUNCTION void operator()(int f, Kokkos::MinMaxScalar<double>& m) const {
    const double w = d.trace_wavelength(f, edge);
    m.min_val = math::min(m.min_val, w);
    m.max_val = math::max(m.max_val, w);
  }
};

}  // namespace detail

// specter's PSF geometry of a model in exec's memory, its PSF.wmin and PSF.wmax (over every
// fibre) reduced on exec, as specter's PSF computes them first.
template <class ExecSpace, class Psf>
SpecterTraces<typename Psf::device_type> specter_traces(const ExecSpace& exec, const Psf& psf) {
  using Device = typename Psf::device_type;
  Kokkos::MinMaxScalar<double> bottom, top;
  Kokkos::parallel_reduce(
      "perfex::extract::specter_wmin", Kokkos::RangePolicy<ExecSpace>(exec, 0, psf.nfib()),
      detail::SpecterEdgeFunctor<Device>{psf.device(), -0.5}, Kokkos::MinMax<double>(bottom));
  Kokkos::parallel_reduce("perfex::extract::specter_wmax",
                          Kokkos::RangePolicy<ExecSpace>(exec, 0, psf.nfib()),
                          detail::SpecterEdgeFunctor<Device>{psf.device(), psf.npix_y() - 0.5},
                          Kokkos::MinMax<double>(top));
  return {psf.device(),    psf.npix_x(),   psf.npix_y(), psf.spot_cols(),
          psf.spot_rows(), bottom.min_val, top.max_val};
}

// specter's geometry for the patches of a plan: each SpecterPatch's fibres and core set, its
// box and padding computed on exec's device (one thread per patch), from specter_traces. opt:
// pixpad_frac, wavepad_frac and the image's rows; ndiag: the resolution half-width, the least
// padding.
template <class ExecSpace, class Psf>
void specter_patches(const ExecSpace& exec, const Psf& psf, const std::vector<double>& wave,
                     const ExtractionOptions& opt, int ndiag, std::vector<SpecterPatch>& patches) {
  using Mem = typename ExecSpace::memory_space;
  using Device = typename Psf::device_type;
  const int n = static_cast<int>(patches.size());
  if (n == 0) return;
  const SpecterTraces<Device> traces = specter_traces(exec, psf);
  Kokkos::View<double*, Mem> device_wave(uninitialized("perfex::specter_wave"), wave.size());
  Kokkos::deep_copy(exec, device_wave,
                    Kokkos::View<const double*, Kokkos::HostSpace>(wave.data(), wave.size()));
  Kokkos::View<SpecterPatch*, Mem> device_patches(uninitialized("perfex::specter_patches"), n);
  const Kokkos::View<SpecterPatch*, Kokkos::HostSpace> host(patches.data(), n);
  Kokkos::deep_copy(exec, device_patches, host);
  const double dw = wave.size() > 1 ? wave[1] - wave[0] : 1.0;
  // Python's round() (halves to even, as nearbyint in the default rounding mode) and int().
  const int extra_rows = static_cast<int>(std::nearbyint(opt.pixpad_frac * psf.spot_rows()));
  const int pad_rows = static_cast<int>(opt.wavepad_frac * psf.spot_rows());
  const int row_max = opt.row_max < 0 ? psf.npix_y() : std::min(opt.row_max, psf.npix_y());
  Kokkos::parallel_for(
      "perfex::extract::specter_patches", Kokkos::RangePolicy<ExecSpace>(exec, 0, n),
      detail::SpecterPatchFunctor<Device, Mem>{traces, device_patches, device_wave, dw, extra_rows,
                                               pad_rows, ndiag, opt.row_min, row_max});
  Kokkos::deep_copy(exec, host, device_patches);
  exec.fence();
}

// specter's spots of fibres f0.. at wave[K] (compute_spots' output: spots [>= nf][>= K][ny][nx],
// corners [>= nf][>= K]), as its PSF.xypix gives them: empty (0) where the trace is off the
// CCD's rows [-0.5, npix_y - 0.5]; where specter's box starts later than perfex's
// (psf::specter_corner: boxes starting off the CCD), the columns and rows before its corner 0
// and the others normalised to sum 1 again, as specter normalises over its box. The corners
// stay perfex's.
template <class ExecSpace, class Psf, class WaveView, class SpotView, class CornerView>
void specter_spot_boxes(const ExecSpace& exec, const Psf& psf, int f0, int nf, const WaveView& wave,
                        const SpotView& spots, const CornerView& xcorner,
                        const CornerView& ycorner) {
  const int K = static_cast<int>(wave.extent(0)), ny = psf.spot_rows(), nx = psf.spot_cols();
  const double last_edge = psf.npix_y() - 0.5;
  const typename Psf::device_type d = psf.device();
  Kokkos::parallel_for(
      "perfex::extract::specter_spot_boxes", Kokkos::RangePolicy<ExecSpace>(exec, 0, nf * K),
      KOKKOS_LAMBDA(int i) {
        const int f = i / K, k = i - f * K;
        const double y = d.trace_y(f0 + f, wave(k));
        const psf::SpotCorner c = psf::specter_corner(d, f0 + f, wave(k));
        const bool on_ccd = y >= -0.5 && y <= last_edge;
        const int p0 = on_ccd ? math::max(c.row - ycorner(f, k), 0) : ny;
        const int q0 = math::max(c.col - xcorner(f, k), 0);
        if (p0 == 0 && q0 == 0) return;
        double sum = 0;
        for (int p = 0; p < ny; ++p)
          for (int q = 0; q < nx; ++q) {
            if (p < p0 || q < q0)
              spots(f, k, p, q) = 0.0;
            else
              sum += spots(f, k, p, q);
          }
        if (sum > 0)
          for (int p = p0; p < ny; ++p)
            for (int q = q0; q < nx; ++q) spots(f, k, p, q) /= sum;
      });
}

// The frame's patches (frame_patches' order) with specter's geometry: each SpecterPatch's box
// as the pixel window and its padding as the fitted wavelengths of the nwavestep + 2 wavepad
// the solver holds (wavepad: at least every patch's nlo and nhi).
inline std::vector<PatchDesc> specter_frame_patches(const std::vector<BundlePlan>& bundles,
                                                    const ExtractionOptions& opt, int nwave,
                                                    const std::vector<SpecterPatch>& specter,
                                                    int wavepad) {
  std::vector<PatchDesc> all = frame_patches(bundles, opt, nwave, opt.nwavestep + 2 * wavepad);
  for (std::size_t i = 0; i < all.size(); ++i) {
    PatchDesc& p = all[i];
    const SpecterPatch& s = specter[i];
    p.row0 = s.ylo;
    p.row1 = std::max(s.ylo, s.yhi);
    p.col0 = s.xlo;
    p.col1 = std::max(s.xlo, s.xhi);
    p.wave_lo = wavepad - s.nlo;
    p.wave_hi = wavepad + s.nkeep + s.nhi;
  }
  return all;
}

}  // namespace extract
}  // namespace perfex
