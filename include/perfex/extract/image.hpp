#pragma once
// CCD images as the extraction sees them: pixel values and inverse variances (ivar 0 marks a
// masked pixel), on the host (CcdImage) and in an execution space's memory (DeviceImage).
#include <perfex/detail/host_pages.hpp>
#include <perfex/detail/kokkos_compat.hpp>
#include <perfex/error.hpp>

#include <Kokkos_Core.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace perfex {
namespace extract {

// CCD rows [row0, row1) and columns [col0, col1).
struct PixelBox {
  int row0 = 0, row1 = 0, col0 = 0, col1 = 0;
  bool empty() const { return row1 <= row0 || col1 <= col0; }
};

// Where a stored rectangle of pixels sits on its CCD. A reader may keep only the rows and
// columns an extraction touches (plan_frame's pixel_region); the CCD's size still bounds the
// patch windows.
struct ImageRegion {
  int row0 = 0, col0 = 0;          // CCD position of the rectangle's first pixel
  int ccd_rows = 0, ccd_cols = 0;  // the whole CCD; 0 = the rectangle is the whole CCD
};

// A CCD image (or a rectangle of it, see region) on the host, row-major [nrows][ncols].
struct CcdImage {
  int nrows = 0;
  int ncols = 0;
  std::vector<double> pixels;
  std::vector<double> ivar;
  ImageRegion region;
};

// An image resident in a memory space: upload once (upload_image), extract many times. The
// solver reads it only through value() and weight(), in CCD coordinates.
template <class MemorySpace>
struct DeviceImage {
  using Pixels = Kokkos::View<const double**, Kokkos::LayoutRight, MemorySpace>;
  Pixels pixels, ivar;             // the stored rectangle
  long long nonfinite_pixels = 0;  // NaN/Inf pixel or ivar values, stored as masked (0, ivar 0)
  ImageRegion region;
  // The CCD's size.
  int nrows() const {
    return region.ccd_rows > 0 ? region.ccd_rows : static_cast<int>(pixels.extent(0));
  }
  int ncols() const {
    return region.ccd_cols > 0 ? region.ccd_cols : static_cast<int>(pixels.extent(1));
  }
  // True when every pixel of box is stored.
  bool holds(const PixelBox& box) const {
    return box.empty() || (box.row0 >= region.row0 && box.col0 >= region.col0 &&
                           box.row1 <= region.row0 + static_cast<int>(pixels.extent(0)) &&
                           box.col1 <= region.col0 + static_cast<int>(pixels.extent(1)));
  }
  KOKKOS_INLINE_FUNCTION double value(int row, int col) const {
    return pixels.data()[at(row, col)];
  }
  KOKKOS_INLINE_FUNCTION double weight(int row, int col) const { return ivar.data()[at(row, col)]; }
  // Offset of CCD pixel (row, col) in the stored rectangle (pixels and ivar share a layout).
  KOKKOS_INLINE_FUNCTION std::ptrdiff_t at(int row, int col) const {
    return (static_cast<std::ptrdiff_t>(row) - region.row0) *
               static_cast<std::ptrdiff_t>(pixels.stride_0()) +
           (col - region.col0);
  }
};

namespace detail {

inline void check_image_shape(int nrows, int ncols, std::size_t npixels, std::size_t nivar) {
  const std::size_t npix = static_cast<std::size_t>(nrows) * static_cast<std::size_t>(ncols);
  if (nrows <= 0 || ncols <= 0 || npixels != npix || nivar != npix)
    throw Error("image: pixel and ivar arrays must both hold nrows x ncols = " +
                std::to_string(nrows) + " x " + std::to_string(ncols) + " values");
}

inline void check_image_region(const ImageRegion& r, int nrows, int ncols) {
  const bool whole = r.ccd_rows == 0 && r.ccd_cols == 0 && r.row0 == 0 && r.col0 == 0;
  if (!whole &&
      (r.row0 < 0 || r.col0 < 0 || r.row0 + nrows > r.ccd_rows || r.col0 + ncols > r.ccd_cols))
    throw Error("image: region of " + std::to_string(nrows) + " x " + std::to_string(ncols) +
                " pixels at row " + std::to_string(r.row0) + ", column " + std::to_string(r.col0) +
                " does not fit in the " + std::to_string(r.ccd_rows) + " x " +
                std::to_string(r.ccd_cols) + " CCD");
}

// Offset of (row, col) in row-major arrays of ncols columns.
inline std::size_t pixel_offset(int ncols, int row, int col) {
  return static_cast<std::size_t>(row) * static_cast<std::size_t>(ncols) +
         static_cast<std::size_t>(col);
}

// True when every pixel of box (array coordinates) is finite with a finite ivar >= 0.
inline bool clean_pixels(const double* pixels, const double* ivar, int ncols, const PixelBox& box) {
  for (int r = box.row0; r < box.row1; ++r) {
    const double* p = pixels + pixel_offset(ncols, r, 0);
    const double* w = ivar + pixel_offset(ncols, r, 0);
    for (int c = box.col0; c < box.col1; ++c)
      if (!(std::isfinite(p[c]) && std::isfinite(w[c]) && w[c] >= 0)) return false;
  }
  return true;
}

// Copies box (array coordinates) of (pixels, ivar) into the row-major host arrays hp, hw,
// storing NaN/Inf pixels as masked; returns their count. A negative ivar is an error naming the
// pixel's CCD row and column (origin: the CCD position of the arrays' first pixel).
inline long long sanitize_image(const double* pixels, const double* ivar, int ncols,
                                const PixelBox& box, const ImageRegion& origin, double* hp,
                                double* hw) {
  long long nonfinite = 0;
  std::size_t i = 0;
  for (int r = box.row0; r < box.row1; ++r)
    for (int c = box.col0; c < box.col1; ++c, ++i) {
      const double d = pixels[pixel_offset(ncols, r, c)], w = ivar[pixel_offset(ncols, r, c)];
      if (w < 0)
        throw Error("image: negative inverse variance " + std::to_string(w) + " at row " +
                    std::to_string(origin.row0 + r) + ", column " +
                    std::to_string(origin.col0 + c));
      const bool ok = std::isfinite(d) && std::isfinite(w);
      nonfinite += ok ? 0 : 1;
      hp[i] = ok ? d : 0.0;
      hw[i] = ok ? w : 0.0;
    }
  return nonfinite;
}

// Box (array coordinates) of the arrays, sanitised (sanitize_image), in exec's memory; its
// region places it on the CCD of the arrays' region.
template <class ExecSpace>
DeviceImage<typename ExecSpace::memory_space> upload_pixels(const ExecSpace& exec,
                                                            const double* pixels,
                                                            const double* ivar, int nrows,
                                                            int ncols, const ImageRegion& region,
                                                            const PixelBox& box) {
  using Mem = typename ExecSpace::memory_space;
  const int rows = box.row1 - box.row0, cols = box.col1 - box.col0;
  Kokkos::View<double**, Kokkos::LayoutRight, Mem> p(uninitialized("perfex::image"), rows, cols);
  Kokkos::View<double**, Kokkos::LayoutRight, Mem> w(uninitialized("perfex::ivar"), rows, cols);
  auto hp = Kokkos::create_mirror_view(p);
  auto hw = Kokkos::create_mirror_view(w);
  perfex::detail::advise_huge_pages(hp);
  perfex::detail::advise_huge_pages(hw);
  DeviceImage<Mem> out;
  out.nonfinite_pixels = sanitize_image(pixels, ivar, ncols, box, region, hp.data(), hw.data());
  Kokkos::deep_copy(exec, p, hp);
  Kokkos::deep_copy(exec, w, hw);
  exec.fence();  // the host mirrors go out of scope
  out.pixels = p;
  out.ivar = w;
  const bool whole_arrays = rows == nrows && cols == ncols;
  out.region = whole_arrays ? region
                            : ImageRegion{region.row0 + box.row0, region.col0 + box.col0,
                                          region.ccd_rows > 0 ? region.ccd_rows : nrows,
                                          region.ccd_cols > 0 ? region.ccd_cols : ncols};
  return out;
}

}  // namespace detail

// Copies the image to exec's memory space, treating NaN/Inf pixels or ivar as masked (counted).
template <class ExecSpace>
DeviceImage<typename ExecSpace::memory_space> upload_image(const ExecSpace& exec,
                                                           const CcdImage& image) {
  detail::check_image_shape(image.nrows, image.ncols, image.pixels.size(), image.ivar.size());
  detail::check_image_region(image.region, image.nrows, image.ncols);
  return detail::upload_pixels(exec, image.pixels.data(), image.ivar.data(), image.nrows,
                               image.ncols, image.region, {0, image.nrows, 0, image.ncols});
}

// Host arrays (row-major [nrows][ncols], e.g. numpy buffers; region: where they sit on their
// CCD) used in place, without a copy, when every value of box (CCD coordinates: the pixels an
// extraction reads, FramePlan::pixel_box) is finite and every ivar there >= 0; otherwise a
// sanitised copy of box alone (NaN/Inf masked and counted). A negative ivar in box is an
// error. Pixels outside box are neither read nor checked. The caller keeps the arrays alive
// while the image is used.
inline DeviceImage<Kokkos::HostSpace> wrap_host_image(const double* pixels, const double* ivar,
                                                      int nrows, int ncols,
                                                      const ImageRegion& region,
                                                      const PixelBox& box) {
  const std::size_t npix = static_cast<std::size_t>(nrows) * static_cast<std::size_t>(ncols);
  detail::check_image_shape(nrows, ncols, npix, npix);
  detail::check_image_region(region, nrows, ncols);
  const PixelBox stored{
      math::max(box.row0 - region.row0, 0), math::min(box.row1 - region.row0, nrows),
      math::max(box.col0 - region.col0, 0), math::min(box.col1 - region.col0, ncols)};
  if (!stored.empty() && !detail::clean_pixels(pixels, ivar, ncols, stored))
    return detail::upload_pixels(Kokkos::DefaultHostExecutionSpace(), pixels, ivar, nrows, ncols,
                                 region, stored);
  DeviceImage<Kokkos::HostSpace> out;
  out.pixels = DeviceImage<Kokkos::HostSpace>::Pixels(pixels, nrows, ncols);
  out.ivar = DeviceImage<Kokkos::HostSpace>::Pixels(ivar, nrows, ncols);
  out.region = region;
  return out;
}

// The same, every pixel of the arrays checked: arrays that are the whole CCD.
inline DeviceImage<Kokkos::HostSpace> wrap_host_image(const double* pixels, const double* ivar,
                                                      int nrows, int ncols) {
  return wrap_host_image(pixels, ivar, nrows, ncols, {}, {0, nrows, 0, ncols});
}

// A host image for exec: on host backends its own arrays, in place when clean (wrap_host_image,
// with its region); on a device a copy (upload_image). The image must outlive the result.
template <class ExecSpace>
DeviceImage<typename ExecSpace::memory_space> use_host_image(const ExecSpace& exec,
                                                             const CcdImage& image) {
  if constexpr (Kokkos::SpaceAccessibility<ExecSpace, Kokkos::HostSpace>::accessible) {
    (void)exec;
    detail::check_image_shape(image.nrows, image.ncols, image.pixels.size(), image.ivar.size());
    const ImageRegion& r = image.region;
    return wrap_host_image(image.pixels.data(), image.ivar.data(), image.nrows, image.ncols, r,
                           {r.row0, r.row0 + image.nrows, r.col0, r.col0 + image.ncols});
  } else {
    return upload_image(exec, image);
  }
}

// Arrays already in exec's memory (row-major [nrows][ncols]; e.g. a cupy array's buffer through
// __cuda_array_interface__) used in place when every value is finite and every ivar >= 0 (one
// reduction on exec); otherwise a sanitised copy in exec's memory (NaN/Inf masked and counted).
// A negative ivar is an error. The caller keeps the arrays alive while the image is used.
template <class ExecSpace>
DeviceImage<typename ExecSpace::memory_space> wrap_device_image(const ExecSpace& exec,
                                                                const double* pixels,
                                                                const double* ivar, int nrows,
                                                                int ncols) {
  using Mem = typename ExecSpace::memory_space;
  using Policy = Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>;
  const std::int64_t npix = static_cast<std::int64_t>(nrows) * ncols;
  detail::check_image_shape(nrows, ncols, static_cast<std::size_t>(npix),
                            static_cast<std::size_t>(npix));
  const typename DeviceImage<Mem>::Pixels p(pixels, nrows, ncols), w(ivar, nrows, ncols);
  // Two reductions: several reducers in one call need Kokkos 4.
  std::int64_t nonfinite = 0, first_negative = npix;
  Kokkos::parallel_reduce(
      "perfex::extract::find_negative_ivar", Policy(exec, 0, npix),
      KOKKOS_LAMBDA(std::int64_t i, std::int64_t & negative) {
        if (ivar[i] < 0 && i < negative) negative = i;
      },
      Kokkos::Min<std::int64_t>(first_negative));
  Kokkos::parallel_reduce(
      "perfex::extract::count_nonfinite", Policy(exec, 0, npix),
      KOKKOS_LAMBDA(std::int64_t i, std::int64_t & bad) {
        bad += math::isfinite(pixels[i]) && math::isfinite(ivar[i]) ? 0 : 1;
      },
      nonfinite);
  if (first_negative < npix) {
    double value = 0;
    Kokkos::deep_copy(exec, Kokkos::View<double, Kokkos::HostSpace>(&value),
                      Kokkos::View<const double, Mem>(ivar + first_negative));
    exec.fence();
    throw Error("image: negative inverse variance " + std::to_string(value) + " at row " +
                std::to_string(first_negative / ncols) + ", column " +
                std::to_string(first_negative % ncols));
  }
  DeviceImage<Mem> out;
  out.pixels = p;
  out.ivar = w;
  if (nonfinite == 0) return out;
  Kokkos::View<double**, Kokkos::LayoutRight, Mem> cp(uninitialized("perfex::image"), nrows, ncols),
      cw(uninitialized("perfex::ivar"), nrows, ncols);
  perfex::detail::advise_huge_pages(cp);
  perfex::detail::advise_huge_pages(cw);
  double* dp = cp.data();
  double* dw = cw.data();
  Kokkos::parallel_for(
      "perfex::extract::sanitize_device_image", Policy(exec, 0, npix),
      KOKKOS_LAMBDA(std::int64_t i) {
        const bool ok = math::isfinite(pixels[i]) && math::isfinite(ivar[i]);
        dp[i] = ok ? pixels[i] : 0.0;
        dw[i] = ok ? ivar[i] : 0.0;
      });
  out.pixels = cp;
  out.ivar = cw;
  out.nonfinite_pixels = nonfinite;
  return out;
}

}  // namespace extract
}  // namespace perfex
