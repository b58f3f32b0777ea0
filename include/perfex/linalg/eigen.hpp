#pragma once
// Team-level symmetric eigendecomposition and the matrix functions built on it.
//
// team_syev: Householder reduction to tridiagonal form (lower, one reflector per column), then
// the tridiagonal's eigenproblem (tridiagonal.hpp), eigenvalues ascending.
//
// One host thread (Serial, or OpenMP with one-thread teams), n > dc_leaf: divide and conquer on
// the tridiagonal (its eigenvectors Z), then Z taken back to A's basis by the reflectors in
// blocks of four (compact WY) - about 2.2 n^3 + O(n^2) multiply-adds with the reduction, against
// about 5 n^3 for QL with rotations accumulated into the explicit Q. The reduction there uses
// the lower triangle only.
//
// Teams of several threads, device teams, and n <= dc_leaf: Q formed explicitly from the
// reflectors, then implicit QL with the rotations accumulated into it. Work split over the
// team's threads and vector lanes: the reduction's matrix-vector and rank-2 updates a column per
// thread, rows over lanes; Q's columns over threads; a QL sweep computed by one thread and
// applied a row of Q per lane.
//
// Iteration cap: 30*n QL sweeps in total (per leaf in divide and conquer) -> not_converged.
// Non-finite input (or a tridiagonal form that is not finite) -> not_converged without
// iterating. On failure A and w are unspecified.
#include <perfex/detail/kokkos_compat.hpp>
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

