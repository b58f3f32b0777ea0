#pragma once
// Frame extraction driver: bundles → sub-bundles → wavelength patches, solved in batches on
// the execution space, stitched into a Frame (spec §5).
#include <perfex/detail/kokkos_compat.hpp>
#include <perfex/detail/team_shape.hpp>
#include <perfex/error.hpp>
#include <perfex/extract/frame.hpp>
#include <perfex/extract/image.hpp>
#include <perfex/extract/options.hpp>
#include <perfex/extract/patch_solver.hpp>
#include <perfex/extract/plan.hpp>
#include <perfex/extract/wavelength_grid.hpp>
#include <perfex/psf/gauss_hermite.hpp>
#include <perfex/psf/psf_data.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

namespace perfex {
namespace extract {

// Called on the host after each batch of patches: (patches done, patches in total).
using ProgressCallback = std::function<void(int, int)>;

// Extracts the requested fibres of an image already in exec's memory (see upload_image).
template <class ExecSpace>
Frame extract_frame(const ExecSpace& exec, const psf::GaussHermitePsfData& psf_data,
                    const DeviceImage<typename ExecSpace::memory_space>& image,
                    const ExtractionOptions& options, const ProgressCallback& progress = {}) {
  using Mem = typename ExecSpace::memory_space;
  ScopedRegion region("perfex::extract_frame");
  Kokkos::Timer timer;
  options.validate();
  psf_data.validate();
  Frame frame;
  frame.options = options;
  if (frame.options.psferr < 0) frame.options.psferr = psf_data.psferr;
  const ExtractionOptions& opt = frame.options;

  const psf::GaussHermitePsf<Mem> psf(psf_data);
  const int nx = psf.nx(), ny = psf.ny();
  const int wavepad = opt.wavepad(), nwavestep = opt.nwavestep, nwt = nwavestep + 2 * wavepad;
  const int ndiag = psf.hsizey();
  if (wavepad < ndiag)
    throw Error("extraction option wavepad (" + std::to_string(wavepad) +
                ") must be >= the PSF's HSIZEY (" + std::to_string(ndiag) +
                ") to store the resolution band");

  frame.wave = make_wavelength_grid(opt.wmin, opt.wmax, opt.dw);
  const int nwave = static_cast<int>(frame.wave.size());
  const std::vector<double> dlambda = gradient(frame.wave);
  const std::vector<double> fullwave = make_padded_grid(frame.wave, opt.dw, wavepad, nwavestep);
  Kokkos::View<double*, Mem> dfullwave("perfex::fullwave", fullwave.size());
  Kokkos::deep_copy(
      exec, dfullwave,
      Kokkos::View<const double*, Kokkos::HostSpace>(fullwave.data(), fullwave.size()));

  frame.specmin = opt.specmin;
  frame.nspec = opt.nspec;
  frame.nwave = nwave;
  frame.ndiag = ndiag;
  const std::size_t nbins = static_cast<std::size_t>(opt.nspec) * static_cast<std::size_t>(nwave);
  frame.flux.assign(nbins, 0.0);
  frame.ivar.assign(nbins, 0.0);
  frame.chi2pix.assign(nbins, 0.0);
  frame.pixmask_fraction.assign(nbins, 0.0);
  frame.resolution.assign(nbins * static_cast<std::size_t>(2 * ndiag + 1), 0.0);

  frame.nonfinite_pixels = image.nonfinite_pixels;
  if (image.nonfinite_pixels > 0)
    frame.warnings.push_back(std::to_string(image.nonfinite_pixels) +
                             " NaN/Inf image or ivar pixels treated as masked");
  const int nrows = image.nrows(), ncols = image.ncols();
  Kokkos::View<double**, Kokkos::LayoutRight, Mem> model;
  if (opt.model_image) model = decltype(model)("perfex::model", nrows, ncols);

  const std::vector<BundlePlan> bundles = plan_bundles(opt, psf.nfib());
  int total_patches = 0, maxsub = 0;
  const int patches_per_sub = (nwave + nwavestep - 1) / nwavestep;
  for (const auto& b : bundles) {
    total_patches += static_cast<int>(b.subbundles.size()) * patches_per_sub;
    for (const auto& s : b.subbundles) maxsub = std::max(maxsub, s.count);
  }
  const int maxfib = maxsub + 2, nmax = maxfib * nwt, spotpix = nx * ny;

  PatchWorkspace<Mem> ws;
  PatchResults<Mem> results;
  int done = 0;
  for (const auto& bundle : bundles) {
    // Spots of the solved fibres only: the requested ones and their padding neighbours.
    const FibreRange spot_range = spot_fibres(bundle);
    const int nb = spot_range.hi - spot_range.lo;
    Kokkos::View<double****, Kokkos::LayoutRight, Mem> spots(uninitialized("perfex::spots"), nb,
                                                             fullwave.size(), ny, nx);
    Kokkos::View<int**, Mem> xcorner("perfex::xcorner", nb, fullwave.size()),
        ycorner("perfex::ycorner", nb, fullwave.size());
    psf::compute_spots(exec, psf, spot_range.lo, nb, Kokkos::View<const double*, Mem>(dfullwave),
                       spots, xcorner, ycorner);
    auto hx = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), xcorner);
    auto hy = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), ycorner);

    const std::vector<PatchDesc> plan = plan_patches(
        bundle, opt, nwave, nx, ny, ncols, nrows, [&](int f, int k) { return hx(f, k); },
        [&](int f, int k) { return hy(f, k); });
    int maxpix = 0;
    for (const PatchDesc& p : plan)
      maxpix = std::max(maxpix, (p.row1 - p.row0) * (p.col1 - p.col0));
    Kokkos::View<PatchDesc*, Mem> dplan("perfex::patches", plan.size());
    Kokkos::deep_copy(exec, dplan,
                      Kokkos::View<const PatchDesc*, Kokkos::HostSpace>(plan.data(), plan.size()));
    const int npatch = static_cast<int>(plan.size());
    const int band =
        measure_bandwidths(exec, Kokkos::View<const int**, Mem>(xcorner),
                           Kokkos::View<const int**, Mem>(ycorner), dplan, nwt, ny, nx);
    frame.max_band = std::max(frame.max_band, band);
    {
      const auto measured = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), dplan);
      for (int i = 0; i < npatch; ++i)
        frame.linalg_flops += patch_flops(measured(i), nwt, opt.decorrelation);
    }

    int batch = opt.batch_patches;
    if (batch == 0) {
      const double budget = 512.0 * 1024 * 1024;  // bytes of per-batch scratch
      const double per =
          PatchWorkspace<Mem>::bytes_per_patch(nmax, band, nwt, maxpix, spotpix, opt.decorrelation);
      batch = static_cast<int>(std::max(1.0, std::floor(budget / per)));
    }
    batch = std::min(batch, npatch);
    if (ws.batch < batch || ws.maxpix < maxpix || ws.band < band) {
      const int new_batch = std::max(batch, ws.batch), new_pix = std::max(maxpix, ws.maxpix);
      const int new_band = std::max(band, ws.band);
      ws = PatchWorkspace<Mem>();  // free the old scratch before allocating the larger one
      ws = PatchWorkspace<Mem>(nmax, new_band, nwt, new_pix, spotpix, new_batch, opt.decorrelation);
      results = PatchResults<Mem>(new_batch, maxsub, nwavestep, ndiag);
    }

    PatchSolver<ExecSpace, Mem> solver{spots,
                                       xcorner,
                                       ycorner,
                                       image,
                                       {},
                                       ws,
                                       results,
                                       model,
                                       nwt,
                                       wavepad,
                                       nwavestep,
                                       ndiag,
                                       opt.regularize,
                                       opt.psferr,
                                       opt.eigen_clip,
                                       opt.decorrelation};
    auto hflux = Kokkos::create_mirror_view(results.flux);
    auto hivar = Kokkos::create_mirror_view(results.ivar);
    auto hchi = Kokkos::create_mirror_view(results.chi2pix);
    auto hpm = Kokkos::create_mirror_view(results.pixmask);
    auto hrd = Kokkos::create_mirror_view(results.rdiags);
    auto hst = Kokkos::create_mirror_view(results.status);
    for (int first = 0; first < npatch; first += batch) {
      const int count = std::min(batch, npatch - first);
      solver.patches = Kokkos::subview(dplan, Kokkos::make_pair(first, first + count));
      // Dynamic: patches at the CCD edges and the last wavelength step are smaller.
      Kokkos::parallel_for(
          "perfex::extract::solve_patches",
          perfex::detail::team_policy<ExecSpace, Kokkos::Schedule<Kokkos::Dynamic>>(
              exec, count, perfex::detail::default_team_shape<ExecSpace>()),
          solver);
      Kokkos::deep_copy(exec, hflux, results.flux);
      Kokkos::deep_copy(exec, hivar, results.ivar);
      Kokkos::deep_copy(exec, hchi, results.chi2pix);
      Kokkos::deep_copy(exec, hpm, results.pixmask);
      Kokkos::deep_copy(exec, hrd, results.rdiags);
      Kokkos::deep_copy(exec, hst, results.status);
      exec.fence();
      for (int i = 0; i < count; ++i) {
        const PatchDesc& p = plan[static_cast<std::size_t>(first + i)];
        if (hst(i) != linalg::ok) {
          ++frame.failed_patches;
          frame.failed_bins.push_back({p.out_fibre0, p.nkeepfib, p.kf0, p.nkeep});
          frame.warnings.push_back(
              "patch of fibres " + std::to_string(p.out_fibre0 + opt.specmin) + "-" +
              std::to_string(p.out_fibre0 + opt.specmin + p.nkeepfib - 1) + ", wavelengths " +
              std::to_string(frame.wave[static_cast<std::size_t>(p.kf0)]) + "+: " +
              (hst(i) == linalg::not_positive_definite ? "singular system"
                                                       : "eigensolver did not converge") +
              "; flux and ivar set to 0");
        }
        for (int f = 0; f < p.nkeepfib; ++f)
          for (int j = 0; j < p.nkeep; ++j) {
            const int k = p.kf0 + j;
            const std::size_t o = frame.index(p.out_fibre0 + f, k);
            const double dl = dlambda[static_cast<std::size_t>(k)];
            frame.flux[o] = hflux(i, f, j) / dl;
            frame.ivar[o] = hivar(i, f, j) * dl * dl;
            frame.chi2pix[o] = hchi(i, f, j);
            frame.pixmask_fraction[o] = hpm(i, f, j);
            for (int d = 0; d <= 2 * ndiag; ++d)
              frame.resolution[(static_cast<std::size_t>(p.out_fibre0 + f) * (2 * ndiag + 1) + d) *
                                   nwave +
                               k] = hrd(i, f, d, j);
          }
      }
      done += count;
      frame.npatches = done;
      if (progress) progress(done, total_patches);
    }
  }
  set_frame_mask(frame);
  if (opt.model_image) {
    auto hm = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), model);
    frame.model_rows = nrows;
    frame.model_cols = ncols;
    frame.model.assign(hm.data(), hm.data() + hm.size());
  }
  frame.seconds = timer.seconds();
  return frame;
}

// Host image: uploaded for this call only.
template <class ExecSpace>
Frame extract_frame(const ExecSpace& exec, const psf::GaussHermitePsfData& psf_data,
                    const CcdImage& image, const ExtractionOptions& options,
                    const ProgressCallback& progress = {}) {
  return extract_frame(exec, psf_data, upload_image(exec, image), options, progress);
}

}  // namespace extract
}  // namespace perfex
