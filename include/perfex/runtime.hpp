#pragma once
// The Kokkos runtime as perfex's programs and bindings start it, in two jobs: the host threads
// (how many Kokkos can hold and is started with) and the Kokkos Tools libraries (loaded and
// checked before Kokkos starts); then Runtime (Kokkos for a program's lifetime). The execution
// spaces by name are in backends.hpp (included), memory and GPUs in memory.hpp.
#include <perfex/backends.hpp>
#include <perfex/detail/kokkos_compat.hpp>
#include <perfex/error.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <cstring>
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
#include <dlfcn.h>
#include <sys/stat.h>
#include <unistd.h>

namespace perfex {

// Kokkos' OpenMP backend keeps its threads in a table of 512 (Kokkos 3.4 to 4.x): more crash
// its start-up.
constexpr int kMaxHostThreads = 512;

struct HostThreads {
  int threads = 1;         // to start Kokkos with: always an explicit count
  std::string warning;     // "" or why the count was capped
  int device = -1;         // GPU to start Kokkos with (CUDA builds); -1 = Kokkos' default
  std::string tools_libs;  // Kokkos Tools library to load ("" = the environment's, if any)
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

namespace runtime_detail {

// Loads the Kokkos Tools library `path` (and keeps it loaded: Kokkos' own dlopen then finds it
// and its constructors run once); "" when it loads and has Kokkos Tools callbacks, otherwise
// why not.
inline std::string tools_library_problem(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return "'" + path + "': " + std::strerror(errno);
  if (S_ISDIR(st.st_mode)) return "'" + path + "' is a directory";
  if (!S_ISREG(st.st_mode)) return "'" + path + "' is not a regular file";
  // A name without a slash would be searched for on the library path: name the file itself.
  const std::string file = path.find('/') == std::string::npos ? "./" + path : path;
  void* handle = ::dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* why = ::dlerror();
    return "'" + path + "' cannot be loaded as a shared library (" + (why ? why : "dlopen failed") +
           ")";
  }
  for (const char* callback : {"kokkosp_init_library", "kokkosp_push_profile_region",
                               "kokkosp_begin_parallel_for", "kokkosp_begin_parallel_reduce"})
    if (::dlsym(handle, callback)) return "";
  return "'" + path + "' has no Kokkos Tools callbacks (kokkosp_*): not a Kokkos Tools library";
}

inline std::vector<std::string> split_libraries(const std::string& list) {
  std::vector<std::string> names;
  std::size_t start = 0;
  for (std::size_t end; (end = list.find(';', start)) != std::string::npos; start = end + 1)
    if (end > start) names.push_back(list.substr(start, end - start));
  if (start < list.size()) names.push_back(list.substr(start));
  return names;
}

}  // namespace runtime_detail

// The Kokkos Tools libraries a run loads: a program's option `option` (named `what`) or the
// environment's KOKKOS_TOOLS_LIBS / KOKKOS_PROFILE_LIBRARY (';'-separated lists). Kokkos only
// prints a line for a library it cannot load and runs on without the profile asked for, and
// aborts with its own text when an option and a variable disagree: here each library is loaded
// first and every problem is a RequestError naming the option or variable, before any work.
// Returns the libraries to hand to Kokkos ("" = the environment's, which Kokkos reads itself).
inline std::string resolve_tools_libs(const std::string& option,
                                      const std::string& what = "option --kokkos-tools-libs") {
  std::vector<std::pair<std::string, std::string>> sources;  // (name, libraries)
  if (!option.empty()) sources.emplace_back(what, option);
  for (const char* variable : {"KOKKOS_TOOLS_LIBS", "KOKKOS_PROFILE_LIBRARY"})
    if (const char* v = std::getenv(variable); v && *v) sources.emplace_back(variable, v);
  for (std::size_t i = 1; i < sources.size(); ++i)
    if (sources[i].second != sources[0].second)
      throw RequestError(sources[0].first + " ('" + sources[0].second + "') and " +
                         sources[i].first + " ('" + sources[i].second +
                         "') name different Kokkos Tools libraries; give one of them");
  for (const auto& [name, libraries] : sources)
    for (const std::string& library : runtime_detail::split_libraries(libraries))
      if (const std::string problem = runtime_detail::tools_library_problem(library);
          !problem.empty())
        throw RequestError(name + ": " + problem);
  return option;
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

// The value of Kokkos' own --kokkos-tools-libs= / --kokkos-tools-library= option in a command
// line ("" = none).
inline std::string kokkos_tools_option(int argc, char* argv[]) {
  std::string value;
  for (int i = 1; i < argc; ++i)
    for (const std::string name : {"--kokkos-tools-libs=", "--kokkos-tools-library="})
      if (argv[i] && std::string(argv[i]).compare(0, name.size(), name) == 0)
        value = argv[i] + name.size();
  return value;
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
// The Kokkos Tools libraries are checked first (resolve_tools_libs).
inline void initialize_runtime(const HostThreads& h, int* argc = nullptr, char** argv = nullptr) {
  if (argc && argv)
    resolve_tools_libs(kokkos_tools_option(*argc, argv), "option --kokkos-tools-libs");
  else
    resolve_tools_libs(h.tools_libs);
  setenv("OMP_PROC_BIND", "false", /*overwrite=*/0);
#ifdef KOKKOS_ENABLE_OPENMP
  omp_set_dynamic(0);
  omp_set_num_threads(h.threads);
#endif
  if (argc && argv)
    initialize_kokkos(h.threads, h.device, *argc, argv);
  else
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
