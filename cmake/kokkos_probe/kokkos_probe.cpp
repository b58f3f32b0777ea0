// Whether this compiler builds sound Views with this Kokkos. GCC 12.2 to 12.5 fold the new
// View's default constructor (Kokkos 4.7 and the 4.6.99 development snapshots before it) into
// zero bytes: the empty accessor, laid out on top of the allocation tracker
// ([[no_unique_address]]), wipes the tracker's "nothing to release" flag, and the first
// assignment to or destruction of a default-constructed View dereferences a null record
// (SIGSEGV in SharedAllocationRecord<void, void>::decrement). perfex's CMake configuration
// runs this (try_run), and so does scripts/build-kokkos.sh after a build.
#include <Kokkos_Core.hpp>

int main(int argc, char* argv[]) {
  Kokkos::ScopeGuard kokkos(argc, argv);
  Kokkos::View<double*, Kokkos::HostSpace> a("a", 4), b;
  b = a;  // releases b's empty allocation first: the SIGSEGV here
  return a.use_count() == 2 ? 0 : 1;
}
