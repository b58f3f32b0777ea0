// perfex/runtime.hpp: execution spaces by name, the host thread cap, and how processes share a
// node's GPUs (tag [core]).
#include "perfex_test.hpp"

#include <perfex/runtime.hpp>

TEST_CASE("runtime: backends by name, preferred first", "[core]") {
  const auto names = perfex::backend_names();
  REQUIRE(!names.empty());
  CHECK(perfex::default_backend() == names.front());
  CHECK(perfex::default_backend(false) != "cuda");
  for (const auto& name : names) {
    CHECK_NOTHROW(perfex::check_backend(name));
    CHECK(perfex::with_backend(name, [](const auto& exec) {
            return perfex::backend_name<std::decay_t<decltype(exec)>>();
          }) == name);
  }
  CHECK_THROWS_AS(perfex::check_backend("vulkan"), perfex::RequestError);
  CHECK_THROWS_WITH(perfex::with_backend("vulkan", [](const auto&) { return 0; }),
                    Catch::Contains("'vulkan' is not one of this build's execution spaces"));
}

TEST_CASE("runtime: a node's GPUs dealt to its processes, the budget shared", "[core]") {
  // 2 I/O ranks + 5 workers per GPU on a 4-GPU node: 28 local ranks.
  CHECK(perfex::device_for_rank(0, 4) == 0);
  CHECK(perfex::device_for_rank(5, 4) == 1);
  CHECK(perfex::device_for_rank(27, 4) == 3);
  CHECK(perfex::device_for_rank(27, 4, 2) == 2);  // the user's choice wins
  CHECK(perfex::device_for_rank(3, 0) == -1);     // no GPU
  CHECK_THROWS_AS(perfex::device_for_rank(0, 4, 4), perfex::RequestError);
  int total = 0;
  for (int device = 0; device < 4; ++device) {
    int dealt = 0;
    for (int rank = 0; rank < 30; ++rank) dealt += perfex::device_for_rank(rank, 4) == device;
    CHECK(perfex::ranks_sharing_device(device, 30, 4) == dealt);
    total += dealt;
  }
  CHECK(total == 30);
  CHECK(perfex::ranks_sharing_device(0, 1, 1) == 1);
  CHECK(perfex::ranks_sharing_device(-1, 8, 0) == 1);
  // Half the free memory, shared: 5 ranks on a GPU with 140 GB free get 14 GB each.
  CHECK(perfex::shared_device_budget(140'000'000'000LL, 5) == 14'000'000'000LL);
  CHECK(perfex::shared_device_budget(1000, 0) == 500);
  perfex::set_device_sharers(7);
  CHECK(perfex::device_sharers() == 7);
  perfex::set_device_sharers(0);
  CHECK(perfex::device_sharers() == 1);
}

namespace {

// The settings of a process on a 2-CPU machine with nothing set.
perfex::ThreadSettings two_cpus() {
  perfex::ThreadSettings s;
  s.default_threads = s.machine_cpus = 2;
  return s;
}

std::string refusal(const perfex::ThreadSettings& s) {
  try {
    perfex::resolve_host_threads(s);
  } catch (const perfex::RequestError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("runtime: every way a thread count reaches Kokkos is checked", "[core]") {
  using Catch::Contains;
  // Defaults: the CPUs of the affinity mask, capped at Kokkos' table with a warning.
  auto s = two_cpus();
  CHECK(perfex::resolve_host_threads(s).threads == 2);
  CHECK(perfex::resolve_host_threads(s).warning.empty());
  s.default_threads = 1;  // taskset -c 0
  CHECK(perfex::resolve_host_threads(s).threads == 1);
  s.default_threads = s.machine_cpus = 1000;
  CHECK(perfex::resolve_host_threads(s).threads == 512);
  CHECK_THAT(perfex::resolve_host_threads(s).warning, Contains("1000 CPUs exceeds the 512"));

  // A program's option.
  s = two_cpus();
  s.requested = 7;
  CHECK(perfex::resolve_host_threads(s).threads == 7);
  s.requested = 600;
  s.what = "option --threads";
  CHECK(refusal(s) == "option --threads: at most 512 (Kokkos' OpenMP thread pool), got 600");
  s.requested = -1;
  CHECK_THAT(refusal(s), Contains("option --threads: must be >= 1"));

  // OMP_NUM_THREADS: OpenMP's syntax; the first level is the team; capped, never refused for
  // its size (it may be meant for other programs).
  const std::vector<std::pair<std::string, int>> omp_ok{{"4", 4},
                                                        {"4,2", 4},
                                                        {" 3 ", 3},
                                                        {"3 , 2", 3},
                                                        {"512", 512},
                                                        {"100000", 512},
                                                        {"99999999999999999999", 512},
                                                        {"", 2},
                                                        {" ", 2}};
  for (const auto& [value, threads] : omp_ok) {
    s = two_cpus();
    s.omp_num_threads = value;
    INFO("OMP_NUM_THREADS='" << value << "'");
    CHECK(perfex::resolve_host_threads(s).threads == threads);
    CHECK(perfex::resolve_host_threads(s).warning.empty() == (threads != 512 || value == "512"));
  }
  s.omp_num_threads = "100000";
  CHECK_THAT(perfex::resolve_host_threads(s).warning,
             Contains("OMP_NUM_THREADS=100000 exceeds the 512 threads") && Contains("using 512"));
  for (const std::string value : {"abc", "0", "-2", "4,", ",4", "4,x", "4,0", "2.5", "0x10"}) {
    s.omp_num_threads = value;
    INFO("OMP_NUM_THREADS='" << value << "'");
    CHECK_THAT(refusal(s), Contains("OMP_NUM_THREADS='" + value + "'") &&
                               Contains("a positive integer, or a comma-separated list"));
  }

  // KOKKOS_NUM_THREADS: an explicit count, refused beyond the table, whatever OMP_NUM_THREADS.
  s = two_cpus();
  s.omp_num_threads = "2";
  s.kokkos_num_threads = "8";
  CHECK(perfex::resolve_host_threads(s).threads == 8);
  s.kokkos_num_threads = "600";
  CHECK(refusal(s) == "KOKKOS_NUM_THREADS: at most 512 (Kokkos' OpenMP thread pool), got 600");
  for (const std::string value : {"", "abc", "0", "-3", "4,2", " 4", "4abc", "1e3"}) {
    s.kokkos_num_threads = value;
    INFO("KOKKOS_NUM_THREADS='" << value << "'");
    CHECK_THAT(refusal(s), Contains("KOKKOS_NUM_THREADS") && !Contains("OMP_NUM_THREADS"));
  }

  // Kokkos' options on a command line, and counts that disagree (Kokkos refuses two).
  s = two_cpus();
  s.kokkos_args = {"--kokkos-num-threads=3"};
  CHECK(perfex::resolve_host_threads(s).threads == 3);
  s.kokkos_args = {"--kokkos-threads=600"};
  CHECK_THAT(refusal(s), Contains("option --kokkos-threads: at most 512"));
  for (const std::string arg : {"--kokkos-threads", "--kokkos-threads=", "--kokkos-threads=x"}) {
    s.kokkos_args = {arg};
    CHECK_THAT(refusal(s), Contains("option --kokkos-threads: expected --kokkos-threads=N"));
  }
  s.kokkos_args = {"--kokkos-threads=3"};
  s.kokkos_num_threads = "3";
  s.requested = 3;
  CHECK(perfex::resolve_host_threads(s).threads == 3);
  s.kokkos_num_threads = "4";
  CHECK_THAT(refusal(s), Contains("threads (3 threads) and KOKKOS_NUM_THREADS (4) disagree"));

  // OMP_THREAD_LIMIT: OpenMP would start fewer threads than Kokkos counts on.
  s = two_cpus();
  s.thread_limit = 2;
  s.requested = 4;
  CHECK_THAT(refusal(s), Contains("threads: 4 threads, but OMP_THREAD_LIMIT=2 allows fewer"));
  s.requested = 0;
  s.omp_num_threads = "4";
  CHECK(perfex::resolve_host_threads(s).threads == 2);
  CHECK_THAT(perfex::resolve_host_threads(s).warning,
             Contains("OMP_NUM_THREADS=4: OMP_THREAD_LIMIT=2: using 2 threads"));

  // GOMP_CPU_AFFINITY: libgomp cannot start a thread bound to a CPU the machine lacks.
  s = two_cpus();
  s.requested = 2;
  for (const std::string value : {"0-5", "0,1,7", "1 0", "0-1:1", "abc"}) {
    s.gomp_cpu_affinity = value;
    INFO("GOMP_CPU_AFFINITY='" << value << "'");
    CHECK(perfex::resolve_host_threads(s).threads == 2);
  }
  for (const std::string value : {"1,5", "1 5", "0-5:4", "1000"}) {
    s.gomp_cpu_affinity = value;
    INFO("GOMP_CPU_AFFINITY='" << value << "'");
    CHECK_THAT(refusal(s), Contains("GOMP_CPU_AFFINITY='" + value + "': thread ") &&
                               Contains("this machine has CPUs 0-1"));
  }
  s.affinity_binds = false;  // OMP_PROC_BIND=false or OMP_PLACES set: libgomp ignores it
  CHECK(perfex::resolve_host_threads(s).threads == 2);

  // Kokkos' other integer variables.
  s = two_cpus();
  s.kokkos_integers = {{"KOKKOS_DEVICE_ID", "-1"}, {"KOKKOS_NUMA", "1"}};
  CHECK(perfex::resolve_host_threads(s).threads == 2);
  s.kokkos_integers = {{"KOKKOS_NUMA", "abc"}};
  CHECK(refusal(s) == "KOKKOS_NUMA='abc': Kokkos reads this variable as an integer");
}

TEST_CASE("runtime: the process's thread settings and command line", "[core]") {
  // The environment as the process has it (restored after).
  const char* saved = std::getenv("KOKKOS_NUM_THREADS");
  const std::string saved_value = saved ? saved : "";
  setenv("KOKKOS_NUM_THREADS", "600", 1);
  CHECK_THROWS_WITH(perfex::host_threads(0), Catch::Contains("KOKKOS_NUM_THREADS: at most 512"));
  setenv("KOKKOS_NUM_THREADS", "3", 1);
  CHECK(perfex::host_threads(0).threads == 3);
  CHECK_THROWS_AS(perfex::host_threads(2), perfex::RequestError);
  if (saved)
    setenv("KOKKOS_NUM_THREADS", saved_value.c_str(), 1);
  else
    unsetenv("KOKKOS_NUM_THREADS");
  const auto s = perfex::ThreadSettings::of_process();
  CHECK(s.default_threads >= 1);
  CHECK(s.machine_cpus >= 1);

  // Kokkos' thread options leave a command line; the others stay for Kokkos and Catch.
  std::vector<std::string> words{"prog",
                                 "--kokkos-threads=4",
                                 "-x",
                                 "--kokkos-num-threads",
                                 "--kokkos-threadsafe",
                                 "--kokkos-disable-warnings"};
  std::vector<char*> argv;
  for (auto& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  int argc = static_cast<int>(words.size());
  const auto taken = perfex::take_kokkos_thread_options(argc, argv.data());
  CHECK(taken == std::vector<std::string>{"--kokkos-threads=4", "--kokkos-num-threads"});
  REQUIRE(argc == 4);
  CHECK(std::string(argv[1]) == "-x");
  CHECK(std::string(argv[2]) == "--kokkos-threadsafe");
  CHECK(argv[4] == nullptr);
}
