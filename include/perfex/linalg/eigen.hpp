#pragma once
// Team-level symmetric eigendecomposition and the matrix functions built on it.
//
// team_syev: Householder reduction to tridiagonal form (lower, one reflector per column), then
// the tridiagonal's eigenproblem (tridiagonal.hpp), eigenvalues ascending.
//
// One host thread (Serial, or OpenMP with one-thread teams): the reduction blocked as LAPACK's
// dsytrd (panels of reflectors, then a rank-2nb update of the trailing lower triangle); for
// n > dc_leaf divide and conquer on the tridiagonal (its eigenvectors Z), then Z taken back to
// A's basis by the reflectors in blocks (compact WY) - about 2.2 n^3 + O(n^2) multiply-adds
// with the reduction, against about 5 n^3 for QL with rotations accumulated into the explicit
// Q. Their matrix products are register-tiled (gemm.hpp).
//
// Teams of several threads, device teams, and n <= dc_leaf: Q formed explicitly from the
// reflectors, then implicit QL with the rotations accumulated into it (the reduction of those
// teams unblocked, a reflector at a time). Work split over the
// team's threads and vector lanes: the reduction's matrix-vector and rank-2 updates a column per
// thread, rows over lanes; Q's columns over threads; a QL sweep computed by one thread and
// applied a row of Q per lane.
//
// Iteration cap: 30*n QL sweeps in total (per leaf in divide and conquer) -> not_converged.
// Non-finite input (or a tridiagonal form that is not finite) -> not_converged without
// iterating. On failure A and w are unspecified.
#include <perfex/detail/kokkos_compat.hpp>
#include <perfex/linalg/gemm.hpp>
#include <perfex/linalg/matref.hpp>
#include <perfex/linalg/status.hpp>
#include <perfex/linalg/tridiagonal.hpp>

