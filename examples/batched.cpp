// A batched front end: the eigendecomposition of a batch of symmetric matrices in one call
// (perfex::linalg::batched_syev: one team per matrix, on any backend), checked on the host
// through A v = lambda v.
#include <perfex/linalg/batched.hpp>
#include <perfex/runtime.hpp>

#include <cmath>
#include <cstdio>

int main(int argc, char* argv[]) {
  perfex::Runtime kokkos(argc, argv);  // Kokkos, its thread count checked before it starts
  const int n = 74, batch = 40;        // the per-fibre blocks of a DESI patch are 74 x 74
  Kokkos::View<double***, Kokkos::LayoutLeft> A("A", n, n, batch);
  Kokkos::View<double**, Kokkos::LayoutLeft> w("w", n, batch);
  Kokkos::View<int*> status("status", batch);
  auto ha = Kokkos::create_mirror_view(A);
  auto entry = [](int i, int j, int m) {
    return std::exp(-0.5 * (i - j) * (i - j) / (2.0 + m % 5)) + (i == j ? 0.1 * (m + 1) : 0.0);
  };
  for (int m = 0; m < batch; ++m)
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < n; ++i) ha(i, j, m) = entry(i, j, m);
  Kokkos::deep_copy(A, ha);

  perfex::linalg::batched_syev(Kokkos::DefaultExecutionSpace(), A, w, status);

  Kokkos::deep_copy(ha, A);  // eigenvectors in the columns
  auto hw = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), w);
  auto hs = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), status);
  double worst = 0;
  for (int m = 0; m < batch; ++m) {
    if (hs(m) != perfex::linalg::ok) return 1;
    for (int c = 0; c < n; ++c)
      for (int i = 0; i < n; ++i) {
        double r = -hw(c, m) * ha(i, c, m);
        for (int j = 0; j < n; ++j) r += entry(i, j, m) * ha(j, c, m);
        worst = std::max(worst, std::abs(r));
      }
  }
  std::printf("%d eigendecompositions of %d x %d: max |A v - lambda v| = %.2e\n", batch, n, n,
              worst);
  return worst < 1e-10 ? 0 : 1;
}
