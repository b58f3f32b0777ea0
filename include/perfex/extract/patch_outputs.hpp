#pragma once
// The outputs of a solved patch (PatchSolver's last phase): chi2pix and pixmask_fraction of its
// kept bins, its share of the model image, or zeros for a patch that failed. Solver is a
// PatchSolver (its spots, corners, image, workspace and results).
#include <perfex/detail/kokkos_compat.hpp>
#include <perfex/extract/model_image.hpp>
#include <perfex/extract/patches.hpp>

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

// Model A·φ on the window (the patch's block of specter's model image, ModelFold::overwrite),
// chi2 per pixel, then chi2pix and pixmask_fraction of the kept core bins (gpu_specter's CPU
// definitions, which are specter's).
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
  const bool fit_block =
      solver.ws.geometry.model_image && solver.ws.geometry.model_fold == ModelFold::overwrite;
  Kokkos::parallel_for(Kokkos::TeamThreadRange(member, wrows), [&](int r) {
    Kokkos::parallel_for(Kokkos::ThreadVectorRange(member, wcols), [&](int c) {
      const int q = r * wcols + c;
      const double w = solver.image.weight(p.row0 + r, p.col0 + c), m = pm(q);
      if (fit_block) solver.ws.model_block(q, ip) = m;
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

// The patch's block of gpu_specter's model image (A·(R f), ModelFold::sum): the spots of its kept
// fibres' nwavestep core bins times their reconvolved flux, on its pixel window. Threads over the
// window's rows, vector lanes over a spot's columns; each pixel sums its spots in one order (fibre,
// then wavelength), so the block is the same for every team shape.
template <class Solver, class Member>
KOKKOS_INLINE_FUNCTION void model_block(const Member& member, const Solver& solver,
                                        const PatchDesc& p) {
  const int ip = member.league_rank();
  const int nrow = static_cast<int>(solver.spots.extent(2)),
            ncol = static_cast<int>(solver.spots.extent(3));
  const int wcols = p.col1 - p.col0, nwavestep = solver.nwavestep;
  Kokkos::parallel_for(Kokkos::TeamThreadRange(member, p.row1 - p.row0), [&](int r) {
    double* block = &solver.ws.model_block(r * wcols, ip);
    Kokkos::parallel_for(Kokkos::ThreadVectorRange(member, wcols), [&](int c) { block[c] = 0; });
    for (int f = 0; f < p.nkeepfib; ++f) {
      const int fl = p.fib0 + p.keep0 + f;
      for (int jcore = 0; jcore < nwavestep; ++jcore) {
        const int k = p.kf0 + solver.wavepad + jcore;
        const int sr = p.row0 + r - solver.ycorner(fl, k), c0 = solver.xcorner(fl, k);
        if (sr < 0 || sr >= nrow) continue;
        const double a = solver.ws.model_flux(f * nwavestep + jcore, ip);
        const double* spot = &solver.spots(fl, k, sr, 0);
        Kokkos::parallel_for(Kokkos::ThreadVectorRange(member, math::max(0, p.col0 - c0),
                                                       math::min(ncol, p.col1 - c0)),
                             [&](int c) { block[c0 + c - p.col0] += a * spot[c]; });
      }
    }
  });
}

// Whether the PSF gives light to any of the patch's unknowns: a spot with a non-zero value,
// wherever it falls (off the CCD is no light on the pixels, but light: those bins are NODATA).
// A count of the lit unknowns (a sum, whose identity is 0).
template <class Solver, class Member>
KOKKOS_INLINE_FUNCTION bool has_light(const Member& member, const Solver& solver,
                                      const PatchDesc& p) {
  const int spot_size = static_cast<int>(solver.spots.extent(2) * solver.spots.extent(3));
  int lit = 0;
  Kokkos::parallel_reduce(
      Kokkos::TeamThreadRange(member, p.nfib * solver.nwt),
      [&](int u, int& count) {
        const double* spot = &solver.spots(p.fib0 + u % p.nfib, p.kf0 + u / p.nfib, 0, 0);
        bool any = false;
        for (int i = 0; i < spot_size && !any; ++i) any = spot[i] != 0;
        count += any ? 1 : 0;
      },
      lit);
  return lit != 0;
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
  if (solver.ws.model_block.extent(0) > 0)  // a failed patch adds nothing to the model image
    Kokkos::parallel_for(Kokkos::TeamThreadRange(member, static_cast<int>(model_block_size(p))),
                         [&](int i) { solver.ws.model_block(i, ip) = 0; });
}

}  // namespace patch
}  // namespace extract
}  // namespace perfex