namespace perfex {
namespace linalg {

// Size (doubles) of the rank-1 `work` view team_syev needs for an n x n matrix (the
// tridiagonal's eigenvectors and divide and conquer's scratch: 3 n^2 + O(n)). work must be
// contiguous (stride 1).
KOKKOS_INLINE_FUNCTION constexpr int syev_work_size(int n) {
  return 6 * n + 8 + n * n + detail::dc_work_size(n);
}

// The part of it a team that is not one host thread uses (explicit Q + QL: 6n + 8 doubles).
KOKKOS_INLINE_FUNCTION constexpr int syev_team_work_size(int n) { return 6 * n + 8; }

// The eigenvalue guard of the matrix functions (gpu_specter's GPU policy): mu raised to
// floor_mu = clip * max mu, so that slightly indefinite or singular matrices stay finite.
KOKKOS_INLINE_FUNCTION double clip_eigenvalue(double mu, double floor_mu) {
  return mu < floor_mu ? floor_mu : mu;
}

namespace detail {

// Work layout.
struct SyevWork {
  double* d;
  double* e;
  double* tau;
  double* p;
  double* cs;
  double* sn;
  double* info;
  double* z;   // n x n: eigenvectors of the tridiagonal (divide and conquer)
  double* dc;  // dc_work_size(n): divide and conquer's scratch
  KOKKOS_INLINE_FUNCTION SyevWork(double* w, int n)
      : d(w),
        e(w + n),
        tau(w + 2 * n),
        p(w + 3 * n),
        cs(w + 4 * n),
        sn(w + 5 * n),
        info(w + 6 * n),
        z(w + 6 * n + 8),
        dc(w + 6 * n + 8 + long(n) * n) {}
};

// Reflectors per panel of the one-thread blocked reduction.
constexpr int tridiagonal_block = 8;

// Householder reflector (LAPACK dlarfg's convention) of a column whose first entry is alpha and
// the rest has squared norm xn2: H = I - tau v v^T maps it to beta e_1, v = (1, rest * scale).
struct Reflector {
  double beta, tau, scale;
};
KOKKOS_INLINE_FUNCTION Reflector householder(double alpha, double xn2) {
  if (xn2 == 0) return {alpha, 0.0, 0.0};
  const double nrm = perfex::math::sqrt(alpha * alpha + xn2);
  const double beta = alpha >= 0 ? -nrm : nrm;
  return {beta, (beta - alpha) / beta, 1.0 / (alpha - beta)};
}

// d, e and tau of the trailing 2 x 2 (or 1 x 1) block once the reflectors are formed.
template <bool Unit>
KOKKOS_INLINE_FUNCTION void tridiagonal_last_block(const MatRef<Unit>& A, int n,
                                                   const SyevWork& W) {
  if (n >= 2) {
    W.d[n - 2] = A(n - 2, n - 2);
    W.e[n - 2] = A(n - 1, n - 2);
    W.tau[n - 2] = 0;
  }
  W.d[n - 1] = A(n - 1, n - 1);
  W.e[n - 1] = 0;
  W.tau[n - 1] = 0;
}

// Householder tridiagonalisation on one host thread, lower triangle only, blocked as LAPACK's
// dsytrd/dlatrd: a panel of nb reflectors is formed with the trailing matrix left as it was
// (each column brought up to date just before its reflector, the symmetric products corrected
// by the panel's earlier reflectors), then the trailing matrix takes one rank-2nb update
// A -= V Y^T + Y V^T, two matrix products (gemm.hpp). Y: n x tridiagonal_block scratch
// (leading dimension n). Same results as tridiagonalize up to rounding.
KOKKOS_INLINE_FUNCTION void tridiagonalize_sequential(const MatRef<true>& A, int n,
                                                      const SyevWork& W, double* Y) {
  constexpr int NB = tridiagonal_block;
  const long lda = A.s1;
  double* x = W.p;  // n: the panel's V^T v and Y^T v
  for (int k0 = 0; k0 + 2 < n; k0 += NB) {
    const int k1 = k0 + NB < n - 2 ? k0 + NB : n - 2;  // reflectors k0 .. k1-1
    for (int k = k0; k < k1; ++k) {
      const int q = k - k0;  // earlier reflectors of the panel
      double* a = A.ptr(0, k);
      // Column k up to date: A(k:n, k) -= V(k:n, :q) Y(k, :q)^T + Y(k:n, :q) V(k, :q)^T.
      if (q > 0) {
        gemm_nn_sequential<true, true>(n - k, 1, q, A.ptr(k, k0), lda, Y + k, n, 1, a + k, lda);
        gemm_nn_sequential<true, true>(n - k, 1, q, Y + k, n, A.ptr(k, k0), lda, 1, a + k, lda);
      }
      W.d[k] = a[k];
      const Reflector h = householder(a[k + 1], dot<true>(n - k - 2, a + k + 2, a + k + 2, 1, 1));
      a[k + 1] = 1.0;
      for (int i = k + 2; i < n; ++i) a[i] *= h.scale;
      W.e[k] = h.beta;
      W.tau[k] = h.tau;
      const double tau = h.tau;
      // y = tau (A22 v - V (Y^T v) - Y (V^T v)), then y -= (tau/2) (y.v) v: A22 - v y^T - y v^T is
      // the two-sided update H A22 H.
      const int m = n - k - 1;
      const double* v = a + k + 1;
      double* y = Y + long(q) * n + k + 1;
      symv_lower_sequential(m, A.ptr(k + 1, k + 1), lda, v, y);
      if (q > 0) {
        gemm_tn_sequential<false>(m, q, 1, Y + k + 1, n, v, m, x, q);
        gemm_nn_sequential<true, true>(m, 1, q, A.ptr(k + 1, k0), lda, x, 1, 1, y, m);
        gemm_tn_sequential<false>(m, q, 1, A.ptr(k + 1, k0), lda, v, m, x, q);
        gemm_nn_sequential<true, true>(m, 1, q, Y + k + 1, n, x, 1, 1, y, m);
      }
      for (int i = 0; i < m; ++i) y[i] *= tau;
      const double K = -0.5 * tau * dot<true>(m, y, v, 1, 1);
      for (int i = 0; i < m; ++i) y[i] += K * v[i];
    }
    // Trailing matrix A(k1:n, k1:n) -= V Y^T + Y V^T, lower triangle (each diagonal block of four
    // columns also takes its upper entries, which nothing reads).
    const int nb = k1 - k0, m = n - k1;
    for (int j = 0; j < m; j += 4) {
      const int nc = m - j < 4 ? m - j : 4;
      double* c = A.ptr(k1 + j, k1 + j);
      gemm_nn_sequential<true, true>(m - j, nc, nb, A.ptr(k1 + j, k0), lda, Y + k1 + j, n, 1, c,
                                     lda);
      gemm_nn_sequential<true, true>(m - j, nc, nb, Y + k1 + j, n, A.ptr(k1 + j, k0), lda, 1, c,
                                     lda);
    }
  }
  tridiagonal_last_block(A, n, W);
}

// Householder tridiagonalisation on a team (any shape), full symmetric storage: a reflector at a
// time, its matrix-vector product a column per thread (dot products over vector lanes), then the
// rank-2 update of both triangles. On exit d (diagonal), e (sub-diagonal, e[n-1] = 0), tau, and
// reflector k (v(k+1) = 1) in A(k+1:n, k). (Device teams keep their matrix in 48 KB of team
// scratch: there is no room for the panel of the blocked form.)
template <bool Unit, class Member>
KOKKOS_INLINE_FUNCTION void tridiagonalize(const Member& member, const MatRef<Unit>& A, int n,
                                           const SyevWork& W) {
  for (int k = 0; k + 2 < n; ++k) {
    double xn2 = 0;
    Kokkos::parallel_reduce(
        Kokkos::TeamVectorRange(member, k + 2, n),
        [&](int i, double& acc) {
          const double x = A(i, k);
          acc += x * x;
        },
        xn2);
    const Reflector h = householder(A(k + 1, k), xn2);
    const double beta = h.beta, tau = h.tau, scale = h.scale;
    const double akk = A(k, k);
    member.team_barrier();  // all have read alpha
    Kokkos::parallel_for(Kokkos::TeamVectorRange(member, k + 1, n), [&](int i) {
      if (i == k + 1)
        A(i, k) = 1.0;
      else
        A(i, k) *= scale;
    });
    Kokkos::single(Kokkos::PerTeam(member), [&]() {
      W.d[k] = akk;
      W.e[k] = beta;
      W.tau[k] = tau;
    });
    member.team_barrier();
    if (tau == 0) continue;
    double* p = W.p;
    const int k1 = k + 1;
    // Full symmetric storage: p(j) = tau * A(k1:n, j) . v (column j == row j), a column per
    // thread, its dot product over vector lanes.
    Kokkos::parallel_for(Kokkos::TeamThreadRange(member, k1, n), [&](int j) {
      double s = 0;
      Kokkos::parallel_reduce(
          Kokkos::ThreadVectorRange(member, k1, n),
          [&](int i, double& acc) { acc += A(i, j) * A(i, k); }, s);
      Kokkos::single(Kokkos::PerThread(member), [&]() { p[j] = tau * s; });
    });
    member.team_barrier();
    double pv = 0;
    Kokkos::parallel_reduce(
        Kokkos::TeamVectorRange(member, k1, n), [&](int i, double& acc) { acc += p[i] * A(i, k); },
        pv);
    const double K = -0.5 * tau * pv;
    member.team_barrier();
    Kokkos::parallel_for(Kokkos::TeamVectorRange(member, k1, n),
                         [&](int i) { p[i] += K * A(i, k); });
    member.team_barrier();
    Kokkos::parallel_for(Kokkos::TeamThreadRange(member, k1, n), [&](int j) {
      const double wj = p[j], vj = A(j, k);
      Kokkos::parallel_for(Kokkos::ThreadVectorRange(member, k1, n),
                           [&](int i) { A(i, j) -= A(i, k) * wj + p[i] * vj; });
    });
    member.team_barrier();
  }
  Kokkos::single(Kokkos::PerTeam(member), [&]() { tridiagonal_last_block(A, n, W); });
  member.team_barrier();
}

// Q = H_0 H_1 ... H_{n-3} formed in place in A (backward accumulation).
template <bool Unit, class Member>
KOKKOS_INLINE_FUNCTION void form_q(const Member& member, const MatRef<Unit>& A, int n,
                                   const SyevWork& W) {
  const bool seq = sequential_team(member);
  for (int k = n - 2; k >= -1; --k) {
    const int c = k + 1;  // row/column that becomes e_c
    Kokkos::parallel_for(Kokkos::TeamVectorRange(member, c, n), [&](int i) {
      A(i, c) = (i == c) ? 1.0 : 0.0;
      if (i != c) A(c, i) = 0.0;
    });
    member.team_barrier();
    if (k < 0) break;
    const double tau = W.tau[k];
    if (tau != 0) {
      const int m = n - c;
      Kokkos::parallel_for(Kokkos::TeamThreadRange(member, c, n), [&](int j) {
        if (seq && Unit) {
          const double* v = A.ptr(c, k);
          double* q = A.ptr(c, j);
          const double s = tau * dot<true>(m, v, q, 1, 1);
          for (int i = 0; i < m; ++i) q[i] -= s * v[i];
        } else {
          double s = 0;
          Kokkos::parallel_reduce(
              Kokkos::ThreadVectorRange(member, c, n),
              [&](int i, double& acc) { acc += A(i, k) * A(i, j); }, s);
          s *= tau;
          Kokkos::parallel_for(Kokkos::ThreadVectorRange(member, c, n),
                               [&](int i) { A(i, j) -= s * A(i, k); });
        }
      });
      member.team_barrier();
    }
  }
}

// Reflectors per block of the one-thread back-transformation.
constexpr int apply_q_block = 8;

// Scratch (doubles) of apply_q_sequential for order n (it runs after divide and conquer, in its
// scratch): a block's reflectors V and V T, V^T V, T and V^T Z.
KOKKOS_INLINE_FUNCTION constexpr int apply_q_work_size(int n) {
  return 3 * n * apply_q_block + 2 * apply_q_block * apply_q_block;
}

// Z (n x n, leading dimension ldz) <- Q Z, Q = H_0 H_1 ... H_{n-3} the reflectors of
// tridiagonalize in A, one host thread, blocks of apply_q_block reflectors from the last in
// compact WY form (LAPACK dlarft/dlarfb): H_kb ... H_{kb+nb-1} = I - V T V^T, so that
// Z <- Z - (V T) (V^T Z) is two matrix products of the block's rows (gemm.hpp).
// work: apply_q_work_size(n) doubles.
template <bool Unit>
KOKKOS_INLINE_FUNCTION void apply_q_sequential(const MatRef<Unit>& A, int n, const double* tau,
                                               double* Z, long ldz, double* work) {
  constexpr int NB = apply_q_block;
  for (int top = n - 2; top > 0; top -= NB) {
    const int kb = top - NB > 0 ? top - NB : 0, nb = top - kb;  // reflectors kb .. top-1
    // V (m x nb, leading dimension m): v_p = A(r0 + p + 1 .., kb + p) below its unit entry at
    // row p, zero above; rows relative to r0 = kb + 1.
    const int r0 = kb + 1, m = n - r0;
    double* V = work;
    double* VT = V + long(m) * nb;  // V T
    double* G = VT + long(m) * nb;  // V^T V
    double* T = G + NB * NB;        // upper triangular
    double* Y = T + NB * NB;        // V^T Z (nb x n)
    for (int p = 0; p < nb; ++p) {
      double* v = V + long(p) * m;
      for (int i = 0; i < p; ++i) v[i] = 0;
      v[p] = 1;
      for (int i = p + 1; i < m; ++i) v[i] = A(r0 + i, kb + p);
    }
    gemm_tn_sequential<false>(m, nb, nb, V, m, V, m, G, NB);
    // T(p,p) = tau_p, T(0:p, p) = -tau_p T(0:p, 0:p) V(:, 0:p)^T v_p.
    for (int p = 0; p < nb; ++p) {
      const double tp = tau[kb + p];
      for (int q = 0; q < p; ++q) {
        double t = 0;
        for (int l = q; l < p; ++l) t += T[q + l * NB] * G[l + p * NB];
        T[q + p * NB] = -tp * t;
      }
      T[p + p * NB] = tp;
      for (int q = p + 1; q < nb; ++q) T[q + p * NB] = 0;
    }
    gemm_nn_sequential<false, false>(m, nb, nb, V, m, T, 1, NB, VT, m);
    gemm_tn_sequential<false>(m, nb, n, V, m, Z + r0, ldz, Y, NB);
    gemm_nn_sequential<true, true>(m, n, nb, VT, m, Y, 1, NB, Z + r0, ldz);
  }
}

// Eigenpairs sorted by ascending eigenvalue on a team (selection sort, column swaps over the
// team's lanes).
template <bool Unit, class Member>
KOKKOS_INLINE_FUNCTION void sort_eigenpairs_team(const Member& member, const MatRef<Unit>& A, int n,
                                                 double* d) {
  for (int i = 0; i + 1 < n; ++i) {
    int kmin = i;
    for (int k = i + 1; k < n; ++k)
      if (d[k] < d[kmin]) kmin = k;
    if (kmin == i) continue;
    member.team_barrier();
    Kokkos::parallel_for(Kokkos::TeamVectorRange(member, 0, n), [&](int r) {
      const double t = A(r, i);
      A(r, i) = A(r, kmin);
      A(r, kmin) = t;
    });
    Kokkos::single(Kokkos::PerTeam(member), [&]() {
      const double t = d[i];
      d[i] = d[kmin];
      d[kmin] = t;
    });
    member.team_barrier();
  }
}

template <bool Unit, class Member, class WVec>
KOKKOS_INLINE_FUNCTION int team_syev_impl(const Member& member, const MatRef<Unit>& A, int n,
                                          const WVec& w, double* work) {
  const SyevWork W(work, n);
  if (n == 0) return ok;
  // Matrices with entries far from 1 (|a| > 1e150 or < 1e-150) are scaled first so that the
  // sums of squares of the reduction neither overflow nor underflow; others untouched.
  // (NaN entries are skipped here; the tridiagonal form's finite check catches them.)
  double amax = 0;
  if (sequential_team(member)) {  // by columns: no index division per entry
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < n; ++i) {
        const double a = perfex::math::abs(A(i, j));
        if (a > amax) amax = a;
      }
  } else {
    Kokkos::parallel_reduce(
        Kokkos::TeamVectorRange(member, 0, n * n),
        [&](int ij, double& m) {
          const double a = perfex::math::abs(A(ij % n, ij / n));
          if (a > m) m = a;
        },
        Kokkos::Max<double>(amax));
  }
  const bool rescale = perfex::math::isfinite(amax) && amax > 0 && (amax > 1e150 || amax < 1e-150);
  if (rescale) {
    member.team_barrier();
    const double inv = 1.0 / amax;
    Kokkos::parallel_for(Kokkos::TeamThreadRange(member, 0, n), [&](int j) {
      Kokkos::parallel_for(Kokkos::ThreadVectorRange(member, 0, n), [&](int i) { A(i, j) *= inv; });
    });
    member.team_barrier();
  }
  if constexpr (Unit) {
    if (sequential_team(member))
      tridiagonalize_sequential(A, n, W, W.z);
    else
      tridiagonalize<Unit>(member, A, n, W);
  } else {
    tridiagonalize<Unit>(member, A, n, W);
  }
  // Finite check of the tridiagonal form (non-finite input propagates into it).
  bool finite = true;
  for (int i = 0; i < n; ++i)
    finite = finite && perfex::math::isfinite(W.d[i]) && perfex::math::isfinite(W.e[i]);
  if (!finite) return not_converged;
  int status;
  if (sequential_team(member) && n > dc_leaf) {
    // Divide and conquer on the tridiagonal, then its eigenvectors back to A's basis.
    status = tridiagonal_dc(n, W.d, W.e, W.z, n, W.dc);
    apply_q_sequential<Unit>(A, n, W.tau, W.z, n, W.dc);
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < n; ++i) A(i, j) = W.z[i + long(j) * n];
  } else {
    form_q<Unit>(member, A, n, W);
    if (sequential_team(member)) {
      status = ql_sequential<Unit>(A, n, W.d, W.e, 30 * n);
      sort_eigenpairs<Unit>(A, n, W.d, n);
    } else {
      status = ql_team<Unit>(member, A, n, W.d, W.e, W.cs, W.sn, W.info, 30 * n);
      sort_eigenpairs_team<Unit>(member, A, n, W.d);
    }
  }
  const double wscale = rescale ? amax : 1.0;
  Kokkos::parallel_for(Kokkos::TeamVectorRange(member, 0, n),
                       [&](int i) { w(i) = W.d[i] * wscale; });
  member.team_barrier();
  return status;
}

// A <- V diag(f(mu)) V^T (full symmetric), f(mu) = mu^power with power = -1/2 or 1/2, after the
// guard mu <- max(mu, clip * max mu). V: eigenvectors (columns), w: eigenvalues ascending.
template <bool UnitA, bool UnitV, class Member, class WVec>
KOKKOS_INLINE_FUNCTION void compose(const Member& member, const MatRef<UnitA>& A,
                                    const MatRef<UnitV>& V, int n, const WVec& w, double* f,
                                    double clip, bool inverse) {
  const double mumax = w(n - 1);
  const double floor_mu = clip * mumax;
  Kokkos::parallel_for(Kokkos::TeamVectorRange(member, 0, n), [&](int k) {
    const double r = perfex::math::sqrt(clip_eigenvalue(w(k), floor_mu));
    f[k] = inverse ? 1.0 / r : r;
  });
  member.team_barrier();
  // Lower triangle: A(i, j) = sum_k V(i, k) f_k V(j, k), i >= j, a column per thread (rows over
  // vector lanes); then mirror.
  const bool seq = sequential_team(member);
  Kokkos::parallel_for(Kokkos::TeamThreadRange(member, 0, n), [&](int j) {
    if (seq && UnitA && UnitV) {
      double* a = A.ptr(0, j);
      for (int i = j; i < n; ++i) a[i] = 0;
      int k = 0;
      for (; k + 4 <= n; k += 4) {
        const double t0 = f[k] * V(j, k), t1 = f[k + 1] * V(j, k + 1), t2 = f[k + 2] * V(j, k + 2),
                     t3 = f[k + 3] * V(j, k + 3);
        const double* v0 = V.ptr(0, k);
        const double* v1 = V.ptr(0, k + 1);
        const double* v2 = V.ptr(0, k + 2);
        const double* v3 = V.ptr(0, k + 3);
        for (int i = j; i < n; ++i) a[i] += (t0 * v0[i] + t1 * v1[i]) + (t2 * v2[i] + t3 * v3[i]);
      }
      for (; k < n; ++k) {
        const double t = f[k] * V(j, k);
        const double* v = V.ptr(0, k);
        for (int i = j; i < n; ++i) a[i] += t * v[i];
      }
    } else {
      Kokkos::parallel_for(Kokkos::ThreadVectorRange(member, j, n), [&](int i) {
        double s = 0;
        for (int k = 0; k < n; ++k) s += V(i, k) * f[k] * V(j, k);
        A(i, j) = s;
      });
    }
  });
  member.team_barrier();
  Kokkos::parallel_for(Kokkos::TeamThreadRange(member, 0, n), [&](int j) {
    Kokkos::parallel_for(Kokkos::ThreadVectorRange(member, 0, j),
                         [&](int i) { A(i, j) = A(j, i); });
  });
  member.team_barrier();
}

template <class Member, class AView, class VView, class WVec, class Work>
KOKKOS_INLINE_FUNCTION int matrix_function(const Member& member, const AView& A, const VView& V,
                                           const WVec& w, const Work& work, double clip,
                                           bool inverse);

}  // namespace detail

