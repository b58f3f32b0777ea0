#include "perfex_test.hpp"

#ifdef PERFEX_TEST_HAVE_IO
#include <perfex/io/frame_fits.hpp>

#include <fitsio.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

// A fresh folder under the system temp folder, removed at scope exit.
struct TempDir {
  fs::path path;
  TempDir() {
    std::string templ = (fs::temp_directory_path() / "perfex-frame-test-XXXXXX").string();
    std::vector<char> buf(templ.begin(), templ.end());
    buf.push_back('\0');
    REQUIRE(mkdtemp(buf.data()) != nullptr);
    path = buf.data();
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string file(const std::string& name) const { return (path / name).string(); }
  std::vector<std::string> entries() const {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(path))
      names.push_back(e.path().filename().string());
    return names;
  }
};

perfex::extract::Frame small_frame(int specmin = 2, int nspec = 3, int nwave = 17, int nd = 2) {
  perfex::extract::Frame fr;
  fr.specmin = specmin;
  fr.nspec = nspec;
  fr.nwave = nwave;
  fr.ndiag = nd;
  const std::size_t n = static_cast<std::size_t>(nspec) * nwave;
  for (int k = 0; k < nwave; ++k) fr.wave.push_back(5760.0 + k * 0.8000000000001819);
  for (std::size_t i = 0; i < n; ++i) {
    fr.flux.push_back(100.0 / 3.0 + 0.123456789 * static_cast<double>(i));
    fr.ivar.push_back(1.0 / (7.0 + static_cast<double>(i)));
    fr.mask.push_back(i % 5 == 0 ? perfex::extract::somebadpix : (i % 7 == 0 ? 0x80000001u : 0u));
    fr.chi2pix.push_back(1.0 + 1e-3 * static_cast<double>(i));
    fr.pixmask_fraction.push_back(static_cast<double>(i % 4) / 3.0);
  }
  for (std::size_t i = 0; i < n * (2 * nd + 1); ++i)
    fr.resolution.push_back(0.1 + 1e-4 * static_cast<double>(i) / 7.0);
  fr.options.wmin = 5760.0;
  fr.options.wmax = 5760.0 + (nwave - 1) * 0.8;
  fr.options.dw = 0.8;
  fr.options.specmin = specmin;
  fr.options.nspec = nspec;
  fr.options.nsubbundles = 1;
  fr.options.bundlesize = 3;
  fr.options.nwavestep = 7;
  fr.options.wavepad_frac = 0.25;
  fr.options.pixpad_frac = 0.7;
  fr.options.regularize = 1e-4;
  fr.options.psferr = 0.01;
  fr.options.decorrelation = perfex::extract::Decorrelation::noise;
  fr.options.eigen_clip = 1e-13;
  fr.npatches = 9;
  fr.failed_patches = 1;
  fr.nonfinite_pixels = 12;
  fr.seconds = 1.25;
  return fr;
}

double as_f4(double x) { return static_cast<double>(static_cast<float>(x)); }

std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Minimal CFITSIO helpers for checking what was written.
struct Reader {
  fitsfile* f = nullptr;
  explicit Reader(const std::string& path) {
    int status = 0;
    fits_open_file(&f, path.c_str(), READONLY, &status);
    REQUIRE(status == 0);
  }
  ~Reader() {
    int status = 0;
    if (f) fits_close_file(f, &status);
  }
  void hdu(int i) {
    int status = 0, type = 0;
    fits_movabs_hdu(f, i, &type, &status);
    REQUIRE(status == 0);
  }
  std::string str(const char* key) {
    int status = 0;
    char* v = nullptr;
    fits_read_key_longstr(f, key, &v, nullptr, &status);
    INFO("keyword " << key);
    REQUIRE(status == 0);
    std::string s = v;
    fits_free_memory(v, &status);
    return s;
  }
  double dbl(const char* key) {
    int status = 0;
    double v = 0;
    fits_read_key(f, TDOUBLE, key, &v, nullptr, &status);
    INFO("keyword " << key);
    REQUIRE(status == 0);
    return v;
  }
  int bitpix() {
    int status = 0, b = 0;
    fits_get_img_equivtype(f, &b, &status);
    REQUIRE(status == 0);
    return b;
  }
};

