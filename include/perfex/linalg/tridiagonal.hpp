#pragma once
// Eigenvalues and eigenvectors of a symmetric tridiagonal matrix (d on the diagonal, e[i]
// coupling i and i+1), the inner problem of team_syev.
//
// Implicit QL with Wilkinson-like shifts (EISPACK tql2), its rotations accumulated into the
// columns of a given matrix: one host thread applies each rotation while the recurrence of the
// next one runs (ql_sequential), and can step two independent problems in turn so that their
// recurrences overlap too (ql_sequential_pair: divide and conquer's leaves); a team lets one
// thread run a sweep's recurrence and applies it a row per vector lane (ql_team).
//
// Divide and conquer (Cuppen's method with the eigenvectors from Gu and Eisenstat's Loewner
// formula, the scheme of LAPACK dstedc): the tridiagonal is torn into halves by rank-one
// modifications down to leaves solved by QL, and the halves are merged bottom-up: deflation of
// negligible or coincident components, one secular equation per remaining eigenvalue, and a
// matrix product of the halves' eigenvectors with the merged ones. It does about a third of
// QL's vector work (the products are GEMM-shaped, the rotations of QL are not) and its
// eigenvectors are orthogonal to working precision. One host thread (tridiagonal_dc).
#include <perfex/detail/kokkos_compat.hpp>
#include <perfex/linalg/gemm.hpp>
#include <perfex/linalg/matref.hpp>
#include <perfex/linalg/status.hpp>

namespace perfex {
namespace linalg {
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

// ---- Implicit QL ---------------------------------------------------------------------------
// A sweep starts at the first unconverged index l and runs plane rotations i = m-1 down to l
// over its unreduced block [l, m].

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

// QL on a one-thread host team, rotations accumulated into the columns of Z (n rows), as a
// machine that advances one rotation per step: each rotation is applied one rotation later than
// computed, so that the column update (throughput-bound) overlaps the recurrence of the next
// rotation (latency-bound: a square root and a division per rotation) in the core's
// out-of-order window; and two independent problems stepped in turn (ql_sequential_pair)
// overlap their recurrences too. e[n-1] must be 0.
template <bool Unit>
struct QlSequential {
  MatRef<Unit> Z;
  int n;
  double* d;
  double* e;
  int maxit;
  int l = 0, iter = 0, m = 0, i = -1;  // i: the next rotation of the sweep (< l: no sweep)
  bool pending = false;
  int pi = 0;
  double pc = 1, ps = 0;
  int status = ok;
  QlSweep q;

  KOKKOS_INLINE_FUNCTION QlSequential(const MatRef<Unit>& Z_, int n_, double* d_, double* e_,
                                      int maxit_)
      : Z(Z_), n(n_), d(d_), e(e_), maxit(maxit_) {}