// Symmetric eigendecomposition. A (n x n, full symmetric input; both triangles read) is
// overwritten by the orthonormal eigenvectors (columns); w(0..n-1) gets the eigenvalues in
// ascending order. work: contiguous rank-1 view with at least syev_work_size(n) doubles.
// Returns ok or not_converged (same on every thread of the team).
template <class Member, class AView, class WVec, class Work>
KOKKOS_INLINE_FUNCTION int team_syev(const Member& member, const AView& A, const WVec& w,
                                     const Work& work) {
  const int n = int(A.extent(0));
  if (detail::unit_rows(A))
    return detail::team_syev_impl<true>(member, detail::mat<true>(A), n, w, work.data());
  return detail::team_syev_impl<false>(member, detail::mat<false>(A), n, w, work.data());
}

namespace detail {
template <class Member, class AView, class VView, class WVec, class Work>
KOKKOS_INLINE_FUNCTION int matrix_function(const Member& member, const AView& A, const VView& V,
                                           const WVec& w, const Work& work, double clip,
                                           bool inverse) {
  const int n = int(A.extent(0));
  if (n == 0) return ok;
  Kokkos::parallel_for(Kokkos::TeamThreadRange(member, 0, n), [&](int j) {
    Kokkos::parallel_for(Kokkos::ThreadVectorRange(member, 0, n),
                         [&](int i) { V(i, j) = A(i, j); });
  });
  member.team_barrier();
  const int st = team_syev(member, V, w, work);
  if (st != ok) return st;
  if (!(w(n - 1) > 0)) return not_positive_definite;
  double* f = work.data();  // syev's work is free again: n doubles for f(mu)
  const bool ua = unit_rows(A), uv = unit_rows(V);
  if (ua && uv)
    compose<true, true>(member, mat<true>(A), mat<true>(V), n, w, f, clip, inverse);
  else
    compose<false, false>(member, mat<false>(A), mat<false>(V), n, w, f, clip, inverse);
  return ok;
}
}  // namespace detail

