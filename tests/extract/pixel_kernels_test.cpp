// The patch solver's pixel-level kernels (weighted spots, b, ω, the band of H0 = AᵀWA,
// chi2pix / pixmask_fraction, the model image, each patch's bandwidth) against direct host
// sums, and for every team shape against one-thread, one-lane teams.
#include "perfex_test.hpp"
#include "psf/psf_test_util.hpp"

#include <perfex/extract/extract_frame.hpp>
#include <perfex/extract/simulate.hpp>
#include <perfex/psf/synthetic.hpp>

#include <algorithm>
#include <cmath>
#include <random>

namespace {

namespace ex = perfex::extract;
using perfex::detail::TeamShape;

// Ten fibres (one bundle, two sub-bundles) of a synthetic PSF on a CCD corner, a simulated
// image with one pixel in seven masked; wavelengths from below the CCD's first row, so that
// some patch windows are clipped by the CCD edge.
struct PixelScene {
  perfex::psf::GaussHermitePsfData psf;
  ex::CcdImage image;
  ex::ExtractionOptions opt;
  std::vector<double> fullwave;  // padded grid
  int nwave = 0;
};

const PixelScene& pixel_scene() {
  static PixelScene s = [] {
    PixelScene sc;
    perfex::psf::SyntheticPsfOptions po;
    po.nfib = 10;
    po.bundlesize = 10;
    po.npix_x = 256;
    po.npix_y = 200;
    sc.psf = perfex::psf::make_synthetic_psf(po);
    sc.opt.wmin = 5545.0;
    sc.opt.wmax = 5624.2;
    sc.opt.nspec = 10;
    sc.opt.bundlesize = 10;
    sc.opt.nsubbundles = 2;
    sc.opt.nwavestep = 25;
    sc.opt.model_image = true;  // the solver's scratch holds the model's blocks
    const auto wave = ex::make_wavelength_grid(sc.opt.wmin, sc.opt.wmax, sc.opt.dw);
    sc.nwave = static_cast<int>(wave.size());
    sc.fullwave = ex::make_padded_grid(wave, sc.opt.dw, sc.opt.wavepad(), sc.opt.nwavestep);
    const perfex::psf::GaussHermitePsf<Kokkos::HostSpace> dpsf(sc.psf);
    sc.image = ex::simulate_image(Kokkos::DefaultHostExecutionSpace(), dpsf, 0, 10, wave,
                                  ex::make_test_spectra(10, wave, 5u), 3.0, 17u)
                   .ccd;
    for (std::size_t i = 0; i < sc.image.ivar.size(); i += 7) sc.image.ivar[i] = 0.0;
    return sc;
  }();
  return s;
}

// Everything the kernels read, on ExecSpace, and host copies of the spots and corners.
template <class ExecSpace>
struct PixelSetup {
  using Mem = typename ExecSpace::memory_space;
  std::vector<ex::PatchDesc> plan;  // bandwidths measured
  Kokkos::View<double****, Kokkos::LayoutRight, Kokkos::HostSpace> spots;
  Kokkos::View<int**, Kokkos::HostSpace> xc, yc;
  ex::PatchSolver<ExecSpace, Mem> solver;
  Kokkos::View<double**, Kokkos::LayoutLeft, Mem> phi;     // (unknown, patch)
  Kokkos::View<double**, Kokkos::LayoutRight, Mem> model;  // the CCD
  std::vector<double> hphi;
  int nwt = 0, nmax = 0;
};

// Builds the patch solver as extract_frame does (plan_frame, the spots of the one spot group,
// frame-shaped results), its model blocks by `fold`; adapt when PatchSolver's members change.
template <class ExecSpace>
PixelSetup<ExecSpace> make_pixel_setup(ex::ModelFold fold = ex::ModelFold::sum) {
  using Mem = typename ExecSpace::memory_space;
  const PixelScene& sc = pixel_scene();
  const ExecSpace exec;
  PixelSetup<ExecSpace> s;
  const auto psf = perfex::psf::upload_psf(exec, sc.psf);
  const auto plan = ex::plan_frame(exec, psf, sc.image.nrows, sc.image.ncols, sc.opt);
  REQUIRE(plan.launches.groups.size() == 1);
  REQUIRE(plan.launches.groups.front().fibre_lo == 0);  // patch fibres are the PSF's
  const int nb = psf.nfib(), K = static_cast<int>(plan.fullwave.size());
  const int nx = psf.nx(), ny = psf.ny();
  Kokkos::View<double****, Kokkos::LayoutRight, Mem> spots("spots", nb, K, ny, nx);
  Kokkos::View<int**, Mem> xc("xc", nb, K), yc("yc", nb, K);
  perfex::psf::compute_spots(exec, psf, 0, nb, plan.device_fullwave, spots, xc, yc);
  s.spots = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), spots);
  s.xc = Kokkos::View<int**, Kokkos::HostSpace>("hx", nb, K);
  s.yc = Kokkos::View<int**, Kokkos::HostSpace>("hy", nb, K);
  Kokkos::deep_copy(s.xc, Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), xc));
  Kokkos::deep_copy(s.yc, Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), yc));
  s.plan = plan.patches;
  const int npatch = plan.npatches();
  s.nwt = plan.geometry.nwt;
  s.nmax = plan.geometry.nmax();
  const int nspec = sc.opt.nspec, nwave = static_cast<int>(plan.wave.size());
  const int ndiag = psf.spot_rows() / 2;  // the resolution band (psf/model.hpp)
  using Bins = typename ex::PatchResults<Mem>::Bins;
  const Bins flux("flux", nspec, nwave);
  auto hf = Kokkos::create_mirror_view(flux);  // a flux for the model's blocks
  for (std::size_t i = 0; i < hf.size(); ++i) hf.data()[i] = 40.0 + 7.0 * std::sin(0.37 * i);
  Kokkos::deep_copy(flux, hf);
  ex::PatchGeometry geometry = plan.geometry;
  geometry.model_fold = fold;
  s.solver = ex::PatchSolver<ExecSpace, Mem>(geometry, plan.options, npatch);
  if (fold == ex::ModelFold::sum) {  // store_fibre's reconvolved flux: the kept bins' (0 beyond)
    const int nwavestep = plan.geometry.nwavestep;
    auto hm = Kokkos::create_mirror_view(s.solver.ws.model_flux);
    Kokkos::deep_copy(hm, 0.0);
    for (int ip = 0; ip < npatch; ++ip) {
      const ex::PatchDesc& p = plan.patches[static_cast<std::size_t>(ip)];
      for (int f = 0; f < p.nkeepfib; ++f)
        for (int k = 0; k < p.nkeep; ++k)
          hm(f * nwavestep + k, ip) = hf(p.out_fibre0 + f, p.kf0 + k);
    }
    Kokkos::deep_copy(s.solver.ws.model_flux, hm);
  }
  s.solver.spots = spots;
  s.solver.xcorner = xc;
  s.solver.ycorner = yc;
  s.solver.image = ex::upload_image(exec, sc.image);
  s.solver.out = ex::PatchResults<Mem>(
      flux, Bins("ivar", nspec, nwave), Bins("chi2pix", nspec, nwave),
      Bins("pixmask", nspec, nwave),
      typename ex::PatchResults<Mem>::Diagonals("rdiags", nspec, 2 * ndiag + 1, nwave),
      Kokkos::View<int*, Mem>("status", npatch));
  s.solver.patches = plan.device_patches;
  s.solver.out.select(plan.device_patches, 0);
  s.model =
      Kokkos::View<double**, Kokkos::LayoutRight, Mem>("model", sc.image.nrows, sc.image.ncols);
  s.phi = decltype(s.phi)("phi", s.nmax, npatch);
  s.hphi.resize(static_cast<std::size_t>(s.nmax) * npatch);
  for (std::size_t i = 0; i < s.hphi.size(); ++i) s.hphi[i] = 30.0 + 20.0 * std::cos(0.11 * i);
  Kokkos::deep_copy(s.phi, Kokkos::View<const double**, Kokkos::LayoutLeft, Kokkos::HostSpace>(
                               s.hphi.data(), s.nmax, npatch));
  return s;
}

