// The batched front-ends' argument checks (tag [linalg]): which views they accept, as the
// compile-time trait batched_view_compatible (the front-ends static_assert the same), and runs
// on strided subviews.
#include "perfex_test.hpp"

#include <perfex/linalg/reference/batched.hpp>

#include <vector>

#include "linalg_test_util.hpp"

using namespace linalg_test;
namespace pl = perfex::linalg;

namespace {

using Host = Kokkos::DefaultHostExecutionSpace;
using Matrices = Kokkos::View<double***, Kokkos::LayoutLeft, Kokkos::HostSpace>;
using Strided = decltype(Kokkos::subview(Matrices(), Kokkos::ALL(), Kokkos::pair<int, int>(0, 1),
                                         Kokkos::ALL()));

static_assert(std::is_same<Strided::array_layout, Kokkos::LayoutStride>::value);
static_assert(pl::batched_view_compatible<Host, Matrices, 3>::value);
static_assert(pl::batched_view_compatible<Host, Strided, 3>::value, "subviews are accepted");
static_assert(pl::batched_view_compatible<
              Host, Kokkos::View<double***, Kokkos::LayoutRight, Kokkos::HostSpace>, 3>::value);
static_assert(
    pl::batched_view_compatible<Host, Kokkos::View<int*, Kokkos::HostSpace>, 1, int>::value);
static_assert(!pl::batched_view_compatible<Host, Matrices, 2>::value, "wrong rank");
static_assert(
    !pl::batched_view_compatible<Host, Kokkos::View<float***, Kokkos::HostSpace>, 3>::value,
    "not double");
static_assert(
    !pl::batched_view_compatible<Host, Kokkos::View<const double***, Kokkos::HostSpace>, 3>::value,
    "const data");
static_assert(!pl::batched_view_compatible<Host, std::vector<double>, 1>::value, "not a view");
#ifdef KOKKOS_ENABLE_CUDA
static_assert(
    !pl::batched_view_compatible<Host, Kokkos::View<double***, Kokkos::CudaSpace>, 3>::value,
    "device memory from a host execution space");
static_assert(!pl::batched_view_compatible<Kokkos::Cuda, Matrices, 3>::value,
              "host memory from a device execution space");
#endif

}  // namespace

PERFEX_BACKEND_TEST_CASE("linalg: batched front-ends on strided subviews", "[linalg]") {
  PERFEX_ONLY_SELECTED_BACKEND();
  using Exec = TestType;
  // The leading m x m block of each n x n matrix (a LayoutStride subview): factor, solve and
  // eigenpairs equal those of packed m x m copies.
  const int n = 60, m = 44, nb = 3;
  HostMat H("H", n, n, nb), P("P", m, m, nb);
  for (int b = 0; b < nb; ++b) {
    const Dense A = random_spd(n, 1e3, 80u + b);
    store(H, b, A);
    for (int j = 0; j < m; ++j)
      for (int i = 0; i < m; ++i) P(i, j, b) = A(i, j);
  }
  const auto lead = Kokkos::pair<int, int>(0, m);
  auto Hs = to_device<Exec>(H), Ps = to_device<Exec>(P), He = to_device<Exec>(H),
       Pe = to_device<Exec>(P);
  auto As = Kokkos::subview(Hs, lead, lead, Kokkos::ALL());
  auto Es = Kokkos::subview(He, lead, lead, Kokkos::ALL());
  static_assert(std::is_same<typename decltype(As)::array_layout, Kokkos::LayoutStride>::value);
  DevStatus<Exec> s1("s1", nb), s2("s2", nb), s3("s3", nb), s4("s4", nb);
  DevVecs<Exec> x1("x1", m, nb), x2("x2", m, nb), w1("w1", m, nb), w2("w2", m, nb);
  Kokkos::deep_copy(x1, 1.0);
  Kokkos::deep_copy(x2, 1.0);
  pl::batched_cholesky(Exec(), As, s1);
  pl::batched_cholesky(Exec(), Ps, s2);
  pl::batched_cholesky_solve(Exec(), As, x1);
  pl::batched_cholesky_solve(Exec(), Ps, x2);
  pl::batched_syev(Exec(), Es, w1, s3);
  pl::batched_syev(Exec(), Pe, w2, s4);
  Exec().fence();
  auto Lh = to_host(Hs), Ph = to_host(Ps), Eh = to_host(He), Qh = to_host(Pe);
  auto x1h = to_host(x1), x2h = to_host(x2), w1h = to_host(w1), w2h = to_host(w2);
  for (int b = 0; b < nb; ++b) {
    REQUIRE(to_host(s1)(b) == pl::ok);
    REQUIRE(to_host(s3)(b) == pl::ok);
    for (int j = 0; j < m; ++j) {
      CHECK(x1h(j, b) == x2h(j, b));
      CHECK(w1h(j, b) == w2h(j, b));
      for (int i = 0; i < m; ++i) {
        if (i >= j) CHECK(Lh(i, j, b) == Ph(i, j, b));
        CHECK(Eh(i, j, b) == Qh(i, j, b));
      }
    }
  }
}

