#pragma once
// The execution spaces of this build by name, and the Kokkos runtime as perfex's programs and
// bindings start it. The one place that maps "cuda", "openmp", "serial" to Kokkos types and
// that knows how many host threads Kokkos can hold.
#include <perfex/detail/kokkos_compat.hpp>
#include <perfex/error.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#ifdef KOKKOS_ENABLE_OPENMP
#include <omp.h>
#endif

namespace perfex {

namespace runtime_detail {
#ifdef KOKKOS_ENABLE_CUDA
using Cuda = std::tuple<Kokkos::Cuda>;
#else
using Cuda = std::tuple<>;
#endif
#ifdef KOKKOS_ENABLE_OPENMP
using OpenMP = std::tuple<Kokkos::OpenMP>;
#else
using OpenMP = std::tuple<>;
#endif
#ifdef KOKKOS_ENABLE_SERIAL
using Serial = std::tuple<Kokkos::Serial>;
#else
using Serial = std::tuple<>;
#endif
template <class T>
struct Type {
  using type = T;
};
template <class F, class... E>
void for_each_type(F& f, std::tuple<E...>*) {
  (f(Type<E>()), ...);
}
}  // namespace runtime_detail

// The enabled execution spaces, preferred first (a GPU, then host threads, then one thread).
using ExecSpaces = decltype(std::tuple_cat(std::declval<runtime_detail::Cuda>(),
                                           std::declval<runtime_detail::OpenMP>(),
                                           std::declval<runtime_detail::Serial>()));

// "cuda", "openmp" or "serial".
template <class ExecSpace>
std::string backend_name() {
  std::string name = ExecSpace::name();
  for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return name;
}

// Calls f(exec) with a default instance of every enabled execution space, preferred first
// (after Kokkos::initialize: a CUDA instance needs the runtime).
template <class F>
void for_each_backend(F&& f) {
  auto make = [&](auto type) { f(typename decltype(type)::type()); };
  runtime_detail::for_each_type(make, static_cast<ExecSpaces*>(nullptr));
}

// Names of the enabled execution spaces, preferred first.
inline std::vector<std::string> backend_names() {
  std::vector<std::string> names;
  auto add = [&](auto type) { names.push_back(backend_name<typename decltype(type)::type>()); };
  runtime_detail::for_each_type(add, static_cast<ExecSpaces*>(nullptr));
  return names;
}

inline std::string join_names(const std::vector<std::string>& names, const char* sep = ", ") {
  std::string s;
  for (const auto& n : names) s += (s.empty() ? "" : sep) + n;
  return s;
}

// The preferred execution space; gpu = false skips CUDA.
inline std::string default_backend(bool gpu = true) {
  for (const std::string& name : backend_names())
    if (gpu || name != "cuda") return name;
  throw Error("perfex: this build has no host execution space");
}

// Throws RequestError naming `what` (e.g. "option --backend") unless `name` is enabled.
inline void check_backend(const std::string& name, const std::string& what = "backend") {
  for (const std::string& b : backend_names())
    if (b == name) return;
  throw RequestError(what + ": '" + name + "' is not one of this build's execution spaces (" +
                     join_names(backend_names()) + ")");
}

// Calls f(exec) with a default instance of the named execution space and returns its result.
template <class F>
decltype(auto) with_backend(const std::string& name, F&& f) {
#ifdef KOKKOS_ENABLE_CUDA
  if (name == "cuda") return f(Kokkos::Cuda());
#endif
#ifdef KOKKOS_ENABLE_OPENMP
  if (name == "openmp") return f(Kokkos::OpenMP());
#endif
#ifdef KOKKOS_ENABLE_SERIAL
  if (name == "serial") return f(Kokkos::Serial());
#endif
  check_backend(name);
  throw Error("perfex: backend '" + name + "' has no execution space");  // not reached
}

// Kokkos' OpenMP backend keeps its threads in a table of 512 (Kokkos 3.4 to 4.x): more crash
// its start-up.
constexpr int kMaxHostThreads = 512;

struct HostThreads {
  int threads = 0;      // to start Kokkos with; 0 = its default
  std::string warning;  // "" or why the default was capped
  int device = -1;      // GPU to start Kokkos with (CUDA builds); -1 = Kokkos' default
};

// ---- processes sharing a node's GPUs (MPI ranks under MPS) ------------------------------------

// The GPU of the process that is rank `local_rank` of `local_size` on its node with `ndevices`
// GPUs: `requested` when >= 0 (refused beyond the GPUs), else local_rank modulo ndevices, as
// gpu_specter's decompose_comm deals them; -1 without GPUs.
inline int device_for_rank(int local_rank, int ndevices, int requested = -1) {
  if (ndevices <= 0) return -1;
  if (requested >= ndevices)
    throw RequestError("device: GPU " + std::to_string(requested) +
                       " requested, but the node has " + std::to_string(ndevices));
  if (requested >= 0) return requested;
  return local_rank % ndevices;
}

// How many of a node's `local_size` processes use GPU `device` when they are dealt as
// device_for_rank deals them (at least 1).
inline int ranks_sharing_device(int device, int local_size, int ndevices) {
  if (ndevices <= 0 || device < 0 || local_size <= 0) return 1;
  return std::max(1, (local_size - device + ndevices - 1) / ndevices);
}

namespace runtime_detail {
inline std::atomic<int> device_sharers{1};
}  // namespace runtime_detail

// The processes this one shares its GPU with, itself included: the default memory budget of a
// GPU extraction is divided among them (set once at start-up, e.g. by the Python package).
inline void set_device_sharers(int n) { runtime_detail::device_sharers = std::max(1, n); }
inline int device_sharers() { return runtime_detail::device_sharers; }

// The default memory budget on a GPU with `free_bytes` free: half of it (room for another
// process asking at the same moment), divided among the processes sharing the GPU.
inline std::int64_t shared_device_budget(std::int64_t free_bytes, int sharers) {
  return free_bytes / 2 / std::max(1, sharers);
}

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
  initialize_kokkos(h.threads, h.device);
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
