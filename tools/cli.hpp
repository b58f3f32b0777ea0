#pragma once
// The command-line layer shared by perfex-extract and perfex-demo (not part of the library):
// desi_extract_spectra-compatible option parsing, a terminal progress bar, the summary line and
// the exit statuses around the library's io::extract_files. Compiled once (tools/cli.cpp) into
// the perfex_cli static library.
//
// The parser is hand-written: Debian 12's CLI11 (2.1.2) and cxxopts (3.1) would need a custom
// validator per option to name the option and the bad value as clearly (CLI11 reports
// "-n 0" as "Value 0 not in range 0.000000 to 1.797...e308" and accepts "--pixpad-frac nan").
#include <perfex/error.hpp>
#include <perfex/extract/options.hpp>
#include <perfex/io/extract_files.hpp>
#include <perfex/runtime.hpp>

#include <chrono>
#include <functional>
#include <iosfwd>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

namespace perfex {
namespace cli {

// A bad command line: the message names the option; the tools exit with status 2 (as for
// every RequestError).
class UsageError : public RequestError {
 public:
  explicit UsageError(const std::string& what) : RequestError(what) {}
};

// perfex-extract's exit statuses.
enum ExitStatus : int {
  exit_ok = 0,
  exit_failure = 1,         // an input unreadable or invalid, an I/O or memory failure
  exit_usage = 2,           // refused before any work: options, outputs, fibres, grid, size
  exit_failed_patches = 3,  // frame written, but some patches failed (bins masked BAD2DFIT)
};

// Everything perfex-extract is told on its command line.
struct ExtractArgs {
  std::string input;     // -i/--input   preproc image
  std::string psf;       // -p/--psf     PSF (any format io::read_psf reads)
  std::string output;    // -o/--output  frame file
  std::string model;     // -m/--model   model image file ("" = none)
  std::string fibermap;  // -f/--fibermap  FIBERMAP rows from this file ("" = the image's)
  extract::ExtractionOptions options;
  bool wavelength_given = false;  // -w given; else the PSF's WAVEMIN,WAVEMAX with dw 0.8
  bool nspec_given = false;       // -n given; else the default 500 may be clipped to the PSF
  bool allow_image_size_mismatch = false;  // an image that is not the PSF's CCD: warn only
  std::string backend;                     // serial | openmp | cuda ("" = default_backend())
  int threads = 0;                         // 0 = the Kokkos / OpenMP default
  bool timing = false;                     // print the phases with their times
  std::string tools_libs;                  // --kokkos-tools-libs: a Kokkos Tools library
  std::vector<std::string> kokkos_thread_options;  // --kokkos-threads=N, --kokkos-num-threads=N
  bool help = false;
  bool version = false;  // --version: perfex's, Kokkos' and the backends' versions
};

using io::ProgressCallback;
using io::WarningCallback;

// The library request of a command line.
io::FilesRequest files_request(const ExtractArgs& args);

// Usage text of perfex-extract's options (the demo prints its own above it); input_output:
// with -i, -p and -o (the demo chooses its own files).
std::string extract_options_help(bool input_output = true);

// Walks a command line: "--opt value", "--opt=value" and "-x value". Every error is a
// UsageError naming the option.
class ArgReader {
 public:
  explicit ArgReader(std::vector<std::string> args) : args_(std::move(args)) {}
  // Moves to the next argument; false after the last one.
  bool next();
  // The current argument without its "=value" part.
  const std::string& name() const { return name_; }
  bool is(const char* short_name, const char* long_name) const;
  // The option's value: its "=value", else the next argument.
  std::string value();
  // A non-empty value; `what` names it in the message ("file", "folder").
  std::string nonempty_value(const char* what);
  int int_value(int min);
  double double_value(double lo, double hi);
  // For flags: an "=value" is an error.
  void no_value() const;
  // Throws "unknown option" / "unexpected argument" for the current argument; an unknown
  // option names the nearest of the options is() was asked about ("did you mean ...?").
  [[noreturn]] void reject() const;

 private:
  std::vector<std::string> args_;
  std::size_t next_ = 0;
  std::string name_, inline_value_;
  bool has_inline_ = false;
  // The option names is() compared the current argument with: every option a parser knows
  // once it rejects the argument, with no list of them to keep beside the parser.
  mutable std::vector<std::string> known_;
};

// Applies the reader's current argument when it is one of perfex-extract's options; false
// when it is not (the caller then tries its own options, or calls r.reject()).
bool parse_extract_option(ArgReader& r, ExtractArgs& a);
// Completes a parse: model_image from -m, the default backend, and (unless --help) the
// required files when require_files.
void finish_extract_args(ExtractArgs& a, bool require_files);
// perfex-extract's whole command line (without the program name).
ExtractArgs parse_extract_args(const std::vector<std::string>& args);

// Progress of an extraction. On a terminal, a bar redrawn at most ~10 times a second:
// "[#####.....] 120/260 patches  35.2 patches/s  ETA 4 s". Elsewhere (a batch job's log), a
// line each time another tenth of the patches is done: "tool: 120/260 patches (46 %), 35.2
// patches/s, ETA 4 s".
class ProgressBar {
 public:
  enum class Style { none, terminal, log };
  ProgressBar(std::ostream& out, Style style, std::string tool = "");
  static bool stderr_is_terminal();
  // The style for stderr: a bar on a terminal, else log lines.
  static Style stderr_style();
  // (0, 0) marks the start of the extraction (run_extract_files sends it): the clock restarts.
  void update(int done, int total);
  // Ends the bar's line (once, if anything was drawn).
  void finish();
  ProgressCallback callback() {
    return [this](int done, int total) { update(done, total); };
  }

 private:
  using clock = std::chrono::steady_clock;
  std::ostream& out_;
  Style style_;
  std::string tool_;
  bool drawn_ = false;
  int logged_tenths_ = 0;  // tenths of the patches a log line reported
  clock::time_point start_, last_;
};

using RunResult = io::FilesResult;

// io::extract_files of the command line with a progress bar on a terminal (stderr); warnings
// on stderr as "tool: warning: ..." (the run's as they arise, the frame's after the
// extraction).
RunResult run_extract_files_reporting(const std::string& tool, const ExtractArgs& args);

// "perfex-extract: N fibres x K wavelengths, P patches in T s (X patches/s, G GFLOP/s),
// backend B, threads T, failed patches F" (GFLOP/s of the patch linear algebra,
// Frame::linalg_flops).
std::string summary_line(const std::string& tool, const RunResult& r);

// --timing's lines: "tool: phases", then one line per phase of the run with its time.
std::string timing_lines(const std::string& tool, const RunResult& r);

// The runtime settings of a command line: host threads (checked, "option --threads") and the
// Kokkos Tools library.
HostThreads runtime_settings(const ExtractArgs& args);

// Runs a tool's main body and returns its exit status; an exception is reported on stderr as
// "tool: error: ..." with status 2 for a RequestError (UsageError included), 1 otherwise.
int guarded_main(const std::string& tool, const std::function<int()>& body);

// main() of perfex-extract.
int extract_main(int argc, const char* const* argv);

}  // namespace cli
}  // namespace perfex
