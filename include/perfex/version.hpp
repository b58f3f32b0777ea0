#pragma once
// The versions of a build: perfex's, Kokkos' and the execution spaces it was built with, as the
// tools' --version prints them and the Python package returns them (perfex._perfex.version_info),
// so that both say the same.
#include <perfex/backends.hpp>
#include <perfex/config.hpp>

#include <Kokkos_Core.hpp>

#include <string>
#include <vector>

namespace perfex {

struct VersionInfo {
  std::string perfex;                 // PERFEX_VERSION_STRING
  std::string kokkos;                 // "3.4.1"
  std::vector<std::string> backends;  // backend_names(): the default first
};

// Kokkos' version as "major.minor.patch" (KOKKOS_VERSION is major * 10000 + minor * 100 +
// patch, e.g. 30401).
inline std::string kokkos_version() {
  return std::to_string(KOKKOS_VERSION / 10000) + "." + std::to_string(KOKKOS_VERSION / 100 % 100) +
         "." + std::to_string(KOKKOS_VERSION % 100);
}

inline VersionInfo version_info() {
  return {PERFEX_VERSION_STRING, kokkos_version(), backend_names()};
}

// "perfex 1.2.0\nKokkos 3.4.1\nbackends: openmp (default), serial\n"
inline std::string version_text(const VersionInfo& v = version_info()) {
  std::string backends;
  for (const std::string& b : v.backends)
    backends += (backends.empty() ? b + " (default)" : ", " + b);
  return "perfex " + v.perfex + "\nKokkos " + v.kokkos + "\nbackends: " + backends + "\n";
}

}  // namespace perfex
