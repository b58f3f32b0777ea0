#pragma once
// Extracted frames as FITS files (host only; link perfex::io).
//
// write_frame writes the desispec frame data model:
//   0 FLUX        float32 [nspec][K]             electron/Angstrom; header: grid, fibres,
//                                                provenance, every extraction setting, run stats
//   1 IVAR        float32 [nspec][K]
//   2 MASK        uint32  [nspec][K]             extract::FrameMaskBits
//   3 WAVELENGTH  float64 [K]                    Angstrom
//   4 RESOLUTION  float32 [nspec][2nd+1][K]      DIA band, RESOLUTION[f][d][k] = R_f[k-nd+d][k]
//   5 FIBERMAP    table                          the input image's FIBERMAP restricted to the
//                                                extracted fibres (or the rows of a fibermap
//                                                file), or a minimal FIBER table
//   6 CHI2PIX     float32 [nspec][K]
//   7 PIXMASK_FRACTION float32 [nspec][K]
// write_model writes one float64 image HDU MODEL (the full CCD).
// FLUX and MODEL carry desiutil.depend's DEPNAMnn/DEPVERnn cards (FrameProvenance's
// dependencies), beside the cards the FLUX HDU copies from the input image.
// Both write through io::write_atomically (output_file.hpp): a temporary in the destination's
// folder renamed over it once complete (a failed write leaves no partial file and keeps an
// existing one), through symbolic links, never over anything but a regular file, gzip-
// compressed when the name ends in ".gz".
#include <perfex/config.hpp>
#include <perfex/error.hpp>
#include <perfex/extract/frame.hpp>
#include <perfex/extract/options.hpp>
#include <perfex/io/fits.hpp>
#include <perfex/io/output_file.hpp>
#include <perfex/version.hpp>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace perfex {
namespace io {

// A code and its version, as desiutil.depend records them (DEPNAMnn = name, DEPVERnn = version).
struct Dependency {
  std::string name, version;
};

// The dependencies every file perfex writes records: perfex, Kokkos and, when known, the
// execution space that extracted (DEPNAM 'perfex-backend', DEPVER 'openmp').
inline std::vector<Dependency> default_dependencies(const std::string& backend = "") {
  std::vector<Dependency> deps{{"perfex", PERFEX_VERSION_STRING}, {"kokkos", kokkos_version()}};
  if (!backend.empty()) deps.push_back({"perfex-backend", backend});
  return deps;
}

struct FrameProvenance {
  std::string input_image;  // preproc image the frame was extracted from ("" = unknown)
  std::string input_psf;    // PSF file used
  // A fibermap file (desi_extract_spectra -f) whose FIBERMAP rows specmin .. specmin + nspec - 1
  // become the frame's FIBERMAP, instead of the image's ("" = the image's).
  std::string fibermap;
  // What the caller adapted or noticed (clamped options, image warnings): recorded in the
  // FLUX header with the frame's own warnings.
  std::vector<std::string> notes;
  // DEPNAMnn/DEPVERnn cards of FLUX and MODEL: default_dependencies(backend), then the
  // caller's (a front end's own: numpy, a drop-in module). The frame does not know its backend.
  std::string backend;
  std::vector<Dependency> dependencies;
};

// Returns its own warnings (extracted fibres the input FIBERMAP lacks), also in the header.
std::vector<std::string> write_frame(const std::string& path, const extract::Frame& frame,
                                     const FrameProvenance& prov);
void write_model(const std::string& path, const extract::Frame& frame, const FrameProvenance& prov);
// The same, written into the temporaries of a set of outputs that change together (a frame
// and its model: OutputSet::commit renames them once both are complete).
std::vector<std::string> write_frame(OutputSet& outputs, const std::string& path,
                                     const extract::Frame& frame, const FrameProvenance& prov);
void write_model(OutputSet& outputs, const std::string& path, const extract::Frame& frame,
                 const FrameProvenance& prov);
extract::Frame read_frame(const std::string& path);

// ---------------------------------------------------------------------------------------------
namespace detail {

inline void check_frame(const extract::Frame& fr, const std::string& path) {
  auto bad = [&](const std::string& what) {
    throw Error("perfex: cannot write frame " + path + ": " + what);
  };
  if (fr.nspec <= 0 || fr.nwave <= 0) bad("empty frame (nspec or nwave is 0)");
  if (fr.ndiag < 0) bad("negative ndiag");
  const std::size_t n = static_cast<std::size_t>(fr.nspec) * fr.nwave;
  const std::size_t nres = n * static_cast<std::size_t>(2 * fr.ndiag + 1);
  if (fr.wave.size() != static_cast<std::size_t>(fr.nwave)) bad("wave has the wrong size");
  if (fr.flux.size() != n) bad("flux has the wrong size");
  if (fr.ivar.size() != n) bad("ivar has the wrong size");
  if (fr.mask.size() != n) bad("mask has the wrong size");
  if (fr.resolution.size() != nres) bad("resolution has the wrong size");
  if (fr.chi2pix.size() != n) bad("chi2pix has the wrong size");
  if (fr.pixmask_fraction.size() != n) bad("pixmask_fraction has the wrong size");
}

// Refuses to write `path` over any of the files the frame was made from (the last line of
// defence: the front ends refuse such requests before any work).
inline void check_not_an_input(const std::string& path, const FrameProvenance& prov) {
  const FileIdentity out = file_identity(path);
  const std::pair<const char*, const std::string*> inputs[] = {
      {"input image", &prov.input_image}, {"PSF", &prov.input_psf}, {"fibermap", &prov.fibermap}};
  for (const auto& [what, input] : inputs)
    if (!input->empty() && same_file(out, file_identity(*input)))
      throw RequestError("perfex: cannot write " + path + ": it is the " + what + " " + *input +
                         "; perfex never writes over its inputs");
}

// Records each dependency as desiutil.depend.setdep does: a DEPNAMnn of the same name (copied
// from the input image) gets the new DEPVERnn, else the first free nn of 00-99 takes it. With
// all 100 taken by other codes (desiutil's limit) it goes unrecorded: the frame is not lost.
inline void write_dependencies(FitsFile& out, const FrameProvenance& prov) {
  std::vector<Dependency> deps = default_dependencies(prov.backend);
  deps.insert(deps.end(), prov.dependencies.begin(), prov.dependencies.end());
  for (const Dependency& dep : deps)
    for (int i = 0; i < 100; ++i) {
      char name_key[16], version_key[16];
      std::snprintf(name_key, sizeof name_key, "DEPNAM%02d", i);
      std::snprintf(version_key, sizeof version_key, "DEPVER%02d", i);
      std::string name;
      const bool taken = out.read_key(name_key, name);
      if (taken && name != dep.name) continue;
      if (!taken) out.write_key(name_key, dep.name);
      out.write_key(version_key, dep.version);
      break;
    }
}

inline std::vector<float> to_f4(const std::vector<double>& v) {
  return std::vector<float>(v.begin(), v.end());
}

// The input preproc image, when it exists: its IMAGE HDU header cards go into FLUX and its
// FIBERMAP (if any) is the source of the output FIBERMAP. A missing file (provenance only, e.g.
// a relative name) is skipped; an existing file that cannot be read is an error.
inline std::unique_ptr<FitsFile> open_input_image(const std::string& input_image) {
  std::error_code ec;
  if (input_image.empty() || !std::filesystem::exists(input_image, ec)) return nullptr;
  return std::make_unique<FitsFile>(input_image, FitsFile::Mode::read);
}
inline void move_to_image_hdu(FitsFile& in) {
  if (in.has_hdu("IMAGE"))
    in.move_to("IMAGE");
  else
    in.move_to_index(0);
}

// Where each extracted fibre's FIBERMAP row comes from: the input FIBERMAP's row (1-based)
// matched on FIBER, else on FIBER % 500 (a focal-plane fibermap), or 0 when it has none. Only
// for an input FIBERMAP that is a binary table with a FIBER column and no variable-length
// columns (`matched`); others are copied unchanged or replaced by a FIBER-only table.
struct FibermapRows {
  bool matched = false;
  std::vector<long> row_of;
  std::vector<int> missing;  // extracted fibres without a row
};

// A fibermap file's rows are taken by position, as desi_extract_spectra -f takes them: rows
// specmin .. specmin + nspec - 1 (1-based row specmin + i + 1 for fibre i).
inline FibermapRows fibermap_file_rows(const extract::Frame& fr, FitsFile& in) {
  if (!in.has_hdu("FIBERMAP")) in.fail(0, "no FIBERMAP HDU (fibermap file)");
  in.move_to("FIBERMAP");
  if (in.hdu_type() != HduType::binary_table) in.fail(0, "FIBERMAP is not a binary table");
  const long nrows = in.num_rows();
  if (nrows < static_cast<long>(fr.specmin) + fr.nspec)
    in.fail(0, "FIBERMAP has " + std::to_string(nrows) + " rows, fibres " +
                   std::to_string(fr.specmin) + "-" + std::to_string(fr.specmin + fr.nspec - 1) +
                   " need " + std::to_string(fr.specmin + fr.nspec));
  FibermapRows m;
  m.matched = true;
  for (int i = 0; i < fr.nspec; ++i) m.row_of.push_back(static_cast<long>(fr.specmin) + i + 1);
  return m;
}

inline FibermapRows match_fibermap(const extract::Frame& fr, FitsFile* in) {
  FibermapRows m;
  if (!in || !in->has_hdu("FIBERMAP")) return m;
  in->move_to("FIBERMAP");
  if (in->hdu_type() != HduType::binary_table) in->fail(0, "FIBERMAP is not a binary table");
  if (!in->has_column("FIBER") || in->read_key<long long>("PCOUNT") != 0) return m;
  m.matched = true;
  const long nrows = in->num_rows();
  const std::vector<long long> fiber = in->read_column<long long>("FIBER");
  m.row_of.assign(static_cast<std::size_t>(fr.nspec), 0);
  for (int pass = 0; pass < 2; ++pass) {
    for (long r = 0; r < nrows; ++r) {
      const long long i = (pass == 0 ? fiber[r] : fiber[r] % 500) - fr.specmin;
      if (i >= 0 && i < fr.nspec && m.row_of[i] == 0) m.row_of[i] = r + 1;
    }
  }
  for (int i = 0; i < fr.nspec; ++i)
    if (m.row_of[i] == 0) m.missing.push_back(fr.specmin + i);
  return m;
}

// "20-24, 30" for sorted fibre numbers.
inline std::string fibre_ranges(const std::vector<int>& fibres) {
  std::string s;
  for (std::size_t i = 0; i < fibres.size();) {
    std::size_t j = i;
    while (j + 1 < fibres.size() && fibres[j + 1] == fibres[j] + 1) ++j;
    s += (s.empty() ? "" : ", ") + std::to_string(fibres[i]);
    if (j > i) s += "-" + std::to_string(fibres[j]);
    i = j + 1;
  }
  return s;
}

// Appends the FIBERMAP HDU: the input's FIBERMAP restricted to and ordered by the extracted
// fibres when it could be matched (fibres it lacks get a zero row with only FIBER set, counted
// by the keyword FMAPMISS), copied unchanged when it has no FIBER column, or a minimal table
// with one FIBER column when there is no input FIBERMAP.
inline void write_fibermap(FitsFile& out, const extract::Frame& fr, FitsFile* in,
                           const FibermapRows& m) {
  if (!in || !in->has_hdu("FIBERMAP")) {
    out.create_table("FIBERMAP", fr.nspec, {{"FIBER", "J", "", {}}});
    std::vector<std::int32_t> fibres(static_cast<std::size_t>(fr.nspec));
    for (int i = 0; i < fr.nspec; ++i) fibres[i] = fr.specmin + i;
    out.write_column("FIBER", fibres);
    return;
  }
  if (!m.matched) {
    // No FIBER column (or variable-length columns): copied unchanged.
    out.copy_hdu_from(*in, "FIBERMAP");
    out.delete_key("CHECKSUM");
    out.delete_key("DATASUM");
    return;
  }
  in->move_to("FIBERMAP");
  out.copy_table_rows_from(*in, m.row_of);
  for (int i = 0; i < fr.nspec; ++i)
    if (m.row_of[i] == 0) out.write_column<long long>("FIBER", {fr.specmin + i}, i + 1);
  out.write_key("FMAPMISS", static_cast<long long>(m.missing.size()),
                "extracted fibres absent from the input FIBERMAP");
  out.delete_key("CHECKSUM");
  out.delete_key("DATASUM");
}

// The run's notes and warnings as COMMENT cards (at most 100; NWARN counts them all).
inline void write_warnings(FitsFile& out, const std::vector<std::string>& notes,
                           const std::vector<std::string>& warnings) {
  const std::size_t total = notes.size() + warnings.size(), shown = 100;
  out.write_key("NWARN", static_cast<long long>(total), "warnings of the run (COMMENT cards)");
  std::size_t n = 0;
  for (const auto* list : {&notes, &warnings})
    for (const std::string& w : *list)
      if (n++ < shown) out.write_comment("perfex warning: " + w);
  if (total > shown)
    out.write_comment("perfex warning: ... and " + std::to_string(total - shown) + " more");
}

}  // namespace detail

// ---------------------------------------------------------------------------------------------
inline std::vector<std::string> write_frame(OutputSet& outputs, const std::string& path,
                                            const extract::Frame& frame,
                                            const FrameProvenance& prov) {
  detail::check_frame(frame, path);
  detail::check_not_an_input(path, prov);
  std::vector<std::string> warnings;
  outputs.add(path, [&](const std::string& tmp) {
    std::unique_ptr<FitsFile> in = detail::open_input_image(prov.input_image);
    std::unique_ptr<FitsFile> fibermap_file;
    if (!prov.fibermap.empty())
      fibermap_file = std::make_unique<FitsFile>(prov.fibermap, FitsFile::Mode::read);
    const detail::FibermapRows fibermap = fibermap_file
                                              ? detail::fibermap_file_rows(frame, *fibermap_file)
                                              : detail::match_fibermap(frame, in.get());
    warnings.clear();
    if (!fibermap.missing.empty())
      warnings.push_back("the FIBERMAP of " + prov.input_image + " has no row for fibre(s) " +
                         detail::fibre_ranges(fibermap.missing) + " (" +
                         std::to_string(fibermap.missing.size()) + " of " +
                         std::to_string(frame.nspec) +
                         "): their FIBERMAP rows hold FIBER only (TARGETID 0); FMAPMISS = " +
                         std::to_string(fibermap.missing.size()));
    if (in) detail::move_to_image_hdu(*in);
    FitsFile out(tmp, FitsFile::Mode::create);
    const long nspec = frame.nspec, K = frame.nwave, nband = 2 * frame.ndiag + 1;
    const auto& o = frame.options;

    // FLUX (primary): the input image's descriptive cards (CAMERA, EXPID, NIGHT, …) first,
    // then the frame's own keywords, which replace any of the same name.
    out.write_image("FLUX", {K, nspec}, detail::to_f4(frame.flux));
    if (in) out.copy_header_cards_from(*in);
    out.write_key("BUNIT", "electron/Angstrom", "flux unit");
    out.write_key("NSPEC", nspec, "number of spectra");
    out.write_key("SPECMIN", frame.specmin, "first fibre (0-based camera index)");
    out.write_key("SPECMAX", frame.specmin + frame.nspec - 1, "last fibre (inclusive)");
    out.write_key("NWAVE", K, "number of wavelengths");
    out.write_key("WAVEMIN", frame.wave.front(), "first wavelength [Angstrom]");
    out.write_key("WAVEMAX", frame.wave.back(), "last wavelength [Angstrom]");
    out.write_key("WAVESTEP", o.dw, "wavelength step [Angstrom]");
    out.write_key("GRIDWMIN", o.wmin, "requested grid: wmin [Angstrom]");
    out.write_key("GRIDWMAX", o.wmax, "requested grid: wmax [Angstrom]");
    out.write_key("GRIDDW", o.dw, "requested grid: dw [Angstrom]");
    out.write_long_string_key("IN_PSF", prov.input_psf, "input PSF file");
    out.write_long_string_key("IN_IMG", prov.input_image, "input preproc image");
    out.write_key("BUNDSIZE", o.bundlesize, "fibres per bundle");
    out.write_key("NSUBBUND", o.nsubbundles, "sub-bundles per bundle");
    out.write_key("GEOMETRY", extract::geometry_name(o.geometry), "patch geometry");
    out.write_key("NWAVSTEP", o.nwavestep, "core wavelengths per patch");
    out.write_key("WAVEPAD0", o.wavepad0, "base wavelength padding [bins]");
    out.write_key("WAVEPADF", o.wavepad_frac, "wavepad_frac");
    out.write_key("WAVEPAD", o.wavepad(), "wavelength padding [bins] (specter: bound)");
    out.write_key("PIXPADF", o.pixpad_frac, "pixpad_frac");
    out.write_key("REGULARI", o.regularize, "regularize");
    out.write_key("PSFERR", o.psferr, "PSF error (chi2pix only)");
    out.write_key("DECORR", extract::decorrelation_name(o.decorrelation),
                  "decorrelation (signal = per fibre)");
    out.write_key("EIGCLIP", o.eigen_clip, "eigenvalue clip relative to the largest");
    out.write_key("NDIAG", frame.ndiag, "resolution half-width (2*NDIAG+1 diagonals)");
    out.write_key("MODELIMG", o.model_image, "model image requested");
    out.write_key("BATCHPAT", o.batch_patches, "patches per batch (0 = automatic)");
    out.write_key("PERFEX", PERFEX_VERSION_STRING, "perfex version");
    detail::write_dependencies(out, prov);
    out.write_key("NPATCH", frame.npatches, "patches solved");
    out.write_key("NFAILPAT", frame.failed_patches, "failed patches (flux 0, ivar 0)");
    out.write_key("NNONFIN", frame.nonfinite_pixels, "non-finite input pixels treated as masked");
    out.write_key("EXTTIME", frame.seconds, "extraction wall time [s]");
    std::vector<std::string> notes = prov.notes;
    notes.insert(notes.end(), warnings.begin(), warnings.end());
    detail::write_warnings(out, notes, frame.warnings);
    out.write_checksum();

    out.write_image("IVAR", {K, nspec}, detail::to_f4(frame.ivar));
    out.write_key("BUNIT", "Angstrom**2/electron**2", "inverse variance unit");
    out.write_checksum();

    out.write_image("MASK", {K, nspec}, frame.mask);
    out.write_checksum();

    out.write_image("WAVELENGTH", {K}, frame.wave);
    out.write_key("BUNIT", "Angstrom", "wavelength unit");
    out.write_checksum();

    out.write_image("RESOLUTION", {K, nband, nspec}, detail::to_f4(frame.resolution));
    out.write_key("NDIAG", frame.ndiag, "RESOLUTION[f][d][k] = R_f[k-NDIAG+d][k]");
    out.write_checksum();

    detail::write_fibermap(out, frame, fibermap_file ? fibermap_file.get() : in.get(), fibermap);
    out.write_checksum();

    out.write_image("CHI2PIX", {K, nspec}, detail::to_f4(frame.chi2pix));
    out.write_checksum();

    out.write_image("PIXMASK_FRACTION", {K, nspec}, detail::to_f4(frame.pixmask_fraction));
    out.write_checksum();
    out.close();
  });
  return warnings;
}

inline std::vector<std::string> write_frame(const std::string& path, const extract::Frame& frame,
                                            const FrameProvenance& prov) {
  OutputSet outputs;
  std::vector<std::string> warnings = write_frame(outputs, path, frame, prov);
  outputs.commit();
  return warnings;
}

inline void write_model(OutputSet& outputs, const std::string& path, const extract::Frame& frame,
                        const FrameProvenance& prov) {
  detail::check_not_an_input(path, prov);
  if (frame.model_rows <= 0 || frame.model_cols <= 0 ||
      frame.model.size() != static_cast<std::size_t>(frame.model_rows) * frame.model_cols)
    throw Error("perfex: cannot write model '" + path +
                "': the frame has no model image (extract with options.model_image = true)");
  outputs.add(path, [&](const std::string& tmp) {
    FitsFile out(tmp, FitsFile::Mode::create);
    out.write_image("MODEL",
                    {static_cast<long>(frame.model_cols), static_cast<long>(frame.model_rows)},
                    frame.model);
    out.write_key("BUNIT", "electron", "model unit");
    out.write_long_string_key("IN_PSF", prov.input_psf, "input PSF file");
    out.write_long_string_key("IN_IMG", prov.input_image, "input preproc image");
    out.write_key("PERFEX", PERFEX_VERSION_STRING, "perfex version");
    detail::write_dependencies(out, prov);
    out.write_checksum();
    out.close();
  });
}

inline void write_model(const std::string& path, const extract::Frame& frame,
                        const FrameProvenance& prov) {
  OutputSet outputs;
  write_model(outputs, path, frame, prov);
  outputs.commit();
}

inline extract::Frame read_frame(const std::string& path) {
  // Everything write_frame writes. Frames from other writers (desispec, gpu_specter) read too:
  // the shapes come from the images, missing settings keep their defaults, a missing
  // PIXMASK_FRACTION (or CHI2PIX) HDU reads as zeros.
  FitsFile in(path, FitsFile::Mode::read);
  extract::Frame fr;
  in.move_to("FLUX");
  auto flux = in.read_image<double>();
  if (flux.axes.size() != 2) in.fail(0, "FLUX is not a 2-D [NSPEC][NWAVE] image");
  fr.nwave = static_cast<int>(flux.axes[0]);
  fr.nspec = static_cast<int>(flux.axes[1]);
  fr.flux = std::move(flux.data);
  if (auto n = in.read_key_optional<int>("NSPEC"); n && *n != fr.nspec)
    in.fail(0, "keyword NSPEC = " + std::to_string(*n) + " does not match the image's " +
                   std::to_string(fr.nspec) + " spectra");
  fr.specmin = in.read_key_optional<int>("SPECMIN").value_or(0);
  auto& o = fr.options;
  o.specmin = fr.specmin;
  o.nspec = fr.nspec;
  auto opt_d = [&](const char* key, double& v) {
    v = in.read_key_optional<double>(key).value_or(v);
  };
  auto opt_i = [&](const char* key, int& v) { v = in.read_key_optional<int>(key).value_or(v); };
  opt_d("GRIDWMIN", o.wmin);
  opt_d("GRIDWMAX", o.wmax);
  if (!in.read_key_optional<double>("GRIDDW")) opt_d("WAVESTEP", o.dw);
  opt_d("GRIDDW", o.dw);
  opt_i("BUNDSIZE", o.bundlesize);
  opt_i("NSUBBUND", o.nsubbundles);
  if (auto geometry = in.read_key_optional<std::string>("GEOMETRY")) {
    try {
      o.geometry = extract::parse_geometry(*geometry);
    } catch (const Error&) {
      in.fail(0, "keyword 'GEOMETRY' has the unknown value '" + *geometry + "'");
    }
  }
  opt_i("NWAVSTEP", o.nwavestep);
  opt_i("WAVEPAD0", o.wavepad0);
  opt_d("WAVEPADF", o.wavepad_frac);
  opt_d("PIXPADF", o.pixpad_frac);
  opt_d("REGULARI", o.regularize);
  opt_d("PSFERR", o.psferr);
  if (auto decorr = in.read_key_optional<std::string>("DECORR")) {
    try {
      o.decorrelation = extract::parse_decorrelation(*decorr);
    } catch (const Error&) {
      in.fail(0, "keyword 'DECORR' has the unknown value '" + *decorr + "'");
    }
  }
  opt_d("EIGCLIP", o.eigen_clip);
  o.model_image = in.read_key_optional<bool>("MODELIMG").value_or(false);
  opt_i("BATCHPAT", o.batch_patches);
  opt_i("NPATCH", fr.npatches);
  opt_i("NFAILPAT", fr.failed_patches);
  fr.nonfinite_pixels = in.read_key_optional<long long>("NNONFIN").value_or(0);
  opt_d("EXTTIME", fr.seconds);

  const long nspec = fr.nspec, K = fr.nwave;
  auto shape_text = [](const std::vector<long>& axes) {
    std::string t;
    for (long n : axes) t += (t.empty() ? "" : "x") + std::to_string(n);
    return t.empty() ? std::string("(none)") : t;
  };
  auto read = [&](const std::string& name, const std::vector<long>& axes, auto tag) {
    using T = decltype(tag);
    auto img = in.read_image<T>(name);
    if (img.axes != axes)
      in.fail(0, "image axes " + shape_text(img.axes) + " (NAXIS1 first), expected " +
                     shape_text(axes));
    return std::move(img.data);
  };
  fr.ivar = read("IVAR", {K, nspec}, double{});
  fr.mask = read("MASK", {K, nspec}, std::uint32_t{});
  fr.wave = read("WAVELENGTH", {K}, double{});
  {
    auto res = in.read_image<double>("RESOLUTION");
    if (res.axes.size() != 3 || res.axes[0] != K || res.axes[2] != nspec || res.axes[1] % 2 != 1)
      in.fail(0, "image axes " + shape_text(res.axes) + " (NAXIS1 first), expected " +
                     std::to_string(K) + "x(2*NDIAG+1)x" + std::to_string(nspec));
    fr.ndiag = static_cast<int>((res.axes[1] - 1) / 2);
    if (auto nd = in.read_key_optional<int>("NDIAG"); nd && *nd != fr.ndiag)
      in.fail(0, "keyword NDIAG = " + std::to_string(*nd) + " does not match the image's " +
                     std::to_string(res.axes[1]) + " diagonals");
    fr.resolution = std::move(res.data);
  }
  const std::size_t n = static_cast<std::size_t>(nspec) * static_cast<std::size_t>(K);
  fr.chi2pix =
      in.has_hdu("CHI2PIX") ? read("CHI2PIX", {K, nspec}, double{}) : std::vector<double>(n, 0.0);
  fr.pixmask_fraction = in.has_hdu("PIXMASK_FRACTION")
                            ? read("PIXMASK_FRACTION", {K, nspec}, double{})
                            : std::vector<double>(n, 0.0);
  return fr;
}

}  // namespace io
}  // namespace perfex
