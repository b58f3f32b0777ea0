#pragma once
// The extraction job in phases, as every front end runs it: perfex-extract and the Python
// command line (through io::extract_files, which adds the phases of the files), the Python
// API, each MPI rank, exposures and the gpu_specter drop-in. Each phase is one call, inside a
// profiling region "perfex::job::<phase>", timed into the caller's PhaseTimes:
//
//   job::check    check_job: the request against the PSF and the image's size (resolve_request)
//   job::plan     plan_job: the device's memory checked, the PSF uploaded, the frame planned
//                 (plan_frame's phases inside)
//   job::extract  extract_job: the plan's patches, or a range of them, extracted from an image
//                 (extract_frame's phases inside)
#include <perfex/extract/extract_frame.hpp>
#include <perfex/extract/frame_plan.hpp>
#include <perfex/extract/image.hpp>
#include <perfex/extract/preflight.hpp>
#include <perfex/profiling.hpp>
#include <perfex/psf/any_psf.hpp>

#include <string>
#include <vector>

namespace perfex {
namespace extract {

// The request checked and adapted (resolve_request's refusals, warnings and memory estimate).
inline ResolvedRequest check_job(const Request& request, const psf::AnyPsfData& psf, int ccd_rows,
                                 int ccd_cols, const ParameterNames& names, PhaseTimes& times) {
  Phase phase("job::check", times);
  return resolve_request(request, psf, ccd_rows, ccd_cols, names);
}

// A planned job on one backend: the PSF's model (psf/model.hpp) in exec's memory and the
// frame's plan.
template <class ExecSpace, class Psf>
struct PlannedJob {
  using memory_space = typename ExecSpace::memory_space;
  ExecSpace exec;
  Psf psf;
  FramePlan<memory_space> plan;
};

// The planned job of PSF data of one format (GaussHermitePsfData, ...) on exec.
template <class ExecSpace, class PsfFormat>
using PlannedJobOf = PlannedJob<ExecSpace, psf::ModelOf<ExecSpace, PsfFormat>>;

// The job planned on exec for a ccd_rows x ccd_cols CCD from PSF data of one format, once the
// run is known to fit in the device's free memory.
template <class ExecSpace, class PsfFormat>
PlannedJobOf<ExecSpace, PsfFormat> plan_job(const ExecSpace& exec, const PsfFormat& psf,
                                            const ResolvedRequest& request, int ccd_rows,
                                            int ccd_cols, PhaseTimes& times) {
  Phase phase("job::plan", times);
  check_device_memory<ExecSpace>(request.size);
  PlannedJobOf<ExecSpace, PsfFormat> job{exec, psf::upload_psf(exec, psf), {}};
  job.plan = plan_frame(exec, job.psf, ccd_rows, ccd_cols, request.options);
  phase.stop(exec);
  times.append(job.plan.phases, 1);
  return job;
}

// f(planned job) with the job of a PSF in any format perfex reads; returns what f returns.
template <class ExecSpace, class F>
decltype(auto) with_planned_job(const ExecSpace& exec, const psf::AnyPsfData& psf,
                                const ResolvedRequest& request, int ccd_rows, int ccd_cols,
                                PhaseTimes& times, F&& f) {
  return psf.visit([&](const auto& format) -> decltype(auto) {
    return f(plan_job(exec, format, request, ccd_rows, ccd_cols, times));
  });
}

namespace detail {
template <class ExecSpace>
const DeviceImage<typename ExecSpace::memory_space>& in_backend(
    const ExecSpace&, const DeviceImage<typename ExecSpace::memory_space>& image, const PixelBox&) {
  return image;
}
template <class ExecSpace>
DeviceImage<typename ExecSpace::memory_space> in_backend(const ExecSpace& exec,
                                                         const CcdImage& image, const PixelBox&) {
  return use_host_image(exec, image);
}
// An image that gives the pixels of a box in a memory space, checked there alone.
template <class ExecSpace, class Source>
auto in_backend(const ExecSpace&, const Source& source, const PixelBox& box)
    -> decltype(source.on(typename ExecSpace::memory_space(), box)) {
  return source.on(typename ExecSpace::memory_space(), box);
}
}  // namespace detail

// The patches of the job's plan in `range` (all by default) extracted from an image: a
// DeviceImage in exec's memory, a host CcdImage (used in place on host backends, copied to a
// device), or any image source whose on(memory_space, box) gives the pixels of the box the
// range's patches read (the Python bindings' images: checked there alone, inside job::extract).
// The frame's warnings start with `warnings` (the check's, for front ends that report them with
// the frame).
template <class ExecSpace, class Psf, class Image>
Frame extract_job(const PlannedJob<ExecSpace, Psf>& job, const Image& image,
                  const ProgressCallback& progress, PatchRange range,
                  const std::vector<std::string>& warnings, PhaseTimes& times) {
  Phase phase("job::extract", times);
  Frame frame = extract_frame(
      job.exec, job.plan, job.psf,
      detail::in_backend(job.exec, image, job.plan.pixel_box(range.first, range.last)), progress,
      range);
  phase.stop(job.exec);
  times.append(frame.phases, 1);
  frame.warnings.insert(frame.warnings.begin(), warnings.begin(), warnings.end());
  return frame;
}

}  // namespace extract
}  // namespace perfex
