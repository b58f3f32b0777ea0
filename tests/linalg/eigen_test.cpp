// Tests of the symmetric eigensolver (tag [linalg]): batched_syev on random and large matrices,
// the matrix square roots, and its two paths: divide and conquer (one-thread
// teams, n > dc_leaf) and explicit Q + QL (every other team shape), on spectra that stress
// them - clusters, repeated and graded eigenvalues, Wilkinson matrices, near-singular and
// rank-one matrices - and C^-1/2's eigenvalue clip. Oracles: LAPACK dsyevd and KokkosBatched's
// SerialGemm for the products.
#include "perfex_test.hpp"

#include <KokkosBatched_Gemm_Decl.hpp>
#include <KokkosBatched_Gemm_Serial_Impl.hpp>
#include <perfex/config.hpp>
#include <perfex/linalg/batched.hpp>
#include <perfex/linalg/eigen.hpp>
#include <perfex/linalg/reference/lapack.hpp>

#include <limits>
#include <string>

#include "linalg_test_util.hpp"

using namespace linalg_test;
namespace pl = perfex::linalg;
namespace pd = perfex::linalg::detail;
namespace kb = KokkosBatched;

namespace {

using HostMat2 = Kokkos::View<double**, Kokkos::LayoutLeft, Kokkos::HostSpace>;

HostMat2 view_of(const Dense& D) {
  HostMat2 v("v", D.n, D.n);
  for (int j = 0; j < D.n; ++j)
    for (int i = 0; i < D.n; ++i) v(i, j) = D(i, j);
  return v;
}

// C = A op(B) by KokkosBatched::SerialGemm (op(B) = B or B^T).
template <class TransB>
HostMat2 product(const HostMat2& A, const HostMat2& B) {
  HostMat2 C("C", A.extent(0),
             std::is_same<TransB, kb::Trans::NoTranspose>::value ? B.extent(1) : B.extent(0));
  kb::SerialGemm<kb::Trans::NoTranspose, TransB, kb::Algo::Gemm::Unblocked>::invoke(1.0, A, B, 0.0,
                                                                                    C);
  return C;
}

template <class Exec>
int run_eigen(const Dense& H, MatrixOp op, TeamShape shape, Dense& out, std::vector<double>& w) {
  const int n = H.n;
  HostMat Hh("H", n, n, 1);
  store(Hh, 0, H);
  EigenKernel<Exec> f{to_device<Exec>(Hh),      DevMat<Exec>("V", n, n, 1),
                      DevVecs<Exec>("w", n, 1), DevVecs<Exec>("work", pl::syev_work_size(n), 1),
                      DevStatus<Exec>("st", 1), op};
  run_one_team<Exec>("perfex::test::eigen", f, shape);
  out = load(to_host(f.A), 0, n);
  auto wh = to_host(f.w);
  w.assign(wh.data(), wh.data() + n);
  return to_host(f.st)(0);
}

Dense tridiagonal(const std::vector<double>& d, const std::vector<double>& e) {
  Dense T(int(d.size()));
  for (int i = 0; i < T.n; ++i) {
    T(i, i) = d[i];
    if (i + 1 < T.n) T(i + 1, i) = T(i, i + 1) = e[i];
  }
  return T;
}

// Named test matrices of order n.
std::vector<std::pair<std::string, Dense>> structured_matrices(int n) {
  std::vector<std::pair<std::string, Dense>> m;
  std::vector<double> lam(n);
  for (int i = 0; i < n; ++i) lam[i] = 1.0 + (i % 3);
  m.emplace_back("3-fold repeated", symmetric_with_spectrum(lam, 1u));
  m.emplace_back("all equal", symmetric_with_spectrum(std::vector<double>(n, 2.5), 2u));
  for (int i = 0; i < n; ++i) lam[i] = i < n / 2 ? 1.0 : 1.0 + 1e-15 * i;
  m.emplace_back("two clusters 1e-15 wide", symmetric_with_spectrum(lam, 3u));
  for (int i = 0; i < n; ++i) lam[i] = std::pow(10.0, -14.0 * i / (n - 1));
  m.emplace_back("graded 1 .. 1e-14", symmetric_with_spectrum(lam, 4u));
  for (int i = 0; i < n; ++i) lam[i] = i < 5 ? 1e-17 * i : 1.0 + 0.01 * i;
  m.emplace_back("near singular", symmetric_with_spectrum(lam, 5u));
  std::vector<double> d(n), e(n - 1, 1.0);
  for (int i = 0; i < n; ++i) d[i] = std::abs(i - (n - 1) / 2);
  m.emplace_back("Wilkinson", tridiagonal(d, e));
  for (int i = 0; i < n; ++i) d[i] = std::abs(i % 21 - 10);
  for (int i = 0; i + 1 < n; ++i) e[i] = i % 21 == 20 ? 1e-14 : 1.0;
  m.emplace_back("glued Wilkinson", tridiagonal(d, e));
  for (int i = 0; i < n; ++i) d[i] = std::pow(10.0, -0.4 * i);
  for (int i = 0; i + 1 < n; ++i) e[i] = 1e-3 * d[i];
  m.emplace_back("graded tridiagonal", tridiagonal(d, e));
  m.emplace_back("1-2-1 Laplacian",
                 tridiagonal(std::vector<double>(n, 2.0), std::vector<double>(n - 1, -1.0)));
  Dense ones(n);
  for (double& x : ones.a) x = 1.0;
  m.emplace_back("rank one", ones);
  m.emplace_back("random, kappa 1e12", random_spd(n, 1e12, 6u));
  return m;
}

struct Quality {
  double residual = 0;       // ||H V - V diag(w)||_F / (n ||H||_F)
  double orthogonality = 0;  // ||V^T V - I||_F / n
  double eigenvalues = 0;    // max |w - w_dsyevd| / max |w_dsyevd|
};

Quality quality(const Dense& H, const Dense& V, const std::vector<double>& w) {
  const int n = H.n;
  const HostMat2 Vv = view_of(V);
  const HostMat2 HV = product<kb::Trans::NoTranspose>(view_of(H), Vv);
  HostMat2 Vt("Vt", n, n);
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < n; ++i) Vt(i, j) = V(j, i);
  const HostMat2 VtV = product<kb::Trans::NoTranspose>(Vt, Vv);
  Quality q;
  double r = 0, o = 0;
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < n; ++i) {
      const double ri = HV(i, j) - V(i, j) * w[j], oi = VtV(i, j) - (i == j ? 1.0 : 0.0);
      r += ri * ri;
      o += oi * oi;
    }
  const double hn = norm_fro(H);
  q.residual = hn > 0 ? std::sqrt(r) / hn / n : std::sqrt(r);
  q.orthogonality = std::sqrt(o) / n;
