#pragma once
// Each patch's band: the half-bandwidth of its normal matrix with wavelength-major unknowns,
// measured on the device from the spot boxes before the solve (measure_bandwidths, one launch
// for every patch of a frame).
#include <perfex/detail/kokkos_compat.hpp>
#include <perfex/detail/team_shape.hpp>
#include <perfex/extract/patch_geometry.hpp>
#include <perfex/extract/plan.hpp>

#include <Kokkos_Core.hpp>

namespace perfex {
namespace extract {

// Half-bandwidth of each patch's normal matrix (wavelength-major unknowns): the largest index
// distance between two unknowns whose spot boxes overlap. Written into patches(i).band.
// Threads run over the unknowns (columns), vector lanes over the fibres a column can meet.
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
    Kokkos::parallel_reduce(
        Kokkos::TeamThreadRange(member, n),
        [&](int jc, int& widest) {
          const int bc = u.bin(jc), sc = jc - bc * p.nfib;
          const int fc = p.fib0 + sc, kc = p.kf0 + bc;
          int far = 0;
          if (rising) {
            Kokkos::parallel_reduce(
                Kokkos::ThreadVectorRange(member, p.nfib),
                [&](int s, int& farthest) {
                  const int f = p.fib0 + s;
                  // Unknowns after jc: this bin's later fibres, then the next bins.
                  for (int b = s > sc ? bc : bc + 1; b < nwt; ++b) {
                    if (ycorner(f, p.kf0 + b) - ycorner(fc, kc) >= nrow) break;
                    if (overlap(fc, kc, f, p.kf0 + b))
                      farthest = math::max(farthest, b * p.nfib + s - jc);
                  }
                },
                Kokkos::Max<int>(far));
          } else {  // any geometry: every later unknown
            Kokkos::parallel_reduce(
                Kokkos::ThreadVectorRange(member, jc + 1, n),
                [&](int jr, int& farthest) {
                  if (overlap(fc, kc, u.fibre(jr), u.wave(jr)))
                    farthest = math::max(farthest, jr - jc);
                },
                Kokkos::Max<int>(far));
          }
          widest = math::max(widest, far);
        },
        Kokkos::Max<int>(band));
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
