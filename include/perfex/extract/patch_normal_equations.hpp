#pragma once
// The normal equations of a patch (PatchSolver's first phase): the ivar-weighted spots inside
// the pixel window, b = AᵀW d, ω = AᵀW 1 and the band of H0 = AᵀWA, straight from the spots
// (never a dense A). One function, normal_equations, that the solver, the tests and the
// benchmarks call; Solver is a PatchSolver (its spots, corners, image and workspace).
#include <perfex/detail/kokkos_compat.hpp>
#include <perfex/extract/patch_geometry.hpp>
#include <perfex/extract/plan.hpp>

#include <cstddef>

namespace perfex {
namespace extract {
namespace patch {

// Sums of a vector reduction over a spot's pixels (Kokkos reduces any type with +=).
struct RhsSums {  // b_J = Σ w S d and ω_J = Σ w S
  double b = 0, omega = 0;
  KOKKOS_INLINE_FUNCTION RhsSums& operator+=(const RhsSums& o) {
    b += o.b;
    omega += o.omega;
    return *this;
  }
};
// w_P·S_J[P] on each spot's pixels inside the window (the only ones normal_matrix reads), and
// b_J = Σ w S d, ω_J = Σ w S. Threads over the unknowns, vector lanes over a spot's columns.
template <class Solver, class Member, class BV, class OV>
KOKKOS_INLINE_FUNCTION void weigh_spots(const Member& member, const Solver& solver,
                                        const PatchDesc& p, int n, const BV& b, const OV& omega) {
  const int nrow = static_cast<int>(solver.spots.extent(2)),
            ncol = static_cast<int>(solver.spots.extent(3));
  const int ip = member.league_rank();
  const PatchUnknowns u(p);
  Kokkos::parallel_for(Kokkos::TeamThreadRange(member, n), [&](int j) {
    const int f = u.fibre(j), k = u.wave(j);
    const int c0 = solver.xcorner(f, k), r0 = solver.ycorner(f, k);
    const int rlo = math::max(0, p.row0 - r0), rhi = math::min(nrow, p.row1 - r0);
    const int clo = math::max(0, p.col0 - c0), chi = math::min(ncol, p.col1 - c0);
    const double* spot = &solver.spots(f, k, 0, 0);
    double* wspot = &solver.ws.wspot(static_cast<std::size_t>(j) * nrow * ncol, ip);
    RhsSums sums;
    for (int r = rlo; r < rhi; ++r) {  // row by row: the image is read along its rows
      RhsSums row;
      Kokkos::parallel_reduce(
          Kokkos::ThreadVectorRange(member, clo, chi),
          [&](int c, RhsSums& acc) {
            const double w = solver.image.weight(r0 + r, c0 + c) * spot[r * ncol + c];
            wspot[r * ncol + c] = w;
            acc.b += w * solver.image.value(r0 + r, c0 + c);
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
KOKKOS_INLINE_FUNCTION double overlap_product(const double* w, const double* s, int shift, int ncol,
                                              int rlo, int rhi, int clo, int chi) {
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
template <class Solver, class Member, class HV>
KOKKOS_INLINE_FUNCTION void normal_matrix(const Member& member, const Solver& solver,
                                          const PatchDesc& p, int n, const HV& H) {
  const int nrow = static_cast<int>(solver.spots.extent(2)),
            ncol = static_cast<int>(solver.spots.extent(3));
  const int ip = member.league_rank();
  const PatchUnknowns u(p);
  Kokkos::parallel_for(Kokkos::TeamThreadRange(member, n), [&](int jc) {
    const int fc = u.fibre(jc), kc = u.wave(jc);
    const int c0 = solver.xcorner(fc, kc), r0 = solver.ycorner(fc, kc);
    // Spot jc's pixels inside the window, in its box coordinates.
    const int wr0 = math::max(0, p.row0 - r0), wr1 = math::min(nrow, p.row1 - r0);
    const int wc0 = math::max(0, p.col0 - c0), wc1 = math::min(ncol, p.col1 - c0);
    const double* wspot = &solver.ws.wspot(static_cast<std::size_t>(jc) * nrow * ncol, ip);
    const int nband = math::min(n - 1 - jc, p.band) + 1;
    Kokkos::parallel_for(Kokkos::ThreadVectorRange(member, nband), [&](int d) {
      const int fr = u.fibre(jc + d), kr = u.wave(jc + d);
      const int dc = solver.xcorner(fr, kr) - c0,
                dr = solver.ycorner(fr, kr) - r0;  // spot jc+d in box jc
      const int rlo = math::max(wr0, dr), rhi = math::min(wr1, nrow + dr);
      const int clo = math::max(wc0, dc), chi = math::min(wc1, ncol + dc);
      H(d, jc) = overlap_product(wspot, &solver.spots(fr, kr, 0, 0), dr * ncol + dc, ncol, rlo, rhi,
                                 clo, chi);
    });
  });
}

// Patch ip's normal equations into its scratch: the weighted spots, b, ω, then the band of
// H0 = AᵀWA (the solver's first steps; the benchmarks and tests also run them alone).
template <class Solver, class Member>
KOKKOS_INLINE_FUNCTION void normal_equations(const Member& member, const Solver& solver, int ip,
                                             const PatchDesc& p, int n) {
  weigh_spots(member, solver, p, n, Kokkos::subview(solver.ws.b, Kokkos::make_pair(0, n), ip),
              Kokkos::subview(solver.ws.omega, Kokkos::make_pair(0, n), ip));
  member.team_barrier();
  normal_matrix(
      member, solver, p, n,
      Kokkos::subview(solver.ws.H, Kokkos::make_pair(0, p.band + 1), Kokkos::make_pair(0, n), ip));
}

}  // namespace patch
}  // namespace extract
}  // namespace perfex
