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
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

namespace perfex {
namespace cli {

// A bad command line: the message names the option; the tools exit with status 2.
class UsageError : public Error {
 public:
  explicit UsageError(const std::string& what) : Error(what) {}
};

// perfex-extract's exit statuses.
enum ExitStatus : int {
  exit_ok = 0,
  exit_failure = 1,         // an input unreadable or invalid, an I/O or memory failure
  exit_usage = 2,           // refused before any work: options, outputs, fibres, grid, size
  exit_failed_patches = 3,  // frame written, but some patches failed (bins masked BAD2DFIT)
};

// Kokkos' OpenMP backend keeps its threads in a table of 512 (Kokkos 3.4 to 4.x): more crash
// its start-up.
constexpr int kMaxThreads = 512;

// --wavepad-frac's upper bound: 10 + int(10 x 10) = 110 bins of padding on each side, about
// ten spot heights (desispec uses 0.2). The cost of a patch grows with the cube of its
// wavelengths, so larger values only make a run endless.
constexpr double kMaxWavepadFrac = 10.0;

// Everything perfex-extract is told on its command line.
struct ExtractArgs {
  std::string input;   // -i/--input   preproc image
  std::string psf;     // -p/--psf     GaussHermite PSF
  std::string output;  // -o/--output  frame file
  std::string model;   // -m/--model   model image file ("" = none)
  extract::ExtractionOptions options;
  bool wavelength_given = false;  // -w given; else the PSF's WAVEMIN,WAVEMAX with dw 0.8
  bool nspec_given = false;       // -n given; else the default 500 may be clipped to the PSF
  bool allow_image_size_mismatch = false;  // an image that is not the PSF's CCD: warn only
  std::string backend;                     // serial | openmp | cuda ("" = default_backend())
  int threads = 0;                         // 0 = the Kokkos / OpenMP default
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

// The host thread count to start Kokkos with: `requested` (--threads), else OpenMP's default
// (OMP_NUM_THREADS, else the cores) when it exceeds kMaxThreads, capped there with a warning;
// 0 = leave the default.
int host_threads(int requested, std::string& warning);

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

// Receives each warning of a run as it arises (before a long extraction, when it can).
using WarningCallback = std::function<void(const std::string&)>;

// Runs f(); an allocation failure (std::bad_alloc, Kokkos' allocation error) becomes a
// perfex::Error "out of memory while <what>".
template <class F>
decltype(auto) while_doing(const std::string& what, F&& f);

// Bytes of host memory this process may still allocate: MemAvailable (/proc/meminfo) capped by
// RLIMIT_AS and RLIMIT_DATA; infinity when unknown.
double available_host_memory();

// The options of a run once the PSF is known (throws UsageError naming the option): -w
// defaults to the PSF's WAVEMIN,WAVEMAX (PSF HDU) with dw 0.8 (desi_extract_spectra's rule);
// an explicit -s/-n beyond the PSF's fibres is refused, the default -n clipped (warning); the
// grid must reach the PSF's domain; nwavestep and the padding are clamped to the grid
// (warnings, recorded in the frame header).
extract::ExtractionOptions resolve_options(const ExtractArgs& args,
                                           const psf::GaussHermitePsfData& psf,
                                           const WarningCallback& warn);

// Throws UsageError unless every output can be written and none is an input or another
// output (the same file by device and inode, or by folder and name before it exists).
void check_outputs(const ExtractArgs& args);

// perfex-extract's whole job: check the outputs, read the PSF, resolve the options, check the
// image's size against the PSF and the memory the run needs against what is free, plan the
// frame, read only the image pixels the patches touch, extract, write the frame (and the
// model when asked). progress(0, 0) marks the start of the extraction. Everything that can be
// refused is refused before the extraction; warnings go to `warn` and into the frame header.
RunResult run_extract_files(const ExtractArgs& args, const ProgressCallback& progress = {},
                            const WarningCallback& warn = {});

// run_extract_files with a progress bar on a terminal (stderr); warnings on stderr as
// "tool: warning: ..." (the run's as they arise, the frame's after the extraction).
RunResult run_extract_files_reporting(const std::string& tool, const ExtractArgs& args);

// "perfex-extract: N fibres x K wavelengths, P patches in T s (X patches/s, G GFLOP/s),
// backend B, threads T, failed patches F" (GFLOP/s of the patch linear algebra,
// Frame::linalg_flops).
std::string summary_line(const std::string& tool, const RunResult& r);

// Runs a tool's main body and returns its exit status; an exception is reported on stderr as
// "tool: error: ..." with status 2 for a UsageError, 1 otherwise.
int guarded_main(const std::string& tool, const std::function<int()>& body);

template <class F>
decltype(auto) while_doing(const std::string& what, F&& f) {
  try {
    return f();
  } catch (const Error&) {
    throw;
  } catch (const std::bad_alloc&) {
    throw Error("out of memory while " + what);
  } catch (const std::runtime_error& e) {
    // Kokkos 3.4 reports a failed View allocation as a runtime_error with a call stack.
    const std::string m = e.what();
    if (m.find("allocation fail") == std::string::npos &&
        m.find("Allocation fail") == std::string::npos &&
        m.find("failed to allocate") == std::string::npos)
      throw;
    throw Error("out of memory while " + what + " (" + m.substr(0, m.find('\n')) + ")");
  }
}

// main() of perfex-extract.
int extract_main(int argc, const char* const* argv);

}  // namespace cli
}  // namespace perfex