  // Starts a sweep if none runs, then its next rotation. Returns false once finished.
  KOKKOS_FORCEINLINE_FUNCTION bool step() {
    if (i < l) {
      q = QlSweep{};
      const int r = ql_begin_sweep(d, e, n, maxit, l, iter, m, q.g);
      if (r != 0) {
        status = r == 2 ? not_converged : ok;
        if (pending) rotate_columns<Unit>(Z, 0, n, pi, pc, ps);
        pending = false;
        return false;
      }
      i = m - 1;
    }
    if (!ql_rotation(d, e, i, m, q)) {
      i = l - 1;  // the sweep ends here, finished
      return true;
    }
    if (pending) rotate_columns<Unit>(Z, 0, n, pi, pc, ps);
    pending = true;
    pi = i;
    pc = q.c;
    ps = q.s;
    if (--i < l) ql_end_sweep(d, e, l, m, q);
    return true;
  }
};

template <bool Unit>
KOKKOS_INLINE_FUNCTION int ql_sequential(const MatRef<Unit>& Z, int n, double* d, double* e,
                                         int maxit) {
  QlSequential<Unit> a(Z, n, d, e, maxit);
  while (a.step()) {
  }
  return a.status;
}

// Two independent QL problems, one rotation of each in turn (each one's results are those of
// ql_sequential on it). Returns ok when both converge.
template <bool Unit>
KOKKOS_INLINE_FUNCTION int ql_sequential_pair(QlSequential<Unit>& a, QlSequential<Unit>& b) {
  bool ra = true, rb = true;
  while (ra && rb) {
    ra = a.step();
    rb = b.step();
  }
  while (ra) ra = a.step();
  while (rb) rb = b.step();
  return a.status == ok && b.status == ok ? ok : not_converged;
}

// QL on a team: one thread runs a sweep's recurrence (it is sequential) and stores its
// rotations in cs, sn; then the team applies them, a row of Z per vector lane (rows are
// independent under column rotations), so one barrier per sweep. info: 5 doubles of scratch.
template <bool Unit, class Member>
KOKKOS_INLINE_FUNCTION int ql_team(const Member& member, const MatRef<Unit>& Z, int n, double* d,
                                   double* e, double* cs, double* sn, double* info, int maxit) {
  Kokkos::single(Kokkos::PerTeam(member), [&]() {
    info[0] = 0;  // l
    info[1] = 0;  // iterations
  });
  member.team_barrier();
  while (true) {
    Kokkos::single(Kokkos::PerTeam(member), [&]() {
      int l = int(info[0]), iter = int(info[1]), m = 0;
      QlSweep q;
      const int r = ql_begin_sweep(d, e, n, maxit, l, iter, m, q.g);
      int i = m - 1;
      if (r == 0) {
        for (; i >= l; --i) {
          if (!ql_rotation(d, e, i, m, q)) break;
          cs[i] = q.c;
          sn[i] = q.s;
        }
        if (i < l) ql_end_sweep(d, e, l, m, q);
      }
      info[0] = l;
      info[1] = iter;
      info[2] = r;
      info[3] = i + 1;  // rotations lo .. hi-1, applied from hi-1 down
      info[4] = m;
    });
    member.team_barrier();
    const int r = int(info[2]), lo = int(info[3]), hi = int(info[4]);
    if (r != 0) return r == 2 ? not_converged : ok;
    Kokkos::parallel_for(Kokkos::TeamVectorRange(member, 0, n), [&](int row) {
      for (int i = hi - 1; i >= lo; --i) {
        const double c = cs[i], s = sn[i];
        const double f = Z(row, i + 1), z = Z(row, i);
        Z(row, i + 1) = s * z + c * f;
        Z(row, i) = c * z - s * f;
      }
    });
    member.team_barrier();
  }
}

// Columns of Z (rows [0, nrows)) and entries of d sorted by ascending d (selection sort: at
// most n - 1 column swaps).
template <bool Unit>
KOKKOS_INLINE_FUNCTION void sort_eigenpairs(const MatRef<Unit>& Z, int nrows, double* d, int n) {
  for (int i = 0; i + 1 < n; ++i) {
    int kmin = i;
    for (int k = i + 1; k < n; ++k)
      if (d[k] < d[kmin]) kmin = k;
    if (kmin == i) continue;
    const double t = d[i];
    d[i] = d[kmin];
    d[kmin] = t;
    double* zi = Z.ptr(0, i);
    double* zk = Z.ptr(0, kmin);
    for (int r = 0; r < nrows; ++r) {
      const double x = zi[r * Z.rs()];
      zi[r * Z.rs()] = zk[r * Z.rs()];
      zk[r * Z.rs()] = x;
    }
  }
}

// ---- Divide and conquer --------------------------------------------------------------------

// Tridiagonals up to this size are solved by QL directly (the leaves).
constexpr int dc_leaf = 40;

// Scratch (doubles) of tridiagonal_dc for order n: two n x n matrices and 9 vectors.
KOKKOS_INLINE_FUNCTION constexpr int dc_work_size(int n) { return 2 * n * n + 9 * n; }

// s = sum of w2[i] r[i] and ds = sum of w2[i] r[i]^2 over [i0, i1), in two interleaved partial
// sums (independent add chains).
KOKKOS_INLINE_FUNCTION void secular_sums(int i0, int i1, const double* w2, const double* r,
                                         double& s, double& ds) {
  double s0 = 0, s1 = 0, d0 = 0, d1 = 0;
  int i = i0;
  for (; i + 2 <= i1; i += 2) {
    const double t0 = w2[i] * r[i], t1 = w2[i + 1] * r[i + 1];
    s0 += t0;
    s1 += t1;
    d0 += t0 * r[i];
    d1 += t1 * r[i + 1];
  }
  if (i < i1) {
    const double t = w2[i] * r[i];
    s0 += t;
    d0 += t * r[i];
  }
  s = s0 + s1;
  ds = d0 + d1;
}

// s = sum of w2[i] / (delta[i] - tau) and ds = sum of w2[i] / (delta[i] - tau)^2 over [i0, i1),
// lanes partial sums (rows i = l mod lanes from i0), added in a fixed order.
KOKKOS_INLINE_FUNCTION void secular_terms(int i0, int i1, const double* delta, double tau,
                                          const double* w2, double& s, double& ds) {
#ifdef PERFEX_HOST_TILES
  lane_vector a = {}, b = {}, t, one, d, w;
  broadcast(t, tau);
  broadcast(one, 1.0);
  int i = i0;
  for (; i + lanes <= i1; i += lanes) {
    load_lanes(d, delta + i);
    load_lanes(w, w2 + i);
    const lane_vector r = one / (d - t), u = w * r;
    a += u;
    b += u * r;
  }
  for (int l = 0; i + l < i1; ++l) {
    const double r = 1.0 / (delta[i + l] - tau), u = w2[i + l] * r;
    a[l] += u;
    b[l] += u * r;
  }
  s = (a[0] + a[1]) + (a[2] + a[3]);
  ds = (b[0] + b[1]) + (b[2] + b[3]);
#else
  Kokkos::abort("perfex::linalg: a one-thread host kernel reached on a device");
#endif
}

// Root j of the secular equation 1/rho + sum_i w2[i] / (dl[i] - lambda) = 0 (K terms, dl
// ascending and distinct, w2 > 0, rho > 0): lambda_j lies in (dl[j], dl[j+1]), the last one in
// (dl[K-1], dl[K-1] + rho sum w2]. The iterate is measured from the nearer pole, so that the
// differences delta[i] = dl[i] - lambda_j written on return are accurate (the eigenvectors are
// built from them). Iteration (LAPACK dlaed4's "middle way"): the rational model with the two
// poles around the root, fitted to the equation's value and slope at the iterate, kept inside
// the bracket by bisection; the first iterate is the root of the two-pole model with the other
// terms frozen at the interval's midpoint. r: K doubles of scratch. Returns lambda_j.
KOKKOS_INLINE_FUNCTION double secular_root(int K, int j, const double* dl, const double* w2,
                                           double rho, double* delta, double* r) {
  const double eps = perfex::math::epsilon;
  const double rhoinv = 1.0 / rho;
  if (K == 1) {
    delta[0] = -rho * w2[0];
    return dl[0] + rho * w2[0];
  }
  int k = j;  // the pole the iterate is measured from
  double lo = 0, hi = 0, tau = 0;
  if (j < K - 1) {
    const double gap = dl[j + 1] - dl[j], half = 0.5 * gap;
    for (int i = 0; i < K; ++i) r[i] = 1.0 / ((dl[i] - dl[j]) - half);
    double f, unused;
    secular_sums(0, K, w2, r, f, unused);
    f += rhoinv;
    r[j] *= w2[j];
    r[j + 1] *= w2[j + 1];
    // Two-pole model c0 + w2_j / (p - t) + w2_{j+1} / (q - t) with the rest frozen at the
    // midpoint; its root from the chosen pole (p = -gap, q = 0 when measured from dl[j+1]).
    const double c0 = f - r[j] - r[j + 1];
    double p = 0, q = gap;
    if (f >= 0)
      hi = half;
    else {
      k = j + 1;
      lo = -half;
      p = -gap;
      q = 0;
    }
    const double a = c0 * (p + q) + w2[j] + w2[j + 1];
    const double b = c0 * p * q + w2[j] * q + w2[j + 1] * p;
    const double sq = perfex::math::sqrt(perfex::math::abs(a * a - 4 * b * c0));
    tau = c0 == 0 ? b / a : a >= 0 ? 2 * b / (a + sq) : (a - sq) / (2 * c0);
  } else {
    double s = 0;
    for (int i = 0; i < K; ++i) s += w2[i];
    hi = rho * s;
  }
  if (!(tau > lo && tau < hi)) tau = 0.5 * (lo + hi);
  const double origin = dl[k];
  for (int i = 0; i < K; ++i) delta[i] = dl[i] - origin;
  for (int iter = 0; iter < 200; ++iter) {
    // psi: the poles at or below the bracket (negative terms), phi: those above.
    double psi, dpsi, phi, dphi;
    secular_terms(0, j + 1, delta, tau, w2, psi, dpsi);
    secular_terms(j + 1, K, delta, tau, w2, phi, dphi);
    const double f = rhoinv + psi + phi;
    if (f < 0)
      lo = tau;
    else
      hi = tau;
    // Converged when f is below the rounding error of its evaluation.
    const double err = 8 * (phi - psi) + 2 * rhoinv + 3 * perfex::math::abs(tau) * (dpsi + dphi);
    if (perfex::math::abs(f) <= eps * err) break;
    const double dp = delta[j] - tau;
    double step;
    if (j < K - 1) {
      const double dq = delta[j + 1] - tau;
      const double c = f - dp * dpsi - dq * dphi;
      const double a = (dp + dq) * f - dp * dq * (dpsi + dphi);
      const double b = dp * dq * f;
      const double sq = perfex::math::sqrt(perfex::math::abs(a * a - 4 * b * c));
      step = c == 0 ? b / a : a <= 0 ? (a - sq) / (2 * c) : 2 * b / (a + sq);
    } else {
      const double c = f - dp * dpsi;
      step = c > 0 ? dp + dp * dp * dpsi / c : hi - tau;
    }
    double next = tau + step;
    if (!(next > lo && next < hi)) next = 0.5 * (lo + hi);
    // A model step below rounding of the iterate: converged (the iteration is quadratic), no
    // need for another evaluation to confirm.
    const bool done = perfex::math::abs(next - tau) <= 2 * eps * perfex::math::abs(next);
    tau = next;
    if (done) break;
  }
  for (int i = 0; i < K; ++i) delta[i] -= tau;
  return origin + tau;
}

// One merge of the divide and conquer (dc_merge, LAPACK dlaed1's steps): the solved halves
// [a, m) and [m, b) of the tridiagonal, d[a:b) holding the halves' eigenvalues (ascending
// within each) and Z(a:b, a:b) their eigenvectors (block diagonal). G, U: n x n scratch
// (leading dimension ld); v: 9 vectors of ld, named below.
struct DcMerge {
  double* d;
  double* Z;
  long ldz;
  int a, m, b, n0, n1;
  double* G;
  double* U;
  long ld;
  double* z;        // coupling vector in the halves' eigenvector bases; then the deflated
                    // eigenvalues, ascending
  double* dl;       // poles of the secular equation (non-deflated eigenvalues)
  double* w2;       // their squared weights, then the Loewner weights
  double* lam;      // merged eigenvalues of the non-deflated part
  double* order;    // the n0 eigenvalues' ascending order; then output positions
  double* type;     // column support: 0 upper half, 1 both, 2 lower half
  double* nd;       // non-deflated columns (ascending), deflated ones from the back
  double* perm;     // non-deflated columns grouped by support
  double* scratch;  // one more vector
  double rho = 0;
  int K = 0, ndef = 0;      // non-deflated and deflated columns
  int nup = 0, nmixed = 0;  // non-deflated columns supported on the upper half, on both

