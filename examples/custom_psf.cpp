// Bring your own instrument: a PSF model written outside perfex, used by perfex's simulator and
// extraction through the PSF concept alone (perfex/psf/model.hpp). A toy spectrograph: 12 fibres
// on a 300 x 1400 pixel CCD, straight traces with a slight polynomial curvature, a circular
// Gaussian spot whose width grows from 0.9 to 1.4 pixels along the spectrum. It simulates an
// image of known spectra with noise, extracts it, and checks that the pulls
// (flux - R·truth) / sigma have an RMS near 1.
#include <perfex/extract/extract_frame.hpp>
#include <perfex/extract/simulate.hpp>
#include <perfex/psf/model.hpp>
#include <perfex/runtime.hpp>

#include <cmath>
#include <cstdio>

namespace toy {

constexpr int kFibres = 12, kCols = 300, kRows = 1400, kHalf = 4;  // spot box 9 x 9
constexpr double kWave0 = 5000, kWave1 = 6000;                     // Å

// What kernels copy: scalars only (a real model would hold Kokkos views here).
struct GaussianDevice {
  KOKKOS_INLINE_FUNCTION double u(double wave) const { return (wave - kWave0) / (kWave1 - kWave0); }
  KOKKOS_INLINE_FUNCTION double trace_x(int fibre, double wave) const {
    const double t = u(wave) - 0.5;
    return 40.0 + 20.0 * fibre + 3.0 * t * t;
  }
  KOKKOS_INLINE_FUNCTION double trace_y(int, double wave) const { return 20.0 + 1300.0 * u(wave); }
  KOKKOS_INLINE_FUNCTION double trace_wavelength(int, double y) const {
    return kWave0 + (y - 20.0) / 1300.0 * (kWave1 - kWave0);
  }
  KOKKOS_INLINE_FUNCTION double sigma(double wave) const { return 0.9 + 0.5 * u(wave); }
  KOKKOS_INLINE_FUNCTION perfex::psf::SpotCorner spot_corner(int fibre, double wave) const {
    return {static_cast<int>(perfex::math::floor(trace_x(fibre, wave) + 0.5)) - kHalf,
            static_cast<int>(perfex::math::floor(trace_y(fibre, wave) + 0.5)) - kHalf};
  }
  // The 1-D pixel integrals along x and y.
  KOKKOS_INLINE_FUNCTION int spot_scratch() const { return 2 * (2 * kHalf + 1); }

  // A Gaussian integrated over each pixel (differences of erf at the pixel edges), normalised.
  template <class Member>
  KOKKOS_INLINE_FUNCTION void spot(const Member& member, int fibre, double wave, double* scratch,
                                   const perfex::psf::SpotOutput& out) const {
    constexpr int n = 2 * kHalf + 1;
    const perfex::psf::SpotCorner c = spot_corner(fibre, wave);
    const double x = trace_x(fibre, wave), y = trace_y(fibre, wave);
    const double scale = 1.0 / (perfex::math::sqrt(2.0) * sigma(wave));
    double* gx = scratch;
    double* gy = scratch + n;
    Kokkos::parallel_for(Kokkos::ThreadVectorRange(member, n), [&](int i) {
      gx[i] = perfex::math::erf((c.col + i + 0.5 - x) * scale) -
              perfex::math::erf((c.col + i - 0.5 - x) * scale);
      gy[i] = perfex::math::erf((c.row + i + 0.5 - y) * scale) -
              perfex::math::erf((c.row + i - 0.5 - y) * scale);
    });
    double sx = 0, sy = 0;
    for (int i = 0; i < n; ++i) {
      sx += gx[i];
      sy += gy[i];
    }
    Kokkos::parallel_for(Kokkos::ThreadVectorRange(member, n * n),
                         [&](int pq) { out.values[pq] = gy[pq / n] * gx[pq % n] / (sx * sy); });
    Kokkos::single(Kokkos::PerThread(member), [&]() {
      *out.col0 = c.col;
      *out.row0 = c.row;
    });
  }
};

// The host side: sizes, coverage, the model's error, and the device part.
template <class MemorySpace>
struct GaussianPsf {
  using memory_space = MemorySpace;
  using device_type = GaussianDevice;
  GaussianDevice d;
  const device_type& device() const { return d; }
  int nfib() const { return kFibres; }
  int npix_x() const { return kCols; }
  int npix_y() const { return kRows; }
  int spot_rows() const { return 2 * kHalf + 1; }
  int spot_cols() const { return 2 * kHalf + 1; }
  double wavemin() const { return kWave0; }
  double wavemax() const { return kWave1; }
  double psferr() const { return 0.01; }
};

}  // namespace toy

int main(int argc, char* argv[]) {
  perfex::Runtime kokkos(argc, argv);  // Kokkos, its thread count checked before it starts
  using Exec = Kokkos::DefaultExecutionSpace;
  const Exec exec;
  namespace ex = perfex::extract;
  const toy::GaussianPsf<Exec::memory_space> psf;
  static_assert(perfex::psf::require_psf_model<decltype(psf)>(), "");

  ex::ExtractionOptions opt;
  opt.wmin = 5100;
  opt.wmax = 5900;
  opt.dw = 1.0;
  opt.specmin = 0;
  opt.nspec = toy::kFibres;
  opt.bundlesize = toy::kFibres;
  opt.nsubbundles = 3;
  const std::vector<double> wave = ex::make_wavelength_grid(opt.wmin, opt.wmax, opt.dw);
  const std::vector<double> truth = ex::make_test_spectra(opt.nspec, wave, 11);
  const ex::SimulatedImage sim =
      ex::simulate_image(exec, psf, opt.specmin, opt.nspec, wave, truth, /*read_noise=*/2.0, 5);
  const ex::Frame frame = ex::extract_frame(exec, psf, ex::upload_image(exec, sim.ccd), opt);

  // Pulls against the truth seen through the resolution: (R·truth)_i = Σ_k R[i][k]·truth_k,
  // R[k − nd + d][k] stored at resolution[f][d][k]; bins within nd of the ends skipped.
  const int nd = frame.ndiag, K = frame.nwave;
  double sum2 = 0;
  long n = 0;
  for (int f = 0; f < frame.nspec; ++f)
    for (int i = nd; i < K - nd; ++i) {
      if (frame.ivar[frame.index(f, i)] <= 0) continue;
      double convolved = 0;
      for (int d = 0; d <= 2 * nd; ++d) {
        const int k = i + nd - d;
        convolved += frame.resolution[(static_cast<std::size_t>(f) * (2 * nd + 1) + d) * K + k] *
                     truth[frame.index(f, k)];
      }
      const double pull = (frame.flux[frame.index(f, i)] - convolved / opt.dw) *
                          std::sqrt(frame.ivar[frame.index(f, i)]);
      sum2 += pull * pull;
      ++n;
    }
  const double rms = std::sqrt(sum2 / n);
  std::printf("custom PSF: %d fibres x %d wavelengths, %d patches; pull RMS %.3f over %ld bins\n",
              frame.nspec, frame.nwave, frame.npatches, rms, n);
  return n > 0 && rms > 0.9 && rms < 1.1 ? 0 : 1;
}