#if PERFEX_HAVE_LAPACK
  Dense L = H;
  std::vector<double> wl(n);
  REQUIRE(pl::lapack::syevd(n, L.a.data(), n, wl.data()) == 0);
  const double lmax = max_abs(wl);
  for (int i = 0; i < n; ++i)
    q.eigenvalues = std::max(q.eigenvalues, std::abs(w[i] - wl[i]) / (lmax > 0 ? lmax : 1.0));
#endif
  return q;
}

}  // namespace

PERFEX_BACKEND_TEST_CASE("linalg: eigendecomposition of structured spectra on every solver path",
                         "[linalg]") {
  PERFEX_ONLY_SELECTED_BACKEND();
  using Exec = TestType;
  std::vector<TeamShape> shapes{{1, 1}};
  for (const TeamShape s : team_shapes<Exec>(EigenKernel<Exec>{})) shapes.push_back(s);
  // Orders around the divide and conquer leaf size (one and two levels of merges), DESI's 74.
  for (int n : {pl::detail::dc_leaf + 1, 74, 2 * pl::detail::dc_leaf + 1}) {
    for (const auto& [name, H] : structured_matrices(n)) {
      // One thread (divide and conquer), then the largest team with vector lanes (QL).
      for (const TeamShape shape : {shapes.front(), shapes.back()}) {
        CAPTURE(n, name, shape.team_size, shape.vector_length);
        Dense V;
        std::vector<double> w;
        REQUIRE(run_eigen<Exec>(H, MatrixOp::eigenvectors, shape, V, w) == pl::ok);
        for (int i = 0; i + 1 < n; ++i) REQUIRE(w[i] <= w[i + 1]);
        const Quality q = quality(H, V, w);
        CHECK(q.residual <= 1e-15);
        CHECK(q.orthogonality <= 1e-15);
        CHECK(q.eigenvalues <= 1e-14);
      }
    }
  }
}

