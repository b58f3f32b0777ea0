#pragma once
// What the device side of every PSF format shares (psf/<format>/device.hpp, model.hpp):
//  * traces x_f(λ), y_f(λ) as Legendre series per fibre, each on its own wavelength domain (the
//    trace model of every specter PSF format): evaluation, dy/dλ and the inverse λ_f(y) by
//    Newton's method; u = (λ − w0)·(2/(w1 − w0)) − 1 (this operation order), P_m by the forward
//    recurrence, no clipping (outside the domain the series is extrapolated);
//  * a spot's last step, its normalisation to sum 1;
//  * uploads of host data, and FormatModel, the host side of a format's model (the concept's
//    sizes and coverage from the data's summary, and the device data it owns).
#include <Kokkos_Core.hpp>

#include <string>
#include <utility>
#include <vector>

#include <perfex/detail/kokkos_compat.hpp>
#include <perfex/psf/data.hpp>
#include <perfex/psf/model.hpp>

namespace perfex {
namespace psf {
namespace detail {

// Legendre polynomials P_0..P_{n-1}(u) by the forward recurrence.
KOKKOS_INLINE_FUNCTION void legendre_values(double u, int n, double* P) {
  P[0] = 1.0;
  if (n > 1) P[1] = u;
  for (int m = 2; m < n; ++m) P[m] = ((2 * m - 1) * u * P[m - 1] - (m - 1) * P[m - 2]) / m;
}

KOKKOS_INLINE_FUNCTION double reduced(double wave, double w0, double scale) {
  return (wave - w0) * scale - 1.0;
}

template <class MemorySpace>
struct LegendreTraces {
  Kokkos::View<const double**, Kokkos::LayoutRight, MemorySpace> xcoeff, ycoeff;  // [nfib][nc]
  int ncx = 0, ncy = 0;
  double xw0 = 0, xscale = 0, yw0 = 0, yscale = 0;
  double yw1 = 0;  // end of the y domain (the inverse's initial bracket)

