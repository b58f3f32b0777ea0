// Extract files: the README's example, the file names from the command line (and a grid and
// fibres that fit simulate_and_extract's files). A PSF file and a preproc image in, a frame
// file out.
#include <perfex/extract/extract_frame.hpp>
#include <perfex/io/frame_fits.hpp>
#include <perfex/io/image_fits.hpp>
#include <perfex/io/psf_files.hpp>
#include <perfex/runtime.hpp>

#include <cstdio>

int main(int argc, char* argv[]) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: extract_files PSF PREPROC FRAME\n");
    return 2;
  }
  perfex::Runtime kokkos(argc, argv);  // Kokkos, its thread count checked before it starts
  auto psf = perfex::io::read_psf(argv[1]);
  auto img = perfex::io::read_preproc(argv[2]);  // ivar = 0 where MASK & 0x2FF
  perfex::extract::ExtractionOptions opt;        // DESI defaults
  opt.wmin = 6000;
  opt.wmax = 6200;
  opt.dw = 0.8;
  opt.nspec = 25;
  auto frame = perfex::extract::extract_frame(Kokkos::DefaultExecutionSpace(), psf, img.ccd, opt);
  perfex::io::write_frame(argv[3], frame, {argv[2], argv[1]});
  std::printf("%s: %d fibres x %d wavelengths, %d patches, %d failed\n", argv[3], frame.nspec,
              frame.nwave, frame.npatches, frame.failed_patches);
  return frame.failed_patches == 0 ? 0 : 1;
}
