#pragma once
// Reading and writing specex GaussHermite PSF files, PSFVER 3 layout: HDUs by EXTNAME XTRACE
// (image [nfib][ncoeff], own WAVEMIN/WAVEMAX), YTRACE (same) and PSF (binary table: PARAM
// names, COEFF [nfib][LEGDEG+1] per row, keywords HSIZEX/HSIZEY, GHDEGX/GHDEGY, LEGDEG,
// NPIX_X/NPIX_Y, FIBERMIN/FIBERMAX, WAVEMIN/WAVEMAX, optional PSFERR defaulting to 0.01).
// Parameters are looked up by name, never by row. read_psf checks what only the file can get
// wrong (HDU kinds and shapes, keywords, the PSF type, the COEFF layout, FIBERMIN/FIBERMAX),
// then GaussHermitePsfData::validate() the content (degrees, domains, finite coefficients,
// parameters). Every problem is a perfex::Error naming the file and the HDU, keyword or
// parameter at fault.
#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include <perfex/error.hpp>
#include <perfex/io/fits.hpp>
#include <perfex/psf/psf_data.hpp>

namespace perfex {
namespace io {

namespace detail {

inline psf::LegendreTraceSet read_trace_hdu(FitsFile& file, const std::string& extname) {
  file.move_to(extname);
  if (file.hdu_type() != HduType::image) file.fail(0, "is not an image HDU");
  const std::vector<long> axes = file.image_axes();
  if (axes.size() != 2)
    file.fail(0, "expected a 2-D [nfib][ncoeff] coefficient image, found " +
                     std::to_string(axes.size()) + " axes");
  if (axes[0] < 1 || axes[1] < 1)
    file.fail(0, "empty coefficient image: NAXIS1 (coefficients) = " + std::to_string(axes[0]) +
                     ", NAXIS2 (fibres) = " + std::to_string(axes[1]));
  auto img = file.read_image<double>();
  psf::LegendreTraceSet t;
  t.wavemin = file.read_key<double>("WAVEMIN");
  t.wavemax = file.read_key<double>("WAVEMAX");
  t.ncoeff = static_cast<int>(img.axes[0]);
  t.coeff = std::move(img.data);
  return t;
}

inline int read_int_key(FitsFile& file, const std::string& name) {
  const long long v = file.read_key<long long>(name);
  if (v < -1000000000LL || v > 1000000000LL) file.fail(0, "keyword '" + name + "' out of range");
  return static_cast<int>(v);
}

// PSFTYPE / PSFVER of the current HDU, where present: GAUSS-HERMITE, version 3 only (a
// "PSFVER 4" layout is unknown). Returns whether PSFVER is stated.
inline bool check_psf_type(FitsFile& file) {
  if (auto type = file.read_key_optional<std::string>("PSFTYPE")) {
    if (*type != "GAUSS-HERMITE") file.fail(0, "PSFTYPE '" + *type + "' is not GAUSS-HERMITE");
  }
  const auto ver = file.read_key_optional<std::string>("PSFVER");
  if (!ver) return false;
  char* end = nullptr;
  const double v = std::strtod(ver->c_str(), &end);
  if (end == ver->c_str() || *end != '\0' || v != 3)
    file.fail(0, "keyword 'PSFVER' = '" + *ver +
                     "' unsupported: perfex reads specex GaussHermite PSFVER 3 files");
  return true;
}

}  // namespace detail

inline psf::GaussHermitePsfData read_psf(const std::string& path) {
  FitsFile file = FitsFile::open(path);
  psf::GaussHermitePsfData d;
  d.source = path;

  // PSFVER 3 stated in the primary HDU and/or the PSF HDU (specter refuses a file without).
  file.move_to_index(0);
  bool version_stated = detail::check_psf_type(file);
  d.xtrace = detail::read_trace_hdu(file, "XTRACE");
  d.ytrace = detail::read_trace_hdu(file, "YTRACE");
  // validate() checks that YTRACE has as many fibres.
  d.nfib = static_cast<int>(d.xtrace.coeff.size() / d.xtrace.ncoeff);

  file.move_to("PSF");
  if (file.hdu_type() != HduType::binary_table) file.fail(0, "is not a binary table");
  version_stated = detail::check_psf_type(file) || version_stated;
  if (!version_stated)
    file.fail(0,
              "no keyword 'PSFVER' (here or in the primary HDU): perfex reads specex "
              "GaussHermite PSFVER 3 files, which state it");
  d.hsizex = detail::read_int_key(file, "HSIZEX");
  d.hsizey = detail::read_int_key(file, "HSIZEY");
  d.ghdegx = detail::read_int_key(file, "GHDEGX");
  d.ghdegy = detail::read_int_key(file, "GHDEGY");
  d.legdeg = detail::read_int_key(file, "LEGDEG");
  d.npix_x = detail::read_int_key(file, "NPIX_X");
  d.npix_y = detail::read_int_key(file, "NPIX_Y");
  d.wavemin = file.read_key<double>("WAVEMIN");
  d.wavemax = file.read_key<double>("WAVEMAX");
  d.psferr = file.read_key_optional<double>("PSFERR").value_or(0.01);
  d.fibermin = 0;
  if (auto fmin = file.read_key_optional<long long>("FIBERMIN"))
    d.fibermin = static_cast<int>(*fmin);
  if (auto fmax = file.read_key_optional<long long>("FIBERMAX")) {
    const long long n = *fmax - d.fibermin + 1;
    if (n != d.nfib) {
      file.fail(0, "FIBERMIN/FIBERMAX = " + std::to_string(d.fibermin) + "/" +
                       std::to_string(*fmax) + " say " + std::to_string(n) +
                       " fibres but XTRACE/YTRACE have " + std::to_string(d.nfib));
    }
  }

  d.param_names = file.read_column_strings("PARAM");
  // validate() checks COEFF's size; the file's TDIM, where present, must say [nfib][LEGDEG+1].
  const std::vector<long> dims = file.column_dims("COEFF");
  if (dims.size() == 2 && (dims[0] != d.ncoeff() || dims[1] != d.nfib)) {
    file.fail(0, "column 'COEFF' TDIM (" + std::to_string(dims[0]) + "," + std::to_string(dims[1]) +
                     ") does not match LEGDEG " + std::to_string(d.legdeg) + " + 1 x " +
                     std::to_string(d.nfib) + " fibres");
  }
  d.coeff = file.read_column<double>("COEFF");
  d.validate();  // messages name the file (d.source) and the HDU, keyword or parameter
  return d;
}

inline void write_psf(const std::string& path, const psf::GaussHermitePsfData& d) {
  d.validate();
  FitsFile file = FitsFile::create(path);
  auto write_trace = [&](const char* name, const psf::LegendreTraceSet& t) {
    file.write_image<double>(name, {static_cast<long>(t.ncoeff), static_cast<long>(d.nfib)},
                             t.coeff);
    if (std::string(name) == "XTRACE") {
      file.write_key("PSFTYPE", "GAUSS-HERMITE");
      file.write_key("PSFVER", 3);
    }
    file.write_key("FIBERMIN", d.fibermin);
    file.write_key("FIBERMAX", d.fibermin + d.nfib - 1);
    file.write_key("WAVEMIN", t.wavemin);
    file.write_key("WAVEMAX", t.wavemax);
  };
  write_trace("XTRACE", d.xtrace);
  write_trace("YTRACE", d.ytrace);

  std::size_t width = 8;
  for (const auto& n : d.param_names) width = std::max(width, n.size());
  const long per_row = static_cast<long>(d.nfib) * d.ncoeff();
  file.create_table(
      "PSF", static_cast<long>(d.param_names.size()),
      {{"PARAM", std::to_string(width) + "A", "", {}},
       {"COEFF", std::to_string(per_row) + "D", "", {static_cast<long>(d.ncoeff()), d.nfib}}});
  file.write_column_strings("PARAM", d.param_names);
  file.write_column<double>("COEFF", d.coeff);
  file.write_key("PSFTYPE", "GAUSS-HERMITE");
  file.write_key("PSFVER", "3");
  file.write_key("NPIX_X", d.npix_x);
  file.write_key("NPIX_Y", d.npix_y);
  file.write_key("HSIZEX", d.hsizex);
  file.write_key("HSIZEY", d.hsizey);
  file.write_key("FIBERMIN", d.fibermin);
  file.write_key("FIBERMAX", d.fibermin + d.nfib - 1);
  file.write_key("NPARAMS", d.nparam());
  file.write_key("LEGDEG", d.legdeg);
  file.write_key("GHDEGX", d.ghdegx);
  file.write_key("GHDEGY", d.ghdegy);
  file.write_key("WAVEMIN", d.wavemin);
  file.write_key("WAVEMAX", d.wavemax);
  file.write_key("PSFERR", d.psferr);
  if (!d.source.empty()) file.write_key("IN_PSF", d.source);
  file.close();
}

}  // namespace io
}  // namespace perfex
