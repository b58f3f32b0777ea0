#pragma once
// What a launch of the patch solver works in and writes to: the scratch of a batch of patches
// (PatchWorkspace, sized by bytes_per_patch), and the frame-shaped results the patches write
// straight into (PatchResults, addressed patch-locally through PatchLocal).
#include <perfex/detail/host_pages.hpp>
#include <perfex/detail/kokkos_compat.hpp>
#include <perfex/extract/patch_geometry.hpp>
#include <perfex/extract/patches.hpp>
#include <perfex/linalg/eigen.hpp>

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>
#include <string>

namespace perfex {
namespace extract {

// Scratch of a batch of patches (one slice per patch of a launch), allocated once and reused
// by every launch.
template <class MemorySpace>
struct PatchWorkspace {
  using Matrices = Kokkos::View<double***, Kokkos::LayoutLeft, MemorySpace>;
  using Vectors = Kokkos::View<double**, Kokkos::LayoutLeft, MemorySpace>;
  Matrices H;          // (band + 1, N, batch): lower band of the normal matrix, then its factor
  Matrices Htail;      // (band + 1, N/2 + 4, batch), signal: the tail of H's twisted factor
  Matrices Hsym;       // (N, N, batch): symmetric dense H, noise decorrelation only
  Matrices V;          // noise variant: eigenvectors of H (N, N); then a fibre's resolution band
  Matrices blockwork;  // (N, nwt, batch): columns of M^-1 for one fibre's block of H^-1
  Matrices cblock;     // (nwt, nwt, batch): that block, then its eigenvectors
  Vectors b, omega, phi, eigval, eigwork;  // per-unknown vectors and eigen scratch
  Vectors wspot;     // (N * spot pixels, batch): ivar-weighted spots inside the window
  Vectors pixmodel;  // (window pixels, batch): model, then chi2 per pixel
  Vectors pixtest;   // (window pixels, batch): 1 where the pixel counts in chi2pix
  Vectors rowsum;    // (nwt, batch): row sums of one fibre's rows of Q
  Vectors rowflux;   // (nwt, batch): those rows times phi
  // model_image only (else empty): the reconvolved flux of the kept fibres' core bins
  // (nfib x nwavestep, batch), and the patch's block of the model image (window pixels, batch).
  Vectors model_flux, model_block;
  PatchGeometry geometry;
  int batch = 0;

  // Every array of one patch with its extents (a vector has cols 1): the one list that both
  // the allocation and bytes_per_patch read, so the two cannot disagree.
  template <class Visit>
  static void for_each_array(const PatchGeometry& g, Visit&& visit) {
    const std::size_t n = static_cast<std::size_t>(g.nmax()), nwt = static_cast<std::size_t>(g.nwt);
    const std::size_t neig = static_cast<std::size_t>(g.neig());
    visit(&PatchWorkspace::H, "perfex::H_band", static_cast<std::size_t>(g.band) + 1, n);
    const bool twisted = g.decorrelation == Decorrelation::signal;
    visit(&PatchWorkspace::Htail, "perfex::H_tail",
          twisted ? static_cast<std::size_t>(g.band) + 1 : 0,
          twisted ? static_cast<std::size_t>(linalg::band_tail_columns(static_cast<int>(n))) : 0);
    if (g.decorrelation == Decorrelation::noise) visit(&PatchWorkspace::Hsym, "perfex::Hsym", n, n);
    if (g.decorrelation == Decorrelation::noise)
      visit(&PatchWorkspace::V, "perfex::eigvec", n, n);
    else
      visit(&PatchWorkspace::V, "perfex::resolution_band",
            2 * static_cast<std::size_t>(g.ndiag) + 1, static_cast<std::size_t>(g.nwavestep));
    visit(&PatchWorkspace::blockwork, "perfex::blockwork", n, nwt);
    visit(&PatchWorkspace::cblock, "perfex::cblock", nwt, nwt);
    visit(&PatchWorkspace::b, "perfex::b", n, 1);
    visit(&PatchWorkspace::omega, "perfex::omega", n, 1);
    visit(&PatchWorkspace::phi, "perfex::phi", n, 1);
    visit(&PatchWorkspace::eigval, "perfex::eigval", neig, 1);
    visit(&PatchWorkspace::eigwork, "perfex::eigwork",
          static_cast<std::size_t>(linalg::syev_work_size(static_cast<int>(neig))), 1);
    visit(&PatchWorkspace::wspot, "perfex::wspot",
          n * static_cast<std::size_t>(g.spot_rows) * static_cast<std::size_t>(g.spot_cols), 1);
    visit(&PatchWorkspace::pixmodel, "perfex::pixmodel", static_cast<std::size_t>(g.maxpix), 1);
    visit(&PatchWorkspace::pixtest, "perfex::pixtest", static_cast<std::size_t>(g.maxpix), 1);
    visit(&PatchWorkspace::rowsum, "perfex::rowsum", nwt, 1);
    visit(&PatchWorkspace::rowflux, "perfex::rowflux", nwt, 1);
    if (g.model_image && g.model_fold == ModelFold::sum)
      visit(&PatchWorkspace::model_flux, "perfex::model_flux",
            static_cast<std::size_t>(g.nfib) * static_cast<std::size_t>(g.nwavestep), 1);
    if (g.model_image)
      visit(&PatchWorkspace::model_block, "perfex::model_block", static_cast<std::size_t>(g.maxpix),
            1);
  }

