#pragma once
// Files in, frame file out: the whole job of perfex-extract, as one library call that every
// front end (the C++ tools, the Python command line and API) shares, so each refuses, warns and
// fails the same way (host only; link perfex::io).
//
// extract_files checks the outputs (writable, regular files, none an input or another output)
// before any work, reads the PSF, resolves the request against it (extract::resolve_request:
// defaults, fibres, grid, patch sizes, the image's size, memory), plans the frame, reads only
// the image rows and columns its patches touch, extracts on the requested backend and writes
// the frame (and the model) atomically.
#include <perfex/error.hpp>
#include <perfex/extract/extract_frame.hpp>
#include <perfex/extract/preflight.hpp>
#include <perfex/io/frame_fits.hpp>
#include <perfex/io/image_fits.hpp>
#include <perfex/io/output_file.hpp>
#include <perfex/io/psf_fits.hpp>
#include <perfex/runtime.hpp>

#include <chrono>
#include <functional>
#include <new>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace perfex {
namespace io {

// A file as a front end names it in its messages: ("-o/--output", "frame.fits").
struct NamedPath {
  std::string name;
  std::string path;
};

// Throws RequestError unless every output can be written (io::check_output_path) and none is
// one of the inputs or an earlier output: the same file by device and inode, or by canonical
// folder and name before it exists. Messages: "<prefix><output name>: <path> is the <input
// name> file <path>; perfex never writes over its inputs".
inline void check_outputs(const std::vector<NamedPath>& outputs,
                          const std::vector<NamedPath>& inputs, const std::string& prefix = "") {
  std::vector<std::pair<const NamedPath*, FileIdentity>> seen;
  for (const NamedPath& out : outputs) {
    if (out.path.empty()) continue;  // not asked for
    try {
      check_output_path(out.path, prefix + out.name);
    } catch (const RequestError&) {
      throw;
    } catch (const Error& e) {
      throw RequestError(e.what());
    }
    const FileIdentity id = file_identity(out.path);
    for (const NamedPath& in : inputs)
      if (!in.path.empty() && same_file(id, file_identity(in.path)))
        throw RequestError(prefix + out.name + ": " + out.path + " is the " + in.name + " file " +
                           in.path + "; perfex never writes over its inputs");
    for (const auto& [earlier, earlier_id] : seen)
      if (same_file(id, earlier_id))
        throw RequestError(prefix + out.name + ": " + out.path + " is also the " + earlier->name +
                           " file");
    seen.emplace_back(&out, id);
  }
}

// Runs f(); an allocation failure (std::bad_alloc, Kokkos' allocation error) becomes a
// perfex::Error "out of memory while <what>".
template <class F>
decltype(auto) while_doing(const std::string& what, F&& f) {
  try {
    return f();
  } catch (const Error&) {
    throw;
  } catch (const std::bad_alloc&) {
    throw Error("out of memory while " + what);
  } catch (const std::runtime_error& e) {
    // Kokkos 3.4 reports a failed View allocation as a runtime_error with a call stack.
    const std::string m = e.what();
    if (m.find("allocation fail") == std::string::npos &&
        m.find("Allocation fail") == std::string::npos &&
        m.find("failed to allocate") == std::string::npos)
      throw;
    throw Error("out of memory while " + what + " (" + m.substr(0, m.find('\n')) + ")");
  }
}

// Throws RequestError unless a run of this size fits in the free memory of exec's device
// (CUDA: cudaMemGetInfo; host backends: checked by resolve_request).
template <class ExecSpace>
void check_device_memory(const extract::RunSize& size) {
#ifdef KOKKOS_ENABLE_CUDA
  if constexpr (std::is_same<ExecSpace, Kokkos::Cuda>::value) {
    std::size_t free = 0, total = 0;
    if (cudaMemGetInfo(&free, &total) == cudaSuccess && size.device_bytes() > free)
      throw RequestError("the run needs " + extract::describe(size, true) + "; " +
                         extract::human_bytes(static_cast<double>(free)) + " are free on the GPU");
  }
#else
  (void)size;
#endif
}

// One frame's files and request.
struct FilesRequest {
  std::string image;     // preproc image (IMAGE, IVAR, MASK[, FIBERMAP])
  std::string psf;       // PSF (any format read_psf reads)
  std::string output;    // frame file (".gz": compressed)
  std::string model;     // model image file ("" = none)
  std::string fibermap;  // fibermap file whose rows replace the image's FIBERMAP ("" = none)
  extract::Request request;
  std::string backend;  // "" = default_backend()
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
  double seconds = 0;  // extraction only (not I/O)
  double read_seconds = 0, write_seconds = 0;
};

// Called with (patches done, patches in total); (0, 0) marks the start of the extraction.
using ProgressCallback = std::function<void(int, int)>;
// Receives each warning of a run as it arises (before a long extraction, when it can).
using WarningCallback = std::function<void(const std::string&)>;

// The whole job (see the top of this file). Throws RequestError for what is refused before
// any work and Error for unreadable or invalid inputs and I/O failures; nothing is written
// then, and existing outputs stay as they were.
inline FilesResult extract_files(const FilesRequest& job, const FilesNames& names = {},
                                 const ProgressCallback& progress = {},
                                 const WarningCallback& warn = {}) {
  using clock = std::chrono::steady_clock;
  std::vector<std::string> notes;  // this run's warnings, for the frame header
  const WarningCallback note = [&](const std::string& w) {
    notes.push_back(w);
    if (warn) warn(w);
  };
  if (job.output.empty()) throw RequestError(names.prefix + names.output + ": required");
  check_outputs({{names.output, job.output}, {names.model, job.model}},
                {{names.image, job.image}, {names.psf, job.psf}, {names.fibermap, job.fibermap}},
                names.prefix);
  const std::string backend = job.backend.empty() ? default_backend() : job.backend;
  check_backend(backend, names.prefix + names.backend);

  const auto r0 = clock::now();
  const psf::PsfData psf =
      while_doing("reading the PSF " + job.psf, [&] { return read_psf(job.psf); });
  const extract::PixelBox ccd =
      while_doing("reading the image " + job.image, [&] { return preproc_extent(job.image); });
  extract::ParameterNames parameters = names.parameters;
  parameters.image = "image " + job.image;
  extract::Request request = job.request;
  request.options.model_image = !job.model.empty();
  const extract::ResolvedRequest resolved =
      extract::resolve_request(request, psf, ccd.row1, ccd.col1, parameters);
  for (const std::string& w : resolved.warnings) note(w);
  const auto r1 = clock::now();

  FilesResult r;
  r.backend = backend;
  if (progress) progress(0, 0);
  double read_seconds = 0;
  r.frame = while_doing("extracting " + extract::describe(resolved.size, backend == "cuda"), [&] {
    return with_backend(backend, [&](const auto& exec) {
      using Exec = std::decay_t<decltype(exec)>;
      check_device_memory<Exec>(resolved.size);
      r.threads = perfex::concurrency(exec);
      // Plan from the PSF first, then read only the image rows and columns the patches touch,
      // converted once; on host backends the extraction uses those arrays in place.
      const auto t0 = clock::now();
      return extract::with_psf_model(exec, psf, [&](const auto& device_psf) {
        const auto plan =
            extract::plan_frame(exec, device_psf, ccd.row1, ccd.col1, resolved.options);
        const auto t1 = clock::now();
        const PreprocImage image = while_doing("reading the image " + job.image, [&] {
          return read_preproc(job.image, 0x2FF, plan.pixel_box());
        });
        for (const std::string& w : image.warnings) note(w);
        const auto t2 = clock::now();
        read_seconds = std::chrono::duration<double>(t2 - t1).count();
        auto device_image = [&] {
          if constexpr (Kokkos::SpaceAccessibility<Exec, Kokkos::HostSpace>::accessible) {
            auto in_place = extract::wrap_host_image(image.ccd.pixels.data(), image.ccd.ivar.data(),
                                                     image.ccd.nrows, image.ccd.ncols);
            in_place.region = image.ccd.region;
            return in_place;
          } else {
            return extract::upload_image(exec, image.ccd);
          }
        }();
        extract::Frame frame =
            extract::extract_frame(exec, plan, device_psf, device_image, progress);
        r.seconds = std::chrono::duration<double>(t1 - t0 + (clock::now() - t2)).count();
        return frame;
      });
    });
  });
  const auto w0 = clock::now();
  FrameProvenance prov{job.image, job.psf, job.fibermap};
  prov.notes = notes;
  while_doing("writing the frame " + job.output, [&] {
    for (const std::string& w : write_frame(job.output, r.frame, prov))
      if (warn) warn(w);
  });
  if (!job.model.empty())
    while_doing("writing the model " + job.model, [&] { write_model(job.model, r.frame, prov); });
  r.write_seconds = std::chrono::duration<double>(clock::now() - w0).count();
  r.read_seconds = read_seconds + std::chrono::duration<double>(r1 - r0).count();
  return r;
}

}  // namespace io
}  // namespace perfex
