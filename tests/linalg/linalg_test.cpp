// Tests of perfex::linalg (tag [linalg]): Cholesky, solve, inverse diagonal blocks, symmetric
// eigendecomposition and matrix square roots, against residuals and the host LAPACK.
#include "perfex_test.hpp"

#include <perfex/config.hpp>
#include <perfex/linalg/batched.hpp>
#include <perfex/linalg/cholesky.hpp>
#include <perfex/linalg/eigen.hpp>
#include <perfex/linalg/lapack.hpp>

#include <cstring>
#include <utility>

#include "linalg_test_util.hpp"

using namespace linalg_test;
namespace pl = perfex::linalg;

namespace {

// Factor + solve a batch of SPD matrices; returns the worst scaled residual
// ||H x - b||_inf / (||H||_inf ||x||_inf) divided by n (to compare with 1e-15).
template <class ExecSpace>
double cholesky_solve_residual(int n, double kappa, int nbatch, std::uint32_t seed) {
  ExecSpace exec;
  HostMat H("H", n, n, nbatch);
  std::vector<Dense> orig;
  for (int b = 0; b < nbatch; ++b) {
    orig.push_back(random_spd(n, kappa, seed + 17 * b));
    store(H, b, orig.back());
  }
  Kokkos::View<double**, Kokkos::LayoutLeft, Kokkos::HostSpace> rhs("b", n, nbatch);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  for (int b = 0; b < nbatch; ++b)
    for (int i = 0; i < n; ++i) rhs(i, b) = u(rng);
  auto A = to_device<ExecSpace>(H);
  DevVecs<ExecSpace> x("x", n, nbatch);
  Kokkos::deep_copy(x, rhs);
  DevStatus<ExecSpace> st("st", nbatch);
  pl::batched_cholesky(exec, A, st);
  pl::batched_cholesky_solve(exec, A, x);
  exec.fence();
  auto sh = to_host(st);
  auto xh = to_host(x);
  double worst = 0;
  for (int b = 0; b < nbatch; ++b) {
    REQUIRE(sh(b) == pl::ok);
    double rmax = 0, xmax = 0;
    for (int i = 0; i < n; ++i) {
      double s = -rhs(i, b);
      for (int j = 0; j < n; ++j) s += orig[b](i, j) * xh(j, b);
      rmax = std::max(rmax, std::abs(s));
      xmax = std::max(xmax, std::abs(xh(i, b)));
    }
    worst = std::max(worst, rmax / (norm_inf(orig[b]) * xmax) / n);
  }
  return worst;
}

struct EigenCheck {
  double residual = 0;       // ||H V - V L||_F / ||H||_F / n
  double orthogonality = 0;  // ||V^T V - I||_F / n
  double eig_vs_lapack = 0;  // max |l - l_lapack| / max(|l|, 1e-3 max|l|)   (see the test)
  int status = -1;
};

// One matrix through batched_syev; compared with dsyevd when LAPACK is there.
template <class ExecSpace>
EigenCheck eigen_check(const Dense& Hm) {
  const int n = Hm.n;
  ExecSpace exec;
  HostMat H("H", n, n, 1);
  store(H, 0, Hm);
  auto A = to_device<ExecSpace>(H);
  DevVecs<ExecSpace> w("w", n, 1);
  DevStatus<ExecSpace> st("st", 1);
  pl::batched_syev(exec, A, w, st);
  exec.fence();
  auto Vh = to_host(A);
  auto wh = to_host(w);
  EigenCheck r;
  r.status = to_host(st)(0);
  if (r.status != pl::ok) return r;
  const Dense V = load(Vh, 0, n);
  Dense R(n), O(n);
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < n; ++i) {
      double s = -V(i, j) * wh(j, 0), o = (i == j) ? -1.0 : 0.0;
      for (int k = 0; k < n; ++k) {
        s += Hm(i, k) * V(k, j);
        o += V(k, i) * V(k, j);
      }
      R(i, j) = s;
      O(i, j) = o;
    }
  const double hn = norm_fro(Hm);
  r.residual = hn > 0 ? norm_fro(R) / hn / n : norm_fro(R);
  r.orthogonality = norm_fro(O) / n;
  for (int i = 0; i + 1 < n; ++i) REQUIRE(wh(i, 0) <= wh(i + 1, 0));
#if PERFEX_HAVE_LAPACK
  Dense L = Hm;
  std::vector<double> wl(n);
  REQUIRE(pl::lapack::syevd(n, L.a.data(), n, wl.data()) == 0);
  const double lmax = max_abs(wl);
  for (int i = 0; i < n; ++i) {
    const double scale = std::max(std::abs(wl[i]), 1e-3 * lmax);
    if (scale > 0) r.eig_vs_lapack = std::max(r.eig_vs_lapack, std::abs(wh(i, 0) - wl[i]) / scale);
  }
#endif
  return r;
}

}  // namespace

