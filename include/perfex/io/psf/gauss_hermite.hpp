#pragma once
// Reading and writing GAUSS-HERMITE PSF files (host only: link perfex::io), both layouts, the
// one chosen by PSFVER as specter's load_psf does:
//  * PSFVER 3 (specex): HDUs by EXTNAME XTRACE (image [nfib][ncoeff], own WAVEMIN/WAVEMAX),
//    YTRACE (same) and PSF (binary table: PARAM names, COEFF [nfib][LEGDEG+1] per row, keywords
//    HSIZEX/HSIZEY, GHDEGX/GHDEGY, LEGDEG, NPIX_X/NPIX_Y, FIBERMIN/FIBERMAX, WAVEMIN/WAVEMAX,
//    optional PSFERR defaulting to 0.01);
//  * PSFVER 1-2 (the older layout, also GAUSS-HERMITE2's): one binary table in HDU 1 with
//    columns PARAM, WAVEMIN, WAVEMAX (per row) and COEFF [nfib][ncoeff], the traces as rows X
//    and Y.
// Parameters are looked up by name, never by row. The reader checks what only the file can get
// wrong (HDU kinds and shapes, keywords, the PSF type, the COEFF layout, FIBERMIN/FIBERMAX),
// then the data's validate() the content (degrees, domains, finite coefficients, parameters).
// Every problem is a perfex::Error naming the file and the HDU, keyword or parameter at fault.
#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include <perfex/error.hpp>
#include <perfex/io/fits.hpp>
#include <perfex/io/psf/read.hpp>
#include <perfex/psf/gauss_hermite/data.hpp>

