// Preproc images: masks, non-finite pixels, negative ivar, the real simulated image.
#include "perfex_test.hpp"

#ifdef PERFEX_TEST_HAVE_IO
#include "io/io_test_util.hpp"

#include <cmath>
#include <limits>

#include <perfex/io/fits.hpp>
#include <perfex/io/image_fits.hpp>

using perfex::io::read_preproc;
using perfex::io::write_preproc;

TEST_CASE("io: preproc images round trip with the DESI mask rule", "[io]") {
  perfex_io_test::TempDir tmp;
  perfex::extract::CcdImage img;
  img.nrows = 3;
  img.ncols = 4;
  for (int n = 0; n < 12; ++n) {
    img.pixels.push_back(0.5 * n - 1.0);
    img.ivar.push_back(0.25 + n);
  }
  img.pixels[5] = std::numeric_limits<double>::quiet_NaN();
  img.ivar[6] = std::numeric_limits<double>::infinity();
  std::vector<std::int32_t> mask(12, 0);
  mask[1] = 1;     // BAD: masks
  mask[2] = 256;   // BADREADNOISE: does not mask
  mask[3] = 512;   // BADAMP: masks
  mask[4] = 1024;  // outside 0x2FF
  const std::string path = tmp.file("pre.fits");
  write_preproc(path, img, mask);
  auto r = read_preproc(path);
  CHECK(r.path == path);
  REQUIRE(r.ccd.nrows == 3);
  REQUIRE(r.ccd.ncols == 4);
  CHECK(r.masked_pixels == 2);
  CHECK(r.nonfinite_pixels == 2);
  CHECK_FALSE(r.has_fibermap);
  for (int n = 0; n < 12; ++n) {
    if (n == 5 || n == 6) {
      CHECK(r.ccd.pixels[n] == 0.0);
      CHECK(r.ccd.ivar[n] == 0.0);
    } else {
      CHECK(r.ccd.pixels[n] == img.pixels[n]);
      CHECK(r.ccd.ivar[n] == ((n == 1 || n == 3) ? 0.0 : img.ivar[n]));
    }
  }
  // gpu_specter's own rule: any bit masks.
  CHECK(read_preproc(path, 0xFFFFFFFFu).masked_pixels == 4);
  // No mask given: MASK written as zeros.
  write_preproc(tmp.file("nomask.fits"), img, {});
  CHECK(read_preproc(tmp.file("nomask.fits")).masked_pixels == 0);
  // Float32 on disk.
  perfex::io::FitsFile f = perfex::io::FitsFile::open(path);
  CHECK(f.read_key<long>("BITPIX") == -32);
  f.move_to("MASK");
  CHECK(f.read_key<long>("BITPIX") == 32);
}

TEST_CASE("io: a box of a preproc image is read alone, in CCD coordinates", "[io]") {
  perfex_io_test::TempDir tmp;
  perfex::extract::CcdImage img;
  img.nrows = 5;
  img.ncols = 6;
  for (int n = 0; n < 30; ++n) {
    img.pixels.push_back(n);
    img.ivar.push_back(1.0 + n);
  }
  img.pixels[2 * 6 + 3] = std::numeric_limits<double>::quiet_NaN();
  std::vector<std::int32_t> mask(30, 0);
  mask[3 * 6 + 2] = 1;
  const std::string path = tmp.file("pre.fits");
  write_preproc(path, img, mask);
  const perfex::extract::PixelBox ccd = perfex::io::preproc_extent(path);
  CHECK(ccd.row1 == 5);
  CHECK(ccd.col1 == 6);
  const auto whole = read_preproc(path);
  const auto part = read_preproc(path, 0x2FF, {1, 4, 2, 5});  // rows 1-3, columns 2-4
  REQUIRE(part.ccd.nrows == 3);
  REQUIRE(part.ccd.ncols == 3);
  CHECK(part.ccd.region.row0 == 1);
  CHECK(part.ccd.region.col0 == 2);
  CHECK(part.ccd.region.ccd_rows == 5);
  CHECK(part.ccd.region.ccd_cols == 6);
  CHECK(part.nonfinite_pixels == 1);
  CHECK(part.masked_pixels == 1);
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 3; ++c) {
      const std::size_t i = static_cast<std::size_t>(r) * 3 + c;
      const std::size_t w = static_cast<std::size_t>(r + 1) * 6 + c + 2;
      CHECK(part.ccd.pixels[i] == whole.ccd.pixels[w]);
      CHECK(part.ccd.ivar[i] == whole.ccd.ivar[w]);
    }
  // A negative ivar is named by its CCD position.
  img.ivar[3 * 6 + 4] = -1;
  write_preproc(tmp.file("neg.fits"), img, {});
  REQUIRE_THROWS_WITH(read_preproc(tmp.file("neg.fits"), 0x2FF, {1, 4, 2, 5}),
                      Catch::Contains("at row 3, column 4"));
  REQUIRE_THROWS_WITH(read_preproc(path, 0x2FF, {1, 6, 2, 5}), Catch::Contains("section"));
}