PERFEX_BACKEND_TEST_CASE("linalg: Cholesky solve residual over sizes and condition numbers",
                         "[linalg]") {
  PERFEX_ONLY_SELECTED_BACKEND();
  for (int n : {1, 2, 7, 31, 32, 33, 64, 74, 100, 518}) {
    for (double kappa : {1.0, 1e3, 1e6, 1e12}) {
      CAPTURE(n, kappa);
      const int nbatch = n > 200 ? 1 : 3;
      CHECK(cholesky_solve_residual<TestType>(n, kappa, nbatch, 1000u + n) <= 1e-15);
    }
  }
}

PERFEX_BACKEND_TEST_CASE("linalg: Cholesky factor equals LAPACK dpotrf", "[linalg]") {
  PERFEX_ONLY_SELECTED_BACKEND();
  for (int n : {1, 5, 37, 74, 130}) {
    CAPTURE(n);
    HostMat H("H", n, n, 1);
    const Dense orig = random_spd(n, 1e4, 7u + n);
    store(H, 0, orig);
    auto A = to_device<TestType>(H);
    DevStatus<TestType> st("st", 1);
    pl::batched_cholesky(TestType(), A, st);
    TestType().fence();
    auto Lh = to_host(A);
    REQUIRE(to_host(st)(0) == pl::ok);
    // Strict upper triangle untouched.
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < j; ++i) REQUIRE(Lh(i, j, 0) == orig(i, j));
#if PERFEX_HAVE_LAPACK
    Dense L = orig;
    REQUIRE(pl::lapack::potrf(n, L.a.data(), n) == 0);
    double err = 0, lmax = 0;
    for (int j = 0; j < n; ++j)
      for (int i = j; i < n; ++i) {
        err = std::max(err, std::abs(Lh(i, j, 0) - L(i, j)));
        lmax = std::max(lmax, std::abs(L(i, j)));
      }
    CHECK(err / lmax <= 1e-12);
#endif
  }
}

namespace {
template <class Exec, class AV, class BV, class SV>
struct Rank2Solve {
  AV A;
  BV B;
  SV st;
  KOKKOS_INLINE_FUNCTION void operator()(
      const typename Kokkos::TeamPolicy<Exec>::member_type& m) const {
    const int s = pl::team_cholesky(m, A);
    if (s == pl::ok) pl::team_cholesky_solve(m, A, B);
    Kokkos::single(Kokkos::PerTeam(m), [&]() { st(0) = s; });
  }
};
}  // namespace

PERFEX_BACKEND_TEST_CASE("linalg: rank-2 right-hand side and single-matrix team calls",
                         "[linalg]") {
  PERFEX_ONLY_SELECTED_BACKEND();
  using Exec = TestType;
  using Policy = Kokkos::TeamPolicy<Exec>;
  const int n = 45, nrhs = 3;
  const Dense Hm = random_spd(n, 1e2, 99u);
  Kokkos::View<double**, Kokkos::LayoutLeft, Kokkos::HostSpace> Hh("H", n, n), Bh("B", n, nrhs);
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < n; ++i) Hh(i, j) = Hm(i, j);
  for (int k = 0; k < nrhs; ++k)
    for (int i = 0; i < n; ++i) Bh(i, k) = std::sin(1.0 + i + 7 * k);
  Kokkos::View<double**, Kokkos::LayoutLeft, typename Exec::memory_space> A("A", n, n),
      B("B", n, nrhs);
  Kokkos::deep_copy(A, Hh);
  Kokkos::deep_copy(B, Bh);
  Kokkos::View<int*, typename Exec::memory_space> st("st", 1);
  Kokkos::parallel_for("perfex::test::rank2_solve", Policy(Exec(), 1, Kokkos::AUTO),
                       Rank2Solve<Exec, decltype(A), decltype(B), decltype(st)>{A, B, st});
  Exec().fence();
  REQUIRE(to_host(st)(0) == pl::ok);
  auto Xh = to_host(B);
  for (int k = 0; k < nrhs; ++k)
    for (int i = 0; i < n; ++i) {
      double s = -Bh(i, k);
      for (int j = 0; j < n; ++j) s += Hm(i, j) * Xh(j, k);
      CHECK(std::abs(s) <= 1e-12);
    }
}

