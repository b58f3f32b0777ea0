#pragma once
// Host helpers of the [linalg] tests: reproducible symmetric test matrices with a chosen
// spectrum, norms, and LAPACK references.
#include <Kokkos_Core.hpp>
#include <perfex/linalg/eigen.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <utility>
#include <vector>

namespace linalg_test {

using HostMat = Kokkos::View<double***, Kokkos::LayoutLeft, Kokkos::HostSpace>;

// Column-major n x n matrix in a std::vector.
struct Dense {
  int n = 0;
  std::vector<double> a;
  explicit Dense(int n_ = 0) : n(n_), a(std::size_t(n_) * n_, 0.0) {}
  double& operator()(int i, int j) { return a[std::size_t(i) + std::size_t(j) * n]; }
  double operator()(int i, int j) const { return a[std::size_t(i) + std::size_t(j) * n]; }
};

// Geometric spectrum from 1 down to 1/kappa.
inline std::vector<double> geometric_spectrum(int n, double kappa) {
  std::vector<double> lam(n);
  for (int i = 0; i < n; ++i) lam[i] = n == 1 ? 1.0 : std::pow(kappa, -double(i) / (n - 1));
  return lam;
}

// Q diag(lam) Q^T with Q a product of `nrefl` random Householder reflectors (dense, exactly
// known spectrum up to rounding). Symmetric to the last bit.
inline Dense symmetric_with_spectrum(const std::vector<double>& lam, std::uint32_t seed,
                                     int nrefl = 4) {
  const int n = int(lam.size());
  Dense H(n);
  for (int i = 0; i < n; ++i) H(i, i) = lam[i];
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> g(0.0, 1.0);
  std::vector<double> v(n), p(n);
  for (int r = 0; r < nrefl && n > 1; ++r) {
    double nv = 0;
    for (auto& x : v) {
      x = g(rng);
      nv += x * x;
    }
    const double tau = 2.0 / nv;
    // H <- (I - tau v v^T) H (I - tau v v^T) = H - v w^T - w v^T, w = p - (tau/2)(p.v) v, p = tau H
    // v.
    double pv = 0;
    for (int i = 0; i < n; ++i) {
      double s = 0;
      for (int j = 0; j < n; ++j) s += H(i, j) * v[j];
      p[i] = tau * s;
      pv += p[i] * v[i];
    }
    for (int i = 0; i < n; ++i) p[i] -= 0.5 * tau * pv * v[i];
    for (int j = 0; j < n; ++j)
      for (int i = j; i < n; ++i) {
        const double x = H(i, j) - v[i] * p[j] - p[i] * v[j];
        H(i, j) = x;
        H(j, i) = x;
      }
  }
  return H;
}

inline Dense random_spd(int n, double kappa, std::uint32_t seed) {
  return symmetric_with_spectrum(geometric_spectrum(n, kappa), seed);
}

inline void store(const HostMat& M, int b, const Dense& D) {
  for (int j = 0; j < D.n; ++j)
    for (int i = 0; i < D.n; ++i) M(i, j, b) = D(i, j);
}

inline Dense load(const HostMat& M, int b, int n) {
  Dense D(n);
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < n; ++i) D(i, j) = M(i, j, b);
  return D;
}

template <class ExecSpace>
using DevMat = Kokkos::View<double***, Kokkos::LayoutLeft, typename ExecSpace::memory_space>;
template <class ExecSpace>
using DevVecs = Kokkos::View<double**, Kokkos::LayoutLeft, typename ExecSpace::memory_space>;
template <class ExecSpace>
using DevStatus = Kokkos::View<int*, typename ExecSpace::memory_space>;

// What EigenKernel does to each matrix A of a batch.
enum class MatrixOp {
  eigenvectors,  // team_syev: A <- its eigenvectors, w <- its eigenvalues
  inverse_sqrt,  // A <- A^{-1/2}
  sqrt           // A <- A^{1/2}
};

// One matrix of the batch (the views' last index) per team.
template <class Exec>
struct EigenKernel {
  DevMat<Exec> A, V;
  DevVecs<Exec> w, work;
  DevStatus<Exec> st;
  MatrixOp op = MatrixOp::eigenvectors;
  KOKKOS_INLINE_FUNCTION void operator()(
      const typename Kokkos::TeamPolicy<Exec>::member_type& m) const {
    namespace pl = perfex::linalg;
    const int b = m.league_rank();
    auto Ab = Kokkos::subview(A, Kokkos::ALL(), Kokkos::ALL(), b);
    auto Vb = Kokkos::subview(V, Kokkos::ALL(), Kokkos::ALL(), b);
    auto wb = Kokkos::subview(w, Kokkos::ALL(), b);
    auto workb = Kokkos::subview(work, Kokkos::ALL(), b);
    const int s = op == MatrixOp::eigenvectors   ? pl::team_syev(m, Ab, wb, workb)
                  : op == MatrixOp::inverse_sqrt ? pl::team_inverse_sqrt(m, Ab, Vb, wb, workb)
                                                 : pl::team_sqrt(m, Ab, Vb, wb, workb);
    Kokkos::single(Kokkos::PerTeam(m), [&]() { st(b) = s; });
  }
};

