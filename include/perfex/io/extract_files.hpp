#pragma once
// Files in, frame file out: the whole job of perfex-extract, as one library call that every
// front end (the C++ tools, the Python command line) shares, so each refuses, warns and fails
// the same way (host only; link perfex::io). Its phases around the extraction job's
// (extract/job.hpp), each a function that the Python package also calls on its own (MPI ranks,
// exposures with their reads and writes overlapped), and each a profiling region
// "perfex::files::<phase>":
//
//   files::inputs  open_files: the outputs checked before any work (writable, regular files,
//                  none an input or another output), the PSF read, the image's CCD from its header
//   job::check     check_files_job: the request resolved against them (defaults, fibres, grid,
//                  patch sizes, the image's size, memory)
//   job::plan      extract::plan_job
//   files::read    read_box: only the image rows and columns the patches touch
//   job::extract   extract::extract_job on the requested backend
//   files::write   write_files: the frame (and the model) written atomically
#include <perfex/backends.hpp>
#include <perfex/error.hpp>
#include <perfex/extract/job.hpp>
#include <perfex/extract/preflight.hpp>
#include <perfex/io/frame_fits.hpp>
#include <perfex/io/image_fits.hpp>
#include <perfex/io/output_file.hpp>
#include <perfex/io/psf_files.hpp>
#include <perfex/profiling.hpp>

#include <functional>
#include <new>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace perfex {
namespace io {

// One frame's files and request.
struct FilesRequest {
  std::string image;     // preproc image (IMAGE, IVAR, MASK[, FIBERMAP])
  std::string psf;       // PSF (any format read_psf reads)
  std::string output;    // frame file (".gz": compressed)
  std::string model;     // model image file ("" = none)
  std::string fibermap;  // fibermap file whose rows replace the image's FIBERMAP ("" = none)
  extract::Request request;
  std::string backend;  // "" = default_backend()
  // The front end's own DEPNAMnn/DEPVERnn cards, after perfex's, Kokkos' and the backend's.
  std::vector<Dependency> dependencies;
};

// How a front end names the files and parameters in its messages (defaults: perfex-extract's).
struct FilesNames {
  std::string prefix = "option ";  // before each option name
  std::string image = "-i/--input", psf = "-p/--psf", output = "-o/--output", model = "-m/--model",
              fibermap = "-f/--fibermap", backend = "--backend";
  extract::ParameterNames parameters{"options -s/--specmin, -n/--nspec",
                                     "option -s/--specmin",
                                     "option -w/--wavelength",
                                     "option --nwavestep / --wavepad-frac",
                                     "image",
                                     "--allow-image-size-mismatch"};
};

struct FilesResult {
  extract::Frame frame;
  std::string backend;
  int threads = 1;
  // From the run's phases (set_times): the extraction (job::plan, job::extract), reading the
  // inputs (files::inputs, files::read) and writing the outputs (files::write). The request's
  // check (job::check) is in none of them; frame.phases has every phase.
  double seconds = 0, read_seconds = 0, write_seconds = 0;
};

// r's seconds, read_seconds and write_seconds from the run's phases.
inline void set_times(FilesResult& r, const PhaseTimes& times) {
  r.seconds = times.seconds("job::plan") + times.seconds("job::extract");
  r.read_seconds = times.seconds("files::inputs") + times.seconds("files::read");
  r.write_seconds = times.seconds("files::write");
}

// The extraction's progress callback (extract_frame.hpp); extract_files first calls it with
// (0, 0) to mark the start of the extraction.
using extract::ProgressCallback;
// Receives each warning of a run as it arises (before a long extraction, when it can).
using WarningCallback = std::function<void(const std::string&)>;

// A frame's files once opened (the files::inputs phase): the request, the backend, the PSF,
// the image's CCD, and the warnings met so far (they go into the frame's header).
struct FrameFiles {
  FilesRequest request;
  FilesNames names;
  std::string backend;
  psf::AnyPsfData psf;
  extract::PixelBox ccd;
  std::vector<std::string> notes;

