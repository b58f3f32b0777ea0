#pragma once
// Flop models of the linalg kernels (one multiply-add = 2 flop), host only: what the
// algorithms here actually do, for GFLOP/s figures in benchmarks and frame summaries.
namespace perfex {
namespace linalg {
namespace flops {

// Dense Cholesky n^3/3, one solve 2n^2, LAPACK potri (whole inverse from the factor) 2n^3/3.
inline double cholesky(double n) { return n * n * n / 3; }
inline double solve(double n) { return 2 * n * n; }
inline double potri(double n) { return 2 * n * n * n / 3; }

// Diagonal blocks first .. first+count-1 (size bs) of H^-1 from a dense factor: per block at
// row r0 a triangular solve of bs columns, (n - r0)^2 bs, and X^T X, (n - r0) bs^2.
inline double inverse_diag_blocks(int n, int bs, int first, int count) {
  double f = 0;
  for (int b = first; b < first + count; ++b) {
    const double m = n - b * bs;
    f += m * m * bs + m * bs * bs;
  }
  return f;
}

// Symmetric eigendecomposition with vectors (Householder + QL) ~9n^3; inverse square root
// adds the composition V f(Λ) V^T, n^3.
inline double syev(double n) { return 9 * n * n * n; }
inline double inverse_sqrt(double n) { return syev(n) + n * n * n; }

// Forward band solve of one column over its last m rows: a row has kd (fewer near the end)
// multiply-adds below the pivot plus the division.
inline double band_forward(double m, double kd) {
  return m <= kd ? m * m : (m - kd) * (2 * kd + 1) + kd * kd;
}

// Band Cholesky, half-bandwidth kd: column j scales kn = min(kd, n-1-j) entries and updates
// the kn(kn+1)/2 window below it.
inline double band_cholesky(int n, int kd) {
  double f = 0;
  for (int j = 0; j < n; ++j) {
    const double kn = kd < n - 1 - j ? kd : n - 1 - j;
    f += kn + kn * (kn + 1) + 1;
  }
  return f;
}

// Band solve (forward and backward) of one right-hand side.
inline double band_solve(int n, int kd) { return 2 * band_forward(n, kd); }

// Block of H^-1 on rows first + a * stride (a < count) from the band factor: a forward solve
// per column from its own row, then Y^T Y over the rows below the later column.
inline double band_strided_block(int n, int kd, int first, int stride, int count) {
  double f = 0;
  for (int a = 0; a < count; ++a) {
    const double m = n - (first + double(a) * stride);
    f += band_forward(m, kd) + 2 * m * (a + 1);
  }
  return f;
}

}  // namespace flops
}  // namespace linalg
}  // namespace perfex
