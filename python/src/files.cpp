// The files -> frame pipeline of perfex-extract (perfex::io::extract_files) and its output
// checks, for python3 -m perfex.extract and the API's file writers.
#include <perfex/io/extract_files.hpp>

#include "bindings.hpp"

namespace perfex_py {

namespace {

std::vector<perfex::io::NamedPath> named_paths(
    const std::vector<std::pair<std::string, std::string>>& v) {
  std::vector<perfex::io::NamedPath> out;
  for (const auto& [name, path] : v) out.push_back({name, path});
  return out;
}

// progress(done, total) and warn(message): Python callables or None.
py::dict extract_files(const std::string& image, const std::string& psf, const std::string& output,
                       const std::string& model, const std::string& fibermap,
                       const py::dict& options, bool wavelength_given, bool nspec_given,
                       bool allow_image_size_mismatch, const std::string& backend,
                       const py::object& progress, const py::object& warn) {
  require_runtime();
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
  const perfex::io::ProgressCallback on_progress = [&progress](int done, int total) {
    kokkos_thread().check_cancel();
    if (progress.is_none()) return;
    py::gil_scoped_acquire gil;
    progress(done, total);
  };
  const perfex::io::WarningCallback on_warning = [&warn](const std::string& w) {
    if (warn.is_none()) return;
    py::gil_scoped_acquire gil;
    warn(w);
  };
  perfex::io::remove_temp_files_on_signals();
  perfex::io::FilesResult r = kokkos_thread().run([&] {
    return perfex::io::extract_files(job, perfex::io::FilesNames(), on_progress, on_warning);
  });
  py::dict d;
  d["backend"] = r.backend;
  d["threads"] = r.threads;
  d["seconds"] = r.seconds;
  d["read_seconds"] = r.read_seconds;
  d["write_seconds"] = r.write_seconds;
  d["frame_warnings"] = r.frame.warnings;
  d["nspec"] = r.frame.nspec;
  d["nwave"] = r.frame.nwave;
  d["npatches"] = r.frame.npatches;
  d["failed_patches"] = r.frame.failed_patches;
  d["linalg_flops"] = r.frame.linalg_flops;
  return d;
}

}  // namespace

void register_files(py::module_& m) {
  m.def("extract_files", &extract_files, py::arg("image"), py::arg("psf"), py::arg("output"),
        py::arg("model"), py::arg("fibermap"), py::arg("options"), py::arg("wavelength_given"),
        py::arg("nspec_given"), py::arg("allow_image_size_mismatch"), py::arg("backend"),
        py::arg("progress") = py::none(), py::arg("warn") = py::none(),
        "perfex-extract's whole job (perfex::io::extract_files), with its option names in "
        "messages; returns the run's statistics.");
  m.def(
      "check_outputs",
      [](const std::vector<std::pair<std::string, std::string>>& outputs,
         const std::vector<std::pair<std::string, std::string>>& inputs,
         const std::string& prefix) {
        perfex::io::check_outputs(named_paths(outputs), named_paths(inputs), prefix);
      },
      py::arg("outputs"), py::arg("inputs"), py::arg("prefix") = "",
      "Raises RequestError unless every (name, path) output can be written and none is an input "
      "or an earlier output (the same file by device and inode, or by folder and name).");
}

}  // namespace perfex_py
