// perfex-demo: the project's end-to-end check. Builds a synthetic DESI-like PSF, simulates a
// preproc image with known spectra, extracts it exactly as perfex-extract does, reads the
// frame back and compares it with the truth:
//   pull = (FLUX − R·TRUEPHOT/dλ)·√IVAR, R rebuilt from the RESOLUTION band (interior bins),
// whose RMS must be 1.00 ± 0.05 (exit status 1 otherwise).
#include "cli.hpp"

#include <perfex/config.hpp>
#include <perfex/extract/simulate.hpp>
#include <perfex/extract/wavelength_grid.hpp>
#include <perfex/io/fits.hpp>
#include <perfex/io/frame_fits.hpp>
#include <perfex/io/image_fits.hpp>
#include <perfex/io/psf_files.hpp>
#include <perfex/psf/synthetic.hpp>
#include <perfex/version.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

namespace {

namespace cli = perfex::cli;

struct DemoArgs {
  cli::ExtractArgs extract;
  std::string outdir = "perfex-demo-out";
  unsigned seed = 20260101;
  double read_noise = 3.0;
  double margin = 60.0;  // Å of simulated spectrum beyond each end of the extraction grid
};

std::string usage() {
  std::ostringstream o;
  o << "usage: perfex-demo [options]\n"
       "Simulates a DESI-like exposure with known spectra (synthetic PSF), extracts it with the\n"
       "perfex-extract code path and checks the pulls against the truth (RMS 1.00 +- 0.05).\n\n"
       "demo options:\n"
       "      --outdir DIR        output folder (default ./perfex-demo-out): psf.fits, "
       "preproc.fits,\n"
       "                          truth.fits, frame.fits, pulls.npy\n"
       "      --seed N            spectra and noise seed (default 20260101)\n"
       "      --read-noise X      read noise in electrons (default 3)\n\n"
       "extraction options (as perfex-extract's but -i, -p and -o; defaults here: -n 50,\n"
       "-w 5760,6760,0.8):\n"
    << cli::extract_options_help(/*input_output=*/false);
  return o.str();
}

DemoArgs parse(int argc, char* argv[]) {
  DemoArgs d;
  auto& o = d.extract.options;
  o.nspec = 50;
  o.wmin = 5760.0;
  o.wmax = 6760.0;
  o.dw = 0.8;
  cli::ArgReader r(std::vector<std::string>(argv + 1, argv + argc));
  while (r.next()) {
    if (cli::parse_extract_option(r, d.extract)) continue;
    if (r.is(nullptr, "--outdir"))
      d.outdir = r.nonempty_value("folder");
    else if (r.is(nullptr, "--seed"))
      d.seed = static_cast<unsigned>(r.int_value(0));
    else if (r.is(nullptr, "--read-noise"))
      d.read_noise = r.double_value(0.0, HUGE_VAL);
    else
      r.reject();
  }
  cli::finish_extract_args(d.extract, /*require_files=*/false);
  // The demo's grid and fibres are its own choice (they size the truth), never the PSF's.
  d.extract.wavelength_given = true;
  d.extract.nspec_given = true;
  if (!d.extract.input.empty() || !d.extract.psf.empty() || !d.extract.output.empty())
    throw cli::UsageError("options -i, -p and -o are chosen by perfex-demo (use --outdir)");
  return d;
}

void make_folder(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw perfex::Error("cannot create folder " + dir + ": " + ec.message());
}

// Appends a FIBERMAP (FIBER, TARGETID, OBJTYPE) and descriptive cards to the preproc file, so
// the frame's FIBERMAP / header copying is exercised as with real data.
void add_fibermap(const std::string& path, int specmin, int nspec, unsigned seed) {
  auto f = perfex::io::FitsFile::open_readwrite(path);
  f.move_to("IMAGE");
  f.write_key("CAMERA", "r0", "simulated camera");
  f.write_key("EXPID", 0, "simulated exposure");
  f.write_key("SIMSEED", static_cast<long long>(seed), "perfex-demo seed");
  f.write_key("SIMGEN", "perfex-demo " PERFEX_VERSION_STRING, "simulation");
  std::vector<std::int32_t> fiber(static_cast<std::size_t>(nspec));
  std::vector<long long> targetid(static_cast<std::size_t>(nspec));
  std::vector<std::string> objtype(static_cast<std::size_t>(nspec), "TGT");
  for (int i = 0; i < nspec; ++i) {
    fiber[i] = specmin + i;
    targetid[i] = 1000000 + specmin + i;
  }
  f.create_table("FIBERMAP", nspec,
                 {{"FIBER", "J", "", {}}, {"TARGETID", "K", "", {}}, {"OBJTYPE", "3A", "", {}}});
  f.write_column("FIBER", fiber);
  f.write_column("TARGETID", targetid);
  f.write_column_strings("OBJTYPE", objtype);
  f.close();
}

void write_truth(const std::string& path, const std::vector<double>& wave,
                 const std::vector<double>& phot, int specmin, int nspec) {
  auto f = perfex::io::FitsFile::create(path);
  f.write_image<double>("TRUEPHOT", {static_cast<long>(wave.size()), static_cast<long>(nspec)},
                        phot);
  f.write_key("BUNIT", "photon/bin");
  f.write_key("SPECMIN", specmin);
  f.write_key("NSPEC", nspec);
  f.write_image<double>("TRUEWAVE", {static_cast<long>(wave.size())}, wave);
  f.write_key("BUNIT", "Angstrom");
  f.close();
}

struct PullStats {
  long n = 0, masked = 0;
  double mean = 0, rms = 0, maxabs = 0;
  std::vector<double> values;  // each interior bin's pull, fibre-major
};

// pull = (FLUX − R·TRUEPHOT/dλ)·√IVAR over interior bins k ∈ [nd, K−nd), where
// (R·t)[k] = Σ_{k'} R[k][k'] t[k'] and R[k][k'] = RESOLUTION[f][k−k'+nd][k'] (DIA layout).
PullStats pulls(const perfex::extract::Frame& fr, const std::vector<double>& truth, int truth_nwave,
                int offset) {
  const int K = fr.nwave, nd = fr.ndiag, nb = 2 * nd + 1;
  const std::vector<double> dl = perfex::extract::gradient(fr.wave);
  PullStats s;
  double sum = 0, sum2 = 0;
  for (int f = 0; f < fr.nspec; ++f) {
    // t[k] is the truth at wave[k].
    const double* t = truth.data() + static_cast<std::size_t>(f) * truth_nwave + offset;
    const double* band = fr.resolution.data() + static_cast<std::size_t>(f) * nb * K;
    for (int k = nd; k < K - nd; ++k) {
      const std::size_t i = fr.index(f, k);
      if (!(fr.ivar[i] > 0)) {
        ++s.masked;
        continue;
      }
      double conv = 0;
      for (int kp = k - nd; kp <= k + nd; ++kp)
        conv += band[static_cast<std::size_t>(k - kp + nd) * K + kp] * t[kp];
      const double pull = (fr.flux[i] - conv / dl[k]) * std::sqrt(fr.ivar[i]);
      s.values.push_back(pull);
      sum += pull;
      sum2 += pull * pull;
      s.maxabs = std::max(s.maxabs, std::abs(pull));
      ++s.n;
    }
  }
  if (s.n > 0) {
    s.mean = sum / s.n;
    s.rms = std::sqrt(sum2 / s.n);
  }
  return s;
}

// Values as a NumPy .npy file (format 1.0: magic, header length, a dict of dtype and shape padded
// to 64 bytes, then the doubles as the host stores them, little-endian on x86-64 and ARM), so that
// perfex.plot draws the pulls without a FITS reader.
void write_npy(const std::string& path, const std::vector<double>& values) {
  std::string header = "{'descr': '<f8', 'fortran_order': False, 'shape': (" +
                       std::to_string(values.size()) + ",), }";
  const std::size_t magic = 10;  // "\x93NUMPY", version 1.0, the header's length
  header.append((64 - (magic + header.size() + 1) % 64) % 64, ' ');
  header += '\n';
  std::ofstream out(path, std::ios::binary);
  out.write("\x93NUMPY\x01\x00", 8);
  out.put(static_cast<char>(header.size() & 0xff));
  out.put(static_cast<char>(header.size() >> 8));
  out << header;
  out.write(reinterpret_cast<const char*>(values.data()),
            static_cast<std::streamsize>(values.size() * sizeof(double)));
  if (!out) throw perfex::Error("perfex-demo: cannot write '" + path + "'");
}

int run(const DemoArgs& d) {
  const auto& o = d.extract.options;
  make_folder(d.outdir);
  const std::string psf_path = d.outdir + "/psf.fits", image_path = d.outdir + "/preproc.fits",
                    truth_path = d.outdir + "/truth.fits", frame_path = d.outdir + "/frame.fits";

  // Synthetic PSF, written and (by the extraction) read back.
  const perfex::psf::GaussHermitePsfData psf = perfex::psf::make_synthetic_psf();
  if (o.specmin + o.nspec > psf.nfib)
    throw cli::UsageError("options -s/-n: fibres [" + std::to_string(o.specmin) + ", " +
                          std::to_string(o.specmin + o.nspec) + ") beyond the PSF's " +
                          std::to_string(psf.nfib));
  perfex::io::write_psf(psf_path, psf);

  // Truth on the extraction grid extended by ~60 Å on each side (aligned bins).
  const std::vector<double> wave = perfex::extract::make_wavelength_grid(o.wmin, o.wmax, o.dw);
  const int margin_bins = static_cast<int>(std::lround(d.margin / o.dw));
  const std::vector<double> truewave = perfex::extract::make_wavelength_grid(
      o.wmin - margin_bins * o.dw, o.wmax + margin_bins * o.dw, o.dw);
  if (static_cast<int>(truewave.size()) < static_cast<int>(wave.size()) + 2 * margin_bins ||
      std::abs(truewave[margin_bins] - wave[0]) > 1e-6 * o.dw ||
      std::abs(truewave[margin_bins + wave.size() - 1] - wave.back()) > 1e-6 * o.dw)
    throw perfex::Error("truth grid does not align with the extraction grid");
  const std::vector<double> truephot =
      perfex::extract::make_test_spectra(o.nspec, truewave, d.seed);
  write_truth(truth_path, truewave, truephot, o.specmin, o.nspec);

  // Simulated image on the chosen backend.
  const auto sim = perfex::with_backend(d.extract.backend, [&](const auto& exec) {
    using Exec = std::decay_t<decltype(exec)>;
    const perfex::psf::GaussHermitePsf<typename Exec::memory_space> dpsf(psf);
    return perfex::extract::simulate_image(exec, dpsf, o.specmin, o.nspec, truewave, truephot,
                                           d.read_noise, d.seed + 1);
  });
  perfex::io::write_preproc(image_path, sim.ccd, {});
  add_fibermap(image_path, o.specmin, o.nspec, d.seed);
  std::cout << "perfex-demo: simulated " << o.nspec << " fibres x " << truewave.size()
            << " wavelengths (" << truewave.front() << "-" << truewave.back() << " A), "
            << sim.projected_photons << " photons on a " << sim.ccd.nrows << " x " << sim.ccd.ncols
            << " CCD, read noise " << d.read_noise << " e-; files in " << d.outdir << "\n";

  // Exactly perfex-extract's path.
  cli::ExtractArgs args = d.extract;
  args.input = image_path;
  args.psf = psf_path;
  args.output = frame_path;
  const cli::RunResult r = cli::run_extract_files_reporting("perfex-demo", args);
  std::cout << cli::summary_line("perfex-demo", r) << "\n";

  // Read the frame back and compare with the truth.
  const perfex::extract::Frame fr = perfex::io::read_frame(frame_path);
  if (fr.nspec != o.nspec || fr.nwave != static_cast<int>(wave.size()))
    throw perfex::Error("frame " + frame_path + " has unexpected dimensions");
  const PullStats s = pulls(fr, truephot, static_cast<int>(truewave.size()), margin_bins);
  const double fibre_waves = static_cast<double>(fr.nspec) * fr.nwave;
  std::printf(
      "perfex-demo: pull = (FLUX - R.TRUEPHOT/dlambda)*sqrt(IVAR) over %ld interior bins (%ld with "
      "ivar 0):"
      " mean %+.4f, RMS %.4f (expected 1.00 +- 0.05), max |pull| %.2f\n",
      s.n, s.masked, s.mean, s.rms, s.maxabs);
  write_npy(d.outdir + "/pulls.npy", s.values);
  std::printf(
      "perfex-demo: throughput %.1f patches/s, %.0f fibre-wavelengths/s (backend %s, threads %d)\n",
      r.seconds > 0 ? r.frame.npatches / r.seconds : 0.0,
      r.seconds > 0 ? fibre_waves / r.seconds : 0.0, r.backend.c_str(), r.threads);
  if (s.n == 0 || !(std::abs(s.rms - 1.0) <= 0.05)) {
    std::printf("perfex-demo: FAIL: pull RMS %.4f outside 1.00 +- 0.05\n", s.rms);
    return 1;
  }
  if (r.frame.failed_patches > 0) {
    std::printf("perfex-demo: FAIL: %d failed patches\n", r.frame.failed_patches);
    return 1;
  }
  std::printf("perfex-demo: PASS\n");
  return 0;
}

}  // namespace

int main(int argc, char* argv[]) {
  return cli::guarded_main("perfex-demo", [&] {
    const DemoArgs d = parse(argc, argv);
    if (d.extract.help) {
      std::cout << usage();
      return 0;
    }
    if (d.extract.version) {
      std::cout << perfex::version_text();
      return 0;
    }
    const perfex::HostThreads threads = cli::runtime_settings(d.extract);
    perfex::Runtime runtime(threads);
    if (!threads.warning.empty()) std::cerr << "perfex-demo: warning: " << threads.warning << "\n";
    return run(d);
  });
}
