// perfex.extraction: the extraction job in phases (FrameJob) for the numpy API, the MPI ranks
// and exposures; the hooks of the tests and benchmarks (perfex._perfex.testing).
#include "extraction.hpp"

#include <perfex/io/image_fits.hpp>
#include <perfex/io/psf_files.hpp>

#include <chrono>
#include <ctime>
#include <type_traits>

namespace perfex_py {

using perfex::psf::AnyPsfData;

FrameJob::FrameJob(const AnyPsfData& psf, const perfex::extract::Request& request, int ccd_rows,
                   int ccd_cols, const perfex::extract::ParameterNames& names,
                   const std::string& backend, Times times, bool frame_warnings)
    : psf_(psf),
      ccd_rows_(ccd_rows),
      ccd_cols_(ccd_cols),
      backend_(backend),
      times_(std::move(times)),
      frame_warnings_(frame_warnings) {
  perfex::check_backend(backend_);
  resolved_ = perfex::extract::check_job(request, psf_, ccd_rows, ccd_cols, names, *times_);
}

FrameJob::FrameJob(const AnyPsfData& psf, perfex::extract::ResolvedRequest resolved, int ccd_rows,
                   int ccd_cols, const std::string& backend, Times times)
    : psf_(psf),
      resolved_(std::move(resolved)),
      ccd_rows_(ccd_rows),
      ccd_cols_(ccd_cols),
      backend_(backend),
      times_(std::move(times)),
      frame_warnings_(false) {
  perfex::check_backend(backend_);
}

const std::vector<std::string>& FrameJob::frame_warnings() const {
  static const std::vector<std::string> none;
  return frame_warnings_ ? resolved_.warnings : none;
}

void FrameJob::plan() {
  if (planned_) return;
  require_runtime();
  kokkos_thread().run([&] {
    perfex::while_doing(
        "extracting " + perfex::extract::describe(resolved_.size, backend_ == "cuda"), [&] {
          perfex::with_backend(backend_, [&](const auto& exec) {
            psf_.visit([&](const auto& format) {
              planned_ =
                  perfex::extract::plan_job(exec, format, resolved_, ccd_rows_, ccd_cols_, *times_);
            });
          });
        });
  });
}

// f(planned job) on the job's backend, planning first.
template <class F>
decltype(auto) FrameJob::with_plan(F&& f) {
  plan();
  return std::visit(std::forward<F>(f), *planned_);
}

namespace {

// An image as a job checks it (extract_job's image source): the pixels of one box.
template <class Image>
struct CheckedIn {
  const Image& image;
  perfex::extract::PixelBox box;
  template <class Mem>
  decltype(auto) on(const Mem& space, const perfex::extract::PixelBox&) const {
    return image.on(space, box);
  }
};

}  // namespace

template <class Image>
py::dict FrameJob::extract(Image& image, const py::object& progress, int first, int last,
                           bool model_blocks) {
  require_runtime();
  const perfex::extract::ProgressCallback callback = [&progress](int done, int total) {
    kokkos_thread().check_cancel();
    if (progress.is_none()) return;
    py::gil_scoped_acquire gil;
    progress(done, total);
  };
  plan();
  perfex::extract::Frame frame = kokkos_thread().run([&] {
    return perfex::while_doing(
        "extracting " + perfex::extract::describe(resolved_.size, backend_ == "cuda"), [&] {
          return with_plan([&](const auto& job) {
            // The process that reports the frame's warnings (one process; MPI rank 0, which
            // holds every pixel the frame reads) checks all of them, so that its NaN/Inf count
            // is the frame's; another rank the pixels of its patches.
            const auto box =
                frame_warnings_ ? job.plan.pixel_box() : job.plan.pixel_box(first, last);
            return perfex::extract::extract_job(job, CheckedIn<Image>{image, box}, callback,
                                                {first, last, model_blocks}, frame_warnings(),
                                                *times_);
          });
        });
  });
  frame.phases = *times_;
  return frame_to_dict(std::move(frame));
}

const std::vector<perfex::extract::PatchDesc>& FrameJob::patches() {
  return with_plan([](const auto& job) -> const auto& { return job.plan.patches; });
}

int FrameJob::nwave() {
  return with_plan([](const auto& job) { return static_cast<int>(job.plan.wave.size()); });
}

int FrameJob::ndiag() {
  return with_plan([](const auto& job) { return job.plan.geometry.ndiag; });
}

std::vector<double> FrameJob::flops() {
  return with_plan([](const auto& job) {
    std::vector<double> f;
    const auto& g = job.plan.geometry;
    for (const auto& p : job.plan.patches)
      f.push_back(perfex::extract::patch_flops(p, g.nwt, g.ndiag, job.plan.options.decorrelation));
    return f;
  });
}

py::object FrameJob::pixel_box(int first, int last) {
  const auto box = with_plan([&](const auto& job) { return job.plan.pixel_box(first, last); });
  if (box.empty()) return py::none();
  return py::make_tuple(box.row0, box.row1, box.col0, box.col1);
}

namespace {

// (wall, CPU) seconds of the C++ call alone, its result dropped: the baseline the benchmark
// measures the Python call's overhead against. host_copy: the C++ entry for host arrays instead
// (extract_frame of a CcdImage holding a copy of the image, which it checks and uploads).
std::pair<double, double> time_extract_frame(HostImage& image, const AnyPsfData& psf,
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
    const AnyPsfData psf = perfex::io::read_psf(psf_path);
    const perfex::io::PreprocImage image = perfex::io::read_preproc(image_path);
    return perfex::with_backend(backend, [&](const auto& exec) {
      return perfex::extract::extract_frame(exec, psf, image.ccd, options);
    });
  });
  return frame_to_dict(std::move(frame));
}

