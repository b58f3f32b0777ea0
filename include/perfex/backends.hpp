#pragma once
// The execution spaces of this build by name: the one place that maps "cuda", "openmp",
// "serial" to Kokkos types, and calls a function with an instance of the named one.
#include <perfex/error.hpp>

#include <Kokkos_Core.hpp>

#include <cctype>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

namespace perfex {

namespace backends_detail {
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
}  // namespace backends_detail

// The enabled execution spaces, preferred first (a GPU, then host threads, then one thread).
using ExecSpaces = decltype(std::tuple_cat(std::declval<backends_detail::Cuda>(),
                                           std::declval<backends_detail::OpenMP>(),
                                           std::declval<backends_detail::Serial>()));

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
  backends_detail::for_each_type(make, static_cast<ExecSpaces*>(nullptr));
}

// Names of the enabled execution spaces, preferred first.
inline std::vector<std::string> backend_names() {
  std::vector<std::string> names;
  auto add = [&](auto type) { names.push_back(backend_name<typename decltype(type)::type>()); };
  backends_detail::for_each_type(add, static_cast<ExecSpaces*>(nullptr));
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

}  // namespace perfex
