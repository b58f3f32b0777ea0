#pragma once
// Host LAPACK: thin wrappers of the Fortran routines perfex uses (declared here, no LAPACKE
// needed), usable when PERFEX_HAVE_LAPACK is 1 (always declared, so that code calling them
// compiles either way; only a call links against LAPACK). Used as the host fast path of the batched
// front-ends (Backend::lapack) and as the test oracle. Column-major, lower triangle.
#include <perfex/config.hpp>

#include <cstddef>
#include <vector>

extern "C" {
// gfortran passes the length of CHARACTER arguments as hidden trailing size_t arguments.
void dpotrf_(const char* uplo, const int* n, double* a, const int* lda, int* info,
             std::size_t uplo_len);
void dpotrs_(const char* uplo, const int* n, const int* nrhs, const double* a, const int* lda,
             double* b, const int* ldb, int* info, std::size_t uplo_len);
void dpbtrf_(const char* uplo, const int* n, const int* kd, double* ab, const int* ldab, int* info,
             std::size_t uplo_len);
void dpbtrs_(const char* uplo, const int* n, const int* kd, const int* nrhs, const double* ab,
             const int* ldab, double* b, const int* ldb, int* info, std::size_t uplo_len);
void dpotri_(const char* uplo, const int* n, double* a, const int* lda, int* info,
             std::size_t uplo_len);
void dsytrd_(const char* uplo, const int* n, double* a, const int* lda, double* d, double* e,
             double* tau, double* work, const int* lwork, int* info, std::size_t uplo_len);
void dsyevd_(const char* jobz, const char* uplo, const int* n, double* a, const int* lda, double* w,
             double* work, const int* lwork, int* iwork, const int* liwork, int* info,
             std::size_t jobz_len, std::size_t uplo_len);
}

namespace perfex {
namespace linalg {
namespace lapack {

// Lower Cholesky factor in place; returns LAPACK's info (0 ok, k > 0: leading minor k not PD).
inline int potrf(int n, double* a, int lda) {
  int info = 0;
  dpotrf_("L", &n, a, &lda, &info, 1);
  return info;
}

// b (n x nrhs, ldb) <- H^{-1} b from the lower factor.
inline int potrs(int n, int nrhs, const double* a, int lda, double* b, int ldb) {
  int info = 0;
  dpotrs_("L", &n, &nrhs, a, &lda, b, &ldb, &info, 1);
  return info;
}

// Lower band Cholesky factor in place (ab(d, j) = A(j + d, j), ldab >= kd + 1); LAPACK's info.
inline int pbtrf(int n, int kd, double* ab, int ldab) {
  int info = 0;
  dpbtrf_("L", &n, &kd, ab, &ldab, &info, 1);
  return info;
}

// b (n x nrhs, ldb) <- H^{-1} b from the lower band factor.
inline int pbtrs(int n, int kd, int nrhs, const double* ab, int ldab, double* b, int ldb) {
  int info = 0;
  dpbtrs_("L", &n, &kd, &nrhs, ab, &ldab, b, &ldb, &info, 1);
  return info;
}

// Lower triangle of H^{-1} from the lower factor, in place.
inline int potri(int n, double* a, int lda) {
  int info = 0;
  dpotri_("L", &n, a, &lda, &info, 1);
  return info;
}

// Workspace sizes of dsyevd (jobz = 'V') for n.
struct SyevdWork {
  int lwork;
  int liwork;
};
inline SyevdWork syevd_work_size(int n) {
  if (n <= 1) return {1, 1};
  return {1 + 6 * n + 2 * n * n, 3 + 5 * n};
}

// Eigenvalues ascending in w, eigenvectors in a (columns); lower triangle of a read.
inline int syevd(int n, double* a, int lda, double* w, double* work, int lwork, int* iwork,
                 int liwork) {
  int info = 0;
  dsyevd_("V", "L", &n, a, &lda, w, work, &lwork, iwork, &liwork, &info, 1, 1);
  return info;
}
// Householder reduction of the lower triangle to tridiagonal form: d (n), e (n - 1), tau (n - 1),
// the reflectors below the subdiagonal of a.
inline int sytrd(int n, double* a, int lda, double* d, double* e, double* tau) {
  int info = 0, lwork = -1;
  double query = 0;
  dsytrd_("L", &n, a, &lda, d, e, tau, &query, &lwork, &info, 1);
  lwork = int(query) > 1 ? int(query) : 1;
  std::vector<double> work(static_cast<std::size_t>(lwork));
  dsytrd_("L", &n, a, &lda, d, e, tau, work.data(), &lwork, &info, 1);
  return info;
}

inline int syevd(int n, double* a, int lda, double* w) {
  const SyevdWork s = syevd_work_size(n);
  std::vector<double> work(std::size_t(s.lwork));
  std::vector<int> iwork(std::size_t(s.liwork));
  return syevd(n, a, lda, w, work.data(), s.lwork, iwork.data(), s.liwork);
}

}  // namespace lapack
}  // namespace linalg
}  // namespace perfex
