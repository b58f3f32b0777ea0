#pragma once
// Team size and vector length of perfex's team kernels, chosen per backend and per kind of
// kernel in this one place.
#include <perfex/error.hpp>

#include <Kokkos_Core.hpp>

#include <string>
#include <type_traits>

namespace perfex {
namespace detail {

// team_size 0 means Kokkos::AUTO.
struct TeamShape {
  int team_size = 0;
  int vector_length = 1;
};

// The team kernels, by the shape of their work.
enum class TeamKernel {
  generic,          // anything else: the backend's choice
  patch_solver,     // one team per patch: loops over its ~518 unknowns, band columns, pixels
  patch_bandwidth,  // one team per patch: threads over unknowns, lanes over the band
  spots,            // psf::compute_spots: a thread per spot, vector lanes over its pixels
  batched_linalg,   // one team per matrix (band Cholesky, blocks of H^-1, 74 x 74 eigen)
};

// Host backends: Kokkos::AUTO gives one thread per team there, so each patch (or matrix) is a
// sequential unit and the teams run concurrently; vector loops are left to the compiler.
//
// CUDA (not yet measured on a GPU; reasoned from the kernels' loops and ptxas' register
// counts in the GPU audit):
//  * patch solver, 64 threads: the widest "one row per thread" steps have <= 64 active rows
//    (the band Cholesky updates kd + 1 <= 59 rows per column, the eigen stage 74 rows), and at
//    174 registers per thread five such teams stay resident per SM where 128-thread teams
//    would leave two. Vector length 1 until every TeamThreadRange body of the solver keeps its
//    side effects in ThreadVectorRange or single(PerThread): vector lanes run such a body
//    once each, and the adds of chi2 and the model image's blocks would then count N times.
//  * patch bandwidth and spots, 8 x 32: 8 unknowns (or spots) per team, a warp's 32 lanes each
//    over the band (or the spot's pixels), so that lanes read and write contiguous memory.
//  * batched linear algebra, 64 threads: the band's kd + 1 <= 59 active rows.
template <class ExecSpace>
TeamShape default_team_shape(TeamKernel kind = TeamKernel::generic) {
#ifdef KOKKOS_ENABLE_CUDA
  if (std::is_same<ExecSpace, Kokkos::Cuda>::value) {
    switch (kind) {
      case TeamKernel::patch_solver:
        return {64, 1};
      case TeamKernel::patch_bandwidth:
      case TeamKernel::spots:
        return {8, 32};
      case TeamKernel::batched_linalg:
        return {64, 1};
      case TeamKernel::generic:
        break;
    }
  }
#else
  (void)kind;
#endif
  return {};
}

// shape when it names a team size (a caller's or a test's choice), else the default for kind.
template <class ExecSpace>
TeamShape team_shape_or_default(const TeamShape& shape, TeamKernel kind) {
  return shape.team_size > 0 ? shape : default_team_shape<ExecSpace>(kind);
}

// Whether v is a vector length Kokkos takes on every backend: a power of two (Kokkos 5.1 aborts
// on any other; earlier versions took any on host backends).
inline bool is_vector_length(int v) { return v > 0 && (v & (v - 1)) == 0; }

template <class ExecSpace, class... Properties>
Kokkos::TeamPolicy<ExecSpace, Properties...> team_policy(const ExecSpace& exec, int league,
                                                         const TeamShape& shape) {
  const int vector_length = shape.vector_length > 0 ? shape.vector_length : 1;
  if (!is_vector_length(vector_length))
    throw Error("perfex: team vector length " + std::to_string(vector_length) +
                " is not a power of two");
  if (shape.team_size > 0)
    return Kokkos::TeamPolicy<ExecSpace, Properties...>(exec, league, shape.team_size,
                                                        vector_length);
  return Kokkos::TeamPolicy<ExecSpace, Properties...>(exec, league, Kokkos::AUTO, vector_length);
}

}  // namespace detail
}  // namespace perfex
