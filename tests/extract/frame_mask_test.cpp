// The frame mask: NODATA on every bin without a measurement (ivar 0), BAD2DFIT (and NODATA)
// on the bins of failed patches, on a hand-made frame and on a real extraction in which every
// patch fails.
#include "perfex_test.hpp"

#include <perfex/extract/extract_frame.hpp>
#include <perfex/psf/synthetic.hpp>

#include <algorithm>
#include <vector>

using perfex::extract::Frame;

TEST_CASE("frame mask: NODATA where ivar is 0, BAD2DFIT on failed patches", "[extract]") {
  Frame fr;
  fr.nspec = 3;
  fr.nwave = 6;
  const std::size_t n = 18;
  fr.flux.assign(n, 1.0);
  fr.ivar.assign(n, 2.0);
  fr.chi2pix.assign(n, 1.0);
  fr.pixmask_fraction.assign(n, 0.0);
  fr.ivar[fr.index(0, 1)] = 0.0;
  fr.ivar[fr.index(2, 5)] = 0.0;
  fr.failed_bins.push_back({1, 2, 3, 2});  // fibres 1-2, wavelengths 3-4
  fr.failed_bins.push_back({2, 5, 5, 9});  // clipped to the frame
  perfex::extract::set_frame_mask(fr);
  using perfex::extract::bad2dfit;
  using perfex::extract::nodata;
  for (int f = 0; f < 3; ++f)
    for (int k = 0; k < 6; ++k) {
      std::uint32_t expected = 0;
      if ((f == 0 && k == 1) || (f == 2 && k == 5)) expected = nodata;
      if (f >= 1 && (k == 3 || k == 4)) expected = bad2dfit | nodata;
      if (f == 2 && k == 5) expected = bad2dfit | nodata;
      INFO("fibre " << f << ", wavelength " << k);
      CHECK(fr.mask[fr.index(f, k)] == expected);
    }
  CHECK(nodata == 256u);  // desispec.maskbits.specmask.NODATA
  CHECK(bad2dfit == 128u);
}

PERFEX_BACKEND_TEST_CASE("frame mask: a run whose every patch fails is all NODATA | BAD2DFIT",
                         "[extract]") {
  PERFEX_ONLY_SELECTED_BACKEND();
  perfex::psf::SyntheticPsfOptions po;
  po.nfib = 5;
  po.bundlesize = 5;
  po.npix_x = 200;
  po.npix_y = 1100;
  po.y_last = 1000.0;
  const auto psf = perfex::psf::make_synthetic_psf(po);
  perfex::extract::CcdImage img;
  img.nrows = po.npix_y;
  img.ncols = po.npix_x;
  img.pixels.assign(static_cast<std::size_t>(img.nrows) * img.ncols, 10.0);
  img.ivar.assign(img.pixels.size(), 0.1);
  perfex::extract::ExtractionOptions o;
  o.wmin = 6000.0;
  o.wmax = 6040.0;
  o.nspec = 5;
  o.bundlesize = 5;
  o.nsubbundles = 1;

  const Frame good = perfex::extract::extract_frame(TestType(), psf, img, o);
  REQUIRE(good.failed_patches == 0);
  CHECK(std::none_of(good.mask.begin(), good.mask.end(),
                     [](std::uint32_t m) { return (m & perfex::extract::nodata) != 0; }));

  o.regularize = 1e300;  // every normal matrix overflows
  const Frame bad = perfex::extract::extract_frame(TestType(), psf, img, o);
  CHECK(bad.failed_patches == bad.npatches);
  CHECK(bad.failed_bins.size() == static_cast<std::size_t>(bad.npatches));
  CHECK(std::all_of(bad.mask.begin(), bad.mask.end(), [](std::uint32_t m) {
    return (m & (perfex::extract::nodata | perfex::extract::bad2dfit)) ==
           (perfex::extract::nodata | perfex::extract::bad2dfit);
  }));
}