// weigh_spots, normal_matrix, chi2_and_pixmask (with the given φ) and model_block of each patch.
template <class ExecSpace>
struct PixelKernels {
  using Mem = typename ExecSpace::memory_space;
  ex::PatchSolver<ExecSpace, Mem> s;
  Kokkos::View<double**, Kokkos::LayoutLeft, Mem> phi;
  KOKKOS_INLINE_FUNCTION void operator()(
      const typename Kokkos::TeamPolicy<ExecSpace>::member_type& member) const {
    const int ip = member.league_rank();
    const ex::PatchDesc p = s.patches(ip);
    const int n = p.nfib * s.nwt;
    s.normal_equations(member, ip, p, n);
    member.team_barrier();
    s.chi2_and_pixmask(member, p, Kokkos::subview(phi, Kokkos::make_pair(0, n), ip));
    member.team_barrier();
    if (s.ws.model_flux.extent(0) > 0) s.model_block(member, p);  // as PatchSolver::outputs
  }
};

// The kernels' results, per patch: b, ω, the band of H0 (band + 1 rows × n), chi2pix,
// pixmask_fraction of the kept bins; then the model image.
struct PixelResults {
  std::vector<double> b, omega, H, chi2pix, pixmask, model;
};

template <class ExecSpace>
PixelResults run_pixel_kernels(const PixelSetup<ExecSpace>& s, const TeamShape& shape) {
  const ExecSpace exec;
  using Mem = typename ExecSpace::memory_space;
  Kokkos::deep_copy(s.model, 0.0);
  const int npatch = static_cast<int>(s.plan.size());
  Kokkos::parallel_for("perfex::test::pixel_kernels",
                       perfex::detail::team_policy(exec, npatch, shape),
                       PixelKernels<ExecSpace>{s.solver, s.phi});
  // The blocks into the image, in the plan's order (as extract_frame does after a launch).
  const auto& blocks = s.solver.ws.model_block;
  Kokkos::View<std::int64_t*, Mem> offsets("offsets", npatch);
  auto hoffsets = Kokkos::create_mirror_view(offsets);
  for (int i = 0; i < npatch; ++i) hoffsets(i) = static_cast<std::int64_t>(i) * blocks.extent(0);
  Kokkos::deep_copy(offsets, hoffsets);
  ex::fold_model_blocks(
      exec, s.model, Kokkos::View<const double*, Mem>(blocks.data(), blocks.size()), offsets,
      s.solver.patches, 0, static_cast<int>(s.model.extent(0)), s.solver.ws.geometry.model_fold);
  exec.fence();
  const auto& ws = s.solver.ws;
  auto hb = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), ws.b);
  auto ho = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), ws.omega);
  auto hH = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), ws.H);
  auto hc = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), s.solver.out.chi2pix.frame);
  auto hp = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), s.solver.out.pixmask.frame);
  auto hm = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), s.model);
  PixelResults r;
  for (std::size_t ip = 0; ip < s.plan.size(); ++ip) {
    const ex::PatchDesc& p = s.plan[ip];
    const int n = p.nfib * s.nwt;
    for (int j = 0; j < n; ++j) {
      r.b.push_back(hb(j, ip));
      r.omega.push_back(ho(j, ip));
      for (int d = 0; d <= p.band; ++d) r.H.push_back(j + d < n ? hH(d, j, ip) : 0.0);
    }
    for (int f = 0; f < p.nkeepfib; ++f)
      for (int k = 0; k < p.nkeep; ++k) {
        r.chi2pix.push_back(hc(p.out_fibre0 + f, p.kf0 + k));
        r.pixmask.push_back(hp(p.out_fibre0 + f, p.kf0 + k));
      }
  }
  r.model.assign(hm.data(), hm.data() + hm.size());
  return r;
}

