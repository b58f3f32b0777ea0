#pragma once
// The Kokkos runtime as perfex's programs and bindings start it: how many host threads Kokkos
// can hold and is started with, and Runtime (Kokkos for a program's lifetime). The execution
// spaces by name are in backends.hpp (included), memory and GPUs in memory.hpp.
#include <perfex/backends.hpp>
#include <perfex/detail/kokkos_compat.hpp>
#include <perfex/error.hpp>

#include <Kokkos_Core.hpp>

#include <cstdlib>
#include <string>

#ifdef KOKKOS_ENABLE_OPENMP
#include <omp.h>
#endif

namespace perfex {

// Kokkos' OpenMP backend keeps its threads in a table of 512 (Kokkos 3.4 to 4.x): more crash
// its start-up.
constexpr int kMaxHostThreads = 512;

struct HostThreads {
  int threads = 0;         // to start Kokkos with; 0 = its default
  std::string warning;     // "" or why the default was capped
  int device = -1;         // GPU to start Kokkos with (CUDA builds); -1 = Kokkos' default
  std::string tools_libs;  // Kokkos Tools library to load ("" = the environment's, if any)
};

// The host thread count to start Kokkos with: `requested` (> 0), refused (RequestError naming
// `what`) above kMaxHostThreads; else OpenMP's default (OMP_NUM_THREADS, else the cores)
// capped at kMaxHostThreads with a warning when it exceeds it; 0 = leave the default.
inline HostThreads host_threads(int requested, const std::string& what = "threads") {
  HostThreads h;
  if (requested > kMaxHostThreads)
    throw RequestError(what + ": at most " + std::to_string(kMaxHostThreads) +
                       " (Kokkos' OpenMP thread pool), got " + std::to_string(requested));
  if (requested < 0) throw RequestError(what + ": must be >= 1, got " + std::to_string(requested));
  if (requested > 0) {
    h.threads = requested;
    return h;
  }
#ifdef KOKKOS_ENABLE_OPENMP
  const int omp = omp_get_max_threads();
  if (omp > kMaxHostThreads) {
    const char* env = std::getenv("OMP_NUM_THREADS");
    h.warning = (env ? "OMP_NUM_THREADS=" + std::string(env) : std::to_string(omp) + " cores") +
                " exceeds the " + std::to_string(kMaxHostThreads) +
                " threads Kokkos' OpenMP backend can hold: using " +
                std::to_string(kMaxHostThreads);
    h.threads = kMaxHostThreads;
  }
#endif
  return h;
}

// Starts Kokkos with the thread count host_threads() chose. Unset OMP_PROC_BIND means "false"
// to OpenMP; saying so silences Kokkos' start-up warning.
inline void initialize_runtime(const HostThreads& h) {
  setenv("OMP_PROC_BIND", "false", /*overwrite=*/0);
  initialize_kokkos(h.threads, h.device, h.tools_libs);
}

// Kokkos for a program's lifetime (started unless it runs already; finalized by the owner).
class Runtime {
 public:
  explicit Runtime(const HostThreads& h) {
    if (Kokkos::is_initialized()) return;
    initialize_runtime(h);
    owner_ = true;
  }
  ~Runtime() {
    if (owner_) Kokkos::finalize();
  }
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

 private:
  bool owner_ = false;
};

}  // namespace perfex
