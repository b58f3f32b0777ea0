#pragma once
// The CCD images of perfex._perfex (perfex.images): numpy arrays used in place or a sanitised
// copy (HostImage), and arrays already on the GPU (CudaArrayImage, CUDA builds). The extraction
// (extraction.cpp) takes either.
#include <perfex/extract/image.hpp>
#include <perfex/io/image_fits.hpp>

#include <climits>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "bindings.hpp"

namespace perfex_py {

// A CCD image for the extraction: the numpy arrays themselves when they are clean
// (perfex::extract::wrap_host_image), else a sanitised copy (NaN/Inf masked and counted; a
// negative ivar is an error). An extraction checks only the pixels its plan reads (on with a
// box); the whole arrays are checked when built with check, else when first asked about them
// (nonfinite_pixels, in_place, the addresses). Uploaded once to a device backend on first use
// there. Every Kokkos allocation it holds is released before Kokkos is finalized.
class HostImage : public HoldsKokkos {
 public:
  using Array = py::array_t<double, py::array::c_style>;
  // region: where the arrays sit on their CCD when they hold only a rectangle of it (an MPI
  // rank's share of the pixels); default: they are the whole CCD.
  HostImage(const Array& pixels, const Array& ivar, const perfex::extract::ImageRegion& region,
            bool check)
      : pixels_(pixels), ivar_(ivar), region_(region) {
    require_runtime();
    if (pixels.ndim() != 2 || ivar.ndim() != 2 || pixels.shape(0) != ivar.shape(0) ||
        pixels.shape(1) != ivar.shape(1))
      throw Error("image: pixels and ivar must be 2-D arrays of one shape, got " +
                  shape_text(pixels) + " and " + shape_text(ivar));
    if (pixels.shape(0) > INT_MAX || pixels.shape(1) > INT_MAX)
      throw Error("image: " + shape_text(pixels) + " is too large");
    const std::size_t npix = static_cast<std::size_t>(rows()) * static_cast<std::size_t>(cols());
    perfex::extract::detail::check_image_shape(rows(), cols(), npix, npix);
    perfex::extract::detail::check_image_region(region_, rows(), cols());
    if (check) whole();
  }

  void release() override {
    host_.reset();
#ifdef KOKKOS_ENABLE_CUDA
    cuda_.reset();
#endif
    released_ = true;
  }

  // The host image to extract from. The caller may have changed arrays used in place since
  // the image was built: they are checked again (and sanitised into a copy for this call, or
  // refused for a negative ivar) exactly as when it was built.
  perfex::extract::DeviceImage<Kokkos::HostSpace> on(const Kokkos::HostSpace&) const {
    check();
    return in_place() ? wrap(whole_box()) : whole();
  }
  // The same for an extraction that reads only box (CCD coordinates): only its pixels are
  // checked, and only they are copied when not clean.
  perfex::extract::DeviceImage<Kokkos::HostSpace> on(const Kokkos::HostSpace&,
                                                     const perfex::extract::PixelBox& box) const {
    check();
    return wrap(box);
  }
#ifdef KOKKOS_ENABLE_CUDA
  const perfex::extract::DeviceImage<Kokkos::CudaSpace>& on(const Kokkos::CudaSpace&) const {
    check();
    if (!cuda_) {
      perfex::extract::DeviceImage<Kokkos::CudaSpace> d;
      const auto host = on(Kokkos::HostSpace());
      const auto rows = host.pixels.extent(0), cols = host.pixels.extent(1);
      Kokkos::View<double**, Kokkos::LayoutRight, Kokkos::CudaSpace> p(
          perfex::uninitialized("perfex::image"), rows, cols);
      Kokkos::View<double**, Kokkos::LayoutRight, Kokkos::CudaSpace> w(
          perfex::uninitialized("perfex::ivar"), rows, cols);
      Kokkos::deep_copy(p, host.pixels);
      Kokkos::deep_copy(w, host.ivar);
      d.pixels = p;
      d.ivar = w;
      d.nonfinite_pixels = host.nonfinite_pixels;
      d.region = region_;
      cuda_ = d;
    }
    return *cuda_;
  }
  // The GPU copy holds the whole arrays: box changes nothing there.
  const perfex::extract::DeviceImage<Kokkos::CudaSpace>& on(
      const Kokkos::CudaSpace& space, const perfex::extract::PixelBox&) const {
    return on(space);
  }
#endif

