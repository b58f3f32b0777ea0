// Damaged FITS headers that made CFITSIO 4.2 hang, crash or allocate without bound are
// refused as perfex::Error by FitsFile (found by the fuzz target, tests/fuzz): a negative
// GCOUNT, a fractional ZTILEn in a tile-compressed image, a numeric keyword "( 0", and data
// sizes beyond the end of the file. Keyword values keep CFITSIO's readings otherwise.
#include "perfex_test.hpp"

#ifdef PERFEX_TEST_HAVE_IO
#include "io/io_test_util.hpp"

#include <perfex/io/fits.hpp>

#include <fstream>
#include <iterator>
#include <string>
#include <vector>

using perfex::io::FitsFile;

namespace {

std::string bytes_of(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Replaces the value of the last card `key` of the file (columns 11-30) by `value`.
void patch_card(const std::string& path, const std::string& key, const std::string& value) {
  std::string b = bytes_of(path);
  std::string k = key;
  k.resize(8, ' ');
  std::size_t at = std::string::npos;
  for (std::size_t c = 0; c + 80 <= b.size(); c += 80)
    if (b.compare(c, 8, k) == 0 && b[c + 8] == '=') at = c;
  REQUIRE(at != std::string::npos);
  std::string field(70, ' ');
  field.replace(20 - std::min<std::size_t>(20, value.size()), value.size(), value);
  b.replace(at + 10, 70, field);
  std::ofstream(path, std::ios::binary) << b;
}

void write_two_images(const std::string& path) {
  FitsFile f = FitsFile::create(path);
  f.write_image<float>("A", {3, 2}, std::vector<float>(6, 1.0f));
  f.write_image<float>("B", {3, 2}, std::vector<float>(6, 2.0f));
}

}  // namespace

TEST_CASE("io: damaged structural keywords are refused before CFITSIO walks them", "[io]") {
  perfex_io_test::TempDir tmp;
  const std::string path = tmp.file("gcount.fits");
  write_two_images(path);
  patch_card(path, "GCOUNT", "-32");  // CFITSIO 4.2 loops forever moving to the next HDU
  CHECK_THROWS_WITH(FitsFile::open(path), Catch::Contains("gcount.fits") &&
                                              Catch::Contains("HDU 1") &&
                                              Catch::Contains("'GCOUNT' = -32 is invalid"));
  write_two_images(path);
  patch_card(path, "NAXIS2", "2.5");
  CHECK_THROWS_WITH(FitsFile::open(path), Catch::Contains("'NAXIS2' = 2.5"));

  // A tile-compressed image whose tile size is 0.5 (CFITSIO divides by zero).
  const std::string packed = tmp.file("packed.fits");
  {
    int status = 0;
    fitsfile* f = nullptr;
    fits_create_file(&f, packed.c_str(), &status);
    fits_set_compression_type(f, GZIP_1, &status);
    long axes[2] = {40, 30};
    fits_create_img(f, FLOAT_IMG, 2, axes, &status);
    std::vector<float> pix(1200, 3.0f);
    fits_write_img(f, TFLOAT, 1, 1200, pix.data(), &status);
    fits_close_file(f, &status);
    REQUIRE(status == 0);
  }
  CHECK(FitsFile::open(packed).num_hdus() == 2);
  patch_card(packed, "ZTILE2", "0.5");
  CHECK_THROWS_WITH(FitsFile::open(packed), Catch::Contains("'ZTILE2' = 0.5 is invalid"));
}

TEST_CASE("io: keyword values are converted by perfex, as CFITSIO reads them", "[io]") {
  perfex_io_test::TempDir tmp;
  const std::string path = tmp.file("keys.fits");
  {
    FitsFile f = FitsFile::create(path);
    f.write_image<float>("A", {2}, std::vector<float>{1, 2});
    for (const char* k : {"DEXP", "QUOTED", "REALINT", "HALF", "PAREN", "BOOL", "HUGE"})
      f.write_key(k, 0);
  }
  patch_card(path, "DEXP", "1.5D+03");
  patch_card(path, "QUOTED", "'3'");
  patch_card(path, "REALINT", "3.0");
  patch_card(path, "HALF", "2.5");
  // CFITSIO 4.2's own conversion of this (damaged SPECMIN card) overflows a buffer.
  patch_card(path, "PAREN", "(        0 / first fibre (0-based camera index)");
  patch_card(path, "BOOL", "T");
  patch_card(path, "HUGE", "1E400");
  FitsFile f = FitsFile::open(path);
  CHECK(f.read_key<double>("DEXP") == 1500.0);
  CHECK(f.read_key<int>("QUOTED") == 3);
  CHECK(f.read_key<int>("REALINT") == 3);
  CHECK(f.read_key<double>("HALF") == 2.5);
  CHECK_THROWS_WITH(f.read_key<int>("HALF"),
                    Catch::Contains("'HALF'") && Catch::Contains("not an integer"));
  CHECK_THROWS_WITH(f.read_key<long long>("PAREN"),
                    Catch::Contains("'PAREN'") && Catch::Contains("not an integer"));
  CHECK_THROWS_WITH(f.read_key<double>("PAREN"), Catch::Contains("is not a number"));
  CHECK(f.read_key<bool>("BOOL"));
  CHECK_THROWS_WITH(f.read_key<bool>("DEXP"), Catch::Contains("not a logical"));
  CHECK_THROWS_WITH(f.read_key<double>("HUGE"), Catch::Contains("'HUGE'"));
  CHECK_FALSE(f.read_key_optional<int>("ABSENT").has_value());
}

TEST_CASE("io: data a header claims beyond the end of the file is never allocated", "[io]") {
  perfex_io_test::TempDir tmp;
  const std::string path = tmp.file("big.fits");
  write_two_images(path);
  patch_card(path, "NAXIS1", "2000000000");  // 16 GB of doubles for a 8 kB file
  FitsFile f = FitsFile::open(path);
  f.move_to("B");
  CHECK_THROWS_WITH(f.read_image<double>(), Catch::Contains("'B'") &&
                                                Catch::Contains("the header describes") &&
                                                Catch::Contains("truncated or damaged"));
}
#endif
