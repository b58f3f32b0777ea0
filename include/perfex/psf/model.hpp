#pragma once
// The PSF model concept: what perfex's extraction needs of a PSF, whatever the instrument.
// extract_frame, plan_frame, the model image, simulate_image and the kernels over any model
// (psf/kernels.hpp) are written against it alone; the formats perfex reads (psf/<format>/:
// GaussHermitePsf, GaussHermite2Psf, SpotGridPsf) are models of it, and so is any type of a
// user's that provides the pieces below (examples/custom_psf.cpp). require_psf_model<P>()
// checks them at compile time, one static_assert message per missing piece.
//
// A model P is a host object that owns its data in P::memory_space:
//
//   using memory_space = ...;             where the device data live
//   using device_type = ...;              cheap to copy into kernels (views and scalars)
//   const device_type& device() const;
//   int nfib() const;                     fibres 0 .. nfib()-1
//   int npix_x() const, npix_y() const;   the CCD: columns, rows
//   int spot_rows() const, spot_cols() const;  the spot box, the same for every spot
//   double wavemin() const, wavemax() const;   where the model is defined (its traces)
//   double psferr() const;                the model's fractional error (chi2pix)
//
// and its device_type D answers, on the device (KOKKOS_INLINE_FUNCTION, const):
//
//   double trace_x(int fibre, double wave), trace_y(int fibre, double wave)
//       the spot's centre: column x and row y, (0, 0) the centre of the first pixel
//   double trace_wavelength(int fibre, double y)    the inverse of trace_y
//   SpotCorner spot_corner(int fibre, double wave)  the box's first column and row
//   int spot_scratch()                    doubles of scratch one spot evaluation needs (also
//                                         called on the host, to size the kernel's scratch)
//   template <class Member> void spot(const Member&, int fibre, double wave, double* scratch,
//                                     const SpotOutput& out)
//       the spot's pixel values, integrated over each pixel and normalised to sum 1, written
//       to out.values (spot_rows × spot_cols, row-major) and its corner to *out.col0,
//       *out.row0 (the same as spot_corner). Called by one thread of a team; the thread may
//       use its vector lanes. scratch holds spot_scratch() doubles of its own.
//
// Optionally, for specter's geometry (extract/specter_geometry.hpp):
//
//   SpotCorner specter_corner(int fibre, double wave)
//       the corner of specter's box for the spot, where specter's rounding differs from
//       spot_corner's (it truncates toward zero): at most one column or row later, its pixels
//       before it left out of the spot's normalisation. Without it, spot_corner.
//
// The resolution band keeps spot_rows()/2 diagonals on each side.
#include <Kokkos_Core.hpp>

#include <type_traits>
#include <utility>

