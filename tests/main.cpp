#define CATCH_CONFIG_RUNNER
#include "perfex_test.hpp"

#include <perfex/runtime.hpp>

#include <iostream>
#include <optional>

#include <sys/stat.h>

namespace perfex_test {

std::string& selected_backend() {
  static std::string backend = "all";
  return backend;
}

std::string shared_data_dir(const std::string& what) {
  const char* env = std::getenv("PERFEX_SHARED_DATA_DIR");
  const std::string dir = env ? env : PERFEX_SHARED_DATA_DIR;
  struct stat st {};
  if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    WARN("SKIPPED " << what << ": reference data folder " << dir
                    << " is absent (set PERFEX_SHARED_DATA_DIR)");
    return "";
  }
  return dir;
}

}  // namespace perfex_test

int main(int argc, char* argv[]) {
  // Kokkos with a checked thread count (--kokkos-threads=N, the environment); Kokkos strips its
  // other --kokkos-* options before Catch reads the rest.
  std::optional<perfex::Runtime> runtime;
  try {
    runtime.emplace(argc, argv);
  } catch (const perfex::RequestError& e) {
    std::cerr << "perfex_tests: error: " << e.what() << "\n";
    return 2;
  }
  int status = 0;
  {
    Catch::Session session;
    using namespace Catch::clara;
    auto cli =
        session.cli() | Opt(perfex_test::selected_backend(), "serial|openmp|cuda|all")["--backend"](
                            "execution space(s) to test; built: " PERFEX_TEST_BACKENDS);
    session.cli(cli);
    status = session.applyCommandLine(argc, argv);
    if (status == 0) status = session.run();
  }
  return status;
}
