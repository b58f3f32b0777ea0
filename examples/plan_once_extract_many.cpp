// Plan once, extract many: the PSF and each image are uploaded once, the frame is planned once
// (patches, windows, bands, launches), and every exposure of the same PSF and grid is then
// extracted from that plan. Checks that it gives, bit for bit, what the one-call
// extract_frame gives.
#include <perfex/extract/extract_frame.hpp>
#include <perfex/extract/simulate.hpp>
#include <perfex/psf/synthetic.hpp>
#include <perfex/runtime.hpp>

#include <cstdio>

int main(int argc, char* argv[]) {
  perfex::Runtime kokkos(argc, argv);  // Kokkos, its thread count checked before it starts
  using Exec = Kokkos::DefaultExecutionSpace;
  const Exec exec;
  namespace ex = perfex::extract;

  perfex::psf::SyntheticPsfOptions po;
  po.nfib = 10;
  const auto psf_data = perfex::psf::make_synthetic_psf(po);
  ex::ExtractionOptions opt;
  opt.wmin = 6500;
  opt.wmax = 6600;
  opt.nspec = 10;
  opt.bundlesize = 10;
  opt.nsubbundles = 2;
  const auto wave = ex::make_wavelength_grid(opt.wmin, opt.wmax, opt.dw);

  const auto psf = perfex::psf::upload_psf(exec, psf_data);                            // once
  const auto plan = ex::plan_frame(exec, psf, psf_data.npix_y, psf_data.npix_x, opt);  // once
  std::printf("plan: %d patches, pixels rows %d-%d\n", plan.npatches(), plan.pixel_box().row0,
              plan.pixel_box().row1 - 1);
  int status = 0;
  for (unsigned exposure = 0; exposure < 3; ++exposure) {
    const auto sim =
        ex::simulate_image(exec, psf, 0, opt.nspec, wave,
                           ex::make_test_spectra(opt.nspec, wave, exposure), 3.0, 100 + exposure);
    const auto image = ex::upload_image(exec, sim.ccd);  // once per exposure
    const ex::Frame frame = ex::extract_frame(exec, plan, psf, image);
    const ex::Frame direct = ex::extract_frame(exec, psf_data, sim.ccd, opt);
    const bool same = frame.flux == direct.flux && frame.ivar == direct.ivar &&
                      frame.resolution == direct.resolution;
    std::printf("exposure %u: %d x %d bins, %s the one-call extraction\n", exposure, frame.nspec,
                frame.nwave, same ? "identical to" : "DIFFERENT from");
    status |= same ? 0 : 1;
  }
  return status;
}
