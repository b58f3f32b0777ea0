// CCD images (numpy arrays in place, or a sanitised copy) and the extraction from them: the
// same request checks as perfex-extract (perfex::extract::resolve_request), then extract_frame.
#include <perfex/extract/extract_frame.hpp>
#include <perfex/io/extract_files.hpp>
#include <perfex/io/image_fits.hpp>
#include <perfex/runtime.hpp>

#include <array>
#include <climits>
#include <cstdint>
#include <ctime>
#include <optional>
#include <set>

#include "bindings.hpp"

namespace perfex_py {

using perfex::psf::GaussHermitePsfData;

namespace {

class HostImage;
std::set<HostImage*> live_images;  // guarded by the GIL

// A CCD image for the extraction: the numpy arrays themselves when they are clean
// (perfex::extract::wrap_host_image), else a sanitised copy (NaN/Inf masked and counted; a
// negative ivar is an error). Uploaded once to a device backend on first use there. Every
// Kokkos allocation it holds is released before Kokkos is finalized.
class HostImage {
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
    live_images.insert(this);
  }
  ~HostImage() { live_images.erase(this); }
  HostImage(const HostImage&) = delete;
  HostImage& operator=(const HostImage&) = delete;

  void release() {
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
class CudaArrayImage {
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
    live_cuda_images.insert(this);
  }
  ~CudaArrayImage() { live_cuda_images.erase(this); }
  CudaArrayImage(const CudaArrayImage&) = delete;
  CudaArrayImage& operator=(const CudaArrayImage&) = delete;
  void release() { image_ = {}; }
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
  static std::set<CudaArrayImage*> live_cuda_images;

 private:
  py::object owner_;  // the arrays' owners, alive while the image is
  perfex::extract::DeviceImage<Kokkos::CudaSpace> image_;
};
std::set<CudaArrayImage*> CudaArrayImage::live_cuda_images;
#endif

// progress: a Python callable(done, total) or None. A Python exception raised by it ends the
// extraction and propagates to the caller.
template <class Image>
py::dict extract_frame(Image& image, const GaussHermitePsfData& psf, const py::dict& options,
                       bool nspec_given, bool allow_image_size_mismatch, const std::string& backend,
                       const py::object& progress, int first, int last, bool model_blocks) {
  require_runtime();
  perfex::check_backend(backend);
  perfex::extract::Request request;
  request.options = options_from_dict(options);
  request.nspec_given = nspec_given;
  request.allow_image_size_mismatch = allow_image_size_mismatch;
  const perfex::extract::ResolvedRequest resolved = perfex::extract::resolve_request(
      request, psf, image.nrows(), image.ncols(), parameter_names(false));
  const perfex::extract::ProgressCallback callback = [&progress](int done, int total) {
    kokkos_thread().check_cancel();
    if (progress.is_none()) return;
    py::gil_scoped_acquire gil;
    progress(done, total);
  };
  perfex::extract::Frame frame = kokkos_thread().run([&] {
    return perfex::io::while_doing(
        "extracting " + perfex::extract::describe(resolved.size, backend == "cuda"), [&] {
          return perfex::with_backend(backend, [&](const auto& exec) {
            using Exec = std::decay_t<decltype(exec)>;
            perfex::io::check_device_memory<Exec>(resolved.size);
            const auto device_psf = perfex::extract::upload_psf(exec, psf);
            const auto plan = perfex::extract::plan_frame(exec, device_psf, image.nrows(),
                                                          image.ncols(), resolved.options);
            return perfex::extract::extract_frame(exec, plan, device_psf,
                                                  image.on(typename Exec::memory_space()), callback,
                                                  {first, last, model_blocks});
          });
        });
  });
  frame.warnings.insert(frame.warnings.begin(), resolved.warnings.begin(), resolved.warnings.end());
  return frame_to_dict(std::move(frame));
}

// (wall, CPU) seconds of the C++ call alone, its result dropped: the baseline the benchmark
// measures the Python call's overhead against. host_copy: the C++ entry for host arrays instead
// (extract_frame of a CcdImage holding a copy of the image, which it checks and uploads).
std::pair<double, double> time_extract_frame(HostImage& image, const GaussHermitePsfData& psf,
                                             const perfex::extract::ExtractionOptions& options,
                                             const std::string& backend, bool host_copy) {
  require_runtime();
  return kokkos_thread().run([&] {
    const auto& host = image.on(Kokkos::HostSpace());
    perfex::extract::CcdImage ccd;
    if (host_copy) {
      const std::size_t n = host.pixels.size();
      ccd.nrows = host.nrows();
      ccd.ncols = host.ncols();
      ccd.pixels.assign(host.pixels.data(), host.pixels.data() + n);
      ccd.ivar.assign(host.ivar.data(), host.ivar.data() + n);
    }
    const auto start = std::chrono::steady_clock::now();
    const std::clock_t cpu_start = std::clock();  // the process's CPU time, every thread
    perfex::with_backend(backend, [&](const auto& exec) {
      using Mem = typename std::decay_t<decltype(exec)>::memory_space;
      if (host_copy)
        perfex::extract::extract_frame(exec, psf, ccd, options);
      else
        perfex::extract::extract_frame(exec, psf, image.on(Mem()), options);
    });
    return std::make_pair(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(),
        static_cast<double>(std::clock() - cpu_start) / CLOCKS_PER_SEC);
  });
}

// The C++ path end to end, no numpy: read_psf + read_preproc + extract_frame of the host
// CcdImage (uploaded inside). The reference the tests and benchmarks hold the Python API to.
py::dict reference_extract(const std::string& image_path, const std::string& psf_path,
                           const perfex::extract::ExtractionOptions& options,
                           const std::string& backend) {
  require_runtime();
  perfex::extract::Frame frame = kokkos_thread().run([&] {
    const GaussHermitePsfData psf = perfex::io::read_psf(psf_path);
    const perfex::io::PreprocImage image = perfex::io::read_preproc(image_path);
    return perfex::with_backend(backend, [&](const auto& exec) {
      return perfex::extract::extract_frame(exec, psf, image.ccd, options);
    });
  });
  return frame_to_dict(std::move(frame));
}

// What a frame's plan says on the host, for deciding how to split it (perfex.mpi): the patches
// in order with the bins they give and the pixels they read, and their flop counts.
struct PlanInfo {
  int ccd_rows = 0, ccd_cols = 0, nwave = 0, ndiag = 0;
  std::vector<perfex::extract::PatchDesc> patches;
  std::vector<double> flops;
  perfex::extract::ExtractionOptions options;  // as the plan uses them (psferr resolved)

