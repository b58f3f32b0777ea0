#pragma once
// The CCD images of perfex._perfex (perfex.images): numpy arrays used in place or a sanitised
// copy (HostImage), and arrays already on the GPU (CudaArrayImage, CUDA builds). The extraction
// (extraction.cpp) takes either.
#include <perfex/extract/image.hpp>
#include <perfex/io/image_fits.hpp>

#include <climits>
#include <cstdint>
#include <optional>
#include <string>

#include "bindings.hpp"

namespace perfex_py {

// A CCD image for the extraction: the numpy arrays themselves when they are clean
// (perfex::extract::wrap_host_image), else a sanitised copy (NaN/Inf masked and counted; a
// negative ivar is an error). Uploaded once to a device backend on first use there. Every
// Kokkos allocation it holds is released before Kokkos is finalized.
class HostImage : public HoldsKokkos {
 public:
  using Array = py::array_t<double, py::array::c_style>;
  // region: where the arrays sit on their CCD when they hold only a rectangle of it (an MPI
  // rank's share of the pixels); default: they are the whole CCD.
  HostImage(const Array& pixels, const Array& ivar, const perfex::extract::ImageRegion& region)
      : pixels_(pixels), ivar_(ivar), region_(region) {
    require_runtime();
    if (pixels.ndim() != 2 || ivar.ndim() != 2 || pixels.shape(0) != ivar.shape(0) ||
        pixels.shape(1) != ivar.shape(1))
      throw Error("image: pixels and ivar must be 2-D arrays of one shape, got " +
                  shape_text(pixels) + " and " + shape_text(ivar));
    if (pixels.shape(0) > INT_MAX || pixels.shape(1) > INT_MAX)
      throw Error("image: " + shape_text(pixels) + " is too large");
    host_ = wrap();
    perfex::extract::detail::check_image_region(region_, static_cast<int>(pixels.shape(0)),
                                                static_cast<int>(pixels.shape(1)));
  }

  void release() override {
    host_ = {};
#ifdef KOKKOS_ENABLE_CUDA
    cuda_.reset();
#endif
    released_ = true;
  }

  // The host image to extract from. The caller may have changed arrays used in place since
  // the image was built: they are checked again (and sanitised into a copy for this call, or
  // refused for a negative ivar) exactly as when it was built.
  perfex::extract::DeviceImage<Kokkos::HostSpace> on(const Kokkos::HostSpace&) {
    check();
    return in_place() ? wrap() : host_;
  }
#ifdef KOKKOS_ENABLE_CUDA
  const perfex::extract::DeviceImage<Kokkos::CudaSpace>& on(const Kokkos::CudaSpace&) {
    check();
    if (!cuda_) {
      perfex::extract::DeviceImage<Kokkos::CudaSpace> d;
      const auto rows = host_.pixels.extent(0), cols = host_.pixels.extent(1);
      Kokkos::View<double**, Kokkos::LayoutRight, Kokkos::CudaSpace> p(
          perfex::uninitialized("perfex::image"), rows, cols);
      Kokkos::View<double**, Kokkos::LayoutRight, Kokkos::CudaSpace> w(
          perfex::uninitialized("perfex::ivar"), rows, cols);
      const auto host = on(Kokkos::HostSpace());
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
#endif

  // The CCD's size.
  int nrows() const { return host_.nrows(); }
  int ncols() const { return host_.ncols(); }
  long long nonfinite_pixels() const { return host_.nonfinite_pixels; }
  // Addresses the extraction reads (equal to the numpy buffers' when used in place).
  std::uintptr_t pixels_address() const {
    return reinterpret_cast<std::uintptr_t>(host_.pixels.data());
  }
  std::uintptr_t ivar_address() const {
    return reinterpret_cast<std::uintptr_t>(host_.ivar.data());
  }
  bool in_place() const {
    return host_.pixels.data() == pixels_.data() && host_.ivar.data() == ivar_.data();
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
  perfex::extract::DeviceImage<Kokkos::HostSpace> wrap() const {
    auto image = perfex::extract::wrap_host_image(pixels_.data(), ivar_.data(),
                                                  static_cast<int>(pixels_.shape(0)),
                                                  static_cast<int>(pixels_.shape(1)));
    image.region = region_;
    return image;
  }
  Array pixels_, ivar_;  // keep the numpy buffers alive while the views point into them
  perfex::extract::ImageRegion region_;
  perfex::extract::DeviceImage<Kokkos::HostSpace> host_;
#ifdef KOKKOS_ENABLE_CUDA
  std::optional<perfex::extract::DeviceImage<Kokkos::CudaSpace>> cuda_;
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

 private:
  py::object owner_;  // the arrays' owners, alive while the image is
  perfex::extract::DeviceImage<Kokkos::CudaSpace> image_;
};
#endif

// A preproc image as the dict perfex.images.PreprocImage is built from (the arrays moved).
py::dict preproc_to_dict(perfex::io::PreprocImage&& img);

}  // namespace perfex_py
