#pragma once
// Internal: the matrix products of the blocked one-thread kernels (the eigensolver's blocked
// Householder reduction and back-transformation, divide and conquer's merges), register-tiled
// for one host core.
//
// A tile of the product stays in vector registers while the shared dimension streams through,
// so each element loaded feeds several multiply-adds (the compiler left to itself vectorises
// these loops along the shared dimension, or spills the tile). The registers are the
// compiler's generic vectors of `lanes` doubles (GCC/Clang vector extensions): it lowers them to
// whatever the build targets (AVX2, AVX-512, SSE2), always with the same arithmetic per entry.
// Reductions along rows (Aᵀ B) keep `lanes` partial sums per entry, one per row residue, added
// in a fixed order at the end: a result depends on neither the build's vector width nor the
// thread that runs it.
//
// Host only: the device (and multi-thread team) paths split these products over a team's
// threads and vector lanes in the kernels that call them, and never reach these functions (a
// device build compiles them to an abort).
#include <perfex/detail/kokkos_compat.hpp>

namespace perfex {
namespace linalg {
namespace detail {

// Rows per vector register tile and partial sum group (an AVX2 register of doubles).
constexpr int lanes = 4;

#if !defined(__CUDA_ARCH__) && !defined(__HIP_DEVICE_COMPILE__)
#define PERFEX_HOST_TILES 1
// No vector crosses a call, in or out, by value: GCC warns (-Wpsabi) that passing one without
// AVX changes the ABI, in a consumer's build at the default -march, and reports it where the
// template is instantiated, beyond the reach of a pragma here.
typedef double lane_vector __attribute__((vector_size(lanes * sizeof(double))));

KOKKOS_FORCEINLINE_FUNCTION void load_lanes(lane_vector& v, const double* p) {
  __builtin_memcpy(&v, p, sizeof v);
}
KOKKOS_FORCEINLINE_FUNCTION void store_lanes(double* p, const lane_vector& v) {
  __builtin_memcpy(p, &v, sizeof v);
}
KOKKOS_FORCEINLINE_FUNCTION void broadcast(lane_vector& v, double x) {
  v = lane_vector{x, x, x, x};
}

// C(TV * lanes rows x TC tile) = C + s A B (Accumulate) or s A B, s = -1 (Subtract) or 1; A: TV
// * lanes rows x k (lda); B(p, c) = B[p * brs + c * bcs].
template <int TV, int TC, bool Accumulate, bool Subtract>
KOKKOS_FORCEINLINE_FUNCTION void gemm_nn_tile(int k, const double* A, long lda, const double* B,
                                              long brs, long bcs, double* C, long ldc) {
  lane_vector acc[TC][TV];
  for (int c = 0; c < TC; ++c)
    for (int v = 0; v < TV; ++v)
      if (Accumulate)
        load_lanes(acc[c][v], C + v * lanes + c * ldc);
      else
        acc[c][v] = lane_vector{};
  for (int p = 0; p < k; ++p) {
    lane_vector a[TV];
    for (int v = 0; v < TV; ++v) load_lanes(a[v], A + v * lanes + p * lda);
    for (int c = 0; c < TC; ++c) {
      lane_vector b;
      broadcast(b, B[p * brs + c * bcs]);
      for (int v = 0; v < TV; ++v) {
        if (Subtract)
          acc[c][v] -= a[v] * b;
        else
          acc[c][v] += a[v] * b;
      }
    }
  }
  for (int c = 0; c < TC; ++c)
    for (int v = 0; v < TV; ++v) store_lanes(C + v * lanes + c * ldc, acc[c][v]);
}

// The same for a single row (the rows past the last whole tile), in the same order.
template <int TC, bool Accumulate, bool Subtract>
KOKKOS_FORCEINLINE_FUNCTION void gemm_nn_row(int k, const double* A, long lda, const double* B,
                                             long brs, long bcs, double* C, long ldc) {
  double acc[TC];
  for (int c = 0; c < TC; ++c) acc[c] = Accumulate ? C[c * ldc] : 0.0;
  for (int p = 0; p < k; ++p)
    for (int c = 0; c < TC; ++c) {
      if (Subtract)
        acc[c] -= A[p * lda] * B[p * brs + c * bcs];
      else
        acc[c] += A[p * lda] * B[p * brs + c * bcs];
    }
  for (int c = 0; c < TC; ++c) C[c * ldc] = acc[c];
}

template <int TC, bool Accumulate, bool Subtract>
KOKKOS_INLINE_FUNCTION void gemm_nn_columns(int m, int k, const double* A, long lda,
                                            const double* B, long brs, long bcs, double* C,
                                            long ldc) {
  int i = 0;
  for (; i + 2 * lanes <= m; i += 2 * lanes)
    gemm_nn_tile<2, TC, Accumulate, Subtract>(k, A + i, lda, B, brs, bcs, C + i, ldc);
  if (i + lanes <= m) {
    gemm_nn_tile<1, TC, Accumulate, Subtract>(k, A + i, lda, B, brs, bcs, C + i, ldc);
    i += lanes;
  }
  for (; i < m; ++i) gemm_nn_row<TC, Accumulate, Subtract>(k, A + i, lda, B, brs, bcs, C + i, ldc);
}

// C(TP x TC tile) = C + Aᵀ B (Accumulate) or Aᵀ B over m rows: lanes partial sums per entry.
template <int TP, int TC, bool Accumulate>
KOKKOS_FORCEINLINE_FUNCTION void gemm_tn_tile(int m, const double* A, long lda, const double* B,
                                              long ldb, double* C, long ldc) {
  lane_vector acc[TP][TC];
  for (int p = 0; p < TP; ++p)
    for (int c = 0; c < TC; ++c) acc[p][c] = lane_vector{};
  int i = 0;
  for (; i + lanes <= m; i += lanes) {
    lane_vector b[TC];
    for (int c = 0; c < TC; ++c) load_lanes(b[c], B + i + c * ldb);
    for (int p = 0; p < TP; ++p) {
      lane_vector a;
      load_lanes(a, A + i + p * lda);
      for (int c = 0; c < TC; ++c) acc[p][c] += a * b[c];
    }
  }
  for (int l = 0; i + l < m; ++l)
    for (int p = 0; p < TP; ++p)
      for (int c = 0; c < TC; ++c) acc[p][c][l] += A[i + l + p * lda] * B[i + l + c * ldb];
  for (int p = 0; p < TP; ++p)
    for (int c = 0; c < TC; ++c) {
      const double s = (acc[p][c][0] + acc[p][c][1]) + (acc[p][c][2] + acc[p][c][3]);
      C[p + c * ldc] = Accumulate ? C[p + c * ldc] + s : s;
    }
}

// y[j .. m) += the contributions of the symmetric A's columns j .. j+TC-1 (lower triangle,
// column-major, lda) to A x: the block's own TC x TC triangle, then below it y[i] += A(i, c) x[c]
// over the rows and, with lanes partial sums, y[c] += A(i, c) x[i].
template <int TC>
KOKKOS_FORCEINLINE_FUNCTION void symv_lower_columns(int m, int j, const double* A, long lda,
                                                    const double* x, double* y) {
  const double* a[TC];
  for (int c = 0; c < TC; ++c) a[c] = A + (j + c) * lda;
  for (int c = 0; c < TC; ++c) {
    y[j + c] += a[c][j + c] * x[j + c];
    for (int r = c + 1; r < TC; ++r) {
      y[j + r] += a[c][j + r] * x[j + c];
      y[j + c] += a[c][j + r] * x[j + r];
    }
  }
  lane_vector acc[TC], xc[TC];
  for (int c = 0; c < TC; ++c) {
    acc[c] = lane_vector{};
    broadcast(xc[c], x[j + c]);
  }
  int i = j + TC;
  for (; i + lanes <= m; i += lanes) {
    lane_vector xi, yi;
    load_lanes(xi, x + i);
    load_lanes(yi, y + i);
    for (int c = 0; c < TC; ++c) {
      lane_vector ac;
      load_lanes(ac, a[c] + i);
      yi += ac * xc[c];
      acc[c] += ac * xi;
    }
    store_lanes(y + i, yi);
  }
  for (int l = 0; i + l < m; ++l)
    for (int c = 0; c < TC; ++c) {
      y[i + l] += a[c][i + l] * x[j + c];
      acc[c][l] += a[c][i + l] * x[i + l];
    }
  for (int c = 0; c < TC; ++c) y[j + c] += (acc[c][0] + acc[c][1]) + (acc[c][2] + acc[c][3]);
}

template <int TC, bool Accumulate>
KOKKOS_INLINE_FUNCTION void gemm_tn_rows(int m, int np, const double* A, long lda, const double* B,
                                         long ldb, double* C, long ldc) {
  int p = 0;
  for (; p + 4 <= np; p += 4)
    gemm_tn_tile<4, TC, Accumulate>(m, A + p * lda, lda, B, ldb, C + p, ldc);
  for (; p < np; ++p) gemm_tn_tile<1, TC, Accumulate>(m, A + p * lda, lda, B, ldb, C + p, ldc);
}
#endif

// C (m x nc, leading dimension ldc) = C + s A B (Accumulate) or s A B, s = -1 (Subtract) or 1;
// A: m x k column-major (lda); B(p, c) = B[p * brs + c * bcs] (B or a transpose). Each entry
// sums its k products in order, after C's value. C must not overlap A or B.
template <bool Accumulate, bool Subtract>
KOKKOS_INLINE_FUNCTION void gemm_nn_sequential(int m, int nc, int k, const double* A, long lda,
                                               const double* B, long brs, long bcs, double* C,
                                               long ldc) {
#ifdef PERFEX_HOST_TILES
  int c = 0;
  for (; c + 4 <= nc; c += 4)
    gemm_nn_columns<4, Accumulate, Subtract>(m, k, A, lda, B + c * bcs, brs, bcs, C + c * ldc, ldc);
  for (; c < nc; ++c)
    gemm_nn_columns<1, Accumulate, Subtract>(m, k, A, lda, B + c * bcs, brs, bcs, C + c * ldc, ldc);
#else
  Kokkos::abort("perfex::linalg: a one-thread host kernel reached on a device");
#endif
}

// y (m) = A x, A symmetric m x m given by its lower triangle (column-major, lda), four columns
// per pass (each element of A read once). y must not overlap A or x.
KOKKOS_INLINE_FUNCTION void symv_lower_sequential(int m, const double* A, long lda, const double* x,
                                                  double* y) {
#ifdef PERFEX_HOST_TILES
  for (int i = 0; i < m; ++i) y[i] = 0;
  int j = 0;
  for (; j + 4 <= m; j += 4) symv_lower_columns<4>(m, j, A, lda, x, y);
  for (; j < m; ++j) symv_lower_columns<1>(m, j, A, lda, x, y);
#else
  Kokkos::abort("perfex::linalg: a one-thread host kernel reached on a device");
#endif
}

// C (np x nc, leading dimension ldc) = C + Aᵀ B (Accumulate) or Aᵀ B; A: m x np, B: m x nc,
// column-major (lda, ldb). Each entry: lanes partial sums over the rows i = l (mod lanes), then
// ((s0 + s1) + (s2 + s3)). C must not overlap A or B.
template <bool Accumulate>
KOKKOS_INLINE_FUNCTION void gemm_tn_sequential(int m, int np, int nc, const double* A, long lda,
                                               const double* B, long ldb, double* C, long ldc) {
#ifdef PERFEX_HOST_TILES
  int c = 0;
  for (; c + 2 <= nc; c += 2)
    gemm_tn_rows<2, Accumulate>(m, np, A, lda, B + c * ldb, ldb, C + c * ldc, ldc);
  for (; c < nc; ++c)
    gemm_tn_rows<1, Accumulate>(m, np, A, lda, B + c * ldb, ldb, C + c * ldc, ldc);
#else
  Kokkos::abort("perfex::linalg: a one-thread host kernel reached on a device");
#endif
}

}  // namespace detail
}  // namespace linalg
}  // namespace perfex