// Matrix functions through team_syev. A (n x n, full symmetric) <- A^{-1/2} (team_inverse_sqrt)
// or A^{1/2} (team_sqrt), symmetric, both triangles written.
// Eigenvalue guard (the policy of gpu_specter's GPU path): mu <- max(mu, clip * max mu) before
// the square root, clip = 1e-14 by default; so slightly indefinite or singular inputs give
// finite results. Returns ok, not_converged (eigensolver), or not_positive_definite when the
// largest eigenvalue is not > 0 (A unspecified then).
// Scratch: V (n x n, rank 2), w (n; eigenvalues ascending on exit), work (syev_work_size(n),
// contiguous).
template <class Member, class AView, class VView, class WVec, class Work>
KOKKOS_INLINE_FUNCTION int team_inverse_sqrt(const Member& member, const AView& A, const VView& V,
                                             const WVec& w, const Work& work, double clip = 1e-14) {
  return detail::matrix_function(member, A, V, w, work, clip, true);
}

template <class Member, class AView, class VView, class WVec, class Work>
KOKKOS_INLINE_FUNCTION int team_sqrt(const Member& member, const AView& A, const VView& V,
                                     const WVec& w, const Work& work, double clip = 1e-14) {
  return detail::matrix_function(member, A, V, w, work, clip, false);
}

}  // namespace linalg
}  // namespace perfex
