// perfex-extract's and perfex-demo's command-line layer: options, messages, summary, progress.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>

#include "cli.hpp"

#include <perfex/psf/synthetic.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <new>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#ifdef KOKKOS_ENABLE_OPENMP
#include <omp.h>
#endif

namespace {

using perfex::cli::ExtractArgs;
using perfex::cli::parse_extract_args;
using perfex::cli::UsageError;
using Args = std::vector<std::string>;

Args with_files(Args extra) {
  Args a{"-i", "img.fits", "-p", "psf.fits", "-o", "frame.fits"};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

// The message for a bad command line ("" if it parses): a RequestError (a UsageError, or a
// library check such as the thread cap), which the tools report with exit status 2.
std::string error_of(const Args& a) {
  try {
    parse_extract_args(a);
  } catch (const perfex::RequestError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("cli: desi_extract_spectra options", "[cli]") {
  const ExtractArgs a = parse_extract_args(Args{"-i",
                                                "img.fits",
                                                "--psf",
                                                "psf.fits",
                                                "--output=frame.fits",
                                                "-w",
                                                "5760,6760,0.8",
                                                "-s",
                                                "25",
                                                "-n",
                                                "50",
                                                "--bundlesize",
                                                "25",
                                                "--nsubbundles=1",
                                                "--nwavestep",
                                                "40",
                                                "--wavepad-frac",
                                                "0.3",
                                                "--pixpad-frac",
                                                "0.5",
                                                "--regularize",
                                                "1e-3",
                                                "--psferr",
                                                "0.04",
                                                "--decorrelate-fibers",
                                                "--geometry",
                                                "specter",
                                                "-m",
                                                "model.fits",
                                                "--backend",
                                                "serial",
                                                "--threads",
                                                "3",
                                                "--memory-budget",
                                                "8192"});
  CHECK(a.input == "img.fits");
  CHECK(a.psf == "psf.fits");
  CHECK(a.output == "frame.fits");
  CHECK(a.model == "model.fits");
  CHECK(a.options.model_image);
  CHECK(a.options.wmin == 5760.0);
  CHECK(a.options.wmax == 6760.0);
  CHECK(a.options.dw == 0.8);
  CHECK(a.options.specmin == 25);
  CHECK(a.options.nspec == 50);
  CHECK(a.options.bundlesize == 25);
  CHECK(a.options.nsubbundles == 1);
  CHECK(a.options.nwavestep == 40);
  CHECK(a.options.wavepad_frac == 0.3);
  CHECK(a.options.pixpad_frac == 0.5);
  CHECK(a.options.regularize == 1e-3);
  CHECK(a.options.psferr == 0.04);
  CHECK(a.options.decorrelation == perfex::extract::Decorrelation::noise);
  CHECK(a.options.geometry == perfex::extract::Geometry::specter);
  CHECK(a.backend == "serial");
  CHECK(a.threads == 3);
  CHECK(a.options.memory_budget == std::int64_t(8192) << 20);
  CHECK_FALSE(a.help);

  // Defaults: DESI production values, default backend, no model.
  const ExtractArgs d = parse_extract_args(with_files({}));
  const perfex::extract::ExtractionOptions o;
  CHECK(d.options.nspec == o.nspec);
  CHECK(d.options.nsubbundles == o.nsubbundles);
  CHECK(d.options.decorrelation == perfex::extract::Decorrelation::signal);
  CHECK(d.options.geometry == perfex::extract::Geometry::automatic);
  CHECK_FALSE(d.options.model_image);
  CHECK(d.backend == perfex::default_backend());
  CHECK(d.threads == 0);

  // --help and --version need no files.
  CHECK(parse_extract_args(Args{"--help"}).help);
  CHECK(parse_extract_args(Args{"--version"}).version);
  CHECK_FALSE(d.version);
  // -r is desi_extract_spectra's --regularize.
  CHECK(parse_extract_args(with_files({"-r", "0.5"})).options.regularize == 0.5);
  CHECK_THAT(perfex::cli::extract_options_help(),
             Catch::Contains("-r, --regularize") && Catch::Contains("--version") &&
                 Catch::Contains("GAUSS-HERMITE PSFVER 1-3, GAUSS-HERMITE2, SPOTGRID"));
  CHECK(perfex::cli::extract_options_help().find("--decorrelate-fibers") != std::string::npos);
}

TEST_CASE("cli: a tool adds its own options to perfex-extract's", "[cli]") {
  // As perfex-demo does: extraction options and the tool's own, in any order, no files.
  ExtractArgs a;
  a.options.nspec = 50;  // the tool's default
  std::string outdir;
  int seed = 0;
  perfex::cli::ArgReader r(Args{"--outdir", "out", "-n", "10", "--seed=3", "--threads=2"});
  while (r.next()) {
    if (perfex::cli::parse_extract_option(r, a)) continue;
    if (r.is(nullptr, "--outdir"))
      outdir = r.nonempty_value("folder");
    else if (r.is(nullptr, "--seed"))
      seed = r.int_value(0);
    else
      r.reject();
  }
  perfex::cli::finish_extract_args(a, /*require_files=*/false);
  CHECK(a.options.nspec == 10);
  CHECK(a.threads == 2);
  CHECK(outdir == "out");
  CHECK(seed == 3);
  CHECK(a.backend == perfex::default_backend());

  perfex::cli::ArgReader bad(Args{"--seed", "-1"});
  REQUIRE(bad.next());
  CHECK_THROWS_WITH(bad.int_value(0), Catch::Contains("--seed") && Catch::Contains(">= 0"));
  perfex::cli::ArgReader empty(Args{"--outdir="});
  REQUIRE(empty.next());
  CHECK_THROWS_WITH(empty.nonempty_value("folder"),
                    Catch::Contains("--outdir") && Catch::Contains("empty folder name"));
}

TEST_CASE("cli: exit status and messages of a tool's main", "[cli]") {
  CHECK(perfex::cli::guarded_main("t", [] { return 0; }) == 0);
  CHECK(perfex::cli::guarded_main("t", []() -> int { throw UsageError("option -x: bad"); }) == 2);
  CHECK(perfex::cli::guarded_main("t", []() -> int { throw perfex::Error("no file"); }) == 1);
}

TEST_CASE("cli: bad options name the option", "[cli]") {
  using Catch::Contains;
  CHECK_THAT(error_of(Args{"-p", "psf.fits", "-o", "f.fits"}),
             Contains("-i/--input") && Contains("required"));
  CHECK_THAT(error_of(Args{"-i", "i.fits", "-o", "f.fits"}), Contains("-p/--psf"));
  CHECK_THAT(error_of(Args{"-i", "i.fits", "-p", "p.fits"}), Contains("-o/--output"));
  CHECK_THAT(error_of(with_files({"-n", "abc"})), Contains("-n") && Contains("abc"));
  CHECK_THAT(error_of(with_files({"--nspec", "0"})), Contains("--nspec") && Contains(">= 1"));
  CHECK_THAT(error_of(with_files({"-s", "-3"})), Contains("-s"));
  CHECK_THAT(error_of(with_files({"-n", "12x"})), Contains("-n"));
  CHECK_THAT(error_of(with_files({"-n", "99999999999"})), Contains("-n"));
  CHECK_THAT(error_of(with_files({"-w", "5760,6760"})), Contains("-w") && Contains("WMIN,WMAX,DW"));
  CHECK_THAT(error_of(with_files({"-w", "5760,6760,0"})), Contains("-w") && Contains("DW"));
  CHECK_THAT(error_of(with_files({"-w", "6760,5760,0.8"})), Contains("-w") && Contains("WMAX"));
  CHECK_THAT(error_of(with_files({"-w", "a,b,c"})), Contains("-w"));
  CHECK_THAT(error_of(with_files({"--wavelength", "5760,,0.8"})), Contains("--wavelength"));
  CHECK_THAT(error_of(with_files({"--pixpad-frac", "1.5"})),
             Contains("--pixpad-frac") && Contains("[0, 1]"));
  CHECK_THAT(error_of(with_files({"--wavepad-frac", "-0.1"})), Contains("--wavepad-frac"));
  CHECK_THAT(error_of(with_files({"--regularize", "nan"})), Contains("--regularize"));
  CHECK_THAT(error_of(with_files({"--psferr", "-1"})), Contains("--psferr"));
  CHECK_THAT(error_of(with_files({"--bundlesize", "0"})), Contains("--bundlesize"));
  CHECK_THAT(error_of(with_files({"--nsubbundles", "1.5"})), Contains("--nsubbundles"));
  CHECK_THAT(error_of(with_files({"--nwavestep", ""})), Contains("--nwavestep"));
  CHECK_THAT(error_of(with_files({"--backend", "fortran"})),
             Contains("--backend") && Contains("fortran"));
  CHECK_THAT(error_of(with_files({"--threads", "0"})), Contains("--threads"));
  CHECK_THAT(error_of(with_files({"--memory-budget", "0"})), Contains("--memory-budget"));
  CHECK_THAT(error_of(with_files({"--nspec"})), Contains("--nspec") && Contains("needs a value"));
  CHECK_THAT(error_of(with_files({"--decorrelate-fibers=yes"})), Contains("--decorrelate-fibers"));
  CHECK_THAT(error_of(with_files({"--geometry", "desi"})),
             Contains("option --geometry must be 'gpu_specter', 'specter' or 'automatic'") &&
                 Contains("'desi'"));
  CHECK_THAT(error_of(with_files({"--frobnicate"})),
             Contains("--frobnicate") && Contains("unknown") && Contains("see --help"));
  // A near miss names the option meant, the tool's own options included.
  CHECK(error_of(with_files({"--nsubbundle", "2"})) ==
        "unknown option --nsubbundle (did you mean --nsubbundles?)");
  CHECK_THAT(error_of(with_files({"--regularise=0.1"})), Contains("did you mean --regularize?"));
  CHECK_THAT(error_of(with_files({"--kokkos-thread=2"})),
             Contains("did you mean --kokkos-threads?"));
  CHECK_THAT(error_of(with_files({"-x"})), Contains("unknown option -x (see --help)"));
  CHECK_THAT(error_of(with_files({"stray"})), Contains("stray"));
  CHECK_THAT(error_of(with_files({"-o", ""})), Contains("-o"));
  // Every error is one line.
  CHECK(error_of(with_files({"-w", "x"})).find('\n') == std::string::npos);
}

TEST_CASE("cli: summary line and progress bar", "[cli]") {
  perfex::cli::RunResult r;
  r.frame.nspec = 50;
  r.frame.nwave = 1251;
  r.frame.npatches = 260;
  r.frame.failed_patches = 0;
  r.frame.linalg_flops = 9.1e9;
  r.seconds = 2.0;
  r.backend = "openmp";
  r.threads = 2;
  CHECK(perfex::cli::summary_line("perfex-extract", r) ==
        "perfex-extract: 50 fibres x 1251 wavelengths, 260 patches in 2.00 s (130.0 patches/s, 4.5 "
        "GFLOP/s), backend openmp, "
        "threads 2, failed patches 0");

  using Style = perfex::cli::ProgressBar::Style;
  std::ostringstream quiet, shown;
  perfex::cli::ProgressBar off(quiet, Style::none), on(shown, Style::terminal);
  off.update(1, 4);
  off.finish();
  CHECK(quiet.str().empty());
  auto cb = on.callback();
  cb(0, 0);  // extraction starts: nothing drawn
  CHECK(shown.str().empty());
  cb(1, 4);
  cb(4, 4);
  on.finish();
  CHECK_THAT(shown.str(), Catch::Contains("4/4 patches") && Catch::Contains("patches/s"));
  CHECK(shown.str().back() == '\n');

  // In a log (stderr not a terminal): a line per tenth of the patches, none in between.
  std::ostringstream log;
  perfex::cli::ProgressBar lines(log, Style::log, "t");
  lines.update(0, 0);
  for (int done = 1; done <= 40; ++done) lines.update(done, 40);
  lines.finish();
  const std::string text = log.str();
  CHECK(std::count(text.begin(), text.end(), '\n') == 10);
  CHECK(text.find('\r') == std::string::npos);
  CHECK_THAT(text,
             Catch::StartsWith("t: 4/40 patches (10 %), ") && Catch::Contains(" patches/s, ETA "));
  CHECK_THAT(text.substr(text.rfind("t: ")),
             Catch::StartsWith("t: 40/40 patches (100 %), ") && !Catch::Contains("ETA"));
  // A jump over several tenths is one line.
  std::ostringstream jump;
  perfex::cli::ProgressBar once(jump, Style::log, "t");
  once.update(0, 0);
  once.update(35, 40);
  once.update(36, 40);
  const std::string jumped = jump.str();
  CHECK(jumped.rfind("t: 35/40 patches (87 %), ", 0) == 0);
  CHECK(std::count(jumped.begin(), jumped.end(), '\n') == 2);
}

TEST_CASE("cli: explicit and default options are told apart; limits", "[cli]") {
  using Catch::Contains;
  const ExtractArgs d = parse_extract_args(with_files({}));
  CHECK_FALSE(d.wavelength_given);
  CHECK_FALSE(d.nspec_given);
  CHECK_FALSE(d.allow_image_size_mismatch);
  const ExtractArgs e = parse_extract_args(
      with_files({"-w", "5760,6760,0.8", "-n", "25", "--allow-image-size-mismatch"}));
  CHECK(e.wavelength_given);
  CHECK(e.nspec_given);
  CHECK(e.allow_image_size_mismatch);
  CHECK(parse_extract_args(with_files({"--threads", "512"})).threads == 512);
  CHECK_THAT(error_of(with_files({"--threads", "600"})),
             Contains("--threads") && Contains("at most 512") && Contains("600"));
  CHECK(parse_extract_args(with_files({"--wavepad-frac", "10"})).options.wavepad_frac == 10);
  CHECK_THAT(error_of(with_files({"--wavepad-frac", "10.5"})),
             Contains("--wavepad-frac") && Contains("[0, 10]"));
  CHECK_THAT(error_of(with_files({"--allow-image-size-mismatch=yes"})), Contains("takes no value"));
  CHECK_FALSE(d.timing);
  CHECK(parse_extract_args(with_files({"--timing"})).timing);
  CHECK(d.tools_libs.empty());
  // Kokkos 4's spelling and Kokkos 3.4's.
  CHECK(parse_extract_args(with_files({"--kokkos-tools-libs=kp.so"})).tools_libs == "kp.so");
  CHECK(parse_extract_args(with_files({"--kokkos-tools-library", "kp.so"})).tools_libs == "kp.so");
  CHECK(perfex::cli::runtime_settings(parse_extract_args(with_files({"--kokkos-tools-libs=a.so"})))
            .tools_libs == "a.so");
  CHECK_THAT(error_of(with_files({"--kokkos-tools-libs="})), Contains("empty file name"));
  const std::string help = perfex::cli::extract_options_help();
  CHECK_THAT(help, Contains("--allow-image-size-mismatch") && Contains("WAVEMIN,WAVEMAX") &&
                       Contains("exit status") && Contains("--timing") &&
                       Contains("--kokkos-tools-libs"));
}

TEST_CASE("cli: thread options are checked as one count", "[cli]") {
  using Catch::Contains;
  CHECK(parse_extract_args(with_files({"--kokkos-threads=3"})).kokkos_thread_options ==
        Args{"--kokkos-threads=3"});
  CHECK(parse_extract_args(with_files({"--kokkos-num-threads", "4"})).kokkos_thread_options ==
        Args{"--kokkos-num-threads=4"});
  CHECK_THAT(error_of(with_files({"--kokkos-threads=600"})),
             Contains("option --kokkos-threads: at most 512"));
  CHECK_THAT(error_of(with_files({"--kokkos-num-threads=x"})),
             Contains("option --kokkos-num-threads: 'x' is not an integer"));
  CHECK_THAT(error_of(with_files({"--threads", "0"})), Contains("--threads: must be >= 1"));
  // Every source of a count together: one function decides (perfex::resolve_host_threads).
  const ExtractArgs a = parse_extract_args(with_files({"--threads", "2", "--kokkos-threads=3"}));
  perfex::ThreadSettings s;
  s.requested = a.threads;
  s.what = "option --threads";
  s.kokkos_args = a.kokkos_thread_options;
  CHECK_THROWS_WITH(perfex::resolve_host_threads(s),
                    Contains("option --threads (2 threads) and option --kokkos-threads (3)"));
}

TEST_CASE("cli: options resolved against the PSF", "[cli]") {
  using Catch::Contains;
  perfex::psf::SyntheticPsfOptions po;
  po.nfib = 20;
  const auto psf = perfex::psf::make_synthetic_psf(po);
  std::vector<std::string> warnings;
  const perfex::io::FilesNames names;
  auto resolve = [&](const ExtractArgs& a) {
    const auto r = perfex::extract::resolve_request(perfex::cli::files_request(a).request, psf,
                                                    psf.npix_y, psf.npix_x, names.parameters);
    warnings.insert(warnings.end(), r.warnings.begin(), r.warnings.end());
    return r.options;
  };

  // desi_extract_spectra's defaults: the PSF's WAVEMIN,WAVEMAX with dw 0.8; -n 500 clipped.
  auto o = resolve(parse_extract_args(with_files({})));
  CHECK(o.wmin == psf.wavemin);
  CHECK(o.wmax == psf.wavemax);
  CHECK(o.dw == 0.8);
  CHECK(o.nspec == 20);
  REQUIRE(warnings.size() >= 1);
  CHECK_THAT(warnings[0], Contains("extracting 20") && Contains("default 500"));

  // An explicit -n is never cut.
  auto refused = [&](const Args& a) {
    try {
      resolve(parse_extract_args(with_files(a)));
    } catch (const perfex::RequestError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK_THAT(refused({"-n", "25"}), Contains("-n/--nspec") && Contains("the PSF has 20 fibres"));
  CHECK_THAT(refused({"-s", "19", "-n", "5"}), Contains("fibres 19-23"));
  CHECK_THAT(refused({"-s", "20"}), Contains("-s/--specmin") && Contains("fibres 20-"));
  CHECK_THAT(refused({"-w", "1000,2000,0.8"}), Contains("-w/--wavelength") && Contains("outside"));
  CHECK_THAT(refused({"-w", "5760,6760,1e-6"}), Contains("1000000001 wavelengths"));

  // Patch sizes clamped to the grid, the defaults left alone.
  warnings.clear();
  o = resolve(
      parse_extract_args(with_files({"-w", "6000,6040,0.8", "-n", "5", "--nwavestep", "1000"})));
  CHECK(o.nwavestep == 51);
  CHECK(o.wavepad() == 12);
  REQUIRE(warnings.size() == 1);
  CHECK_THAT(warnings[0], Contains("nwavestep 1000") && Contains("using 51"));
  warnings.clear();
  o = resolve(parse_extract_args(with_files({"-w", "6000,6008,0.8", "-n", "5"})));
  CHECK(o.nwavestep == 50);
  CHECK(o.wavepad() == 12);
  CHECK(warnings.empty());
}

TEST_CASE("cli: outputs never replace an input or each other", "[cli]") {
  using Catch::Contains;
  const std::string dir = "cli-test-outputs";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir + "/d");
  { std::ofstream(dir + "/img.fits") << "image"; }
  { std::ofstream(dir + "/psf.fits") << "psf"; }
  auto args = [&](const std::string& out, const std::string& model) {
    ExtractArgs a;
    a.input = dir + "/img.fits";
    a.psf = dir + "/psf.fits";
    a.output = out;
    a.model = model;
    return a;
  };
  auto message = [](const ExtractArgs& a) {
    try {
      perfex::io::check_outputs({{"-o/--output", a.output}, {"-m/--model", a.model}},
                                {{"-i/--input", a.input}, {"-p/--psf", a.psf}}, "option ");
    } catch (const perfex::RequestError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK(message(args(dir + "/frame.fits", dir + "/model.fits")).empty());
  CHECK_THAT(message(args(dir + "/frame.fits", dir + "/nofolder/model.fits")),
             Contains("option -m/--model") && Contains("nofolder"));
  CHECK_THAT(message(args(dir + "/d/../img.fits", "")),
             Contains("-o/--output") && Contains("is the -i/--input file"));
  CHECK_THAT(message(args(dir + "/./psf.fits", "")), Contains("is the -p/--psf file"));
  CHECK_THAT(message(args(dir + "/f.fits", dir + "/d/../f.fits")),
             Contains("-m/--model") && Contains("is also the -o/--output file"));
  CHECK_THAT(message(args(dir + "/f.fits", dir + "/img.fits")),
             Contains("-m/--model") && Contains("is the -i/--input file"));
  CHECK_THAT(message(args("/dev/full", "")), Contains("character device"));
  CHECK_THAT(message(args(dir + "/f.fits", dir + "/d")),
             Contains("-m/--model") && Contains("is a directory"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("cli: allocation failures are reported with what was being done", "[cli]") {
  using Catch::Contains;
  using perfex::while_doing;
  CHECK_THROWS_WITH(while_doing("extracting 5 fibres", []() -> int { throw std::bad_alloc(); }),
                    "out of memory while extracting 5 fibres");
  // Kokkos 3.4's failed View allocation.
  CHECK_THROWS_WITH(
      while_doing("reading the image x.fits",
                  []() -> int { throw std::runtime_error("Memory allocation failure\nstack..."); }),
      "out of memory while reading the image x.fits (Memory allocation failure)");
  CHECK_THROWS_AS(while_doing("x", []() -> int { throw perfex::Error("allocation failure"); }),
                  perfex::Error);
  CHECK_THROWS_WITH(while_doing("x", []() -> int { throw perfex::Error("allocation failure"); }),
                    "allocation failure");
  CHECK_THROWS_WITH(while_doing("x", []() -> int { throw std::runtime_error("other"); }), "other");
  CHECK(while_doing("x", [] { return 3; }) == 3);
  std::ostringstream err;
  auto* old = std::cerr.rdbuf(err.rdbuf());
  const int status = perfex::cli::guarded_main("t", []() -> int { throw std::bad_alloc(); });
  std::cerr.rdbuf(old);
  CHECK(status == 1);
  CHECK_THAT(err.str(), Contains("t: error: out of memory"));
}
