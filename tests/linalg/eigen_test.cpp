// Tests of the symmetric eigensolver's two paths (tag [linalg]): divide and conquer (one-thread
// teams, n > dc_leaf) and explicit Q + QL (every other team shape), on spectra that stress
// them - clusters, repeated and graded eigenvalues, Wilkinson matrices, near-singular and
// rank-one matrices - and C^-1/2's eigenvalue clip. Oracles: LAPACK dsyevd and KokkosBatched's
// SerialGemm for the products.
#include "perfex_test.hpp"

#include <KokkosBatched_Gemm_Decl.hpp>
#include <KokkosBatched_Gemm_Serial_Impl.hpp>
#include <perfex/config.hpp>
#include <perfex/linalg/eigen.hpp>
#include <perfex/linalg/lapack.hpp>

#include <string>

#include "linalg_test_util.hpp"

using namespace linalg_test;
namespace pl = perfex::linalg;
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
