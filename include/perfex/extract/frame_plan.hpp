#pragma once
// Planning a frame (gpu_specter's extract_frame, reshaped for a device): plan_frame computes
// the spot corners of every fibre the requested bundles solve (one launch), every patch of
// those bundles with its pixel window (host), every patch's band (one launch), then spot groups
// and solver launches sized by the memory budget. The plan holds everything extract_frame
// needs besides the pixels; it also says which pixels those are (pixel_box), so a reader can
// read only them, and how its patches divide (patch ranges, for work split over processes).
#include <perfex/detail/kokkos_compat.hpp>
#include <perfex/detail/team_shape.hpp>
#include <perfex/error.hpp>
#include <perfex/extract/geometry.hpp>
#include <perfex/extract/image.hpp>
#include <perfex/extract/options.hpp>
#include <perfex/extract/patch_solver.hpp>
#include <perfex/extract/plan.hpp>
#include <perfex/extract/wavelength_grid.hpp>
#include <perfex/memory.hpp>
#include <perfex/profiling.hpp>
#include <perfex/psf/kernels.hpp>
#include <perfex/psf/model.hpp>

#include <algorithm>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

namespace perfex {
namespace extract {

namespace detail {

// Spot corners (first column, first row) of fibres [f0, f0 + nf) at every wavelength, where
// psf::compute_spots places its boxes, without the spots: all the plan needs.
template <class Device, class MemorySpace>
struct SpotCornersFunctor {
  Device d;
  int f0;
  Kokkos::View<const double*, MemorySpace> wave;
  Kokkos::View<int**, MemorySpace> xcorner, ycorner;
  KOKKOS_INLINE_FUNCTION void operator()(int f, int k) const {
    const psf::SpotCorner c = d.spot_corner(f0 + f, wave(k));
    xcorner(f, k) = c.col;
    ycorner(f, k) = c.row;
  }
};

// ExtractionOptions::batch_patches's automatic value: on host backends four patches per thread
// (enough to balance the threads; a bundle's 130 patches in one launch allocated 270 MB of
// scratch whose page faults and cache misses cost 16 % of the run on one core), on a device
// none (0): as many as the memory budget allows.
template <class ExecSpace>
int default_batch_cap(const ExecSpace& exec) {
  if constexpr (reaches_host_memory<ExecSpace>()) return 4 * exec.concurrency();
  return 0;
}

}  // namespace detail

// Patches [first, last) of a plan, in its order (last < 0: to the end).
struct PatchRange {
  int first = 0, last = -1;
  // With model_image: the range's blocks of the model image in Frame::model_blocks instead of
  // the image they make (for a process that adds them after the ranges before, model_image.hpp).
  bool model_blocks = false;
};

// A frame planned for one PSF, CCD size and set of options: everything extract_frame needs
// besides the pixels, on the host and (the patch table, the padded grid) on the device.
template <class MemorySpace>
struct FramePlan {
  ExtractionOptions options;  // as used (psferr resolved)
  int ccd_rows = 0, ccd_cols = 0;
  std::vector<double> wave;      // output wavelengths
  std::vector<double> fullwave;  // the padded grid the patches index
  // Every patch, bundle by bundle, sub-bundle by sub-bundle, wavelength step by step; fib0
  // local to the patch's spot group.
  std::vector<PatchDesc> patches;
  LaunchPlan launches;
  PatchGeometry geometry;
  std::int64_t memory_budget = 0;  // bytes
  double linalg_flops = 0;         // patch_flops summed over the patches
  Kokkos::View<const PatchDesc*, MemorySpace> device_patches;
  Kokkos::View<const double*, MemorySpace> device_fullwave;
  PhaseTimes phases;  // plan_frame's phases, with their times

