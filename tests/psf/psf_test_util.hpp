#pragma once
// Helpers shared by the PSF tests: host copies of device results.
#include <Kokkos_Core.hpp>

#include <vector>

#include <perfex/detail/team_shape.hpp>
#include <perfex/psf/gauss_hermite/model.hpp>

namespace perfex_psf_test {

// Team shapes to compare with one-thread, one-lane teams: team sizes 2..8 (odd ones too) and
// vector lengths 2..8, those the backend allows for functor f (OpenMP: team sizes up to its
// thread count; host backends accept any vector length and run the lanes in order).
template <class ExecSpace, class Functor>
std::vector<perfex::detail::TeamShape> multi_thread_shapes(const Functor& f) {
  const int tmax =
      Kokkos::TeamPolicy<ExecSpace>(ExecSpace(), 1, 1).team_size_max(f, Kokkos::ParallelForTag());
  const int vmax = Kokkos::TeamPolicy<ExecSpace>::vector_length_max();
  std::vector<perfex::detail::TeamShape> shapes;
  for (const auto& s : std::vector<perfex::detail::TeamShape>{
           {1, 4}, {2, 1}, {3, 2}, {4, 8}, {5, 1}, {7, 4}, {8, 2}}) {
    if (s.team_size <= tmax && s.vector_length <= vmax) shapes.push_back(s);
  }
  return shapes;
}

template <class ExecSpace>
using Mem = typename ExecSpace::memory_space;

template <class ExecSpace>
Kokkos::View<const double*, Mem<ExecSpace>> device_waves(const std::vector<double>& w) {
  Kokkos::View<double*, Mem<ExecSpace>> v("waves", w.size());
  auto h = Kokkos::create_mirror_view(v);
  for (std::size_t k = 0; k < w.size(); ++k) h(k) = w[k];
  Kokkos::deep_copy(v, h);
  return v;
}

// Spots, corners, traces and parameters of fibres [f0, f0+nf) at waves, on the host.
struct HostEval {
  int nf = 0, K = 0, ny = 0, nx = 0, np = 0;
  std::vector<double> spots, x, y, params;  // [nf][K][ny][nx], [nf][K], [nf][K], [np][nf][K]
  std::vector<int> xc, yc;
  double spot(int f, int k, int p, int q) const {
    return spots[((static_cast<std::size_t>(f) * K + k) * ny + p) * nx + q];
  }
  double param(int p, int f, int k) const {
    return params[(static_cast<std::size_t>(p) * nf + f) * K + k];
  }
};

template <class ExecSpace>
HostEval evaluate_all(const ExecSpace& exec,
                      const perfex::psf::GaussHermitePsf<Mem<ExecSpace>>& psf, int f0, int nf,
                      const std::vector<double>& waves) {
  using M = Mem<ExecSpace>;
  HostEval r;
  r.nf = nf;
  r.K = static_cast<int>(waves.size());
  r.ny = psf.ny();
  r.nx = psf.nx();
  r.np = psf.nparam();
  auto w = device_waves<ExecSpace>(waves);
  Kokkos::View<double****, Kokkos::LayoutRight, M> spots("spots", nf, r.K, r.ny, r.nx);
  Kokkos::View<int**, M> xc("xc", nf, r.K), yc("yc", nf, r.K);
  Kokkos::View<double**, M> x("x", nf, r.K), y("y", nf, r.K);
  Kokkos::View<double***, M> params("params", r.np, nf, r.K);
  perfex::psf::compute_spots(exec, psf, f0, nf, w, spots, xc, yc);
  perfex::psf::evaluate_traces(exec, psf, f0, nf, w, x, y);
  perfex::psf::evaluate_params(exec, psf, f0, nf, w, params);
  exec.fence();
  auto hs = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), spots);
  auto hxc = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), xc);
  auto hyc = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), yc);
  auto hx = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), x);
  auto hy = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), y);
  auto hp = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), params);
  r.spots.assign(hs.data(), hs.data() + hs.size());
  for (int f = 0; f < nf; ++f) {
    for (int k = 0; k < r.K; ++k) {
      r.xc.push_back(hxc(f, k));
      r.yc.push_back(hyc(f, k));
      r.x.push_back(hx(f, k));
      r.y.push_back(hy(f, k));
    }
  }
  for (int p = 0; p < r.np; ++p)
    for (int f = 0; f < nf; ++f)
      for (int k = 0; k < r.K; ++k) r.params.push_back(hp(p, f, k));
  return r;
}

}  // namespace perfex_psf_test
