#pragma once
// Frame extraction driver. extract_frame runs a plan (frame_plan.hpp), or the patches
// [first, last) of it: per spot group, one spot launch and as few solver launches as the
// budget allows, each over patches of any bundles; the solver writes its results straight
// into frame-shaped views, converted per Angstrom on the device and copied to the host once at
// the end (on host backends the views are the Frame's own arrays). The host waits for the
// device at the end of each phase (a few times per spot group) and, between launches, only
// for the progress callback, when there is one.
#include <perfex/detail/host_pages.hpp>
#include <perfex/detail/kokkos_compat.hpp>
#include <perfex/detail/team_shape.hpp>
#include <perfex/error.hpp>
#include <perfex/extract/frame.hpp>
#include <perfex/extract/frame_plan.hpp>
#include <perfex/extract/geometry.hpp>
#include <perfex/extract/image.hpp>
#include <perfex/extract/model_image.hpp>
#include <perfex/extract/options.hpp>
#include <perfex/extract/patch_solver.hpp>
#include <perfex/extract/wavelength_grid.hpp>
#include <perfex/memory.hpp>
#include <perfex/profiling.hpp>
#include <perfex/psf/any_psf.hpp>
#include <perfex/psf/kernels.hpp>
#include <perfex/psf/model.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <type_traits>
#include <vector>

