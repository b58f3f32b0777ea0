// perfex.images: CCD images (numpy arrays in place or a sanitised copy, arrays on the GPU) and
// preproc files (read whole or as a pixel box).
#include "images.hpp"

#include <perfex/io/image_fits.hpp>

#include <array>
#include <cstdint>

namespace perfex_py {

void register_images(py::module_& m) {
  m.attr("DEFAULT_MASK_BITS") = perfex::io::kDefaultMaskBits;
  m.def(
      "read_preproc",
      [](const std::string& path, std::uint32_t mask_bits, const py::object& box) {
        perfex::extract::PixelBox pixels;
        if (!box.is_none()) {
          const auto b = box.cast<std::array<int, 4>>();
          pixels = {b[0], b[1], b[2], b[3]};
        }
        perfex::io::PreprocImage img;
        {
          py::gil_scoped_release nogil;
          img = perfex::io::read_preproc(path, mask_bits, pixels);
        }
        return preproc_to_dict(std::move(img));
      },
      py::arg("path"), py::arg("mask_bits") = perfex::io::kDefaultMaskBits,
      py::arg("box") = py::none());
  m.def("preproc_shape", [](const std::string& path) {
    perfex::extract::PixelBox extent;
    {
      py::gil_scoped_release nogil;
      extent = perfex::io::preproc_extent(path);
    }
    return py::make_tuple(extent.row1, extent.col1);
  });
  py::class_<HostImage>(m, "HostImage")
      .def(py::init([](const HostImage::Array& pixels, const HostImage::Array& ivar, int row0,
                       int col0, int ccd_rows, int ccd_cols, bool check) {
             return new HostImage(pixels, ivar, {row0, col0, ccd_rows, ccd_cols}, check);
           }),
           py::arg("pixels").noconvert(), py::arg("ivar").noconvert(), py::arg("row0") = 0,
           py::arg("col0") = 0, py::arg("ccd_rows") = 0, py::arg("ccd_cols") = 0,
           py::arg("check") = true)
      .def_property_readonly(
          "shape", [](const HostImage& i) { return py::make_tuple(i.nrows(), i.ncols()); })
      .def_property_readonly("nonfinite_pixels", &HostImage::nonfinite_pixels)
      .def_property_readonly("pixels_address", &HostImage::pixels_address)
      .def_property_readonly("ivar_address", &HostImage::ivar_address)
      .def_property_readonly("in_place", &HostImage::in_place)
      .def_property_readonly("pixels", &HostImage::pixels)
      .def_property_readonly("ivar", &HostImage::ivar);
#ifdef KOKKOS_ENABLE_CUDA
  py::class_<CudaArrayImage>(m, "CudaArrayImage")
      .def(py::init<std::uintptr_t, std::uintptr_t, int, int, const py::object&>(),
           py::arg("pixels"), py::arg("ivar"), py::arg("nrows"), py::arg("ncols"), py::arg("owner"))
      .def_property_readonly(
          "shape", [](const CudaArrayImage& i) { return py::make_tuple(i.nrows(), i.ncols()); })
      .def_property_readonly("nonfinite_pixels", &CudaArrayImage::nonfinite_pixels);
#endif
}

py::dict preproc_to_dict(perfex::io::PreprocImage&& img) {
  const py::ssize_t nrows = img.ccd.nrows, ncols = img.ccd.ncols;
  py::dict d;
  d["path"] = fs_text(img.path);
  d["pixels"] = to_numpy(std::move(img.ccd.pixels), {nrows, ncols});
  d["ivar"] = to_numpy(std::move(img.ccd.ivar), {nrows, ncols});
  d["masked_pixels"] = img.masked_pixels;
  d["nonfinite_pixels"] = img.nonfinite_pixels;
  d["has_fibermap"] = img.has_fibermap;
  const auto& r = img.ccd.region;
  d["region"] = r.ccd_rows > 0 ? py::object(py::make_tuple(r.row0, r.col0, r.ccd_rows, r.ccd_cols))
                               : py::object(py::none());
  return d;
}

}  // namespace perfex_py
