#pragma once
// The outputs of a solved patch (PatchSolver's last phase): chi2pix and pixmask_fraction of its
// kept bins, its share of the model image, or zeros for a patch that failed. Solver is a
// PatchSolver (its spots, corners, image, workspace, results and model).
#include <perfex/detail/kokkos_compat.hpp>
#include <perfex/extract/plan.hpp>

namespace perfex {
namespace extract {
namespace patch {

// Sums of a vector reduction over a spot's pixels (Kokkos reduces any type with +=).
struct Chi2Sums {  // Σ S χ², Σ S over counted pixels, Σ S over masked pixels
  double chi = 0, norm = 0, masked = 0;
  KOKKOS_INLINE_FUNCTION Chi2Sums& operator+=(const Chi2Sums& o) {
    chi += o.chi;
    norm += o.norm;
    masked += o.masked;
    return *this;
  }
};

// Model A·φ on the window, chi2 per pixel, then chi2pix and pixmask_fraction of the kept
// core bins (gpu_specter's CPU definitions).
template <class Solver, class Member, class PV>
KOKKOS_INLINE_FUNCTION void chi2_and_pixmask(const Member& member, const Solver& solver,
                                             const PatchDesc& p, const PV& phi) {
  const int ip = member.league_rank();
  const int nrow = static_cast<int>(solver.spots.extent(2)),
            ncol = static_cast<int>(solver.spots.extent(3));
  const int wrows = p.row1 - p.row0, wcols = p.col1 - p.col0, npix = wrows * wcols;
  auto pm = Kokkos::subview(solver.ws.pixmodel, Kokkos::make_pair(0, npix), ip);
  auto pt = Kokkos::subview(solver.ws.pixtest, Kokkos::make_pair(0, npix), ip);
  // Each thread owns a block of window rows and adds the spots covering them in increasing
  // unknown order: every pixel sums in the same order for any team shape, without atomics.
  const int nblocks = math::max(1, math::min(wrows, member.team_size()));
  const int block_rows = (wrows + nblocks - 1) / nblocks;
  Kokkos::parallel_for(Kokkos::TeamThreadRange(member, nblocks), [&](int blk) {
    const int row0 = p.row0 + blk * block_rows, row1 = math::min(p.row1, row0 + block_rows);
    Kokkos::parallel_for(Kokkos::ThreadVectorRange(member, (row1 - row0) * wcols),
                         [&](int q) { pm((row0 - p.row0) * wcols + q) = 0; });
    for (int kb = 0; kb < solver.nwt; ++kb) {
      for (int sb = 0; sb < p.nfib; ++sb) {
        const int f = p.fib0 + sb, k = p.kf0 + kb;
        const int r0 = solver.ycorner(f, k);
        const int rlo = math::max(row0, r0), rhi = math::min(row1, r0 + nrow);
        if (rlo >= rhi) continue;
        const int c0 = solver.xcorner(f, k);
        const double a = phi(kb * p.nfib + sb);
        const double* spot = &solver.spots(f, k, 0, 0);
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
      const double w = solver.image.weight(p.row0 + r, p.col0 + c), m = pm(q);
      const double vmodel = (solver.psferr * m + 1e-32) * (solver.psferr * m + 1e-32);
      const double t = w > 0 ? 1.0 / (vmodel + 1.0 / w) : 0.0;
      const double resid = solver.image.value(p.row0 + r, p.col0 + c) - m;
      pm(q) = resid * resid * t;
      pt(q) = t > 0 ? 1.0 : 0.0;
    });
  });
  member.team_barrier();
  Kokkos::parallel_for(Kokkos::TeamThreadRange(member, p.nkeepfib * p.nkeep), [&](int idx) {
    const int f = idx / p.nkeep, jcore = idx % p.nkeep;
    const int fl = p.fib0 + p.keep0 + f, k = p.kf0 + solver.wavepad + jcore;
    const int c0 = solver.xcorner(fl, k), r0 = solver.ycorner(fl, k);
    const int rlo = math::max(0, p.row0 - r0), rhi = math::min(nrow, p.row1 - r0);
    const double* spot = &solver.spots(fl, k, 0, 0);
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
            acc.masked += solver.image.weight(r0 + r, c0 + c) == 0 ? a : 0.0;
          },
          row);
      sums += row;
    }
    Kokkos::single(Kokkos::PerThread(member), [&]() {
      solver.out.chi2pix(ip, f, jcore) = sums.norm > 0 ? sums.chi / sums.norm : 0.0;
      solver.out.pixmask(ip, f, jcore) = sums.masked;
    });
  });
}

// a times the spot of fibre fl at padded wavelength k, within the patch's window, into the
// model image (by one thread of the team, over its vector lanes).
template <class Solver, class Member>
KOKKOS_INLINE_FUNCTION void add_spot(const Member& member, const Solver& solver, const PatchDesc& p,
                                     int fl, int k, double a) {
  const int nrow = static_cast<int>(solver.spots.extent(2)),
            ncol = static_cast<int>(solver.spots.extent(3));
  const int c0 = solver.xcorner(fl, k), r0 = solver.ycorner(fl, k);
  const int rlo = math::max(0, p.row0 - r0), rhi = math::min(nrow, p.row1 - r0);
  const int clo = math::max(0, p.col0 - c0), chi = math::min(ncol, p.col1 - c0);
  const double* spot = &solver.spots(fl, k, 0, 0);
  for (int r = rlo; r < rhi; ++r) {
    Kokkos::parallel_for(Kokkos::ThreadVectorRange(member, clo, chi), [&](int c) {
      Kokkos::atomic_add(&solver.model(r0 + r, c0 + c), a * spot[r * ncol + c]);
    });
  }
}

// Model image: core columns of A times the reconvolved core flux (gpu_specter). Patches
// overlap on the CCD, so their teams add with atomics: the model's last bits depend on the
// order the patches run in (flux, ivar, chi2pix and the rest do not).
template <class Solver, class Member>
KOKKOS_INLINE_FUNCTION void add_model(const Member& member, const Solver& solver,
                                      const PatchDesc& p) {
  const int ip = member.league_rank();
  Kokkos::parallel_for(Kokkos::TeamThreadRange(member, p.nkeepfib * p.nkeep), [&](int idx) {
    const int f = idx / p.nkeep, jcore = idx % p.nkeep;
    add_spot(member, solver, p, p.fib0 + p.keep0 + f, p.kf0 + solver.wavepad + jcore,
             solver.out.flux(ip, f, jcore));
  });
}

// A failed patch's bins: every result 0.
template <class Solver, class Member>
KOKKOS_INLINE_FUNCTION void zero_results(const Member& member, const Solver& solver,
                                         const PatchDesc& p, int ip) {
  Kokkos::parallel_for(Kokkos::TeamThreadRange(member, p.nkeepfib * p.nkeep), [&](int idx) {
    const int f = idx / p.nkeep, k = idx % p.nkeep;
    solver.out.flux(ip, f, k) = solver.out.ivar(ip, f, k) = solver.out.chi2pix(ip, f, k) =
        solver.out.pixmask(ip, f, k) = 0;
    for (int d = 0; d <= 2 * solver.ndiag; ++d) solver.out.rdiags(ip, f, d, k) = 0;
  });
}

}  // namespace patch
}  // namespace extract
}  // namespace perfex