template <class ExecSpace>
DevMat<ExecSpace> to_device(const HostMat& h) {
  DevMat<ExecSpace> d("perfex::test::A", h.extent(0), h.extent(1), h.extent(2));
  Kokkos::deep_copy(d, h);
  return d;
}

template <class V>
auto to_host(const V& d) {
  auto h = Kokkos::create_mirror(d);
  Kokkos::deep_copy(h, d);
  return h;
}

// Team shapes to run the team kernels with besides one thread without vector lanes: one thread
// with 8 lanes, then team sizes 2, 3, 5, 7 and the largest the backend allows for functor f (odd
// sizes leave remainders in every split), each with vector lengths 1 and 8. Host backends
// accept a vector length and run the vector loops on each thread; a device splits them over
// lanes.
struct TeamShape {
  int team_size, vector_length;
};
template <class ExecSpace, class Functor>
std::vector<TeamShape> team_shapes(const Functor& f) {
  const int max =
      Kokkos::TeamPolicy<ExecSpace>(ExecSpace(), 1, 1).team_size_max(f, Kokkos::ParallelForTag());
  std::vector<TeamShape> shapes{{1, 8}};
  for (int ts : {2, 3, 5, 7, max})
    if (ts >= 2 && ts <= max && shapes.back().team_size < ts)
      for (int vl : {1, 8}) shapes.push_back({ts, vl});
  return shapes;
}

// f on one team of the given shape, fenced.
template <class ExecSpace, class Functor>
void run_one_team(const char* name, const Functor& f, TeamShape shape) {
  Kokkos::parallel_for(
      name, Kokkos::TeamPolicy<ExecSpace>(ExecSpace(), 1, shape.team_size, shape.vector_length), f);
  ExecSpace().fence();
}

// max |a - b| / max |a| over two equally long result lists.
inline double max_relative_difference(const std::vector<double>& a, const std::vector<double>& b) {
  double err = 0, ref = 0;
  for (std::size_t k = 0; k < a.size() && k < b.size(); ++k) {
    err = std::max(err, std::abs(a[k] - b[k]));
    ref = std::max(ref, std::abs(a[k]));
  }
  return a.size() == b.size() ? err / ref : HUGE_VAL;
}

inline double norm_inf(const Dense& A) {
  double m = 0;
  for (int i = 0; i < A.n; ++i) {
    double s = 0;
    for (int j = 0; j < A.n; ++j) s += std::abs(A(i, j));
    m = std::max(m, s);
  }
  return m;
}

inline double norm_fro(const Dense& A) {
  double s = 0;
  for (double x : A.a) s += x * x;
  return std::sqrt(s);
}

inline double max_abs(const std::vector<double>& x) {
  double m = 0;
  for (double v : x) m = std::max(m, std::abs(v));
  return m;
}

inline bool all_finite(const HostMat& M) {
  for (std::size_t k = 0; k < M.size(); ++k)
    if (!std::isfinite(M.data()[k])) return false;
  return true;
}

// X <- A^{-1/2} (or A^{1/2}) for every matrix of a batch, one team each.
template <class Exec>
inline HostMat matrix_root(const HostMat& H, bool inverse, std::vector<int>& status,
                           int team_size = 0) {
  const int n = int(H.extent(0)), nb = int(H.extent(2));
  auto A = to_device<Exec>(H);
  DevMat<Exec> V("V", n, n, nb);
  DevVecs<Exec> w("w", n, nb), work("work", perfex::linalg::syev_work_size(n), nb);
  DevStatus<Exec> st("st", nb);
  const EigenKernel<Exec> kernel{A,    V,  w,
                                 work, st, inverse ? MatrixOp::inverse_sqrt : MatrixOp::sqrt};
  if (team_size > 0)
    Kokkos::parallel_for("perfex::test::matrix_root",
                         Kokkos::TeamPolicy<Exec>(Exec(), nb, team_size), kernel);
  else
    Kokkos::parallel_for("perfex::test::matrix_root",
                         Kokkos::TeamPolicy<Exec>(Exec(), nb, Kokkos::AUTO), kernel);
  Exec().fence();
  auto sh = to_host(st);
  status.assign(sh.data(), sh.data() + nb);
  return to_host(A);
}

}  // namespace linalg_test