  // Bytes of one patch's scratch (the budget divides by it).
  static std::size_t bytes_per_patch(const PatchGeometry& g) {
    std::size_t words = 0;
    for_each_array(
        g, [&](auto, const char*, std::size_t rows, std::size_t cols) { words += rows * cols; });
    return words * sizeof(double);
  }

  PatchWorkspace() = default;
  PatchWorkspace(const PatchGeometry& g, int batch_) : geometry(g), batch(batch_) {
    for_each_array(g, [&](auto member, const char* label, std::size_t rows, std::size_t cols) {
      auto& view = this->*member;
      using View = std::decay_t<decltype(view)>;
      if constexpr (View::rank == 3)
        view = View(uninitialized(label), rows, cols, static_cast<std::size_t>(batch));
      else
        view = View(uninitialized(label), rows, static_cast<std::size_t>(batch));
      perfex::detail::advise_huge_pages(view);
    });
  }
};

// Frame-shaped results that the solver addresses patch-locally, (patch of the launch, kept
// fibre, [diagonal,] core wavelength), through the launch's patch table: each patch writes its
// kept fibres x core wavelengths straight into the frame (fibre - specmin, output wavelength).
template <class FrameView, class MemorySpace>
struct PatchLocal {
  FrameView frame;
  Kokkos::View<const PatchDesc*, MemorySpace> patches;
  KOKKOS_INLINE_FUNCTION typename FrameView::reference_type operator()(int ip, int f, int k) const {
    const PatchDesc& p = patches(ip);
    return frame(p.out_fibre0 + f, p.kf0 + k);
  }
  KOKKOS_INLINE_FUNCTION typename FrameView::reference_type operator()(int ip, int f, int d,
                                                                       int k) const {
    const PatchDesc& p = patches(ip);
    return frame(p.out_fibre0 + f, d, p.kf0 + k);
  }
};

// The solver's outputs: per wavelength bin (extract_frame converts flux and ivar per Angstrom
// at the end), and a linalg::Status per patch of the plan.
template <class MemorySpace>
struct PatchResults {
  using Bins = Kokkos::View<double**, Kokkos::LayoutRight, MemorySpace>;        // (fibre, k)
  using Diagonals = Kokkos::View<double***, Kokkos::LayoutRight, MemorySpace>;  // (fibre, d, k)
  using Patches = Kokkos::View<const PatchDesc*, MemorySpace>;
  PatchLocal<Bins, MemorySpace> flux, ivar, chi2pix, pixmask;
  PatchLocal<Diagonals, MemorySpace> rdiags;
  Kokkos::View<int*, MemorySpace> status;  // of the launch's patches

  PatchResults() = default;
  PatchResults(const Bins& flux_, const Bins& ivar_, const Bins& chi2pix_, const Bins& pixmask_,
               const Diagonals& resolution, const Kokkos::View<int*, MemorySpace>& plan_status)
      : flux{flux_, {}},
        ivar{ivar_, {}},
        chi2pix{chi2pix_, {}},
        pixmask{pixmask_, {}},
        rdiags{resolution, {}},
        status(plan_status),
        plan_status_(plan_status) {}

  // Addresses the patches [first, first + extent) of the plan, the next launch's.
  void select(const Patches& launch_patches, int first) {
    flux.patches = ivar.patches = chi2pix.patches = pixmask.patches = rdiags.patches =
        launch_patches;
    status = Kokkos::subview(
        plan_status_, Kokkos::make_pair(first, first + static_cast<int>(launch_patches.extent(0))));
  }

 private:
  Kokkos::View<int*, MemorySpace> plan_status_;
};

}  // namespace extract
}  // namespace perfex