template <class Image>
void def_extract(py::class_<FrameJob>& job) {
  job.def("extract", &FrameJob::extract<Image>, py::arg("image"), py::arg("progress") = py::none(),
          py::arg("first") = 0, py::arg("last") = -1, py::arg("model_blocks") = false,
          "job::extract of patches [first, last) (all by default) from the image; the frame as a "
          "dict, its phases the job's so far. model_blocks: the model image's blocks of the range "
          "(flat, in 'model_blocks') instead of the image.");
}

}  // namespace

void register_extraction(py::module_& m) {
  py::class_<FrameJob> job(m, "FrameJob");
  job.def(py::init([](const AnyPsfData& psf, const py::dict& options, int ccd_rows, int ccd_cols,
                      bool wavelength_given, bool nspec_given, bool allow_image_size_mismatch,
                      const std::string& backend, const py::object& times, bool frame_warnings) {
            perfex::extract::Request request;
            request.options = options_from_dict(options);
            request.wavelength_given = wavelength_given;
            request.nspec_given = nspec_given;
            request.allow_image_size_mismatch = allow_image_size_mismatch;
            return new FrameJob(psf, request, ccd_rows, ccd_cols, {}, backend, recorder(times),
                                frame_warnings);
          }),
          py::arg("psf"), py::arg("options"), py::arg("ccd_rows"), py::arg("ccd_cols"),
          py::arg("wavelength_given") = true, py::arg("nspec_given") = true,
          py::arg("allow_image_size_mismatch") = false, py::arg("backend"),
          py::arg("times") = py::none(), py::arg("frame_warnings") = true,
          "job::check: the request (resolve_request, with the API's parameter names), timed into "
          "times (a PhaseTimes; None: the job's own); raises RequestError for a refused request, "
          "Error for an image that is not the PSF's CCD. frame_warnings: the frames start with the "
          "check's warnings.")
      .def_property_readonly(
          "options", [](const FrameJob& j) { return options_to_dict(j.resolved().options); },
          "The options to extract with (resolved).")
      .def_property_readonly(
          "warnings", [](const FrameJob& j) { return j.resolved().warnings; },
          "What the check adapted or noticed.")
      .def_property_readonly("frame_warnings", &FrameJob::frame_warnings,
                             "The warnings the frames start with: the check's, or none.")
      .def_property_readonly("backend", &FrameJob::backend)
      .def_property_readonly(
          "psf", [](const FrameJob& j) { return std::make_shared<AnyPsfData>(j.psf()); },
          "The job's PSF (a copy).")
      .def_property_readonly(
          "ccd_shape", [](const FrameJob& j) { return py::make_tuple(j.ccd_rows(), j.ccd_cols()); })

      .def("plan", &FrameJob::plan, "job::plan (once).")
      .def_property_readonly("npatches",
                             [](FrameJob& j) { return static_cast<int>(j.patches().size()); })
      .def_property_readonly("nwave", &FrameJob::nwave)
      .def_property_readonly("ndiag", &FrameJob::ndiag)
      .def_property_readonly("flops", &FrameJob::flops,
                             "Each patch's linear algebra flops (patch_flops), in plan order.")
      .def("pixel_box", &FrameJob::pixel_box, py::arg("first") = 0, py::arg("last") = -1,
           "(row0, row1, col0, col1) of the pixels patches [first, last) read, or None.")
      .def(
          "blocks",
          [](FrameJob& j) {
            std::vector<int> v;
            for (const auto& d : j.patches())
              for (int x : {d.out_fibre0, d.nkeepfib, d.kf0, d.nkeep}) v.push_back(x);
            const auto n = static_cast<py::ssize_t>(j.patches().size());
            return to_numpy(std::move(v), {n, 4});
          },
          "[npatches][4]: (first kept fibre's frame row, kept fibres, first core bin, core bins).")
      .def(
          "model_block_values",
          [](FrameJob& j, int first, int last) {
            long long n = 0;
            for (int i = first; i < last; ++i)
              n += perfex::extract::model_block_size(j.patches().at(static_cast<std::size_t>(i)));
            return n;
          },
          py::arg("first"), py::arg("last"),
          "Values of the model image's blocks of patches [first, last) (their window pixels).")
      .def(
          "fold_model_blocks",
          [](FrameJob& j, py::array_t<double, py::array::c_style> model, int first, int last,
             py::array_t<double, py::array::c_style | py::array::forcecast> blocks) {
            const auto& patches = j.patches();
            if (model.ndim() != 2 || model.shape(0) != j.ccd_rows() ||
                model.shape(1) != j.ccd_cols() || !model.writeable())
              throw Error("model: a writable float64 " + std::to_string(j.ccd_rows()) + " x " +
                          std::to_string(j.ccd_cols()) + " array is required");
            if (first < 0 || first > last || last > static_cast<int>(patches.size()))
              throw Error("patches " + std::to_string(first) + "-" + std::to_string(last) +
                          " of a plan of " + std::to_string(patches.size()));
            const std::vector<perfex::extract::PatchDesc> range(patches.begin() + first,
                                                                patches.begin() + last);
            double* out = model.mutable_data();
            const double* in = blocks.data();
            const std::size_t n = static_cast<std::size_t>(blocks.size());
            kokkos_thread().run([&] {
              perfex::extract::fold_model_blocks(
                  out, j.ccd_rows(), j.ccd_cols(), range, in, n,
                  perfex::extract::model_fold(j.resolved().options.geometry));
            });
          },
          py::arg("model"), py::arg("first"), py::arg("last"), py::arg("blocks"),
          "perfex::extract::fold_model_blocks: folds the model blocks of patches [first, last) (as "
          "a range's extract returns them) into model, in the plan's order, by the geometry's "
          "rule (added, or written over: specter's).");
#ifdef KOKKOS_ENABLE_CUDA
  def_extract<CudaArrayImage>(job);
#endif
  def_extract<HostImage>(job);

  // Hooks of the tests and benchmarks, not of the API.
  py::module_ testing = m.def_submodule("testing", "test and benchmark hooks (not the API)");
  testing.def("time_extract_frame", &time_extract_frame, py::arg("image"), py::arg("psf"),
              py::arg("options"), py::arg("backend"), py::arg("host_copy") = false);
  testing.def("reference_extract", &reference_extract, py::arg("image_path"), py::arg("psf_path"),
              py::arg("options"), py::arg("backend"));
}

}  // namespace perfex_py
