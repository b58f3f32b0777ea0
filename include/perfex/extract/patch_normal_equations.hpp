#pragma once
// The normal equations of a patch (PatchSolver's first phase): the ivar-weighted spots inside
// the pixel window, b = AᵀW d, ω = AᵀW 1 and the band of H0 = AᵀWA, straight from the spots
// (never a dense A). One function, normal_equations, that the solver, the tests and the
// benchmarks call; Solver is a PatchSolver (its spots, corners, image and workspace).
#include <perfex/detail/kokkos_compat.hpp>
#include <perfex/extract/patch_geometry.hpp>
#include <perfex/extract/patches.hpp>
#include <perfex/linalg/gemm.hpp>

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

#ifdef PERFEX_HOST_TILES
// One host thread's normal equations by pixel rows of the window (normal_equations_by_rows:
// normal_matrix and weigh_spots do the same work a pair of spots at a time), in named steps.
// Spots rise with wavelength, so a pixel row meets a few consecutive spots of each fibre; their
// row segments side by side (a slot per spot, zero where a spot does not reach) make a small
// dense block per fibre (row_blocks), and every pair of fibres whose blocks share columns adds
// the product of the two blocks over those columns, one weighted, to its entries of H0
// (add_row_products): a register-tiled matrix product running over contiguous slots (gemm.hpp),
// into a buffer per pair of fibres laid out so that a row's product lands contiguously (column
// k2, entry k - k2 + kmax), copied into H's band at the end (to_band). Each entry adds its rows
// in order, each row's columns in order. Everything lives in the patch's wspot scratch.
template <class Solver>
struct RowSweep {
  static constexpr int L = linalg::detail::lanes;
  const Solver& solver;
  const PatchDesc& p;
  int nrow, ncol, nf, wcols, wrows;
  const int* ys;  // spot corners of the patch's fibres and wavelengths
  const int* xs;
  long cs, ks;  // their fibre and wavelength strides
  double* scratch;
  std::size_t capacity;
  // Per fibre: its spots [lo, hi) that reach the current row and their columns [c0, c1) in the
  // window; the slot of each pair of fibres (f, f2), f <= f2, or -1 where they never meet.
  double *lo, *hi, *c0, *c1, *slot;
  // The most spots of a fibre in a row; the largest wavelength distance between spots of two
  // fibres that share a row's columns; the pairs of fibres that ever do.
  int width = 0, kmax = 0, npairs = 0;
  int S = 0, ldg = 0;  // slots per block (a multiple of the lanes); a pair buffer's column
  double *E, *Wt, *G;  // per fibre its block (column c at E + c S), the weighted block; pairs

  KOKKOS_INLINE_FUNCTION RowSweep(const Solver& s, int ip, const PatchDesc& patch)
      : solver(s),
        p(patch),
        nrow(static_cast<int>(s.spots.extent(2))),
        ncol(static_cast<int>(s.spots.extent(3))),
        nf(patch.nfib),
        wcols(patch.col1 - patch.col0),
        wrows(patch.row1 - patch.row0),
        ys(&s.ycorner(patch.fib0, patch.kf0)),
        xs(&s.xcorner(patch.fib0, patch.kf0)),
        cs(static_cast<long>(&s.ycorner(patch.fib0 + (patch.nfib > 1), patch.kf0) - ys)),
        ks(static_cast<long>(&s.ycorner(patch.fib0, patch.kf0 + 1) - ys)),
        scratch(&s.ws.wspot(0, ip)),
        capacity(s.ws.wspot.extent(0)),
        lo(scratch),
        hi(lo + patch.nfib),
        c0(hi + patch.nfib),
        c1(c0 + patch.nfib),
        slot(c1 + patch.nfib) {}

  KOKKOS_INLINE_FUNCTION bool spots_rise() const {
    for (int f = 0; f < nf; ++f)
      for (int k = 0; k + 1 < solver.nwt; ++k)
        if (ys[f * cs + (k + 1) * ks] < ys[f * cs + k * ks]) return false;
    return true;
  }

  // Fibre f's spots and columns at window row r (rows only increase).
  KOKKOS_INLINE_FUNCTION void advance(int f, int r) {
    const int row = p.row0 + r;
    const int* y = ys + f * cs;
    const int* x = xs + f * cs;
    int l = static_cast<int>(lo[f]), h = static_cast<int>(hi[f]);
    while (l < solver.nwt && y[l * ks] + nrow <= row) ++l;
    if (h < l) h = l;
    while (h < solver.nwt && y[h * ks] <= row) ++h;
    int a = p.col1, e = p.col0;
    for (int k = l; k < h; ++k) {
      a = math::min(a, x[k * ks]);
      e = math::max(e, x[k * ks] + ncol);
    }
    a = math::max(a, p.col0);
    lo[f] = l;
    hi[f] = h;
    c0[f] = a;
    c1[f] = math::max(math::min(e, p.col1), a);
  }

