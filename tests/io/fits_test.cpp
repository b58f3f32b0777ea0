// perfex::io::FitsFile: keywords, images, tables, copies and error messages.
#include "perfex_test.hpp"

#ifdef PERFEX_TEST_HAVE_IO
#include "io/io_test_util.hpp"

#include <cmath>
#include <cstdint>

#include <perfex/io/fits.hpp>

using perfex::io::FitsFile;

TEST_CASE("io: FITS images, keywords and tables round trip", "[io]") {
  perfex_io_test::TempDir tmp;
  const std::string path = tmp.file("a.fits");
  const std::vector<double> d{1.5, -2.25, 3.0, 1e-300, 4.0, 5.0};
  const std::vector<std::int32_t> i32{1, -2, 3, 2147483647, -2147483647 - 1, 0};
  const std::vector<std::uint32_t> u32{0u, 1u, 4294967295u, 7u, 8u, 9u};
  const std::vector<std::int64_t> i64{1, -2, 3, 9007199254740993LL, -5, 6};
  const std::vector<float> f32{0.5f, 1.5f, 2.5f, 3.5f, 4.5f, 5.5f};
  {
    FitsFile f = FitsFile::create(path);
    f.write_image<double>("D", {3, 2}, d);
    f.write_key("DKEY", 0.1 + 0.2, "a double");
    f.write_key("LKEY", 123456789012LL);
    f.write_key("SKEY", "hello");
    f.write_key("BKEY", true);
    f.write_image<std::int32_t>("I32", {3, 2}, i32);
    f.write_image<std::uint32_t>("U32", {6}, u32);
    f.write_image<std::int64_t>("I64", {2, 3}, i64);
    f.write_image<float>("F32", {3, 2}, f32);
    f.create_table("TAB", 2,
                   {{"NAME", "8A", "", {}}, {"VEC", "6D", "Angstrom", {3, 2}}, {"N", "J", "", {}}});
    f.write_column_strings("NAME", {"ab", "cdefgh"});
    f.write_column<double>("VEC", {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
    f.write_column<std::int32_t>("N", {42, -7});
    f.close();
  }
  FitsFile f = FitsFile::open(path);
  CHECK(f.num_hdus() == 6);
  auto img = f.read_image<double>("D");
  CHECK(img.axes == std::vector<long>{3, 2});
  CHECK(img.data == d);
  CHECK(f.hdu_index() == 0);
  CHECK(f.hdu_type() == perfex::io::HduType::image);
  CHECK(f.read_key<double>("DKEY") == 0.1 + 0.2);
  CHECK(f.read_key<long long>("LKEY") == 123456789012LL);
  CHECK(f.read_key<std::string>("SKEY") == "hello");
  CHECK(f.read_key<bool>("BKEY"));
  CHECK_FALSE(f.read_key_optional<double>("NOPE").has_value());
  double v = 7;
  CHECK_FALSE(f.read_key("NOPE", v));
  CHECK(v == 7);
  CHECK(f.read_image<std::int32_t>("I32").data == i32);
  CHECK(f.read_image<std::uint32_t>("U32").data == u32);
  CHECK(f.read_image<std::int64_t>("I64").data == i64);
  CHECK(f.read_image<float>("F32").data == f32);
  f.move_to("F32");
  CHECK(f.read_key<long>("BITPIX") == -32);
  f.move_to("I64");
  CHECK(f.read_key<long>("BITPIX") == 64);
  f.move_to("TAB");
  CHECK(f.hdu_type() == perfex::io::HduType::binary_table);
  CHECK(f.num_rows() == 2);
  CHECK(f.read_column_strings("NAME") == std::vector<std::string>{"ab", "cdefgh"});
  CHECK(f.column_repeat("VEC") == 6);
  CHECK(f.column_dims("VEC") == std::vector<long>{3, 2});
  CHECK(f.read_column<double>("VEC")[11] == 12.0);
  CHECK(f.read_column<std::int32_t>("N") == std::vector<std::int32_t>{42, -7});
  CHECK(f.has_hdu("I32"));
  CHECK_FALSE(f.has_hdu("NOPE"));
  CHECK(f.hdu_label() == "HDU 'TAB'");  // has_hdu does not move

  SECTION("errors name the file, HDU, keyword and column") {
    REQUIRE_THROWS_WITH(f.move_to("NOPE"), Catch::Contains(path) && Catch::Contains("'NOPE'"));
    REQUIRE_THROWS_WITH(f.read_key<double>("MISSING"),
                        Catch::Contains("HDU 'TAB'") && Catch::Contains("'MISSING'"));
    REQUIRE_THROWS_WITH(f.read_column<double>("NOCOL"),
                        Catch::Contains("column 'NOCOL'") && Catch::Contains(path));
    REQUIRE_THROWS_WITH(f.read_key<double>("TTYPE1"), Catch::Contains("keyword 'TTYPE1'"));
    REQUIRE_THROWS_WITH(f.read_image<double>(), Catch::Contains("not an image HDU"));
    REQUIRE_THROWS_WITH(FitsFile::open(tmp.file("none.fits")), Catch::Contains("none.fits"));
  }
  SECTION("HDU and header copies") {
    const std::string out = tmp.file("b.fits");
    {
      FitsFile o = FitsFile::create(out);
      o.write_image<float>("IMAGE", {3, 2}, f32);
      f.move_to("D");
      o.copy_header_cards_from(f);
      o.copy_hdu_from(f, "TAB");
      o.close();
    }
    FitsFile o = FitsFile::open(out);
    o.move_to("IMAGE");
    CHECK(o.read_key<std::string>("SKEY") == "hello");
    CHECK(o.read_key<double>("DKEY") == 0.1 + 0.2);
    CHECK(o.read_key<long>("BITPIX") == -32);
    o.move_to("TAB");
    CHECK(o.read_column_strings("NAME")[1] == "cdefgh");
    CHECK(o.read_column<double>("VEC")[5] == 6.0);
  }
}

TEST_CASE("io: FITS image sections, row copies, long strings and checksums", "[io]") {
  perfex_io_test::TempDir tmp;
  const std::string path = tmp.file("s.fits");
  std::vector<double> pix(4 * 3 * 2);
  for (std::size_t n = 0; n < pix.size(); ++n) pix[n] = static_cast<double>(n);
  const std::string long_value(150, 'x');
  {
    FitsFile f = FitsFile::create(path);
    f.write_image<double>("CUBE", {4, 3, 2}, pix);
    f.write_long_string_key("LONGSTR", long_value, "longer than one card");
    f.write_checksum();
    f.create_table("TAB", 3, {{"ID", "K", "", {}}, {"NAME", "4A", "", {}}});
    f.write_column<long long>("ID", {10, 11, 12});
    f.write_column<long long>("ID", {21}, 2);  // one cell, row 2
    f.write_column_strings("NAME", {"a", "b", "c"});
    f.close();
  }
  FitsFile f = FitsFile::open(path);
  f.move_to("CUBE");
  // Columns 1..2, rows 1..2, plane 1 of the 4 x 3 x 2 cube (NAXIS1 first, 0-based, [begin, end)).
  const auto box = f.read_image_section<double>({1, 1, 1}, {3, 3, 2});
  CHECK(box.axes == std::vector<long>{2, 2, 1});
  CHECK(box.data == std::vector<double>{17, 18, 21, 22});
  CHECK(f.read_image_section<float>({0, 0, 0}, {4, 3, 2}).data.size() == pix.size());
  for (auto bad : {std::vector<long>{0, 0, 0, 0}, std::vector<long>{0, 3, 0}})
    REQUIRE_THROWS_WITH(
        f.read_image_section<double>(bad, {4, 3, 2}),
        Catch::Contains(path) && Catch::Contains("HDU 'CUBE'") && Catch::Contains("image section"));
  f.move_to("TAB");
  CHECK(f.read_column<long long>("ID") == std::vector<long long>{10, 21, 12});

  // Rows 3, none, 1 of TAB into a new file.
  const std::string out = tmp.file("rows.fits");
  {
    FitsFile o = FitsFile::create(out);
    o.write_image<float>("IMAGE", {1}, std::vector<float>{0.0f});
    o.copy_table_rows_from(f, {3, 0, 1});
    o.close();
  }
  FitsFile o = FitsFile::open(out);
  o.move_to("TAB");
  CHECK(o.num_rows() == 3);
  CHECK(o.read_column<long long>("ID") == std::vector<long long>{12, 0, 10});
  CHECK(o.read_column_strings("NAME") == std::vector<std::string>{"c", "", "a"});
  f.move_to("CUBE");
  REQUIRE_THROWS_WITH(FitsFile::create(tmp.file("x.fits")).copy_table_rows_from(f, {1}),
                      Catch::Contains("not a binary table"));

  // What CFITSIO itself reads: the whole long string and valid checksums.
  f.close();
  perfex_io_test::edit_with_cfitsio(path, "CUBE", [&](fitsfile* raw, int& status) {
    char* v = nullptr;
    fits_read_key_longstr(raw, "LONGSTR", &v, nullptr, &status);
    REQUIRE(status == 0);
    CHECK(std::string(v) == long_value);
    fits_free_memory(v, &status);
    int dataok = 0, hduok = 0;
    fits_verify_chksum(raw, &dataok, &hduok, &status);
    CHECK(dataok == 1);
    CHECK(hduok == 1);
  });
}

TEST_CASE("io: FitsFile is movable and closes once", "[io]") {
  perfex_io_test::TempDir tmp;
  FitsFile a = FitsFile::create(tmp.file("m.fits"));
  a.write_image<double>("X", {1}, std::vector<double>{1.0});
  FitsFile b(std::move(a));
  CHECK_FALSE(a.is_open());
  CHECK(b.is_open());
  FitsFile c;
  c = std::move(b);
  CHECK(c.path() == tmp.file("m.fits"));
  c.close();
  CHECK_FALSE(c.is_open());
  CHECK(FitsFile::open(tmp.file("m.fits")).read_image<double>("X").data[0] == 1.0);
}
#endif
