#pragma once
// Return codes of the perfex::linalg kernels (plain ints so they travel through Views).
#include <perfex/detail/kokkos_compat.hpp>

namespace perfex {
namespace linalg {

enum Status : int {
  ok = 0,                     // success
  not_positive_definite = 1,  // Cholesky met a pivot that is not > 0 (or not finite)
  not_converged = 2           // eigensolver hit its iteration cap, or the input was not finite
};

namespace detail {

// Cholesky pivot test shared by all threads (each reads the same value): > 0 and finite.
KOKKOS_INLINE_FUNCTION bool good_pivot(double a) { return a > 0 && perfex::math::isfinite(a); }

}  // namespace detail

}  // namespace linalg
}  // namespace perfex
