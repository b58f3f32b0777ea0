#pragma once
// Batched patch solver (Bolton & Schlegel's spectro-perfectionism, as gpu_specter runs it): one
// team per patch, one launch per batch of patches. A patch runs in phases, each a function of
// its own: the normal equations straight from the spots, never a dense A
// (patch_normal_equations.hpp); the regularisation, the band Cholesky factor and φ̂ (here); the
// per-fibre decorrelation from the diagonal blocks of H^-1, or the full H^1/2, giving flux, ivar
// and resolution diagonals (patch_decorrelation.hpp); chi2pix, pixmask_fraction and the
// optional model image (patch_outputs.hpp). A patch padded less than the plan's nwt (the specter
// geometry's) leaves its other wavelengths out first (patch_padding.hpp).
//
// Unknowns are ordered wavelength-major (j = wave * nfib + fibre): a spot couples only the
// next one or two fibres within a few wavelength bins, so H is a band matrix (half-bandwidth
// ~58 for 7 x 74 unknowns) stored and factored as one. PatchBandwidth measures each
// patch's band from the spot boxes before the solve (patch_bandwidth.hpp); the geometry and
// flop model are in patch_geometry.hpp, the scratch and the results in patch_workspace.hpp.
#include <perfex/detail/kokkos_compat.hpp>
#include <perfex/detail/team_shape.hpp>
#include <perfex/extract/image.hpp>
#include <perfex/extract/model_image.hpp>
#include <perfex/extract/options.hpp>
#include <perfex/extract/patch_bandwidth.hpp>
#include <perfex/extract/patch_decorrelation.hpp>
#include <perfex/extract/patch_geometry.hpp>
#include <perfex/extract/patch_normal_equations.hpp>
#include <perfex/extract/patch_outputs.hpp>
#include <perfex/extract/patch_padding.hpp>
#include <perfex/extract/patch_workspace.hpp>
#include <perfex/extract/patches.hpp>
#include <perfex/linalg/band_cholesky.hpp>
#include <perfex/linalg/eigen.hpp>
#include <perfex/linalg/flops.hpp>
#include <perfex/linalg/status.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

namespace perfex {
namespace extract {

// A patch's status besides linalg's codes: its spots are all zero (a PSF that gives no light
// there). The patch fails (flux 0, ivar 0, masked), as a singular one does.
constexpr int no_light = 3;

// The per-patch solver: one team per patch of a launch (solve_patches). Built from the patch
// geometry (its scratch for a batch of patches) and the numerical policy; its inputs are set by
// name: spots and corners (fibre indices as the patches' fib0), the image, the results and, for
// each launch, the patches.
template <class ExecSpace, class MemorySpace>
struct PatchSolver {
  using Member = typename Kokkos::TeamPolicy<ExecSpace>::member_type;
  using Spots = Kokkos::View<const double****, Kokkos::LayoutRight, MemorySpace>;
  using Corners = Kokkos::View<const int**, MemorySpace>;

  Spots spots;  // (fibre, padded wavelength, row, column)
  Corners xcorner, ycorner;
  DeviceImage<MemorySpace> image;
  Kokkos::View<const PatchDesc*, MemorySpace> patches;  // of the launch
  PatchWorkspace<MemorySpace> ws;
  PatchResults<MemorySpace> out;
  int nwt = 0, wavepad = 0, nwavestep = 0, ndiag = 0;
  double regularize = 0, psferr = 0, eigen_clip = 0;
  Decorrelation decorrelation = Decorrelation::signal;

  PatchSolver() = default;
  // Scratch for batch patches of geometry g; regularize, psferr (resolved) and eigen_clip
  // from numerics.
  PatchSolver(const PatchGeometry& g, const ExtractionOptions& numerics, int batch)
      : ws(g, batch),
        nwt(g.nwt),
        wavepad(g.wavepad),
        nwavestep(g.nwavestep),
        ndiag(g.ndiag),
        regularize(numerics.regularize),
        psferr(numerics.psferr),
        eigen_clip(numerics.eigen_clip),
        decorrelation(g.decorrelation) {}