  KOKKOS_INLINE_FUNCTION DcMerge(double* d_, double* Z_, long ldz_, int a_, int m_, int b_,
                                 double* G_, double* U_, long ld_, double* v)
      : d(d_),
        Z(Z_),
        ldz(ldz_),
        a(a_),
        m(m_),
        b(b_),
        n0(b_ - a_),
        n1(m_ - a_),
        G(G_),
        U(U_),
        ld(ld_),
        z(v),
        dl(v + ld_),
        w2(v + 2 * ld_),
        lam(v + 3 * ld_),
        order(v + 4 * ld_),
        type(v + 5 * ld_),
        nd(v + 6 * ld_),
        perm(v + 7 * ld_),
        scratch(v + 8 * ld_) {}

  KOKKOS_INLINE_FUNCTION double& Zat(int r, int c) const { return Z[r + c * ldz]; }

  // H = diag(T1, T2) + rho u u^T with u = (e_last, sign(beta) e_first) / sqrt(2), rho = 2|beta|:
  // in the halves' eigenvector bases the coupling vector is their last and first rows. Also
  // the ascending order of the two sorted halves. Returns deflation's tolerance.
  KOKKOS_INLINE_FUNCTION double coupling(double beta) {
    const double s2 = perfex::math::sqrt(0.5), sgn = beta < 0 ? -1.0 : 1.0;
    rho = 2 * perfex::math::abs(beta);
    double dmax = 0, zmax = 0;
    for (int i = 0; i < n0; ++i) {
      z[i] = i < n1 ? Zat(m - 1, a + i) * s2 : sgn * Zat(m, a + i) * s2;
      type[i] = i < n1 ? 0 : 2;
      dmax = perfex::math::max(dmax, perfex::math::abs(d[a + i]));
      zmax = perfex::math::max(zmax, perfex::math::abs(z[i]));
    }
    for (int i = 0, p = 0, q = n1; i < n0; ++i)
      order[i] = (q >= n0 || (p < n1 && d[a + p] <= d[a + q])) ? p++ : q++;
    return 8 * perfex::math::epsilon * perfex::math::max(dmax, zmax);
  }

