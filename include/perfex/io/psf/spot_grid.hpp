#pragma once
// Reading and writing SPOTGRID PSF files (host only: link perfex::io), specter's layout: HDUs by
// EXTNAME XCOEFF (primary; keywords PSFTYPE, NPIX_X, NPIX_Y, NSPEC, CCDPIXSZ, PIXSIZE, optional
// PSFERR; WAVEMIN/WAVEMAX of the x trace), YCOEFF, SPOTS ([npos][nwave][ny][nx]), FIBERPOS
// ([nfib]), SPOTPOS ([npos]) and SPOTWAVE ([nwave]); any BITPIX, read as double.
#include <string>
#include <vector>

#include <perfex/io/fits.hpp>
#include <perfex/io/psf/read.hpp>
#include <perfex/psf/spot_grid/data.hpp>

namespace perfex {
namespace io {

inline psf::SpotGridPsfData read_spot_grid_psf(const std::string& path) {
  FitsFile file = FitsFile::open(path);
  psf::SpotGridPsfData d;
  d.source = path;
  d.xtrace = detail::read_trace_hdu(file, "XCOEFF");
  d.nfib = d.xtrace.nfib();
  file.move_to_index(0);
  const long long nspec = file.read_key<long long>("NSPEC");
  if (nspec != d.nfib)
    file.fail(0, "keyword 'NSPEC' = " + std::to_string(nspec) + " but XCOEFF has " +
                     std::to_string(d.nfib) + " fibres");
  d.npix_x = file.read_key<int>("NPIX_X");
  d.npix_y = file.read_key<int>("NPIX_Y");
  d.psferr = file.read_key_optional<double>("PSFERR").value_or(0.01);
  d.ccd_pixel_size = file.read_key<double>("CCDPIXSZ");
  d.spot_pixel_size = file.read_key<double>("PIXSIZE");
  d.ytrace = detail::read_trace_hdu(file, "YCOEFF");
  auto vector = [&](const char* extname, std::size_t rank) {
    file.move_to(extname);
    if (file.hdu_type() != HduType::image) file.fail(0, "is not an image HDU");
    if (file.image_axes().size() != rank)
      file.fail(0, "expected " + std::to_string(rank) + " axes, found " +
                       std::to_string(file.image_axes().size()));
    return file.read_image<double>();
  };
  d.fiberpos = vector("FIBERPOS", 1).data;
  d.spotpos = vector("SPOTPOS", 1).data;
  d.spotwave = vector("SPOTWAVE", 1).data;
  auto spots = vector("SPOTS", 4);
  if (spots.axes[3] != static_cast<long>(d.spotpos.size()) ||
      spots.axes[2] != static_cast<long>(d.spotwave.size()))
    file.fail(0, "[" + std::to_string(spots.axes[3]) + "][" + std::to_string(spots.axes[2]) +
                     "] samples, but SPOTPOS has " + std::to_string(d.spotpos.size()) +
                     " and SPOTWAVE " + std::to_string(d.spotwave.size()));
  d.spot_nx = static_cast<int>(spots.axes[0]);
  d.spot_ny = static_cast<int>(spots.axes[1]);
  d.spots = std::move(spots.data);
  d.validate();
  return d;
}

inline void write_psf(const std::string& path, const psf::SpotGridPsfData& d) {
  d.validate();
  FitsFile file = FitsFile::create(path);
  auto trace = [&](const char* name, const psf::LegendreTraceSet& t) {
    file.write_image<double>(name, {static_cast<long>(t.ncoeff), static_cast<long>(d.nfib)},
                             t.coeff);
    file.write_key("WAVEMIN", t.wavemin);
    file.write_key("WAVEMAX", t.wavemax);
  };
  trace("XCOEFF", d.xtrace);
  file.write_key("PSFTYPE", "SPOTGRID");
  file.write_key("NPIX_X", d.npix_x);
  file.write_key("NPIX_Y", d.npix_y);
  file.write_key("NSPEC", d.nfib);
  file.write_key("CCDPIXSZ", d.ccd_pixel_size);
  file.write_key("PIXSIZE", d.spot_pixel_size);
  file.write_key("PSFERR", d.psferr);
  trace("YCOEFF", d.ytrace);
  const long npos = static_cast<long>(d.spotpos.size()), nw = static_cast<long>(d.spotwave.size());
  file.write_image<double>("SPOTS", {d.spot_nx, d.spot_ny, nw, npos}, d.spots);
  file.write_image<double>("FIBERPOS", {static_cast<long>(d.nfib)}, d.fiberpos);
  file.write_image<double>("SPOTPOS", {npos}, d.spotpos);
  file.write_image<double>("SPOTWAVE", {nw}, d.spotwave);
  file.close();
}

template <>
struct PsfFile<psf::SpotGridPsfData> {
  static constexpr const char* layouts = "SPOTGRID";
  static psf::SpotGridPsfData read(const std::string& path) { return read_spot_grid_psf(path); }
};

}  // namespace io
}  // namespace perfex
