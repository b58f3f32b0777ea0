// perfex-bench-image: a simulated preproc image of a whole frame for the whole-process
// benchmarks (scripts/bench_process.sh): the test spectra of perfex's own tests (continuum,
// emission lines, night-sky lines) of fibres [specmin, specmin + nspec) on a 0.8 Å grid 60 Å
// wider than [wmin, wmax] on each side, projected through a PSF file onto its full CCD with
// read noise 3 e-, whatever the PSF file's format. Deterministic for a seed.
//
//   perfex-bench-image PSF OUT [WMIN WMAX [SPECMIN NSPEC [SEED]]]   (5760 7620 0 500 20260101)
#include <perfex/extract/simulate.hpp>
#include <perfex/extract/wavelength_grid.hpp>
#include <perfex/io/image_fits.hpp>
#include <perfex/io/psf_files.hpp>
#include <perfex/psf/any_psf.hpp>
#include <perfex/runtime.hpp>

#include <Kokkos_Core.hpp>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  try {
    perfex::Runtime kokkos(argc, argv);  // Kokkos, its thread count checked before it starts
    if (argc < 3 || argc > 8 || argc == 4 || argc == 6) {
      std::fprintf(stderr, "usage: %s PSF OUT [WMIN WMAX [SPECMIN NSPEC [SEED]]]\n", argv[0]);
      return 2;
    }
    const double wmin = argc > 4 ? std::atof(argv[3]) : 5760.0;
    const double wmax = argc > 4 ? std::atof(argv[4]) : 7620.0;
    const int specmin = argc > 6 ? std::atoi(argv[5]) : 0;
    const int nspec = argc > 6 ? std::atoi(argv[6]) : 500;
    const unsigned seed =
        argc > 7 ? static_cast<unsigned>(std::strtoul(argv[7], nullptr, 10)) : 20260101u;
    const perfex::psf::AnyPsfData psf = perfex::io::read_psf(argv[1]);
    const std::vector<double> wave =
        perfex::extract::make_wavelength_grid(wmin - 60.0, wmax + 60.0, 0.8);
    const std::vector<double> photons = perfex::extract::make_test_spectra(nspec, wave, seed);
    Kokkos::DefaultHostExecutionSpace exec;
    const auto sim = perfex::psf::with_psf_model(exec, psf, [&](const auto& model) {
      return perfex::extract::simulate_image(exec, model, specmin, nspec, wave, photons, 3.0,
                                             seed + 1);
    });
    perfex::io::write_preproc(argv[2], sim.ccd, {});
    std::printf(
        "perfex-bench-image: %d fibres x %zu wavelengths (%.1f-%.1f A) on a %d x %d CCD: %s\n",
        nspec, wave.size(), wave.front(), wave.back(), sim.ccd.nrows, sim.ccd.ncols, argv[2]);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "perfex-bench-image: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
