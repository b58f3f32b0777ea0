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
#include <iostream>
#include <limits>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#ifdef KOKKOS_ENABLE_OPENMP
#include <omp.h>
#endif
#ifdef __linux__
#include <sched.h>
#endif
#include <unistd.h>

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
  int threads = 1;      // to start Kokkos with: always an explicit count
  std::string warning;  // "" or why the count was capped
  int device = -1;      // GPU to start Kokkos with (CUDA builds); -1 = Kokkos' default
};

// Everything that decides how many host threads Kokkos starts with, as one process has it.
// resolve_host_threads() is a pure function of it; ThreadSettings::of_process() reads the
// process's environment, OpenMP's thread limit and its CPUs.
struct ThreadSettings {
  int requested = 0;                     // a program's own option (0: not given)
  std::string what = "threads";          // that option's name in messages ("option --threads")
  std::vector<std::string> kokkos_args;  // --kokkos-threads=N / --kokkos-num-threads=N given
  std::optional<std::string> kokkos_num_threads;  // KOKKOS_NUM_THREADS
  std::optional<std::string> omp_num_threads;     // OMP_NUM_THREADS
  std::optional<std::string> gomp_cpu_affinity;   // GOMP_CPU_AFFINITY (bound when OMP_PLACES
  bool affinity_binds = true;  // is unset and OMP_PROC_BIND is not false: libgomp's rule)
  // Kokkos' other start-up variables it reads as integers (name, value).
  std::vector<std::pair<std::string, std::string>> kokkos_integers;
  int thread_limit = std::numeric_limits<int>::max();  // OMP_THREAD_LIMIT as OpenMP reads it
  int default_threads = 1;  // OpenMP's default team: the CPUs the process could use at start
  int machine_cpus = 1;     // CPUs the machine has (0 .. machine_cpus - 1)

