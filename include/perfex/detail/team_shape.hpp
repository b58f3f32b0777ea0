#pragma once
// Team size and vector length of perfex's team kernels, chosen per backend in one place.
#include <Kokkos_Core.hpp>

#include <type_traits>

namespace perfex {
namespace detail {

// team_size 0 means Kokkos::AUTO.
struct TeamShape {
  int team_size = 0;
  int vector_length = 1;
};

// Host backends: Kokkos::AUTO gives one thread per team there, so each patch (or matrix) is a
// sequential unit and the teams run concurrently; vector loops are left to the compiler.
template <class ExecSpace>
TeamShape default_team_shape() {
  return {};
}

// Kernels whose team shape is chosen apart from the patch solver's.
enum class Kernel {
  spots,            // psf::compute_spots: a thread per spot, vector lanes over its pixels
  patch_bandwidth,  // extract::measure_bandwidths: threads over unknowns, lanes over the band
};

// Host backends: as above. CUDA: 8 spots (or unknowns) per team, a warp's 32 lanes each.
template <class ExecSpace>
TeamShape default_team_shape(Kernel) {
#ifdef KOKKOS_ENABLE_CUDA
  if (std::is_same<ExecSpace, Kokkos::Cuda>::value) return {8, 32};
#endif
  return default_team_shape<ExecSpace>();
}

template <class ExecSpace, class... Properties>
Kokkos::TeamPolicy<ExecSpace, Properties...> team_policy(const ExecSpace& exec, int league,
                                                         const TeamShape& shape) {
  if (shape.team_size > 0)
    return Kokkos::TeamPolicy<ExecSpace, Properties...>(exec, league, shape.team_size,
                                                        shape.vector_length);
  return Kokkos::TeamPolicy<ExecSpace, Properties...>(exec, league, Kokkos::AUTO,
                                                      shape.vector_length);
}

}  // namespace detail
}  // namespace perfex
