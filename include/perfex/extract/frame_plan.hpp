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
#include <perfex/extract/image.hpp>
#include <perfex/extract/options.hpp>
#include <perfex/extract/patch_solver.hpp>
#include <perfex/extract/plan.hpp>
#include <perfex/extract/wavelength_grid.hpp>
#include <perfex/psf/gauss_hermite.hpp>
#include <perfex/psf/psf_data.hpp>
#include <perfex/runtime.hpp>

#include <algorithm>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

namespace perfex {
namespace extract {

// A PSF resident in exec's memory space: upload once, extract many times.
template <class ExecSpace>
psf::GaussHermitePsf<typename ExecSpace::memory_space> upload_psf(
    const ExecSpace& exec, const psf::GaussHermitePsfData& data) {
  return psf::GaussHermitePsf<typename ExecSpace::memory_space>(exec, data);
}

namespace detail {

// Spot corners (first column, first row) of fibres [f0, f0 + nf) at every wavelength, placed
// as psf::compute_spots places its boxes (round the trace to a pixel, step back the half-size),
// without the spots: all the plan needs.
template <class MemorySpace>
struct SpotCornersFunctor {
  psf::detail::PsfDeviceData<MemorySpace> d;
  int f0;
  Kokkos::View<const double*, MemorySpace> wave;
  Kokkos::View<int**, MemorySpace> xcorner, ycorner;
  KOKKOS_INLINE_FUNCTION void operator()(int f, int k) const {
    const double X = d.trace_x(f0 + f, wave(k));
    const double Y = d.trace_y(f0 + f, wave(k));
    xcorner(f, k) = static_cast<int>(math::floor(X - d.hx + 0.5));
    ycorner(f, k) = static_cast<int>(math::floor(Y - d.hy + 0.5));
  }
};

// ExtractionOptions::memory_budget's automatic value: on CUDA half the device memory free now
// (room for another process asking at the same moment), divided among the processes that share
// the GPU (perfex::set_device_sharers); 512 MiB on host backends.
template <class ExecSpace>
std::int64_t default_memory_budget() {
#ifdef KOKKOS_ENABLE_CUDA
  if (std::is_same<ExecSpace, Kokkos::Cuda>::value) {
    std::size_t free = 0, total = 0;
    if (cudaMemGetInfo(&free, &total) == cudaSuccess)
      return shared_device_budget(static_cast<std::int64_t>(free), device_sharers());
  }
#endif
  return std::int64_t(512) << 20;
}

// Host backends reach host memory: there the Frame's own arrays serve as the result views.
template <class ExecSpace>
constexpr bool results_in_host_memory() {
  return Kokkos::SpaceAccessibility<ExecSpace, Kokkos::HostSpace>::accessible;
}

// ExtractionOptions::batch_patches's automatic value: on host backends four patches per thread
// (enough to balance the threads; a bundle's 130 patches in one launch allocated 270 MB of
// scratch whose page faults and cache misses cost 16 % of the run on one core), on a device
// none (0): as many as the memory budget allows.
template <class ExecSpace>
int default_batch_cap(const ExecSpace& exec) {
  if constexpr (results_in_host_memory<ExecSpace>()) return 4 * exec.concurrency();
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

  int npatches() const { return static_cast<int>(patches.size()); }
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

// Plans the extraction of options' fibres and wavelengths from a ccd_rows x ccd_cols image.
template <class ExecSpace>
FramePlan<typename ExecSpace::memory_space> plan_frame(
    const ExecSpace& exec, const psf::GaussHermitePsf<typename ExecSpace::memory_space>& psf,
    int ccd_rows, int ccd_cols, const ExtractionOptions& options) {
  using Mem = typename ExecSpace::memory_space;
  ScopedRegion region("perfex::plan_frame");
  options.validate();
  FramePlan<Mem> plan;
  plan.options = options;
  if (plan.options.psferr < 0) plan.options.psferr = psf.psferr();
  const ExtractionOptions& opt = plan.options;
  plan.ccd_rows = ccd_rows;
  plan.ccd_cols = ccd_cols;
  const int nx = psf.nx(), ny = psf.ny(), ndiag = psf.hsizey();
  plan.geometry = patch_geometry(opt, ny, nx, ndiag);
  PatchGeometry& g = plan.geometry;
  if (g.wavepad < ndiag)
    throw Error("extraction option wavepad (" + std::to_string(g.wavepad) +
                ") must be >= the PSF's HSIZEY (" + std::to_string(ndiag) +
                ") to store the resolution band");

  plan.wave = make_wavelength_grid(opt.wmin, opt.wmax, opt.dw);
  const int nwave = static_cast<int>(plan.wave.size());
  plan.fullwave = make_padded_grid(plan.wave, opt.dw, g.wavepad, opt.nwavestep);
  const int nk = static_cast<int>(plan.fullwave.size());
  Kokkos::View<double*, Mem> fullwave(uninitialized("perfex::fullwave"), nk);
  Kokkos::deep_copy(exec, fullwave,
                    Kokkos::View<const double*, Kokkos::HostSpace>(plan.fullwave.data(), nk));
  plan.device_fullwave = fullwave;

  // Corners of every fibre the requested bundles solve, in one launch.
  const std::vector<BundlePlan> bundles = plan_bundles(opt, psf.nfib());
  const int frame_lo = spot_fibres(bundles.front()).lo, frame_hi = spot_fibres(bundles.back()).hi;
  Kokkos::View<int**, Mem> xcorner(uninitialized("perfex::plan_xcorner"), frame_hi - frame_lo, nk),
      ycorner(uninitialized("perfex::plan_ycorner"), frame_hi - frame_lo, nk);
  Kokkos::parallel_for("perfex::extract::spot_corners",
                       Kokkos::MDRangePolicy<ExecSpace, Kokkos::Rank<2>, Kokkos::IndexType<int>>(
                           exec, {0, 0}, {frame_hi - frame_lo, nk}),
                       detail::SpotCornersFunctor<Mem>{psf.data(), frame_lo, plan.device_fullwave,
                                                       xcorner, ycorner});
  auto hx = Kokkos::create_mirror_view(xcorner);
  auto hy = Kokkos::create_mirror_view(ycorner);
  Kokkos::deep_copy(exec, hx, xcorner);
  Kokkos::deep_copy(exec, hy, ycorner);
  exec.fence();

  // Every patch with its window, then every patch's band in one launch.
  plan.patches = plan_frame_patches(
      bundles, opt, nwave, nx, ny, ccd_cols, ccd_rows, [&](int f, int k) { return hx(f, k); },
      [&](int f, int k) { return hy(f, k); });
  const int npatch = plan.npatches();
  Kokkos::View<PatchDesc*, Mem> device_patches(uninitialized("perfex::patches"), npatch);
  const Kokkos::View<PatchDesc*, Kokkos::HostSpace> host_patches(plan.patches.data(), npatch);
  Kokkos::deep_copy(exec, device_patches, host_patches);
  measure_bandwidths(exec, Kokkos::View<const int**, Mem>(xcorner),
                     Kokkos::View<const int**, Mem>(ycorner), device_patches, g.nwt, ny, nx,
                     perfex::detail::TeamShape{opt.team_size, opt.vector_length});
  Kokkos::deep_copy(exec, host_patches, device_patches);
  exec.fence();
  for (const PatchDesc& p : plan.patches) {
    g.nfib = std::max(g.nfib, p.nfib);
    g.band = std::max(g.band, p.band);
    g.maxpix = std::max(g.maxpix, (p.row1 - p.row0) * (p.col1 - p.col0));
    plan.linalg_flops += patch_flops(p, g.nwt, g.ndiag, opt.decorrelation);
  }

  // Spot groups and launches within the budget; then fibre indices local to each group.
  plan.memory_budget =
      opt.memory_budget > 0 ? opt.memory_budget : detail::default_memory_budget<ExecSpace>();
  const double spot_bytes_per_fibre =
      double(nk) * (double(nx) * ny * sizeof(double) + 2 * sizeof(int));
  const int patches_per_subbundle = (nwave + opt.nwavestep - 1) / opt.nwavestep;
  plan.launches =
      plan_launches(subbundle_spans(bundles, patches_per_subbundle), spot_bytes_per_fibre,
                    double(PatchWorkspace<Mem>::bytes_per_patch(g)), double(plan.memory_budget),
                    opt.batch_patches);
  // On host backends the same spot groups, fewer patches per launch.
  const int host_cap = detail::default_batch_cap(exec);
  if (opt.batch_patches == 0 && host_cap > 0 && host_cap < plan.launches.batch)
    set_batch(plan.launches, host_cap, spot_bytes_per_fibre,
              double(PatchWorkspace<Mem>::bytes_per_patch(g)));
  for (const SpotGroup& group : plan.launches.groups)
    for (int i = group.patch_lo; i < group.patch_hi; ++i)
      plan.patches[static_cast<std::size_t>(i)].fib0 += frame_lo - group.fibre_lo;
  Kokkos::deep_copy(exec, device_patches, host_patches);
  exec.fence();
  plan.device_patches = device_patches;
  return plan;
}

}  // namespace extract
}  // namespace perfex