PERFEX_BACKEND_TEST_CASE(
    "linalg: indefinite and non-finite members are reported, neighbours untouched", "[linalg]") {
  PERFEX_ONLY_SELECTED_BACKEND();
  const int n = 74, nbatch = 5;
  HostMat H("H", n, n, nbatch);
  for (int b = 0; b < nbatch; ++b) store(H, b, random_spd(n, 1e3, 300u + b));
  std::vector<double> lam = geometric_spectrum(n, 1e3);
  lam[n / 2] = -0.5;
  store(H, 2, symmetric_with_spectrum(lam, 302u));
  H(10, 10, 4) = std::nan("");  // NaN on the diagonal of the last member
  auto A = to_device<TestType>(H);
  DevStatus<TestType> st("st", nbatch);
  pl::batched_cholesky(TestType(), A, st);
  DevVecs<TestType> w("w", n, nbatch);
  auto E = to_device<TestType>(H);
  DevStatus<TestType> se("se", nbatch);
  pl::batched_syev(TestType(), E, w, se);
  TestType().fence();
  auto sh = to_host(st);
  auto seh = to_host(se);
  CHECK(sh(0) == pl::ok);
  CHECK(sh(1) == pl::ok);
  CHECK(sh(2) == pl::not_positive_definite);
  CHECK(sh(3) == pl::ok);
  CHECK(sh(4) == pl::not_positive_definite);
  CHECK(seh(2) == pl::ok);  // symmetric indefinite: fine for the eigensolver
  CHECK(seh(4) == pl::not_converged);
  // Neighbours: bitwise the result of factoring them alone, finite.
  auto Lh = to_host(A);
  auto Vh = to_host(E);
  for (int b : {1, 3}) {
    HostMat one("one", n, n, 1);
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < n; ++i) one(i, j, 0) = H(i, j, b);
    auto A1 = to_device<TestType>(one);
    DevStatus<TestType> s1("s1", 1);
    pl::batched_cholesky(TestType(), A1, s1);
    auto E1 = to_device<TestType>(one);
    DevVecs<TestType> w1("w1", n, 1);
    pl::batched_syev(TestType(), E1, w1, s1);
    TestType().fence();
    auto L1 = to_host(A1);
    auto V1 = to_host(E1);
    bool same = true, finite = true;
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < n; ++i) {
        same = same && std::memcmp(&L1(i, j, 0), &Lh(i, j, b), sizeof(double)) == 0 &&
               std::memcmp(&V1(i, j, 0), &Vh(i, j, b), sizeof(double)) == 0;
        finite = finite && std::isfinite(Lh(i, j, b)) && std::isfinite(Vh(i, j, b));
      }
    CHECK(same);
    CHECK(finite);
  }
}