namespace perfex {
namespace extract {

// Called on the host after each solver launch: (patches done, patches in total).
using ProgressCallback = std::function<void(int, int)>;

namespace detail {

template <class ExecSpace, class View, class... Extents>
View frame_view(std::vector<double>& host, const char* label, Extents... n) {
  if constexpr (reaches_host_memory<ExecSpace>())
    return View(host.data(), n...);
  else
    return View(std::string(label), n...);
}

template <class ExecSpace, class View>
void copy_to_frame(const ExecSpace& exec, const View& view, std::vector<double>& host) {
  if constexpr (!reaches_host_memory<ExecSpace>())
    Kokkos::deep_copy(exec, host_mirror_t<View>(host.data(), view.layout()), view);
}

// The model image's part of a solver launch (patches [first, first + count) of the plan): their
// blocks added into `model` in the plan's order, or (model empty: a range that returns its
// blocks) appended to frame.model_blocks.
template <class ExecSpace, class Model>
void model_of_launch(const ExecSpace& exec, const FramePlan<typename ExecSpace::memory_space>& plan,
                     const PatchWorkspace<typename ExecSpace::memory_space>& ws, int first,
                     int count, const Model& model, Frame& frame) {
  using Mem = typename ExecSpace::memory_space;
  const std::int64_t stride = static_cast<std::int64_t>(ws.model_block.extent(0));
  if (model.extent(0) > 0) {
    int row0 = plan.ccd_rows, row1 = 0;
    for (int i = first; i < first + count; ++i) {
      row0 = std::min(row0, plan.patches[static_cast<std::size_t>(i)].row0);
      row1 = std::max(row1, plan.patches[static_cast<std::size_t>(i)].row1);
    }
    Kokkos::View<std::int64_t*, Mem> offsets(uninitialized("perfex::model_offsets"), count);
    Kokkos::parallel_for(
        "perfex::extract::model_offsets", Kokkos::RangePolicy<ExecSpace>(exec, 0, count),
        KOKKOS_LAMBDA(int i) { offsets(i) = i * stride; });
    fold_model_blocks(
        exec, model, Kokkos::View<const double*, Mem>(ws.model_block.data(), stride * count),
        offsets, Kokkos::subview(plan.device_patches, Kokkos::make_pair(first, first + count)),
        row0, row1, plan.geometry.model_fold);
    return;
  }
  const auto blocks = Kokkos::create_mirror_view(ws.model_block);
  Kokkos::deep_copy(exec, blocks, ws.model_block);
  exec.fence();
  for (int i = 0; i < count; ++i) {
    const double* block = blocks.data() + i * stride;
    frame.model_blocks.insert(
        frame.model_blocks.end(), block,
        block + model_block_size(plan.patches[static_cast<std::size_t>(first + i)]));
  }
}

// What one extract_frame call works in: the frame-shaped results (the Frame's own arrays on host
// backends), every patch's status, the model image, and one spot group's spots and corners.
template <class MemorySpace>
struct FrameWork {
  using Bins = typename PatchResults<MemorySpace>::Bins;
  using Diagonals = typename PatchResults<MemorySpace>::Diagonals;
  Bins flux, ivar, chi2pix, pixmask;
  Diagonals resolution;
  Kokkos::View<int*, MemorySpace> status;
  Kokkos::View<double**, Kokkos::LayoutRight, MemorySpace> model;  // full CCD, or empty
  Kokkos::View<double****, Kokkos::LayoutRight, MemorySpace> spots;
  Kokkos::View<int**, MemorySpace> xcorner, ycorner;
};

// The patches a call solves (all by default), once the image is known to hold their windows.
template <class MemorySpace>
PatchRange check_request(const FramePlan<MemorySpace>& plan, const DeviceImage<MemorySpace>& image,
                         PatchRange range) {
  if (image.nrows() != plan.ccd_rows || image.ncols() != plan.ccd_cols)
    throw Error("image: " + std::to_string(image.nrows()) + " x " + std::to_string(image.ncols()) +
                " CCD, planned for " + std::to_string(plan.ccd_rows) + " x " +
                std::to_string(plan.ccd_cols));
  if (image.ivar.extent(0) != image.pixels.extent(0) ||
      image.ivar.extent(1) != image.pixels.extent(1) ||
      image.ivar.stride_0() != image.pixels.stride_0())
    throw Error("image: pixel and ivar arrays differ in shape");
  if (range.last < 0) range.last = plan.npatches();
  if (range.first < 0 || range.first > range.last || range.last > plan.npatches())
    throw Error("patches " + std::to_string(range.first) + "-" + std::to_string(range.last) +
                " requested of a plan of " + std::to_string(plan.npatches()));
  const auto box = plan.pixel_box(range.first, range.last);
  if (!image.holds(box))
    throw Error("image: the stored pixels do not cover rows " + std::to_string(box.row0) + "-" +
                std::to_string(box.row1 - 1) + ", columns " + std::to_string(box.col0) + "-" +
                std::to_string(box.col1 - 1) + " that the patch windows need");
  return range;
}

// The frame's shape and its zeroed arrays; the views the solver writes into, the patch
// statuses, and the spots and corners of one spot group.
template <class ExecSpace>
FrameWork<typename ExecSpace::memory_space> allocate_frame(
    const FramePlan<typename ExecSpace::memory_space>& plan, PatchRange range, Frame& frame) {
  using Mem = typename ExecSpace::memory_space;
  using Work = FrameWork<Mem>;
  const ExtractionOptions& opt = plan.options;
  const PatchGeometry& g = plan.geometry;
  frame.options = opt;
  frame.wave = plan.wave;
  frame.specmin = opt.specmin;
  frame.nspec = opt.nspec;
  frame.nwave = static_cast<int>(plan.wave.size());
  frame.ndiag = g.ndiag;
  const int nspec = frame.nspec, nwave = frame.nwave, ndiags = 2 * g.ndiag + 1;
  const std::size_t nbins = static_cast<std::size_t>(nspec) * static_cast<std::size_t>(nwave);
  for (std::vector<double>* bins :
       {&frame.flux, &frame.ivar, &frame.chi2pix, &frame.pixmask_fraction})
    perfex::detail::assign_advised(*bins, nbins, 0.0);
  perfex::detail::assign_advised(frame.resolution, nbins * static_cast<std::size_t>(ndiags), 0.0);
  Work w;
  using Bins = typename Work::Bins;
  w.flux = frame_view<ExecSpace, Bins>(frame.flux, "perfex::flux", nspec, nwave);
  w.ivar = frame_view<ExecSpace, Bins>(frame.ivar, "perfex::ivar", nspec, nwave);
  w.chi2pix = frame_view<ExecSpace, Bins>(frame.chi2pix, "perfex::chi2pix", nspec, nwave);
  w.pixmask =
      frame_view<ExecSpace, Bins>(frame.pixmask_fraction, "perfex::pixmask_fraction", nspec, nwave);
  w.resolution = frame_view<ExecSpace, typename Work::Diagonals>(
      frame.resolution, "perfex::resolution", nspec, ndiags, nwave);
  w.status = Kokkos::View<int*, Mem>(uninitialized("perfex::patch_status"), plan.npatches());
  if (opt.model_image && !range.model_blocks) {
    frame.model_rows = plan.ccd_rows;
    frame.model_cols = plan.ccd_cols;
    perfex::detail::assign_advised(frame.model,
                                   static_cast<std::size_t>(plan.ccd_rows) * plan.ccd_cols, 0.0);
    w.model = frame_view<ExecSpace, decltype(w.model)>(frame.model, "perfex::model", plan.ccd_rows,
                                                       plan.ccd_cols);
  }
  const int nk = static_cast<int>(plan.fullwave.size());
  const int spot_fibres = plan.launches.spot_fibres;
  w.spots =
      decltype(w.spots)(uninitialized("perfex::spots"), spot_fibres, nk, g.spot_rows, g.spot_cols);
  perfex::detail::advise_huge_pages(w.spots);
  w.xcorner = Kokkos::View<int**, Mem>(uninitialized("perfex::xcorner"), spot_fibres, nk);
  w.ycorner = Kokkos::View<int**, Mem>(uninitialized("perfex::ycorner"), spot_fibres, nk);
  return w;
}

// The solver of the plan's launches, reading the image and the group's spots and writing the
// frame's views.
template <class ExecSpace>
PatchSolver<ExecSpace, typename ExecSpace::memory_space> make_solver(
    const FramePlan<typename ExecSpace::memory_space>& plan,
    const DeviceImage<typename ExecSpace::memory_space>& image,
    const FrameWork<typename ExecSpace::memory_space>& w) {
  using Mem = typename ExecSpace::memory_space;
  PatchSolver<ExecSpace, Mem> solver(plan.geometry, plan.options, plan.launches.batch);
  solver.spots = w.spots;
  solver.xcorner = w.xcorner;
  solver.ycorner = w.ycorner;
  solver.image = image;
  solver.out = PatchResults<Mem>(w.flux, w.ivar, w.chi2pix, w.pixmask, w.resolution, w.status);
  return solver;
}

// Spots and corners of the group's fibres that patches [lo, hi) solve (all of them unless a
// range cuts the group), at their places in the group's spot arrays, then as the plan's geometry
// makes them (its spot_boxes).
template <class ExecSpace, class Psf>
void compute_group_spots(const ExecSpace& exec, const Psf& psf,
                         const FramePlan<typename ExecSpace::memory_space>& plan,
                         const SpotGroup& group, int lo, int hi,
                         const FrameWork<typename ExecSpace::memory_space>& w) {
  int flo = group.fibre_hi - group.fibre_lo, fhi = 0;
  for (int i = lo; i < hi; ++i) {
    const PatchDesc& p = plan.patches[static_cast<std::size_t>(i)];
    flo = std::min(flo, p.fib0);
    fhi = std::max(fhi, p.fib0 + p.nfib);
  }
  const auto fibres = Kokkos::make_pair(flo, fhi);
  psf::compute_spots(exec, psf, group.fibre_lo + flo, fhi - flo, plan.device_fullwave,
                     Kokkos::subview(w.spots, fibres, Kokkos::ALL, Kokkos::ALL, Kokkos::ALL),
                     Kokkos::subview(w.xcorner, fibres, Kokkos::ALL),
                     Kokkos::subview(w.ycorner, fibres, Kokkos::ALL));
  with_geometry(plan.options.geometry, [&](auto geometry) {
    geometry.spot_boxes(exec, psf, group.fibre_lo + flo, fhi - flo, plan.device_fullwave,
                        Kokkos::subview(w.spots, fibres, Kokkos::ALL, Kokkos::ALL, Kokkos::ALL),
                        Kokkos::subview(w.xcorner, fibres, Kokkos::ALL),
                        Kokkos::subview(w.ycorner, fibres, Kokkos::ALL));
  });
}

// Patches [lo, hi) in launches of the plan's batch; progress after each launch (the host waits
// for it only then). Returns the launches made.
template <class ExecSpace>
int solve_group(const ExecSpace& exec,
                PatchSolver<ExecSpace, typename ExecSpace::memory_space>& solver,
                const FramePlan<typename ExecSpace::memory_space>& plan,
                const FrameWork<typename ExecSpace::memory_space>& w, int lo, int hi,
                const ProgressCallback& progress, int& done, int total, Frame& frame) {
  const perfex::detail::TeamShape shape{plan.options.team_size, plan.options.vector_length};
  int launches = 0;
  for (int first = lo; first < hi; first += plan.launches.batch) {
    const int count = std::min(plan.launches.batch, hi - first);
    solve_patches(exec, solver, plan.device_patches, first, count, shape);
    if (plan.options.model_image)
      model_of_launch(exec, plan, solver.ws, first, count, w.model, frame);
    ++launches;
    done += count;
    if (progress) {
      exec.fence();
      progress(done, total);
    }
  }
  return launches;
}

// Flux and ivar per Angstrom, as desispec stores them.
template <class ExecSpace>
void per_angstrom(const ExecSpace& exec, const std::vector<double>& wave,
                  const FrameWork<typename ExecSpace::memory_space>& w) {
  using Mem = typename ExecSpace::memory_space;
  const int nspec = static_cast<int>(w.flux.extent(0)), nwave = static_cast<int>(wave.size());
  const std::vector<double> dlambda = gradient(wave);
  Kokkos::View<double*, Mem> dl(uninitialized("perfex::dlambda"), nwave);
  Kokkos::deep_copy(exec, dl,
                    Kokkos::View<const double*, Kokkos::HostSpace>(dlambda.data(), nwave));
  const auto flux = w.flux;
  const auto ivar = w.ivar;
  Kokkos::parallel_for(
      "perfex::extract::per_angstrom",
      Kokkos::MDRangePolicy<ExecSpace, Kokkos::Rank<2>, Kokkos::IndexType<int>>(exec, {0, 0},
                                                                                {nspec, nwave}),
      KOKKOS_LAMBDA(int f, int k) {
        const double d = dl(k);
        flux(f, k) = flux(f, k) / d;
        ivar(f, k) = ivar(f, k) * d * d;
      });
}

// The results into the Frame's arrays (a copy only from a device) and the patch statuses to
// the host.
template <class ExecSpace>
host_mirror_t<Kokkos::View<int*, typename ExecSpace::memory_space>> copy_results(
    const ExecSpace& exec, const FrameWork<typename ExecSpace::memory_space>& w, Frame& frame) {
  copy_to_frame(exec, w.flux, frame.flux);
  copy_to_frame(exec, w.ivar, frame.ivar);
  copy_to_frame(exec, w.chi2pix, frame.chi2pix);
  copy_to_frame(exec, w.pixmask, frame.pixmask_fraction);
  copy_to_frame(exec, w.resolution, frame.resolution);
  if (w.model.extent(0) > 0) copy_to_frame(exec, w.model, frame.model);
  const auto status = Kokkos::create_mirror_view(w.status);
  Kokkos::deep_copy(exec, status, w.status);
  exec.fence();
  return status;
}

// The run's statistics, the failed patches' bins and warnings, and the frame mask.
template <class MemorySpace, class Status>
void summarise_frame(const FramePlan<MemorySpace>& plan, const DeviceImage<MemorySpace>& image,
                     PatchRange range, const Status& status, Frame& frame) {
  const ExtractionOptions& opt = plan.options;
  const PatchGeometry& g = plan.geometry;
  const int total = range.last - range.first;
  frame.npatches = total;
  frame.linalg_flops = plan.linalg_flops;
  if (total < plan.npatches()) {
    frame.linalg_flops = 0;
    for (int i = range.first; i < range.last; ++i)
      frame.linalg_flops +=
          patch_flops(plan.patches[static_cast<std::size_t>(i)], g.nwt, g.ndiag, opt.decorrelation);
  }
  frame.max_band = g.band;
  frame.scratch_bytes = plan.launches.bytes;
  frame.nonfinite_pixels = image.nonfinite_pixels;
  if (image.nonfinite_pixels > 0)
    frame.warnings.push_back(std::to_string(image.nonfinite_pixels) +
                             " NaN/Inf image or ivar pixels treated as masked");
  for (int i = range.first; i < range.last; ++i) {
    if (status(i) == linalg::ok) continue;
    const PatchDesc& p = plan.patches[static_cast<std::size_t>(i)];
    ++frame.failed_patches;
    frame.failed_bins.push_back({p.out_fibre0, p.nkeepfib, p.kf0, p.nkeep});
    frame.warnings.push_back(
        "patch of fibres " + std::to_string(p.out_fibre0 + opt.specmin) + "-" +
        std::to_string(p.out_fibre0 + opt.specmin + p.nkeepfib - 1) + ", wavelengths " +
        std::to_string(frame.wave[static_cast<std::size_t>(p.kf0)]) + "+: " +
        (status(i) == no_light                        ? "the PSF gives no light on its pixels"
         : status(i) == linalg::not_positive_definite ? "singular system"
                                                      : "eigensolver did not converge") +
        "; flux and ivar set to 0");
  }
  set_frame_mask(frame);
}

}  // namespace detail

// Extracts a planned frame from an image and a PSF model (psf/model.hpp) already in exec's
// memory (upload_image, upload_psf): repeated extractions upload nothing but the small patch
// table of their plan.
// With a range, only those patches are solved (spots only of the groups they need; the image
// need only hold their windows): the frame's other bins stay 0, and npatches, linalg_flops and
// failed_bins count the range alone. Processes that share a plan's patches this way produce,
// bin for bin, the values of one extraction of the whole plan. Its phases (Frame::phases, each a
// profiling region "perfex::extract_frame::<phase>"): allocate, then per spot group spots and
// solve, then finish (per Angstrom, results to the host, statuses and mask).
template <class ExecSpace, class Psf>
Frame extract_frame(const ExecSpace& exec, const FramePlan<typename ExecSpace::memory_space>& plan,
                    const Psf& psf, const DeviceImage<typename ExecSpace::memory_space>& image,
                    const ProgressCallback& progress = {}, PatchRange range = {}) {
  static_assert(psf::require_psf_model<Psf>(), "");
  ScopedRegion region("perfex::extract_frame");
  Kokkos::Timer timer;
  range = detail::check_request(plan, image, range);
  Frame frame;
  Phase allocate("extract_frame::allocate", frame.phases);
  const auto work = detail::allocate_frame<ExecSpace>(plan, range, frame);
  auto solver = detail::make_solver<ExecSpace>(plan, image, work);
  allocate.stop(exec);
  int done = 0;
  const int total = range.last - range.first;
  for (const SpotGroup& group : plan.launches.groups) {
    const int lo = std::max(group.patch_lo, range.first), hi = std::min(group.patch_hi, range.last);
    if (lo >= hi) continue;
    Phase spots("extract_frame::spots", frame.phases);
    detail::compute_group_spots(exec, psf, plan, group, lo, hi, work);
    ++frame.spot_launches;
    spots.stop(exec);
    Phase solve("extract_frame::solve", frame.phases);
    frame.solver_launches +=
        detail::solve_group(exec, solver, plan, work, lo, hi, progress, done, total, frame);
    solve.stop(exec);
  }
  Phase finish("extract_frame::finish", frame.phases);
  detail::per_angstrom(exec, plan.wave, work);
  const auto status = detail::copy_results(exec, work, frame);
  detail::summarise_frame(plan, image, range, status, frame);
  finish.stop();
  frame.seconds = timer.seconds();
  return frame;
}

// Plans and extracts the requested fibres of an image and a PSF model already in exec's memory.
template <class ExecSpace, class Psf, std::enable_if_t<psf::is_psf_model<Psf>::value, int> = 0>
Frame extract_frame(const ExecSpace& exec, const Psf& psf,
                    const DeviceImage<typename ExecSpace::memory_space>& image,
                    const ExtractionOptions& options, const ProgressCallback& progress = {}) {
  Kokkos::Timer timer;
  const auto plan = plan_frame(exec, psf, image.nrows(), image.ncols(), options);
  Frame frame = extract_frame(exec, plan, psf, image, progress);
  PhaseTimes phases = plan.phases;
  phases.append(frame.phases, 0);
  frame.phases = phases;
  frame.seconds = timer.seconds();
  return frame;
}

// Host PSF data (any format perfex reads): uploaded for this call only; an automatic geometry
// chosen by its format, as the front ends choose it (resolve_geometry).
template <class ExecSpace>
Frame extract_frame(const ExecSpace& exec, const psf::AnyPsfData& psf_data,
                    const DeviceImage<typename ExecSpace::memory_space>& image,
                    const ExtractionOptions& options, const ProgressCallback& progress = {}) {
  ExtractionOptions resolved = options;
  resolve_geometry(resolved, psf_data);
  return psf::with_psf_model(exec, psf_data, [&](const auto& model) {
    return extract_frame(exec, model, image, resolved, progress);
  });
}

// Host PSF data and host image: both uploaded for this call only.
template <class ExecSpace>
Frame extract_frame(const ExecSpace& exec, const psf::AnyPsfData& psf_data, const CcdImage& image,
                    const ExtractionOptions& options, const ProgressCallback& progress = {}) {
  return extract_frame(exec, psf_data, upload_image(exec, image), options, progress);
}

}  // namespace extract
}  // namespace perfex
