// A team-level kernel inside your own functor: one team per band matrix factors it with
// perfex::linalg::team_band_cholesky and solves H x = b with team_band_cholesky_solve, then
// the host checks the residual |H x - b|.
#include <perfex/linalg/band_cholesky.hpp>
#include <perfex/runtime.hpp>

#include <cmath>
#include <cstdio>

namespace {

// The factor and the solve of matrix m, by the threads of its team.
template <class View3, class View2>
struct FactorAndSolve {
  View3 band;  // (kd+1) x n x batch, lower band: band(d, j, m) = H_m(j + d, j)
  View2 x;     // n x batch: b on entry, H^{-1} b on exit
  Kokkos::View<int*, typename View3::memory_space> status;

  template <class Member>
  KOKKOS_INLINE_FUNCTION void operator()(const Member& member) const {
    const int m = member.league_rank();
    const auto AB = Kokkos::subview(band, Kokkos::ALL, Kokkos::ALL, m);
    const auto xm = Kokkos::subview(x, Kokkos::ALL, m);
    const int s = perfex::linalg::team_band_cholesky(member, AB);
    Kokkos::single(Kokkos::PerTeam(member), [&] { status(m) = s; });
    if (s == perfex::linalg::ok)
      perfex::linalg::team_band_cholesky_solve(member, AB, AB, int(AB.extent(1)), xm);
  }
};

}  // namespace

int main(int argc, char* argv[]) {
  perfex::Runtime kokkos(argc, argv);  // Kokkos, its thread count checked before it starts
  using Exec = Kokkos::DefaultExecutionSpace;
  const int n = 200, kd = 12, batch = 16;
  Kokkos::View<double***, Kokkos::LayoutLeft> band("band", kd + 1, n, batch);
  Kokkos::View<double**, Kokkos::LayoutLeft> x("x", n, batch);
  Kokkos::View<int*> status("status", batch);
  // H_m: diagonally dominant, H(i, j) = 1 / (1 + |i - j| + m) off the diagonal within the band.
  auto hb = Kokkos::create_mirror_view(band);
  auto hx = Kokkos::create_mirror_view(x);
  auto H = [&](int i, int j, int m) {
    const int d = std::abs(i - j);
    return d > kd ? 0.0 : d == 0 ? 4.0 + m : 1.0 / (1.0 + d + m);
  };
  for (int m = 0; m < batch; ++m)
    for (int j = 0; j < n; ++j) {
      for (int d = 0; d <= kd && j + d < n; ++d) hb(d, j, m) = H(j + d, j, m);
      hx(j, m) = std::sin(0.1 * j + m);
    }
  Kokkos::deep_copy(band, hb);
  Kokkos::deep_copy(x, hx);
  const auto b = Kokkos::create_mirror(x);
  Kokkos::deep_copy(b, hx);

  Kokkos::parallel_for("examples::factor_and_solve", Kokkos::TeamPolicy<Exec>(batch, Kokkos::AUTO),
                       FactorAndSolve<decltype(band), decltype(x)>{band, x, status});
  Kokkos::deep_copy(hx, x);
  auto hs = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), status);

  double worst = 0;
  for (int m = 0; m < batch; ++m) {
    if (hs(m) != perfex::linalg::ok) return 1;
    for (int i = 0; i < n; ++i) {
      double r = -b(i, m);
      for (int j = std::max(0, i - kd); j <= std::min(n - 1, i + kd); ++j)
        r += H(i, j, m) * hx(j, m);
      worst = std::max(worst, std::abs(r));
    }
  }
  std::printf("%d band matrices (n %d, kd %d) factored and solved: max |Hx - b| = %.2e\n", batch, n,
              kd, worst);
  return worst < 1e-12 ? 0 : 1;
}
