#pragma once
// The kernels over any PSF model (psf/model.hpp): its spots (compute_spots), its traces
// (evaluate_traces), their inverse (invert_ytrace) and the CCD's wavelength coverage
// (wavelength_coverage).
#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstddef>
#include <string>
#include <type_traits>
#include <vector>

#include <perfex/detail/kokkos_compat.hpp>
#include <perfex/detail/team_shape.hpp>
#include <perfex/error.hpp>
#include <perfex/psf/data.hpp>
#include <perfex/psf/model.hpp>

namespace perfex {
namespace psf {

// Throws unless [f0, f0 + nf) are fibres of a model with nfib fibres (nf = 0: nothing to do).
inline void check_fibre_range(int f0, int nf, int nfib, const char* who) {
  if (nf == 0) return;
  const std::string problem = fibre_range_problem(f0, nf, nfib, "f0", "nf");
  if (!problem.empty()) throw Error(std::string(who) + ": " + problem);
}

// Normalised spots of fibres [f0, f0+nf) × wave[K]: a team per run of wavelengths of one fibre,
// each thread of the team evaluates one spot at a time in its own scratch, sized from the
// model's spot_scratch() (plus the spot itself when the output is not one contiguous block per
// spot).
template <class ExecSpace, class Device, class WaveView, class SpotView, class XCornerView,
          class YCornerView>
struct ComputeSpotsFunctor {
  using Member = typename Kokkos::TeamPolicy<ExecSpace>::member_type;
  using Scratch = Kokkos::View<double*, typename ExecSpace::scratch_memory_space,
                               Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

  Device d;
  int f0 = 0, nwave = 0;
  int run = 1;              // wavelengths per team
  int scratch_level = 0;    // 0 when a team's scratch fits the fast level
  int words = 0;            // the model's scratch per spot
  int ny = 0, nx = 0;       // the spot box
  bool contiguous = false;  // each spot's rows are consecutive in spots (LayoutRight-like)
  WaveView wave;
  SpotView spots;
  XCornerView xcorner;
  YCornerView ycorner;

  KOKKOS_INLINE_FUNCTION int thread_words() const { return words + (contiguous ? 0 : ny * nx); }
  std::size_t thread_scratch_bytes() const { return Scratch::shmem_size(thread_words()); }
  int league_size(int nf) const { return nf * ((nwave + run - 1) / run); }

