#include "perfex_bench.hpp"

#include <perfex/config.hpp>
#include <perfex/psf/synthetic.hpp>
#ifdef PERFEX_BENCH_HAVE_IO
#include <perfex/io/psf_files.hpp>
#endif
#include <sys/resource.h>
#include <sys/stat.h>

#include <fstream>
#include <iostream>
#include <memory>
#include <optional>

namespace perfex_bench {

bool reset_peak_rss() {
  std::ofstream clear("/proc/self/clear_refs");
  clear << "5";
  clear.flush();
  return static_cast<bool>(clear);
}

double peak_rss_bytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.compare(0, 6, "VmHWM:") == 0)
      return std::stod(line.substr(6)) * 1024.0;  // "VmHWM:  1234 kB"
  rusage usage{};                                 // no procfs: the peak of the whole run
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) * 1024.0;
}

const perfex::psf::GaussHermitePsfData& bench_psf() {
  static std::unique_ptr<perfex::psf::GaussHermitePsfData> psf;
  if (psf) return *psf;
#ifdef PERFEX_BENCH_HAVE_IO
  // The reference data folder, or PERFEX_SHARED_DATA_DIR's (as the tests; e.g. on a GPU machine).
  const char* env = std::getenv("PERFEX_SHARED_DATA_DIR");
  const std::string path =
      std::string(env ? env : PERFEX_SHARED_DATA_DIR) + "/psf-r0-00051060.fits";
  struct stat st {};
  if (stat(path.c_str(), &st) == 0) {
    psf = std::make_unique<perfex::psf::GaussHermitePsfData>(
        perfex::io::read_gauss_hermite_psf(path));
    benchmark::AddCustomContext("psf", path);
    return *psf;
  }
#endif
  psf = std::make_unique<perfex::psf::GaussHermitePsfData>(perfex::psf::make_synthetic_psf());
  benchmark::AddCustomContext("psf", "synthetic DESI-like (../shared/data absent)");
  return *psf;
}

}  // namespace perfex_bench

int main(int argc, char* argv[]) {
  std::optional<perfex::Runtime> runtime;  // a checked thread count, before Kokkos starts
  try {
    runtime.emplace(argc, argv);
  } catch (const perfex::RequestError& e) {
    std::cerr << "perfex_bench: error: " << e.what() << "\n";
    return 2;
  }
  {
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
    benchmark::AddCustomContext("perfex_version", PERFEX_VERSION_STRING);
    benchmark::AddCustomContext("kokkos_version", std::to_string(KOKKOS_VERSION));
    benchmark::AddCustomContext("default_execution_space", Kokkos::DefaultExecutionSpace::name());
    const char* omp = std::getenv("OMP_NUM_THREADS");
    benchmark::AddCustomContext("OMP_NUM_THREADS", omp ? omp : "unset");
    benchmark::AddCustomContext("lapack", PERFEX_HAVE_LAPACK ? "yes" : "no");
    benchmark::AddCustomContext("simd", PERFEX_BENCH_SIMD);
    benchmark::AddCustomContext("peak_rss",
                                perfex_bench::reset_peak_rss() ? "per benchmark" : "whole process");
    perfex_bench::bench_psf();  // loaded before the run so the context names it
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
  }
  return 0;
}