namespace perfex {
namespace io {

namespace detail {

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

// The PSF keywords of the current HDU (a table of parameters, one per row).
inline void read_gh_keys(FitsFile& file, psf::GaussHermitePsfData& d) {
  d.hsizex = read_int_key(file, "HSIZEX");
  d.hsizey = read_int_key(file, "HSIZEY");
  d.ghdegx = read_int_key(file, "GHDEGX");
  d.ghdegy = read_int_key(file, "GHDEGY");
  d.npix_x = read_int_key(file, "NPIX_X");
  d.npix_y = read_int_key(file, "NPIX_Y");
  d.psferr = file.read_key_optional<double>("PSFERR").value_or(0.01);
}

// The older specex table (HDU 1 of GAUSS-HERMITE PSFVER 1-2 and of GAUSS-HERMITE2): one row per
// parameter with its own WAVEMIN/WAVEMAX and COEFF [nfib][ncoeff]; rows X and Y are the traces.
// Fills the traces, the parameters (every other row, on their common domain), nfib and legdeg,
// and checks the table's PSFTYPE, where stated, against type.
inline void read_row_table(FitsFile& file, psf::GaussHermitePsfData& d, const std::string& type,
                           const std::string& version) {
  const std::string kind = type + " PSFVER " + version;
  file.move_to_index(1);
  if (file.hdu_type() != HduType::binary_table)
    file.fail(0, "is not a binary table, where a " + kind + " file keeps its parameters");
  // The messages name this table as the file has it (no HDU 'PSF', 'XTRACE' or 'YTRACE' here).
  const auto extname = file.read_key_optional<std::string>("EXTNAME");
  d.params_at = "HDU 1" + (extname ? " ('" + *extname + "')" : std::string());
  d.xtrace_at = d.params_at + ", row 'X'";
  d.ytrace_at = d.params_at + ", row 'Y'";
  const int fibermin = read_int_key(file, "FIBERMIN"), fibermax = read_int_key(file, "FIBERMAX");
  d.fibermin = fibermin;
  d.nfib = fibermax - fibermin + 1;
  if (d.nfib < 1 || d.nfib > 100000)
    file.fail(0, "FIBERMIN/FIBERMAX = " + std::to_string(fibermin) + "/" +
                     std::to_string(fibermax) + " give no valid fibre count");
  const std::vector<std::string> names = file.read_column_strings("PARAM");
  const std::vector<double> w0 = file.read_column<double>("WAVEMIN");
  const std::vector<double> w1 = file.read_column<double>("WAVEMAX");
  const long repeat = file.column_repeat("COEFF");
  const std::vector<long> dims = file.column_dims("COEFF");
  if (repeat % d.nfib != 0 || (dims.size() == 2 && dims[1] != d.nfib))
    file.fail(0, "column 'COEFF' holds " + std::to_string(repeat) + " values per row, not [" +
                     std::to_string(d.nfib) + " fibres][ncoeff] (FIBERMIN/FIBERMAX)");
  const int nc = static_cast<int>(repeat / d.nfib);
  if (nc < 1 || nc > psf::kMaxLegendreCoeffs)
    file.fail(0, "column 'COEFF': " + std::to_string(nc) + " coefficients per fibre (1.." +
                     std::to_string(psf::kMaxLegendreCoeffs) + " supported)");
  if (auto legdeg = read_int_key_optional(file, "LEGDEG"))
    if (*legdeg != nc - 1)
      file.fail(0, "keyword 'LEGDEG' = " + std::to_string(*legdeg) + " but column 'COEFF' has " +
                       std::to_string(nc) + " coefficients per fibre");
  const std::vector<double> coeff = file.read_column<double>("COEFF");
  const std::size_t per_row = static_cast<std::size_t>(d.nfib) * nc;
  d.legdeg = nc - 1;
  bool have_domain = false;
  for (std::size_t r = 0; r < names.size(); ++r) {
    const auto first = coeff.begin() + static_cast<std::ptrdiff_t>(r * per_row);
    if (names[r] == "X" || names[r] == "Y") {
      psf::LegendreTraceSet& t = names[r] == "X" ? d.xtrace : d.ytrace;
      t.wavemin = w0[r];
      t.wavemax = w1[r];
      t.ncoeff = nc;
      t.coeff.assign(first, first + static_cast<std::ptrdiff_t>(per_row));
      continue;
    }
    if (!have_domain) {
      d.wavemin = w0[r];
      d.wavemax = w1[r];
      have_domain = true;
    } else if (w0[r] != d.wavemin || w1[r] != d.wavemax) {
      file.fail(0, "parameter '" + names[r] + "' has WAVEMIN/WAVEMAX " + std::to_string(w0[r]) +
                       "/" + std::to_string(w1[r]) + ", parameter '" + d.param_names.front() +
                       "' " + std::to_string(d.wavemin) + "/" + std::to_string(d.wavemax) +
                       ": perfex needs one domain for all parameters");
    }
    d.param_names.push_back(names[r]);
    d.coeff.insert(d.coeff.end(), first, first + static_cast<std::ptrdiff_t>(per_row));
  }
  for (const char* trace : {"X", "Y"})
    if (std::find(names.begin(), names.end(), trace) == names.end())
      file.fail(0, std::string("column 'PARAM' has no row '") + trace + "' (the trace)");
  read_gh_keys(file, d);
  if (auto stated = file.read_key_optional<std::string>("PSFTYPE"))
    if (*stated != type) file.fail(0, "PSFTYPE '" + *stated + "' is not " + type);
}

// The older GAUSS-HERMITE layout (PSFVER 1-2).
inline psf::GaussHermitePsfData read_gauss_hermite_rows(FitsFile& file,
                                                        const std::string& version) {
  psf::GaussHermitePsfData d;
  d.source = file.path();
  read_row_table(file, d, psf::GaussHermitePsfData::psftype, version);
  d.validate();
  return d;
}

}  // namespace detail

// A GAUSS-HERMITE PSF file, either layout.
inline psf::GaussHermitePsfData read_gauss_hermite_psf(const std::string& path) {
  FitsFile file = FitsFile::open(path);
  // PSFVER 1-2 stated where specter reads it (the primary HDU, else HDU 1 of a file without a
  // 'PSF' HDU): the older layout.
  const detail::PsfKind kind = detail::psf_kind(file);
  const double version = detail::version_number(kind.version);
  if (version >= 1 && version < 3) return detail::read_gauss_hermite_rows(file, kind.version);
  psf::GaussHermitePsfData d;
  d.source = path;

  // PSFVER 3 stated in the primary HDU and/or the PSF HDU (specter refuses a file without).
  file.move_to_index(0);
  bool version_stated = detail::check_psf_type(file);
  d.xtrace = detail::read_trace_hdu(file, "XTRACE");
  d.ytrace = detail::read_trace_hdu(file, "YTRACE");
  // validate() checks that YTRACE has as many fibres.
  d.nfib = d.xtrace.nfib();

  file.move_to("PSF");
  if (file.hdu_type() != HduType::binary_table) file.fail(0, "is not a binary table");
  version_stated = detail::check_psf_type(file) || version_stated;
  if (!version_stated)
    file.fail(0,
              "no keyword 'PSFVER' (here or in the primary HDU): perfex reads specex "
              "GaussHermite PSFVER 3 files, which state it");
  detail::read_gh_keys(file, d);
  d.legdeg = detail::read_int_key(file, "LEGDEG");
  d.wavemin = file.read_key<double>("WAVEMIN");
  d.wavemax = file.read_key<double>("WAVEMAX");
  d.fibermin = 0;
  if (auto fmin = detail::read_int_key_optional(file, "FIBERMIN")) d.fibermin = *fmin;
  if (auto fmax = detail::read_int_key_optional(file, "FIBERMAX")) {
    const long long n = static_cast<long long>(*fmax) - d.fibermin + 1;
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

namespace detail {

// The keywords of the HDU of the parameters, both layouts (read_gh_keys reads them).
inline void write_gh_keys(FitsFile& file, const psf::GaussHermitePsfData& d,
                          const std::string& type, const std::string& version, int nparams,
                          int legdeg) {
  file.write_key("PSFTYPE", type);
  file.write_key("PSFVER", version);
  file.write_key("NPIX_X", d.npix_x);
  file.write_key("NPIX_Y", d.npix_y);
  file.write_key("HSIZEX", d.hsizex);
  file.write_key("HSIZEY", d.hsizey);
  file.write_key("FIBERMIN", d.fibermin);
  file.write_key("FIBERMAX", d.fibermin + d.nfib - 1);
  file.write_key("NPARAMS", nparams);
  file.write_key("LEGDEG", legdeg);
  file.write_key("GHDEGX", d.ghdegx);
  file.write_key("GHDEGY", d.ghdegy);
}

// The PARAM column's format: wide enough for every name, 8 characters at least.
inline std::string param_column(const std::vector<std::string>& names) {
  std::size_t width = 8;
  for (const auto& n : names) width = std::max(width, n.size());
  return std::to_string(width) + "A";
}

// The older specex layout: an empty primary HDU, then one table in HDU 1 with a row per
// parameter (PARAM, WAVEMIN, WAVEMAX, COEFF [nfib][ncoeff]), the traces as rows X and Y, every
// series padded with zeros to the longest.
inline void write_psf_rows(const std::string& path, const psf::GaussHermitePsfData& d,
                           const std::string& type, int ghdegx2, int ghdegy2) {
  FitsFile file = FitsFile::create(path);
  file.write_image<double>("", {}, nullptr);
  file.write_key("PSFTYPE", type);
  file.write_key("PSFVER", "2");
  const int nc = std::max({d.xtrace.ncoeff, d.ytrace.ncoeff, d.ncoeff()});
  std::vector<std::string> names{"X", "Y"};
  std::vector<double> w0{d.xtrace.wavemin, d.ytrace.wavemin},
      w1{d.xtrace.wavemax, d.ytrace.wavemax};
  std::vector<double> coeff;
  auto add = [&](const double* c, int n) {
    for (int f = 0; f < d.nfib; ++f)
      for (int m = 0; m < nc; ++m)
        coeff.push_back(m < n ? c[static_cast<std::size_t>(f) * n + m] : 0.0);
  };
  add(d.xtrace.coeff.data(), d.xtrace.ncoeff);
  add(d.ytrace.coeff.data(), d.ytrace.ncoeff);
  for (int p = 0; p < d.nparam(); ++p) {
    names.push_back(d.param_names[static_cast<std::size_t>(p)]);
    w0.push_back(d.wavemin);
    w1.push_back(d.wavemax);
    add(&d.coeff[static_cast<std::size_t>(p) * d.nfib * d.ncoeff()], d.ncoeff());
  }
  file.create_table(
      "", static_cast<long>(names.size()),
      {{"PARAM", param_column(names), "", {}},
       {"WAVEMIN", "D", "", {}},
       {"WAVEMAX", "D", "", {}},
       {"COEFF", std::to_string(static_cast<long>(d.nfib) * nc) + "D", "", {nc, d.nfib}}});
  file.write_column_strings("PARAM", names);
  file.write_column<double>("WAVEMIN", w0);
  file.write_column<double>("WAVEMAX", w1);
  file.write_column<double>("COEFF", coeff);
  write_gh_keys(file, d, type, "2", static_cast<int>(names.size()), nc - 1);
  if (ghdegx2 >= 0) {
    file.write_key("GHDEGX2", ghdegx2);
    file.write_key("GHDEGY2", ghdegy2);
  }
  file.write_key("PSFERR", d.psferr);
  file.close();
}

}  // namespace detail

// GAUSS-HERMITE: specex's PSFVER 3 layout, or the older PSFVER 2 one (version 2).
inline void write_psf(const std::string& path, const psf::GaussHermitePsfData& d, int version = 3) {
  d.validate();
  if (version == 2) return detail::write_psf_rows(path, d, "GAUSS-HERMITE", -1, -1);
  if (version != 3)
    throw Error("write_psf: GAUSS-HERMITE PSFVER " + std::to_string(version) +
                " is not a layout perfex writes (2 or 3)");
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

  const long per_row = static_cast<long>(d.nfib) * d.ncoeff();
  file.create_table(
      "PSF", static_cast<long>(d.param_names.size()),
      {{"PARAM", detail::param_column(d.param_names), "", {}},
       {"COEFF", std::to_string(per_row) + "D", "", {static_cast<long>(d.ncoeff()), d.nfib}}});
  file.write_column_strings("PARAM", d.param_names);
  file.write_column<double>("COEFF", d.coeff);
  detail::write_gh_keys(file, d, psf::GaussHermitePsfData::psftype, "3", d.nparam(), d.legdeg);
  file.write_key("WAVEMIN", d.wavemin);
  file.write_key("WAVEMAX", d.wavemax);
  file.write_key("PSFERR", d.psferr);
  if (!d.source.empty()) file.write_key("IN_PSF", d.source);
  file.close();
}

template <>
struct PsfFile<psf::GaussHermitePsfData> {
  static constexpr const char* layouts = "GAUSS-HERMITE PSFVER 1-3";
  static psf::GaussHermitePsfData read(const std::string& path) {
    return read_gauss_hermite_psf(path);
  }
};

}  // namespace io
}  // namespace perfex