  py::object pixel_box(int first, int last) const {
    perfex::extract::FramePlan<Kokkos::HostSpace> p;
    p.ccd_rows = ccd_rows;
    p.ccd_cols = ccd_cols;
    p.patches = patches;
    const auto box = p.pixel_box(first, last);
    if (box.empty()) return py::none();
    return py::make_tuple(box.row0, box.row1, box.col0, box.col1);
  }
  // Values of the model image's blocks of patches [first, last) (their window pixels).
  long long model_block_values(int first, int last) const {
    long long n = 0;
    for (int i = first; i < last; ++i)
      n += perfex::extract::model_block_size(patches[static_cast<std::size_t>(i)]);
    return n;
  }
  // [npatches][4]: (first kept fibre's frame row, kept fibres, first core bin, core bins).
  py::array_t<int> blocks() const {
    std::vector<int> v;
    for (const auto& d : patches)
      for (int x : {d.out_fibre0, d.nkeepfib, d.kf0, d.nkeep}) v.push_back(x);
    return to_numpy(std::move(v), {static_cast<py::ssize_t>(patches.size()), 4});
  }
};

PlanInfo plan_info(const GaussHermitePsfData& psf, const py::dict& options, int ccd_rows,
                   int ccd_cols, const std::string& backend) {
  require_runtime();
  const perfex::extract::ExtractionOptions o = options_from_dict(options);
  return kokkos_thread().run([&] {
    return perfex::with_backend(backend, [&](const auto& exec) {
      const auto plan = perfex::extract::plan_frame(exec, perfex::extract::upload_psf(exec, psf),
                                                    ccd_rows, ccd_cols, o);
      PlanInfo info;
      info.ccd_rows = ccd_rows;
      info.ccd_cols = ccd_cols;
      info.nwave = static_cast<int>(plan.wave.size());
      info.ndiag = plan.geometry.ndiag;
      info.patches = plan.patches;
      for (const auto& p : plan.patches)
        info.flops.push_back(perfex::extract::patch_flops(p, plan.geometry.nwt, plan.geometry.ndiag,
                                                          plan.options.decorrelation));
      info.options = plan.options;
      return info;
    });
  });
}

}  // namespace

void release_images() {
  for (HostImage* image : live_images) image->release();
#ifdef KOKKOS_ENABLE_CUDA
  for (CudaArrayImage* image : CudaArrayImage::live_cuda_images) image->release();
#endif
}

void register_images(py::module_& m) {
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
        const py::ssize_t nrows = img.ccd.nrows, ncols = img.ccd.ncols;
        py::dict d;
        d["path"] = img.path;
        d["pixels"] = to_numpy(std::move(img.ccd.pixels), {nrows, ncols});
        d["ivar"] = to_numpy(std::move(img.ccd.ivar), {nrows, ncols});
        d["masked_pixels"] = img.masked_pixels;
        d["nonfinite_pixels"] = img.nonfinite_pixels;
        d["has_fibermap"] = img.has_fibermap;
        const auto& r = img.ccd.region;
        d["region"] = r.ccd_rows > 0
                          ? py::object(py::make_tuple(r.row0, r.col0, r.ccd_rows, r.ccd_cols))
                          : py::object(py::none());
        return d;
      },
      py::arg("path"), py::arg("mask_bits") = 0x2FF, py::arg("box") = py::none());
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
                       int col0, int ccd_rows, int ccd_cols) {
             return new HostImage(pixels, ivar, {row0, col0, ccd_rows, ccd_cols});
           }),
           py::arg("pixels").noconvert(), py::arg("ivar").noconvert(), py::arg("row0") = 0,
           py::arg("col0") = 0, py::arg("ccd_rows") = 0, py::arg("ccd_cols") = 0)
      .def_property_readonly(
          "shape", [](const HostImage& i) { return py::make_tuple(i.nrows(), i.ncols()); })
      .def_property_readonly("nonfinite_pixels", &HostImage::nonfinite_pixels)
      .def_property_readonly("pixels_address", &HostImage::pixels_address)
      .def_property_readonly("ivar_address", &HostImage::ivar_address)
      .def_property_readonly("in_place", &HostImage::in_place)
      .def_property_readonly("pixels", &HostImage::pixels)
      .def_property_readonly("ivar", &HostImage::ivar);

  m.def("cuda_device_count", []() {
#ifdef KOKKOS_ENABLE_CUDA
    int n = 0;
    return cudaGetDeviceCount(&n) == cudaSuccess ? n : 0;
#else
    return 0;
#endif
  });