// The same quantities as direct sums over the window's pixels on the host.
template <class ExecSpace>
PixelResults host_pixel_sums(const PixelSetup<ExecSpace>& s) {
  const PixelScene& sc = pixel_scene();
  const int ny = static_cast<int>(s.spots.extent(2)), nx = static_cast<int>(s.spots.extent(3));
  const int ncols = sc.image.ncols;
  const double psferr = sc.psf.psferr;
  PixelResults r;
  r.model.assign(sc.image.pixels.size(), 0.0);
  // S_j at CCD pixel (row, col), 0 outside its box.
  auto S = [&](int f, int k, int row, int col) {
    const int p = row - s.yc(f, k), q = col - s.xc(f, k);
    return p >= 0 && p < ny && q >= 0 && q < nx ? s.spots(f, k, p, q) : 0.0;
  };
  for (std::size_t ip = 0; ip < s.plan.size(); ++ip) {
    const ex::PatchDesc& p = s.plan[ip];
    const int n = p.nfib * s.nwt;
    auto fib = [&](int j) { return p.fib0 + j % p.nfib; };
    auto wav = [&](int j) { return p.kf0 + j / p.nfib; };
    std::vector<double> model(static_cast<std::size_t>(p.row1 - p.row0) * (p.col1 - p.col0), 0.0);
    for (int jc = 0; jc < n; ++jc) {
      double b = 0, omega = 0;
      std::vector<double> h(static_cast<std::size_t>(p.band) + 1, 0.0);
      const int r0 = s.yc(fib(jc), wav(jc)), c0 = s.xc(fib(jc), wav(jc));
      for (int row = std::max(p.row0, r0); row < std::min(p.row1, r0 + ny); ++row)
        for (int col = std::max(p.col0, c0); col < std::min(p.col1, c0 + nx); ++col) {
          const std::size_t pix = static_cast<std::size_t>(row) * ncols + col;
          const double sc_ = S(fib(jc), wav(jc), row, col);
          const double w = sc.image.ivar[pix] * sc_;
          b += w * sc.image.pixels[pix];
          omega += w;
          model[(row - p.row0) * (p.col1 - p.col0) + col - p.col0] +=
              s.hphi[ip * s.nmax + jc] * sc_;
          for (int d = 0; d <= p.band && jc + d < n; ++d)
            h[d] += w * S(fib(jc + d), wav(jc + d), row, col);
        }
      r.b.push_back(b);
      r.omega.push_back(omega);
      r.H.insert(r.H.end(), h.begin(), h.end());
    }
    if (s.solver.ws.geometry.model_fold == ex::ModelFold::overwrite)  // the fit, over the others
      for (int row = p.row0; row < p.row1; ++row)
        for (int col = p.col0; col < p.col1; ++col)
          r.model[static_cast<std::size_t>(row) * ncols + col] =
              model[(row - p.row0) * (p.col1 - p.col0) + col - p.col0];
    for (int f = 0; f < p.nkeepfib; ++f)
      for (int k = 0; k < p.nkeep; ++k) {
        const int fl = p.fib0 + p.keep0 + f, kk = p.kf0 + sc.opt.wavepad() + k;
        double chi = 0, norm = 0, masked = 0;
        const int r0 = s.yc(fl, kk), c0 = s.xc(fl, kk);
        for (int row = std::max(p.row0, r0); row < std::min(p.row1, r0 + ny); ++row)
          for (int col = std::max(p.col0, c0); col < std::min(p.col1, c0 + nx); ++col) {
            const double a = S(fl, kk, row, col);
            const std::size_t pix = static_cast<std::size_t>(row) * ncols + col;
            const double w = sc.image.ivar[pix];
            const double m = model[(row - p.row0) * (p.col1 - p.col0) + col - p.col0];
            const double v = (psferr * m + 1e-32) * (psferr * m + 1e-32);
            const double t = w > 0 ? 1.0 / (v + 1.0 / w) : 0.0;
            const double resid = sc.image.pixels[pix] - m;
            chi += a * resid * resid * t;
            norm += t > 0 ? a : 0.0;
            masked += w == 0 ? a : 0.0;
          }
        r.chi2pix.push_back(norm > 0 ? chi / norm : 0.0);
        r.pixmask.push_back(masked);
      }
  }
  if (s.solver.ws.geometry.model_fold == ex::ModelFold::overwrite) return r;
  // gpu_specter's model image from the flux preset in make_pixel_setup.
  auto hf = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), s.solver.out.flux.frame);
  for (std::size_t ip = 0; ip < s.plan.size(); ++ip) {
    const ex::PatchDesc& p = s.plan[ip];
    for (int f = 0; f < p.nkeepfib; ++f)
      for (int k = 0; k < p.nkeep; ++k) {
        const int fl = p.fib0 + p.keep0 + f, kk = p.kf0 + sc.opt.wavepad() + k;
        for (int row = std::max(p.row0, s.yc(fl, kk)); row < std::min(p.row1, s.yc(fl, kk) + ny);
             ++row)
          for (int col = std::max(p.col0, s.xc(fl, kk)); col < std::min(p.col1, s.xc(fl, kk) + nx);
               ++col)
            r.model[static_cast<std::size_t>(row) * ncols + col] +=
                hf(p.out_fibre0 + f, p.kf0 + k) * S(fl, kk, row, col);
      }
  }
  return r;
}

