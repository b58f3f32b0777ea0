#pragma once
// Each patch's band: the half-bandwidth of its normal matrix with wavelength-major unknowns,
// measured on the device from the spot boxes before the solve (measure_bandwidths, one launch
// for every patch of a frame).
#include <perfex/detail/kokkos_compat.hpp>
#include <perfex/detail/team_shape.hpp>
#include <perfex/extract/patch_geometry.hpp>
#include <perfex/extract/patches.hpp>

#include <Kokkos_Core.hpp>

namespace perfex {
namespace extract {

// Half-bandwidth of each patch's normal matrix (wavelength-major unknowns): the largest index
// distance between two unknowns whose spot boxes overlap. Written into patches(i).band.
// Where the spots rise with wavelength, the team's threads run over pairs of fibres,
// each pair a scan over its bins; otherwise threads over the unknowns (columns), vector lanes
// over the later unknowns.
template <class ExecSpace, class MemorySpace>
struct PatchBandwidth {
  using Member = typename Kokkos::TeamPolicy<ExecSpace>::member_type;
  Kokkos::View<const int**, MemorySpace> xcorner, ycorner;
  Kokkos::View<PatchDesc*, MemorySpace> patches;
  int nwt, nrow, ncol;

  KOKKOS_INLINE_FUNCTION bool overlap(int fa, int ka, int fb, int kb) const {
    return math::abs(xcorner(fb, kb) - xcorner(fa, ka)) < ncol &&
           math::abs(ycorner(fb, kb) - ycorner(fa, ka)) < nrow;
  }

  KOKKOS_INLINE_FUNCTION void operator()(const Member& member) const {
    const PatchDesc p = patches(member.league_rank());
    const PatchUnknowns u(p);
    const int n = p.nfib * nwt;
    // Spot rows rise with wavelength along each fibre (a dispersing spectrograph): then a
    // column's overlaps with a fibre end below the first of its spots nrow rows higher.
    int rising = 1;
    Kokkos::parallel_reduce(
        Kokkos::TeamThreadRange(member, p.nfib),
        [&](int s, int& all) {
          int fibre_rises = 1;
          Kokkos::parallel_reduce(
              Kokkos::ThreadVectorRange(member, nwt - 1),
              [&](int i, int& rises) {
                const int f = p.fib0 + s, k = p.kf0 + i;
                rises = math::min(rises, ycorner(f, k + 1) >= ycorner(f, k) ? 1 : 0);
              },
              Kokkos::Min<int>(fibre_rises));
          all = math::min(all, fibre_rises);
        },
        Kokkos::Min<int>(rising));
    int band = 0;
    if (rising) {
      // Per pair of fibres (sc, s): each unknown of sc against the later unknowns of s that its
      // box can reach. Fibres whose spots lie ncol apart or more at every wavelength never meet.
      // Otherwise, as sc's bins advance, the bins of s that start fewer than nrow rows below
      // form a window whose end only moves forward; the farthest unknown is the last bin of the
      // window that overlaps, found from the end.
      Kokkos::parallel_reduce(
          Kokkos::TeamThreadRange(member, p.nfib * p.nfib),
          [&](int pair, int& widest) {
            const int sc = pair / p.nfib, s = pair - sc * p.nfib;
            const int fc = p.fib0 + sc, f = p.fib0 + s;
            int xc0 = xcorner(fc, p.kf0), xc1 = xc0, x0 = xcorner(f, p.kf0), x1 = x0;
            for (int b = 1; b < nwt; ++b) {
              xc0 = math::min(xc0, xcorner(fc, p.kf0 + b));
              xc1 = math::max(xc1, xcorner(fc, p.kf0 + b));
              x0 = math::min(x0, xcorner(f, p.kf0 + b));
              x1 = math::max(x1, xcorner(f, p.kf0 + b));
            }
            if (x0 - xc1 >= ncol || xc0 - x1 >= ncol) return;
            int end = 0;  // first bin of s starting nrow or more rows below bin bc of sc
            for (int bc = 0; bc < nwt; ++bc) {
              const int kc = p.kf0 + bc, jc = bc * p.nfib + sc;
              while (end < nwt && ycorner(f, p.kf0 + end) - ycorner(fc, kc) < nrow) ++end;
              for (int b = end - 1; b >= (s > sc ? bc : bc + 1); --b)
                if (overlap(fc, kc, f, p.kf0 + b)) {
                  widest = math::max(widest, b * p.nfib + s - jc);
                  break;
                }
            }
          },
          Kokkos::Max<int>(band));
    } else {  // any geometry: every later unknown
      Kokkos::parallel_reduce(
          Kokkos::TeamThreadRange(member, n),
          [&](int jc, int& widest) {
            const int fc = u.fibre(jc), kc = u.wave(jc);
            int far = 0;
            Kokkos::parallel_reduce(
                Kokkos::ThreadVectorRange(member, jc + 1, n),
                [&](int jr, int& farthest) {
                  if (overlap(fc, kc, u.fibre(jr), u.wave(jr)))
                    farthest = math::max(farthest, jr - jc);
                },
                Kokkos::Max<int>(far));
            widest = math::max(widest, far);
          },
          Kokkos::Max<int>(band));
    }
    Kokkos::single(Kokkos::PerTeam(member),
                   [&]() { patches(member.league_rank()).band = math::max(band, 0); });
  }
};

// Sets patches(i).band for every patch (see PatchBandwidth) and returns the largest. nrow x
// ncol is the spot size; shape a team shape to use instead of the backend's default.
template <class ExecSpace, class MemorySpace>
int measure_bandwidths(const ExecSpace& exec, const Kokkos::View<const int**, MemorySpace>& xcorner,
                       const Kokkos::View<const int**, MemorySpace>& ycorner,
                       const Kokkos::View<PatchDesc*, MemorySpace>& patches, int nwt, int nrow,
                       int ncol, const perfex::detail::TeamShape& shape = {}) {
  namespace pd = perfex::detail;
  const int npatch = static_cast<int>(patches.extent(0));
  Kokkos::parallel_for(
      "perfex::extract::patch_bandwidth",
      pd::team_policy(exec, npatch,
                      pd::team_shape_or_default<ExecSpace>(shape, pd::TeamKernel::patch_bandwidth)),
      PatchBandwidth<ExecSpace, MemorySpace>{xcorner, ycorner, patches, nwt, nrow, ncol});
  int band = 0;
  Kokkos::parallel_reduce(
      "perfex::extract::max_bandwidth", Kokkos::RangePolicy<ExecSpace>(exec, 0, npatch),
      KOKKOS_LAMBDA(int i, int& widest) {
        widest = widest < patches(i).band ? patches(i).band : widest;
      },
      Kokkos::Max<int>(band));
  return band;
}

}  // namespace extract
}  // namespace perfex