namespace perfex {
namespace psf {

// A spot box's first (lowest) column and row on the CCD.
struct SpotCorner {
  int col = 0, row = 0;
};

// Where a model's spot() writes one spot.
struct SpotOutput {
  double* values;  // spot_rows × spot_cols, row-major, contiguous
  int* col0;
  int* row0;
};

namespace detail {

template <class...>
using void_t = void;

template <class P, class = void>
struct has_memory_space : std::false_type {};
template <class P>
struct has_memory_space<P, void_t<typename P::memory_space>> : std::true_type {};

template <class P, class = void>
struct has_device : std::false_type {};
template <class P>
struct has_device<P, void_t<typename P::device_type, decltype(std::declval<const P&>().device())>>
    : std::is_convertible<decltype(std::declval<const P&>().device()), typename P::device_type> {};

#define PERFEX_PSF_MEMBER_TRAIT(trait, expr, result) \
  template <class P, class = void>                   \
  struct trait : std::false_type {};                 \
  template <class P>                                 \
  struct trait<P, void_t<decltype(expr)>> : std::is_convertible<decltype(expr), result> {}

PERFEX_PSF_MEMBER_TRAIT(has_nfib, std::declval<const P&>().nfib(), int);
PERFEX_PSF_MEMBER_TRAIT(has_ccd,
                        (std::declval<const P&>().npix_x() + std::declval<const P&>().npix_y()),
                        int);
PERFEX_PSF_MEMBER_TRAIT(has_spot_box,
                        (std::declval<const P&>().spot_rows() +
                         std::declval<const P&>().spot_cols()),
                        int);
PERFEX_PSF_MEMBER_TRAIT(has_coverage,
                        (std::declval<const P&>().wavemin() + std::declval<const P&>().wavemax()),
                        double);
PERFEX_PSF_MEMBER_TRAIT(has_psferr, std::declval<const P&>().psferr(), double);
PERFEX_PSF_MEMBER_TRAIT(has_trace,
                        (std::declval<const P&>().trace_x(0, 0.0) +
                         std::declval<const P&>().trace_y(0, 0.0)),
                        double);
PERFEX_PSF_MEMBER_TRAIT(has_inverse, std::declval<const P&>().trace_wavelength(0, 0.0), double);
PERFEX_PSF_MEMBER_TRAIT(has_corner, std::declval<const P&>().spot_corner(0, 0.0), SpotCorner);
PERFEX_PSF_MEMBER_TRAIT(has_specter_corner, std::declval<const P&>().specter_corner(0, 0.0),
                        SpotCorner);
PERFEX_PSF_MEMBER_TRAIT(has_scratch, std::declval<const P&>().spot_scratch(), int);
#undef PERFEX_PSF_MEMBER_TRAIT

template <class P, class = void>
struct device_of {
  struct none {};
  using type = none;
  using member = int;
};
template <class P>
struct device_of<P, void_t<typename P::device_type, typename P::memory_space>> {
  using type = typename P::device_type;
  using member =
      typename Kokkos::TeamPolicy<typename P::memory_space::execution_space>::member_type;
};

template <class D, class Member, class = void>
struct has_spot : std::false_type {};
template <class D, class Member>
struct has_spot<D, Member,
                void_t<decltype(std::declval<const D&>().spot(
                    std::declval<const Member&>(), 0, 0.0, static_cast<double*>(nullptr),
                    std::declval<const SpotOutput&>()))>> : std::true_type {};

}  // namespace detail

// The corner of specter's box for a spot of device d: its specter_corner, else spot_corner.
template <class D>
KOKKOS_INLINE_FUNCTION SpotCorner specter_corner(const D& d, int fibre, double wave) {
  if constexpr (detail::has_specter_corner<D>::value)
    return d.specter_corner(fibre, wave);
  else
    return d.spot_corner(fibre, wave);
}

// Whether P models the PSF concept (every piece present).
template <class P>
struct is_psf_model {
  using D = typename detail::device_of<P>::type;
  using M = typename detail::device_of<P>::member;
  static constexpr bool value = detail::has_memory_space<P>::value &&
                                detail::has_device<P>::value && detail::has_nfib<P>::value &&
                                detail::has_ccd<P>::value && detail::has_spot_box<P>::value &&
                                detail::has_coverage<P>::value && detail::has_psferr<P>::value &&
                                detail::has_trace<D>::value && detail::has_inverse<D>::value &&
                                detail::has_corner<D>::value && detail::has_scratch<D>::value &&
                                detail::has_spot<D, M>::value;
};

// Compile-time check of a PSF model, one message per missing piece; returns true.
template <class P>
constexpr bool require_psf_model() {
  using D = typename detail::device_of<P>::type;
  using M = typename detail::device_of<P>::member;
  static_assert(detail::has_memory_space<P>::value,
                "perfex PSF model: needs `using memory_space = ...` (where its data live)");
  static_assert(detail::has_device<P>::value,
                "perfex PSF model: needs `using device_type = ...` and `const device_type& "
                "device() const` (what its kernels copy)");
  static_assert(detail::has_nfib<P>::value,
                "perfex PSF model: needs `int nfib() const` (the fibre count)");
  static_assert(detail::has_ccd<P>::value,
                "perfex PSF model: needs `int npix_x() const` and `int npix_y() const` (the "
                "CCD's columns and rows)");
  static_assert(detail::has_spot_box<P>::value,
                "perfex PSF model: needs `int spot_rows() const` and `int spot_cols() const` "
                "(the spot box)");
  static_assert(detail::has_coverage<P>::value,
                "perfex PSF model: needs `double wavemin() const` and `double wavemax() const` "
                "(its wavelength coverage)");
  static_assert(detail::has_psferr<P>::value,
                "perfex PSF model: needs `double psferr() const` (its fractional error)");
  static_assert(detail::has_trace<D>::value,
                "perfex PSF model: its device_type needs `double trace_x(int fibre, double "
                "wave) const` and `double trace_y(int fibre, double wave) const` (the trace)");
  static_assert(detail::has_inverse<D>::value,
                "perfex PSF model: its device_type needs `double trace_wavelength(int fibre, "
                "double y) const` (the inverse of the trace)");
  static_assert(detail::has_corner<D>::value,
                "perfex PSF model: its device_type needs `perfex::psf::SpotCorner "
                "spot_corner(int fibre, double wave) const` (the spot box's corner)");
  static_assert(detail::has_scratch<D>::value,
                "perfex PSF model: its device_type needs `int spot_scratch() const` (scratch "
                "doubles per spot)");
  static_assert(detail::has_spot<D, M>::value,
                "perfex PSF model: its device_type needs `template <class Member> void "
                "spot(const Member&, int fibre, double wave, double* scratch, const "
                "perfex::psf::SpotOutput&) const` (the spot's pixel values)");
  return true;
}

}  // namespace psf
}  // namespace perfex