// max |a − b| / max |b| of each quantity.
std::vector<double> relative_differences(const PixelResults& a, const PixelResults& b) {
  auto rel = [](const std::vector<double>& x, const std::vector<double>& y) {
    if (x.size() != y.size()) return HUGE_VAL;
    double err = 0, ref = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
      err = std::max(err, std::abs(x[i] - y[i]));
      ref = std::max(ref, std::abs(y[i]));
    }
    return ref > 0 ? err / ref : err;
  };
  return {rel(a.b, b.b),
          rel(a.omega, b.omega),
          rel(a.H, b.H),
          rel(a.chi2pix, b.chi2pix),
          rel(a.pixmask, b.pixmask),
          rel(a.model, b.model)};
}

// Bandwidths of the given patches over these corners, with a team shape.
template <class ExecSpace>
std::vector<int> bandwidths(const Kokkos::View<int**, Kokkos::HostSpace>& hx,
                            const Kokkos::View<int**, Kokkos::HostSpace>& hy,
                            const std::vector<ex::PatchDesc>& plan, int nwt, int nrow, int ncol,
                            const TeamShape& shape) {
  using Mem = typename ExecSpace::memory_space;
  // In the device's default layout (PatchBandwidth's), which may not be the host's.
  auto to_device = [](const Kokkos::View<int**, Kokkos::HostSpace>& h) {
    Kokkos::View<int**, Mem> d("corners", h.extent(0), h.extent(1));
    auto m = Kokkos::create_mirror_view(d);
    for (std::size_t i = 0; i < h.extent(0); ++i)
      for (std::size_t j = 0; j < h.extent(1); ++j) m(i, j) = h(i, j);
    Kokkos::deep_copy(d, m);
    return d;
  };
  const auto xc = to_device(hx), yc = to_device(hy);
  Kokkos::View<ex::PatchDesc*, Mem> dplan("plan", plan.size());
  Kokkos::deep_copy(
      dplan, Kokkos::View<const ex::PatchDesc*, Kokkos::HostSpace>(plan.data(), plan.size()));
  const ExecSpace exec;
  Kokkos::parallel_for("perfex::test::bandwidths",
                       perfex::detail::team_policy(exec, static_cast<int>(plan.size()), shape),
                       ex::PatchBandwidth<ExecSpace, Mem>{xc, yc, dplan, nwt, nrow, ncol});
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), dplan);
  std::vector<int> band;
  for (std::size_t i = 0; i < plan.size(); ++i) band.push_back(h(i).band);
  return band;
}

}  // namespace

