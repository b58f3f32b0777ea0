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
#include <perfex/extract/options.hpp>
#include <perfex/extract/patch_bandwidth.hpp>
#include <perfex/extract/patch_geometry.hpp>
#include <perfex/extract/patch_workspace.hpp>
#include <perfex/extract/plan.hpp>
#include <perfex/linalg/band_cholesky.hpp>
#include <perfex/linalg/eigen.hpp>
#include <perfex/linalg/flops.hpp>
#include <perfex/linalg/gemm.hpp>
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
  Kokkos::View<double**, Kokkos::LayoutRight, MemorySpace> model;  // full CCD, or empty
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

  // Patch ip's normal equations into its scratch: b, ω and the band of H0 = AᵀWA (the solver's
  // first steps; the benchmarks and tests also run them alone). One host thread builds them by
  // pixel rows (normal_equations_by_rows), other teams from the weighted spots pair by pair.
  KOKKOS_INLINE_FUNCTION void normal_equations(const Member& member, int ip, const PatchDesc& p,
                                               int n) const {
    const auto b = Kokkos::subview(ws.b, Kokkos::make_pair(0, n), ip);
    const auto omega = Kokkos::subview(ws.omega, Kokkos::make_pair(0, n), ip);
    const auto H =
        Kokkos::subview(ws.H, Kokkos::make_pair(0, p.band + 1), Kokkos::make_pair(0, n), ip);
    if (linalg::detail::sequential_team(member) && normal_equations_by_rows(ip, p, n, H, b, omega))
      return;
    weigh_spots(member, p, n, b, omega);
    member.team_barrier();
    normal_matrix(member, p, n, H);
  }

  // One host thread: H0, b and ω built pixel row by pixel row of the window (normal_matrix and
  // weigh_spots do the same work a pair of spots at a time). Spots rise with wavelength, so a
  // pixel row meets a few consecutive spots of each fibre; their row segments side by side (a
  // slot per spot, zero where a spot does not reach) make a small dense block per fibre, and
  // every pair of fibres whose blocks share columns adds the product of the two blocks over those
  // columns, one weighted, to its entries of H0: a register-tiled matrix product running over
  // contiguous slots (gemm.hpp), into a buffer per pair of fibres laid out so that a row's
  // product lands contiguously (column k2, entry k - k2 + kmax). Each entry adds its rows in
  // order, each row's columns in order. Returns false (nothing written) where the spots do not
  // rise or the buffers would not fit in the patch's wspot scratch (and in a device build's
  // device code); the caller then takes the pairwise path.
  template <class HV, class BV, class OV>
  KOKKOS_INLINE_FUNCTION bool normal_equations_by_rows(int ip, const PatchDesc& p, int n,
                                                       const HV& H, const BV& b,
                                                       const OV& omega) const {
#ifdef PERFEX_HOST_TILES
    namespace ld = linalg::detail;
    constexpr int L = ld::lanes;
    const int nrow = static_cast<int>(spots.extent(2)), ncol = static_cast<int>(spots.extent(3));
    const int nf = p.nfib, wcols = p.col1 - p.col0, wrows = p.row1 - p.row0;
    const int* ys = &ycorner(p.fib0, p.kf0);
    const int* xs = &xcorner(p.fib0, p.kf0);
    const long cs = static_cast<long>(&ycorner(p.fib0 + (nf > 1), p.kf0) - ys);  // fibre stride
    const long ks = static_cast<long>(&ycorner(p.fib0, p.kf0 + 1) - ys);         // λ stride
    for (int f = 0; f < nf; ++f)
      for (int k = 0; k + 1 < nwt; ++k)
        if (ys[f * cs + (k + 1) * ks] < ys[f * cs + k * ks]) return false;
    double* scratch = &ws.wspot(0, ip);
    const std::size_t capacity = ws.wspot.extent(0);
    // Per fibre: its spots [lo, hi) that reach the current row and their columns [c0, c1) in
    // the window; the slot of each pair of fibres (f, f2), f <= f2, or -1 where they never meet.
    if (capacity < static_cast<std::size_t>(4 * nf + nf * nf)) return false;
    double* lo = scratch;
    double* hi = lo + nf;
    double* c0 = hi + nf;
    double* c1 = c0 + nf;
    double* slot = c1 + nf;
    auto advance = [&](int f, int r) {  // to window row r (rows only increase)
      const int row = p.row0 + r;
      const int* y = ys + f * cs;
      const int* x = xs + f * cs;
      int l = static_cast<int>(lo[f]), h = static_cast<int>(hi[f]);
      while (l < nwt && y[l * ks] + nrow <= row) ++l;
      if (h < l) h = l;
      while (h < nwt && y[h * ks] <= row) ++h;
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
    };
    // First sweep: the most spots of a fibre in a row (slots per block, a multiple of the
    // lanes), the largest wavelength distance between spots of two fibres that share a row's
    // columns, and which pairs of fibres ever do.
    int width = 0, kmax = 0, npairs = 0;
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
    const int S = (width + L - 1) / L * L;
    // A pair's buffer: column k2 holds k - k2 + kmax at rows [0, 2 kmax], and the rows a
    // product tile rounds up to the lanes, which are zero, fit below them without reaching the
    // next column's.
    const int ldg = 2 * kmax + L;
    double* E = slot + nf * nf;  // per fibre, column c of its block at E + c S
    double* Wt = E + static_cast<std::size_t>(nf) * wcols * S;  // E times the pixels' weights
    double* G = Wt + static_cast<std::size_t>(nf) * wcols * S;
    const std::size_t gsize = static_cast<std::size_t>(npairs) * nwt * ldg;
    if (static_cast<std::size_t>(G - scratch) + gsize > capacity) return false;
    for (std::size_t i = 0; i < gsize; ++i) G[i] = 0;
    for (int j = 0; j < n; ++j) {
      b(j) = 0;
      omega(j) = 0;
    }
    for (int f = 0; f < nf; ++f) lo[f] = hi[f] = 0;
    for (int r = 0; r < wrows; ++r) {
      const int row = p.row0 + r;
      for (int f = 0; f < nf; ++f) {
        advance(f, r);
        const int l = static_cast<int>(lo[f]), h = static_cast<int>(hi[f]);
        const int a = static_cast<int>(c0[f]), w = static_cast<int>(c1[f]) - a;
        double* e = E + static_cast<std::size_t>(f) * wcols * S;
        double* wt = Wt + static_cast<std::size_t>(f) * wcols * S;
        for (int q = 0; q < w * S; q += L) ld::store_lanes(e + q, ld::broadcast(0.0));
        for (int s = 0; s < h - l; ++s) {
          const int k = l + s, x = xs[f * cs + k * ks];
          const int from = math::max(a, x), to = math::min(a + w, x + ncol);
          const double* src = &spots(p.fib0 + f, p.kf0 + k, row - ys[f * cs + k * ks], 0) - x;
          double* dst = e + s - static_cast<long>(a) * S;
          for (int c = from; c < to; ++c) dst[c * S] = src[c];
        }
        // The weighted block, and this row's part of b and ω: its columns in order.
        for (int s0 = 0; s0 < h - l; s0 += L) {
          ld::lane_vector rb = ld::broadcast(0.0), ro = ld::broadcast(0.0);
          for (int c = 0; c < w; ++c) {
            const double pw = image.weight(row, a + c), pv = image.value(row, a + c);
            const ld::lane_vector ws_ = ld::load_lanes(e + c * S + s0) * pw;
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
          double* g = G + static_cast<std::size_t>(pair) * nwt * ldg + l2 * ldg + (l - l2 + kmax);
          if (f < f2) {
            ld::gemm_nn_sequential<true, false>(m, m2, to - from, A, S, B, S, 1, g, ldg - 1);
          } else {  // one fibre: the lower triangle s >= s2, four columns at a time
            for (int s2 = 0; s2 < m2; s2 += 4)
              ld::gemm_nn_sequential<true, false>(m - s2, math::min(4, m2 - s2), to - from, A + s2,
                                                  S, B + s2, S, 1, g + s2 * (ldg - 1) + s2,
                                                  ldg - 1);
          }
        }
    }
    // The buffers into H's band (the entries no pair of fibres reaches are 0): entry (k, k2) of
    // pair (f, f2) is H0(j, j2) at j = k nf + f, j2 = k2 nf + f2.
    for (int j = 0; j < n; ++j)
      for (int d = 0; d <= p.band && d < n - j; ++d) H(d, j) = 0;
    for (int f2 = 0; f2 < nf; ++f2)
      for (int f = 0; f <= f2; ++f) {
        const int pair = static_cast<int>(slot[f * nf + f2]);
        if (pair < 0) continue;
        for (int k2 = 0; k2 < nwt; ++k2) {
          const double* g = G + (static_cast<std::size_t>(pair) * nwt + k2) * ldg;
          const int j2 = k2 * nf + f2;
          for (int k = math::max(f == f2 ? k2 : 0, k2 - kmax); k <= math::min(nwt - 1, k2 + kmax);
               ++k) {
            const int j = k * nf + f, d = j > j2 ? j - j2 : j2 - j;
            if (d <= p.band) H(d, j > j2 ? j2 : j) = g[k - k2 + kmax];
          }
        }
      }
    return true;
#else
    return false;  // device teams never take it (sequential_team)
#endif
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
      Kokkos::single(Kokkos::PerTeam(member), [&]() { out.status(ip) = status; });
      return;
    }
    chi2_and_pixmask(member, p, phi);
    if (model.extent(0) > 0) add_model(member, p);
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
    Kokkos::parallel_for(Kokkos::TeamThreadRange(member, p.nkeep), [&](int jcore) {
      const int i = jcore + wavepad;
      const double s = rowsum(i), fl = rowflux(i);
      const bool constrained = omega(unknowns(i)) > 1e-8 && math::isfinite(s) && math::isfinite(fl);
      out.flux(ip, f, jcore) = constrained ? fl / s : 0.0;
      out.ivar(ip, f, jcore) = constrained ? s * s : 0.0;
      for (int d = 0; d <= 2 * ndiag; ++d) {
        const double rr = band(d, jcore) / rowsum(i - ndiag + d);
        out.rdiags(ip, f, d, jcore) = math::isfinite(rr) ? rr : 0.0;
      }
    });
    // The last patch of a sub-bundle solves a whole core of nwavestep bins, some beyond the
    // frame's grid; gpu_specter's model image has their spots too (its last patch keeps only
    // the frame's bins of everything else).
    const int nwavestep = nwt - 2 * wavepad;
    if (model.extent(0) > 0 && p.nkeep < nwavestep)
      Kokkos::parallel_for(Kokkos::TeamThreadRange(member, p.nkeep, nwavestep), [&](int jcore) {
        const int i = jcore + wavepad;
        const double s = rowsum(i), fl = rowflux(i);
        const bool constrained =
            omega(unknowns(i)) > 1e-8 && math::isfinite(s) && math::isfinite(fl);
        add_spot(member, p, p.fib0 + p.keep0 + f, p.kf0 + i, constrained ? fl / s : 0.0);
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

  // Model image: core columns of A times the reconvolved core flux (gpu_specter). Patches
  // overlap on the CCD, so their teams add with atomics: the model's last bits depend on the
  // order the patches run in (flux, ivar, chi2pix and the rest do not).
  KOKKOS_INLINE_FUNCTION void add_model(const Member& member, const PatchDesc& p) const {
    const int ip = member.league_rank();
    Kokkos::parallel_for(Kokkos::TeamThreadRange(member, p.nkeepfib * p.nkeep), [&](int idx) {
      const int f = idx / p.nkeep, jcore = idx % p.nkeep;
      add_spot(member, p, p.fib0 + p.keep0 + f, p.kf0 + wavepad + jcore, out.flux(ip, f, jcore));
    });
  }

  // a times the spot of fibre fl at padded wavelength k, within the patch's window, into the
  // model image (by one thread of the team, over its vector lanes).
  KOKKOS_INLINE_FUNCTION void add_spot(const Member& member, const PatchDesc& p, int fl, int k,
                                       double a) const {
    const int nrow = static_cast<int>(spots.extent(2)), ncol = static_cast<int>(spots.extent(3));
    const int c0 = xcorner(fl, k), r0 = ycorner(fl, k);
    const int rlo = math::max(0, p.row0 - r0), rhi = math::min(nrow, p.row1 - r0);
    const int clo = math::max(0, p.col0 - c0), chi = math::min(ncol, p.col1 - c0);
    const double* spot = &spots(fl, k, 0, 0);
    for (int r = rlo; r < rhi; ++r) {
      Kokkos::parallel_for(Kokkos::ThreadVectorRange(member, clo, chi), [&](int c) {
        Kokkos::atomic_add(&model(r0 + r, c0 + c), a * spot[r * ncol + c]);
      });
    }
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