// An input "preproc" file: IMAGE primary with descriptive cards, and a FIBERMAP table of
// fibres 0..9 in scrambled order.
void write_input_image(const std::string& path, bool with_fibermap) {
  int status = 0;
  fitsfile* f = nullptr;
  fits_create_file(&f, ("!" + path).c_str(), &status);
  long naxes[2] = {4, 3};
  fits_create_img(f, FLOAT_IMG, 2, naxes, &status);
  fits_update_key_str(f, "EXTNAME", "IMAGE", nullptr, &status);
  fits_update_key_str(f, "CAMERA", "r0", "camera", &status);
  fits_update_key_lng(f, "EXPID", 51060, "exposure", &status);
  fits_update_key_dbl(f, "WAVEMIN", 1.0, -6, "must not override the frame's own", &status);
  std::vector<float> pix(12, 1.0f);
  fits_write_img(f, TFLOAT, 1, 12, pix.data(), &status);
  if (with_fibermap) {
    char c1[] = "FIBER", c2[] = "TARGETID", c3[] = "OBJTYPE";
    char f1[] = "J", f2[] = "K", f3[] = "3A";
    char* ttype[] = {c1, c2, c3};
    char* tform[] = {f1, f2, f3};
    char u[] = "";
    char* tunit[] = {u, u, u};
    fits_create_tbl(f, BINARY_TBL, 0, 3, ttype, tform, tunit, "FIBERMAP", &status);
    const int order[10] = {7, 3, 0, 9, 4, 1, 8, 2, 6, 5};
    for (int r = 0; r < 10; ++r) {
      int fib = order[r];
      LONGLONG tid = 1000 + order[r];
      std::string objtype = fib % 2 ? "SKY" : "TGT";
      char* strs[] = {const_cast<char*>(objtype.c_str())};
      fits_write_col(f, TINT, 1, r + 1, 1, 1, &fib, &status);
      fits_write_col(f, TLONGLONG, 2, r + 1, 1, 1, &tid, &status);
      fits_write_col(f, TSTRING, 3, r + 1, 1, 1, strs, &status);
    }
  }
  fits_close_file(f, &status);
  REQUIRE(status == 0);
}

}  // namespace

TEST_CASE("frame FITS: write -> read round trip", "[io]") {
  TempDir dir;
  const auto fr = small_frame();
  const std::string path = dir.file("frame.fits");
  perfex::io::write_frame(path, fr, {"in-image.fits", "in-psf.fits"});
  const auto back = perfex::io::read_frame(path);

  CHECK(back.specmin == fr.specmin);
  CHECK(back.nspec == fr.nspec);
  CHECK(back.nwave == fr.nwave);
  CHECK(back.ndiag == fr.ndiag);
  CHECK(back.wave == fr.wave);  // float64: exact
  CHECK(back.mask == fr.mask);  // uint32: exact, including bit 31
  REQUIRE(back.flux.size() == fr.flux.size());
  REQUIRE(back.resolution.size() == fr.resolution.size());
  for (std::size_t i = 0; i < fr.flux.size(); ++i) {
    CHECK(back.flux[i] == as_f4(fr.flux[i]));  // float32 in the file
    CHECK(back.ivar[i] == as_f4(fr.ivar[i]));
    CHECK(back.chi2pix[i] == as_f4(fr.chi2pix[i]));
    CHECK(back.pixmask_fraction[i] == as_f4(fr.pixmask_fraction[i]));
  }
  for (std::size_t i = 0; i < fr.resolution.size(); ++i)
    CHECK(back.resolution[i] == as_f4(fr.resolution[i]));
  CHECK(back.options.wmin == fr.options.wmin);
  CHECK(back.options.wmax == fr.options.wmax);
  CHECK(back.options.dw == fr.options.dw);
  CHECK(back.options.bundlesize == 3);
  CHECK(back.options.nsubbundles == 1);
  CHECK(back.options.nwavestep == 7);
  CHECK(back.options.wavepad0 == 10);
  CHECK(back.options.wavepad_frac == 0.25);
  CHECK(back.options.pixpad_frac == 0.7);
  CHECK(back.options.regularize == 1e-4);
  CHECK(back.options.psferr == 0.01);
  CHECK(back.options.decorrelation == perfex::extract::Decorrelation::noise);
  CHECK(back.options.eigen_clip == 1e-13);
  CHECK(back.npatches == 9);
  CHECK(back.failed_patches == 1);
  CHECK(back.nonfinite_pixels == 12);
  CHECK(back.seconds == 1.25);
  CHECK(back.model.empty());
}

