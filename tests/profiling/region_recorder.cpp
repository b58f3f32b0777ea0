// A Kokkos Tools library of perfex's own: loaded as any Kokkos Tools library is
// (--kokkos-tools-libs=FILE, KOKKOS_TOOLS_LIBS; --kokkos-tools-library / KOKKOS_PROFILE_LIBRARY
// with Kokkos 3.4), it records a run's profiling regions and kernels, one line each, in the
// file that PERFEX_REGION_LOG names ("{pid}" in it: the process id, for MPI ranks): "push NAME",
// "pop", "kernel NAME". region_check reads it.
// It needs no Kokkos header: the interface is a set of C functions Kokkos looks up by name.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>

#include <unistd.h>

namespace {

std::FILE* out = nullptr;
std::mutex lock;

void record(const char* what, const char* name) {
  std::lock_guard<std::mutex> guard(lock);
  if (!out) return;
  if (name)
    std::fprintf(out, "%s %s\n", what, name);
  else
    std::fprintf(out, "%s\n", what);
}

}  // namespace

extern "C" {

void kokkosp_init_library(int /*load_sequence*/, std::uint64_t /*interface_version*/,
                          std::uint32_t /*device_count*/, void* /*device_info*/) {
  const char* env = std::getenv("PERFEX_REGION_LOG");
  std::string path = env ? env : "perfex-regions.log";
  const auto pid = path.find("{pid}");
  if (pid != std::string::npos) path.replace(pid, 5, std::to_string(getpid()));
  out = std::fopen(path.c_str(), "w");
}

void kokkosp_finalize_library() {
  std::lock_guard<std::mutex> guard(lock);
  if (out) std::fclose(out);
  out = nullptr;
}

void kokkosp_push_profile_region(const char* name) { record("push", name); }
void kokkosp_pop_profile_region() { record("pop", nullptr); }

void kokkosp_begin_parallel_for(const char* name, std::uint32_t, std::uint64_t* id) {
  *id = 0;
  record("kernel", name);
}
void kokkosp_end_parallel_for(std::uint64_t) {}
void kokkosp_begin_parallel_reduce(const char* name, std::uint32_t, std::uint64_t* id) {
  *id = 0;
  record("kernel", name);
}
void kokkosp_end_parallel_reduce(std::uint64_t) {}
void kokkosp_begin_parallel_scan(const char* name, std::uint32_t, std::uint64_t* id) {
  *id = 0;
  record("kernel", name);
}
void kokkosp_end_parallel_scan(std::uint64_t) {}

}  // extern "C"
