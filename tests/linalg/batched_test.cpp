// Tests of the batched front ends and team kernels together (tag [linalg]): every team shape
// gives the one-thread results, the LAPACK backend agrees with the portable one, and the CPU
// backends agree bit for bit.
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
