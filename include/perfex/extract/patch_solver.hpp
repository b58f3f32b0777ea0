#pragma once
// Batched patch solver (Bolton & Schlegel's spectro-perfectionism, as gpu_specter runs it): one
// team per patch, one launch per batch of patches.
// Normal equations straight from the spots (never a dense A), Cholesky solve, per-fibre
// decorrelation from the diagonal blocks of H^-1 (or the full H^1/2), then flux, ivar,
// resolution diagonals, chi2pix, pixmask_fraction and the optional model image.
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
#include <perfex/extract/patch_geometry.hpp>
#include <perfex/extract/patch_workspace.hpp>
#include <perfex/extract/plan.hpp>
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

// Sums of a vector reduction over a spot's pixels (Kokkos reduces any type with +=).
struct RhsSums {  // b_J = Σ w S d and ω_J = Σ w S
  double b = 0, omega = 0;
  KOKKOS_INLINE_FUNCTION RhsSums& operator+=(const RhsSums& o) {
    b += o.b;
    omega += o.omega;
    return *this;
  }
};
struct Chi2Sums {  // Σ S χ², Σ S over counted pixels, Σ S over masked pixels
  double chi = 0, norm = 0, masked = 0;
  KOKKOS_INLINE_FUNCTION Chi2Sums& operator+=(const Chi2Sums& o) {
    chi += o.chi;
    norm += o.norm;
    masked += o.masked;
    return *this;
  }
};

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

  // Patch ip's normal equations into its scratch: the weighted spots, b, ω, then the band of
  // H0 = AᵀWA (the solver's first steps; the benchmarks and tests also run them alone).
  KOKKOS_INLINE_FUNCTION void normal_equations(const Member& member, int ip, const PatchDesc& p,
                                               int n) const {
    weigh_spots(member, p, n, Kokkos::subview(ws.b, Kokkos::make_pair(0, n), ip),
                Kokkos::subview(ws.omega, Kokkos::make_pair(0, n), ip));
    member.team_barrier();
    normal_matrix(
        member, p, n,
        Kokkos::subview(ws.H, Kokkos::make_pair(0, p.band + 1), Kokkos::make_pair(0, n), ip));
  }

  KOKKOS_INLINE_FUNCTION void operator()(const Member& member) const {
    const int ip = member.league_rank();
    const PatchDesc p = patches(ip);
    const int n = p.nfib * nwt;
    auto H = Kokkos::subview(ws.H, Kokkos::make_pair(0, p.band + 1), Kokkos::make_pair(0, n), ip);
    auto b = Kokkos::subview(ws.b, Kokkos::make_pair(0, n), ip);
    auto omega = Kokkos::subview(ws.omega, Kokkos::make_pair(0, n), ip);
    auto phi = Kokkos::subview(ws.phi, Kokkos::make_pair(0, n), ip);

    normal_equations(member, ip, p, n);
    member.team_barrier();
    regularise(member, n, H, omega);
    member.team_barrier();
    if (decorrelation == Decorrelation::noise) copy_symmetric(member, n, H);
    member.team_barrier();
    // Signal decorrelation takes its blocks of H^-1 from the factor twisted at the middle (half
    // the work of those from L alone); noise decorrelation needs no blocks (twist = n: L).
    const bool twisted = decorrelation == Decorrelation::signal;
    const int twist = twisted ? linalg::band_twist(n) : n;
    auto tail = Kokkos::subview(ws.Htail, Kokkos::make_pair(0, twisted ? p.band + 1 : 0),
                                Kokkos::make_pair(0, n - twist), ip);
    int status = linalg::team_band_cholesky_twisted(member, H, tail, twist);
    if (status == linalg::ok) {
      Kokkos::parallel_for(Kokkos::TeamThreadRange(member, n), [&](int j) { phi(j) = b(j); });
      member.team_barrier();
      linalg::team_band_cholesky_solve(member, H, tail, twist, phi);
      member.team_barrier();
      // Overflowing data make a non-finite solution: the patch fails like a singular one.
      int finite = 1;
      Kokkos::parallel_reduce(
          Kokkos::TeamThreadRange(member, n),
          [&](int j, int& all) { all = math::min(all, math::isfinite(phi(j)) ? 1 : 0); },
          Kokkos::Min<int>(finite));
      if (!finite) status = linalg::not_positive_definite;
    }
    if (status == linalg::ok) {
      status = decorrelation == Decorrelation::signal
                   ? decorrelate_blocks(member, p, H, tail, twist, phi, omega)
                   : decorrelate_full(member, p, n, phi, omega);
    }
    member.team_barrier();
    if (status != linalg::ok) {
      zero_results(member, p, ip);
      if (ws.model_block.extent(0) > 0)  // a failed patch adds nothing to the model image
        Kokkos::parallel_for(Kokkos::TeamThreadRange(member, static_cast<int>(model_block_size(p))),
                             [&](int i) { ws.model_block(i, ip) = 0; });
      Kokkos::single(Kokkos::PerTeam(member), [&]() { out.status(ip) = status; });
      return;
    }
    chi2_and_pixmask(member, p, phi);
    if (ws.model_block.extent(0) > 0) model_block(member, p);
    Kokkos::single(Kokkos::PerTeam(member), [&]() { out.status(ip) = linalg::ok; });
  }

  // w_P·S_J[P] on each spot's pixels inside the window (the only ones normal_matrix reads), and
  // b_J = Σ w S d, ω_J = Σ w S. Threads over the unknowns, vector lanes over a spot's columns.
  template <class BV, class OV>
  KOKKOS_INLINE_FUNCTION void weigh_spots(const Member& member, const PatchDesc& p, int n,
                                          const BV& b, const OV& omega) const {
    const int nrow = static_cast<int>(spots.extent(2)), ncol = static_cast<int>(spots.extent(3));
    const int ip = member.league_rank();
    const PatchUnknowns u(p);
    Kokkos::parallel_for(Kokkos::TeamThreadRange(member, n), [&](int j) {
      const int f = u.fibre(j), k = u.wave(j);
      const int c0 = xcorner(f, k), r0 = ycorner(f, k);
      const int rlo = math::max(0, p.row0 - r0), rhi = math::min(nrow, p.row1 - r0);
      const int clo = math::max(0, p.col0 - c0), chi = math::min(ncol, p.col1 - c0);
      const double* spot = &spots(f, k, 0, 0);
      double* wspot = &ws.wspot(static_cast<std::size_t>(j) * nrow * ncol, ip);
      RhsSums sums;
      for (int r = rlo; r < rhi; ++r) {  // row by row: the image is read along its rows
        RhsSums row;
        Kokkos::parallel_reduce(
            Kokkos::ThreadVectorRange(member, clo, chi),
            [&](int c, RhsSums& acc) {
              const double w = image.weight(r0 + r, c0 + c) * spot[r * ncol + c];
              wspot[r * ncol + c] = w;
              acc.b += w * image.value(r0 + r, c0 + c);
              acc.omega += w;
            },
            row);
        sums += row;
      }
      Kokkos::single(Kokkos::PerThread(member), [&]() {
        b(j) = sums.b;
        omega(j) = sums.omega;
      });
    });
  }

  // Σ w[r·ncol + c]·s[r·ncol + c − shift] over rows [rlo, rhi) × columns [clo, chi) (s: the
  // other spot, whose box is shifted by shift pixels in this one's). The rectangle is walked in as
  // few runs as possible, the products spread over independent sums: whole rows are one contiguous
  // run, a rectangle narrower than tall goes down its columns.
  KOKKOS_INLINE_FUNCTION static double overlap_product(const double* w, const double* s, int shift,
                                                       int ncol, int rlo, int rhi, int clo,
                                                       int chi) {
    double h0 = 0, h1 = 0, h2 = 0, h3 = 0;
    if (rlo >= rhi || clo >= chi) return 0.0;
    if (chi - clo == ncol) {
      const int end = rhi * ncol;
      int i = rlo * ncol;
      for (; i + 4 <= end; i += 4) {
        h0 += w[i] * s[i - shift];
        h1 += w[i + 1] * s[i + 1 - shift];
        h2 += w[i + 2] * s[i + 2 - shift];
        h3 += w[i + 3] * s[i + 3 - shift];
      }
      for (; i < end; ++i) h0 += w[i] * s[i - shift];
    } else if (chi - clo < rhi - rlo) {
      for (int c = clo; c < chi; ++c) {
        int r = rlo;
        for (; r + 2 <= rhi; r += 2) {
          h0 += w[r * ncol + c] * s[r * ncol + c - shift];
          h1 += w[(r + 1) * ncol + c] * s[(r + 1) * ncol + c - shift];
        }
        if (r < rhi) h2 += w[r * ncol + c] * s[r * ncol + c - shift];
      }
    } else {
      for (int r = rlo; r < rhi; ++r) {
        int c = clo;
        for (; c + 4 <= chi; c += 4) {
          h0 += w[r * ncol + c] * s[r * ncol + c - shift];
          h1 += w[r * ncol + c + 1] * s[r * ncol + c + 1 - shift];
          h2 += w[r * ncol + c + 2] * s[r * ncol + c + 2 - shift];
          h3 += w[r * ncol + c + 3] * s[r * ncol + c + 3 - shift];
        }
        for (; c < chi; ++c) h0 += w[r * ncol + c] * s[r * ncol + c - shift];
      }
    }
    return (h0 + h1) + (h2 + h3);
  }

  // Lower band of H0 = A^T W A (H(d, j) = H0(j + d, j)): for each column j (a thread), its
  // band entries (vector lanes) from the rectangle where spot j + d overlaps spot j inside the
  // window, empty for boxes that do not overlap.
  template <class HV>
  KOKKOS_INLINE_FUNCTION void normal_matrix(const Member& member, const PatchDesc& p, int n,
                                            const HV& H) const {
    const int nrow = static_cast<int>(spots.extent(2)), ncol = static_cast<int>(spots.extent(3));
    const int ip = member.league_rank();
    const PatchUnknowns u(p);
    Kokkos::parallel_for(Kokkos::TeamThreadRange(member, n), [&](int jc) {
      const int fc = u.fibre(jc), kc = u.wave(jc);
      const int c0 = xcorner(fc, kc), r0 = ycorner(fc, kc);
      // Spot jc's pixels inside the window, in its box coordinates.
      const int wr0 = math::max(0, p.row0 - r0), wr1 = math::min(nrow, p.row1 - r0);
      const int wc0 = math::max(0, p.col0 - c0), wc1 = math::min(ncol, p.col1 - c0);
      const double* wspot = &ws.wspot(static_cast<std::size_t>(jc) * nrow * ncol, ip);
      const int nband = math::min(n - 1 - jc, p.band) + 1;
      Kokkos::parallel_for(Kokkos::ThreadVectorRange(member, nband), [&](int d) {
        const int fr = u.fibre(jc + d), kr = u.wave(jc + d);
        const int dc = xcorner(fr, kr) - c0, dr = ycorner(fr, kr) - r0;  // spot jc+d in box jc
        const int rlo = math::max(wr0, dr), rhi = math::min(wr1, nrow + dr);
        const int clo = math::max(wc0, dc), chi = math::min(wc1, ncol + dc);
        H(d, jc) =
            overlap_product(wspot, &spots(fr, kr, 0, 0), dr * ncol + dc, ncol, rlo, rhi, clo, chi);
      });
    });
  }

  // H += diag(rho), rho_J = alpha_J^2 + 1e-15 with alpha as gpu_specter.
  template <class HV, class OV>
  KOKKOS_INLINE_FUNCTION void regularise(const Member& member, int n, const HV& H,
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

  // Per-fibre ("signal") decorrelation of the kept fibres: Q_f = C_ff^(-1/2), where C_ff is
  // the fibre's block of H^-1 (rows/columns keep0 + f + k * nfib). Q_f is never formed: with
  // C_ff = V diag(mu) V^T and W = V diag(mu^-1/4) (mu clipped), Q_f = W W^T, so the row sums
  // and Q_f phi are W (W^T x) and the resolution band needs only dot products of W's rows
  // around the diagonal: O(n^2 ndiag) instead of the n^3 of the composition.
  template <class LV, class TV, class PV, class OV>
  KOKKOS_INLINE_FUNCTION int decorrelate_blocks(const Member& member, const PatchDesc& p,
                                                const LV& L, const TV& tail, int twist,
                                                const PV& phi, const OV& omega) const {
    const int ip = member.league_rank();
    auto V = Kokkos::subview(ws.cblock, Kokkos::ALL, Kokkos::ALL, ip);
    auto work = Kokkos::subview(ws.blockwork, Kokkos::make_pair(0, p.nfib * nwt), Kokkos::ALL, ip);
    auto w = Kokkos::subview(ws.eigval, Kokkos::ALL, ip);
    auto ework = Kokkos::subview(ws.eigwork, Kokkos::ALL, ip);
    auto band = resolution_band(p, ip);
    auto rowsum = Kokkos::subview(ws.rowsum, Kokkos::ALL, ip);
    auto rowflux = Kokkos::subview(ws.rowflux, Kokkos::ALL, ip);
    const bool seq = linalg::detail::sequential_team(member);
    // Contiguous length-nwt dot products: unrolled on one host thread, over vector lanes else.
    auto dot = [&](const double* x, const double* y) {
      double s = 0;
      if (seq)
        s = linalg::detail::dot<true>(nwt, x, y, 1, 1);
      else
        Kokkos::parallel_reduce(
            Kokkos::ThreadVectorRange(member, nwt), [&](int i, double& acc) { acc += x[i] * y[i]; },
            s);
      return s;
    };
    // syev's work is free once it returns: 1, the fibre's phi, then W^T 1 and W^T phi.
    double* ones = ework.data();
    double* phif = ones + nwt;
    double* u1 = phif + nwt;
    double* uphi = u1 + nwt;
    const long ldv = static_cast<long>(V.stride(1)), ldw = static_cast<long>(work.stride(1));
    for (int f = 0; f < p.nkeepfib; ++f) {
      const Strided unknowns{p.keep0 + f, p.nfib};
      linalg::team_band_cholesky_inverse_strided_block(member, L, tail, twist, unknowns.first,
                                                       unknowns.step, nwt, V, work);
      int st = linalg::team_syev(member, V, w, ework);
      if (st == linalg::ok && !(w(nwt - 1) > 0)) st = linalg::not_positive_definite;
      if (st != linalg::ok) return st;
      const double floor_mu = eigen_clip * w(nwt - 1);
      Kokkos::parallel_for(Kokkos::TeamVectorRange(member, nwt), [&](int i) {
        ones[i] = 1.0;
        phif[i] = phi(unknowns(i));
      });
      member.team_barrier();
      // Row k of W^T (column i of work holds row i of W, contiguous) and W^T 1, W^T phi.
      Kokkos::parallel_for(Kokkos::TeamThreadRange(member, nwt), [&](int k) {
        const double g = 1.0 / math::sqrt(math::sqrt(linalg::clip_eigenvalue(w(k), floor_mu)));
        const double* vk = V.data() + k * ldv;
        Kokkos::parallel_for(Kokkos::ThreadVectorRange(member, nwt),
                             [&](int i) { work(k, i) = vk[i] * g; });
        const double s = dot(vk, ones), sp = dot(vk, phif);
        Kokkos::single(Kokkos::PerThread(member), [&]() {
          u1[k] = g * s;
          uphi[k] = g * sp;
        });
      });
      member.team_barrier();
      auto wrow = [&](int i) { return work.data() + i * ldw; };
      Kokkos::parallel_for(Kokkos::TeamThreadRange(member, nwt), [&](int i) {
        const double s = dot(wrow(i), u1), fl = dot(wrow(i), uphi);
        Kokkos::single(Kokkos::PerThread(member), [&]() {
          rowsum(i) = s;
          rowflux(i) = fl;
        });
      });
      // Band entries Q_f(j - ndiag + d, j) of the core columns j.
      const int nd = 2 * ndiag + 1;
      Kokkos::parallel_for(Kokkos::TeamThreadRange(member, p.nkeep * nd), [&](int idx) {
        const int jcore = idx / nd, d = idx - jcore * nd, j = jcore + wavepad;
        const double q = dot(wrow(j - ndiag + d), wrow(j));
        Kokkos::single(Kokkos::PerThread(member), [&]() { band(d, jcore) = q; });
      });
      member.team_barrier();
      store_fibre(member, p, f, unknowns, omega);
      member.team_barrier();
    }
    return linalg::ok;
  }

  // Full ("noise") decorrelation: Q = H^(1/2); R rows of the kept fibres.
  template <class PV, class OV>
  KOKKOS_INLINE_FUNCTION int decorrelate_full(const Member& member, const PatchDesc& p, int n,
                                              const PV& phi, const OV& omega) const {
    const int ip = member.league_rank();
    auto Q = Kokkos::subview(ws.Hsym, Kokkos::make_pair(0, n), Kokkos::make_pair(0, n), ip);
    auto V = Kokkos::subview(ws.V, Kokkos::make_pair(0, n), Kokkos::make_pair(0, n), ip);
    auto w = Kokkos::subview(ws.eigval, Kokkos::make_pair(0, n), ip);
    auto ework = Kokkos::subview(ws.eigwork, Kokkos::ALL, ip);
    const int status = linalg::team_sqrt(member, Q, V, w, ework, eigen_clip);
    if (status != linalg::ok) return status;
    member.team_barrier();
    auto band = resolution_band(p, ip);  // in V's memory, free again
    auto rowsum = Kokkos::subview(ws.rowsum, Kokkos::ALL, ip);
    auto rowflux = Kokkos::subview(ws.rowflux, Kokkos::ALL, ip);
    for (int f = 0; f < p.nkeepfib; ++f) {
      // The fibre's rows and columns of Q are its unknowns.
      const Strided unknowns{p.keep0 + f, p.nfib};
      Kokkos::parallel_for(Kokkos::TeamThreadRange(member, nwt), [&](int i) {
        const int r = unknowns(i);
        double s = 0, fl = 0;
        for (int c = 0; c < n; ++c) {
          s += Q(r, c);
          fl += Q(r, c) * phi(c);
        }
        rowsum(i) = s;
        rowflux(i) = fl;
      });
      Kokkos::parallel_for(Kokkos::TeamThreadRange(member, p.nkeep), [&](int jcore) {
        const int j = jcore + wavepad;
        for (int d = 0; d <= 2 * ndiag; ++d)
          band(d, jcore) = Q(unknowns(j - ndiag + d), unknowns(j));
      });
      member.team_barrier();
      store_fibre(member, p, f, unknowns, omega);
      member.team_barrier();
    }
    return linalg::ok;
  }

  // (2 ndiag + 1) x nkeep entries of Q_f around the diagonal of the core columns, in ws.V: the
  // signal variant's band buffer, the noise variant's eigenvector scratch (free once Q is).
  KOKKOS_INLINE_FUNCTION auto resolution_band(const PatchDesc& p, int ip) const {
    return Kokkos::subview(ws.V, Kokkos::make_pair(0, 2 * ndiag + 1), Kokkos::make_pair(0, p.nkeep),
                           ip);
  }

  // Kept fibre f from its rows of Q (row sums in ws.rowsum, Q phi in ws.rowflux, the band from
  // resolution_band): R = Q / rowsum, flux = R phi, ivar = rowsum^2, resolution diagonals
  // R_f[j-nd+d][j] of the core columns. Bins no pixel constrains (omega ~ 0) get ivar 0, as
  // specter does.
  template <class OV>
  KOKKOS_INLINE_FUNCTION void store_fibre(const Member& member, const PatchDesc& p, int f,
                                          const Strided unknowns, const OV& omega) const {
    const int ip = member.league_rank();
    auto band = resolution_band(p, ip);
    auto rowsum = Kokkos::subview(ws.rowsum, Kokkos::ALL, ip);
    auto rowflux = Kokkos::subview(ws.rowflux, Kokkos::ALL, ip);
    const bool model = ws.model_flux.extent(0) > 0;
    // The last patch of a sub-bundle solves a whole core of nwavestep bins, some beyond the
    // frame's grid; gpu_specter's model image has their spots too (its last patch keeps only
    // the frame's bins of everything else).
    Kokkos::parallel_for(Kokkos::TeamThreadRange(member, model ? nwavestep : p.nkeep),
                         [&](int jcore) {
                           const int i = jcore + wavepad;
                           const double s = rowsum(i), fl = rowflux(i);
                           const bool constrained =
                               omega(unknowns(i)) > 1e-8 && math::isfinite(s) && math::isfinite(fl);
                           const double flux = constrained ? fl / s : 0.0;
                           if (model) ws.model_flux(f * nwavestep + jcore, ip) = flux;
                           if (jcore >= p.nkeep) return;
                           out.flux(ip, f, jcore) = flux;
                           out.ivar(ip, f, jcore) = constrained ? s * s : 0.0;
                           for (int d = 0; d <= 2 * ndiag; ++d) {
                             const double rr = band(d, jcore) / rowsum(i - ndiag + d);
                             out.rdiags(ip, f, d, jcore) = math::isfinite(rr) ? rr : 0.0;
                           }
                         });
  }

  // Model A·φ on the window, chi2 per pixel, then chi2pix and pixmask_fraction of the kept
  // core bins (gpu_specter's CPU definitions).
  template <class PV>
  KOKKOS_INLINE_FUNCTION void chi2_and_pixmask(const Member& member, const PatchDesc& p,
                                               const PV& phi) const {
    const int ip = member.league_rank();
    const int nrow = static_cast<int>(spots.extent(2)), ncol = static_cast<int>(spots.extent(3));
    const int wrows = p.row1 - p.row0, wcols = p.col1 - p.col0, npix = wrows * wcols;
    auto pm = Kokkos::subview(ws.pixmodel, Kokkos::make_pair(0, npix), ip);
    auto pt = Kokkos::subview(ws.pixtest, Kokkos::make_pair(0, npix), ip);
    // Each thread owns a block of window rows and adds the spots covering them in increasing
    // unknown order: every pixel sums in the same order for any team shape, without atomics.
    const int nblocks = math::max(1, math::min(wrows, member.team_size()));
    const int block_rows = (wrows + nblocks - 1) / nblocks;
    Kokkos::parallel_for(Kokkos::TeamThreadRange(member, nblocks), [&](int blk) {
      const int row0 = p.row0 + blk * block_rows, row1 = math::min(p.row1, row0 + block_rows);
      Kokkos::parallel_for(Kokkos::ThreadVectorRange(member, (row1 - row0) * wcols),
                           [&](int q) { pm((row0 - p.row0) * wcols + q) = 0; });
      for (int kb = 0; kb < nwt; ++kb) {
        for (int sb = 0; sb < p.nfib; ++sb) {
          const int f = p.fib0 + sb, k = p.kf0 + kb;
          const int r0 = ycorner(f, k);
          const int rlo = math::max(row0, r0), rhi = math::min(row1, r0 + nrow);
          if (rlo >= rhi) continue;
          const int c0 = xcorner(f, k);
          const double a = phi(kb * p.nfib + sb);
          const double* spot = &spots(f, k, 0, 0);
          const int clo = math::max(p.col0, c0), chi = math::min(p.col1, c0 + ncol);
          for (int row = rlo; row < rhi; ++row) {
            double* m = &pm((row - p.row0) * wcols);
            const double* sr = spot + (row - r0) * ncol;
            Kokkos::parallel_for(Kokkos::ThreadVectorRange(member, clo, chi),
                                 [&](int col) { m[col - p.col0] += a * sr[col - c0]; });
          }
        }
      }
    });
    member.team_barrier();
    Kokkos::parallel_for(Kokkos::TeamThreadRange(member, wrows), [&](int r) {
      Kokkos::parallel_for(Kokkos::ThreadVectorRange(member, wcols), [&](int c) {
        const int q = r * wcols + c;
        const double w = image.weight(p.row0 + r, p.col0 + c), m = pm(q);
        const double vmodel = (psferr * m + 1e-32) * (psferr * m + 1e-32);
        const double t = w > 0 ? 1.0 / (vmodel + 1.0 / w) : 0.0;
        const double resid = image.value(p.row0 + r, p.col0 + c) - m;
        pm(q) = resid * resid * t;
        pt(q) = t > 0 ? 1.0 : 0.0;
      });
    });
    member.team_barrier();
    Kokkos::parallel_for(Kokkos::TeamThreadRange(member, p.nkeepfib * p.nkeep), [&](int idx) {
      const int f = idx / p.nkeep, jcore = idx % p.nkeep;
      const int fl = p.fib0 + p.keep0 + f, k = p.kf0 + wavepad + jcore;
      const int c0 = xcorner(fl, k), r0 = ycorner(fl, k);
      const int rlo = math::max(0, p.row0 - r0), rhi = math::min(nrow, p.row1 - r0);
      const double* spot = &spots(fl, k, 0, 0);
      const int clo = math::max(0, p.col0 - c0), chi = math::min(ncol, p.col1 - c0);
      Chi2Sums sums;
      for (int r = rlo; r < rhi; ++r) {
        Chi2Sums row;
        Kokkos::parallel_reduce(
            Kokkos::ThreadVectorRange(member, clo, chi),
            [&](int c, Chi2Sums& acc) {
              const int q = (r0 + r - p.row0) * wcols + (c0 + c - p.col0);
              const double a = spot[r * ncol + c];
              acc.chi += a * pm(q);
              acc.norm += a * pt(q);
              acc.masked += image.weight(r0 + r, c0 + c) == 0 ? a : 0.0;
            },
            row);
        sums += row;
      }
      Kokkos::single(Kokkos::PerThread(member), [&]() {
        out.chi2pix(ip, f, jcore) = sums.norm > 0 ? sums.chi / sums.norm : 0.0;
        out.pixmask(ip, f, jcore) = sums.masked;
      });
    });
  }

  // The patch's block of the model image (gpu_specter's A·(R f), added into the image by
  // fold_model_blocks): the spots of its kept fibres' nwavestep core bins times their
  // reconvolved flux, on its pixel window. Threads over the window's rows, vector lanes over a
  // spot's columns; each pixel sums its spots in one order (fibre, then wavelength), so the
  // block is the same for every team shape.
  KOKKOS_INLINE_FUNCTION void model_block(const Member& member, const PatchDesc& p) const {
    const int ip = member.league_rank();
    const int nrow = static_cast<int>(spots.extent(2)), ncol = static_cast<int>(spots.extent(3));
    const int wcols = p.col1 - p.col0;
    Kokkos::parallel_for(Kokkos::TeamThreadRange(member, p.row1 - p.row0), [&](int r) {
      double* block = &ws.model_block(r * wcols, ip);
      Kokkos::parallel_for(Kokkos::ThreadVectorRange(member, wcols), [&](int c) { block[c] = 0; });
      for (int f = 0; f < p.nkeepfib; ++f) {
        const int fl = p.fib0 + p.keep0 + f;
        for (int jcore = 0; jcore < nwavestep; ++jcore) {
          const int k = p.kf0 + wavepad + jcore;
          const int sr = p.row0 + r - ycorner(fl, k), c0 = xcorner(fl, k);
          if (sr < 0 || sr >= nrow) continue;
          const double a = ws.model_flux(f * nwavestep + jcore, ip);
          const double* spot = &spots(fl, k, sr, 0);
          Kokkos::parallel_for(Kokkos::ThreadVectorRange(member, math::max(0, p.col0 - c0),
                                                         math::min(ncol, p.col1 - c0)),
                               [&](int c) { block[c0 + c - p.col0] += a * spot[c]; });
        }
      }
    });
  }

  // A failed patch's bins: every result 0.
  KOKKOS_INLINE_FUNCTION void zero_results(const Member& member, const PatchDesc& p, int ip) const {
    Kokkos::parallel_for(Kokkos::TeamThreadRange(member, p.nkeepfib * p.nkeep), [&](int idx) {
      const int f = idx / p.nkeep, k = idx % p.nkeep;
      out.flux(ip, f, k) = out.ivar(ip, f, k) = out.chi2pix(ip, f, k) = out.pixmask(ip, f, k) = 0;
      for (int d = 0; d <= 2 * ndiag; ++d) out.rdiags(ip, f, d, k) = 0;
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