  // A patch, phase by phase (one team); a patch that fails gets zeros and its status.
  KOKKOS_INLINE_FUNCTION void operator()(const Member& member) const {
    const int ip = member.league_rank();
    const PatchDesc p = patches(ip);
    const int n = p.nfib * nwt;
    normal_equations(member, ip, p, n);
    member.team_barrier();
    const bool unfitted = p.wave_lo > 0 || p.wave_hi < nwt;
    if (unfitted) {
      patch::leave_out_unfitted(member, p, n, band_view(ip, p, n), first(ws.b, n, ip),
                                first(ws.omega, n, ip));
      member.team_barrier();
    }
    const double wmax = regularize_diagonal(member, n, band_view(ip, p, n), first(ws.omega, n, ip));
    member.team_barrier();
    if (unfitted) {
      patch::scale_unfitted(member, p, n, band_view(ip, p, n));
      member.team_barrier();
    }
    // No weighted light at all: every pixel masked or off the CCD (the bins are NODATA), or a
    // PSF that gives no light here (the patch fails: its spots are all zero).
    int status = wmax > 0 || patch::has_light(member, *this, p) ? linalg::ok : no_light;
    if (status == linalg::ok) status = factor_and_solve(member, ip, p, n);
    if (status == linalg::ok) status = decorrelate(member, ip, p, n);
    member.team_barrier();
    if (status == linalg::ok)
      outputs(member, ip, p, n);
    else
      patch::zero_results(member, *this, p, ip);
    Kokkos::single(Kokkos::PerTeam(member), [&]() { out.status(ip) = status; });
  }

  // Patch ip's normal equations into its scratch (patch_normal_equations.hpp; the tests and
  // benchmarks also run them alone).
  KOKKOS_INLINE_FUNCTION void normal_equations(const Member& member, int ip, const PatchDesc& p,
                                               int n) const {
    patch::normal_equations(member, *this, ip, p, n);
  }

  // The band factor of H, twisted at the middle for the signal decorrelation (its blocks of
  // H^-1 then take half the work of those from L alone; the noise decorrelation needs no
  // blocks: twist = n, L alone, after a dense copy of H), then φ̂ = H^-1 b. Overflowing data make
  // a non-finite solution: the patch fails like a singular one.
  KOKKOS_INLINE_FUNCTION int factor_and_solve(const Member& member, int ip, const PatchDesc& p,
                                              int n) const {
    const auto H = band_view(ip, p, n);
    if (decorrelation == Decorrelation::noise) copy_symmetric(member, n, H);
    member.team_barrier();
    const int twist = twist_of(n);
    const auto tail = twisted_tail(ip, p, n);
    int status = linalg::team_band_cholesky_twisted(member, H, tail, twist);
    if (status != linalg::ok) return status;
    const auto b = first(ws.b, n, ip);
    const auto phi = first(ws.phi, n, ip);
    Kokkos::parallel_for(Kokkos::TeamThreadRange(member, n), [&](int j) { phi(j) = b(j); });
    member.team_barrier();
    linalg::team_band_cholesky_solve(member, H, tail, twist, phi);
    member.team_barrier();
    int finite = 1;
    Kokkos::parallel_reduce(
        Kokkos::TeamThreadRange(member, n),
        [&](int j, int& all) { all = math::min(all, math::isfinite(phi(j)) ? 1 : 0); },
        Kokkos::Min<int>(finite));
    return finite ? linalg::ok : linalg::not_positive_definite;
  }

  // Flux, ivar and resolution of the kept fibres (patch_decorrelation.hpp).
  KOKKOS_INLINE_FUNCTION int decorrelate(const Member& member, int ip, const PatchDesc& p,
                                         int n) const {
    if (decorrelation == Decorrelation::signal)
      return patch::decorrelate_blocks(member, *this, p, band_view(ip, p, n),
                                       twisted_tail(ip, p, n), twist_of(n), first(ws.phi, n, ip),
                                       first(ws.omega, n, ip));
    return patch::decorrelate_full(member, *this, p, n, first(ws.phi, n, ip),
                                   first(ws.omega, n, ip));
  }