PERFEX_BACKEND_TEST_CASE("linalg: diagonal blocks of the inverse equal LAPACK potri's",
                         "[linalg]") {
  PERFEX_ONLY_SELECTED_BACKEND();
  struct Case {
    int bs, nblocks_total, first, nblocks;
    double kappa;
  };
  for (const Case c : {Case{74, 7, 0, 7, 1e6}, Case{74, 6, 1, 5, 1e3}, Case{3, 4, 0, 4, 10.0},
                       Case{1, 5, 2, 3, 1e2}, Case{9, 3, 0, 3, 1e6}}) {
    const int n = c.bs * c.nblocks_total;
    CAPTURE(n, c.bs, c.first, c.nblocks);
    const int nbatch = 2;
    HostMat H("H", n, n, nbatch);
    std::vector<Dense> orig;
    for (int b = 0; b < nbatch; ++b) {
      orig.push_back(random_spd(n, c.kappa, 500u + n + b));
      store(H, b, orig.back());
    }
    auto A = to_device<TestType>(H);
    DevStatus<TestType> st("st", nbatch);
    pl::batched_cholesky(TestType(), A, st);
    Kokkos::View<double****, Kokkos::LayoutLeft, typename TestType::memory_space> C(
        "C", c.bs, c.bs, c.nblocks, nbatch);
    pl::batched_cholesky_inverse_diag_blocks(TestType(), A, c.bs, C, c.first);
    TestType().fence();
    auto Ch = to_host(C);
    for (int b = 0; b < nbatch; ++b) {
      REQUIRE(to_host(st)(b) == pl::ok);
#if PERFEX_HAVE_LAPACK
      Dense Inv = orig[b];
      REQUIRE(pl::lapack::potrf(n, Inv.a.data(), n) == 0);
      REQUIRE(pl::lapack::potri(n, Inv.a.data(), n) == 0);
      for (int k = 0; k < c.nblocks; ++k) {
        const int r0 = (c.first + k) * c.bs;
        double err = 0, ref = 0;
        for (int j = 0; j < c.bs; ++j)
          for (int i = 0; i < c.bs; ++i) {
            const int gi = std::max(i, j) + r0,
                      gj = std::min(i, j) + r0;  // lower triangle of potri
            err = std::max(err, std::abs(Ch(i, j, k, b) - Inv(gi, gj)));
            ref = std::max(ref, std::abs(Inv(gi, gj)));
            REQUIRE(Ch(i, j, k, b) == Ch(j, i, k, b));
          }
        CHECK(err / ref <= 1e-10);
      }
#else
      (void)orig;
#endif
    }
  }
}

PERFEX_BACKEND_TEST_CASE("linalg: symmetric eigendecomposition", "[linalg]") {
  PERFEX_ONLY_SELECTED_BACKEND();
  auto check = [](const Dense& Hm, double eig_tol) {
    const EigenCheck r = eigen_check<TestType>(Hm);
    REQUIRE(r.status == pl::ok);
    CHECK(r.residual <= 1e-13);
    CHECK(r.orthogonality <= 1e-13);
    CHECK(r.eig_vs_lapack <= eig_tol);
  };
  // Random SPD over sizes and condition numbers. Eigenvalues compared with dsyevd relative to
  // max(|l|, 1e-3 l_max): both solvers are only backward stable (absolute error ~ eps ||H||), so
  // eigenvalues far below l_max are not comparable to 1e-12 relative.
  for (int n : {1, 2, 3, 7, 31, 64, 74, 100}) {
    for (double kappa : {1.0, 1e3, 1e6, 1e12}) {
      CAPTURE(n, kappa);
      check(random_spd(n, kappa, 2000u + n), 1e-12);
    }
  }
  SECTION("repeated eigenvalues") {
    for (int n : {6, 40, 74}) {
      CAPTURE(n);
      std::vector<double> lam(n);
      for (int i = 0; i < n; ++i) lam[i] = 1.0 + (i % 3);  // each value n/3 times
      check(symmetric_with_spectrum(lam, 77u), 1e-12);
      std::vector<double> ones(n, 2.5);
      check(symmetric_with_spectrum(ones, 78u), 1e-12);
    }
  }
  SECTION("diagonal, zero and indefinite matrices") {
    Dense D(9);
    const double diag[9] = {3, -1, 7, 0, 2, 2, -5, 1e-3, 4};
    for (int i = 0; i < 9; ++i) D(i, i) = diag[i];
    check(D, 1e-12);
    check(Dense(5), 1e-12);
    Dense one(1);
    one(0, 0) = -4.25;
    check(one, 1e-12);
    std::vector<double> lam(50);
    for (int i = 0; i < 50; ++i) lam[i] = std::sin(3.0 * i) * 100;
    check(symmetric_with_spectrum(lam, 5u), 1e-12);
  }
  SECTION("huge and tiny scales") {
    // QL (n 20) and divide and conquer (n 74); in the last case the largest entry is only the
    // last diagonal one, so a scan for the scale that missed it would overflow.
    for (int n : {20, 74}) {
      CAPTURE(n);
      const Dense H = random_spd(n, 1e3, 12u);
      Dense huge = H, tiny = H, tiny_but_last = H;
      for (double& x : huge.a) x *= 1e200;
      for (double& x : tiny.a) x *= 1e-200;
      for (double& x : tiny_but_last.a) x *= 1e-200;
      tiny_but_last(n - 1, n - 1) = 1e200;
      const std::pair<const char*, const Dense*> cases[] = {
          {"huge", &huge}, {"tiny", &tiny}, {"tiny but the last", &tiny_but_last}};
      for (const auto& [name, M] : cases) {
        CAPTURE(name);
        const EigenCheck r = eigen_check<TestType>(*M);
        REQUIRE(r.status == pl::ok);
        CHECK(r.orthogonality <= 1e-13);
        CHECK(r.eig_vs_lapack <= 1e-12);
      }
    }
  }
  SECTION("tridiagonal with tiny off-diagonals (graded)") {
    const int n = 30;
    Dense T(n);
    for (int i = 0; i < n; ++i) T(i, i) = std::pow(10.0, -i * 0.4);
    for (int i = 0; i + 1 < n; ++i) T(i + 1, i) = T(i, i + 1) = 1e-3 * std::pow(10.0, -i * 0.4);
    check(T, 1e-12);
  }
}