  // Deflation (LAPACK dlaed2): a component of z below tol leaves its eigenpair unchanged; two
  // eigenvalues closer than tol are rotated so that one of them takes the other's component.
  KOKKOS_INLINE_FUNCTION void deflate(double tol) {
    int pj = -1;
    for (int t = 0; t < n0; ++t) {
      const int nj = int(order[t]);
      if (rho * perfex::math::abs(z[nj]) <= tol) {
        nd[n0 - 1 - ndef++] = nj;
        continue;
      }
      if (pj < 0) {
        pj = nj;
        continue;
      }
      const double r = safe_hypot(z[nj], z[pj]);
      const double c = z[nj] / r, s = -z[pj] / r;
      if (perfex::math::abs((d[a + nj] - d[a + pj]) * c * s) <= tol) {
        z[nj] = r;
        z[pj] = 0;
        for (int row = a; row < b; ++row) {
          const double x = Zat(row, a + pj), y = Zat(row, a + nj);
          Zat(row, a + pj) = c * x + s * y;
          Zat(row, a + nj) = c * y - s * x;
        }
        if (type[pj] != type[nj]) type[pj] = type[nj] = 1;
        const double dp = d[a + pj], dn = d[a + nj];
        d[a + pj] = dp * c * c + dn * s * s;
        d[a + nj] = dp * s * s + dn * c * c;
        nd[n0 - 1 - ndef++] = pj;
      } else {
        nd[K++] = pj;
      }
      pj = nj;
    }
    if (pj >= 0) nd[K++] = pj;
  }

