// A downstream program: uses perfex's headers and runs one of its kernels.
#include <perfex/perfex.hpp>

#include <cstdio>

int main(int argc, char* argv[]) {
  Kokkos::initialize(argc, argv);
  int status = 0;
  {
    double total = 0;
    Kokkos::parallel_reduce(
        "consumer::erf", Kokkos::RangePolicy<>(0, 100),
        KOKKOS_LAMBDA(int i, double& acc) { acc += perfex::math::erf(0.01 * i); }, total);
    std::printf("perfex %s consumer: sum erf = %.6f\n", PERFEX_VERSION_STRING, total);
    status = total > 0 ? 0 : 1;
  }
  Kokkos::finalize();
  return status;
}