PERFEX_BACKEND_TEST_CASE("linalg: C^-1/2 keeps the eigenvalue clip on near-singular matrices",
                         "[linalg]") {
  PERFEX_ONLY_SELECTED_BACKEND();
#if PERFEX_HAVE_LAPACK
  using Exec = TestType;
  std::vector<TeamShape> shapes{{1, 1}};
  for (const TeamShape s : team_shapes<Exec>(EigenKernel<Exec>{})) shapes.push_back(s);
  const double clip = 1e-14;
  for (int n : {74, 20}) {
    // Eigenvalues 1e-3 .. 1 but some far below clip * max (zero, slightly negative, tiny): the
    // clip raises those to clip * max, so C^-1/2 is finite and equal to LAPACK's eigenpairs
    // with the same clip, composed by KokkosBatched's SerialGemm.
    std::vector<double> lam = geometric_spectrum(n, 1e3);
    lam[0] = 0.0;
    lam[1] = -1e-20;
    lam[n / 2] = 1e-30;
    lam[n / 2 + 1] = 1e-17;
    const Dense H = symmetric_with_spectrum(lam, 17u + n);
    Dense Vl = H;
    std::vector<double> wl(n);
    REQUIRE(pl::lapack::syevd(n, Vl.a.data(), n, wl.data()) == 0);
    for (const MatrixOp op : {MatrixOp::inverse_sqrt, MatrixOp::sqrt}) {
      HostMat2 Vf("Vf", n, n);
      for (int k = 0; k < n; ++k) {
        const double mu = std::max(wl[k], clip * wl[n - 1]);
        const double f = op == MatrixOp::inverse_sqrt ? 1.0 / std::sqrt(mu) : std::sqrt(mu);
        for (int i = 0; i < n; ++i) Vf(i, k) = Vl(i, k) * f;
      }
      const HostMat2 ref = product<kb::Trans::Transpose>(Vf, view_of(Vl));
      double rmax = 0;
      for (std::size_t k = 0; k < ref.size(); ++k) rmax = std::max(rmax, std::abs(ref.data()[k]));
      for (const TeamShape shape : shapes) {
        CAPTURE(n, op == MatrixOp::inverse_sqrt, shape.team_size, shape.vector_length);
        Dense X;
        std::vector<double> w;
        REQUIRE(run_eigen<Exec>(H, op, shape, X, w) == pl::ok);
        double err = 0;
        for (int j = 0; j < n; ++j)
          for (int i = 0; i < n; ++i) {
            err = std::max(err, std::abs(X(i, j) - ref(i, j)));
            REQUIRE(X(i, j) == X(j, i));
          }
        CHECK(err <= 1e-11 * rmax);
      }
    }
  }
#else
  SUCCEED("built without LAPACK: no oracle");
#endif
}

namespace {

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

#if PERFEX_HAVE_LAPACK
TEST_CASE("linalg: the blocked one-thread reduction and back-transformation equal LAPACK's dsytrd",
          "[linalg]") {
  // Panels of tridiagonal_block reflectors and blocks of apply_q_block: sizes around both and
  // around divide and conquer's leaf. The reflectors are LAPACK's (same convention), so d, e and
  // tau agree to rounding (tau of the last, small trailing blocks only to ~1e-11: it is a ratio
  // of their accumulated entries); Q from the back-transformation reduces A to that tridiagonal.
  for (int n : {1, 2, 3, 5, 8, 9, 10, 17, 40, 41, 74, 75, 130}) {
    CAPTURE(n);
    const Dense A = random_spd(n, 1e4, 300u + n);
    // Backward stable: both within a few n eps ||A|| of the exact reduction.
    const double eps = std::numeric_limits<double>::epsilon(), tol = 4 * n * eps * norm_fro(A);
    Dense R = A;
    std::vector<double> work(static_cast<std::size_t>(pl::syev_work_size(n)));
    const pd::SyevWork W(work.data(), n);
    pd::tridiagonalize_sequential(pd::MatRef<true>{R.a.data(), 1, n}, n, W, W.z);
    Dense L = A;
    std::vector<double> d(n), e(std::max(n - 1, 1)), tau(std::max(n - 1, 1));
    REQUIRE(pl::lapack::sytrd(n, L.a.data(), n, d.data(), e.data(), tau.data()) == 0);
    for (int i = 0; i < n; ++i) CHECK(std::abs(W.d[i] - d[i]) <= tol);
    for (int i = 0; i + 1 < n; ++i) {
      CHECK(std::abs(W.e[i] - e[i]) <= tol);
      CHECK(std::abs(W.tau[i] - tau[i]) <= 1e-10);  // tau in [1, 2]: the same convention
    }
    // Q = H_0 ... H_{n-3} applied to the identity; Q^T A Q = T and Q^T Q = I.
    std::vector<double> Q(static_cast<std::size_t>(n) * n, 0.0);
    for (int i = 0; i < n; ++i) Q[static_cast<std::size_t>(i) * n + i] = 1.0;
    std::vector<double> qwork(static_cast<std::size_t>(pd::apply_q_work_size(n)));
    pd::apply_q_sequential<true>(pd::MatRef<true>{R.a.data(), 1, n}, n, W.tau, Q.data(), n,
                                 qwork.data());
    double tdiff = 0, odiff = 0;
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < n; ++i) {
        double t = 0, o = 0;
        for (int k = 0; k < n; ++k) {
          double aq = 0;
          for (int l = 0; l < n; ++l) aq += A(k, l) * Q[static_cast<std::size_t>(j) * n + l];
          t += Q[static_cast<std::size_t>(i) * n + k] * aq;
          o += Q[static_cast<std::size_t>(i) * n + k] * Q[static_cast<std::size_t>(j) * n + k];
        }
        const double tij = i == j ? W.d[i] : i == j + 1 ? W.e[j] : j == i + 1 ? W.e[i] : 0.0;
        tdiff = std::max(tdiff, std::abs(t - tij));
        odiff = std::max(odiff, std::abs(o - (i == j ? 1.0 : 0.0)));
      }
    CHECK(tdiff <= tol);
    CHECK(odiff <= 4 * n * eps);
  }
}
#endif
