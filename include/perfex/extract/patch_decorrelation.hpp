#pragma once
// The decorrelation of a patch (PatchSolver's phase after the band factor and φ̂): per fibre
// ("signal", from blocks of H⁻¹) or over the patch ("noise", H^1/2), then each kept fibre's flux,
// ivar and resolution diagonals. Solver is a PatchSolver (its workspace, results and policy).
#include <perfex/detail/kokkos_compat.hpp>
#include <perfex/extract/patch_geometry.hpp>
#include <perfex/extract/patch_outputs.hpp>
#include <perfex/extract/patches.hpp>
#include <perfex/linalg/band_cholesky.hpp>
#include <perfex/linalg/eigen.hpp>
#include <perfex/linalg/status.hpp>

namespace perfex {
namespace extract {
namespace patch {

// (2 ndiag + 1) x nkeep entries of Q_f around the diagonal of the core columns, in ws.V: the
// signal variant's band buffer, the noise variant's eigenvector scratch (free once Q is).
template <class Solver>
KOKKOS_INLINE_FUNCTION auto resolution_band(const Solver& solver, const PatchDesc& p, int ip) {
  return Kokkos::subview(solver.ws.V, Kokkos::make_pair(0, 2 * solver.ndiag + 1),
                         Kokkos::make_pair(0, p.nkeep), ip);
}

// Kept fibre f from its rows of Q (row sums in ws.rowsum, Q phi in ws.rowflux, the band from
// resolution_band): R = Q / rowsum, flux = R phi, ivar = rowsum^2, resolution diagonals
// R_f[j-nd+d][j] of the core columns. Bins no pixel constrains (omega ~ 0) get ivar 0, as
// specter does.
template <class Solver, class Member, class OV>
KOKKOS_INLINE_FUNCTION void store_fibre(const Member& member, const Solver& solver,
                                        const PatchDesc& p, int f, const Strided unknowns,
                                        const OV& omega) {
  const int ip = member.league_rank();
  auto band = resolution_band(solver, p, ip);
  auto rowsum = Kokkos::subview(solver.ws.rowsum, Kokkos::ALL, ip);
  auto rowflux = Kokkos::subview(solver.ws.rowflux, Kokkos::ALL, ip);
  // The last patch of a sub-bundle solves a whole core of nwavestep bins, some beyond the
  // frame's grid; gpu_specter's model image has their spots too (its last patch keeps only
  // the frame's bins of everything else).
  const bool model = solver.ws.model_flux.extent(0) > 0;
  Kokkos::parallel_for(Kokkos::TeamThreadRange(member, model ? solver.nwavestep : p.nkeep),
                       [&](int jcore) {
                         const int i = jcore + solver.wavepad;
                         const double s = rowsum(i), fl = rowflux(i);
                         const bool constrained =
                             omega(unknowns(i)) > 1e-8 && math::isfinite(s) && math::isfinite(fl);
                         const double flux = constrained ? fl / s : 0.0;
                         if (model) solver.ws.model_flux(f * solver.nwavestep + jcore, ip) = flux;
                         if (jcore >= p.nkeep) return;
                         solver.out.flux(ip, f, jcore) = flux;
                         solver.out.ivar(ip, f, jcore) = constrained ? s * s : 0.0;
                         for (int d = 0; d <= 2 * solver.ndiag; ++d) {
                           const double rr = band(d, jcore) / rowsum(i - solver.ndiag + d);
                           solver.out.rdiags(ip, f, d, jcore) = math::isfinite(rr) ? rr : 0.0;
                         }
                       });
}

// Per-fibre ("signal") decorrelation of the kept fibres: Q_f = C_ff^(-1/2), where C_ff is
// the fibre's block of H^-1 (rows/columns keep0 + f + k * nfib). Q_f is never formed: with
// C_ff = V diag(mu) V^T and W = V diag(mu^-1/4) (mu clipped), Q_f = W W^T, so the row sums
// and Q_f phi are W (W^T x) and the resolution band needs only dot products of W's rows
// around the diagonal: O(n^2 ndiag) instead of the n^3 of the composition.
template <class Solver, class Member, class LV, class TV, class PV, class OV>
KOKKOS_INLINE_FUNCTION int decorrelate_blocks(const Member& member, const Solver& solver,
                                              const PatchDesc& p, const LV& L, const TV& tail,
                                              int twist, const PV& phi, const OV& omega) {
  const int ip = member.league_rank();
  auto V = Kokkos::subview(solver.ws.cblock, Kokkos::ALL, Kokkos::ALL, ip);
  auto work = Kokkos::subview(solver.ws.blockwork, Kokkos::make_pair(0, p.nfib * solver.nwt),
                              Kokkos::ALL, ip);
  auto w = Kokkos::subview(solver.ws.eigval, Kokkos::ALL, ip);
  auto ework = Kokkos::subview(solver.ws.eigwork, Kokkos::ALL, ip);
  auto band = resolution_band(solver, p, ip);
  auto rowsum = Kokkos::subview(solver.ws.rowsum, Kokkos::ALL, ip);
  auto rowflux = Kokkos::subview(solver.ws.rowflux, Kokkos::ALL, ip);
  const bool seq = linalg::detail::sequential_team(member);
  // Contiguous length-nwt dot products: unrolled on one host thread, over vector lanes else.
  auto dot = [&](const double* x, const double* y) {
    double s = 0;
    if (seq)
      s = linalg::detail::dot<true>(solver.nwt, x, y, 1, 1);
    else
      Kokkos::parallel_reduce(
          Kokkos::ThreadVectorRange(member, solver.nwt),
          [&](int i, double& acc) { acc += x[i] * y[i]; }, s);
    return s;
  };
  // syev's work is free once it returns: 1, the fibre's phi, then W^T 1 and W^T phi.
  double* ones = ework.data();
  double* phif = ones + solver.nwt;
  double* u1 = phif + solver.nwt;
  double* uphi = u1 + solver.nwt;
  const long ldv = static_cast<long>(V.stride(1)), ldw = static_cast<long>(work.stride(1));
  for (int f = 0; f < p.nkeepfib; ++f) {
    const Strided unknowns{p.keep0 + f, p.nfib};
    linalg::team_band_cholesky_inverse_strided_block(member, L, tail, twist, unknowns.first,
                                                     unknowns.step, solver.nwt, V, work);
    int st = linalg::team_syev(member, V, w, ework);
    if (st == linalg::ok && !(w(solver.nwt - 1) > 0)) st = linalg::not_positive_definite;
    if (st != linalg::ok) return st;
    const double floor_mu = solver.eigen_clip * w(solver.nwt - 1);
    Kokkos::parallel_for(Kokkos::TeamVectorRange(member, solver.nwt), [&](int i) {
      ones[i] = 1.0;
      phif[i] = phi(unknowns(i));
    });
    member.team_barrier();
    // Row k of W^T (column i of work holds row i of W, contiguous) and W^T 1, W^T phi.
    Kokkos::parallel_for(Kokkos::TeamThreadRange(member, solver.nwt), [&](int k) {
      const double g = 1.0 / math::sqrt(math::sqrt(linalg::clip_eigenvalue(w(k), floor_mu)));
      const double* vk = V.data() + k * ldv;
      Kokkos::parallel_for(Kokkos::ThreadVectorRange(member, solver.nwt),
                           [&](int i) { work(k, i) = vk[i] * g; });
      const double s = dot(vk, ones), sp = dot(vk, phif);
      Kokkos::single(Kokkos::PerThread(member), [&]() {
        u1[k] = g * s;
        uphi[k] = g * sp;
      });
    });
    member.team_barrier();
    auto wrow = [&](int i) { return work.data() + i * ldw; };
    Kokkos::parallel_for(Kokkos::TeamThreadRange(member, solver.nwt), [&](int i) {
      const double s = dot(wrow(i), u1), fl = dot(wrow(i), uphi);
      Kokkos::single(Kokkos::PerThread(member), [&]() {
        rowsum(i) = s;
        rowflux(i) = fl;
      });
    });
    // Band entries Q_f(j - ndiag + d, j) of the core columns j.
    const int nd = 2 * solver.ndiag + 1;
    Kokkos::parallel_for(Kokkos::TeamThreadRange(member, p.nkeep * nd), [&](int idx) {
      const int jcore = idx / nd, d = idx - jcore * nd, j = jcore + solver.wavepad;
      const double q = dot(wrow(j - solver.ndiag + d), wrow(j));
      Kokkos::single(Kokkos::PerThread(member), [&]() { band(d, jcore) = q; });
    });
    member.team_barrier();
    store_fibre(member, solver, p, f, unknowns, omega);
    member.team_barrier();
  }
  return linalg::ok;
}

// Full ("noise") decorrelation: Q = H^(1/2); R rows of the kept fibres.
template <class Solver, class Member, class PV, class OV>
KOKKOS_INLINE_FUNCTION int decorrelate_full(const Member& member, const Solver& solver,
                                            const PatchDesc& p, int n, const PV& phi,
                                            const OV& omega) {
  const int ip = member.league_rank();
  auto Q = Kokkos::subview(solver.ws.Hsym, Kokkos::make_pair(0, n), Kokkos::make_pair(0, n), ip);
  auto V = Kokkos::subview(solver.ws.V, Kokkos::make_pair(0, n), Kokkos::make_pair(0, n), ip);
  auto w = Kokkos::subview(solver.ws.eigval, Kokkos::make_pair(0, n), ip);
  auto ework = Kokkos::subview(solver.ws.eigwork, Kokkos::ALL, ip);
  const int status = linalg::team_sqrt(member, Q, V, w, ework, solver.eigen_clip);
  if (status != linalg::ok) return status;
  member.team_barrier();
  auto band = resolution_band(solver, p, ip);  // in V's memory, free again
  auto rowsum = Kokkos::subview(solver.ws.rowsum, Kokkos::ALL, ip);
  auto rowflux = Kokkos::subview(solver.ws.rowflux, Kokkos::ALL, ip);
  for (int f = 0; f < p.nkeepfib; ++f) {
    // The fibre's rows and columns of Q are its unknowns.
    const Strided unknowns{p.keep0 + f, p.nfib};
    Kokkos::parallel_for(Kokkos::TeamThreadRange(member, solver.nwt), [&](int i) {
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
      const int j = jcore + solver.wavepad;
      for (int d = 0; d <= 2 * solver.ndiag; ++d)
        band(d, jcore) = Q(unknowns(j - solver.ndiag + d), unknowns(j));
    });
    member.team_barrier();
    store_fibre(member, solver, p, f, unknowns, omega);
    member.team_barrier();
  }
  return linalg::ok;
}

}  // namespace patch
}  // namespace extract
}  // namespace perfex
