// Tests of the symmetric tridiagonal eigensolvers (tag [linalg]): implicit QL (ql_sequential)
// and divide and conquer (tridiagonal_dc), called directly on the host, against spectra known
// in closed form, and on matrices that stress deflation and clustering; each checked for
// eigenvalues, residual and orthogonality.
#include "perfex_test.hpp"

#include <perfex/linalg/tridiagonal.hpp>

#include <algorithm>
#include <cmath>
#include <vector>

namespace pd = perfex::linalg::detail;
namespace pl = perfex::linalg;

namespace {

struct Tridiagonal {
  std::vector<double> d, e;  // e[i] couples i and i+1; e.size() == n - 1
  int n() const { return static_cast<int>(d.size()); }
};

struct Result {
  int status = -1;
  std::vector<double> w;  // eigenvalues, ascending
  std::vector<double> Z;  // eigenvectors, column-major n x n
  double residual = 0, orthogonality = 0;
};

// |T z - w z| and |Z^T Z - I|, largest entries, relative to max|T|.
void check(const Tridiagonal& t, Result& r) {
  const int n = t.n();
  double tmax = 0;
  for (int i = 0; i < n; ++i) tmax = std::max(tmax, std::abs(t.d[i]));
  for (double x : t.e) tmax = std::max(tmax, std::abs(x));
  for (int c = 0; c < n; ++c) {
    const double* z = &r.Z[static_cast<std::size_t>(c) * n];
    for (int i = 0; i < n; ++i) {
      double tz = t.d[i] * z[i] - r.w[c] * z[i];
      if (i > 0) tz += t.e[i - 1] * z[i - 1];
      if (i + 1 < n) tz += t.e[i] * z[i + 1];
      r.residual = std::max(r.residual, std::abs(tz) / std::max(tmax, 1e-300));
    }
    for (int c2 = 0; c2 < n; ++c2) {
      double dot = c == c2 ? -1.0 : 0.0;
      for (int i = 0; i < n; ++i) dot += z[i] * r.Z[static_cast<std::size_t>(c2) * n + i];
      r.orthogonality = std::max(r.orthogonality, std::abs(dot));
    }
  }
}

Result solve_ql(const Tridiagonal& t) {
  const int n = t.n();
  Result r;
  r.w = t.d;
  std::vector<double> e(t.e);
  e.push_back(0.0);  // QL reads e[n - 1] as 0
  r.Z.assign(static_cast<std::size_t>(n) * n, 0.0);
  for (int i = 0; i < n; ++i) r.Z[static_cast<std::size_t>(i) * n + i] = 1.0;
  const pd::MatRef<true> Z{r.Z.data(), 1, n};
  r.status = pd::ql_sequential<true>(Z, n, r.w.data(), e.data(), 30 * n);
  pd::sort_eigenpairs<true>(Z, n, r.w.data(), n);
  check(t, r);
  return r;
}

Result solve_dc(const Tridiagonal& t) {
  const int n = t.n();
  Result r;
  r.w = t.d;
  r.Z.assign(static_cast<std::size_t>(n) * n, 0.0);
  std::vector<double> work(static_cast<std::size_t>(pd::dc_work_size(n)));
  const std::vector<double> e_before = t.e;
  r.status = pd::tridiagonal_dc(n, r.w.data(), t.e.data(), r.Z.data(), n, work.data());
  REQUIRE(t.e == e_before);  // documented: e is left unchanged
  check(t, r);
  return r;
}

// The (1, 2, 1) matrix, scaled: eigenvalues s (2 - 2 cos(k pi / (n + 1))), k = 1 .. n.
Tridiagonal toeplitz(int n, double s) {
  return {std::vector<double>(n, 2.0 * s), std::vector<double>(n - 1, -s)};
}

// Wilkinson's W_n^+: d_i = |i - (n - 1) / 2|, e = 1: pairs of eigenvalues equal to many digits.
Tridiagonal wilkinson(int n) {
  Tridiagonal t{std::vector<double>(n), std::vector<double>(n - 1, 1.0)};
  for (int i = 0; i < n; ++i) t.d[i] = std::abs(i - (n - 1) / 2.0);
  return t;
}

}  // namespace

TEST_CASE("tridiagonal: QL and divide and conquer on spectra known in closed form", "[linalg]") {
  for (int n : {1, 2, 3, 40, 74, 75, 200}) {
    for (double scale : {1.0, 1e-150, 1e150}) {
      CAPTURE(n, scale);
      const Tridiagonal t = toeplitz(n, scale);
      std::vector<double> exact(n);
      for (int k = 1; k <= n; ++k)
        exact[k - 1] = scale * (2.0 - 2.0 * std::cos(k * M_PI / (n + 1)));
      for (const Result& r : {solve_ql(t), solve_dc(t)}) {
        REQUIRE(r.status == pl::ok);
        for (int k = 0; k < n; ++k) CHECK(std::abs(r.w[k] - exact[k]) <= 1e-13 * 4 * scale);
        CHECK(r.residual <= 1e-13);
        CHECK(r.orthogonality <= 1e-12);
      }
    }
  }
}