TEST_CASE("io: bad preproc images are reported", "[io]") {
  perfex_io_test::TempDir tmp;
  perfex::extract::CcdImage img;
  img.nrows = 2;
  img.ncols = 2;
  img.pixels = {1, 2, 3, 4};
  img.ivar = {1, 1, -1, 1};
  write_preproc(tmp.file("neg.fits"), img, {});
  REQUIRE_THROWS_WITH(read_preproc(tmp.file("neg.fits")), Catch::Contains("neg.fits") &&
                                                              Catch::Contains("'IVAR'") &&
                                                              Catch::Contains("negative"));
  REQUIRE_THROWS_WITH(read_preproc(tmp.file("absent.fits")), Catch::Contains("absent.fits"));
  img.ivar.pop_back();
  REQUIRE_THROWS_WITH(write_preproc(tmp.file("bad.fits"), img, {}), Catch::Contains("bad.fits"));
  {
    perfex::io::FitsFile f = perfex::io::FitsFile::create(tmp.file("noivar.fits"));
    f.write_image<float>("IMAGE", {2, 2}, std::vector<float>{1, 2, 3, 4});
  }
  REQUIRE_THROWS_WITH(read_preproc(tmp.file("noivar.fits")),
                      Catch::Contains("IVAR") && Catch::Contains("noivar.fits"));
  {
    perfex::io::FitsFile f = perfex::io::FitsFile::create(tmp.file("empty.fits"));
    f.write_image<float>("IMAGE", {0, 2}, std::vector<float>{});
  }
  REQUIRE_THROWS_WITH(read_preproc(tmp.file("empty.fits")),
                      Catch::Contains("'IMAGE'") && Catch::Contains("NAXIS1 (columns) = 0"));
}

TEST_CASE("io: a preproc image without MASK is read with a warning", "[io]") {
  perfex_io_test::TempDir tmp;
  perfex::extract::CcdImage img;
  img.nrows = 2;
  img.ncols = 3;
  img.pixels = {1, 2, 3, 4, 5, 6};
  img.ivar = {1, 1, 0, 1, 1, 1};
  {
    perfex::io::FitsFile f = perfex::io::FitsFile::create(tmp.file("nomask.fits"));
    f.write_image<double>("IMAGE", {3, 2}, img.pixels);
    f.write_image<double>("IVAR", {3, 2}, img.ivar);
  }
  const auto r = read_preproc(tmp.file("nomask.fits"));
  CHECK(r.ccd.ivar == img.ivar);
  REQUIRE(r.warnings.size() == 1);
  CHECK_THAT(r.warnings[0], Catch::Contains("nomask.fits") && Catch::Contains("no MASK HDU"));
  write_preproc(tmp.file("withmask.fits"), img, {});
  CHECK(read_preproc(tmp.file("withmask.fits")).warnings.empty());
}

TEST_CASE("io: the simulated masked DESI image (gzip, float32)", "[io]") {
  const std::string dir = perfex_test::shared_data_dir("preproc image reading");
  if (dir.empty()) return;
  auto r = read_preproc(dir + "/sim-r0-b0-1-masked.fits.gz");
  CHECK(r.ccd.nrows == 4128);
  CHECK(r.ccd.ncols == 4114);
  CHECK(r.has_fibermap);
  CHECK(r.masked_pixels > 0);
  CHECK(r.nonfinite_pixels == 0);
  // Outside the kept rectangle everything is zero (the simulated image in the data README).
  CHECK(r.ccd.ivar[0] == 0.0);
  CHECK(r.ccd.ivar[static_cast<std::size_t>(1000) * 4114 + 300] > 0.0);
}
#endif
