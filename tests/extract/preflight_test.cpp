// Checks made before an extraction: fibres and wavelengths within the PSF, patch sizes clamped
// to the grid, the image the PSF's CCD, and the memory estimate.
#include "perfex_test.hpp"

#include <perfex/extract/preflight.hpp>
#include <perfex/extract/wavelength_grid.hpp>
#include <perfex/psf/synthetic.hpp>

using Catch::Contains;
using perfex::extract::ExtractionOptions;

namespace {

perfex::psf::GaussHermitePsfData twenty_fibres() {
  perfex::psf::SyntheticPsfOptions po;
  po.nfib = 20;
  return perfex::psf::make_synthetic_psf(po);
}

ExtractionOptions grid(double wmin, double wmax, double dw) {
  ExtractionOptions o;
  o.wmin = wmin;
  o.wmax = wmax;
  o.dw = dw;
  o.nspec = 5;
  return o;
}

}  // namespace

TEST_CASE("preflight: grid length without building the grid", "[extract]") {
  for (const auto& g : {grid(5760, 6760, 0.8), grid(5760, 5760, 0.8), grid(5543, 7827, 0.8),
                        grid(6000.1, 6000.9, 0.3)})
    CHECK(perfex::extract::wavelength_grid_length(g.wmin, g.wmax, g.dw) ==
          perfex::extract::make_wavelength_grid(g.wmin, g.wmax, g.dw).size());
  CHECK(perfex::extract::wavelength_grid_length(5760, 6760, 1e-6) == 1000000001.0);
}

TEST_CASE("preflight: fibres and wavelengths must be in the PSF", "[extract]") {
  const auto psf = twenty_fibres();
  auto o = grid(6000, 6040, 0.8);
  CHECK_NOTHROW(perfex::extract::check_fibres(o, psf));
  o.nspec = 25;
  CHECK_THROWS_WITH(perfex::extract::check_fibres(o, psf),
                    Contains("fibres 0-24 (specmin 0, nspec 25)") && Contains("20 fibres (0-19)"));
  o.specmin = 19;
  o.nspec = 5;
  CHECK_THROWS_WITH(perfex::extract::check_fibres(o, psf), Contains("fibres 19-23"));

  CHECK(perfex::extract::check_wavelength_grid(grid(6000, 6040, 0.8), psf).empty());
  CHECK_THROWS_WITH(perfex::extract::check_wavelength_grid(grid(1000, 2000, 0.8), psf),
                    Contains("entirely outside the PSF's domain 5543-7826"));
  CHECK_THROWS_WITH(perfex::extract::check_wavelength_grid(grid(8000, 9000, 0.8), psf),
                    Contains("entirely outside"));
  CHECK_THROWS_WITH(perfex::extract::check_wavelength_grid(grid(5760, 6760, 1e-6), psf),
                    Contains("1000000001 wavelengths (at most 16777216"));
  CHECK_THROWS_WITH(perfex::extract::check_wavelength_grid(grid(5760, 1e30, 0.8), psf),
                    Contains("1.25e+30 wavelengths"));
  // Partly outside: 54 of 76 bins below 5543 A.
  CHECK_THAT(perfex::extract::check_wavelength_grid(grid(5500, 5560, 0.8), psf),
             Contains("54 of the grid's 76 wavelengths lie outside"));
}

TEST_CASE("preflight: nwavestep and padding clamped to the grid, defaults kept", "[extract]") {
  auto o = grid(6000, 6040, 0.8);  // 51 bins
  CHECK(perfex::extract::fit_patches_to_grid(o).empty());
  o.nwavestep = 100000;
  o.wavepad_frac = 100;
  auto w = perfex::extract::fit_patches_to_grid(o);
  REQUIRE(w.size() == 2);
  CHECK(o.nwavestep == 51);
  CHECK(o.wavepad() == 51);
  CHECK_THAT(w[0], Contains("nwavestep 100000") && Contains("using 51"));
  CHECK_THAT(w[1], Contains("1010 bins per side") && Contains("using 51"));
  // A grid shorter than the defaults: the defaults stay (as gpu_specter runs them).
  auto tiny = grid(6000, 6008, 0.8);
  CHECK(perfex::extract::fit_patches_to_grid(tiny).empty());
  CHECK(tiny.nwavestep == 50);
  CHECK(tiny.wavepad() == 12);
  tiny.wavepad_frac = 3;
  CHECK(perfex::extract::fit_patches_to_grid(tiny).size() == 1);
  CHECK(tiny.wavepad() == 12);
  for (int limit = 12; limit < 200; ++limit) {  // exact for every clamped padding
    auto g = grid(6000, 6000 + 0.8 * (limit - 1), 0.8);
    g.wavepad_frac = 100;
    perfex::extract::fit_patches_to_grid(g);
    CHECK(g.wavepad() == limit);
  }
}

