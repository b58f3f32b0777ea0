// PSF files: the real file's inventory, exact write → read round trips, and every kind of
// bad input reported as perfex::Error naming the culprit.
#include "perfex_test.hpp"

#ifdef PERFEX_TEST_HAVE_IO
#include "io/io_test_util.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iterator>
#include <limits>

#include <perfex/io/fits.hpp>
#include <perfex/io/psf_files.hpp>
#include <perfex/psf/synthetic.hpp>

using perfex::io::FitsFile;
using perfex::io::read_gauss_hermite_psf;
using perfex::io::read_psf;
using perfex::io::write_psf;

namespace {

void check_equal(const perfex::psf::GaussHermitePsfData& a,
                 const perfex::psf::GaussHermitePsfData& b) {
  CHECK(a.nfib == b.nfib);
  CHECK(a.fibermin == b.fibermin);
  CHECK(a.hsizex == b.hsizex);
  CHECK(a.hsizey == b.hsizey);
  CHECK(a.ghdegx == b.ghdegx);
  CHECK(a.ghdegy == b.ghdegy);
  CHECK(a.legdeg == b.legdeg);
  CHECK(a.npix_x == b.npix_x);
  CHECK(a.npix_y == b.npix_y);
  CHECK(a.psferr == b.psferr);
  CHECK(a.wavemin == b.wavemin);
  CHECK(a.wavemax == b.wavemax);
  for (auto t :
       {&perfex::psf::GaussHermitePsfData::xtrace, &perfex::psf::GaussHermitePsfData::ytrace}) {
    CHECK((a.*t).wavemin == (b.*t).wavemin);
    CHECK((a.*t).wavemax == (b.*t).wavemax);
    CHECK((a.*t).ncoeff == (b.*t).ncoeff);
    CHECK((a.*t).coeff == (b.*t).coeff);
  }
  CHECK(a.param_names == b.param_names);
  CHECK(a.coeff == b.coeff);
}

// A valid small PSF file to damage.
std::string good_file(const perfex_io_test::TempDir& tmp, const std::string& name) {
  perfex::psf::SyntheticPsfOptions o;
  o.nfib = 6;
  o.bundlesize = 3;
  const std::string path = tmp.file(name);
  write_psf(path, perfex::psf::make_synthetic_psf(o));
  return path;
}

}  // namespace

TEST_CASE("io: inventory of the real PSF", "[io]") {
  const std::string dir = perfex_test::shared_data_dir("real PSF inventory");
  if (dir.empty()) return;
  const auto d = read_gauss_hermite_psf(dir + "/psf-r0-00051060.fits");
  CHECK(d.source == dir + "/psf-r0-00051060.fits");
  CHECK(d.nfib == 500);
  CHECK(d.fibermin == 0);
  CHECK(d.nparam() == 59);
  CHECK(d.legdeg == 3);
  CHECK(d.hsizex == 8);
  CHECK(d.hsizey == 5);
  CHECK(d.ghdegx == 6);
  CHECK(d.ghdegy == 6);
  CHECK(d.npix_x == 4114);
  CHECK(d.npix_y == 4128);
  CHECK(d.xtrace.wavemin == 5543.0);
  CHECK(d.xtrace.wavemax == 7826.0);
  CHECK(d.ytrace.wavemin == 5543.0);
  CHECK(d.ytrace.wavemax == 7826.0);
  CHECK(d.xtrace.ncoeff == 7);
  CHECK(d.ytrace.ncoeff == 7);
  CHECK(d.wavemin == 5543.0);
  CHECK(d.wavemax == 7827.0);
  CHECK(d.psferr == 0.01);  // PSFERR absent (the file has PSFERROR = 0)
  CHECK(d.param_names.front() == "GHSIGX");
  CHECK(d.param_names[2] == "GH-0-0");
  CHECK(d.param_names.back() == "CONT");
  CHECK(d.param_index("TAILINDE") == 55);
  // TAILAMP ≡ 0; GH-0-0 constant term 1 for every fibre.
  const int ta = d.param_index("TAILAMP"), g00 = d.param_index("GH-0-0");
  for (int f = 0; f < 500; ++f) {
    CHECK(d.c(g00, f, 0) == 1.0);
    for (int m = 0; m < 4; ++m) REQUIRE(d.c(ta, f, m) == 0.0);
  }
  REQUIRE_THROWS_WITH(d.param_index("GH-9-9"),
                      Catch::Contains("GH-9-9") && Catch::Contains("psf-r0-00051060"));

  perfex_io_test::TempDir tmp;
  write_psf(tmp.file("copy.fits"), d);
  const auto e = read_gauss_hermite_psf(tmp.file("copy.fits"));
  check_equal(d, e);
}

