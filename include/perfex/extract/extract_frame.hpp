#pragma once
// Frame extraction driver. extract_frame runs a plan (frame_plan.hpp), or the patches
// [first, last) of it: per spot group, one spot launch and as few solver launches as the
// budget allows, each over patches of any bundles; the solver writes its results straight
// into frame-shaped views, converted per Angstrom on the device and copied to the host once at
// the end (on host backends the views are the Frame's own arrays). Between launches the host
// waits only for the progress callback, when there is one.
#include <perfex/detail/host_pages.hpp>
#include <perfex/detail/kokkos_compat.hpp>
#include <perfex/detail/team_shape.hpp>
#include <perfex/error.hpp>
#include <perfex/extract/frame.hpp>
#include <perfex/extract/frame_plan.hpp>
#include <perfex/extract/image.hpp>
#include <perfex/extract/model_image.hpp>
#include <perfex/extract/options.hpp>
#include <perfex/extract/patch_solver.hpp>
#include <perfex/extract/wavelength_grid.hpp>
#include <perfex/psf/gauss_hermite.hpp>
#include <perfex/psf/psf_data.hpp>

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
  if constexpr (results_in_host_memory<ExecSpace>())
    return View(host.data(), n...);
  else
    return View(std::string(label), n...);
}

template <class ExecSpace, class View>
void copy_to_frame(const ExecSpace& exec, const View& view, std::vector<double>& host) {
  if constexpr (!results_in_host_memory<ExecSpace>())
    Kokkos::deep_copy(exec, typename View::HostMirror(host.data(), view.layout()), view);
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
        row0, row1);
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

}  // namespace detail

