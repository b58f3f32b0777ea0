#pragma once
// A patch padded by fewer wavelengths than the plan's nwt (the specter geometry pads each patch
// its own way: PatchDesc's wave_lo, wave_hi): PatchSolver leaves the other unknowns out of its
// normal equations before the solve and keeps the scale of its fitted ones.
#include <perfex/detail/kokkos_compat.hpp>
#include <perfex/extract/patch_geometry.hpp>
#include <perfex/extract/patches.hpp>

#include <Kokkos_Core.hpp>

namespace perfex {
namespace extract {
namespace patch {

// Whether unknown j's wavelength is among the patch's fitted ones, [wave_lo, wave_hi).
KOKKOS_INLINE_FUNCTION bool fitted(const PatchDesc& p, const PatchUnknowns& u, int j) {
  const int k = u.bin(j);
  return k >= p.wave_lo && k < p.wave_hi;
}

// The unknowns outside the patch's fitted wavelengths left out: their rows and columns of H
// and their b and ω zeroed, so that they couple to nothing and come out 0; the others'
// solution is that of the patch without them (Cholesky keeps the zeros exact).
template <class Member, class HV, class BV, class OV>
KOKKOS_INLINE_FUNCTION void leave_out_unfitted(const Member& member, const PatchDesc& p, int n,
                                               const HV& H, const BV& b, const OV& omega) {
  const PatchUnknowns u(p);
  const int band = static_cast<int>(H.extent(0)) - 1;
  Kokkos::parallel_for(Kokkos::TeamThreadRange(member, n), [&](int c) {
    const bool column_fitted = fitted(p, u, c);
    if (!column_fitted) b(c) = omega(c) = 0.0;
    for (int d = 0; d <= band && c + d < n; ++d)
      if (!column_fitted || !fitted(p, u, c + d)) H(d, c) = 0.0;
  });
}

// After the regularisation, the left-out unknowns' diagonal (minweight^2, tiny) raised to the
// fitted ones' largest: a fibre's block of H^-1 then keeps the fitted unknowns' scale, so its
// eigendecomposition resolves them as finely as without the others (an eigenvalue of 1e13
// beside ones of 1e2 would cost them 11 digits) and the eigenvalue clip stays theirs.
template <class Member, class HV>
KOKKOS_INLINE_FUNCTION void scale_unfitted(const Member& member, const PatchDesc& p, int n,
                                           const HV& H) {
  const PatchUnknowns u(p);
  double largest = 0;
  Kokkos::parallel_reduce(
      Kokkos::TeamThreadRange(member, n),
      [&](int j, double& m) {
        if (fitted(p, u, j)) m = math::max(m, H(0, j));
      },
      Kokkos::Max<double>(largest));
  Kokkos::parallel_for(Kokkos::TeamThreadRange(member, n), [&](int j) {
    if (!fitted(p, u, j)) H(0, j) = largest;
  });
}

}  // namespace patch
}  // namespace extract
}  // namespace perfex
