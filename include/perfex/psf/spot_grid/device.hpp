#pragma once
// The device side of a SPOTGRID PSF, as specter's SpotGridPSF evaluates it (host data:
// psf/spot_grid/data.hpp; its model of the PSF concept: psf/spot_grid/model.hpp). For fibre f
// at λ, with r spot pixels per CCD pixel (rebin) and the trace (x, y):
//  * the sample S = bilinear interpolation of SPOTS at (FIBERPOS[f], λ): numpy.searchsorted
//    cells clipped to the grid (so it extrapolates linearly), weights (p − p0)/(p1 − p0);
//  * shifted to the trace: sample pixel (i, j) goes to fine pixel (dy + i, dx + j) with
//    bilinear weights of the fractional fine offset, dx = floor(r·x) − r·floor(x),
//    sx = r·x − floor(r·x) (y likewise);
//  * summed over r × r fine pixels into a box of (ny/r + 1) × (nx/r + 1) CCD pixels whose first
//    column is floor(x) − (nx/r + 1)/2 + 1 (row likewise), clipped at 0, normalised to 1.
#include <Kokkos_Core.hpp>

#include <perfex/detail/kokkos_compat.hpp>
#include <perfex/psf/device.hpp>
#include <perfex/psf/model.hpp>

namespace perfex {
namespace psf {
namespace detail {

// The cell of a sorted axis holding v (numpy.searchsorted, clipped to [1, n − 1]) and the
// weight of its upper end.
template <class Axis>
KOKKOS_INLINE_FUNCTION void grid_cell(const Axis& axis, int n, double v, int& i, double& w) {
  int lo = 0, hi = n;  // first index with axis(index) >= v
  while (lo < hi) {
    const int mid = (lo + hi) / 2;
    if (axis(mid) < v)
      lo = mid + 1;
    else
      hi = mid;
  }
  i = math::min(math::max(lo, 1), n - 1);
  w = (v - axis(i - 1)) / (axis(i) - axis(i - 1));
}

}  // namespace detail

template <class MemorySpace>
struct SpotGridDevice : detail::LegendreTraces<MemorySpace> {
  Kokkos::View<const double*, MemorySpace> fiberpos, spotpos, spotwave;
  Kokkos::View<const double****, Kokkos::LayoutRight, MemorySpace> spots;  // [pos][wave][y][x]
  int npos = 0, nwave = 0, sny = 0, snx = 0, rebin = 1, ny = 0, nx = 0;

  KOKKOS_INLINE_FUNCTION SpotCorner spot_corner(int f, double wave) const {
    return {static_cast<int>(math::floor(this->trace_x(f, wave))) - nx / 2 + 1,
            static_cast<int>(math::floor(this->trace_y(f, wave))) - ny / 2 + 1};
  }
  // The interpolated sample and the box.
  KOKKOS_INLINE_FUNCTION int spot_scratch() const { return sny * snx + ny * nx; }

  template <class Member>
  KOKKOS_INLINE_FUNCTION void spot(const Member& member, int fib, double lam, double* buf,
                                   const SpotOutput& out) const {
    const double x = this->trace_x(fib, lam), y = this->trace_y(fib, lam);
    int ip = 0, iw = 0;
    double wp = 0, ww = 0;
    detail::grid_cell(spotpos, npos, fiberpos(fib), ip, wp);
    detail::grid_cell(spotwave, nwave, lam, iw, ww);
    double* sample = buf;
    double* box = buf + sny * snx;
    const double* s00 = &spots(ip - 1, iw - 1, 0, 0);
    const double* s10 = &spots(ip, iw - 1, 0, 0);
    const double* s01 = &spots(ip - 1, iw, 0, 0);
    const double* s11 = &spots(ip, iw, 0, 0);
    Kokkos::parallel_for(Kokkos::ThreadVectorRange(member, sny * snx), [&](int i) {
      sample[i] =
          (s00[i] * (1 - wp) + s10[i] * wp) * (1 - ww) + (s01[i] * (1 - wp) + s11[i] * wp) * ww;
    });
    // The sample's position in fine pixels from the box's corner.
    const double fx = math::floor(x * rebin), fy = math::floor(y * rebin);
    const double sx = x * rebin - fx, sy = y * rebin - fy;
    const int dx = static_cast<int>(fx) - static_cast<int>(math::floor(x)) * rebin;
    const int dy = static_cast<int>(fy) - static_cast<int>(math::floor(y)) * rebin;
    const double w00 = (1 - sy) * (1 - sx), w10 = sy * (1 - sx), w01 = (1 - sy) * sx, w11 = sy * sx;
    // Fine pixel (I, J) gathers sample pixels (I−dy−1 .. I−dy) × (J−dx−1 .. J−dx).
    auto fine = [&](int I, int J) {
      double v = 0;
      const int i0 = I - dy - 1, j0 = J - dx - 1;
      auto at = [&](int i, int j) { return i >= 0 && i < sny && j >= 0 && j < snx; };
      if (at(i0, j0)) v += w11 * sample[i0 * snx + j0];
      if (at(i0, j0 + 1)) v += w10 * sample[i0 * snx + j0 + 1];
      if (at(i0 + 1, j0)) v += w01 * sample[(i0 + 1) * snx + j0];
      if (at(i0 + 1, j0 + 1)) v += w00 * sample[(i0 + 1) * snx + j0 + 1];
      return v;
    };
    detail::clip_and_normalise(
        member, ny * nx, box,
        [&](int pq) {
          const int p = pq / nx, q = pq - p * nx;
          double v = 0;
          for (int a = 0; a < rebin; ++a) {
            double row = 0;
            for (int b = 0; b < rebin; ++b) row += fine(p * rebin + a, q * rebin + b);
            v += row;
          }
          return v;
        },
        out);
    Kokkos::single(Kokkos::PerThread(member), [&]() {
      *out.col0 = static_cast<int>(math::floor(x)) - nx / 2 + 1;
      *out.row0 = static_cast<int>(math::floor(y)) - ny / 2 + 1;
    });
  }
};

}  // namespace psf
}  // namespace perfex