TEST_CASE("patch unknowns: fibre and wavelength bin by multiply-shift", "[extract]") {
  long wrong = 0;
  for (int nfib = 1; nfib <= 64; ++nfib) {
    ex::PatchDesc p;
    p.fib0 = 3;
    p.kf0 = 11;
    p.nfib = nfib;
    const ex::PatchUnknowns u(p);
    for (int j = 0; j < 200000; ++j)
      wrong += u.wave(j) != 11 + j / nfib || u.fibre(j) != 3 + j % nfib;
  }
  CHECK(wrong == 0);
}

PERFEX_BACKEND_TEST_CASE("pixel kernels of the patch solver equal direct sums", "[extract]") {
  PERFEX_ONLY_SELECTED_BACKEND();
  const auto s = make_pixel_setup<TestType>();
  REQUIRE(s.plan.size() == 8);
  const auto got = run_pixel_kernels(s, perfex::detail::default_team_shape<TestType>());
  const auto ref = host_pixel_sums(s);
  const auto d = relative_differences(got, ref);
  INFO("relative differences: b " << d[0] << ", omega " << d[1] << ", H " << d[2] << ", chi2pix "
                                  << d[3] << ", pixmask " << d[4] << ", model " << d[5]);
  for (double x : d) CHECK(x < 1e-12);
  // The scene exercises masked pixels, clipped windows and overlapping patches.
  CHECK(*std::max_element(ref.pixmask.begin(), ref.pixmask.end()) > 0.0);
  CHECK(std::any_of(s.plan.begin(), s.plan.end(),
                    [](const ex::PatchDesc& p) { return p.row0 == 0; }));
}

