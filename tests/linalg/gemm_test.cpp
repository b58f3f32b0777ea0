// Tests of the one-thread register-tiled products (tag [linalg]): every tile shape and remainder
// of gemm_nn_sequential (C ± A B, B given by any strides), gemm_tn_sequential (C + Aᵀ B) and
// symv_lower_sequential against sums in long double, on the host (the kernels are host-only).
#include "perfex_test.hpp"

#include <perfex/linalg/gemm.hpp>

#include <cmath>
#include <random>
#include <vector>

namespace pd = perfex::linalg::detail;

namespace {

std::vector<double> random_values(std::size_t count, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<double> x(count);
  for (double& v : x) v = u(rng);
  return x;
}

// |x - ref| within a few roundings of the sum of the magnitudes of its terms.
void require_close(double x, long double ref, long double magnitude) {
  REQUIRE(std::abs(static_cast<long double>(x) - ref) <= 8 * 2.3e-16L * (magnitude + 1e-300L));
}

}  // namespace

TEST_CASE("gemm: C +- A B with every tile shape and remainder", "[linalg]") {
  for (int m : {0, 1, 3, 4, 5, 8, 9, 13, 17, 31})
    for (int nc : {1, 2, 3, 4, 5, 9})
      for (int k : {0, 1, 2, 5, 8, 11})
        for (bool transposed_b : {false, true}) {
          const long lda = m + 3, ldc = m + 2;
          const auto A = random_values(static_cast<std::size_t>(lda) * k + 1, 1);
          // B (k x nc) stored as B or as its transpose (nc x k), with padding.
          const long brs = transposed_b ? nc + 1 : 1, bcs = transposed_b ? 1 : k + 2;
          const auto B = random_values(static_cast<std::size_t>(brs * k + bcs * nc) + 1, 2);
          const auto C0 = random_values(static_cast<std::size_t>(ldc) * nc, 3);
          for (int variant = 0; variant < 4; ++variant) {
            const bool accumulate = variant & 1, subtract = variant & 2;
            std::vector<double> C = C0;
            if (accumulate && subtract)
              pd::gemm_nn_sequential<true, true>(m, nc, k, A.data(), lda, B.data(), brs, bcs,
                                                 C.data(), ldc);
            else if (accumulate)
              pd::gemm_nn_sequential<true, false>(m, nc, k, A.data(), lda, B.data(), brs, bcs,
                                                  C.data(), ldc);
            else if (subtract)
              pd::gemm_nn_sequential<false, true>(m, nc, k, A.data(), lda, B.data(), brs, bcs,
                                                  C.data(), ldc);
            else
              pd::gemm_nn_sequential<false, false>(m, nc, k, A.data(), lda, B.data(), brs, bcs,
                                                   C.data(), ldc);
            for (int c = 0; c < nc; ++c)
              for (int i = 0; i < m; ++i) {
                long double ref = accumulate ? C0[i + c * ldc] : 0.0L, mag = std::abs(ref);
                for (int p = 0; p < k; ++p) {
                  const long double t = static_cast<long double>(A[i + p * lda]) *
                                        B[static_cast<std::size_t>(p * brs + c * bcs)];
                  ref += subtract ? -t : t;
                  mag += std::abs(t);
                }
                require_close(C[i + c * ldc], ref, mag);
              }
            // The padding rows between columns are not touched.
            for (int c = 0; c < nc; ++c)
              for (long i = m; i < ldc; ++i) REQUIRE(C[i + c * ldc] == C0[i + c * ldc]);
          }
        }
}

TEST_CASE("gemm: C + A^T B with every tile shape and remainder", "[linalg]") {
  for (int m : {0, 1, 3, 4, 5, 7, 8, 9, 74})
    for (int np : {1, 2, 3, 4, 5, 9})
      for (int nc : {1, 2, 3, 5}) {
        const long lda = m + 1, ldb = m + 3, ldc = np + 2;
        const auto A = random_values(static_cast<std::size_t>(lda) * np, 4);
        const auto B = random_values(static_cast<std::size_t>(ldb) * nc, 5);
        const auto C0 = random_values(static_cast<std::size_t>(ldc) * nc, 6);
        for (bool accumulate : {false, true}) {
          std::vector<double> C = C0;
          if (accumulate)
            pd::gemm_tn_sequential<true>(m, np, nc, A.data(), lda, B.data(), ldb, C.data(), ldc);
          else
            pd::gemm_tn_sequential<false>(m, np, nc, A.data(), lda, B.data(), ldb, C.data(), ldc);
          for (int c = 0; c < nc; ++c)
            for (int p = 0; p < np; ++p) {
              long double ref = accumulate ? C0[p + c * ldc] : 0.0L, mag = std::abs(ref);
              for (int i = 0; i < m; ++i) {
                const long double t = static_cast<long double>(A[i + p * lda]) * B[i + c * ldb];
                ref += t;
                mag += std::abs(t);
              }
              require_close(C[p + c * ldc], ref, mag);
            }
          // Column by column gives the same bits: an entry's partial sums do not depend on the
          // tile it falls in.
          std::vector<double> D = C0;
          for (int c = 0; c < nc; ++c)
            for (int p = 0; p < np; ++p) {
              if (accumulate)
                pd::gemm_tn_sequential<true>(m, 1, 1, A.data() + p * lda, lda, B.data() + c * ldb,
                                             ldb, D.data() + p + c * ldc, ldc);
              else
                pd::gemm_tn_sequential<false>(m, 1, 1, A.data() + p * lda, lda, B.data() + c * ldb,
                                              ldb, D.data() + p + c * ldc, ldc);
            }
          REQUIRE(D == C);
        }
      }
}

TEST_CASE("gemm: symmetric matrix-vector product from the lower triangle", "[linalg]") {
  for (int m : {0, 1, 2, 3, 4, 5, 7, 8, 9, 33, 73}) {
    const long lda = m + 2;
    auto A = random_values(static_cast<std::size_t>(lda) * (m > 0 ? m : 1), 7);
    for (int j = 0; j < m; ++j)  // the upper triangle is not read: poison it
      for (int i = 0; i < j; ++i) A[i + j * lda] = std::nan("");
    const auto x = random_values(static_cast<std::size_t>(m), 8);
    std::vector<double> y(static_cast<std::size_t>(m), 99.0);
    pd::symv_lower_sequential(m, A.data(), lda, x.data(), y.data());
    for (int i = 0; i < m; ++i) {
      long double ref = 0, mag = 0;
      for (int j = 0; j < m; ++j) {
        const long double t =
            static_cast<long double>(i >= j ? A[i + j * lda] : A[j + i * lda]) * x[j];
        ref += t;
        mag += std::abs(t);
      }
      require_close(y[i], ref, mag);
    }
  }
}
