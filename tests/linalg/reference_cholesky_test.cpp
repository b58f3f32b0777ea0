// Tests of the dense reference Cholesky (tag [linalg]): factor, solve and diagonal blocks of the
// inverse (perfex/linalg/reference/cholesky.hpp, through the batched front ends), against
// residuals and the host LAPACK; failures reported per member.
#include "perfex_test.hpp"

#include <perfex/config.hpp>
#include <perfex/linalg/eigen.hpp>
#include <perfex/linalg/reference/batched.hpp>
#include <perfex/linalg/reference/cholesky.hpp>
#include <perfex/linalg/reference/lapack.hpp>

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
  auto eig_status = to_host(se);
  CHECK(sh(0) == pl::ok);
  CHECK(sh(1) == pl::ok);
  CHECK(sh(2) == pl::not_positive_definite);
  CHECK(sh(3) == pl::ok);
  CHECK(sh(4) == pl::not_positive_definite);
  CHECK(eig_status(2) == pl::ok);  // symmetric indefinite: fine for the eigensolver
  CHECK(eig_status(4) == pl::not_converged);
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
