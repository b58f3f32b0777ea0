#pragma once
// Every difference between Kokkos 3.4, 4.x and 5.x that perfex relies on lives here.
#include <Kokkos_Core.hpp>

#include <cmath>
#include <string>
#include <vector>

namespace perfex {
namespace math {

#if KOKKOS_VERSION >= 30700
using Kokkos::cbrt;
using Kokkos::erf;
using Kokkos::exp;
using Kokkos::fabs;
using Kokkos::floor;
using Kokkos::isfinite;
using Kokkos::log;
using Kokkos::pow;
using Kokkos::sqrt;
#else
using Kokkos::Experimental::cbrt;
using Kokkos::Experimental::erf;
using Kokkos::Experimental::exp;
using Kokkos::Experimental::fabs;
using Kokkos::Experimental::floor;
using Kokkos::Experimental::isfinite;
using Kokkos::Experimental::log;
using Kokkos::Experimental::pow;
using Kokkos::Experimental::sqrt;
#endif

template <class T>
KOKKOS_INLINE_FUNCTION constexpr T min(const T& a, const T& b) {
  return b < a ? b : a;
}
template <class T>
KOKKOS_INLINE_FUNCTION constexpr T max(const T& a, const T& b) {
  return a < b ? b : a;
}
template <class T>
KOKKOS_INLINE_FUNCTION constexpr T abs(const T& a) {
  return a < T(0) ? -a : a;
}

// a * b + c as the programs' SIMD level computes it: one fused multiply-add where the target
// has FMA units, else a product and a sum. Written out where GCC's contraction of a*b+c
// (-ffp-contract=fast) depends on what it inlines: the sums of the PSF's Legendre
// coefficients were fused or not with the View implementation (Kokkos 4.7's mdspan View
// against the older one), which changed the frames' last bits.
KOKKOS_INLINE_FUNCTION double mul_add(double a, double b, double c) {
#if defined(__FMA__) || defined(__CUDA_ARCH__)
  return ::fma(a, b, c);
#else
  return a * b + c;
#endif
}

constexpr double pi = 3.14159265358979323846;
constexpr double sqrt2 = 1.41421356237309504880;
constexpr double inv_sqrt_2pi = 0.39894228040143267794;
constexpr double epsilon = 2.220446049250313e-16;

}  // namespace math

// A View's host mirror type (what create_mirror_view returns). Kokkos 5 deprecates
// View::HostMirror for host_mirror_type, which before Kokkos 4.5 was another type (the same
// memory space, the host mirror space's execution space).
template <class View>
#if KOKKOS_VERSION >= 40500
using host_mirror_t = typename View::host_mirror_type;
#else
using host_mirror_t = typename View::HostMirror;
#endif

// Profiling region guard (Kokkos::Profiling::ScopedRegion only exists from 4.1).
class ScopedRegion {
 public:
  explicit ScopedRegion(const std::string& name) { Kokkos::Profiling::pushRegion(name); }
  ~ScopedRegion() { Kokkos::Profiling::popRegion(); }
  ScopedRegion(const ScopedRegion&) = delete;
  ScopedRegion& operator=(const ScopedRegion&) = delete;
};

// Allocation property for a view whose every entry is written before it is read.
inline auto uninitialized(const std::string& label) {
  return Kokkos::view_alloc(Kokkos::WithoutInitializing, label);
}

// Initialises Kokkos with `threads` host threads (0 = Kokkos' default), on CUDA builds GPU
// `device` (-1 = Kokkos' default), and the Kokkos Tools library `tools_libs` ("" = none, or
// the one KOKKOS_TOOLS_LIBS / KOKKOS_PROFILE_LIBRARY names). Kokkos 3.7 replaced InitArguments
// (tool_lib) by InitializationSettings (tools_libs).
inline void initialize_kokkos(int threads, int device = -1, const std::string& tools_libs = "") {
#if KOKKOS_VERSION >= 30700
  Kokkos::InitializationSettings settings;
  if (threads > 0) settings.set_num_threads(threads);
  if (device >= 0) settings.set_device_id(device);
  if (!tools_libs.empty()) settings.set_tools_libs(tools_libs);
  Kokkos::initialize(settings);
#else
  Kokkos::InitArguments args;
  if (threads > 0) args.num_threads = threads;
  if (device >= 0) args.device_id = device;
  if (!tools_libs.empty()) args.tool_lib = tools_libs;
  Kokkos::initialize(args);
#endif
}

// Initialises Kokkos from a command line (Kokkos' --kokkos-* options, which it removes) with
// `threads` host threads and GPU `device` (-1: Kokkos' default) given as its options. The
// thread option is --kokkos-num-threads from Kokkos 3.7 (--kokkos-threads before).
inline void initialize_kokkos(int threads, int device, int& argc, char* argv[]) {
  if (argc < 1) return initialize_kokkos(threads, device);
#if KOKKOS_VERSION >= 30700
  std::string thread_option = "--kokkos-num-threads=" + std::to_string(threads);
#else
  std::string thread_option = "--kokkos-threads=" + std::to_string(threads);
#endif
  std::string device_option = "--kokkos-device-id=" + std::to_string(device);
  std::vector<char*> args{argv[0], thread_option.data()};
  if (device >= 0) args.push_back(device_option.data());
  args.insert(args.end(), argv + 1, argv + argc);
  int n = static_cast<int>(args.size());
  args.push_back(nullptr);
  Kokkos::initialize(n, args.data());
  // Kokkos removed the options it took, the added ones among them: the rest is the command line.
  argc = 0;
  for (int i = 0; i < n; ++i)
    if (args[i] != thread_option.data() && args[i] != device_option.data()) argv[argc++] = args[i];
  argv[argc] = nullptr;
}

// Concurrency of an execution-space instance (static in 3.4, a member in 4.x: an instance
// call compiles on both).
template <class ExecSpace>
int concurrency(const ExecSpace& exec) {
  return exec.concurrency();
}

}  // namespace perfex