TEST_CASE("preflight: the padding widened to cover the PSF's spots, DESI's kept", "[extract]") {
  // DESI-like dispersion (~1.8 rows per A): 12 bins of 0.8 A span ~17 rows of 11-row spots.
  auto desi = grid(6000, 6200, 0.8);
  CHECK(perfex::extract::fit_padding_to_psf(desi, twenty_fibres()).empty());
  CHECK(desi.wavepad() == 12);
  // A quarter of that dispersion: 12 bins span ~4 rows; 1.25 spots need ~40 bins.
  perfex::psf::SyntheticPsfOptions po;
  po.nfib = 20;
  po.y_last = 1000;
  const auto compressed = perfex::psf::make_synthetic_psf(po);
  auto o = grid(6000, 6200, 0.8);
  const auto w = perfex::extract::fit_padding_to_psf(o, compressed);
  REQUIRE(w.size() == 1);
  CHECK(o.wavepad() >= 35);
  CHECK(o.wavepad_frac == 0.2);
  CHECK_THAT(w[0], Contains("wavelength padding of 12 bins") && Contains("11-row spots") &&
                       Contains("using " + std::to_string(o.wavepad()) + " bins"));
  // Through preflight, and a larger padding asked for is kept.
  auto big = grid(6000, 6200, 0.8);
  big.wavepad0 = 60;
  CHECK(perfex::extract::fit_padding_to_psf(big, compressed).empty());
  CHECK(big.wavepad0 == 60);
}

TEST_CASE("preflight: the image must be the PSF's CCD", "[extract]") {
  const auto psf = twenty_fibres();
  CHECK_NOTHROW(perfex::extract::check_image_size(psf, 4128, 4114));
  CHECK_THROWS_WITH(perfex::extract::check_image_size(psf, 4114, 4128),
                    Contains("4114 rows x 4128 columns") && Contains("transposed"));
  CHECK_THROWS_WITH(perfex::extract::check_image_size(psf, 2000, 4114),
                    Contains("NPIX_Y = 4128 rows"));
}

TEST_CASE("preflight: memory estimate and the whole check", "[extract]") {
  perfex::psf::SyntheticPsfOptions po;
  const auto psf = perfex::psf::make_synthetic_psf(po);  // 500 fibres, 4128 x 4114
  auto o = grid(5760, 7620, 0.8);
  o.nspec = 500;
  const auto s = perfex::extract::estimate_run_size(o, psf, 4128, 4114);
  CHECK(s.nwave == 2326);
  CHECK(s.bins() == 500.0 * 2326);
  CHECK(s.host_image == 24.0 * 4128 * 4114);
  CHECK(s.host_model == 0);
  CHECK(s.host_frame == s.bins() * (36 + 11 * 8 + 16 + 11 * 4));
  // The measured peak of a 500-fibre frame is ~0.9 GB (README benchmarks): same order.
  CHECK(s.host_bytes() > 0.8e9);
  CHECK(s.host_bytes() < 2e9);
  CHECK_THAT(perfex::extract::describe(s, false),
             Contains("500 fibres x 2326 wavelengths: about 1.") && Contains("GB of host memory"));
  o.model_image = true;
  CHECK(perfex::extract::estimate_run_size(o, psf, 4128, 4114).host_model == 16.0 * 4128 * 4114);
  CHECK(perfex::human_bytes(92e12) == "92 TB");
  CHECK(perfex::human_bytes(1.44e9) == "1.4 GB");

  auto bad = grid(6000, 6040, 0.8);
  bad.nwavestep = 500;
  CHECK(perfex::extract::preflight(bad, psf, 4128, 4114).size() == 1);
  CHECK(bad.nwavestep == 51);
  bad.nspec = 501;
  CHECK_THROWS_WITH(perfex::extract::preflight(bad, psf), Contains("the PSF has 500 fibres"));
  auto transposed = grid(6000, 6040, 0.8);
  CHECK_THROWS_WITH(perfex::extract::preflight(transposed, psf, 4114, 4128),
                    Contains("transposed"));
}