// Householder tridiagonalisation. On exit d (diagonal), e (sub-diagonal, e[n-1] = 0), tau, and
// reflector k (v(k+1) = 1) in A(k+1:n, k).
template <bool Unit, class Member>
KOKKOS_INLINE_FUNCTION void tridiagonalize(const Member& member, const MatRef<Unit>& A, int n,
                                           const SyevWork& W) {
  const bool seq = sequential_team(member);
  for (int k = 0; k + 2 < n; ++k) {
    const int m = n - k - 1;  // length of the column below the diagonal
    double xn2 = 0;
    Kokkos::parallel_reduce(
        Kokkos::TeamVectorRange(member, k + 2, n),
        [&](int i, double& acc) {
          const double x = A(i, k);
          acc += x * x;
        },
        xn2);
    const double alpha = A(k + 1, k);
    double beta = alpha, tau = 0, scale = 0;
    if (xn2 != 0) {
      const double nrm = perfex::math::sqrt(alpha * alpha + xn2);
      beta = alpha >= 0 ? -nrm : nrm;
      tau = (beta - alpha) / beta;
      scale = 1.0 / (alpha - beta);
    }
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
    if (seq && Unit) {
      // Lower-triangle symv p = tau * A22 * v fused with its transpose part, then w = p + K v
      // and the rank-2 update of the lower triangle.
      const double* v = A.ptr(0, k);
      for (int i = k1; i < n; ++i) p[i] = 0;
      for (int j = k1; j < n; ++j) {
        const double* a = A.ptr(0, j);
        const double t1 = tau * v[j];
        double s0 = 0, s1 = 0;
        int i = j + 1;
        for (; i + 2 <= n; i += 2) {
          p[i] += t1 * a[i];
          p[i + 1] += t1 * a[i + 1];
          s0 += a[i] * v[i];
          s1 += a[i + 1] * v[i + 1];
        }
        for (; i < n; ++i) {
          p[i] += t1 * a[i];
          s0 += a[i] * v[i];
        }
        p[j] += t1 * a[j] + tau * (s0 + s1);
      }
      double pv = dot<true>(m, p + k1, v + k1, 1, 1);
      const double K = -0.5 * tau * pv;
      for (int i = k1; i < n; ++i) p[i] += K * v[i];
      for (int j = k1; j < n; ++j) {
        double* a = A.ptr(0, j);
        const double wj = p[j], vj = v[j];
        for (int i = j; i < n; ++i) a[i] -= v[i] * wj + p[i] * vj;
      }
    } else {
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
          Kokkos::TeamVectorRange(member, k1, n),
          [&](int i, double& acc) { acc += p[i] * A(i, k); }, pv);
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
  }
  // Last 2x2 (or 1x1) block.
  Kokkos::single(Kokkos::PerTeam(member), [&]() {
    if (n >= 2) {
      W.d[n - 2] = A(n - 2, n - 2);
      W.e[n - 2] = A(n - 1, n - 2);
      W.tau[n - 2] = 0;
    }
    W.d[n - 1] = A(n - 1, n - 1);
    W.e[n - 1] = 0;
    W.tau[n - 1] = 0;
  });
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

// Z (n x n, leading dimension ldz) <- Q Z, Q = H_0 H_1 ... H_{n-3} the reflectors of
// tridiagonalize in A, one host thread. Blocks of 4 reflectors in compact WY form (LAPACK
// dlarft/dlarfb: H_k ... H_{k+3} = I - V T V^T), so that each column of Z takes one pass for the
// four dot products and one for the update instead of one pair of passes per reflector.
template <bool Unit>
KOKKOS_INLINE_FUNCTION void apply_q_sequential(const MatRef<Unit>& A, int n, const double* tau,
                                               double* Z, long ldz) {
  constexpr int NB = 4;
  const long rs = A.rs();
  for (int top = n - 2; top > 0; top -= NB) {
    const int kb = top - NB > 0 ? top - NB : 0, nb = top - kb;  // reflectors kb .. top-1
    // v_p = A(kb+p+1 .., kb+p): rows relative to r0 = kb+1, v_p(i) = 0 for i < p, v_p(p) = 1.
    const int r0 = kb + 1, m = n - r0;
    const double* v[NB];
    for (int p = 0; p < NB; ++p) v[p] = A.ptr(r0, kb + (p < nb ? p : 0));
    // T (upper triangular): T(p,p) = tau, T(0:p, p) = -tau T(0:p, 0:p) V(:, 0:p)^T v_p.
    double T[NB][NB] = {};
    for (int p = 0; p < nb; ++p) {
      const double tp = tau[kb + p];
      T[p][p] = tp;
      double c[NB] = {};
      for (int q = 0; q < p; ++q) {
        double sdot = v[q][p * rs];  // v_p(p) = 1
        for (int i = p + 1; i < m; ++i) sdot += v[q][i * rs] * v[p][i * rs];
        c[q] = -tp * sdot;
      }
      for (int q = 0; q < p; ++q) {
        double t = 0;
        for (int l = q; l < p; ++l) t += T[q][l] * c[l];
        T[q][p] = t;
      }
    }
    for (int j = 0; j < n; ++j) {
      double* z = Z + r0 + j * ldz;
      // w = V^T z: the triangle of the first nb rows, then the rows all v_p cover.
      double w[NB] = {};
      for (int p = 0; p < nb; ++p) {
        w[p] = z[p];
        for (int i = p + 1; i < nb && i < m; ++i) w[p] += v[p][i * rs] * z[i];
      }
      if (nb == NB) {
        double w0 = 0, w1 = 0, w2 = 0, w3 = 0;
        for (int i = NB; i < m; ++i) {
          const double zi = z[i];
          w0 += v[0][i * rs] * zi;
          w1 += v[1][i * rs] * zi;
          w2 += v[2][i * rs] * zi;
          w3 += v[3][i * rs] * zi;
        }
        w[0] += w0;
        w[1] += w1;
        w[2] += w2;
        w[3] += w3;
      } else {
        for (int p = 0; p < nb; ++p)
          for (int i = nb; i < m; ++i) w[p] += v[p][i * rs] * z[i];
      }
      // w <- T w; z -= V w.
      double u[NB] = {};
      for (int p = 0; p < nb; ++p)
        for (int q = p; q < nb; ++q) u[p] += T[p][q] * w[q];
      for (int p = 0; p < nb; ++p) {
        z[p] -= u[p];
        for (int i = p + 1; i < nb && i < m; ++i) z[i] -= v[p][i * rs] * u[p];
      }
      if (nb == NB) {
        const double u0 = u[0], u1 = u[1], u2 = u[2], u3 = u[3];
        for (int i = NB; i < m; ++i)
          z[i] -= (v[0][i * rs] * u0 + v[1][i * rs] * u1) + (v[2][i * rs] * u2 + v[3][i * rs] * u3);
      } else {
        for (int p = 0; p < nb; ++p)
          for (int i = nb; i < m; ++i) z[i] -= v[p][i * rs] * u[p];
      }
    }
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
  tridiagonalize<Unit>(member, A, n, W);
  // Finite check of the tridiagonal form (non-finite input propagates into it).
  bool finite = true;
  for (int i = 0; i < n; ++i)
    finite = finite && perfex::math::isfinite(W.d[i]) && perfex::math::isfinite(W.e[i]);
  if (!finite) return not_converged;
  int status;
  if (sequential_team(member) && n > dc_leaf) {
    // Divide and conquer on the tridiagonal, then its eigenvectors back to A's basis.
    status = tridiagonal_dc(n, W.d, W.e, W.z, n, W.dc);
    apply_q_sequential<Unit>(A, n, W.tau, W.z, n);
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