  int ccd_rows() const { return ccd.row1; }
  int ccd_cols() const { return ccd.col1; }
};

// files::inputs: the outputs checked (writable, none an input or another output), the backend
// known, the PSF read, the image's CCD read from its header.
inline FrameFiles open_files(const FilesRequest& request, const FilesNames& names,
                             PhaseTimes& times) {
  Phase phase("files::inputs", times);
  if (request.output.empty()) throw RequestError(names.prefix + names.output + ": required");
  check_outputs(
      {{names.output, request.output}, {names.model, request.model}},
      {{names.image, request.image}, {names.psf, request.psf}, {names.fibermap, request.fibermap}},
      names.prefix);
  FrameFiles files;
  files.request = request;
  files.names = names;
  files.backend = request.backend.empty() ? default_backend() : request.backend;
  check_backend(files.backend, names.prefix + names.backend);
  files.psf = while_doing("reading the PSF " + request.psf, [&] { return read_psf(request.psf); });
  files.ccd = while_doing("reading the image " + request.image,
                          [&] { return preproc_extent(request.image); });
  return files;
}

// job::check for a frame's files: the request (a model image when a model file is asked for)
// against the PSF and the image, with the front end's names; its warnings noted and passed on.
inline extract::ResolvedRequest check_files_job(FrameFiles& files, const WarningCallback& warn,
                                                PhaseTimes& times) {
  extract::ParameterNames parameters = files.names.parameters;
  parameters.image = "image " + files.request.image;
  extract::Request request = files.request.request;
  request.options.model_image = !files.request.model.empty();
  extract::ResolvedRequest resolved =
      extract::check_job(request, files.psf, files.ccd_rows(), files.ccd_cols(), parameters, times);
  for (const std::string& w : resolved.warnings) {
    files.notes.push_back(w);
    if (warn) warn(w);
  }
  return resolved;
}

// files::read: only the rows and columns of `box` (a plan's pixel_box) of the image, converted
// once; its warnings noted and passed on.
inline PreprocImage read_box(FrameFiles& files, const extract::PixelBox& box,
                             const WarningCallback& warn, PhaseTimes& times) {
  Phase phase("files::read", times);
  PreprocImage image = while_doing("reading the image " + files.request.image, [&] {
    return read_preproc(files.request.image, kDefaultMaskBits, box);
  });
  for (const std::string& w : image.warnings) {
    files.notes.push_back(w);
    if (warn) warn(w);
  }
  return image;
}

// files::write: the frame (and the model when asked for) written together: each to a hidden
// temporary, both renamed into place only once both are complete (a full disk while writing the
// model leaves the old frame and model as they were). The inputs and the noted warnings go into
// the frame's header; the writer's own warnings are passed on.
inline void write_files(const FrameFiles& files, const extract::Frame& frame,
                        const WarningCallback& warn, PhaseTimes& times) {
  Phase phase("files::write", times);
  FrameProvenance prov{files.request.image, files.request.psf, files.request.fibermap};
  prov.notes = files.notes;
  prov.backend = files.backend;
  prov.dependencies = files.request.dependencies;
  OutputSet outputs;
  std::vector<std::string> warnings;
  while_doing("writing the frame " + files.request.output,
              [&] { warnings = write_frame(outputs, files.request.output, frame, prov); });
  if (!files.request.model.empty())
    while_doing("writing the model " + files.request.model,
                [&] { write_model(outputs, files.request.model, frame, prov); });
  outputs.commit();
  for (const std::string& w : warnings)
    if (warn) warn(w);
}

// The whole job (see the top of this file), phase by phase: files::inputs, job::check,
// job::plan, files::read, job::extract, files::write (FilesResult::frame.phases). Throws
// RequestError for what is refused before any work and Error for unreadable or invalid inputs
// and I/O failures; nothing is written then, and existing outputs stay as they were.
inline FilesResult extract_files(const FilesRequest& request, const FilesNames& names = {},
                                 const ProgressCallback& progress = {},
                                 const WarningCallback& warn = {}) {
  ScopedRegion region("perfex::extract_files");
  PhaseTimes times;
  FrameFiles files = open_files(request, names, times);
  const extract::ResolvedRequest resolved = check_files_job(files, warn, times);
  FilesResult r;
  r.backend = files.backend;
  if (progress) progress(0, 0);
  r.frame = while_doing("extracting " + extract::describe(resolved.size, r.backend == "cuda"), [&] {
    return with_backend(r.backend, [&](const auto& exec) {
      r.threads = perfex::concurrency(exec);
      return extract::with_planned_job(
          exec, files.psf, resolved, files.ccd_rows(), files.ccd_cols(), times,
          [&](const auto& job) {
            const PreprocImage image = read_box(files, job.plan.pixel_box(), warn, times);
            return extract::extract_job(job, image.ccd, progress, {}, {}, times);
          });
    });
  });
  write_files(files, r.frame, warn, times);
  r.frame.phases = times;
  set_times(r, times);
  return r;
}

}  // namespace io
}  // namespace perfex