TEST_CASE("frame FITS: HDUs, types and header keywords", "[io]") {
  TempDir dir;
  const auto fr = small_frame();
  const std::string path = dir.file("frame.fits");
  perfex::io::write_frame(path, fr, {"in-image.fits", "in-psf.fits"});
  Reader r(path);
  int nhdu = 0, status = 0;
  fits_get_num_hdus(r.f, &nhdu, &status);
  CHECK(nhdu == 8);
  const char* names[] = {"FLUX",       "IVAR",     "MASK",    "WAVELENGTH",
                         "RESOLUTION", "FIBERMAP", "CHI2PIX", "PIXMASK_FRACTION"};
  const int types[] = {FLOAT_IMG, FLOAT_IMG, ULONG_IMG, DOUBLE_IMG,
                       FLOAT_IMG, 0,         FLOAT_IMG, FLOAT_IMG};
  for (int i = 0; i < 8; ++i) {
    r.hdu(i + 1);
    INFO("HDU " << names[i]);
    CHECK(r.str("EXTNAME") == names[i]);
    if (types[i]) CHECK(r.bitpix() == types[i]);
  }
  r.hdu(5);
  long naxes[3] = {0, 0, 0};
  int naxis = 0;
  fits_get_img_dim(r.f, &naxis, &status);
  fits_get_img_size(r.f, 3, naxes, &status);
  CHECK(naxis == 3);
  CHECK(naxes[0] == fr.nwave);
  CHECK(naxes[1] == 2 * fr.ndiag + 1);
  CHECK(naxes[2] == fr.nspec);
  r.hdu(4);
  CHECK(r.str("BUNIT") == "Angstrom");

  r.hdu(1);
  CHECK(r.str("BUNIT") == "electron/Angstrom");
  CHECK(r.dbl("NSPEC") == 3);
  CHECK(r.dbl("SPECMIN") == 2);
  CHECK(r.dbl("SPECMAX") == 4);
  CHECK(r.dbl("WAVEMIN") == Approx(fr.wave.front()).epsilon(1e-14));
  CHECK(r.dbl("WAVEMAX") == Approx(fr.wave.back()).epsilon(1e-14));
  CHECK(r.dbl("WAVESTEP") == 0.8);
  CHECK(r.str("IN_PSF") == "in-psf.fits");
  CHECK(r.str("IN_IMG") == "in-image.fits");
  CHECK(r.dbl("BUNDSIZE") == 3);
  CHECK(r.dbl("NSUBBUND") == 1);
  CHECK(r.dbl("NWAVSTEP") == 7);
  CHECK(r.dbl("WAVEPAD") == 12);
  CHECK(r.dbl("PIXPADF") == 0.7);
  CHECK(r.dbl("REGULARI") == 1e-4);
  CHECK(r.dbl("PSFERR") == 0.01);
  CHECK(r.str("DECORR") == "noise");
  CHECK(r.dbl("EIGCLIP") == 1e-13);
  CHECK(r.dbl("NDIAG") == 2);
  CHECK(r.str("PERFEX") == PERFEX_VERSION_STRING);
  CHECK(r.dbl("NPATCH") == 9);
  CHECK(r.dbl("NFAILPAT") == 1);
  CHECK(r.dbl("EXTTIME") == 1.25);

  // No input image on disk: minimal FIBERMAP with the extracted fibres.
  r.hdu(6);
  long nrows = 0;
  fits_get_num_rows(r.f, &nrows, &status);
  CHECK(nrows == 3);
  int fib[3] = {0, 0, 0}, anynul = 0;
  fits_read_col(r.f, TINT, 1, 1, 1, 3, nullptr, fib, &anynul, &status);
  CHECK(status == 0);
  CHECK(fib[0] == 2);
  CHECK(fib[1] == 3);
  CHECK(fib[2] == 4);

  // Every HDU carries a valid checksum.
  for (int i = 1; i <= 8; ++i) {
    r.hdu(i);
    int dataok = 0, hduok = 0;
    fits_verify_chksum(r.f, &dataok, &hduok, &status);
    INFO("HDU " << i);
    CHECK(dataok == 1);
    CHECK(hduok == 1);
  }
}