  // Secular equation: column j of U <- dl - lambda_j; then Gu-Eisenstat: the weights for which
  // the computed eigenvalues are exact (so the eigenvectors come out orthogonal), and the
  // eigenvectors of diag(dl) + rho zhat zhat^T, u_j(i) = zhat_i / (dl_i - lambda_j).
  KOKKOS_INLINE_FUNCTION void solve_secular() {
    for (int i = 0; i < K; ++i) {
      dl[i] = d[a + int(nd[i])];
      w2[i] = z[int(nd[i])] * z[int(nd[i])];
    }
    for (int j = 0; j < K; ++j) lam[j] = secular_root(K, j, dl, w2, rho, U + j * ld, scratch);
    double* what = scratch;
    for (int i = 0; i < K; ++i) what[i] = U[i + i * ld];
    for (int j = 0; j < K; ++j) {
      const double* u = U + j * ld;
      const double dj = dl[j];
      for (int i = 0; i < j; ++i) what[i] *= u[i] / (dl[i] - dj);
      for (int i = j + 1; i < K; ++i) what[i] *= u[i] / (dl[i] - dj);
    }
    for (int i = 0; i < K; ++i) {
      const double zh = perfex::math::sqrt(perfex::math::abs(what[i]));
      w2[i] = z[int(nd[i])] < 0 ? -zh : zh;
    }
    for (int j = 0; j < K; ++j) {
      double* u = U + j * ld;
      for (int i = 0; i < K; ++i) u[i] = w2[i] / u[i];
      double s = 0;
      for (int i = 0; i < K; ++i) s += u[i] * u[i];
      const double inv = 1.0 / perfex::math::sqrt(s);
      for (int i = 0; i < K; ++i) u[i] *= inv;
    }
  }