  int npatches() const { return static_cast<int>(patches.size()); }
  // The padded grid of the plan's padding (geometry.wavepad bins each side), on the host and
  // the device.
  template <class ExecSpace>
  void set_padded_grid(const ExecSpace& exec) {
    fullwave = make_padded_grid(wave, options.dw, geometry.wavepad, options.nwavestep);
    const int nk = static_cast<int>(fullwave.size());
    Kokkos::View<double*, MemorySpace> grid(uninitialized("perfex::fullwave"), nk);
    Kokkos::deep_copy(exec, grid,
                      Kokkos::View<const double*, Kokkos::HostSpace>(fullwave.data(), nk));
    device_fullwave = grid;
  }
  // The CCD pixels the windows of patches [first, last) cover (all patches by default): what
  // the image must hold (a reader may keep only these); empty when no window holds a pixel.
  PixelBox pixel_box(int first = 0, int last = -1) const {
    if (last < 0) last = npatches();
    PixelBox box{ccd_rows, 0, ccd_cols, 0};
    for (int i = std::max(0, first); i < std::min(last, npatches()); ++i) {
      const PatchDesc& p = patches[static_cast<std::size_t>(i)];
      if (p.row1 <= p.row0 || p.col1 <= p.col0) continue;
      box.row0 = std::min(box.row0, p.row0);
      box.row1 = std::max(box.row1, p.row1);
      box.col0 = std::min(box.col0, p.col0);
      box.col1 = std::max(box.col1, p.col1);
    }
    return box.empty() ? PixelBox{} : box;
  }
};

namespace detail {

// The plan's options as used (validated, psferr resolved, the geometry resolved_geometry's),
// its patch geometry (with its geometry's model fold and padding check), and its output and
// padded wavelength grids (the padded one on the device too; a geometry that pads each patch
// its own way replaces it once the padding is known).
template <class ExecSpace, class Psf>
void plan_grids(const ExecSpace& exec, const Psf& psf, const ExtractionOptions& options,
                FramePlan<typename ExecSpace::memory_space>& plan) {
  options.validate();
  plan.options = options;
  if (plan.options.psferr < 0) plan.options.psferr = psf.psferr();
  plan.options.geometry = resolved_geometry(plan.options.geometry);
  const ExtractionOptions& opt = plan.options;
  plan.geometry = patch_geometry(opt, psf.spot_rows(), psf.spot_cols(), psf.spot_rows() / 2);
  with_geometry(opt.geometry, [&](auto geometry) {
    plan.geometry.model_fold = geometry.model_fold;
    geometry.check_padding(plan.geometry);
  });
  plan.wave = make_wavelength_grid(opt.wmin, opt.wmax, opt.dw);
  plan.set_padded_grid(exec);
}

// Spot corners of fibres [lo, hi) at every padded wavelength, on the device and the host.
template <class MemorySpace>
struct PlanCorners {
  int lo = 0;
  Kokkos::View<int**, MemorySpace> x, y;
  host_mirror_t<Kokkos::View<int**, MemorySpace>> host_x, host_y;
};

// The corners of every fibre the bundles solve, in one launch.
template <class ExecSpace, class Psf>
PlanCorners<typename ExecSpace::memory_space> plan_corners(
    const ExecSpace& exec, const Psf& psf, const FramePlan<typename ExecSpace::memory_space>& plan,
    const std::vector<BundlePlan>& bundles) {
  using Mem = typename ExecSpace::memory_space;
  PlanCorners<Mem> c;
  c.lo = spot_fibres(bundles.front()).lo;
  const int nf = spot_fibres(bundles.back()).hi - c.lo;
  const int nk = static_cast<int>(plan.fullwave.size());
  c.x = Kokkos::View<int**, Mem>(uninitialized("perfex::plan_xcorner"), nf, nk);
  c.y = Kokkos::View<int**, Mem>(uninitialized("perfex::plan_ycorner"), nf, nk);
  Kokkos::parallel_for("perfex::extract::spot_corners",
                       Kokkos::MDRangePolicy<ExecSpace, Kokkos::Rank<2>, Kokkos::IndexType<int>>(
                           exec, {0, 0}, {nf, nk}),
                       SpotCornersFunctor<typename Psf::device_type, Mem>{
                           psf.device(), c.lo, plan.device_fullwave, c.x, c.y});
  c.host_x = Kokkos::create_mirror_view(c.x);
  c.host_y = Kokkos::create_mirror_view(c.y);
  Kokkos::deep_copy(exec, c.host_x, c.x);
  Kokkos::deep_copy(exec, c.host_y, c.y);
  exec.fence();
  return c;
}

// Every patch's band, in one launch over the patch table (left on the device), then the
// frame's geometry (the largest solved fibre count, band and window) and its flop count.
template <class ExecSpace>
Kokkos::View<PatchDesc*, typename ExecSpace::memory_space> measure_patches(
    const ExecSpace& exec, const PlanCorners<typename ExecSpace::memory_space>& corners,
    FramePlan<typename ExecSpace::memory_space>& plan) {
  using Mem = typename ExecSpace::memory_space;
  const ExtractionOptions& opt = plan.options;
  PatchGeometry& g = plan.geometry;
  const int npatch = plan.npatches();
  Kokkos::View<PatchDesc*, Mem> device_patches(uninitialized("perfex::patches"), npatch);
  const Kokkos::View<PatchDesc*, Kokkos::HostSpace> host_patches(plan.patches.data(), npatch);
  Kokkos::deep_copy(exec, device_patches, host_patches);
  measure_bandwidths(exec, Kokkos::View<const int**, Mem>(corners.x),
                     Kokkos::View<const int**, Mem>(corners.y), device_patches, g.nwt, g.spot_rows,
                     g.spot_cols, perfex::detail::TeamShape{opt.team_size, opt.vector_length});
  Kokkos::deep_copy(exec, host_patches, device_patches);
  exec.fence();
  for (const PatchDesc& p : plan.patches) {
    g.nfib = std::max(g.nfib, p.nfib);
    g.band = std::max(g.band, p.band);
    g.maxpix = std::max(g.maxpix, (p.row1 - p.row0) * (p.col1 - p.col0));
    plan.linalg_flops += patch_flops(p, g.nwt, g.ndiag, opt.decorrelation);
  }
  return device_patches;
}

// Spot groups and solver launches within the memory budget (on host backends the same groups,
// fewer patches per launch); then each patch's fibres made local to its group, and the final
// table on the device. frame_lo: the first fibre of the plan's corners.
template <class ExecSpace>
void plan_budget(const ExecSpace& exec, const std::vector<BundlePlan>& bundles, int frame_lo,
                 const Kokkos::View<PatchDesc*, typename ExecSpace::memory_space>& device_patches,
                 FramePlan<typename ExecSpace::memory_space>& plan) {
  using Mem = typename ExecSpace::memory_space;
  const ExtractionOptions& opt = plan.options;
  const PatchGeometry& g = plan.geometry;
  const int nwave = static_cast<int>(plan.wave.size());
  const int nk = static_cast<int>(plan.fullwave.size());
  plan.memory_budget =
      opt.memory_budget > 0 ? opt.memory_budget : default_memory_budget<ExecSpace>();
  const double spot_bytes_per_fibre =
      double(nk) * (double(g.spot_cols) * g.spot_rows * sizeof(double) + 2 * sizeof(int));
  const double patch_bytes = double(PatchWorkspace<Mem>::bytes_per_patch(g));
  const int patches_per_subbundle = (nwave + opt.nwavestep - 1) / opt.nwavestep;
  plan.launches =
      plan_launches(subbundle_spans(bundles, patches_per_subbundle), spot_bytes_per_fibre,
                    patch_bytes, double(plan.memory_budget), opt.batch_patches);
  const int host_cap = default_batch_cap(exec);
  if (opt.batch_patches == 0 && host_cap > 0 && host_cap < plan.launches.batch)
    set_batch(plan.launches, host_cap, spot_bytes_per_fibre, patch_bytes);
  for (const SpotGroup& group : plan.launches.groups)
    for (int i = group.patch_lo; i < group.patch_hi; ++i)
      plan.patches[static_cast<std::size_t>(i)].fib0 += frame_lo - group.fibre_lo;
  Kokkos::deep_copy(
      exec, device_patches,
      Kokkos::View<const PatchDesc*, Kokkos::HostSpace>(plan.patches.data(), plan.npatches()));
  exec.fence();
  plan.device_patches = device_patches;
}

}  // namespace detail

// Plans the extraction of options' fibres and wavelengths from a ccd_rows x ccd_cols image with
// a PSF model (psf/model.hpp) in exec's memory, cut by the options' geometry (geometry.hpp). Its
// phases (FramePlan::phases, each a profiling region "perfex::plan_frame::<phase>"): grids,
// specter_geometry (with that geometry: two small launches), corners (one launch), patches
// (host), bandwidths (one launch), budget.
template <class ExecSpace, class Psf>
FramePlan<typename ExecSpace::memory_space> plan_frame(const ExecSpace& exec, const Psf& psf,
                                                       int ccd_rows, int ccd_cols,
                                                       const ExtractionOptions& options) {
  static_assert(psf::require_psf_model<Psf>(), "");
  using Mem = typename ExecSpace::memory_space;
  static_assert(std::is_same<typename Psf::memory_space, Mem>::value,
                "plan_frame: the PSF must be in the execution space's memory (upload_psf)");
  ScopedRegion region("perfex::plan_frame");
  FramePlan<Mem> plan;
  plan.ccd_rows = ccd_rows;
  plan.ccd_cols = ccd_cols;
  Phase grids("plan_frame::grids", plan.phases);
  detail::plan_grids(exec, psf, options, plan);
  grids.stop(exec);
  with_geometry(plan.options.geometry, [&](auto geometry) {
    const std::vector<BundlePlan> bundles = geometry.bundles(plan.options, psf.nfib());
    const auto layout = geometry.layout(exec, psf, bundles, plan);
    Phase corners("plan_frame::corners", plan.phases);
    const auto c = detail::plan_corners(exec, psf, plan, bundles);
    corners.stop(exec);
    Phase patches("plan_frame::patches", plan.phases);
    plan.patches = geometry.windows(layout, bundles, psf, plan, c);
    patches.stop();
    Phase bandwidths("plan_frame::bandwidths", plan.phases);
    const auto device_patches = detail::measure_patches(exec, c, plan);
    bandwidths.stop(exec);
    Phase budget("plan_frame::budget", plan.phases);
    detail::plan_budget(exec, bundles, c.lo, device_patches, plan);
    budget.stop(exec);
  });
  return plan;
}

}  // namespace extract
}  // namespace perfex
