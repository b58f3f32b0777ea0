#pragma once
// Return codes of the perfex::linalg kernels (plain ints so they travel through Views).
namespace perfex {
namespace linalg {

enum Status : int {
  ok = 0,                     // success
  not_positive_definite = 1,  // Cholesky met a pivot that is not > 0 (or not finite)
  not_converged = 2           // eigensolver hit its iteration cap, or the input was not finite
};

}  // namespace linalg
}  // namespace perfex
