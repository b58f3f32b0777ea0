// perfex-extract's and perfex-demo's command-line layer: options, messages, summary, progress.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>

#include "cli.hpp"

#include <sstream>
#include <string>
#include <vector>

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

// The UsageError message for a bad command line ("" if it parses).
std::string error_of(const Args& a) {
  try {
    parse_extract_args(a);
  } catch (const UsageError& e) {
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
  CHECK_FALSE(d.options.model_image);
  CHECK(d.backend == perfex::cli::default_backend());
  CHECK(d.threads == 0);

  // --help needs no files.
  CHECK(parse_extract_args(Args{"--help"}).help);
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
  CHECK(a.backend == perfex::cli::default_backend());

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
  CHECK_THAT(error_of(with_files({"--frobnicate"})),
             Contains("--frobnicate") && Contains("unknown"));
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

  std::ostringstream quiet, shown;
  perfex::cli::ProgressBar off(quiet, false), on(shown, true);
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
}