TEST_CASE("frame FITS: FIBERMAP and header cards come from the input image", "[io]") {
  TempDir dir;
  const std::string img = dir.file("preproc.fits");
  write_input_image(img, true);
  auto fr = small_frame(/*specmin=*/2, /*nspec=*/3);
  const std::string path = dir.file("frame.fits");
  CHECK(perfex::io::write_frame(path, fr, {img, "psf.fits"}).empty());
  Reader r(path);
  r.hdu(1);
  CHECK(r.str("CAMERA") == "r0");
  CHECK(r.dbl("EXPID") == 51060);
  CHECK(r.dbl("WAVEMIN") ==
        Approx(fr.wave.front()).epsilon(1e-14));  // the frame's own keyword wins
  r.hdu(6);
  CHECK(r.str("EXTNAME") == "FIBERMAP");
  int status = 0, anynul = 0;
  long nrows = 0;
  fits_get_num_rows(r.f, &nrows, &status);
  REQUIRE(nrows == 3);
  int fib[3];
  LONGLONG tid[3];
  fits_read_col(r.f, TINT, 1, 1, 1, 3, nullptr, fib, &anynul, &status);
  fits_read_col(r.f, TLONGLONG, 2, 1, 1, 3, nullptr, tid, &anynul, &status);
  REQUIRE(status == 0);
  for (int i = 0; i < 3; ++i) {
    CHECK(fib[i] == 2 + i);
    CHECK(tid[i] == 1002 + i);
  }
  char buf[3][8];
  char* strs[3] = {buf[0], buf[1], buf[2]};
  fits_read_col(r.f, TSTRING, 3, 1, 1, 3, nullptr, strs, &anynul, &status);
  REQUIRE(status == 0);
  CHECK(std::string(buf[0]) == "TGT");
  CHECK(std::string(buf[1]) == "SKY");

  // Fibres missing from the input fibermap get a row with only FIBER set.
  // They are counted (FMAPMISS) and reported.
  auto fr2 = small_frame(/*specmin=*/8, /*nspec=*/4);
  const auto warnings = perfex::io::write_frame(path, fr2, {img, "psf.fits"});
  REQUIRE(warnings.size() == 1);
  CHECK_THAT(warnings[0], Catch::Contains("no row for fibre(s) 10-11 (2 of 4)"));
  Reader r2(path);
  r2.hdu(1);
  CHECK(r2.dbl("NWARN") == 1);
  r2.hdu(6);
  CHECK(r2.dbl("FMAPMISS") == 2);
  fits_get_num_rows(r2.f, &nrows, &status);
  REQUIRE(nrows == 4);
  int fib2[4];
  LONGLONG tid2[4];
  fits_read_col(r2.f, TINT, 1, 1, 1, 4, nullptr, fib2, &anynul, &status);
  fits_read_col(r2.f, TLONGLONG, 2, 1, 1, 4, nullptr, tid2, &anynul, &status);
  REQUIRE(status == 0);
  CHECK(fib2[0] == 8);
  CHECK(tid2[0] == 1008);
  CHECK(fib2[1] == 9);
  CHECK(fib2[2] == 10);
  CHECK(tid2[2] == 0);
  CHECK(fib2[3] == 11);

  // An input image without a FIBERMAP: the minimal table.
  const std::string img2 = dir.file("nofibermap.fits");
  write_input_image(img2, false);
  perfex::io::write_frame(path, fr, {img2, "psf.fits"});
  Reader r3(path);
  r3.hdu(6);
  int ncols = 0;
  fits_get_num_cols(r3.f, &ncols, &status);
  CHECK(ncols == 1);
}

