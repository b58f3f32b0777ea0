// Frame extraction against the Python peers' outputs on the simulated DESI r0 images:
// gpu_specter to near round-off, specter to its own criterion. The golden data in the
// repository (tests/data: 10 fibres x 500 wavelengths of the clean image, and gpu_specter's
// model of them) are never skipped; the whole reference frames (../shared/data and its README:
// 50 fibres x 1251 wavelengths, clean and masked) are checked where that folder is.
#include "perfex_test.hpp"

#ifdef PERFEX_TEST_HAVE_IO
#include <perfex/extract/extract_frame.hpp>
#include <perfex/io/fits.hpp>
#include <perfex/io/image_fits.hpp>
#include <perfex/io/psf_files.hpp>

#include <algorithm>
#include <cmath>

namespace {

struct Reference {
  std::vector<double> flux, ivar, resolution, chi2pix, pixmask;
};

Reference read_reference(const std::string& path) {
  perfex::io::FitsFile f = perfex::io::FitsFile::open(path);
  Reference r;
  r.flux = f.read_image<double>("FLUX").data;
  r.ivar = f.read_image<double>("IVAR").data;
  r.resolution = f.read_image<double>("RESOLUTION").data;
  r.chi2pix = f.read_image<double>("CHI2PIX").data;
  r.pixmask = f.read_image<double>("PIXMASK_FRACTION").data;
  return r;
}

perfex::extract::ExtractionOptions reference_options() {
  perfex::extract::ExtractionOptions o;
  o.wmin = 5760.0;
  o.wmax = 6760.0;
  o.dw = 0.8;
  o.specmin = 0;
  o.nspec = 50;
  o.psferr = 0.01;
  return o;
}

// The golden data's request (tests/data/README.md): fibres 0-9, 5760-6159.2 A.
perfex::extract::ExtractionOptions golden_options() {
  perfex::extract::ExtractionOptions o = reference_options();
  o.wmax = 6159.2;
  o.nspec = 10;
  o.nsubbundles = 2;
  return o;
}

double rel(double a, double b) { return std::abs(a - b) / std::max(std::abs(b), 1e-300); }

// The frame against gpu_specter's (to near round-off) and specter's (its own criterion).
void check_against_peers(const perfex::extract::Frame& frame, const Reference& gs,
                         const Reference& sp) {
  REQUIRE(gs.flux.size() == frame.flux.size());
  REQUIRE(gs.resolution.size() == frame.resolution.size());
  double max_pull = 0, max_ivar = 0, max_res = 0, max_chi = 0, max_pm = 0;
  for (std::size_t i = 0; i < gs.flux.size(); ++i) {
    max_pull = std::max(max_pull, std::abs(frame.flux[i] - gs.flux[i]) * std::sqrt(gs.ivar[i]));
    max_ivar = std::max(max_ivar, rel(frame.ivar[i], gs.ivar[i]));
    max_chi = std::max(max_chi, rel(frame.chi2pix[i], gs.chi2pix[i]));
    max_pm = std::max(max_pm, std::abs(frame.pixmask_fraction[i] - gs.pixmask[i]) /
                                  std::max(std::abs(gs.pixmask[i]), 1e-3));
  }
  for (std::size_t i = 0; i < gs.resolution.size(); ++i)
    max_res = std::max(max_res, std::abs(frame.resolution[i] - gs.resolution[i]));
  WARN("max |dflux|*sqrt(ivar) " << max_pull << ", ivar rel " << max_ivar << ", resolution abs "
                                 << max_res << ", chi2pix rel " << max_chi
                                 << ", pixmask_fraction rel " << max_pm);
  CHECK(max_pull <= 1e-6);
  CHECK(max_ivar <= 1e-8);
  CHECK(max_res <= 1e-9);
  CHECK(max_chi <= 1e-6);
  CHECK(max_pm <= 1e-6);

  REQUIRE(sp.flux.size() == frame.flux.size());
  std::size_t below = 0;
  double sp_max = 0;
  for (std::size_t i = 0; i < sp.flux.size(); ++i) {
    const double pull =
        std::abs(frame.flux[i] - sp.flux[i]) / std::sqrt(1.0 / frame.ivar[i] + 1.0 / sp.ivar[i]);
    below += pull < 0.01 ? 1 : 0;
    sp_max = std::max(sp_max, pull);
  }
  const double fraction = double(below) / double(sp.flux.size());
  WARN("vs specter: fraction of pulls < 0.01 = " << fraction << ", max pull " << sp_max);
  CHECK(fraction >= 0.99);
  CHECK(sp_max < 0.05);
}

}  // namespace

PERFEX_BACKEND_TEST_CASE("extraction reproduces gpu_specter on the golden data",
                         "[extract][reference]") {
  PERFEX_ONLY_SELECTED_BACKEND();
  const std::string dir = perfex_test::golden_data_dir();
  const auto psf = perfex::io::read_psf(perfex_test::golden_psf());
  const auto pre = perfex::io::read_preproc(dir + "/preproc-r0-small.fits");
  auto options = golden_options();
  options.model_image = true;
  const auto frame = perfex::extract::extract_frame(TestType(), psf, pre.ccd, options);
  REQUIRE(frame.nspec == 10);
  REQUIRE(frame.nwave == 500);
  REQUIRE(frame.npatches == 20);
  CHECK(frame.failed_patches == 0);
  check_against_peers(frame, read_reference(dir + "/ref-gpuspecter-small.fits"),
                      read_reference(dir + "/ref-specter-small.fits"));
  // gpu_specter's model where no other fibre or wavelength of its frame reaches.
  perfex::io::FitsFile f = perfex::io::FitsFile::open(dir + "/ref-gpuspecter-small-model.fits");
  const auto model = f.read_image<double>("MODEL");
  const auto y0 = f.read_key_optional<long>("Y0"), x0 = f.read_key_optional<long>("X0");
  REQUIRE((y0 && x0));
  const auto rows = static_cast<int>(model.axes[1]), cols = static_cast<int>(model.axes[0]);
  double max_diff = 0, max_ref = 0;
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) {
      const double ref = model.data[static_cast<std::size_t>(r) * cols + c];
      const double got =
          frame.model[static_cast<std::size_t>(*y0 + r) * frame.model_cols + *x0 + c];
      max_diff = std::max(max_diff, std::abs(got - ref));
      max_ref = std::max(max_ref, std::abs(ref));
    }
  CHECK(max_ref > 100);
  CHECK(max_diff <= 1e-9 * max_ref);
}

PERFEX_BACKEND_TEST_CASE("extraction reproduces gpu_specter and agrees with specter",
                         "[extract][reference][slow]") {
  PERFEX_ONLY_SELECTED_BACKEND();
  const std::string dir = perfex_test::shared_data_dir("gpu_specter/specter frame comparison");
  if (dir.empty()) return;
  const auto psf = perfex::io::read_gauss_hermite_psf(dir + "/psf-r0-00051060.fits");
  for (const std::string image : {"sim-r0-b0-1", "sim-r0-b0-1-masked"}) {
    INFO("image " << image);
    const auto pre = perfex::io::read_preproc(dir + "/" + image + ".fits.gz");
    const auto frame =
        perfex::extract::extract_frame(TestType(), psf, pre.ccd, reference_options());
    REQUIRE(frame.nspec == 50);
    REQUIRE(frame.nwave == 1251);
    REQUIRE(frame.npatches == 260);
    CHECK(frame.failed_patches == 0);

    check_against_peers(frame, read_reference(dir + "/ref-gpuspecter-" + image + ".fits"),
                        read_reference(dir + "/ref-specter-" + image + ".fits"));
  }
}
#endif