TEST_CASE("io: synthetic PSF write -> read round trip is exact", "[io]") {
  perfex_io_test::TempDir tmp;
  perfex::psf::SyntheticPsfOptions o;
  o.nfib = 50;
  o.psferr = 0.04;
  auto d = perfex::psf::make_synthetic_psf(o);
  d.coeff[17] = 0.1 + 0.2;  // a value needing all 17 digits
  d.xtrace.coeff[3] = std::nextafter(123.4, 200.0);
  write_psf(tmp.file("s.fits"), d);
  const auto e = read_gauss_hermite_psf(tmp.file("s.fits"));
  CHECK(e.source == tmp.file("s.fits"));
  check_equal(d, e);
  FitsFile f = FitsFile::open(tmp.file("s.fits"));
  CHECK(f.read_key<std::string>("PSFTYPE") == "GAUSS-HERMITE");
  f.move_to("PSF");
  CHECK(f.column_dims("COEFF") == std::vector<long>{4, 50});
}

TEST_CASE("io: bad PSF files are reported, naming the culprit", "[io]") {
  perfex_io_test::TempDir tmp;

  SECTION("missing file") {
    REQUIRE_THROWS_WITH(read_psf(tmp.file("absent.fits")), Catch::Contains("absent.fits"));
  }
  SECTION("not a FITS file") {
    std::ofstream(tmp.file("text.fits")) << "this is not a FITS file\n";
    REQUIRE_THROWS_WITH(read_psf(tmp.file("text.fits")), Catch::Contains("text.fits"));
  }
  SECTION("truncated file") {
    const std::string path = good_file(tmp, "full.fits");
    std::ifstream in(path, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    for (std::size_t keep : {bytes.size() - 2880, bytes.size() / 2, std::size_t(4000)}) {
      std::ofstream(tmp.file("cut.fits"), std::ios::binary) << bytes.substr(0, keep);
      REQUIRE_THROWS_WITH(read_psf(tmp.file("cut.fits")), Catch::Contains("cut.fits"));
    }
  }
  SECTION("missing HDU") {
    const std::string path = good_file(tmp, "nohdu.fits");
    perfex_io_test::edit_with_cfitsio(path, "YTRACE", [](fitsfile* f, int& status) {
      int type = 0;
      fits_delete_hdu(f, &type, &status);
    });
    REQUIRE_THROWS_WITH(read_psf(path), Catch::Contains("nohdu.fits") && Catch::Contains("YTRACE"));
  }
  SECTION("missing keywords") {
    for (auto hk : {std::pair<const char*, const char*>{"PSF", "HSIZEX"},
                    {"PSF", "LEGDEG"},
                    {"PSF", "GHDEGY"},
                    {"PSF", "WAVEMAX"},
                    {"PSF", "NPIX_Y"},
                    {"YTRACE", "WAVEMIN"},
                    {"XTRACE", "WAVEMAX"}}) {
      const std::string path =
          good_file(tmp, std::string("nokey-") + hk.first + hk.second + ".fits");
      {
        FitsFile f = FitsFile::open_readwrite(path);
        f.move_to(hk.first);
        f.delete_key(hk.second);
      }
      REQUIRE_THROWS_WITH(read_psf(path), Catch::Contains(std::string("'") + hk.second + "'") &&
                                              Catch::Contains(std::string("'") + hk.first + "'") &&
                                              Catch::Contains(path));
    }
  }
  SECTION("missing parameter") {
    const std::string path = good_file(tmp, "noparam.fits");
    {
      FitsFile f = FitsFile::open_readwrite(path);
      f.move_to("PSF");
      auto names = f.read_column_strings("PARAM");
      for (auto& n : names)
        if (n == "GH-3-2") n = "XX-3-2";
      f.write_column_strings("PARAM", names);
    }
    REQUIRE_THROWS_WITH(read_psf(path), Catch::Contains("GH-3-2") && Catch::Contains(path));
  }
  SECTION("keyword values the model cannot take") {
    for (auto kv : {std::pair<const char*, int>{"HSIZEX", 30}, {"GHDEGY", 11}, {"LEGDEG", 40}}) {
      const std::string path = good_file(tmp, std::string("value-") + kv.first + ".fits");
      {
        FitsFile f = FitsFile::open_readwrite(path);
        f.move_to("PSF");
        f.write_key(kv.first, kv.second);
      }
      REQUIRE_THROWS_WITH(read_psf(path), Catch::Contains(kv.first) && Catch::Contains(path));
    }
  }
  SECTION("inconsistent degrees") {
    const std::string path = good_file(tmp, "degree.fits");
    {
      FitsFile f = FitsFile::open_readwrite(path);
      f.move_to("PSF");
      f.write_key("GHDEGX", 5);
    }
    REQUIRE_THROWS_WITH(read_psf(path), Catch::Contains("GH-6-0") && Catch::Contains("GHDEGX 5"));
  }
  SECTION("COEFF shape does not match LEGDEG") {
    const std::string path = good_file(tmp, "legdeg.fits");
    {
      FitsFile f = FitsFile::open_readwrite(path);
      f.move_to("PSF");
      f.write_key("LEGDEG", 2);
    }
    REQUIRE_THROWS_WITH(read_psf(path), Catch::Contains("COEFF") && Catch::Contains("LEGDEG 2"));
  }
  SECTION("COEFF shape does not match the fibre count") {
    const std::string path = tmp.file("fibres.fits");
    {
      perfex::psf::SyntheticPsfOptions o;
      o.nfib = 6;
      auto d = perfex::psf::make_synthetic_psf(o);
      write_psf(path, d);
      // Replace YTRACE and XTRACE by 5-fibre images: the table still has 6 fibres.
      for (const char* name : {"XTRACE", "YTRACE"}) {
        perfex_io_test::edit_with_cfitsio(path, name, [](fitsfile* f, int& status) {
          long axes[2] = {7, 5};
          fits_resize_img(f, DOUBLE_IMG, 2, axes, &status);
        });
      }
      FitsFile f = FitsFile::open_readwrite(path);
      for (const char* name : {"XTRACE", "YTRACE", "PSF"}) {
        f.move_to(name);
        f.write_key("FIBERMAX", 4);
      }
    }
    REQUIRE_THROWS_WITH(read_psf(path), Catch::Contains("COEFF") && Catch::Contains("5 fibres"));
  }
  SECTION("FIBERMIN/FIBERMAX disagree with the traces") {
    const std::string path = good_file(tmp, "fibermax.fits");
    {
      FitsFile f = FitsFile::open_readwrite(path);
      f.move_to("PSF");
      f.write_key("FIBERMAX", 400);
    }
    REQUIRE_THROWS_WITH(read_psf(path), Catch::Contains("FIBERMAX") && Catch::Contains("'PSF'"));
  }
  SECTION("non-finite coefficients") {
    const std::string path = good_file(tmp, "nan.fits");
    {
      FitsFile f = FitsFile::open_readwrite(path);
      f.move_to("PSF");
      auto c = f.read_column<double>("COEFF");
      c[1 * 6 * 4 + 2 * 4 + 1] = std::numeric_limits<double>::quiet_NaN();  // GHSIGY, fibre 2
      f.write_column<double>("COEFF", c);
    }
    REQUIRE_THROWS_WITH(read_psf(path), Catch::Contains("GHSIGY") && Catch::Contains("fibre 2") &&
                                            Catch::Contains("not finite"));
    const std::string path2 = good_file(tmp, "naninf.fits");
    auto img = FitsFile::open(path2).read_image<double>("XTRACE");
    img.data[3 * 7] = std::numeric_limits<double>::infinity();
    perfex_io_test::edit_with_cfitsio(path2, "XTRACE", [&](fitsfile* f, int& status) {
      fits_write_img(f, TDOUBLE, 1, static_cast<LONGLONG>(img.data.size()), img.data.data(),
                     &status);
    });
    REQUIRE_THROWS_WITH(read_psf(path2), Catch::Contains("XTRACE") && Catch::Contains("fibre 3"));
  }
  SECTION("wrong PSF type") {
    const std::string path = good_file(tmp, "type.fits");
    {
      FitsFile f = FitsFile::open_readwrite(path);
      f.write_key("PSFVER", "2");
    }
    REQUIRE_THROWS_WITH(read_psf(path), Catch::Contains("PSFVER"));
  }
  SECTION("unsupported or missing PSFVER") {
    const std::string v4 = good_file(tmp, "v4.fits");
    {
      FitsFile f = FitsFile::open_readwrite(v4);
      f.move_to("PSF");
      f.write_key("PSFVER", "4");
    }
    REQUIRE_THROWS_WITH(read_psf(v4), Catch::Contains("'PSFVER' = '4' unsupported") &&
                                          Catch::Contains("'PSF'") && Catch::Contains(v4));
    const std::string none = good_file(tmp, "noversion.fits");
    {
      FitsFile f = FitsFile::open_readwrite(none);
      f.delete_key("PSFVER");
      f.move_to("PSF");
      f.delete_key("PSFVER");
    }
    REQUIRE_THROWS_WITH(read_psf(none), Catch::Contains("no keyword 'PSFVER'") &&
                                            Catch::Contains("'PSF'") && Catch::Contains(none));
  }
  SECTION("Gauss-Hermite widths that are zero, negative or wider than the spot box") {
    // (parameter, fibre, value of every coefficient 0..LEGDEG): 6 fibres x (LEGDEG 3 + 1).
    struct Damage {
      const char* param;
      int fibre;
      double c0;
      const char* expect;
    };
    for (const Damage& dmg :
         {Damage{"GHSIGX", -1, 0.0, "fibre 0"}, Damage{"GHSIGY", 4, -1.1, "fibre 4"},
          Damage{"GHSIGX", 2, 9.0, "HSIZEX = 8"}}) {
      const std::string path = good_file(tmp, std::string("width-") + dmg.param + ".fits");
      {
        FitsFile f = FitsFile::open_readwrite(path);
        f.move_to("PSF");
        const auto names = f.read_column_strings("PARAM");
        const int p =
            static_cast<int>(std::find(names.begin(), names.end(), dmg.param) - names.begin());
        auto c = f.read_column<double>("COEFF");
        for (int fib = 0; fib < 6; ++fib)
          if (dmg.fibre < 0 || fib == dmg.fibre)
            for (int m = 0; m < 4; ++m) c[(p * 6 + fib) * 4 + m] = m == 0 ? dmg.c0 : 0.0;
        f.write_column<double>("COEFF", c);
      }
      REQUIRE_THROWS_WITH(read_psf(path), Catch::Contains(std::string("'") + dmg.param + "'") &&
                                              Catch::Contains(dmg.expect) &&
                                              Catch::Contains("'PSF'") && Catch::Contains(path));
    }
  }
  SECTION("spot boxes of one pixel") {
    const std::string path = good_file(tmp, "hsize0.fits");
    {
      FitsFile f = FitsFile::open_readwrite(path);
      f.move_to("PSF");
      f.write_key("HSIZEX", 0);
    }
    REQUIRE_THROWS_WITH(read_psf(path), Catch::Contains("HSIZEX/HSIZEY = 0/5") &&
                                            Catch::Contains("[1, 20]") && Catch::Contains("'PSF'"));
  }
  SECTION("invalid data are refused by write_psf and GaussHermitePsfData::validate") {
    auto d = perfex::psf::make_synthetic_psf(perfex::psf::SyntheticPsfOptions{});
    d.ghdegy = 7;
    REQUIRE_THROWS_WITH(write_psf(tmp.file("x.fits"), d), Catch::Contains("GH-0-7"));
    d.ghdegy = 6;
    d.hsizey = 0;
    REQUIRE_THROWS_WITH(d.validate(), Catch::Contains("HSIZEX/HSIZEY"));
    d.hsizey = 5;
    const int sy = d.param_index("GHSIGY");
    d.c(sy, 7, 1) = -3.0;  // negative at one end of the domain
    REQUIRE_THROWS_WITH(d.validate(), Catch::Contains("'GHSIGY'") && Catch::Contains("fibre 7"));
    // 1 + 0.5 u: positive on the domain (u in [-1, 1]), negative for u < -2 when extrapolated
    // (an extraction reaching there checks that range too).
    for (int m = 0; m < d.ncoeff(); ++m) d.c(sy, 7, m) = m == 0 ? 1.0 : (m == 1 ? 0.5 : 0.0);
    REQUIRE_NOTHROW(d.validate());
    const double span = d.wavemax - d.wavemin;
    CHECK_NOTHROW(d.check_widths(d.wavemin - 0.4 * span, d.wavemax));
    CHECK_THROWS_WITH(d.check_widths(d.wavemin - 0.6 * span, d.wavemax),
                      Catch::Contains("'GHSIGY'") && Catch::Contains("fibre 7"));
    d.coeff.pop_back();
    REQUIRE_THROWS_WITH(d.validate(), Catch::Contains("COEFF"));
  }
}
#endif