TEST_CASE("frame FITS: DEPNAMnn/DEPVERnn record the codes that made the frame and the model",
          "[io]") {
  TempDir dir;
  // An input image that records codes of its own, one of them perfex (an older version).
  const std::string img = dir.file("preproc.fits");
  write_input_image(img, false);
  {
    int status = 0;
    fitsfile* f = nullptr;
    fits_open_file(&f, img.c_str(), READWRITE, &status);
    fits_update_key_str(f, "DEPNAM00", "python", nullptr, &status);
    fits_update_key_str(f, "DEPVER00", "3.10.4", nullptr, &status);
    fits_update_key_str(f, "DEPNAM01", "perfex", nullptr, &status);
    fits_update_key_str(f, "DEPVER01", "0.0.1", nullptr, &status);
    fits_close_file(f, &status);
    REQUIRE(status == 0);
  }
  auto fr = small_frame();
  fr.model_rows = 2;
  fr.model_cols = 2;
  fr.model.assign(4, 1.0);
  perfex::io::FrameProvenance prov{img, "psf.fits"};
  prov.backend = "openmp";
  prov.dependencies = {{"numpy", "1.24.2"}, {"perfex.gpu_specter", PERFEX_VERSION_STRING}};
  const std::string frame = dir.file("frame.fits"), model = dir.file("model.fits");
  perfex::io::write_frame(frame, fr, prov);
  perfex::io::write_model(model, fr, prov);
  // desiutil.depend's layout: nn from 00, a name already there keeps its nn.
  const std::vector<std::pair<std::string, std::string>> frame_cards{
      {"python", "3.10.4"},
      {"perfex", PERFEX_VERSION_STRING},
      {"kokkos", perfex::kokkos_version()},
      {"perfex-backend", "openmp"},
      {"numpy", "1.24.2"},
      {"perfex.gpu_specter", PERFEX_VERSION_STRING}};
  auto model_cards = frame_cards;
  model_cards.erase(model_cards.begin());  // the model copies no card of the image
  for (const auto& [path, cards] :
       {std::make_pair(frame, frame_cards), std::make_pair(model, model_cards)}) {
    Reader r(path);
    r.hdu(1);
    INFO(path);
    for (std::size_t i = 0; i < cards.size(); ++i) {
      const std::string nn = (i < 10 ? "0" : "") + std::to_string(i);
      CHECK(r.str(("DEPNAM" + nn).c_str()) == cards[i].first);
      CHECK(r.str(("DEPVER" + nn).c_str()) == cards[i].second);
    }
    int status = 0;
    char value[FLEN_VALUE];
    const std::string next = "DEPNAM0" + std::to_string(cards.size());
    fits_read_keyword(r.f, next.c_str(), value, nullptr, &status);
    CHECK(status == KEY_NO_EXIST);
  }
  // Without a backend or a caller's own: perfex and kokkos.
  perfex::io::write_model(model, fr, {});
  Reader r(model);
  CHECK(r.str("DEPNAM00") == "perfex");
  CHECK(r.str("DEPNAM01") == "kokkos");
  int status = 0;
  char value[FLEN_VALUE];
  fits_read_keyword(r.f, "DEPNAM02", value, nullptr, &status);
  CHECK(status == KEY_NO_EXIST);
}

TEST_CASE("frame FITS: a failed write keeps the old file and leaves no temporary", "[io]") {
  TempDir dir;
  const std::string path = dir.file("frame.fits");
  const auto fr = small_frame();
  perfex::io::write_frame(path, fr, {"", "psf.fits"});
  const std::string before = file_bytes(path);
  REQUIRE(!before.empty());

  auto other = small_frame(0, 2, 9, 1);
  // The input image's FIBERMAP is an image, not a table: writing fails at the FIBERMAP HDU,
  // after FLUX … RESOLUTION went to the temporary file.
  const std::string bad_input = dir.file("bad-fibermap.fits");
  write_input_image(bad_input, false);
  {
    int status = 0;
    fitsfile* f = nullptr;
    fits_open_file(&f, bad_input.c_str(), READWRITE, &status);
    long naxes[1] = {3};
    fits_create_img(f, FLOAT_IMG, 1, naxes, &status);
    fits_update_key_str(f, "EXTNAME", "FIBERMAP", nullptr, &status);
    fits_close_file(f, &status);
    REQUIRE(status == 0);
  }
  try {
    perfex::io::write_frame(path, other, {bad_input, "psf.fits"});
    FAIL("write_frame did not throw");
  } catch (const perfex::Error& e) {
    CHECK_THAT(e.what(), Catch::Contains(bad_input) && Catch::Contains("FIBERMAP"));
  }
  CHECK(file_bytes(path) == before);
  // The input image is not a FITS file at all.
  const std::string garbage = dir.file("garbage.fits");
  { std::ofstream(garbage) << "this is not a FITS file"; }
  try {
    perfex::io::write_frame(path, other, {garbage, "psf.fits"});
    FAIL("write_frame did not throw");
  } catch (const perfex::Error& e) {
    CHECK_THAT(e.what(), Catch::Contains(garbage));
  }
  CHECK(file_bytes(path) == before);
  auto names = dir.entries();
  std::sort(names.begin(), names.end());
  CHECK(names == std::vector<std::string>{"bad-fibermap.fits", "frame.fits", "garbage.fits"});
  CHECK(perfex::io::read_frame(path).nspec == 3);

  // An inconsistent frame is rejected before anything is written.
  auto broken = small_frame();
  broken.flux.pop_back();
  CHECK_THROWS_WITH(perfex::io::write_frame(path, broken, {}),
                    Catch::Contains(path) && Catch::Contains("flux"));
  CHECK(file_bytes(path) == before);

  // A model cannot be written from a frame without one.
  CHECK_THROWS_WITH(perfex::io::write_model(dir.file("model.fits"), fr, {}),
                    Catch::Contains("model.fits"));
  CHECK(dir.entries().size() == 3);
}