TEST_CASE("tridiagonal: clustered, deflating and decoupled spectra", "[linalg]") {
  std::vector<Tridiagonal> cases;
  cases.push_back(wilkinson(21));
  cases.push_back(wilkinson(101));
  // Decoupled blocks (e = 0 at every 10th coupling) with repeated diagonals: deflation
  // everywhere in the merges.
  Tridiagonal blocks{std::vector<double>(90, 1.0), std::vector<double>(89, 0.5)};
  for (int i = 9; i < 89; i += 10) blocks.e[i] = 0.0;
  cases.push_back(blocks);
  // Graded: entries over 20 orders of magnitude.
  Tridiagonal graded{std::vector<double>(60), std::vector<double>(59)};
  for (int i = 0; i < 60; ++i) graded.d[i] = std::pow(10.0, -i / 3.0);
  for (int i = 0; i < 59; ++i) graded.e[i] = 0.5 * std::pow(10.0, -(i + 0.5) / 3.0);
  cases.push_back(graded);
  // Diagonal: the eigenvectors are the identity's columns.
  cases.push_back({{3.0, -1.0, 2.0, 2.0, 0.0}, {0.0, 0.0, 0.0, 0.0}});
  for (std::size_t c = 0; c < cases.size(); ++c) {
    CAPTURE(c);
    const Result ql = solve_ql(cases[c]), dc = solve_dc(cases[c]);
    REQUIRE(ql.status == pl::ok);
    REQUIRE(dc.status == pl::ok);
    CHECK(ql.residual <= 1e-13);
    CHECK(dc.residual <= 1e-13);
    CHECK(ql.orthogonality <= 1e-12);
    CHECK(dc.orthogonality <= 1e-12);
    for (int k = 0; k < cases[c].n(); ++k) {
      CHECK(std::abs(ql.w[k] - dc.w[k]) <= 1e-13 * std::max(1.0, std::abs(ql.w.back())));
      if (k > 0) CHECK(dc.w[k - 1] <= dc.w[k]);
    }
  }
}

TEST_CASE("tridiagonal: two QL problems stepped in turn give each one's results alone",
          "[linalg]") {
  // Divide and conquer solves its leaves in pairs; each must come out bit for bit as QL on it
  // alone, whatever the other does (shorter, empty, converging later or not at all).
  struct Problem {
    Tridiagonal t;
    int maxit;
  };
  const std::vector<std::pair<Problem, Problem>> pairs = {
      {{toeplitz(37, 1.0), 30 * 37}, {wilkinson(37), 30 * 37}},
      {{wilkinson(21), 30 * 21}, {toeplitz(38, 1e-150), 30 * 38}},
      {{toeplitz(5, 2.0), 30 * 5}, {{{}, {}}, 0}},
      {{wilkinson(40), 2}, {toeplitz(40, 1.0), 30 * 40}},  // the first stops at its cap
  };
  struct Run {
    std::vector<double> d, e, Z;
    explicit Run(const Tridiagonal& t) : d(t.d), e(t.e), Z(t.d.size() * t.d.size(), 0.0) {
      e.push_back(0.0);
      for (std::size_t i = 0; i < d.size(); ++i) Z[i * d.size() + i] = 1.0;
    }
    pd::MatRef<true> z() { return {Z.data(), 1, static_cast<long>(d.size())}; }
    int n() const { return static_cast<int>(d.size()); }
  };
  for (std::size_t c = 0; c < pairs.size(); ++c) {
    CAPTURE(c);
    const Problem& a = pairs[c].first;
    const Problem& b = pairs[c].second;
    Run alone_a(a.t), alone_b(b.t), pair_a(a.t), pair_b(b.t);
    const int sa = pd::ql_sequential<true>(alone_a.z(), alone_a.n(), alone_a.d.data(),
                                           alone_a.e.data(), a.maxit);
    const int sb = pd::ql_sequential<true>(alone_b.z(), alone_b.n(), alone_b.d.data(),
                                           alone_b.e.data(), b.maxit);
    pd::QlSequential<true> qa(pair_a.z(), pair_a.n(), pair_a.d.data(), pair_a.e.data(), a.maxit);
    pd::QlSequential<true> qb(pair_b.z(), pair_b.n(), pair_b.d.data(), pair_b.e.data(), b.maxit);
    const int s = pd::ql_sequential_pair(qa, qb);
    CHECK(qa.status == sa);
    CHECK(qb.status == sb);
    CHECK(s == (sa == pl::ok && sb == pl::ok ? pl::ok : pl::not_converged));
    CHECK(pair_a.d == alone_a.d);
    CHECK(pair_a.Z == alone_a.Z);
    CHECK(pair_b.d == alone_b.d);
    CHECK(pair_b.Z == alone_b.Z);
  }
  // The capped case does not converge, so the pair's status covers a failing member.
  const Problem& capped = pairs.back().first;
  Run r(capped.t);
  CHECK(pd::ql_sequential<true>(r.z(), r.n(), r.d.data(), r.e.data(), capped.maxit) ==
        pl::not_converged);
}