  // The settings of this process, with a program's option `requested` named `what`.
  static ThreadSettings of_process(int requested = 0, const std::string& what = "threads",
                                   std::vector<std::string> kokkos_args = {});
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

namespace runtime_detail {

inline std::string quoted(const std::string& name, const std::string& value) {
  return name + "='" + value + "'";
}

// A decimal integer filling the whole of `text` (no sign, no spaces); false otherwise. Values
// beyond int are INT_MAX.
inline bool parse_count(const std::string& text, int& value) {
  if (text.empty() || text.size() > 64) return false;
  long long v = 0;
  for (const char c : text) {
    if (c < '0' || c > '9') return false;
    v = std::min<long long>(v * 10 + (c - '0'), std::numeric_limits<int>::max());
  }
  value = static_cast<int>(v);
  return true;
}

inline std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

// The CPUs of a GOMP_CPU_AFFINITY list in the order libgomp binds threads to them ("0 3 1-2
// 4-15:2", separated by spaces or commas); false where libgomp would reject the text (it then
// ignores the variable).
inline bool affinity_cpus(const std::string& text, std::vector<int>& cpus) {
  std::string item;
  std::vector<std::string> items;
  for (const char c : text + " ") {
    if (c == ' ' || c == ',' || c == '\t') {
      if (!item.empty()) items.push_back(item);
      item.clear();
    } else {
      item += c;
    }
  }
  for (const std::string& it : items) {
    const auto dash = it.find('-'), colon = it.find(':');
    int first = 0, last = 0, stride = 1;
    if (!parse_count(it.substr(0, std::min(dash, colon)), first)) return false;
    last = first;
    if (dash != std::string::npos &&
        !parse_count(it.substr(dash + 1, colon == std::string::npos ? colon : colon - dash - 1),
                     last))
      return false;
    if (colon != std::string::npos &&
        (dash == std::string::npos || !parse_count(it.substr(colon + 1), stride) || stride < 1))
      return false;
    if (last < first || cpus.size() > 1u << 20) return false;
    for (long long c = first; c <= last; c += stride) cpus.push_back(static_cast<int>(c));
  }
  return !cpus.empty();
}

}  // namespace runtime_detail

// `n` unless it is not a host thread count Kokkos can start (RequestError naming `what`).
inline int check_thread_count(long long n, const std::string& what) {
  if (n > kMaxHostThreads)
    throw RequestError(what + ": at most " + std::to_string(kMaxHostThreads) +
                       " (Kokkos' OpenMP thread pool), got " + std::to_string(n));
  if (n < 1) throw RequestError(what + ": must be >= 1, got " + std::to_string(n));
  return static_cast<int>(n);
}

// The host thread count to start Kokkos with, from every way one reaches it, checked before
// Kokkos starts (a RequestError names the option or variable at fault):
//  1. explicit counts: the program's option, --kokkos-threads=N / --kokkos-num-threads=N,
//     KOKKOS_NUM_THREADS. Each must be in [1, kMaxHostThreads], and they must agree (Kokkos
//     refuses a KOKKOS_NUM_THREADS that differs from its count);
//  2. else OMP_NUM_THREADS (OpenMP's syntax: N or a list N,M,... whose first entry is the
//     team's size; empty = unset), capped at kMaxHostThreads with a warning;
//  3. else the CPUs of the process's affinity mask (OpenMP's default), capped alike.
// The count must fit OMP_THREAD_LIMIT (an explicit count is refused, a default one capped),
// the first threads' CPUs of GOMP_CPU_AFFINITY must exist (libgomp cannot start a thread
// bound to a missing CPU), and Kokkos' other integer variables must be integers.
inline HostThreads resolve_host_threads(const ThreadSettings& s) {
  using runtime_detail::quoted;
  HostThreads h;
  for (const auto& [name, value] : s.kokkos_integers) {
    const std::string v = value.size() > 1 && value[0] == '-' ? value.substr(1) : value;
    int n = 0;
    if (!runtime_detail::parse_count(v, n))
      throw RequestError(quoted(name, value) + ": Kokkos reads this variable as an integer");
  }

  struct Count {
    std::string what;
    int n;
  };
  std::vector<Count> counts;
  if (s.requested != 0) counts.push_back({s.what, check_thread_count(s.requested, s.what)});
  for (const std::string& arg : s.kokkos_args) {
    const auto eq = arg.find('=');
    const std::string name = arg.substr(0, eq);
    int n = 0;
    if (eq == std::string::npos || !runtime_detail::parse_count(arg.substr(eq + 1), n))
      throw RequestError("option " + name + ": expected " + name + "=N, N threads in [1, " +
                         std::to_string(kMaxHostThreads) + "], got '" + arg + "'");
    counts.push_back({"option " + name, check_thread_count(n, "option " + name)});
  }
  if (s.kokkos_num_threads) {
    const std::string& v = *s.kokkos_num_threads;
    int n = 0;
    if (!runtime_detail::parse_count(v, n))
      throw RequestError(quoted("KOKKOS_NUM_THREADS", v) +
                         ": not a thread count (an integer in "
                         "[1, " +
                         std::to_string(kMaxHostThreads) + "])");
    counts.push_back({"KOKKOS_NUM_THREADS", check_thread_count(n, "KOKKOS_NUM_THREADS")});
  }
  for (const Count& c : counts)
    if (c.n != counts.front().n)
      throw RequestError(counts.front().what + " (" + std::to_string(counts.front().n) +
                         " threads) and " + c.what + " (" + std::to_string(c.n) +
                         ") disagree: give one count (Kokkos refuses two)");

  std::string source;
  if (!counts.empty()) {
    h.threads = counts.front().n;
  } else {
    long long n = s.default_threads;
    source = std::to_string(s.default_threads) + " CPUs";
    const std::string omp = s.omp_num_threads ? runtime_detail::trim(*s.omp_num_threads) : "";
    if (!omp.empty()) {
      const std::string first = runtime_detail::trim(omp.substr(0, omp.find(',')));
      int v = 0;
      bool valid = runtime_detail::parse_count(first, v) && v >= 1;
      for (std::size_t at = omp.find(','); valid && at != std::string::npos;
           at = omp.find(',', at + 1)) {
        int level = 0;
        const std::size_t next = omp.find(',', at + 1);
        valid = runtime_detail::parse_count(
                    runtime_detail::trim(
                        omp.substr(at + 1, next == std::string::npos ? next : next - at - 1)),
                    level) &&
                level >= 1;
      }
      if (!valid)
        throw RequestError(quoted("OMP_NUM_THREADS", *s.omp_num_threads) +
                           ": expected a positive integer, or a comma-separated list of them");
      n = v;
      source = "OMP_NUM_THREADS=" + omp;
    }
    h.threads = static_cast<int>(std::max(1LL, std::min<long long>(n, kMaxHostThreads)));
    if (n > kMaxHostThreads)
      h.warning = source + " exceeds the " + std::to_string(kMaxHostThreads) +
                  " threads Kokkos' OpenMP backend can hold: using " +
                  std::to_string(kMaxHostThreads);
  }

  if (h.threads > s.thread_limit) {
    const std::string limit = "OMP_THREAD_LIMIT=" + std::to_string(s.thread_limit);
    if (!counts.empty())
      throw RequestError(counts.front().what + ": " + std::to_string(h.threads) + " threads, but " +
                         limit + " allows fewer");
    h.warning = (source.empty() ? "" : source + ": ") + limit + ": using " +
                std::to_string(s.thread_limit) + " threads";
    h.threads = std::max(1, s.thread_limit);
  }

  std::vector<int> cpus;
  if (s.affinity_binds && s.gomp_cpu_affinity &&
      runtime_detail::affinity_cpus(*s.gomp_cpu_affinity, cpus))
    for (std::size_t t = 0; t < std::min<std::size_t>(cpus.size(), h.threads); ++t)
      if (cpus[t] >= s.machine_cpus)
        throw RequestError(quoted("GOMP_CPU_AFFINITY", *s.gomp_cpu_affinity) + ": thread " +
                           std::to_string(t) + " would be bound to CPU " + std::to_string(cpus[t]) +
                           ", but this machine has CPUs 0-" + std::to_string(s.machine_cpus - 1));
  return h;
}

inline ThreadSettings ThreadSettings::of_process(int requested, const std::string& what,
                                                 std::vector<std::string> kokkos_args) {
  ThreadSettings s;
  s.requested = requested;
  s.what = what;
  s.kokkos_args = std::move(kokkos_args);
  const auto env = [](const char* name) -> std::optional<std::string> {
    const char* v = std::getenv(name);
    return v ? std::optional<std::string>(v) : std::nullopt;
  };
  s.kokkos_num_threads = env("KOKKOS_NUM_THREADS");
  s.omp_num_threads = env("OMP_NUM_THREADS");
  s.gomp_cpu_affinity = env("GOMP_CPU_AFFINITY");
  const auto bind = env("OMP_PROC_BIND");
  const auto places = env("OMP_PLACES");
  s.affinity_binds =
      !(places && !runtime_detail::trim(*places).empty()) &&
      !(bind && (runtime_detail::trim(*bind) == "false" || runtime_detail::trim(*bind) == "FALSE"));
  for (const char* name : {"KOKKOS_NUMA", "KOKKOS_DEVICE_ID", "KOKKOS_NUM_DEVICES",
                           "KOKKOS_RAND_DEVICES", "KOKKOS_SKIP_DEVICE"})
    if (const auto v = env(name)) s.kokkos_integers.emplace_back(name, *v);
#ifdef KOKKOS_ENABLE_OPENMP
  s.thread_limit = omp_get_thread_limit();
#endif
  s.machine_cpus = static_cast<int>(std::max(1L, sysconf(_SC_NPROCESSORS_CONF)));
#ifdef KOKKOS_ENABLE_OPENMP
  // Without OMP_NUM_THREADS this is the CPUs of the affinity mask as the process started (the
  // OpenMP runtime counts them before it binds the initial thread to one place).
  s.default_threads = omp_get_max_threads();
#else
  s.default_threads = static_cast<int>(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)));