TEST_CASE("frame FITS: errors name the file and the HDU", "[io]") {
  TempDir dir;
  const std::string missing = dir.file("no-such-frame.fits");
  CHECK_THROWS_WITH(perfex::io::read_frame(missing), Catch::Contains(missing));
  const std::string unwritable = dir.file("no-such-folder/frame.fits");
  CHECK_THROWS_WITH(perfex::io::write_frame(unwritable, small_frame(), {}),
                    Catch::Contains(unwritable));

  // A file with FLUX but without the other HDUs.
  const std::string partial = dir.file("partial.fits");
  perfex::io::write_frame(partial, small_frame(), {});
  {
    int status = 0;
    fitsfile* f = nullptr;
    fits_open_file(&f, partial.c_str(), READWRITE, &status);
    int type = 0;
    fits_movnam_hdu(f, ANY_HDU, const_cast<char*>("RESOLUTION"), 0, &status);
    fits_delete_hdu(f, &type, &status);
    fits_close_file(f, &status);
    REQUIRE(status == 0);
  }
  CHECK_THROWS_WITH(perfex::io::read_frame(partial),
                    Catch::Contains(partial) && Catch::Contains("RESOLUTION"));
}

TEST_CASE("frame FITS: an unknown DECORR or GEOMETRY is refused by name", "[io]") {
  TempDir dir;
  for (const char* key : {"DECORR", "GEOMETRY"}) {
    CAPTURE(key);
    const std::string path = dir.file(std::string(key) + ".fits");
    perfex::io::write_frame(path, small_frame(), {});
    int status = 0;
    fitsfile* f = nullptr;
    fits_open_file(&f, path.c_str(), READWRITE, &status);
    fits_update_key_str(f, key, "sideways", nullptr, &status);
    fits_close_file(f, &status);
    REQUIRE(status == 0);
    CHECK_THROWS_WITH(
        perfex::io::read_frame(path),
        Catch::Contains(path) &&
            Catch::Contains("keyword '" + std::string(key) + "' has the unknown value 'sideways'"));
  }
}

TEST_CASE("frame FITS: frames of other writers read with defaults", "[io]") {
  TempDir dir;
  const std::string path = dir.file("foreign.fits");
  const auto fr = small_frame();
  perfex::io::write_frame(path, fr, {});
  {
    int status = 0, type = 0;
    fitsfile* f = nullptr;
    fits_open_file(&f, path.c_str(), READWRITE, &status);
    for (const char* key : {"GRIDWMIN", "GRIDWMAX", "GRIDDW", "BUNDSIZE", "NSUBBUND", "DECORR",
                            "NDIAG", "NPATCH", "SPECMIN", "EXTTIME", "NNONFIN"})
      fits_delete_key(f, key, &status);
    fits_movnam_hdu(f, ANY_HDU, const_cast<char*>("PIXMASK_FRACTION"), 0, &status);
    fits_delete_hdu(f, &type, &status);
    fits_close_file(f, &status);
    REQUIRE(status == 0);
  }
  const auto back = perfex::io::read_frame(path);
  const perfex::extract::ExtractionOptions defaults;
  CHECK(back.nspec == fr.nspec);
  CHECK(back.nwave == fr.nwave);
  CHECK(back.ndiag == fr.ndiag);  // from the RESOLUTION shape
  CHECK(back.specmin == 0);
  CHECK(back.options.dw == 0.8);  // WAVESTEP
  CHECK(back.options.bundlesize == defaults.bundlesize);
  CHECK(back.options.decorrelation == defaults.decorrelation);
  CHECK(back.options.psferr == 0.01);
  CHECK(back.pixmask_fraction == std::vector<double>(fr.flux.size(), 0.0));
  CHECK(back.wave == fr.wave);
}

