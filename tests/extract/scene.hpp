#pragma once
// The extraction tests' scene: 10 fibres (two bundles of 5) of a synthetic PSF on a CCD corner,
// 80 A of simulated spectrum with its truth; no reference data needed.
#include <Kokkos_Core.hpp>

#include <perfex/extract/extract_frame.hpp>
#include <perfex/extract/simulate.hpp>
#include <perfex/psf/synthetic.hpp>

#include <vector>

namespace perfex_extract_test {

struct Scene {
  perfex::psf::GaussHermitePsfData psf;
  perfex::extract::CcdImage image;
  std::vector<double> truth_wave;  // bin centres of the truth, 0.8 A, 12 bins of margin each side
  std::vector<double> truth_photons;  // [nspec][truth bins] photons per bin
  int margin = 12;
};

// Bundles of 5 in 2 sub-bundles, 4 wavelength steps of 25: 16 patches.
inline perfex::extract::ExtractionOptions scene_options() {
  perfex::extract::ExtractionOptions o;
  o.wmin = 6000.0;
  o.wmax = 6079.2;
  o.dw = 0.8;
  o.specmin = 0;
  o.nspec = 10;
  o.bundlesize = 5;
  o.nsubbundles = 2;
  o.nwavestep = 25;
  return o;
}

inline const Scene& scene() {
  static Scene s = [] {
    Scene sc;
    perfex::psf::SyntheticPsfOptions po;
    po.nfib = 10;
    po.bundlesize = 5;
    po.npix_x = 256;  // a CCD corner holding the ten traces keeps the test fast
    po.npix_y = 1400;
    sc.psf = perfex::psf::make_synthetic_psf(po);
    const perfex::extract::ExtractionOptions o = scene_options();
    for (int i = -sc.margin; i < 100 + sc.margin; ++i) sc.truth_wave.push_back(o.wmin + 0.8 * i);
    sc.truth_photons = perfex::extract::make_test_spectra(o.nspec, sc.truth_wave, 7u);
    const perfex::psf::GaussHermitePsf<Kokkos::HostSpace> dpsf(sc.psf);
    sc.image = perfex::extract::simulate_image(Kokkos::DefaultHostExecutionSpace(), dpsf, 0,
                                               o.nspec, sc.truth_wave, sc.truth_photons, 3.0, 11u)
                   .ccd;
    return sc;
  }();
  return s;
}

template <class ExecSpace>
perfex::extract::Frame extract(const perfex::extract::CcdImage& image,
                               const perfex::extract::ExtractionOptions& o = scene_options()) {
  return perfex::extract::extract_frame(ExecSpace(), scene().psf, image, o);
}

}  // namespace perfex_extract_test