PERFEX_BACKEND_TEST_CASE("linalg: eigendecomposition of a large matrix", "[linalg][slow]") {
  PERFEX_ONLY_SELECTED_BACKEND();
  const EigenCheck r = eigen_check<TestType>(random_spd(300, 1e6, 42u));
  REQUIRE(r.status == pl::ok);
  CHECK(r.residual <= 1e-13);
  CHECK(r.orthogonality <= 1e-13);
  CHECK(r.eig_vs_lapack <= 1e-12);
}

namespace {
// X <- A^{-1/2} (or A^{1/2}) for every matrix of a batch, one team each.
template <class Exec>
HostMat matrix_root(const HostMat& H, bool inverse, std::vector<int>& status, int team_size = 0) {
  const int n = int(H.extent(0)), nb = int(H.extent(2));
  auto A = to_device<Exec>(H);
  DevMat<Exec> V("V", n, n, nb);
  DevVecs<Exec> w("w", n, nb), work("work", pl::syev_work_size(n), nb);
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
}  // namespace

PERFEX_BACKEND_TEST_CASE("linalg: inverse square root and square root", "[linalg]") {
  PERFEX_ONLY_SELECTED_BACKEND();
  for (int n : {1, 5, 74}) {
    CAPTURE(n);
    const int nb = 3;
    HostMat H("H", n, n, nb);
    std::vector<Dense> orig;
    for (int b = 0; b < nb; ++b) {
      orig.push_back(random_spd(n, 1e3, 900u + b));
      store(H, b, orig.back());
    }
    std::vector<int> s1, s2;
    const HostMat X = matrix_root<TestType>(H, true, s1);
    const HostMat S = matrix_root<TestType>(H, false, s2);
    for (int b = 0; b < nb; ++b) {
      REQUIRE(s1[b] == pl::ok);
      REQUIRE(s2[b] == pl::ok);
      double e1 = 0, e2 = 0;
      const Dense Xd = load(X, b, n), Sd = load(S, b, n);
      Dense XA(n);
      for (int j = 0; j < n; ++j)
        for (int i = 0; i < n; ++i) {
          double s = 0, ss = 0;
          for (int k = 0; k < n; ++k) {
            s += Xd(i, k) * orig[b](k, j);
            ss += Sd(i, k) * Sd(k, j);
          }
          XA(i, j) = s;
          e2 = std::max(e2, std::abs(ss - orig[b](i, j)));
          CHECK(Xd(i, j) == Xd(j, i));
        }
      for (int j = 0; j < n; ++j)
        for (int i = 0; i < n; ++i) {
          double s = (i == j) ? -1.0 : 0.0;
          for (int k = 0; k < n; ++k) s += XA(i, k) * Xd(k, j);
          e1 = std::max(e1, std::abs(s));
        }
      CHECK(e1 <= 1e-10);                          // kappa 1e3: error ~ n eps kappa
      CHECK(e2 <= 1e-13 * n * norm_inf(orig[b]));  // S S = A
    }
  }
  SECTION("eigenvalue guard keeps singular input finite") {
    const int n = 20;
    std::vector<double> lam = geometric_spectrum(n, 1e3);
    lam[0] = 0.0;
    lam[1] = -1e-20;
    HostMat H("H", n, n, 1);
    store(H, 0, symmetric_with_spectrum(lam, 11u));
    std::vector<int> s;
    const HostMat X = matrix_root<TestType>(H, true, s);
    REQUIRE(s[0] == pl::ok);
    CHECK(all_finite(X));
  }
}

namespace {
// Every team kernel on one matrix: Cholesky, solve, inverse diagonal blocks, inverse sqrt.
template <class Exec>
struct AllKernels {
  DevMat<Exec> L, A, V, C;
  DevVecs<Exec> x, w, work, blockwork;
  DevStatus<Exec> st;
  int bs;
  KOKKOS_INLINE_FUNCTION void operator()(
      const typename Kokkos::TeamPolicy<Exec>::member_type& m) const {
    const int b = m.league_rank();
    auto Lb = Kokkos::subview(L, Kokkos::ALL(), Kokkos::ALL(), b);
    const int s0 = pl::team_cholesky(m, Lb);
    pl::team_cholesky_solve(m, Lb, Kokkos::subview(x, Kokkos::ALL(), b));
    const int n = int(L.extent(0));
    auto bw = Kokkos::subview(blockwork, Kokkos::ALL(), Kokkos::make_pair(b * bs, b * bs + bs));
    pl::team_cholesky_inverse_diag_blocks(m, Lb, bs, 0, n / bs, C, bw);
    const int s1 = pl::team_inverse_sqrt(m, Kokkos::subview(A, Kokkos::ALL(), Kokkos::ALL(), b),
                                         Kokkos::subview(V, Kokkos::ALL(), Kokkos::ALL(), b),
                                         Kokkos::subview(w, Kokkos::ALL(), b),
                                         Kokkos::subview(work, Kokkos::ALL(), b));
    Kokkos::single(Kokkos::PerTeam(m), [&]() { st(b) = s0 + 10 * s1; });
  }
};

template <class Exec>
std::vector<double> all_kernels(const HostMat& H, TeamShape shape) {
  const int n = int(H.extent(0)), bs = n / 3;
  AllKernels<Exec> f{to_device<Exec>(H),
                     to_device<Exec>(H),
                     DevMat<Exec>("V", n, n, 1),
                     DevMat<Exec>("C", 3, bs, bs),
                     DevVecs<Exec>("x", n, 1),
                     DevVecs<Exec>("w", n, 1),
                     DevVecs<Exec>("work", pl::syev_work_size(n), 1),
                     DevVecs<Exec>("blockwork", n, bs),
                     DevStatus<Exec>("st", 1),
                     bs};
  Kokkos::deep_copy(f.x, 1.0);
  run_one_team<Exec>("perfex::test::all_kernels", f, shape);
  REQUIRE(to_host(f.st)(0) == 0);
  std::vector<double> out;
  for (auto h : {to_host(f.L), to_host(f.A), to_host(f.C)})
    out.insert(out.end(), h.data(), h.data() + h.size());
  auto xh = to_host(f.x);
  out.insert(out.end(), xh.data(), xh.data() + xh.size());
  return out;
}
}  // namespace

PERFEX_BACKEND_TEST_CASE("linalg: every team shape gives the one-thread results",
                         "[linalg][team]") {
  PERFEX_ONLY_SELECTED_BACKEND();
  // The team-vector code paths (several threads, vector lanes) against the one-thread ones
  // (blocked loops; divide and conquer for the eigenvectors).
  using Exec = TestType;
  for (int n : {75, 24}) {  // > 2 Cholesky panels and 3 blocks of 25; QL-only eigen size
    HostMat H("H", n, n, 1);
    store(H, 0, random_spd(n, 1e4, 41u + n));
    const std::vector<double> one = all_kernels<Exec>(H, {1, 1});
    for (const TeamShape shape : team_shapes<Exec>(AllKernels<Exec>{})) {
      CAPTURE(n, shape.team_size, shape.vector_length);
      CHECK(max_relative_difference(one, all_kernels<Exec>(H, shape)) <= 1e-11);
    }
  }
}

#if PERFEX_HAVE_LAPACK
PERFEX_BACKEND_TEST_CASE("linalg: LAPACK backend of the batched front-ends", "[linalg]") {
  PERFEX_ONLY_SELECTED_BACKEND();
  using Exec = TestType;
  if constexpr (!Kokkos::SpaceAccessibility<Exec, Kokkos::HostSpace>::accessible) {
    SUCCEED("not a host backend");
  } else {
    const int n = 50, nb = 3;
    HostMat H("H", n, n, nb);
    for (int b = 0; b < nb; ++b) store(H, b, random_spd(n, 1e2, 60u + b));
    store(H, 1, symmetric_with_spectrum(std::vector<double>(n, -1.0), 3u));
    auto A1 = to_device<Exec>(H);
    auto A2 = to_device<Exec>(H);
    DevStatus<Exec> s1("s1", nb), s2("s2", nb);
    pl::batched_cholesky(Exec(), A1, s1, pl::Backend::portable);
    pl::batched_cholesky(Exec(), A2, s2, pl::Backend::lapack);
    DevVecs<Exec> x1("x1", n, nb), x2("x2", n, nb);
    Kokkos::deep_copy(x1, 1.0);
    Kokkos::deep_copy(x2, 1.0);
    pl::batched_cholesky_solve(Exec(), A1, x1);
    pl::batched_cholesky_solve(Exec(), A2, x2, pl::Backend::lapack);
    auto E1 = to_device<Exec>(H);
    auto E2 = to_device<Exec>(H);
    DevVecs<Exec> w1("w1", n, nb), w2("w2", n, nb);
    DevStatus<Exec> t1("t1", nb), t2("t2", nb);
    pl::batched_syev(Exec(), E1, w1, t1);
    pl::batched_syev(Exec(), E2, w2, t2, pl::Backend::lapack);
    Exec().fence();
    for (int b = 0; b < nb; ++b) {
      CHECK(s1(b) == s2(b));
      CHECK(t1(b) == pl::ok);
      CHECK(t2(b) == pl::ok);
      for (int i = 0; i < n; ++i) {
        CHECK(std::abs(w1(i, b) - w2(i, b)) <= 1e-13 * n * 100);
        if (b != 1) CHECK(std::abs(x1(i, b) - x2(i, b)) <= 1e-12 * std::abs(x2(i, b)) + 1e-14);
      }
    }
    CHECK(s2(1) == pl::not_positive_definite);
  }
}
#endif

#if defined(KOKKOS_ENABLE_SERIAL) && defined(KOKKOS_ENABLE_OPENMP)
TEST_CASE("linalg: Serial and OpenMP give identical results", "[linalg]") {
  const int n = 74, nb = 4;
  HostMat H("H", n, n, nb);
  for (int b = 0; b < nb; ++b) store(H, b, random_spd(n, 1e6, 70u + b));
  auto run = [&](auto exec) {
    using Exec = decltype(exec);
    auto A = to_device<Exec>(H);
    DevStatus<Exec> st("st", nb);
    pl::batched_cholesky(exec, A, st);
    DevVecs<Exec> x("x", n, nb);
    Kokkos::deep_copy(x, 0.5);
    pl::batched_cholesky_solve(exec, A, x);
    Kokkos::View<double****, Kokkos::LayoutLeft, typename Exec::memory_space> C("C", 37, 37, 2, nb);
    pl::batched_cholesky_inverse_diag_blocks(exec, A, 37, C);
    auto E = to_device<Exec>(H);
    DevVecs<Exec> w("w", n, nb);
    pl::batched_syev(exec, E, w, st);
    std::vector<int> s;
    const HostMat X = matrix_root<Exec>(H, true, s);
    exec.fence();
    std::vector<double> all;
    auto append = [&](const double* p, std::size_t m) { all.insert(all.end(), p, p + m); };
    append(A.data(), A.size());
    append(x.data(), x.size());
    append(C.data(), C.size());
    append(E.data(), E.size());
    append(w.data(), w.size());
    append(X.data(), X.size());
    return all;
  };
  const std::vector<double> a = run(Kokkos::Serial());
  const std::vector<double> b = run(Kokkos::OpenMP());
  REQUIRE(a.size() == b.size());
  CHECK(std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0);
}
#endif
