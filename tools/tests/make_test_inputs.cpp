// Writes the small inputs of perfex-extract's command-line checks into a folder:
//   psf.fits            synthetic DESI-like PSF, 20 fibres, on a 1400 x 300 CCD corner
//   image.fits          a flat sky exposure of that CCD, FIBERMAP of fibres 0-14 only
//   image-nomask.fits   the same without its MASK HDU
//   image-transposed.fits  the same, 300 x 1400
//   psf-zero-sigma.fits the PSF with GHSIGX = 0 for every fibre
//   psf500.fits, image500.fits  500 fibres on an 8-row CCD strip (size checks only)
#include <perfex/io/fits.hpp>
#include <perfex/io/image_fits.hpp>
#include <perfex/io/psf_files.hpp>
#include <perfex/psf/synthetic.hpp>

#include <cstdint>
#include <iostream>
#include <string>
#include <vector>

namespace {

perfex::extract::CcdImage flat_image(int rows, int cols) {
  perfex::extract::CcdImage img;
  img.nrows = rows;
  img.ncols = cols;
  img.pixels.assign(static_cast<std::size_t>(rows) * cols, 10.0);
  img.ivar.assign(img.pixels.size(), 0.1);
  return img;
}

void add_fibermap(const std::string& path, int nfib) {
  auto f = perfex::io::FitsFile::open_readwrite(path);
  std::vector<std::int32_t> fiber(static_cast<std::size_t>(nfib));
  std::vector<long long> targetid(static_cast<std::size_t>(nfib));
  for (int i = 0; i < nfib; ++i) {
    fiber[i] = i;
    targetid[i] = 1000 + i;
  }
  f.create_table("FIBERMAP", nfib, {{"FIBER", "J", "", {}}, {"TARGETID", "K", "", {}}});
  f.write_column("FIBER", fiber);
  f.write_column("TARGETID", targetid);
  f.close();
}

// IMAGE and IVAR only: a preproc file without its MASK HDU.
void write_without_mask(const std::string& path, const perfex::extract::CcdImage& img) {
  auto f = perfex::io::FitsFile::create(path);
  const std::vector<long> axes{img.ncols, img.nrows};
  f.write_image<float>("IMAGE", axes, std::vector<float>(img.pixels.begin(), img.pixels.end()));
  f.write_image<float>("IVAR", axes, std::vector<float>(img.ivar.begin(), img.ivar.end()));
  f.close();
}

}  // namespace

int main(int argc, char* argv[]) {
  if (argc != 2) {
    std::cerr << "usage: perfex_make_test_inputs FOLDER\n";
    return 2;
  }
  const std::string dir = argv[1];
  try {
    perfex::psf::SyntheticPsfOptions o;
    o.nfib = 20;
    o.npix_x = 300;  // a CCD corner holding the 20 traces keeps the checks fast
    o.npix_y = 1400;
    auto psf = perfex::psf::make_synthetic_psf(o);
    perfex::io::write_psf(dir + "/psf.fits", psf);

    perfex::io::write_preproc(dir + "/image.fits", flat_image(o.npix_y, o.npix_x), {});
    add_fibermap(dir + "/image.fits", 15);
    write_without_mask(dir + "/image-nomask.fits", flat_image(o.npix_y, o.npix_x));
    perfex::io::write_preproc(dir + "/image-transposed.fits", flat_image(o.npix_x, o.npix_y), {});

    const int sx = psf.param_index("GHSIGX");
    for (int f = 0; f < psf.nfib; ++f)
      for (int m = 0; m < psf.ncoeff(); ++m) psf.c(sx, f, m) = 0.0;
    // write_psf validates: write the good PSF, then zero GHSIGX in the file.
    perfex::io::write_psf(dir + "/psf-zero-sigma.fits", perfex::psf::make_synthetic_psf(o));
    {
      auto f = perfex::io::FitsFile::open_readwrite(dir + "/psf-zero-sigma.fits");
      f.move_to("PSF");
      f.write_column<double>("COEFF", psf.coeff);
      f.close();
    }

    perfex::psf::SyntheticPsfOptions wide;
    wide.npix_y = 8;
    perfex::io::write_psf(dir + "/psf500.fits", perfex::psf::make_synthetic_psf(wide));
    perfex::io::write_preproc(dir + "/image500.fits", flat_image(wide.npix_y, wide.npix_x), {});
  } catch (const std::exception& e) {
    std::cerr << "perfex_make_test_inputs: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