TEST_CASE("linalg: every batched front end refuses views of the wrong extents", "[linalg]") {
  using Catch::Contains;
  const Host exec;
  const int n = 6, batch = 3, kd = 2;
  Matrices A("A", n, n, batch), notsquare("A", n, n + 1, batch), band("band", kd + 1, n, batch);
  Kokkos::View<double**, Kokkos::LayoutLeft, Kokkos::HostSpace> w("w", n, batch), x("x", n, batch),
      short_x("x", n - 1, batch), few("x", n, batch - 1);
  Kokkos::View<int*, Kokkos::HostSpace> status("status", batch), short_status("status", batch - 1);
  Kokkos::View<double****, Kokkos::LayoutLeft, Kokkos::HostSpace> blocks("C", 2, 2, 3, batch),
      blocks_few("C", 2, 2, 3, batch - 1);
  CHECK_THROWS_WITH(pl::batched_cholesky(exec, notsquare, status),
                    Contains("batched_cholesky: A.extent(1) is 7, expected 6"));
  CHECK_THROWS_WITH(pl::batched_cholesky(exec, A, short_status),
                    Contains("status.extent(0) is 2, expected 3"));
  CHECK_THROWS_WITH(pl::batched_cholesky_solve(exec, A, short_x), Contains("b.extent(0) is 5"));
  CHECK_THROWS_WITH(pl::batched_cholesky_solve(exec, A, few), Contains("b.extent(1) is 2"));
  CHECK_THROWS_WITH(pl::batched_syev(exec, A, short_x, status),
                    Contains("batched_syev: w.extent(0)"));
  CHECK_THROWS_WITH(pl::batched_syev(exec, A, few, status), Contains("w.extent(1)"));
  CHECK_THROWS_WITH(pl::batched_syev(exec, A, w, short_status), Contains("status.extent(0)"));
  CHECK_THROWS_WITH(pl::batched_cholesky_inverse_diag_blocks(exec, A, 2, blocks_few),
                    Contains("C.extent(3) is 2, expected 3"));
  CHECK_THROWS_WITH(pl::batched_band_cholesky(exec, band, short_status),
                    Contains("batched_band_cholesky: status.extent(0)"));
  CHECK_THROWS_WITH(pl::batched_band_cholesky_solve(exec, band, short_x), Contains("x.extent(0)"));
  CHECK_THROWS_WITH(pl::batched_band_cholesky_solve(exec, band, few), Contains("x.extent(1)"));
  Matrices tail("tail", kd + 1, n, batch);
  CHECK_THROWS_WITH(pl::batched_band_cholesky_twisted(exec, band, tail, short_status),
                    Contains("batched_band_cholesky_twisted: status.extent(0)"));
  CHECK_THROWS_WITH(pl::batched_band_cholesky_inverse_strided_blocks(exec, band, 3, blocks_few),
                    Contains("C.extent(3) is 2, expected 3"));
  // The right extents pass.
  CHECK_NOTHROW(pl::batched_band_cholesky_solve(exec, band, x));
}