#ifdef __linux__
  // Masks of more than CPU_SETSIZE CPUs: grow the set until the kernel's fits.
  for (int size = CPU_SETSIZE; size <= (1 << 22); size *= 2) {
    cpu_set_t* set = CPU_ALLOC(size);
    const std::size_t bytes = CPU_ALLOC_SIZE(size);
    const bool ok = set && sched_getaffinity(0, bytes, set) == 0;
    if (ok) s.default_threads = std::max(1, CPU_COUNT_S(bytes, set));
    CPU_FREE(set);
    if (ok || errno != EINVAL) break;
  }
#endif
#endif
  return s;
}

// The host threads of this process: a program's option `requested` (0: not given) named
// `what`, the Kokkos options of its command line, and its environment (resolve_host_threads).
inline HostThreads host_threads(int requested, const std::string& what = "threads",
                                std::vector<std::string> kokkos_args = {}) {
  return resolve_host_threads(ThreadSettings::of_process(requested, what, std::move(kokkos_args)));
}

// Whether `arg` is one of Kokkos' thread-count options (--kokkos-threads[=N],
// --kokkos-num-threads[=N]).
inline bool is_kokkos_thread_option(const std::string& arg) {
  for (const std::string name : {"--kokkos-threads", "--kokkos-num-threads"})
    if (arg.compare(0, name.size(), name) == 0 &&
        (arg.size() == name.size() || arg[name.size()] == '='))
      return true;
  return false;
}