TEST_CASE("frame FITS: model image", "[io]") {
  TempDir dir;
  auto fr = small_frame();
  fr.model_rows = 5;
  fr.model_cols = 4;
  for (int i = 0; i < 20; ++i) fr.model.push_back(0.1 * i + 1.0 / 3.0);
  const std::string path = dir.file("model.fits");
  perfex::io::write_model(path, fr, {"img.fits", "psf.fits"});
  Reader r(path);
  r.hdu(1);
  CHECK(r.str("EXTNAME") == "MODEL");
  CHECK(r.bitpix() == DOUBLE_IMG);
  std::vector<double> back(20);
  int status = 0, anynul = 0;
  long naxes[2] = {0, 0};
  fits_get_img_size(r.f, 2, naxes, &status);
  CHECK(naxes[0] == 4);
  CHECK(naxes[1] == 5);
  fits_read_img(r.f, TDOUBLE, 1, 20, nullptr, back.data(), &anynul, &status);
  REQUIRE(status == 0);
  CHECK(back == fr.model);
  CHECK(dir.entries() == std::vector<std::string>{"model.fits"});
}

TEST_CASE("frame FITS: a symbolic link is written through, a .gz name is compressed", "[io]") {
  TempDir dir;
  const auto fr = small_frame();
  // The link stays a link; the file it points to receives the frame.
  const std::string target = dir.file("target.fits"), link = dir.file("link.fits");
  { std::ofstream(target) << "old contents"; }
  REQUIRE(symlink("target.fits", link.c_str()) == 0);
  perfex::io::write_frame(link, fr, {"", "psf.fits"});
  CHECK(fs::is_symlink(link));
  CHECK(fs::read_symlink(link) == "target.fits");
  CHECK(perfex::io::read_frame(target).flux == perfex::io::read_frame(link).flux);
  CHECK(perfex::io::read_frame(target).nspec == fr.nspec);

  // gzip, read back transparently (float32 on disk).
  const std::string gz = dir.file("frame.fits.gz");
  perfex::io::write_frame(gz, fr, {"", "psf.fits"});
  const std::string bytes = file_bytes(gz);
  REQUIRE(bytes.size() > 2);
  CHECK(static_cast<unsigned char>(bytes[0]) == 0x1f);
  CHECK(static_cast<unsigned char>(bytes[1]) == 0x8b);
  const auto back = perfex::io::read_frame(gz);
  REQUIRE(back.flux.size() == fr.flux.size());
  for (std::size_t i = 0; i < fr.flux.size(); ++i) CHECK(back.flux[i] == as_f4(fr.flux[i]));
  CHECK(back.mask == fr.mask);
  auto names = dir.entries();
  std::sort(names.begin(), names.end());
  CHECK(names == std::vector<std::string>{"frame.fits.gz", "link.fits", "target.fits"});
}

TEST_CASE("frame FITS: the run's notes and warnings are in the FLUX header", "[io]") {
  TempDir dir;
  auto fr = small_frame();
  fr.warnings = {"patch of fibres 2-4 failed"};
  perfex::io::FrameProvenance prov{"", "psf.fits"};
  prov.notes = {"nwavestep 1000 exceeds the grid's 17 wavelengths: using 50"};
  const std::string path = dir.file("frame.fits");
  perfex::io::write_frame(path, fr, prov);
  Reader r(path);
  r.hdu(1);
  CHECK(r.dbl("NWARN") == 2);
  std::string comments;
  int nkeys = 0, status = 0;
  fits_get_hdrspace(r.f, &nkeys, nullptr, &status);
  char card[FLEN_CARD];
  for (int i = 1; i <= nkeys; ++i) {
    fits_read_record(r.f, i, card, &status);
    if (std::string(card).rfind("COMMENT", 0) == 0) comments += std::string(card + 8) + "|";
  }
  REQUIRE(status == 0);
  CHECK_THAT(comments, Catch::Contains("perfex warning: nwavestep 1000 exceeds") &&
                           Catch::Contains("perfex warning: patch of fibres 2-4 failed"));
}
#endif  // PERFEX_TEST_HAVE_IO
