// The real DESI PSF against gpu_specter's evaluation (tests/data/README.md, from the shared
// data's README §5): traces, every parameter, spots and corners at 7 fibres × 9 wavelengths
// (some outside the domains). The golden data are in the repository: never skipped.
#include "perfex_test.hpp"
#include "psf/psf_test_util.hpp"

#ifdef PERFEX_TEST_HAVE_IO
#include <cmath>

#include <perfex/io/fits.hpp>
#include <perfex/io/psf_files.hpp>
#include <perfex/psf/gauss_hermite/model.hpp>

using perfex_psf_test::Mem;

PERFEX_BACKEND_TEST_CASE("psf: golden values of psf-r0-00051060 (gpu_specter)", "[psf]") {
  PERFEX_ONLY_SELECTED_BACKEND();
  auto data = perfex::io::read_gauss_hermite_psf(perfex_test::golden_psf());
  perfex::io::FitsFile ref =
      perfex::io::FitsFile::open(perfex_test::golden_data_dir() + "/psf-eval-r0-00051060.fits");
  const auto fibers = ref.read_image<std::int32_t>("FIBERS").data;
  const auto waves = ref.read_image<double>("WAVELENGTHS").data;
  const auto X = ref.read_image<double>("X").data, Y = ref.read_image<double>("Y").data;
  const auto SX = ref.read_image<double>("GHSIGX").data, SY = ref.read_image<double>("GHSIGY").data;
  const auto GH = ref.read_image<double>("GH").data;
  const auto SPOTS = ref.read_image<double>("SPOTS").data;
  const auto XC = ref.read_image<std::int32_t>("XCORNER").data,
             YC = ref.read_image<std::int32_t>("YCORNER").data;
  ref.move_to("PARAMS");
  const int nfi = static_cast<int>(fibers.size()), K = static_cast<int>(waves.size());
  REQUIRE(nfi == 7);
  REQUIRE(K == 9);
  REQUIRE(SPOTS.size() == static_cast<std::size_t>(nfi) * K * 11 * 17);

  perfex::psf::GaussHermitePsf<Mem<TestType>> psf(data);
  double dxy = 0, dpar = 0, dspot = 0, dsum = 0;
  long corner_mismatch = 0;
  for (int i = 0; i < nfi; ++i) {
    auto r = perfex_psf_test::evaluate_all(TestType(), psf, fibers[i], 1, waves);
    auto rel = [](double a, double b) { return std::abs(a - b) / std::max(std::abs(b), 1e-300); };
    for (int k = 0; k < K; ++k) {
      const int ik = i * K + k;
      dxy = std::max({dxy, std::abs(r.x[k] - X[ik]), std::abs(r.y[k] - Y[ik])});
      dpar = std::max({dpar, rel(r.param(data.param_index("GHSIGX"), 0, k), SX[ik]),
                       rel(r.param(data.param_index("GHSIGY"), 0, k), SY[ik])});
      for (int a = 0; a < 7; ++a) {
        for (int b = 0; b < 7; ++b) {
          const double ref_ab = GH[((static_cast<std::size_t>(a) * 7 + b) * nfi + i) * K + k];
          const int p = data.param_index("GH-" + std::to_string(a) + "-" + std::to_string(b));
          dpar = std::max(dpar, rel(r.param(p, 0, k), ref_ab));
        }
      }
      if (r.xc[k] != XC[ik] || r.yc[k] != YC[ik]) ++corner_mismatch;
      double sum = 0;
      for (int p = 0; p < 11; ++p) {
        for (int q = 0; q < 17; ++q) {
          const double s = r.spot(0, k, p, q);
          sum += s;
          dspot = std::max(dspot,
                           std::abs(s - SPOTS[((static_cast<std::size_t>(ik)) * 11 + p) * 17 + q]));
        }
      }
      dsum = std::max(dsum, std::abs(sum - 1.0));
    }
  }
  // Remaining table parameters (TAIL*, BUNDLE, STATUS, CONT) from the PARAMS table.
  const auto pf = ref.read_column<std::int32_t>("FIBER");
  const auto pw = ref.read_column<double>("WAVELENGTH");
  REQUIRE(pf.size() == static_cast<std::size_t>(nfi * K));
  for (const char* name :
       {"TAILAMP", "TAILCORE", "TAILXSCA", "TAILYSCA", "TAILINDE", "BUNDLE", "STATUS", "CONT"}) {
    const auto col = ref.read_column<double>(name);
    for (int i = 0; i < nfi; ++i) {
      auto r = perfex_psf_test::evaluate_all(
          TestType(), psf, pf[i * K], 1,
          std::vector<double>(pw.begin() + i * K, pw.begin() + (i + 1) * K));
      for (int k = 0; k < K; ++k) {
        const double v = r.param(data.param_index(name), 0, k), e = col[i * K + k];
        dpar = std::max(dpar, e == 0 ? std::abs(v) : std::abs(v - e) / std::abs(e));
      }
    }
  }
  INFO("max |dx|,|dy| = " << dxy << " px; max param rel = " << dpar << "; max spot abs = " << dspot
                          << "; max |sum-1| = " << dsum);
  WARN("psf golden deviations: xy " << dxy << " px, params " << dpar << " rel, spots " << dspot
                                    << " abs, sum " << dsum);
  CHECK(dxy < 1e-9);
  CHECK(dpar < 1e-12);
  CHECK(dspot < 1e-12);
  CHECK(dsum < 1e-12);
  CHECK(corner_mismatch == 0);
}

PERFEX_BACKEND_TEST_CASE("psf: CCD coverage of the real PSF (specter's wavelength range)",
                         "[psf]") {
  PERFEX_ONLY_SELECTED_BACKEND();
  perfex::psf::GaussHermitePsf<Mem<TestType>> psf(
      perfex::io::read_gauss_hermite_psf(perfex_test::golden_psf()));
  auto cov = perfex::psf::wavelength_coverage(TestType(), psf, 0, 500);
  CHECK(cov.wmin[0] == Approx(5545.9).margin(0.1));
  CHECK(cov.wmax[0] == Approx(7735.6).margin(0.1));
  CHECK(cov.wmin[250] == Approx(5608.0).margin(0.1));
  CHECK(cov.wmax[250] == Approx(7801.1).margin(0.1));
  // The spec's union/intersection come from specter's fitted inverse; Newton is exact.
  CHECK(cov.wmin_all == Approx(5545.9).margin(0.3));
  CHECK(cov.wmax_all == Approx(7801.1).margin(0.3));
  CHECK(cov.wmin_common == Approx(5608.0).margin(0.3));
  CHECK(cov.wmax_common == Approx(7735.6).margin(0.3));
}
#endif