  KOKKOS_INLINE_FUNCTION void operator()(const Member& member) const {
    const int runs = (nwave + run - 1) / run;
    const int f = member.league_rank() / runs;
    const int k0 = (member.league_rank() - f * runs) * run;
    const Scratch buf(member.thread_scratch(scratch_level), thread_words());
    Kokkos::parallel_for(
        Kokkos::TeamThreadRange(member, k0, math::min(nwave, k0 + run)), [&](int k) {
          double* values = contiguous ? &spots(f, k, 0, 0) : buf.data() + words;
          d.spot(member, f0 + f, wave(k), buf.data(),
                 SpotOutput{values, &xcorner(f, k), &ycorner(f, k)});
          if (contiguous) return;
          for (int p = 0; p < ny; ++p)
            Kokkos::parallel_for(Kokkos::ThreadVectorRange(member, nx),
                                 [&](int q) { spots(f, k, p, q) = values[p * nx + q]; });
        });
  }
};

// Normalised spots S(f, k, p, q) and corners (first column, first row) for fibres
// [f0, f0+nf) × wave[K]; spots must be [≥ nf][≥ K][spot_rows][spot_cols], the corners
// [≥ nf][≥ K]. Any views (subviews too) of those ranks and value types that exec can access;
// the team shape is the backend's (perfex::detail::TeamKernel::spots) unless given.
template <class ExecSpace, class Psf, class WaveView, class SpotView, class XCornerView,
          class YCornerView>
void compute_spots(
    const ExecSpace& exec, const Psf& psf, int f0, int nf, const WaveView& wave,
    const SpotView& spots, const XCornerView& xcorner, const YCornerView& ycorner,
    const ::perfex::detail::TeamShape& shape =
        ::perfex::detail::default_team_shape<ExecSpace>(::perfex::detail::TeamKernel::spots)) {
  static_assert(require_psf_model<Psf>(), "");
  static_assert(Kokkos::is_view<WaveView>::value && WaveView::rank == 1 &&
                    std::is_same<typename WaveView::non_const_value_type, double>::value,
                "compute_spots: wave must be a rank-1 view of double");
  static_assert(Kokkos::is_view<SpotView>::value && SpotView::rank == 4 &&
                    std::is_same<typename SpotView::value_type, double>::value,
                "compute_spots: spots must be a rank-4 view of (non-const) double");
  static_assert(Kokkos::is_view<XCornerView>::value && XCornerView::rank == 2 &&
                    std::is_same<typename XCornerView::value_type, int>::value &&
                    Kokkos::is_view<YCornerView>::value && YCornerView::rank == 2 &&
                    std::is_same<typename YCornerView::value_type, int>::value,
                "compute_spots: xcorner and ycorner must be rank-2 views of (non-const) int");
  static_assert(
      Kokkos::SpaceAccessibility<ExecSpace, typename Psf::memory_space>::accessible &&
          Kokkos::SpaceAccessibility<ExecSpace, typename WaveView::memory_space>::accessible &&
          Kokkos::SpaceAccessibility<ExecSpace, typename SpotView::memory_space>::accessible &&
          Kokkos::SpaceAccessibility<ExecSpace, typename XCornerView::memory_space>::accessible &&
          Kokkos::SpaceAccessibility<ExecSpace, typename YCornerView::memory_space>::accessible,
      "compute_spots: the PSF and every view must be accessible from the execution space");
  check_fibre_range(f0, nf, psf.nfib(), "perfex::psf::compute_spots");
  const int K = static_cast<int>(wave.extent(0));
  const int ny = psf.spot_rows(), nx = psf.spot_cols();
  if (static_cast<int>(spots.extent(0)) < nf || static_cast<int>(spots.extent(1)) < K ||
      static_cast<int>(spots.extent(2)) != ny || static_cast<int>(spots.extent(3)) != nx ||
      static_cast<int>(xcorner.extent(0)) < nf || static_cast<int>(xcorner.extent(1)) < K ||
      static_cast<int>(ycorner.extent(0)) < nf || static_cast<int>(ycorner.extent(1)) < K) {
    throw Error("perfex::psf::compute_spots: output views must be [nf][K][" + std::to_string(ny) +
                "][" + std::to_string(nx) + "] and [nf][K]");
  }
  if (nf == 0 || K == 0) return;
  using Functor = ComputeSpotsFunctor<ExecSpace, typename Psf::device_type, WaveView, SpotView,
                                      XCornerView, YCornerView>;
  Functor fn;
  fn.d = psf.device();
  fn.f0 = f0;
  fn.nwave = K;
  // A thread per spot; on host backends (one-thread teams) a team runs 8 spots in turn.
  fn.run = shape.team_size > 0 ? shape.team_size : 8;
  fn.words = fn.d.spot_scratch();
  fn.ny = ny;
  fn.nx = nx;
  fn.wave = wave;
  fn.spots = spots;
  fn.xcorner = xcorner;
  fn.ycorner = ycorner;
  fn.contiguous = spots.stride(3) == 1 && spots.stride(2) == static_cast<std::size_t>(nx);
  auto policy = ::perfex::detail::team_policy(exec, fn.league_size(nf), shape);
  const std::size_t per_thread = fn.thread_scratch_bytes();
  const std::size_t team_threads = shape.team_size > 0 ? shape.team_size : 1;
  fn.scratch_level =
      team_threads * per_thread <= static_cast<std::size_t>(decltype(policy)::scratch_size_max(0))
          ? 0
          : 1;
  policy.set_scratch_size(fn.scratch_level, Kokkos::PerThread(per_thread));
  Kokkos::parallel_for("perfex::psf::compute_spots", policy, fn);
}

template <class Device, class MemorySpace>
struct EvaluateTracesFunctor {
  Device d;
  int f0;
  Kokkos::View<const double*, MemorySpace> wave;
  Kokkos::View<double**, MemorySpace> x, y;
  KOKKOS_INLINE_FUNCTION void operator()(int f, int k) const {
    x(f, k) = d.trace_x(f0 + f, wave(k));
    y(f, k) = d.trace_y(f0 + f, wave(k));
  }
};

// x(f, k), y(f, k): the trace of fibre f0+f at wave(k).
template <class ExecSpace, class Psf>
void evaluate_traces(const ExecSpace& exec, const Psf& psf, int f0, int nf,
                     Kokkos::View<const double*, typename Psf::memory_space> wave,
                     Kokkos::View<double**, typename Psf::memory_space> x,
                     Kokkos::View<double**, typename Psf::memory_space> y) {
  static_assert(require_psf_model<Psf>(), "");
  check_fibre_range(f0, nf, psf.nfib(), "perfex::psf::evaluate_traces");
  const int K = static_cast<int>(wave.extent(0));
  if (static_cast<int>(x.extent(0)) < nf || static_cast<int>(x.extent(1)) < K ||
      static_cast<int>(y.extent(0)) < nf || static_cast<int>(y.extent(1)) < K) {
    throw Error("perfex::psf::evaluate_traces: output views smaller than [nf][K]");
  }
  if (nf == 0 || K == 0) return;
  using Policy = Kokkos::MDRangePolicy<ExecSpace, Kokkos::Rank<2>, Kokkos::IndexType<int>>;
  Kokkos::parallel_for("perfex::psf::evaluate_traces", Policy(exec, {0, 0}, {nf, K}),
                       EvaluateTracesFunctor<typename Psf::device_type, typename Psf::memory_space>{
                           psf.device(), f0, wave, x, y});
}

template <class Device, class MemorySpace>
struct InvertTraceFunctor {
  Device d;
  int f0;
  Kokkos::View<const double*, MemorySpace> rows;
  Kokkos::View<double**, MemorySpace> wave;
  KOKKOS_INLINE_FUNCTION void operator()(int f, int k) const {
    wave(f, k) = d.trace_wavelength(f0 + f, rows(k));
  }
};

// wave(f, k) = λ at which fibre f0+f's trace reaches row rows(k).
template <class ExecSpace, class Psf>
void invert_ytrace(const ExecSpace& exec, const Psf& psf, int f0, int nf,
                   Kokkos::View<const double*, typename Psf::memory_space> rows,
                   Kokkos::View<double**, typename Psf::memory_space> wave) {
  static_assert(require_psf_model<Psf>(), "");
  check_fibre_range(f0, nf, psf.nfib(), "perfex::psf::invert_ytrace");
  const int K = static_cast<int>(rows.extent(0));
  if (static_cast<int>(wave.extent(0)) < nf || static_cast<int>(wave.extent(1)) < K) {
    throw Error("perfex::psf::invert_ytrace: output view smaller than [nf][K]");
  }
  if (nf == 0 || K == 0) return;
  using Policy = Kokkos::MDRangePolicy<ExecSpace, Kokkos::Rank<2>, Kokkos::IndexType<int>>;
  Kokkos::parallel_for("perfex::psf::invert_ytrace", Policy(exec, {0, 0}, {nf, K}),
                       InvertTraceFunctor<typename Psf::device_type, typename Psf::memory_space>{
                           psf.device(), f0, rows, wave});
}

// Per-fibre wavelength coverage of the CCD rows [−0.5, NPIX_Y − 0.5] (specter's wmin/wmax).
struct WavelengthCoverage {
  std::vector<double> wmin, wmax;           // [nf]
  double wmin_all = 0, wmax_all = 0;        // min of wmin, max of wmax (the union)
  double wmin_common = 0, wmax_common = 0;  // max of wmin, min of wmax (the intersection)
};

template <class ExecSpace, class Psf>
WavelengthCoverage wavelength_coverage(const ExecSpace& exec, const Psf& psf, int f0, int nf) {
  using Mem = typename Psf::memory_space;
  Kokkos::View<double*, Mem> rows("perfex::psf::coverage_rows", 2);
  auto hrows = Kokkos::create_mirror_view(rows);
  hrows(0) = -0.5;
  hrows(1) = psf.npix_y() - 0.5;
  Kokkos::deep_copy(exec, rows, hrows);
  Kokkos::View<double**, Mem> wave("perfex::psf::coverage", nf, 2);
  invert_ytrace(exec, psf, f0, nf, Kokkos::View<const double*, Mem>(rows), wave);
  auto h = Kokkos::create_mirror_view(wave);
  Kokkos::deep_copy(exec, h, wave);
  exec.fence();
  WavelengthCoverage c;
  for (int f = 0; f < nf; ++f) {
    c.wmin.push_back(h(f, 0));
    c.wmax.push_back(h(f, 1));
  }
  if (nf > 0) {
    c.wmin_all = c.wmin_common = c.wmin[0];
    c.wmax_all = c.wmax_common = c.wmax[0];
    for (int f = 1; f < nf; ++f) {
      c.wmin_all = std::min(c.wmin_all, c.wmin[f]);
      c.wmin_common = std::max(c.wmin_common, c.wmin[f]);
      c.wmax_all = std::max(c.wmax_all, c.wmax[f]);
      c.wmax_common = std::min(c.wmax_common, c.wmax[f]);
    }
  }
  return c;
}

}  // namespace psf
}  // namespace perfex