  // First sweep: width, kmax and the pairs' slots.
  KOKKOS_INLINE_FUNCTION void find_pairs() {
    for (int f = 0; f < nf; ++f) lo[f] = hi[f] = 0;
    for (int i = 0; i < nf * nf; ++i) slot[i] = -1;
    for (int r = 0; r < wrows; ++r) {
      for (int f = 0; f < nf; ++f) advance(f, r);
      for (int f2 = 0; f2 < nf; ++f2) {
        if (lo[f2] >= hi[f2]) continue;
        width = math::max(width, static_cast<int>(hi[f2] - lo[f2]));
        for (int f = 0; f <= f2; ++f) {
          if (lo[f] >= hi[f] || math::max(c0[f], c0[f2]) >= math::min(c1[f], c1[f2])) continue;
          kmax = math::max(kmax, static_cast<int>(math::max(hi[f] - lo[f2], hi[f2] - lo[f])) - 1);
          if (slot[f * nf + f2] < 0) slot[f * nf + f2] = npairs++;
        }
      }
    }
  }

  // The blocks and the pairs' buffers after the per-fibre state; false where they do not fit.
  // A pair's buffer: column k2 holds k - k2 + kmax at rows [0, 2 kmax], and the rows a product
  // tile rounds up to the lanes, which are zero, fit below them without reaching the next
  // column's.
  KOKKOS_INLINE_FUNCTION bool lay_out() {
    S = (width + L - 1) / L * L;
    ldg = 2 * kmax + L;
    E = slot + nf * nf;
    Wt = E + static_cast<std::size_t>(nf) * wcols * S;
    G = Wt + static_cast<std::size_t>(nf) * wcols * S;
    const std::size_t gsize = static_cast<std::size_t>(npairs) * solver.nwt * ldg;
    if (static_cast<std::size_t>(G - scratch) + gsize > capacity) return false;
    for (std::size_t i = 0; i < gsize; ++i) G[i] = 0;
    for (int f = 0; f < nf; ++f) lo[f] = hi[f] = 0;
    return true;
  }

  // Fibre f's block at window row r, its weighted block, and the row's part of b and ω: its
  // columns in order.
  template <class BV, class OV>
  KOKKOS_INLINE_FUNCTION void row_blocks(int f, int r, const BV& b, const OV& omega) const {
    namespace ld = linalg::detail;
    const int row = p.row0 + r;
    const int l = static_cast<int>(lo[f]), h = static_cast<int>(hi[f]);
    const int a = static_cast<int>(c0[f]), w = static_cast<int>(c1[f]) - a;
    double* e = E + static_cast<std::size_t>(f) * wcols * S;
    double* wt = Wt + static_cast<std::size_t>(f) * wcols * S;
    for (int q = 0; q < w * S; q += L) ld::store_lanes(e + q, ld::lane_vector{});
    for (int s = 0; s < h - l; ++s) {
      const int k = l + s, x = xs[f * cs + k * ks];
      const int from = math::max(a, x), to = math::min(a + w, x + ncol);
      const double* src = &solver.spots(p.fib0 + f, p.kf0 + k, row - ys[f * cs + k * ks], 0) - x;
      double* dst = e + s - static_cast<long>(a) * S;
      for (int c = from; c < to; ++c) dst[c * S] = src[c];
    }
    for (int s0 = 0; s0 < h - l; s0 += L) {
      ld::lane_vector rb = {}, ro = {}, ws_;
      for (int c = 0; c < w; ++c) {
        const double pw = solver.image.weight(row, a + c), pv = solver.image.value(row, a + c);
        ld::load_lanes(ws_, e + c * S + s0);
        ws_ *= pw;
        ld::store_lanes(wt + c * S + s0, ws_);
        rb += ws_ * pv;
        ro += ws_;
      }
      for (int s = 0; s < L && s0 + s < h - l; ++s) {
        const int j = (l + s0 + s) * nf + f;
        b(j) += rb[s];
        omega(j) += ro[s];
      }
    }
  }