PERFEX_BACKEND_TEST_CASE("pixel kernels make specter's model: each patch's fit over the last",
                         "[extract]") {
  PERFEX_ONLY_SELECTED_BACKEND();
  const auto s = make_pixel_setup<TestType>(ex::ModelFold::overwrite);
  const auto got = run_pixel_kernels(s, perfex::detail::default_team_shape<TestType>());
  const auto ref = host_pixel_sums(s);
  CHECK(relative_differences(got, ref)[5] < 1e-12);
  // Windows overlap (each patch's φ differs), so a write out of the plan's order would show.
  std::vector<int> cover(ref.model.size(), 0);
  std::size_t shared = 0;
  for (const ex::PatchDesc& p : s.plan)
    for (int row = p.row0; row < p.row1; ++row)
      for (int col = p.col0; col < p.col1; ++col)
        shared += ++cover[static_cast<std::size_t>(row) * pixel_scene().image.ncols + col] == 2;
  CHECK(shared > 0);
}

PERFEX_BACKEND_TEST_CASE("pixel kernels give the same results for every team shape",
                         "[extract][team]") {
  PERFEX_ONLY_SELECTED_BACKEND();
  const auto s = make_pixel_setup<TestType>();
  const auto one = run_pixel_kernels(s, {1, 1});
  const auto shapes =
      perfex_psf_test::multi_thread_shapes<TestType>(PixelKernels<TestType>{s.solver, s.phi});
  REQUIRE(!shapes.empty());
  PixelResults multi;  // the first multi-thread team's results with one vector lane
  for (const TeamShape& shape : shapes) {
    CAPTURE(shape.team_size, shape.vector_length);
    const auto r = run_pixel_kernels(s, shape);
    const auto d = relative_differences(r, one);
    INFO("relative differences: b " << d[0] << ", omega " << d[1] << ", H " << d[2] << ", chi2pix "
                                    << d[3] << ", pixmask " << d[4] << ", model " << d[5]);
    for (double x : d) CHECK(x < 1e-12);
    // Every value is computed by one thread in a fixed order: with one vector lane, bitwise
    // the same for any team size (one host thread builds b, ω and H0 by pixel rows, a team by
    // spots: those are compared between multi-thread teams). The model image sums each pixel's
    // spots in one order, and its blocks in the plan's: the same bits for every team shape.
    if (shape.vector_length == 1) {
      CHECK(r.chi2pix == one.chi2pix);
      CHECK(r.pixmask == one.pixmask);
      if (multi.H.empty()) multi = r;
      CHECK(r.b == multi.b);
      CHECK(r.omega == multi.omega);
      CHECK(r.H == multi.H);
    }
    CHECK(r.model == one.model);
    // No atomics: a second run gives the same bits.
    const auto again = run_pixel_kernels(s, shape);
    CHECK(again.chi2pix == r.chi2pix);
    CHECK(again.model == r.model);
  }
}