  // chi2pix, pixmask_fraction and the model image's share (patch_outputs.hpp).
  KOKKOS_INLINE_FUNCTION void outputs(const Member& member, int ip, const PatchDesc& p,
                                      int n) const {
    chi2_and_pixmask(member, p, first(ws.phi, n, ip));
    if (ws.model_flux.extent(0) > 0) model_block(member, p);
  }
  template <class PV>
  KOKKOS_INLINE_FUNCTION void chi2_and_pixmask(const Member& member, const PatchDesc& p,
                                               const PV& phi) const {
    patch::chi2_and_pixmask(member, *this, p, phi);
  }
  KOKKOS_INLINE_FUNCTION void model_block(const Member& member, const PatchDesc& p) const {
    patch::model_block(member, *this, p);
  }

  // Patch ip's views in the workspace: the band of H (then its factor), the reversed tail of
  // the twisted factor, and the first n entries of a vector (b, ω, φ̂).
  KOKKOS_INLINE_FUNCTION auto band_view(int ip, const PatchDesc& p, int n) const {
    return Kokkos::subview(ws.H, Kokkos::make_pair(0, p.band + 1), Kokkos::make_pair(0, n), ip);
  }
  KOKKOS_INLINE_FUNCTION int twist_of(int n) const {
    return decorrelation == Decorrelation::signal ? linalg::band_twist(n) : n;
  }
  KOKKOS_INLINE_FUNCTION auto twisted_tail(int ip, const PatchDesc& p, int n) const {
    const bool twisted = decorrelation == Decorrelation::signal;
    return Kokkos::subview(ws.Htail, Kokkos::make_pair(0, twisted ? p.band + 1 : 0),
                           Kokkos::make_pair(0, n - twist_of(n)), ip);
  }
  template <class V>
  KOKKOS_INLINE_FUNCTION static auto first(const V& v, int n, int ip) {
    return Kokkos::subview(v, Kokkos::make_pair(0, n), ip);
  }

  // H += diag(rho), rho_J = alpha_J^2 + 1e-15 with alpha as gpu_specter; returns max ω.
  template <class HV, class OV>
  KOKKOS_INLINE_FUNCTION double regularize_diagonal(const Member& member, int n, const HV& H,
                                                    const OV& omega) const {
    double wmax = 0;
    Kokkos::parallel_reduce(
        Kokkos::TeamThreadRange(member, n), [&](int j, double& m) { m = math::max(m, omega(j)); },
        Kokkos::Max<double>(wmax));
    const double minweight = 1e-4 * wmax;
    Kokkos::parallel_for(Kokkos::TeamThreadRange(member, n), [&](int j) {
      const double alpha = omega(j) < minweight ? minweight - omega(j) : regularize;
      H(0, j) += alpha * alpha + 1e-15;
    });
    return wmax;
  }

  // Dense symmetric H from its band (before the band is factored in place).
  template <class HV>
  KOKKOS_INLINE_FUNCTION void copy_symmetric(const Member& member, int n, const HV& H) const {
    auto S = Kokkos::subview(ws.Hsym, Kokkos::make_pair(0, n), Kokkos::make_pair(0, n),
                             member.league_rank());
    const int band = static_cast<int>(H.extent(0)) - 1;
    Kokkos::parallel_for(Kokkos::TeamThreadRange(member, n), [&](int c) {
      for (int r = c; r < n; ++r) S(r, c) = S(c, r) = r - c <= band ? H(r - c, c) : 0.0;
    });
  }
};

// Launches the solver over patches [first, first + count) of plan (one team each; dynamic
// schedule: patches at the CCD edges and the last wavelength step are smaller). shape: a team
// shape to use instead of the backend's default.
template <class ExecSpace, class MemorySpace>
void solve_patches(const ExecSpace& exec, PatchSolver<ExecSpace, MemorySpace>& solver,
                   const Kokkos::View<const PatchDesc*, MemorySpace>& plan, int first, int count,
                   const perfex::detail::TeamShape& shape = {}) {
  namespace pd = perfex::detail;
  solver.patches = Kokkos::subview(plan, Kokkos::make_pair(first, first + count));
  solver.out.select(solver.patches, first);
  Kokkos::parallel_for(
      "perfex::extract::solve_patches",
      pd::team_policy<ExecSpace, Kokkos::Schedule<Kokkos::Dynamic>>(
          exec, count, pd::team_shape_or_default<ExecSpace>(shape, pd::TeamKernel::patch_solver)),
      solver);
}

}  // namespace extract
}  // namespace perfex