#ifdef KOKKOS_ENABLE_CUDA
  py::class_<CudaArrayImage>(m, "CudaArrayImage")
      .def(py::init<std::uintptr_t, std::uintptr_t, int, int, const py::object&>(),
           py::arg("pixels"), py::arg("ivar"), py::arg("nrows"), py::arg("ncols"), py::arg("owner"))
      .def_property_readonly(
          "shape", [](const CudaArrayImage& i) { return py::make_tuple(i.nrows(), i.ncols()); })
      .def_property_readonly("nonfinite_pixels", &CudaArrayImage::nonfinite_pixels);
  m.def("extract_frame", &extract_frame<CudaArrayImage>, py::arg("image"), py::arg("psf"),
        py::arg("options"), py::arg("nspec_given"), py::arg("allow_image_size_mismatch"),
        py::arg("backend"), py::arg("progress") = py::none(), py::arg("first") = 0,
        py::arg("last") = -1, py::arg("model_blocks") = false);
#endif
  m.def("extract_frame", &extract_frame<HostImage>, py::arg("image"), py::arg("psf"),
        py::arg("options"), py::arg("nspec_given"), py::arg("allow_image_size_mismatch"),
        py::arg("backend"), py::arg("progress") = py::none(), py::arg("first") = 0,
        py::arg("last") = -1, py::arg("model_blocks") = false,
        "Checks the request (resolve_request), plans the frame and extracts its patches "
        "[first, last) (all by default); model_blocks: the model image's blocks of the range "
        "(flat, in 'model_blocks') instead of the image.");
  py::class_<PlanInfo>(m, "Plan")
      .def_readonly("ccd_rows", &PlanInfo::ccd_rows)
      .def_readonly("ccd_cols", &PlanInfo::ccd_cols)
      .def_readonly("nwave", &PlanInfo::nwave)
      .def_readonly("ndiag", &PlanInfo::ndiag)
      .def_property_readonly("options",
                             [](const PlanInfo& p) { return options_to_dict(p.options); })
      .def_property_readonly("npatches",
                             [](const PlanInfo& p) { return static_cast<int>(p.patches.size()); })
      .def_property_readonly("flops", [](const PlanInfo& p) { return p.flops; })
      .def("pixel_box", &PlanInfo::pixel_box, py::arg("first") = 0, py::arg("last") = -1,
           "(row0, row1, col0, col1) of the pixels patches [first, last) read, or None.")
      .def("blocks", &PlanInfo::blocks)
      .def("model_block_values", &PlanInfo::model_block_values, py::arg("first"), py::arg("last"));
  m.def(
      "fold_model_blocks",
      [](py::array_t<double, py::array::c_style> model, const PlanInfo& plan, int first, int last,
         py::array_t<double, py::array::c_style | py::array::forcecast> blocks) {
        if (model.ndim() != 2 || model.shape(0) != plan.ccd_rows ||
            model.shape(1) != plan.ccd_cols || !model.writeable())
          throw Error("model: a writable float64 " + std::to_string(plan.ccd_rows) + " x " +
                      std::to_string(plan.ccd_cols) + " array is required");
        if (first < 0 || first > last || last > static_cast<int>(plan.patches.size()))
          throw Error("patches " + std::to_string(first) + "-" + std::to_string(last) +
                      " of a plan of " + std::to_string(plan.patches.size()));
        const std::vector<perfex::extract::PatchDesc> range(plan.patches.begin() + first,
                                                            plan.patches.begin() + last);
        double* out = model.mutable_data();
        const double* in = blocks.data();
        const std::size_t n = static_cast<std::size_t>(blocks.size());
        require_runtime();
        kokkos_thread().run([&] {
          perfex::extract::fold_model_blocks(out, plan.ccd_rows, plan.ccd_cols, range, in, n);
        });
      },
      py::arg("model"), py::arg("plan"), py::arg("first"), py::arg("last"), py::arg("blocks"),
      "perfex::extract::fold_model_blocks: adds the model blocks of patches [first, last) (as a "
      "range's extract_frame returns them) into model, in the plan's order.");
  m.def("plan_frame", &plan_info, py::arg("psf"), py::arg("options"), py::arg("ccd_rows"),
        py::arg("ccd_cols"), py::arg("backend"),
        "The frame's plan for resolved options (resolve_request's), on the host.");

  // Hooks of the tests and benchmarks, not of the API.
  py::module_ testing = m.def_submodule("testing", "test and benchmark hooks (not the API)");
  testing.def("time_extract_frame", &time_extract_frame, py::arg("image"), py::arg("psf"),
              py::arg("options"), py::arg("backend"), py::arg("host_copy") = false);
  testing.def("reference_extract", &reference_extract, py::arg("image_path"), py::arg("psf_path"),
              py::arg("options"), py::arg("backend"));
}

}  // namespace perfex_py
