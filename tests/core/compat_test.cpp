#include "perfex_test.hpp"

#include <perfex/config.hpp>
#include <perfex/detail/kokkos_compat.hpp>
#include <perfex/detail/team_shape.hpp>
#include <perfex/extract/options.hpp>

#include <type_traits>

namespace {

// erf through the shim, evaluated on the device, summed: checks the math namespace and
// that the backend really runs kernels.
template <class ExecSpace>
double sum_of_erf(const ExecSpace& exec, int n) {
  double total = 0;
  Kokkos::parallel_reduce(
      "perfex::test::sum_of_erf", Kokkos::RangePolicy<ExecSpace>(exec, 0, n),
      KOKKOS_LAMBDA(int i, double& acc) { acc += perfex::math::erf(0.001 * i); }, total);
  exec.fence();
  return total;
}

}  // namespace

PERFEX_BACKEND_TEST_CASE("kokkos shim: math functions on the device", "[core]") {
  PERFEX_ONLY_SELECTED_BACKEND();
  const int n = 2001;
  double expected = 0;
  for (int i = 0; i < n; ++i) expected += std::erf(0.001 * i);
  CHECK(sum_of_erf(TestType(), n) == Approx(expected).epsilon(1e-14));
  CHECK(perfex::math::max(2, 3) == 3);
  CHECK(perfex::math::min(2.5, -1.0) == -1.0);
  CHECK(perfex::math::abs(-4.5) == 4.5);
  CHECK(perfex::concurrency(TestType()) >= 1);
}

PERFEX_BACKEND_TEST_CASE("kokkos shim: host_mirror_t is the type create_mirror_view returns",
                         "[core]") {
  PERFEX_ONLY_SELECTED_BACKEND();
  using View = Kokkos::View<int**, typename TestType::memory_space>;
  const View v("v", 2, 3);
  perfex::host_mirror_t<View> h = Kokkos::create_mirror_view(v);
  STATIC_REQUIRE(
      std::is_same<decltype(Kokkos::create_mirror_view(v)), perfex::host_mirror_t<View>>::value);
  CHECK(h.extent(1) == 3);
}

TEST_CASE("kokkos shim: mul_add fuses exactly where the target has FMA units", "[core]") {
  // (1 + 2^-30)(1 - 2^-30) = 1 - 2^-60: one fused operation keeps the 2^-60, a product
  // rounded first loses it.
  const double a = 1 + 0x1p-30, b = 1 - 0x1p-30;
#if defined(__FMA__)
  CHECK(perfex::math::mul_add(a, b, -1.0) == -0x1p-60);
#else
  CHECK(perfex::math::mul_add(a, b, -1.0) == 0.0);
#endif
  CHECK(perfex::math::mul_add(2.0, 3.0, 4.0) == 10.0);
}

TEST_CASE("team shapes: a vector length must be a power of two", "[core]") {
  // Kokkos 5.1 aborts on any other; perfex refuses it first, naming it.
  using Host = Kokkos::DefaultHostExecutionSpace;
  CHECK(perfex::detail::is_vector_length(1));
  CHECK(perfex::detail::is_vector_length(32));
  CHECK_FALSE(perfex::detail::is_vector_length(3));
  CHECK_FALSE(perfex::detail::is_vector_length(0));
  CHECK_NOTHROW(perfex::detail::team_policy(Host(), 1, {1, 4}));
  CHECK_THROWS_WITH(perfex::detail::team_policy(Host(), 1, {1, 3}),
                    Catch::Contains("vector length 3 is not a power of two"));
  perfex::extract::ExtractionOptions o;
  o.vector_length = 6;
  CHECK_THROWS_WITH(o.validate(), Catch::Contains("vector_length must be 0"));
  o.vector_length = 8;
  CHECK_NOTHROW(o.validate());
}

TEST_CASE("version header is generated", "[core]") {
  CHECK(std::string(PERFEX_VERSION_STRING) == "0.1.0");
  CHECK(PERFEX_VERSION_MAJOR == 0);
}
