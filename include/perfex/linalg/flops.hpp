#pragma once
// Flop models of the linalg kernels (one multiply-add = 2 flop), host only: what the
// algorithms here actually do, for GFLOP/s figures in benchmarks and frame summaries.
#include <perfex/linalg/tridiagonal.hpp>

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

// Eigenvectors of a symmetric tridiagonal of order n by QL with the rotations accumulated
// into n-vectors: about one sweep over n/2 rotations per eigenvalue, 6 flops per entry.
inline double tridiagonal_ql(double n) { return 6 * n * n * n; }

// Divide and conquer on a tridiagonal of order n (leaves <= dc_leaf by QL): per merge of
// n0 = n1 + n2, the halves' eigenvectors times the merged ones, n0 (n1^2 + n2^2) multiply-adds
// (no deflation counted), and ~17 n0^2 for the secular equations and the Loewner vectors.
inline double tridiagonal_dc(int n) {
  if (n <= detail::dc_leaf) return tridiagonal_ql(n);
  const double n1 = n / 2, n2 = n - n / 2;
  return tridiagonal_dc(n / 2) + tridiagonal_dc(n - n / 2) + 2 * n * (n1 * n1 + n2 * n2) +
         17.0 * n * n;
}

// Symmetric eigendecomposition with vectors as the one-thread path runs it: Householder
// tridiagonalisation 4n^3/3, then for n > dc_leaf divide and conquer and the reflectors applied
// to its eigenvectors (2n^3), else explicit Q (4n^3/3) and QL. (Teams with several threads or
// vector lanes always take explicit Q + QL.) The inverse square root adds the composition
// V f(mu) V^T, lower triangle: n^3.
inline double syev(int n) {
  const double m = n;
  const double tridiagonalise = 4 * m * m * m / 3;
  if (n > detail::dc_leaf) return tridiagonalise + tridiagonal_dc(n) + 2 * m * m * m;
  return tridiagonalise + 4 * m * m * m / 3 + tridiagonal_ql(m);
}
inline double inverse_sqrt(int n) { return syev(n) + double(n) * n * n; }

// A fibre's decorrelation from its block's eigenpairs without forming C^-1/2 (the patch
// solver): syev, then with W = V mu^-1/4 the row sums and Q phi as W (W^T x) (8 n^2) and the
// resolution band, (2 ndiag + 1) dot products of W's rows per core column.
inline double fibre_decorrelation(int n, int ndiag, int ncore) {
  return syev(n) + 8.0 * n * n + 2.0 * ncore * (2 * ndiag + 1) * n;
}

// Forward band solve of one column over its last m rows: a row has kd (fewer near the end)
// multiply-adds below the pivot plus the division.
inline double band_forward(double m, double kd) {
  return m <= kd ? m * m : (m - kd) * (2 * kd + 1) + kd * kd;
}

// Band Cholesky, half-bandwidth kd: column j scales kn = min(kd, n-1-j) entries and updates
// the kn(kn+1)/2 window below it. The factor twisted at any row costs the same (its reversed
// tail of order m does the work of the plain factor's last m columns).
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

// Block of H^-1 on rows first + a * stride (a < count) from the factor twisted at `twist`
// (team_band_cholesky_twisted; twist = n: from L alone): per column the forward solves above
// the twist (from its own row) and in the reversed tail (from its own row, or the last kd rows
// for a column starting above the twist), then x_a . x_c over the rows both fill.
inline double band_strided_block(int n, int kd, int first, int stride, int count, int twist) {
  const int m = n - twist, tail0 = m - kd > 0 ? m - kd : 0;
  double f = 0, below = 0;  // below: sum of tail lengths of the earlier columns below the twist
  int nabove = 0;
  for (int a = 0; a < count; ++a) {
    const int s = first + a * stride;
    if (s < twist) {
      // Solves; products with every earlier column (all above the twist too).
      f += band_forward(n - s, kd) - band_forward(n - twist, kd) + band_forward(m - tail0, kd);
      f += 2.0 * (a + 1) * ((twist - s) + (m - tail0));
      ++nabove;
    } else {
      const int len = s - twist + 1;  // its tail rows
      f += band_forward(len, kd);
      below += len;
      f += 2.0 * (below + nabove * double(len < m - tail0 ? len : m - tail0));
    }
  }
  return f;
}
inline double band_strided_block(int n, int kd, int first, int stride, int count) {
  return band_strided_block(n, kd, first, stride, count, n);
}

}  // namespace flops
}  // namespace linalg
}  // namespace perfex
