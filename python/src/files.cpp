// perfex.files: a frame's files and the job around them, phase by phase, as perfex-extract's
// io::extract_files runs them (FrameFiles: files::inputs when built, job::check giving the
// FrameJob, files::read, files::write), for a frame in one process, over MPI ranks, and the
// frames of an exposure.
#include <perfex/io/extract_files.hpp>

#include <array>
#include <memory>

#include "extraction.hpp"
#include "images.hpp"

namespace perfex_py {

namespace {

perfex::io::FilesRequest files_request(const std::string& image, const std::string& psf,
                                       const std::string& output, const std::string& model,
                                       const std::string& fibermap, const py::dict& options,
                                       bool wavelength_given, bool nspec_given,
                                       bool allow_image_size_mismatch, const std::string& backend) {
  perfex::io::FilesRequest job;
  job.image = image;
  job.psf = psf;
  job.output = output;
  job.model = model;
  job.fibermap = fibermap;
  job.request.options = options_from_dict(options);
  job.request.wavelength_given = wavelength_given;
  job.request.nspec_given = nspec_given;
  job.request.allow_image_size_mismatch = allow_image_size_mismatch;
  job.backend = backend;
  job.dependencies = python_dependencies();
  return job;
}

// A Python callable(message) or None, which must outlive the callback (it is not copied: the
// callback may run without the GIL).
perfex::io::WarningCallback warning_callback(const py::object& warn) {
  return [&warn](const std::string& w) {
    if (warn.is_none()) return;
    py::gil_scoped_acquire gil;
    warn(fs_text(w));
  };
}

// A frame's files between the phases of their job, which time into the caller's PhaseTimes.
class FrameFiles {
 public:
  FrameFiles(const perfex::io::FilesRequest& request, const py::object& warn,
             std::shared_ptr<perfex::PhaseTimes> times)
      : warn_object_(warn), warn_(warning_callback(warn_object_)), times_(std::move(times)) {
    py::gil_scoped_release nogil;
    files_ = perfex::io::open_files(request, perfex::io::FilesNames(), *times_);
  }
  // job::check with the command line's names; the job to plan and extract.
  FrameJob* check() {
    perfex::extract::ResolvedRequest resolved = perfex::io::check_files_job(files_, warn_, *times_);
    return new FrameJob(files_.psf, std::move(resolved), files_.ccd_rows(), files_.ccd_cols(),
                        files_.backend, times_);
  }
  py::dict read_box(const py::object& box) {
    perfex::extract::PixelBox pixels;
    if (!box.is_none()) {
      const auto b = box.cast<std::array<int, 4>>();
      pixels = {b[0], b[1], b[2], b[3]};
    }
    perfex::io::PreprocImage image;
    {
      py::gil_scoped_release nogil;
      image = perfex::io::read_box(files_, pixels, warn_, *times_);
    }
    return preproc_to_dict(std::move(image));
  }
  void write(const py::object& frame) {
    const perfex::extract::Frame fr = frame_from_object(frame);
    perfex::io::remove_temp_files_on_signals();
    py::gil_scoped_release nogil;
    perfex::io::write_files(files_, fr, warn_, *times_);
  }
  const perfex::io::FrameFiles& files() const { return files_; }

 private:
  perfex::io::FrameFiles files_;
  py::object warn_object_;
  perfex::io::WarningCallback warn_;
  std::shared_ptr<perfex::PhaseTimes> times_;
};

}  // namespace

void register_files(py::module_& m) {
  py::class_<FrameFiles>(m, "FrameFiles")
      .def(py::init([](const std::string& image, const std::string& psf, const std::string& output,
                       const std::string& model, const std::string& fibermap,
                       const py::dict& options, bool wavelength_given, bool nspec_given,
                       bool allow_image_size_mismatch, const std::string& backend,
                       const py::object& warn, const py::object& times) {
             return new FrameFiles(
                 files_request(image, psf, output, model, fibermap, options, wavelength_given,
                               nspec_given, allow_image_size_mismatch, backend),
                 warn, recorder(times));
           }),
           py::arg("image"), py::arg("psf"), py::arg("output"), py::arg("model"),
           py::arg("fibermap"), py::arg("options"), py::arg("wavelength_given"),
           py::arg("nspec_given"), py::arg("allow_image_size_mismatch"), py::arg("backend"),
           py::arg("warn") = py::none(), py::arg("times") = py::none(),
           "files::inputs: the outputs checked, the PSF and the image's header read; the phases "
           "of these files and of their job timed into times (a PhaseTimes; None: their own).")
      .def_property_readonly("psf",
                             [](const FrameFiles& f) {
                               return std::make_shared<perfex::psf::AnyPsfData>(f.files().psf);
                             })
      .def_property_readonly("ccd_shape",
                             [](const FrameFiles& f) {
                               return py::make_tuple(f.files().ccd_rows(), f.files().ccd_cols());
                             })
      .def("check", &FrameFiles::check, "job::check: the FrameJob of these files.")
      .def("read_box", &FrameFiles::read_box, py::arg("box"),
           "files::read: only the pixels of box (row0, row1, col0, col1), as read_preproc's dict.")
      .def("write", &FrameFiles::write, py::arg("frame"),
           "files::write: the frame (and the model when asked for), atomically.");
}

}  // namespace perfex_py
