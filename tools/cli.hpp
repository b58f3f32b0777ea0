#pragma once
// The command-line layer shared by perfex-extract and perfex-demo (not part of the library):
// desi_extract_spectra-compatible option parsing, a Kokkos session with a thread count,
// backend dispatch, a terminal progress bar, and "read PSF + image -> extract on a backend ->
// write frame (+model)". Compiled once (tools/cli.cpp) into the perfex_cli static library.
//
// The parser is hand-written: Debian 12's CLI11 (2.1.2) and cxxopts (3.1) would need a custom
// validator per option to name the option and the bad value as clearly (CLI11 reports
// "-n 0" as "Value 0 not in range 0.000000 to 1.797...e308" and accepts "--pixpad-frac nan").
#include <perfex/error.hpp>
#include <perfex/extract/frame.hpp>
#include <perfex/extract/image.hpp>
#include <perfex/extract/options.hpp>
#include <perfex/psf/psf_data.hpp>

#include <Kokkos_Core.hpp>

#include <chrono>
#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

namespace perfex {
namespace cli {

// A bad command line: the message names the option; the tools exit with status 2.
class UsageError : public Error {
 public:
  explicit UsageError(const std::string& what) : Error(what) {}
};

// Everything perfex-extract is told on its command line.
struct ExtractArgs {
  std::string input;   // -i/--input   preproc image
  std::string psf;     // -p/--psf     GaussHermite PSF
  std::string output;  // -o/--output  frame file
  std::string model;   // -m/--model   model image file ("" = none)
  extract::ExtractionOptions options;
  std::string backend;  // serial | openmp | cuda ("" = default_backend())
  int threads = 0;      // 0 = the Kokkos / OpenMP default
  bool help = false;
};

// Execution spaces this build can run on, and the default one (CUDA, else OpenMP, else Serial).
std::vector<std::string> available_backends();
std::string default_backend();
std::string join(const std::vector<std::string>& v, const char* sep);

// extract_frame's progress callback: (patches done, patches in total).
using ProgressCallback = std::function<void(int, int)>;

// Usage text of perfex-extract's options (the demo prints its own above it).
std::string extract_options_help();

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
  // Throws "unknown option" / "unexpected argument" for the current argument.
  [[noreturn]] void reject() const;

 private:
  std::vector<std::string> args_;
  std::size_t next_ = 0;
  std::string name_, inline_value_;
  bool has_inline_ = false;
};

// Applies the reader's current argument when it is one of perfex-extract's options; false
// when it is not (the caller then tries its own options, or calls r.reject()).
bool parse_extract_option(ArgReader& r, ExtractArgs& a);
// Completes a parse: model_image from -m, the default backend, and (unless --help) the
// required files when require_files.
void finish_extract_args(ExtractArgs& a, bool require_files);
// perfex-extract's whole command line (without the program name).
ExtractArgs parse_extract_args(const std::vector<std::string>& args);

// Kokkos for the process's lifetime, with `threads` host threads (0 = default); does
// nothing when Kokkos is already initialised.
class KokkosSession {
 public:
  explicit KokkosSession(int threads);
  ~KokkosSession();
  KokkosSession(const KokkosSession&) = delete;
  KokkosSession& operator=(const KokkosSession&) = delete;

 private:
  bool owner_ = false;
};

// Calls f(exec) with a default instance of the named execution space.
template <class F>
decltype(auto) with_backend(const std::string& backend, F&& f) {
#ifdef KOKKOS_ENABLE_CUDA
  if (backend == "cuda") return f(Kokkos::Cuda());
#endif
#ifdef KOKKOS_ENABLE_OPENMP
  if (backend == "openmp") return f(Kokkos::OpenMP());
#endif
#ifdef KOKKOS_ENABLE_SERIAL
  if (backend == "serial") return f(Kokkos::Serial());
#endif
  throw UsageError("option --backend: '" + backend + "' is not one of " +
                   join(available_backends(), ", "));
}

// Progress on a terminal: "[#####.....] 120/260 patches  35.2 patches/s  ETA 4 s". Draws
// only when enabled (the tools: stderr is a terminal), at most ~10 times a second.
class ProgressBar {
 public:
  ProgressBar(std::ostream& out, bool enabled);
  static bool stderr_is_terminal();
  // (0, 0) marks the start of the extraction (run_extraction sends it): the clock restarts.
  void update(int done, int total);
  // Ends the bar's line (once, if anything was drawn).
  void finish();
  ProgressCallback callback() {
    return [this](int done, int total) { update(done, total); };
  }

 private:
  using clock = std::chrono::steady_clock;
  std::ostream& out_;
  bool enabled_;
  bool drawn_ = false;
  clock::time_point start_, last_;
};

struct RunResult {
  extract::Frame frame;
  std::string backend;
  int threads = 1;
  double seconds = 0;  // extraction only (not I/O)
};

// Extracts `image` with `psf` on the named backend. progress(0, 0) is called once when the
// extraction starts, then extract_frame's (done, total) after each batch of patches.
RunResult run_extraction(const std::string& backend, const psf::GaussHermitePsfData& psf,
                         const extract::CcdImage& image, const extract::ExtractionOptions& options,
                         const ProgressCallback& progress = {});

// perfex-extract's whole job: read the PSF and the image, extract, write the frame (and the
// model when asked). The options' nspec is clipped to the PSF's fibres after specmin. Fails
// early (before a long extraction) when an output file's folder is not writable.
RunResult run_extract_files(const ExtractArgs& args, const ProgressCallback& progress = {});

// run_extract_files with a progress bar on a terminal (stderr); the frame's warnings follow
// on stderr as "tool: warning: ...".
RunResult run_extract_files_reporting(const std::string& tool, const ExtractArgs& args);

// "perfex-extract: N fibres x K wavelengths, P patches in T s (X patches/s, G GFLOP/s),
// backend B, threads T, failed patches F" (GFLOP/s of the patch linear algebra,
// Frame::linalg_flops).
std::string summary_line(const std::string& tool, const RunResult& r);

// Runs a tool's main body and returns its exit status; an exception is reported on stderr as
// "tool: error: ..." with status 2 for a UsageError, 1 otherwise.
int guarded_main(const std::string& tool, const std::function<int()>& body);

// main() of perfex-extract.
int extract_main(int argc, const char* const* argv);

}  // namespace cli
}  // namespace perfex