  // Old eigenvectors into G: non-deflated grouped by support (upper, both, lower; perm indexes
  // nd), then the deflated ones sorted by eigenvalue, their eigenvalues into z.
  KOKKOS_INLINE_FUNCTION void gather_old_vectors() {
    for (int t = 0, q = 0; t < 3; ++t)
      for (int i = 0; i < K; ++i)
        if (int(type[int(nd[i])]) == t) {
          perm[q++] = i;
          nup += t == 0;
          nmixed += t == 1;
        }
    for (int q = 0; q < K; ++q) {
      const int c = a + int(nd[int(perm[q])]);
      for (int r = 0; r < n0; ++r) G[r + q * ld] = Zat(a + r, c);
    }
    for (int t = 1; t < ndef; ++t) {  // insertion sort of the deflated columns by eigenvalue
      const double key = nd[n0 - 1 - t];
      int s = t - 1;
      while (s >= 0 && d[a + int(nd[n0 - 1 - s])] > d[a + int(key)]) {
        nd[n0 - 1 - (s + 1)] = nd[n0 - 1 - s];
        --s;
      }
      nd[n0 - 1 - (s + 1)] = key;
    }
    for (int t = 0; t < ndef; ++t) {
      const int c = int(nd[n0 - 1 - t]);
      z[t] = d[a + c];
      for (int r = 0; r < n0; ++r) G[r + (K + t) * ld] = Zat(a + r, a + c);
    }
  }

  // New eigenvectors: Z(upper rows, j) = G(upper rows, upper and mixed columns) U(those, j),
  // Z(lower rows, j) = G(lower rows, mixed and lower columns) U(those, j), with U's rows first
  // put in G's column order; two matrix products into Z's first K columns.
  KOKKOS_INLINE_FUNCTION void multiply() {
    for (int j = 0; j < K; ++j) {
      double* u = U + j * ld;
      for (int q = 0; q < K; ++q) scratch[q] = u[int(perm[q])];
      for (int q = 0; q < K; ++q) u[q] = scratch[q];
    }
    const int upper_end = nup + nmixed;
    double* Za = &Zat(a, a);
    gemm_nn_sequential<false, false>(n1, K, upper_end, G, ld, U, 1, ld, Za, ldz);
    gemm_nn_sequential<false, false>(n0 - n1, K, K - nup, G + n1 + nup * ld, ld, U + nup, 1, ld,
                                     Za + n1, ldz);
  }