  // The current row's product of each pair of fibres' blocks into the pair's buffer.
  KOKKOS_INLINE_FUNCTION void add_row_products() const {
    namespace ld = linalg::detail;
    for (int f2 = 0; f2 < nf; ++f2)
      for (int f = 0; f <= f2; ++f) {
        const int pair = static_cast<int>(slot[f * nf + f2]);
        if (pair < 0 || lo[f] >= hi[f] || lo[f2] >= hi[f2]) continue;
        const int from = static_cast<int>(math::max(c0[f], c0[f2]));
        const int to = static_cast<int>(math::min(c1[f], c1[f2]));
        if (from >= to) continue;
        const int l = static_cast<int>(lo[f]), l2 = static_cast<int>(lo[f2]);
        const int m = (static_cast<int>(hi[f]) - l + L - 1) / L * L;  // zero slots round up
        const int m2 = static_cast<int>(hi[f2]) - l2;
        const double* A =
            E + static_cast<std::size_t>(f) * wcols * S + (from - static_cast<int>(c0[f])) * S;
        const double* B =
            Wt + static_cast<std::size_t>(f2) * wcols * S + (from - static_cast<int>(c0[f2])) * S;
        // Entry (k, k2) = (l + s, l2 + s2) of the pair's buffer: along s contiguous, one
        // column further and one row up per s2 (leading dimension ldg - 1).
        double* g =
            G + static_cast<std::size_t>(pair) * solver.nwt * ldg + l2 * ldg + (l - l2 + kmax);
        if (f < f2) {
          ld::gemm_nn_sequential<true, false>(m, m2, to - from, A, S, B, S, 1, g, ldg - 1);
        } else {  // one fibre: the lower triangle s >= s2, four columns at a time
          for (int s2 = 0; s2 < m2; s2 += 4)
            ld::gemm_nn_sequential<true, false>(m - s2, math::min(4, m2 - s2), to - from, A + s2, S,
                                                B + s2, S, 1, g + s2 * (ldg - 1) + s2, ldg - 1);
        }
      }
  }

  // The buffers into H's band (the entries no pair of fibres reaches are 0): entry (k, k2) of
  // pair (f, f2) is H0(j, j2) at j = k nf + f, j2 = k2 nf + f2.
  template <class HV>
  KOKKOS_INLINE_FUNCTION void to_band(int n, const HV& H) const {
    for (int j = 0; j < n; ++j)
      for (int d = 0; d <= p.band && d < n - j; ++d) H(d, j) = 0;
    for (int f2 = 0; f2 < nf; ++f2)
      for (int f = 0; f <= f2; ++f) {
        const int pair = static_cast<int>(slot[f * nf + f2]);
        if (pair < 0) continue;
        for (int k2 = 0; k2 < solver.nwt; ++k2) {
          const double* g = G + (static_cast<std::size_t>(pair) * solver.nwt + k2) * ldg;
          const int j2 = k2 * nf + f2;
          for (int k = math::max(f == f2 ? k2 : 0, k2 - kmax);
               k <= math::min(solver.nwt - 1, k2 + kmax); ++k) {
            const int j = k * nf + f, d = j > j2 ? j - j2 : j2 - j;
            if (d <= p.band) H(d, j > j2 ? j2 : j) = g[k - k2 + kmax];
          }
        }
      }
  }
};
#endif

// One host thread: H0, b and ω built pixel row by pixel row of the window (RowSweep). Returns
// false (nothing written) where the spots do not rise or the buffers would not fit in the
// patch's wspot scratch (and in a device build's device code); the caller then takes the
// pairwise path.
template <class Solver, class HV, class BV, class OV>
KOKKOS_INLINE_FUNCTION bool normal_equations_by_rows(const Solver& solver, int ip,
                                                     const PatchDesc& p, int n, const HV& H,
                                                     const BV& b, const OV& omega) {
#ifdef PERFEX_HOST_TILES
  RowSweep<Solver> sweep(solver, ip, p);
  if (!sweep.spots_rise()) return false;
  if (sweep.capacity < static_cast<std::size_t>(4 * p.nfib + p.nfib * p.nfib)) return false;
  sweep.find_pairs();
  if (!sweep.lay_out()) return false;
  for (int j = 0; j < n; ++j) {
    b(j) = 0;
    omega(j) = 0;
  }
  for (int r = 0; r < sweep.wrows; ++r) {
    for (int f = 0; f < p.nfib; ++f) {
      sweep.advance(f, r);
      sweep.row_blocks(f, r, b, omega);
    }
    sweep.add_row_products();
  }
  sweep.to_band(n, H);
  return true;
#else
  return false;  // device teams never take it (sequential_team)
#endif
}

// Patch ip's normal equations into its scratch: b, ω and the band of H0 = AᵀWA (the solver's
// first phase; the benchmarks and tests also run it alone). One host thread builds them by pixel
// rows (normal_equations_by_rows), other teams from the weighted spots pair by pair.
template <class Solver, class Member>
KOKKOS_INLINE_FUNCTION void normal_equations(const Member& member, const Solver& solver, int ip,
                                             const PatchDesc& p, int n) {
  const auto b = Kokkos::subview(solver.ws.b, Kokkos::make_pair(0, n), ip);
  const auto omega = Kokkos::subview(solver.ws.omega, Kokkos::make_pair(0, n), ip);
  const auto H =
      Kokkos::subview(solver.ws.H, Kokkos::make_pair(0, p.band + 1), Kokkos::make_pair(0, n), ip);
  if (linalg::detail::sequential_team(member) &&
      normal_equations_by_rows(solver, ip, p, n, H, b, omega))
    return;
  weigh_spots(member, solver, p, n, b, omega);
  member.team_barrier();
  normal_matrix(member, solver, p, n, H);
}

}  // namespace patch
}  // namespace extract
}  // namespace perfex
