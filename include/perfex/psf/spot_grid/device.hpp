#pragma once
// Device model of a SPOTGRID PSF (host data: psf/spot_grid_data.hpp), as specter's SpotGridPSF
// evaluates it; a model of the PSF concept (psf/model.hpp). For fibre f at λ, with r spot
// pixels per CCD pixel (rebin) and the trace (x, y):
//  * the sample S = bilinear interpolation of SPOTS at (FIBERPOS[f], λ): numpy.searchsorted
//    cells clipped to the grid (so it extrapolates linearly), weights (p − p0)/(p1 − p0);
//  * shifted to the trace: sample pixel (i, j) goes to fine pixel (dy + i, dx + j) with
//    bilinear weights of the fractional fine offset, dx = floor(r·x) − r·floor(x),
//    sx = r·x − floor(r·x) (y likewise);
//  * summed over r × r fine pixels into a box of (ny/r + 1) × (nx/r + 1) CCD pixels whose first
//    column is floor(x) − (nx/r + 1)/2 + 1 (row likewise), clipped at 0, normalised to 1.
#include <Kokkos_Core.hpp>

#include <vector>

#include <perfex/detail/kokkos_compat.hpp>
#include <perfex/psf/device.hpp>
#include <perfex/psf/model.hpp>
#include <perfex/psf/spot_grid/data.hpp>

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

template <class MemorySpace>
struct SpotGridDevice : LegendreTraces<MemorySpace> {
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
    grid_cell(spotpos, npos, fiberpos(fib), ip, wp);
    grid_cell(spotwave, nwave, lam, iw, ww);
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
    double total = 0;
    Kokkos::parallel_reduce(
        Kokkos::ThreadVectorRange(member, ny * nx),
        [&](int pq, double& sum) {
          const int p = pq / nx, q = pq - p * nx;
          double v = 0;
          for (int a = 0; a < rebin; ++a) {
            double row = 0;
            for (int b = 0; b < rebin; ++b) row += fine(p * rebin + a, q * rebin + b);
            v += row;
          }
          v = v > 0.0 ? v : 0.0;
          box[pq] = v;
          sum += v;
        },
        total);
    const double inv = total > 0.0 ? 1.0 / total : 1.0;
    double* values = out.values;
    Kokkos::parallel_for(Kokkos::ThreadVectorRange(member, ny * nx),
                         [&](int i) { values[i] = box[i] * inv; });
    Kokkos::single(Kokkos::PerThread(member), [&]() {
      *out.col0 = static_cast<int>(math::floor(x)) - nx / 2 + 1;
      *out.row0 = static_cast<int>(math::floor(y)) - ny / 2 + 1;
    });
  }
};

}  // namespace detail

template <class MemorySpace>
class SpotGridPsf {
 public:
  using memory_space = MemorySpace;
  using device_type = detail::SpotGridDevice<MemorySpace>;

  template <class ExecSpace>
  SpotGridPsf(const ExecSpace& exec, const SpotGridPsfData& data) : summary_(data.summary()) {
    data.validate();
    detail::upload_traces(exec, data.xtrace, data.ytrace, data.nfib, d_);
    d_.npos = static_cast<int>(data.spotpos.size());
    d_.nwave = static_cast<int>(data.spotwave.size());
    d_.sny = data.spot_ny;
    d_.snx = data.spot_nx;
    d_.rebin = data.rebin();
    d_.ny = data.box_rows();
    d_.nx = data.box_cols();
    auto vector = [&](const char* label, const std::vector<double>& v) {
      Kokkos::View<double*, MemorySpace> d(std::string(label), v.size());
      detail::copy_to_device(exec, d, v);
      return Kokkos::View<const double*, MemorySpace>(d);
    };
    d_.fiberpos = vector("perfex::psf::fiberpos", data.fiberpos);
    d_.spotpos = vector("perfex::psf::spotpos", data.spotpos);
    d_.spotwave = vector("perfex::psf::spotwave", data.spotwave);
    Kokkos::View<double****, Kokkos::LayoutRight, MemorySpace> s("perfex::psf::spot_grid", d_.npos,
                                                                 d_.nwave, d_.sny, d_.snx);
    detail::copy_to_device(exec, s, data.spots);
    d_.spots = s;
  }

  int nfib() const { return summary_.nfib; }
  int npix_x() const { return summary_.npix_x; }
  int npix_y() const { return summary_.npix_y; }
  int spot_rows() const { return summary_.spot_rows; }
  int spot_cols() const { return summary_.spot_cols; }
  double wavemin() const { return summary_.trace_wavemin; }
  double wavemax() const { return summary_.trace_wavemax; }
  double psferr() const { return summary_.psferr; }
  const device_type& device() const { return d_; }

 private:
  PsfSummary summary_;
  device_type d_;
};

static_assert(require_psf_model<SpotGridPsf<Kokkos::HostSpace>>(), "");

}  // namespace psf
}  // namespace perfex