  // Output positions: merge of lam (ascending) and the deflated eigenvalues; the merged columns
  // move to theirs from the last (a column only moves right), the deflated ones come from G.
  KOKKOS_INLINE_FUNCTION void place() {
    const double* dvals = z;
    for (int out = 0, p = 0, q = 0; out < n0; ++out) {
      if (q >= ndef || (p < K && lam[p] <= dvals[q])) {
        order[p] = out;
        d[a + out] = lam[p++];
      } else {
        d[a + out] = dvals[q++];
      }
    }
    for (int j = K - 1; j >= 0; --j) {
      const int c = int(order[j]);
      if (c == j) continue;
      for (int r = 0; r < n0; ++r) Zat(a + r, a + c) = Zat(a + r, a + j);
    }
    for (int out = 0, p = 0, q = 0; out < n0; ++out) {
      if (p < K && int(order[p]) == out) {
        ++p;
      } else {
        for (int r = 0; r < n0; ++r) Zat(a + r, a + out) = G[r + (K + q) * ld];
        ++q;
      }
    }
  }
};

// Merges the solved halves [a, m) and [m, b) of the tridiagonal (DcMerge); beta couples rows
// m-1 and m. On exit d[a:b) ascending and Z(a:b, a:b) the merged eigenvectors.
KOKKOS_INLINE_FUNCTION void dc_merge(double* d, double* Z, long ldz, int a, int m, int b,
                                     double beta, double* G, double* U, long ld, double* v) {
  DcMerge merge(d, Z, ldz, a, m, b, G, U, ld, v);
  merge.deflate(merge.coupling(beta));
  merge.solve_secular();
  merge.gather_old_vectors();
  merge.multiply();
  merge.place();
}

// Eigenvalues (ascending, into d) and eigenvectors (columns of Z, n x n, leading dimension ldz)
// of the symmetric tridiagonal (d, e); e[0 .. n-2] are the off-diagonals and e is left
// unchanged. work: dc_work_size(n) doubles. Returns ok, or not_converged when a leaf's QL hits
// its iteration cap.
KOKKOS_INLINE_FUNCTION int tridiagonal_dc(int n, double* d, const double* e, double* Z, long ldz,
                                          double* work) {
  double* G = work;
  double* U = work + long(n) * n;
  double* v = work + 2L * n * n;
  // Deflation's tolerance compares eigenvalues with eigenvector components: work on T / max|T|
  // (LAPACK dstedc scales so too).
  double tnorm = 0;
  for (int i = 0; i < n; ++i) {
    tnorm = perfex::math::max(tnorm, perfex::math::abs(d[i]));
    if (i + 1 < n) tnorm = perfex::math::max(tnorm, perfex::math::abs(e[i]));
  }
  const double scale = tnorm > 0 ? 1.0 / tnorm : 1.0;
  for (int i = 0; i < n; ++i) d[i] *= scale;
  // Leaves: 2^levels equal parts; node t of level l spans [bound(t << (levels - l)), ...).
  int levels = 0;
  while ((n + (1 << levels) - 1) >> levels > dc_leaf) ++levels;
  const int nleaf = 1 << levels;
  auto bound = [&](int t) { return int((long(t) * n) >> levels); };
  // Tear: T = diag(T1, T2) + |beta| u u^T takes |beta| off both diagonal entries at each cut.
  for (int t = 1; t < nleaf; ++t) {
    const int m = bound(t);
    d[m - 1] -= perfex::math::abs(e[m - 1] * scale);
    d[m] -= perfex::math::abs(e[m - 1] * scale);
  }
  for (int c = 0; c < n; ++c)
    for (int r = 0; r < n; ++r) Z[r + c * ldz] = r == c ? 1.0 : 0.0;
  int status = ok;
  // Leaves two at a time (their QL recurrences overlap), each with its off-diagonals in v.
  for (int t = 0; t < nleaf; t += 2) {
    const int a0 = bound(t), b0 = bound(t + 1), a1 = b0, b1 = t + 1 < nleaf ? bound(t + 2) : b0;
    const int n0 = b0 - a0, n1 = b1 - a1;
    double* el0 = v;
    double* el1 = v + n;
    for (int i = 0; i < n0; ++i) el0[i] = i + 1 < n0 ? e[a0 + i] * scale : 0.0;
    for (int i = 0; i < n1; ++i) el1[i] = i + 1 < n1 ? e[a1 + i] * scale : 0.0;
    const MatRef<true> Z0{Z + a0 + a0 * ldz, 1, ldz}, Z1{Z + a1 + a1 * ldz, 1, ldz};
    QlSequential<true> q0(Z0, n0, d + a0, el0, 30 * n0), q1(Z1, n1, d + a1, el1, 30 * n1);
    if (ql_sequential_pair(q0, q1) != ok) status = not_converged;
    sort_eigenpairs<true>(Z0, n0, d + a0, n0);
    sort_eigenpairs<true>(Z1, n1, d + a1, n1);
  }
  for (int level = levels - 1; level >= 0; --level)
    for (int t = 0; t < (1 << level); ++t) {
      const int shift = levels - level;
      const int a = bound(t << shift), m = bound((2 * t + 1) << (shift - 1)),
                b = bound((t + 1) << shift);
      dc_merge(d, Z, ldz, a, m, b, e[m - 1] * scale, G, U, n, v);
    }
  for (int i = 0; i < n; ++i) d[i] *= tnorm > 0 ? tnorm : 1.0;
  return status;
}

}  // namespace detail
}  // namespace linalg
}  // namespace perfex
