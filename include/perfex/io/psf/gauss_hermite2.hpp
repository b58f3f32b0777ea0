#pragma once
// Reading and writing GAUSS-HERMITE2 PSF files (host only: link perfex::io): the older specex
// layout of GAUSS-HERMITE PSFVER 1-2 (io/psf/gauss_hermite.hpp), one table in HDU 1, with the
// second core's degrees GHDEGX2/GHDEGY2 among its keywords.
#include <string>

#include <perfex/io/fits.hpp>
#include <perfex/io/psf/gauss_hermite.hpp>
#include <perfex/io/psf/read.hpp>
#include <perfex/psf/gauss_hermite2/data.hpp>

namespace perfex {
namespace io {

// A GAUSS-HERMITE2 PSF file (the older specex table in HDU 1, keywords GHDEGX2/GHDEGY2 too).
inline psf::GaussHermite2PsfData read_gauss_hermite2_psf(const std::string& path) {
  FitsFile file = FitsFile::open(path);
  const detail::PsfKind kind = detail::psf_kind(file);
  psf::GaussHermite2PsfData d;
  d.gh.source = path;
  detail::read_row_table(file, d.gh, psf::GaussHermite2PsfData::psftype, kind.version);
  d.ghdegx2 = detail::read_int_key(file, "GHDEGX2");
  d.ghdegy2 = detail::read_int_key(file, "GHDEGY2");
  d.validate();
  return d;
}

// GAUSS-HERMITE2 in its (the older specex) layout.
inline void write_psf(const std::string& path, const psf::GaussHermite2PsfData& d) {
  d.validate();
  detail::write_psf_rows(path, d.gh, "GAUSS-HERMITE2", d.ghdegx2, d.ghdegy2);
}

template <>
struct PsfFile<psf::GaussHermite2PsfData> {
  static constexpr const char* layouts = "GAUSS-HERMITE2";
  static psf::GaussHermite2PsfData read(const std::string& path) {
    return read_gauss_hermite2_psf(path);
  }
};

}  // namespace io
}  // namespace perfex