  // The CCD's size.
  int nrows() const { return region_.ccd_rows > 0 ? region_.ccd_rows : rows(); }
  int ncols() const { return region_.ccd_cols > 0 ? region_.ccd_cols : cols(); }
  long long nonfinite_pixels() const { return whole().nonfinite_pixels; }
  // Addresses the extraction reads (equal to the numpy buffers' when used in place).
  std::uintptr_t pixels_address() const {
    return reinterpret_cast<std::uintptr_t>(whole().pixels.data());
  }
  std::uintptr_t ivar_address() const {
    return reinterpret_cast<std::uintptr_t>(whole().ivar.data());
  }
  bool in_place() const {
    return whole().pixels.data() == pixels_.data() && whole().ivar.data() == ivar_.data();
  }
  py::array pixels() const { return pixels_; }
  py::array ivar() const { return ivar_; }

 private:
  static std::string shape_text(const py::array& a) {
    std::string s = "(";
    for (py::ssize_t i = 0; i < a.ndim(); ++i) s += (i ? ", " : "") + std::to_string(a.shape(i));
    return s + (a.ndim() == 1 ? ",)" : ")");
  }
  void check() const {
    if (released_) throw Error("image: released when the perfex runtime was finalized");
  }
  int rows() const { return static_cast<int>(pixels_.shape(0)); }
  int cols() const { return static_cast<int>(pixels_.shape(1)); }
  // The arrays' pixels in CCD coordinates.
  perfex::extract::PixelBox whole_box() const {
    return {region_.row0, region_.row0 + rows(), region_.col0, region_.col0 + cols()};
  }
  perfex::extract::DeviceImage<Kokkos::HostSpace> wrap(const perfex::extract::PixelBox& box) const {
    return perfex::extract::wrap_host_image(pixels_.data(), ivar_.data(), rows(), cols(), region_,
                                            box);
  }
  // The whole arrays checked, once.
  const perfex::extract::DeviceImage<Kokkos::HostSpace>& whole() const {
    check();
    if (!host_) host_ = wrap(whole_box());
    return *host_;
  }
  Array pixels_, ivar_;  // keep the numpy buffers alive while the views point into them
  perfex::extract::ImageRegion region_;
  // Caches, filled on first use.
  mutable std::optional<perfex::extract::DeviceImage<Kokkos::HostSpace>> host_;
#ifdef KOKKOS_ENABLE_CUDA
  mutable std::optional<perfex::extract::DeviceImage<Kokkos::CudaSpace>> cuda_;
#endif
  bool released_ = false;
};

#ifdef KOKKOS_ENABLE_CUDA
// A CCD image whose arrays are already on the GPU (a cupy array's buffer, through
// __cuda_array_interface__): used in place when clean, else a sanitised copy on the GPU
// (perfex::extract::wrap_device_image); extracted on the cuda backend only.
class CudaArrayImage : public HoldsKokkos {
 public:
  CudaArrayImage(std::uintptr_t pixels, std::uintptr_t ivar, int nrows, int ncols,
                 const py::object& owner)
      : owner_(owner) {
    require_runtime();
    image_ = kokkos_thread().run([&] {
      return perfex::extract::wrap_device_image(
          Kokkos::Cuda(), reinterpret_cast<const double*>(pixels),
          reinterpret_cast<const double*>(ivar), nrows, ncols);
    });
  }
  void release() override { image_ = {}; }
  int nrows() const { return image_.nrows(); }
  int ncols() const { return image_.ncols(); }
  long long nonfinite_pixels() const { return image_.nonfinite_pixels; }
  const perfex::extract::DeviceImage<Kokkos::CudaSpace>& on(const Kokkos::CudaSpace&) const {
    return image_;
  }
  template <class Mem>
  perfex::extract::DeviceImage<Mem> on(const Mem&) const {
    throw RequestError("image: CUDA device arrays are extracted on the cuda backend only");
  }
  // Device arrays are checked whole when built: box changes nothing.
  template <class Mem>
  decltype(auto) on(const Mem& space, const perfex::extract::PixelBox&) const {
    return on(space);
  }

 private:
  py::object owner_;  // the arrays' owners, alive while the image is
  perfex::extract::DeviceImage<Kokkos::CudaSpace> image_;
};
#endif

// A preproc image as the dict perfex.images.PreprocImage is built from (the arrays moved).
py::dict preproc_to_dict(perfex::io::PreprocImage&& img);

}  // namespace perfex_py
