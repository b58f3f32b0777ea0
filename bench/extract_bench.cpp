// Extraction benchmarks: one DESI-default patch batch, a full bundle (25 fibres x 1251
// wavelengths, 5760-6760 A) and a full 500-fibre frame (2326 wavelengths, 5760-7620 A), on the
// real DESI PSF when ../shared/data is there and on a synthetic PSF of the same geometry
// otherwise; every enabled backend.
#include "perfex_bench.hpp"

#include <perfex/extract/extract_frame.hpp>
#include <perfex/psf/synthetic.hpp>
#ifdef PERFEX_BENCH_HAVE_IO
#include <perfex/io/psf_fits.hpp>
#endif

#include <sys/stat.h>

#include <cmath>
#include <memory>

namespace {

const perfex::psf::GaussHermitePsfData& bench_psf() {
  static std::unique_ptr<perfex::psf::GaussHermitePsfData> psf;
  if (!psf) {
    const std::string path = std::string(PERFEX_SHARED_DATA_DIR) + "/psf-r0-00051060.fits";
    struct stat st {};
#ifdef PERFEX_BENCH_HAVE_IO
    if (stat(path.c_str(), &st) == 0) {
      psf = std::make_unique<perfex::psf::GaussHermitePsfData>(perfex::io::read_psf(path));
      benchmark::AddCustomContext("psf", path);
    }
#endif
    if (!psf) {
      psf = std::make_unique<perfex::psf::GaussHermitePsfData>(perfex::psf::make_synthetic_psf());
      benchmark::AddCustomContext("psf", "synthetic DESI-like (../shared/data absent)");
    }
  }
  return *psf;
}

// A smooth, sky-like image with Poisson-like ivar: the values do not change the work done.
const perfex::extract::CcdImage& bench_image() {
  static std::unique_ptr<perfex::extract::CcdImage> image;
  if (!image) {
    const auto& psf = bench_psf();
    image = std::make_unique<perfex::extract::CcdImage>();
    image->nrows = psf.npix_y;
    image->ncols = psf.npix_x;
    image->pixels.resize(static_cast<std::size_t>(psf.npix_y) * psf.npix_x);
    image->ivar.resize(image->pixels.size());
    for (std::size_t i = 0; i < image->pixels.size(); ++i) {
      const double v = 50.0 + 30.0 * std::sin(0.001 * static_cast<double>(i));
      image->pixels[i] = v;
      image->ivar[i] = 1.0 / (9.0 + v);
    }
  }
  return *image;
}

enum class Scope { patch_batch, bundle, frame };

template <class ExecSpace>
void extraction(benchmark::State& state, Scope scope) {
  perfex::extract::ExtractionOptions opt;
  const bool smoke = perfex_bench::smoke();
  opt.specmin = 0;
  switch (scope) {
    case Scope::patch_batch:  // one sub-bundle x one wavelength patch: 1 patch (N = 444)
      opt.nspec = 5;
      opt.nsubbundles = 1;
      opt.bundlesize = 5;
      opt.wmin = 6000.0;
      opt.wmax = smoke ? 6010.0 : 6039.2;
      break;
    case Scope::bundle:
      opt.nspec = smoke ? 5 : 25;
      opt.bundlesize = smoke ? 5 : 25;
      opt.nsubbundles = smoke ? 1 : 5;
      opt.wmin = 5760.0;
      opt.wmax = smoke ? 5800.0 : 6760.0;
      break;
    case Scope::frame:
      opt.nspec = smoke ? 10 : 500;
      opt.wmin = 5760.0;
      opt.wmax = smoke ? 5800.0 : 7620.0;
      break;
  }
  const auto& psf = bench_psf();
  const auto& image = bench_image();
  ExecSpace exec;
  perfex::extract::Frame frame;
  for (auto _ : state) perfex_bench::timed(state, exec, [&] { frame = perfex::extract::extract_frame(exec, psf, image, opt); });
  state.counters["patches"] = frame.npatches;
  state.counters["patches/s"] = benchmark::Counter(frame.npatches, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["fibre_wavelengths/s"] =
      benchmark::Counter(double(frame.nspec) * frame.nwave, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["threads"] = perfex::concurrency(exec);
  state.counters["peak_rss_MB"] = perfex_bench::peak_rss_bytes() / 1e6;
}

template <class ExecSpace>
void register_extraction(const std::string& backend) {
  benchmark::RegisterBenchmark(("extract/patch/" + backend).c_str(), extraction<ExecSpace>, Scope::patch_batch)
      ->UseManualTime()->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark(("extract/bundle/" + backend).c_str(), extraction<ExecSpace>, Scope::bundle)
      ->UseManualTime()->Unit(benchmark::kSecond)->Iterations(1);
  benchmark::RegisterBenchmark(("extract/frame/" + backend).c_str(), extraction<ExecSpace>, Scope::frame)
      ->UseManualTime()->Unit(benchmark::kSecond)->Iterations(1);
}

const int registered = [] {
#ifdef KOKKOS_ENABLE_SERIAL
  register_extraction<Kokkos::Serial>("serial");
#endif
#ifdef KOKKOS_ENABLE_OPENMP
  register_extraction<Kokkos::OpenMP>("openmp");
#endif
#ifdef KOKKOS_ENABLE_CUDA
  register_extraction<Kokkos::Cuda>("cuda");
#endif
  return 0;
}();

}  // namespace