PERFEX_BACKEND_TEST_CASE("patch bandwidth for any spot geometry and team shape",
                         "[extract][team]") {
  PERFEX_ONLY_SELECTED_BACKEND();
  const int nf = 9, nk = 50, nwt = 30, nrow = 11, ncol = 17;
  std::mt19937 rng(5);
  std::uniform_int_distribution<int> jitter(-2, 2);
  for (const bool rising : {true, false}) {
    CAPTURE(rising);
    // Fibres 7.3 px apart, rows rising 1.6 px per bin (with jitter when not rising).
    Kokkos::View<int**, Kokkos::HostSpace> hx("hx", nf, nk), hy("hy", nf, nk);
    for (int f = 0; f < nf; ++f)
      for (int k = 0; k < nk; ++k) {
        hx(f, k) = static_cast<int>(7.3 * f) + k / 20;
        hy(f, k) = static_cast<int>(1.6 * k) + f % 3 + (rising ? 0 : 4 * jitter(rng));
      }
    std::vector<ex::PatchDesc> plan(4);
    plan[0].fib0 = 0, plan[0].nfib = 7, plan[0].kf0 = 0;
    plan[1].fib0 = 2, plan[1].nfib = 7, plan[1].kf0 = 15;
    plan[2].fib0 = 8, plan[2].nfib = 1, plan[2].kf0 = 20;
    plan[3].fib0 = 1, plan[3].nfib = 3, plan[3].kf0 = 5;
    std::vector<int> expect;
    for (const auto& p : plan) {
      int widest = 0;
      for (int a = 0; a < p.nfib * nwt; ++a)
        for (int b = a + 1; b < p.nfib * nwt; ++b) {
          const int fa = p.fib0 + a % p.nfib, ka = p.kf0 + a / p.nfib;
          const int fb = p.fib0 + b % p.nfib, kb = p.kf0 + b / p.nfib;
          if (std::abs(hx(fa, ka) - hx(fb, kb)) < ncol && std::abs(hy(fa, ka) - hy(fb, kb)) < nrow)
            widest = std::max(widest, b - a);
        }
      expect.push_back(widest);
    }
    CHECK(bandwidths<TestType>(hx, hy, plan, nwt, nrow, ncol, {1, 1}) == expect);
    for (const TeamShape& shape : perfex_psf_test::multi_thread_shapes<TestType>(
             ex::PatchBandwidth<TestType, typename TestType::memory_space>{})) {
      CAPTURE(shape.team_size, shape.vector_length);
      CHECK(bandwidths<TestType>(hx, hy, plan, nwt, nrow, ncol, shape) == expect);
    }
  }
}