// Extracts a planned frame from an image and a PSF already in exec's memory (upload_image,
// upload_psf): repeated extractions upload nothing but the small patch table of their plan.
// With a range, only those patches are solved (spots only of the groups they need; the image
// need only hold their windows): the frame's other bins stay 0, and npatches, linalg_flops and
// failed_bins count the range alone. Processes that share a plan's patches this way produce,
// bin for bin, the values of one extraction of the whole plan.
template <class ExecSpace>
Frame extract_frame(const ExecSpace& exec, const FramePlan<typename ExecSpace::memory_space>& plan,
                    const psf::GaussHermitePsf<typename ExecSpace::memory_space>& psf,
                    const DeviceImage<typename ExecSpace::memory_space>& image,
                    const ProgressCallback& progress = {}, PatchRange range = {}) {
  using Mem = typename ExecSpace::memory_space;
  using Bins = typename PatchResults<Mem>::Bins;
  using Diagonals = typename PatchResults<Mem>::Diagonals;
  namespace dt = detail;
  ScopedRegion region("perfex::extract_frame");
  Kokkos::Timer timer;
  const ExtractionOptions& opt = plan.options;
  const PatchGeometry& g = plan.geometry;
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

  Frame frame;
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
  const Bins flux = dt::frame_view<ExecSpace, Bins>(frame.flux, "perfex::flux", nspec, nwave);
  const Bins ivar = dt::frame_view<ExecSpace, Bins>(frame.ivar, "perfex::ivar", nspec, nwave);
  const Bins chi2pix =
      dt::frame_view<ExecSpace, Bins>(frame.chi2pix, "perfex::chi2pix", nspec, nwave);
  const Bins pixmask = dt::frame_view<ExecSpace, Bins>(frame.pixmask_fraction,
                                                       "perfex::pixmask_fraction", nspec, nwave);
  const Diagonals resolution = dt::frame_view<ExecSpace, Diagonals>(
      frame.resolution, "perfex::resolution", nspec, ndiags, nwave);
  Kokkos::View<int*, Mem> status(uninitialized("perfex::patch_status"), plan.npatches());
  Kokkos::View<double**, Kokkos::LayoutRight, Mem> model;
  if (opt.model_image && !range.model_blocks) {
    frame.model_rows = plan.ccd_rows;
    frame.model_cols = plan.ccd_cols;
    perfex::detail::assign_advised(frame.model,
                                   static_cast<std::size_t>(plan.ccd_rows) * plan.ccd_cols, 0.0);
    model = dt::frame_view<ExecSpace, decltype(model)>(frame.model, "perfex::model", plan.ccd_rows,
                                                       plan.ccd_cols);
  }

  // Spots of one group at a time, and the solver's scratch for one launch.
  const int nk = static_cast<int>(plan.fullwave.size());
  const int spot_fibres = plan.launches.spot_fibres;
  Kokkos::View<double****, Kokkos::LayoutRight, Mem> spots(
      uninitialized("perfex::spots"), spot_fibres, nk, g.spot_rows, g.spot_cols);
  perfex::detail::advise_huge_pages(spots);
  Kokkos::View<int**, Mem> xcorner(uninitialized("perfex::xcorner"), spot_fibres, nk),
      ycorner(uninitialized("perfex::ycorner"), spot_fibres, nk);
  PatchSolver<ExecSpace, Mem> solver(g, opt, plan.launches.batch);
  solver.spots = spots;
  solver.xcorner = xcorner;
  solver.ycorner = ycorner;
  solver.image = image;
  solver.out = PatchResults<Mem>(flux, ivar, chi2pix, pixmask, resolution, status);
  const perfex::detail::TeamShape shape{opt.team_size, opt.vector_length};
  int done = 0;
  const int total = range.last - range.first;
  for (const SpotGroup& group : plan.launches.groups) {
    const int lo = std::max(group.patch_lo, range.first), hi = std::min(group.patch_hi, range.last);
    if (lo >= hi) continue;
    // Only the group's fibres these patches solve (all of them unless a range cuts the group),
    // at their places in the group's spot arrays.
    int flo = group.fibre_hi - group.fibre_lo, fhi = 0;
    for (int i = lo; i < hi; ++i) {
      const PatchDesc& p = plan.patches[static_cast<std::size_t>(i)];
      flo = std::min(flo, p.fib0);
      fhi = std::max(fhi, p.fib0 + p.nfib);
    }
    const auto fibres = Kokkos::make_pair(flo, fhi);
    psf::compute_spots(exec, psf, group.fibre_lo + flo, fhi - flo, plan.device_fullwave,
                       Kokkos::subview(spots, fibres, Kokkos::ALL, Kokkos::ALL, Kokkos::ALL),
                       Kokkos::subview(xcorner, fibres, Kokkos::ALL),
                       Kokkos::subview(ycorner, fibres, Kokkos::ALL));
    ++frame.spot_launches;
    for (int first = lo; first < hi; first += plan.launches.batch) {
      const int count = std::min(plan.launches.batch, hi - first);
      solve_patches(exec, solver, plan.device_patches, first, count, shape);
      if (opt.model_image) dt::model_of_launch(exec, plan, solver.ws, first, count, model, frame);
      ++frame.solver_launches;
      done += count;
      if (progress) {
        exec.fence();
        progress(done, total);
      }
    }
  }

  // Per Angstrom, as desispec stores it.
  const std::vector<double> dlambda = gradient(plan.wave);
  Kokkos::View<double*, Mem> dl(uninitialized("perfex::dlambda"), nwave);
  Kokkos::deep_copy(exec, dl,
                    Kokkos::View<const double*, Kokkos::HostSpace>(dlambda.data(), nwave));
  Kokkos::parallel_for(
      "perfex::extract::per_angstrom",
      Kokkos::MDRangePolicy<ExecSpace, Kokkos::Rank<2>, Kokkos::IndexType<int>>(exec, {0, 0},
                                                                                {nspec, nwave}),
      KOKKOS_LAMBDA(int f, int k) {
        const double d = dl(k);
        flux(f, k) = flux(f, k) / d;
        ivar(f, k) = ivar(f, k) * d * d;
      });
  dt::copy_to_frame(exec, flux, frame.flux);
  dt::copy_to_frame(exec, ivar, frame.ivar);
  dt::copy_to_frame(exec, chi2pix, frame.chi2pix);
  dt::copy_to_frame(exec, pixmask, frame.pixmask_fraction);
  dt::copy_to_frame(exec, resolution, frame.resolution);
  if (model.extent(0) > 0) dt::copy_to_frame(exec, model, frame.model);
  const auto hstatus = Kokkos::create_mirror_view(status);
  Kokkos::deep_copy(exec, hstatus, status);
  exec.fence();

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
    if (hstatus(i) == linalg::ok) continue;
    const PatchDesc& p = plan.patches[static_cast<std::size_t>(i)];
    ++frame.failed_patches;
    frame.failed_bins.push_back({p.out_fibre0, p.nkeepfib, p.kf0, p.nkeep});
    frame.warnings.push_back(
        "patch of fibres " + std::to_string(p.out_fibre0 + opt.specmin) + "-" +
        std::to_string(p.out_fibre0 + opt.specmin + p.nkeepfib - 1) + ", wavelengths " +
        std::to_string(frame.wave[static_cast<std::size_t>(p.kf0)]) + "+: " +
        (hstatus(i) == linalg::not_positive_definite ? "singular system"
                                                     : "eigensolver did not converge") +
        "; flux and ivar set to 0");
  }
  set_frame_mask(frame);
  frame.seconds = timer.seconds();
  return frame;
}

// Plans and extracts the requested fibres of an image and a PSF already in exec's memory.
template <class ExecSpace>
Frame extract_frame(const ExecSpace& exec,
                    const psf::GaussHermitePsf<typename ExecSpace::memory_space>& psf,
                    const DeviceImage<typename ExecSpace::memory_space>& image,
                    const ExtractionOptions& options, const ProgressCallback& progress = {}) {
  Kokkos::Timer timer;
  const auto plan = plan_frame(exec, psf, image.nrows(), image.ncols(), options);
  Frame frame = extract_frame(exec, plan, psf, image, progress);
  frame.seconds = timer.seconds();
  return frame;
}

// Host PSF data: uploaded for this call only.
template <class ExecSpace>
Frame extract_frame(const ExecSpace& exec, const psf::GaussHermitePsfData& psf_data,
                    const DeviceImage<typename ExecSpace::memory_space>& image,
                    const ExtractionOptions& options, const ProgressCallback& progress = {}) {
  return extract_frame(exec, upload_psf(exec, psf_data), image, options, progress);
}

// Host PSF data and host image: both uploaded for this call only.
template <class ExecSpace>
Frame extract_frame(const ExecSpace& exec, const psf::GaussHermitePsfData& psf_data,
                    const CcdImage& image, const ExtractionOptions& options,
                    const ProgressCallback& progress = {}) {
  return extract_frame(exec, psf_data, upload_image(exec, image), options, progress);
}

}  // namespace extract
}  // namespace perfex
