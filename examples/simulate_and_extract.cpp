// Simulate and extract: a synthetic DESI-like PSF, an image of known spectra with noise, the
// extraction, and the pulls (flux - truth) / sigma, which must be ~N(0, 1). Writes the PSF and
// the image when given two file names (the extract_files example reads them).
#include <perfex/extract/extract_frame.hpp>
#include <perfex/extract/simulate.hpp>
#include <perfex/io/image_fits.hpp>
#include <perfex/io/psf_files.hpp>
#include <perfex/psf/synthetic.hpp>
#include <perfex/runtime.hpp>

#include <cmath>
#include <cstdio>

int main(int argc, char* argv[]) {
  perfex::Runtime kokkos(argc, argv);  // Kokkos, its thread count checked before it starts
  using Exec = Kokkos::DefaultExecutionSpace;
  const Exec exec;
  namespace ex = perfex::extract;

  perfex::psf::SyntheticPsfOptions po;
  po.nfib = 25;  // one bundle
  const perfex::psf::GaussHermitePsfData psf_data = perfex::psf::make_synthetic_psf(po);
  const auto psf = perfex::psf::upload_psf(exec, psf_data);

  ex::ExtractionOptions opt;  // DESI defaults
  opt.wmin = 6000;
  opt.wmax = 6200;
  opt.specmin = 0;
  opt.nspec = 25;
  const std::vector<double> wave = ex::make_wavelength_grid(opt.wmin, opt.wmax, opt.dw);
  const std::vector<double> truth = ex::make_test_spectra(opt.nspec, wave, 7);
  const ex::SimulatedImage sim =
      ex::simulate_image(exec, psf, opt.specmin, opt.nspec, wave, truth, /*read_noise=*/3.0, 42);

  const ex::Frame frame = ex::extract_frame(exec, psf_data, sim.ccd, opt);

  // The frame is per Angstrom; the truth is photons per bin.
  double sum2 = 0;
  long n = 0;
  for (int f = 0; f < frame.nspec; ++f)
    for (int k = 0; k < frame.nwave; ++k) {
      const std::size_t i = frame.index(f, k);
      if (frame.ivar[i] <= 0) continue;
      const double pull = (frame.flux[i] - truth[i] / opt.dw) * std::sqrt(frame.ivar[i]);
      sum2 += pull * pull;
      ++n;
    }
  const double rms = std::sqrt(sum2 / n);
  std::printf("%d fibres x %d wavelengths, %d patches; pull RMS %.3f over %ld bins\n", frame.nspec,
              frame.nwave, frame.npatches, rms, n);
  if (argc == 3) {
    perfex::io::write_psf(argv[1], psf_data);
    perfex::io::write_preproc(argv[2], sim.ccd, {});  // no MASK bits set
  }
  return rms > 0.9 && rms < 1.1 ? 0 : 1;
}
