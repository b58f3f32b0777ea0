#include "perfex_bench.hpp"

#include <perfex/config.hpp>
#include <sys/resource.h>

#include <sstream>

namespace perfex_bench {
double peak_rss_bytes() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) * 1024.0;
}
}  // namespace perfex_bench

int main(int argc, char* argv[]) {
  Kokkos::initialize(argc, argv);
  {
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
    std::ostringstream config;
    Kokkos::print_configuration(config);
    benchmark::AddCustomContext("perfex_version", PERFEX_VERSION_STRING);
    benchmark::AddCustomContext("kokkos_version", std::to_string(KOKKOS_VERSION));
    benchmark::AddCustomContext("default_execution_space", Kokkos::DefaultExecutionSpace::name());
    const char* omp = std::getenv("OMP_NUM_THREADS");
    benchmark::AddCustomContext("OMP_NUM_THREADS", omp ? omp : "unset");
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
  }
  Kokkos::finalize();
  return 0;
}
