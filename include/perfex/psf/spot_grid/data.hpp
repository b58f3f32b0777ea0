#pragma once
// Host description of a SPOTGRID PSF (specter's SpotGridPSF; desimodel's simulation PSFs):
// Legendre traces, and spots sampled on a finer pixel grid at a grid of slit positions ×
// wavelengths; a fibre's spot at λ is the bilinear interpolation of the four neighbouring
// samples (extrapolated linearly beyond the grid), shifted to the trace's sub-pixel position
// and summed into CCD pixels (device model: psf/spot_grid/device.hpp).
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <perfex/error.hpp>
#include <perfex/psf/data.hpp>

namespace perfex {
namespace psf {

constexpr int kMaxSpotGridBox = 64;  // CCD pixels along each side of a SPOTGRID spot box

template <class MemorySpace>
class SpotGridPsf;

struct SpotGridPsfData {
  static constexpr const char* psftype = "SPOTGRID";
  template <class MemorySpace>
  using Model = SpotGridPsf<MemorySpace>;  // its model, psf/spot_grid/model.hpp
  std::string source;                      // file it came from ("" when built in memory)
  int nfib = 0, npix_x = 0, npix_y = 0;
  double psferr = 0.01;             // PSFERR, 0.01 when absent
  LegendreTraceSet xtrace, ytrace;  // XCOEFF, YCOEFF
  std::vector<double> fiberpos;     // [nfib] slit position of each fibre (FIBERPOS)
  std::vector<double> spotpos;      // [npos] slit positions of the samples, increasing
  std::vector<double> spotwave;     // [nwave] wavelengths of the samples, increasing
  int spot_ny = 0, spot_nx = 0;     // a sample's size in spot pixels
  std::vector<double> spots;        // [npos][nwave][spot_ny][spot_nx] (SPOTS)
  double ccd_pixel_size = 0;        // CCDPIXSZ (mm)
  double spot_pixel_size = 0;       // PIXSIZE (mm)

  // Its named fields (psf/data.hpp, FieldAxis): a sample's size is the spots' array's.
  template <class V>
  void fields(V& v) {
    v.file("source", source);
    v.value("npix_x", npix_x);
    v.value("npix_y", npix_y);
    v.value("psferr", psferr);
    trace_fields(v, xtrace, ytrace, nfib);
    v.array("fiberpos", fiberpos, {});
    v.array("spotpos", spotpos, {});
    v.array("spotwave", spotwave, {});
    v.array("spots", spots,
            {{"npos", static_cast<int>(spotpos.size())},
             {"nwave", static_cast<int>(spotwave.size())},
             {"ny", spot_ny, &spot_ny},
             {"nx", spot_nx, &spot_nx}});
    v.value("ccd_pixel_size", ccd_pixel_size);
    v.value("spot_pixel_size", spot_pixel_size);
  }

  // Spot pixels per CCD pixel, along each axis (specter truncates the ratio).
  int rebin() const {
    return spot_pixel_size > 0 ? static_cast<int>(ccd_pixel_size / spot_pixel_size) : 0;
  }
  int box_rows() const { return rebin() > 0 ? spot_ny / rebin() + 1 : 0; }
  int box_cols() const { return rebin() > 0 ? spot_nx / rebin() + 1 : 0; }
  std::string label() const { return psf_label(source); }

  const LegendreTraceSet& rows() const { return ytrace; }     // y(λ): CCD rows
  const LegendreTraceSet& columns() const { return xtrace; }  // x(λ): CCD columns
  PsfSummary summary() const {
    const double w0 = std::max(xtrace.wavemin, ytrace.wavemin);
    const double w1 = std::min(xtrace.wavemax, ytrace.wavemax);
    return {psftype, source, nfib, npix_x, npix_y, box_rows(), box_cols(), psferr, w0, w1, w0, w1};
  }
  // The samples are interpolated (and extrapolated linearly) anywhere: nothing to check.
  void check_over(double, double) const {}

  void validate() const {
    const std::string who = label();
    auto fail = [&](const std::string& hdu, const std::string& what) {
      fail_in_hdu(who, "HDU '" + hdu + "'", what);
    };
    if (nfib <= 0) fail("XCOEFF", "no fibres");
    if (npix_x <= 0 || npix_y <= 0)
      fail("XCOEFF", "keywords NPIX_X/NPIX_Y = " + std::to_string(npix_x) + "/" +
                         std::to_string(npix_y) + " not positive");
    if (!(psferr >= 0) || !std::isfinite(psferr))
      fail("XCOEFF", "keyword PSFERR = " + std::to_string(psferr) + " invalid");
    xtrace.check(who, "HDU 'XCOEFF'", nfib);
    ytrace.check(who, "HDU 'YCOEFF'", nfib);
    if (!(ccd_pixel_size > 0) || !(spot_pixel_size > 0) || !std::isfinite(ccd_pixel_size) ||
        rebin() < 1)
      fail("XCOEFF", "keywords CCDPIXSZ/PIXSIZE = " + std::to_string(ccd_pixel_size) + "/" +
                         std::to_string(spot_pixel_size) +
                         " do not give a whole number >= 1 of spot pixels per CCD pixel");
    if (spot_ny < 1 || spot_nx < 1 || spot_ny % rebin() != 0 || spot_nx % rebin() != 0)
      fail("SPOTS", std::to_string(spot_ny) + " x " + std::to_string(spot_nx) +
                        " spot pixels: each side must be a multiple of " + std::to_string(rebin()) +
                        " (CCDPIXSZ/PIXSIZE)");
    if (box_rows() > kMaxSpotGridBox || box_cols() > kMaxSpotGridBox)
      fail("SPOTS", "spots of " + std::to_string(box_rows()) + " x " + std::to_string(box_cols()) +
                        " CCD pixels (at most " + std::to_string(kMaxSpotGridBox) + " supported)");
    auto check_axis = [&](const char* hdu, const std::vector<double>& v) {
      if (v.size() < 2) fail(hdu, "needs at least 2 samples, found " + std::to_string(v.size()));
      for (std::size_t i = 0; i < v.size(); ++i)
        if (!std::isfinite(v[i]) || (i > 0 && !(v[i] > v[i - 1])))
          fail(hdu, "values must be finite and increasing (sample " + std::to_string(i) + ")");
    };
    check_axis("SPOTPOS", spotpos);
    check_axis("SPOTWAVE", spotwave);
    if (fiberpos.size() != static_cast<std::size_t>(nfib))
      fail("FIBERPOS",
           std::to_string(fiberpos.size()) + " values for " + std::to_string(nfib) + " fibres");
    for (double p : fiberpos)
      if (!std::isfinite(p)) fail("FIBERPOS", "a slit position is not finite");
    if (spots.size() != spotpos.size() * spotwave.size() * spot_ny * spot_nx)
      fail("SPOTS", std::to_string(spots.size()) + " values, expected [" +
                        std::to_string(spotpos.size()) + "][" + std::to_string(spotwave.size()) +
                        "][" + std::to_string(spot_ny) + "][" + std::to_string(spot_nx) + "]");
    for (double v : spots)
      if (!std::isfinite(v)) fail("SPOTS", "a spot pixel is not finite");
  }
};

}  // namespace psf
}  // namespace perfex