  KOKKOS_INLINE_FUNCTION double trace_x(int f, double wave) const {
    return trace(xcoeff, ncx, f, reduced(wave, xw0, xscale));
  }
  KOKKOS_INLINE_FUNCTION double trace_y(int f, double wave) const {
    return trace(ycoeff, ncy, f, reduced(wave, yw0, yscale));
  }
  // Σ_m coeff(f, m) P_m(u) of a trace, P_m by the forward recurrence as it goes.
  template <class Coeffs>
  KOKKOS_INLINE_FUNCTION static double trace(const Coeffs& coeff, int nc, int f, double u) {
    double s = coeff(f, 0);
    if (nc > 1) s += coeff(f, 1) * u;
    double p0 = 1.0, p1 = u;
    for (int m = 2; m < nc; ++m) {
      const double p2 = ((2 * m - 1) * u * p1 - (m - 1) * p0) / m;
      s += coeff(f, m) * p2;
      p0 = p1;
      p1 = p2;
    }
    return s;
  }
  // y_f(λ) and dy/dλ.
  KOKKOS_INLINE_FUNCTION void trace_y_deriv(int f, double wave, double& y, double& dydw) const {
    const double u = reduced(wave, yw0, yscale);
    double p0 = 1.0, p1 = u, d1 = 1.0;
    y = ycoeff(f, 0);
    double dy_du = 0;
    if (ncy > 1) {
      y += ycoeff(f, 1) * u;
      dy_du += ycoeff(f, 1);
    }
    for (int m = 2; m < ncy; ++m) {
      const double p2 = ((2 * m - 1) * u * p1 - (m - 1) * p0) / m;
      const double d2 = m * p1 + u * d1;  // P'_m = m P_{m-1} + u P'_{m-1}
      y += ycoeff(f, m) * p2;
      dy_du += ycoeff(f, m) * d2;
      p0 = p1;
      p1 = p2;
      d1 = d2;
    }
    dydw = dy_du * yscale;
  }
  // Wavelength at which fibre f's trace reaches row y (Newton on y_f(λ), started from the
  // linear interpolation over the y domain; extrapolates); NaN when it does not converge.
  KOKKOS_INLINE_FUNCTION double trace_wavelength(int f, double target) const {
    const double w0 = yw0, w1 = yw1;
    const double y0 = trace_y(f, w0), y1 = trace_y(f, w1);
    double lam = (y1 != y0) ? w0 + (target - y0) * (w1 - w0) / (y1 - y0) : 0.5 * (w0 + w1);
    for (int it = 0; it < 100; ++it) {
      double y = 0, dydw = 0;
      trace_y_deriv(f, lam, y, dydw);
      if (!(dydw != 0.0)) break;
      const double step = (y - target) / dydw;
      lam -= step;
      if (math::fabs(step) <= 1e-12 * math::fabs(lam) + 1e-13) return lam;
    }
    const double zero = 0.0;
    return zero / zero;  // NaN: no convergence
  }
};

// Host values into a device view of the same size (through a host mirror).
template <class ExecSpace, class V>
void copy_to_device(const ExecSpace& exec, const V& dst,
                    const std::vector<typename V::value_type>& src) {
  auto mirror = Kokkos::create_mirror_view(dst);
  typename V::value_type* m = mirror.data();
  for (std::size_t n = 0; n < src.size(); ++n) m[n] = src[n];
  Kokkos::deep_copy(exec, dst, mirror);
  exec.fence();  // the mirror goes out of scope
}

// Device copies of two host trace sets of nfib fibres.
template <class ExecSpace, class MemorySpace>
void upload_traces(const ExecSpace& exec, const LegendreTraceSet& x, const LegendreTraceSet& y,
                   int nfib, LegendreTraces<MemorySpace>& t) {
  t.ncx = x.ncoeff;
  t.ncy = y.ncoeff;
  t.xw0 = x.wavemin;
  t.xscale = 2.0 / (x.wavemax - x.wavemin);
  t.yw0 = y.wavemin;
  t.yscale = 2.0 / (y.wavemax - y.wavemin);
  t.yw1 = y.wavemax;
  Kokkos::View<double**, Kokkos::LayoutRight, MemorySpace> xc("perfex::psf::xtrace", nfib, t.ncx);
  Kokkos::View<double**, Kokkos::LayoutRight, MemorySpace> yc("perfex::psf::ytrace", nfib, t.ncy);
  copy_to_device(exec, xc, x.coeff);
  copy_to_device(exec, yc, y.coeff);
  t.xcoeff = xc;
  t.ycoeff = yc;
}

// out.values = box / total over the thread's vector lanes (box as is where total is not
// positive): every format's spot ends so, its pixels summing to 1.
template <class Member>
KOKKOS_INLINE_FUNCTION void write_normalised(const Member& member, int n, const double* box,
                                             double total, const SpotOutput& out) {
  const double inv = total > 0.0 ? 1.0 / total : 1.0;
  double* values = out.values;
  Kokkos::parallel_for(Kokkos::ThreadVectorRange(member, n),
                       [&](int i) { values[i] = box[i] * inv; });
}

// box[i] = max(value(i), 0) for the n pixels of a spot, then out.values = box normalised.
template <class Member, class Value>
KOKKOS_INLINE_FUNCTION void clip_and_normalise(const Member& member, int n, double* box,
                                               const Value& value, const SpotOutput& out) {
  double total = 0;
  Kokkos::parallel_reduce(
      Kokkos::ThreadVectorRange(member, n),
      [&](int i, double& sum) {
        double v = value(i);
        v = v > 0.0 ? v : 0.0;
        box[i] = v;
        sum += v;
      },
      total);
  write_normalised(member, n, box, total, out);
}

}  // namespace detail

// The host side of a format's model (the PSF concept, psf/model.hpp): the sizes and coverage of
// the data's summary, and the device data (Device) in MemorySpace, which the format's
// constructor fills.
template <class MemorySpace, class Device>
class FormatModel {
 public:
  using memory_space = MemorySpace;
  using device_type = Device;

  int nfib() const { return summary_.nfib; }
  int npix_x() const { return summary_.npix_x; }
  int npix_y() const { return summary_.npix_y; }
  int spot_rows() const { return summary_.spot_rows; }
  int spot_cols() const { return summary_.spot_cols; }
  double wavemin() const { return summary_.trace_wavemin; }  // where the traces are defined
  double wavemax() const { return summary_.trace_wavemax; }
  double psferr() const { return summary_.psferr; }
  const std::string& source() const { return summary_.source; }
  const device_type& device() const { return d_; }

 protected:
  explicit FormatModel(PsfSummary summary) : summary_(std::move(summary)) {}
  PsfSummary summary_;
  device_type d_;
};

// The model of a format's data (Data::Model, psf/<format>/model.hpp) resident in exec's memory
// space, uploaded with exec: upload once, extract many times.
template <class ExecSpace, class Data>
typename Data::template Model<typename ExecSpace::memory_space> upload_psf(const ExecSpace& exec,
                                                                           const Data& data) {
  return typename Data::template Model<typename ExecSpace::memory_space>(exec, data);
}

}  // namespace psf
}  // namespace perfex
