#pragma once
// Host and device memory in one place: what this process may still allocate on the host, what
// is free on a device, how the processes of a node share its GPUs, and the memory budget an
// extraction plans with by default. Every front end and the extraction ask here; nothing else
// calls the CUDA runtime about memory or reads /proc/meminfo.
#include <perfex/error.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <limits>
#include <string>
#include <type_traits>

#include <sys/resource.h>

namespace perfex {

// Bytes as "812 MB", "1.4 GB", "92 TB".
inline std::string human_bytes(double bytes) {
  const char* units[] = {"bytes", "kB", "MB", "GB", "TB", "PB", "EB"};
  int u = 0;
  while (bytes >= 1000 && u < 6) {
    bytes /= 1000;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof(buf), bytes < 10 && u > 0 ? "%.1f %s" : "%.0f %s", bytes, units[u]);
  return buf;
}

// ---- the host --------------------------------------------------------------------------------

// Bytes of host memory this process may still allocate: MemAvailable (/proc/meminfo) capped by
// RLIMIT_AS and RLIMIT_DATA; infinity when unknown.
inline double available_host_memory() {
  double bytes = std::numeric_limits<double>::infinity();
  std::ifstream meminfo("/proc/meminfo");
  std::string key, unit;
  double kb = 0;
  while (meminfo >> key >> kb >> unit)
    if (key == "MemAvailable:") bytes = kb * 1024;
  for (int resource : {RLIMIT_AS, RLIMIT_DATA}) {
    struct rlimit lim;
    if (getrlimit(resource, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY)
      bytes = std::min(bytes, static_cast<double>(lim.rlim_cur));
  }
  return bytes;
}

// Whether exec reaches host memory (host backends): there a frame's own arrays serve as the
// extraction's result views, and host arrays are used in place.
template <class ExecSpace>
constexpr bool reaches_host_memory() {
  return Kokkos::SpaceAccessibility<ExecSpace, Kokkos::HostSpace>::accessible;
}

// ---- devices ---------------------------------------------------------------------------------

// Bytes free on exec's device now (CUDA: cudaMemGetInfo); infinity on host backends and when
// the device cannot say (host memory is available_host_memory's business).
template <class ExecSpace>
double free_device_memory() {
#ifdef KOKKOS_ENABLE_CUDA
  if constexpr (std::is_same<ExecSpace, Kokkos::Cuda>::value) {
    std::size_t free = 0, total = 0;
    if (cudaMemGetInfo(&free, &total) == cudaSuccess) return static_cast<double>(free);
  }
#endif
  return std::numeric_limits<double>::infinity();
}

// The GPUs this process sees (CUDA builds; 0 elsewhere or when the runtime cannot say).
inline int device_count() {
#ifdef KOKKOS_ENABLE_CUDA
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess ? n : 0;
#else
  return 0;
#endif
}

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

namespace memory_detail {
inline std::atomic<int> device_sharers{1};
}  // namespace memory_detail

// The processes this one shares its GPU with, itself included: the default memory budget of a
// GPU extraction is divided among them (set once at start-up, e.g. by the Python package).
inline void set_device_sharers(int n) { memory_detail::device_sharers = std::max(1, n); }
inline int device_sharers() { return memory_detail::device_sharers; }

// ---- budgets ---------------------------------------------------------------------------------

// The default memory budget on a GPU with `free_bytes` free: half of it (room for another
// process asking at the same moment), divided among the processes sharing the GPU.
inline std::int64_t shared_device_budget(std::int64_t free_bytes, int sharers) {
  return free_bytes / 2 / std::max(1, sharers);
}

// The memory budget of an extraction on exec (ExtractionOptions::memory_budget = 0): on a
// device whose free memory is known, shared_device_budget of it among device_sharers(); 512 MiB
// on host backends.
template <class ExecSpace>
std::int64_t default_memory_budget() {
  const double free = free_device_memory<ExecSpace>();
  if (free < std::numeric_limits<double>::infinity())
    return shared_device_budget(static_cast<std::int64_t>(free), device_sharers());
  return std::int64_t(512) << 20;
}

}  // namespace perfex
