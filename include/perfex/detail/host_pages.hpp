#pragma once
// Transparent huge pages for the large host buffers (spots, patch scratch, image, frame
// arrays). Each is touched first right after it is allocated; in 4 KiB pages that is a page
// fault per 4 KiB (a bundle's 48 MB spot buffer: 12 000 faults, a quarter of a one-bundle run
// on a VM) and a TLB miss per 4 KiB afterwards. Where the kernel's THP mode is "madvise"
// (Debian's and most distributions' default) a buffer gets huge pages only when asked; "never"
// turns this off for the whole machine and "always" makes it unneeded. Advice only: where it
// is refused or unavailable nothing changes, and the numbers never depend on it.
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <vector>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace perfex {
namespace detail {

// Asks for huge pages on the 2 MiB-aligned interior of [p, p + bytes) (none in a buffer under
// 2 MiB: nothing to ask).
inline void advise_huge_pages(void* p, std::size_t bytes) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  if (p == nullptr) return;
  const std::uintptr_t huge = std::uintptr_t(2) << 20;
  const std::uintptr_t lo = (reinterpret_cast<std::uintptr_t>(p) + huge - 1) & ~(huge - 1);
  const std::uintptr_t hi = (reinterpret_cast<std::uintptr_t>(p) + bytes) & ~(huge - 1);
  if (hi > lo) madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_HUGEPAGE);
#else
  (void)p;
  (void)bytes;
#endif
}

// The same for a Kokkos view in host memory (one that is its own host mirror; device views:
// nothing to do). Call it before the view's entries are first written.
template <class View>
void advise_huge_pages(const View& v) {
  if constexpr (std::is_same<typename View::memory_space,
                             typename View::host_mirror_type::memory_space>::value)
    advise_huge_pages(static_cast<void*>(v.data()), v.span() * sizeof(typename View::value_type));
}

// v <- n copies of value, its storage advised before it is written.
template <class T>
void assign_advised(std::vector<T>& v, std::size_t n, const T& value) {
  if (v.capacity() < n) {
    std::vector<T>().swap(v);
    v.reserve(n);
    advise_huge_pages(static_cast<void*>(v.data()), n * sizeof(T));
  }
  v.assign(n, value);
}

}  // namespace detail
}  // namespace perfex
