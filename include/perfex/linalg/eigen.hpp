#pragma once
// Team-level symmetric eigendecomposition and the matrix functions built on it.
//
// team_syev: Householder reduction to tridiagonal form (lower, one reflector per column),
// explicit accumulation of Q in place, then implicit-shift QL iteration on the tridiagonal
// matrix with the Givens rotations of each sweep applied to the columns of Q, and finally a
// selection sort (ascending eigenvalues, vectors permuted with them).
//
// Parallelism inside a team: matrix-vector and rank-2 updates over TeamThreadRange of columns
// (full symmetric storage, race-free), reflector application over columns, rotation sweeps
// over chunks of rows (rows are independent under a sequence of column rotations); the scalar
// QL recurrence runs in Kokkos::single. With a one-thread team (Serial/OpenMP TeamPolicy with
// AUTO) the tridiagonal reduction uses the lower triangle only (half the flops).
//
// Iteration cap: 30*n QL sweeps in total -> not_converged. Non-finite input (or a tridiagonal
// form that is not finite) -> not_converged without iterating. On failure A and w are
// unspecified.
#include <perfex/detail/kokkos_compat.hpp>
#include <perfex/linalg/matref.hpp>
#include <perfex/linalg/status.hpp>

namespace perfex {
namespace linalg {

// Size (doubles) of the rank-1 `work` view team_syev needs for an n x n matrix. work must be
// contiguous (stride 1).
KOKKOS_INLINE_FUNCTION constexpr int syev_work_size(int n) { return 6 * n + 8; }

namespace detail {

KOKKOS_INLINE_FUNCTION double safe_hypot(double a, double b) {
  a = perfex::math::abs(a);
  b = perfex::math::abs(b);
  const double mx = a < b ? b : a, mn = a < b ? a : b;
  if (mx == 0) return 0;
  const double t = mn / mx;
  return mx * perfex::math::sqrt(1 + t * t);
}

// sqrt(a^2 + b^2), directly when the squares neither overflow nor lose precision to underflow
// (the common case: one square root, no division on the QL recurrence's critical path), else
// through the scaled form.
KOKKOS_INLINE_FUNCTION double fast_hypot(double a, double b) {
  const double r2 = a * a + b * b;
  return r2 > 1e-290 && r2 < 1e290 ? perfex::math::sqrt(r2) : safe_hypot(a, b);
}

// Work layout.
struct SyevWork {
  double* d;
  double* e;
  double* tau;
  double* p;
  double* cs;
  double* sn;
  double* info;
  KOKKOS_INLINE_FUNCTION SyevWork(double* w, int n)
      : d(w),
        e(w + n),
        tau(w + 2 * n),
        p(w + 3 * n),
        cs(w + 4 * n),
        sn(w + 5 * n),
        info(w + 6 * n) {}
};

// Householder tridiagonalisation. On exit d (diagonal), e (sub-diagonal, e[n-1] = 0), tau, and
// reflector k (v(k+1) = 1) in A(k+1:n, k).
template <bool Unit, class Member>
KOKKOS_INLINE_FUNCTION void tridiagonalize(const Member& member, const MatRef<Unit>& A, int n,
                                           const SyevWork& W) {
  const bool seq = member.team_size() == 1;
  for (int k = 0; k + 2 < n; ++k) {
    const int m = n - k - 1;  // length of the column below the diagonal
    double xn2 = 0;
    Kokkos::parallel_reduce(
        Kokkos::TeamThreadRange(member, k + 2, n),
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
    Kokkos::parallel_for(Kokkos::TeamThreadRange(member, k + 1, n), [&](int i) {
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
      // Full symmetric storage: p(j) = tau * A(k1:n, j) . v (column j == row j).
      Kokkos::parallel_for(Kokkos::TeamThreadRange(member, k1, n), [&](int j) {
        double s = 0;
        for (int i = k1; i < n; ++i) s += A(i, j) * A(i, k);
        p[j] = tau * s;
      });
      member.team_barrier();
      double pv = 0;
      Kokkos::parallel_reduce(
          Kokkos::TeamThreadRange(member, k1, n),
          [&](int i, double& acc) { acc += p[i] * A(i, k); }, pv);
      const double K = -0.5 * tau * pv;
      member.team_barrier();
      Kokkos::parallel_for(Kokkos::TeamThreadRange(member, k1, n),
                           [&](int i) { p[i] += K * A(i, k); });
      member.team_barrier();
      Kokkos::parallel_for(Kokkos::TeamThreadRange(member, k1, n), [&](int j) {
        const double wj = p[j], vj = A(j, k);
        for (int i = k1; i < n; ++i) A(i, j) -= A(i, k) * wj + p[i] * vj;
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
  for (int k = n - 2; k >= -1; --k) {
    const int c = k + 1;  // row/column that becomes e_c
    Kokkos::parallel_for(Kokkos::TeamThreadRange(member, c, n), [&](int i) {
      A(i, c) = (i == c) ? 1.0 : 0.0;
      if (i != c) A(c, i) = 0.0;
    });
    member.team_barrier();
    if (k < 0) break;
    const double tau = W.tau[k];
    if (tau != 0) {
      const int m = n - c;
      Kokkos::parallel_for(Kokkos::TeamThreadRange(member, c, n), [&](int j) {
        if (Unit) {
          const double* v = A.ptr(c, k);
          double* q = A.ptr(c, j);
          const double s = tau * dot<true>(m, v, q, 1, 1);
          for (int i = 0; i < m; ++i) q[i] -= s * v[i];
        } else {
          double s = 0;
          for (int i = c; i < n; ++i) s += A(i, k) * A(i, j);
          s *= tau;
          for (int i = c; i < n; ++i) A(i, j) -= s * A(i, k);
        }
      });
      member.team_barrier();
    }
  }
}

// The implicit QL iteration with Wilkinson-like shifts (EISPACK tql2) on the tridiagonal (d, e),
// split into the pieces both execution shapes share: a sweep starts at the first unconverged
// index l and runs plane rotations i = m-1 down to l over its unreduced block [l, m].

// Advances l past converged eigenvalues and starts the next sweep: m and the shifted g. Returns
// 0 (sweep started), 1 (all converged) or 2 (iteration cap reached).
KOKKOS_INLINE_FUNCTION int ql_begin_sweep(const double* d, const double* e, int n, int maxit,
                                          int& l, int& iter, int& m, double& g) {
  const double eps = perfex::math::epsilon;
  for (; l < n; ++l) {
    m = l;
    for (; m < n - 1; ++m) {
      const double dd = perfex::math::abs(d[m]) + perfex::math::abs(d[m + 1]);
      if (perfex::math::abs(e[m]) <= eps * dd) break;
    }
    if (m != l) break;
  }
  if (l >= n) return 1;
  if (++iter > maxit) return 2;
  g = (d[l + 1] - d[l]) / (2.0 * e[l]);
  const double r = safe_hypot(g, 1.0);
  g = d[m] - d[l] + e[l] / (g + (g >= 0 ? r : -r));
  return 0;
}

// Running scalars of a sweep.
struct QlSweep {
  double s = 1, c = 1, p = 0, g = 0;
};

// Rotation i of a sweep ending at m: updates d[i+1], e[i+1] and the running scalars (its cosine
// and sine in q.c, q.s). Returns false when it underflows (the sweep ends there, finished).
KOKKOS_INLINE_FUNCTION bool ql_rotation(double* d, double* e, int i, int m, QlSweep& q) {
  const double f = q.s * e[i], b = q.c * e[i];
  double r = fast_hypot(f, q.g);
  e[i + 1] = r;
  if (r == 0) {
    d[i + 1] -= q.p;
    e[m] = 0;
    return false;
  }
  const double rinv = 1.0 / r;
  q.s = f * rinv;
  q.c = q.g * rinv;
  const double g = d[i + 1] - q.p;
  r = (d[i] - g) * q.s + 2.0 * q.c * b;
  q.p = q.s * r;
  d[i + 1] = g + q.p;
  q.g = q.c * r - b;
  return true;
}

// End of a sweep that ran down to l.
KOKKOS_INLINE_FUNCTION void ql_end_sweep(double* d, double* e, int l, int m, const QlSweep& q) {
  d[l] -= q.p;
  e[l] = q.g;
  e[m] = 0;
}

// Z(:, i:i+1) <- Z(:, i:i+1) [c s; -s c]^T, rows [r0, r1) (the QL rotation at index i).
template <bool Unit>
KOKKOS_INLINE_FUNCTION void rotate_columns(const MatRef<Unit>& Z, int r0, int r1, int i, double c,
                                           double s) {
  double* zi = Z.ptr(0, i);
  double* zj = Z.ptr(0, i + 1);
  const long rs = Z.rs();
  for (int r = r0; r < r1; ++r) {
    const double f = zj[r * rs], z = zi[r * rs];
    zj[r * rs] = s * z + c * f;
    zi[r * rs] = c * z - s * f;
  }
}

// QL on a one-thread host team: each rotation is applied to the columns of Z one rotation
// later than computed, so that the column update (throughput-bound) overlaps the recurrence of
// the next rotation (latency-bound: a square root and divisions per rotation) in the core's
// out-of-order window. Same rotations, same order as computing a whole sweep first.
template <bool Unit>
KOKKOS_INLINE_FUNCTION int ql_sequential(const MatRef<Unit>& Z, int n, double* d, double* e,
                                         int maxit) {
  int l = 0, iter = 0, m = 0;
  bool pending = false;
  int pi = 0;
  double pc = 1, ps = 0;
  int status = ok;
  while (true) {
    QlSweep q;
    const int r = ql_begin_sweep(d, e, n, maxit, l, iter, m, q.g);
    if (r != 0) {
      status = r == 2 ? not_converged : ok;
      break;
    }
    int i = m - 1;
    for (; i >= l; --i) {
      if (!ql_rotation(d, e, i, m, q)) break;
      if (pending) rotate_columns<Unit>(Z, 0, n, pi, pc, ps);
      pending = true;
      pi = i;
      pc = q.c;
      ps = q.s;
    }
    if (i < l) ql_end_sweep(d, e, l, m, q);
  }
  if (pending) rotate_columns<Unit>(Z, 0, n, pi, pc, ps);
  return status;
}

// QL on a team: one thread runs a sweep's recurrence (it is sequential) and stores its
// rotations; then the team applies them, a row of Z per vector lane (rows are independent under
// column rotations), so one barrier per sweep.
template <bool Unit, class Member>
KOKKOS_INLINE_FUNCTION int ql_team(const Member& member, const MatRef<Unit>& Z, int n,
                                   const SyevWork& W, int maxit) {
  Kokkos::single(Kokkos::PerTeam(member), [&]() {
    W.info[0] = 0;  // l
    W.info[1] = 0;  // iterations
  });
  member.team_barrier();
  while (true) {
    Kokkos::single(Kokkos::PerTeam(member), [&]() {
      int l = int(W.info[0]), iter = int(W.info[1]), m = 0;
      QlSweep q;
      const int r = ql_begin_sweep(W.d, W.e, n, maxit, l, iter, m, q.g);
      int i = m - 1;
      if (r == 0) {
        for (; i >= l; --i) {
          if (!ql_rotation(W.d, W.e, i, m, q)) break;
          W.cs[i] = q.c;
          W.sn[i] = q.s;
        }
        if (i < l) ql_end_sweep(W.d, W.e, l, m, q);
      }
      W.info[0] = l;
      W.info[1] = iter;
      W.info[2] = r;
      W.info[3] = i + 1;  // rotations lo .. hi-1, applied from hi-1 down
      W.info[4] = m;
    });
    member.team_barrier();
    const int r = int(W.info[2]), lo = int(W.info[3]), hi = int(W.info[4]);
    if (r != 0) return r == 2 ? not_converged : ok;
    Kokkos::parallel_for(Kokkos::TeamVectorRange(member, 0, n), [&](int row) {
      for (int i = hi - 1; i >= lo; --i) {
        const double c = W.cs[i], s = W.sn[i];
        const double f = Z(row, i + 1), z = Z(row, i);
        Z(row, i + 1) = s * z + c * f;
        Z(row, i) = c * z - s * f;
      }
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
  double amax = 0;
  Kokkos::parallel_reduce(
      Kokkos::TeamThreadRange(member, 0, n),
      [&](int j, double& m) {
        for (int i = 0; i < n; ++i) {
          const double a = perfex::math::abs(A(i, j));
          if (a > m) m = a;
        }
      },
      Kokkos::Max<double>(amax));
  const bool rescale = perfex::math::isfinite(amax) && amax > 0 && (amax > 1e150 || amax < 1e-150);
  if (rescale) {
    member.team_barrier();
    const double inv = 1.0 / amax;
    Kokkos::parallel_for(Kokkos::TeamThreadRange(member, 0, n), [&](int j) {
      for (int i = 0; i < n; ++i) A(i, j) *= inv;
    });
    member.team_barrier();
  }
  tridiagonalize<Unit>(member, A, n, W);
  // Finite check of the tridiagonal form (non-finite input propagates into it).
  bool finite = true;
  for (int i = 0; i < n; ++i)
    finite = finite && perfex::math::isfinite(W.d[i]) && perfex::math::isfinite(W.e[i]);
  form_q<Unit>(member, A, n, W);
  if (!finite) return not_converged;
  // QL iteration.
  const int status = sequential_team(member) ? ql_sequential<Unit>(A, n, W.d, W.e, 30 * n)
                                             : ql_team<Unit>(member, A, n, W, 30 * n);
  // Selection sort, ascending.
  for (int i = 0; i + 1 < n; ++i) {
    int kmin = i;
    for (int k = i + 1; k < n; ++k)
      if (W.d[k] < W.d[kmin]) kmin = k;
    if (kmin != i) {
      member.team_barrier();
      Kokkos::parallel_for(Kokkos::TeamThreadRange(member, 0, n), [&](int r) {
        const double t = A(r, i);
        A(r, i) = A(r, kmin);
        A(r, kmin) = t;
      });
      Kokkos::single(Kokkos::PerTeam(member), [&]() {
        const double t = W.d[i];
        W.d[i] = W.d[kmin];
        W.d[kmin] = t;
      });
      member.team_barrier();
    }
  }
  const double wscale = rescale ? amax : 1.0;
  Kokkos::parallel_for(Kokkos::TeamThreadRange(member, 0, n),
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
  Kokkos::parallel_for(Kokkos::TeamThreadRange(member, 0, n), [&](int k) {
    const double mu = w(k) < floor_mu ? floor_mu : w(k);
    const double r = perfex::math::sqrt(mu);
    f[k] = inverse ? 1.0 / r : r;
  });
  member.team_barrier();
  // Lower triangle: A(i, j) = sum_k V(i, k) f_k V(j, k), i >= j; then mirror.
  Kokkos::parallel_for(Kokkos::TeamThreadRange(member, 0, n), [&](int j) {
    if (UnitA && UnitV) {
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
      for (int i = j; i < n; ++i) {
        double s = 0;
        for (int k = 0; k < n; ++k) s += V(i, k) * f[k] * V(j, k);
        A(i, j) = s;
      }
    }
  });
  member.team_barrier();
  Kokkos::parallel_for(Kokkos::TeamThreadRange(member, 0, n), [&](int j) {
    for (int i = 0; i < j; ++i) A(i, j) = A(j, i);
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
    for (int i = 0; i < n; ++i) V(i, j) = A(i, j);
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
// Eigenvalue guard (gpu_specter GPU's policy, spec §6.4): mu <- max(mu, clip * max mu) before
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
