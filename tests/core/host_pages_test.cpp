// Huge-page advice for large host buffers (tag [core]): the buffers' contents are those asked
// for, and on Linux with transparent huge pages the buffer's mapping carries the advice.
#include "perfex_test.hpp"

#include <perfex/detail/host_pages.hpp>

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

// VmFlags of the mapping of /proc/self/smaps that holds address a ("" when none is found).
std::string vm_flags_at(std::uintptr_t a) {
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    std::uintptr_t lo = 0, hi = 0;
    char dash = 0;
    std::istringstream range(line);
    if (range >> std::hex >> lo >> dash >> hi && dash == '-' &&
        line.find(' ') != std::string::npos && line.find(':') > line.find(' ')) {
      inside = a >= lo && a < hi;
      continue;
    }
    if (inside && line.rfind("VmFlags:", 0) == 0) return line;
  }
  return "";
}

}  // namespace

TEST_CASE("host pages: advised buffers hold what was asked and carry the advice", "[core]") {
  std::vector<double> v{1.0, 2.0};
  const std::size_t n = std::size_t(3) << 20;  // 24 MiB
  perfex::detail::assign_advised(v, n, 0.5);
  REQUIRE(v.size() == n);
  CHECK(v.front() == 0.5);
  CHECK(v[n / 2] == 0.5);
  CHECK(v.back() == 0.5);
  // Reused storage is refilled, not reallocated.
  const double* before = v.data();
  perfex::detail::assign_advised(v, n / 2, 2.0);
  CHECK(v.data() == before);
  CHECK(v.size() == n / 2);
  CHECK(v.back() == 2.0);
  std::vector<long> small;
  perfex::detail::assign_advised(small, 3, 7L);
  CHECK(small == std::vector<long>{7, 7, 7});

  std::ifstream thp("/sys/kernel/mm/transparent_hugepage/enabled");
  if (!thp || !std::ifstream("/proc/self/smaps")) {
    WARN("no transparent huge pages or /proc/self/smaps here: the advice itself is not checked");
    return;
  }
  const std::string flags = vm_flags_at(reinterpret_cast<std::uintptr_t>(v.data() + n / 4));
  INFO(flags);
  CHECK(flags.find(" hg") != std::string::npos);  // MADV_HUGEPAGE taken
}