// Removes Kokkos' thread-count options from a command line and returns them (for
// host_threads; the program then starts Kokkos with the checked count instead).
inline std::vector<std::string> take_kokkos_thread_options(int& argc, char* argv[]) {
  std::vector<std::string> taken;
  int kept = std::min(argc, 1);
  for (int i = 1; i < argc; ++i) {
    if (is_kokkos_thread_option(argv[i]))
      taken.emplace_back(argv[i]);
    else
      argv[kept++] = argv[i];
  }
  argc = kept;
  if (argv) argv[argc] = nullptr;
  return taken;
}

// Starts Kokkos with the thread count host_threads() chose (and Kokkos' other options of a
// command line, when given). OpenMP's team is set to that count first: Kokkos' OpenMP start-up
// opens a parallel region of OpenMP's default team (OMP_NUM_THREADS) before it uses its own
// count, and a dynamic team would be smaller than the count. Unset OMP_PROC_BIND means
// "false" to OpenMP; saying so silences Kokkos' start-up warning.
inline void initialize_runtime(const HostThreads& h, int* argc = nullptr, char** argv = nullptr) {
  setenv("OMP_PROC_BIND", "false", /*overwrite=*/0);
#ifdef KOKKOS_ENABLE_OPENMP
  omp_set_dynamic(0);
  omp_set_num_threads(h.threads);
#endif
  if (argc && argv)
    initialize_kokkos(h.threads, h.device, *argc, argv);
  else
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
  // For a program's command line: the thread count of host_threads() (its --kokkos-threads /
  // --kokkos-num-threads, which are removed, and the environment; a warning goes to stderr),
  // Kokkos' other --kokkos-* options as Kokkos reads them. A bad count is a RequestError,
  // thrown before Kokkos starts.
  Runtime(int& argc, char* argv[]) {
    if (Kokkos::is_initialized()) return;
    const HostThreads h = host_threads(0, "threads", take_kokkos_thread_options(argc, argv));
    if (!h.warning.empty())
      std::cerr << (argc > 0 && argv[0] ? argv[0] : "perfex") << ": warning: " << h.warning << "\n";
    initialize_runtime(h, &argc, argv);
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
