#pragma once
// The command-line layer shared by perfex-extract and perfex-demo (host only; link perfex::io):
// desi_extract_spectra-compatible option parsing, Kokkos start-up with a thread count, a
// terminal progress bar, and "read PSF + image → extract on a backend → write frame (+model)".
#include <perfex/config.hpp>
#include <perfex/detail/kokkos_compat.hpp>
#include <perfex/error.hpp>
#include <perfex/extract/extract_frame.hpp>
#include <perfex/extract/frame.hpp>
#include <perfex/extract/options.hpp>
#include <perfex/io/frame_fits.hpp>
#include <perfex/io/image_fits.hpp>
#include <perfex/io/psf_fits.hpp>

#include <Kokkos_Core.hpp>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

namespace perfex {
namespace io {
namespace cli {

// A bad command line: the message names the option; tools exit with status 2.
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

// Execution spaces this build can run on, in order of preference for the default.
inline std::vector<std::string> available_backends() {
  std::vector<std::string> b;
#ifdef KOKKOS_ENABLE_SERIAL
  b.push_back("serial");
#endif
#ifdef KOKKOS_ENABLE_OPENMP
  b.push_back("openmp");
#endif
#ifdef KOKKOS_ENABLE_CUDA
  b.push_back("cuda");
#endif
  return b;
}

inline std::string default_backend() {
#if defined(KOKKOS_ENABLE_CUDA)
  return "cuda";
#elif defined(KOKKOS_ENABLE_OPENMP)
  return "openmp";
#else
  return "serial";
#endif
}

inline std::string join(const std::vector<std::string>& v, const char* sep) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : sep) + x;
  return s;
}

// Usage text of perfex-extract's options (the demo appends its own).
inline std::string extract_options_help() {
  std::ostringstream o;
  const extract::ExtractionOptions d;
  o << "  -i, --input FILE        preproc image (HDUs IMAGE, IVAR, MASK[, FIBERMAP])\n"
       "  -p, --psf FILE          GaussHermite PSF file (specex PSFVER 3)\n"
       "  -o, --output FILE       output frame file\n"
       "  -m, --model FILE        also write the model image\n"
       "  -w, --wavelength WMIN,WMAX,DW\n"
       "                          output wavelength grid in Angstrom (default "
    << d.wmin << "," << d.wmax << "," << d.dw
    << ")\n"
       "  -s, --specmin N         first fibre (default "
    << d.specmin
    << ")\n"
       "  -n, --nspec N           number of fibres (default "
    << d.nspec
    << ")\n"
       "      --bundlesize N      fibres per bundle (default "
    << d.bundlesize
    << ")\n"
       "      --nsubbundles N     sub-bundles per bundle (default "
    << d.nsubbundles
    << ")\n"
       "      --nwavestep N       core wavelengths per patch (default "
    << d.nwavestep
    << ")\n"
       "      --wavepad-frac X    wavelength padding fraction (default "
    << d.wavepad_frac
    << ")\n"
       "      --pixpad-frac X     pixel padding fraction in [0,1] (default "
    << d.pixpad_frac
    << ")\n"
       "      --regularize X      regularisation (default "
    << d.regularize
    << ")\n"
       "      --psferr X          PSF error for chi2pix (default: the PSF's PSFERR, else 0.01)\n"
       "      --decorrelate-fibers  decorrelate across fibres (full H^1/2; not recommended)\n"
       "      --backend NAME      execution space: "
    << join(available_backends(), ", ") << " (default " << default_backend()
    << ")\n"
       "      --threads N         host threads (default: OMP_NUM_THREADS / all cores)\n"
       "  -h, --help              this help\n";
  return o.str();
}

namespace detail {

inline double parse_double(const std::string& opt, const std::string& text) {
  const char* s = text.c_str();
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(s, &end);
  if (text.empty() || end == s || *end != '\0' || errno == ERANGE || !std::isfinite(v))
    throw UsageError("option " + opt + ": '" + text + "' is not a number");
  return v;
}

inline int parse_int(const std::string& opt, const std::string& text) {
  const char* s = text.c_str();
  char* end = nullptr;
  errno = 0;
  const long v = std::strtol(s, &end, 10);
  if (text.empty() || end == s || *end != '\0' || errno == ERANGE || v < -2147483647L ||
      v > 2147483647L)
    throw UsageError("option " + opt + ": '" + text + "' is not an integer");
  return static_cast<int>(v);
}

inline int parse_int_min(const std::string& opt, const std::string& text, int min) {
  const int v = parse_int(opt, text);
  if (v < min)
    throw UsageError("option " + opt + ": must be >= " + std::to_string(min) + ", got " + text);
  return v;
}

inline double parse_double_range(const std::string& opt, const std::string& text, double lo,
                                 double hi) {
  const double v = parse_double(opt, text);
  if (v < lo || v > hi) {
    std::ostringstream m;
    m << "option " << opt << ": must be ";
    if (hi == HUGE_VAL)
      m << ">= " << lo;
    else
      m << "in [" << lo << ", " << hi << "]";
    m << ", got " << text;
    throw UsageError(m.str());
  }
  return v;
}

// "wmin,wmax,dw"
inline void parse_wavelength(const std::string& opt, const std::string& text,
                             extract::ExtractionOptions& o) {
  std::vector<std::string> parts;
  std::string cur;
  for (char c : text) {
    if (c == ',') {
      parts.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  parts.push_back(cur);
  if (parts.size() != 3)
    throw UsageError("option " + opt + ": expected WMIN,WMAX,DW, got '" + text + "'");
  double v[3];
  for (int i = 0; i < 3; ++i) {
    const char* s = parts[i].c_str();
    char* end = nullptr;
    v[i] = std::strtod(s, &end);
    if (parts[i].empty() || end == s || *end != '\0' || !std::isfinite(v[i]))
      throw UsageError("option " + opt + ": expected WMIN,WMAX,DW, got '" + text + "'");
  }
  if (!(v[2] > 0)) throw UsageError("option " + opt + ": DW must be > 0, got '" + text + "'");
  if (!(v[1] >= v[0]))
    throw UsageError("option " + opt + ": WMAX must be >= WMIN, got '" + text + "'");
  if (!(v[0] > 0)) throw UsageError("option " + opt + ": WMIN must be > 0, got '" + text + "'");
  o.wmin = v[0];
  o.wmax = v[1];
  o.dw = v[2];
}

}  // namespace detail

// Parses perfex-extract's options (desi_extract_spectra's names; "--opt value", "--opt=value",
// "-x value"). Starts from `defaults`. Unknown arguments are an error unless `rest` is given,
// in which case they are appended there (the demo adds its own options on top). Files are
// required only when `require_files` (and not --help). Throws UsageError naming the option.
inline ExtractArgs parse_extract_args(const std::vector<std::string>& argv,
                                      bool require_files = true, const ExtractArgs& defaults = {},
                                      std::vector<std::string>* rest = nullptr) {
  ExtractArgs a = defaults;
  for (std::size_t i = 0; i < argv.size(); ++i) {
    std::string arg = argv[i];
    std::string value;
    bool has_inline = false;
    if (arg.size() > 2 && arg.compare(0, 2, "--") == 0) {
      const auto eq = arg.find('=');
      if (eq != std::string::npos) {
        value = arg.substr(eq + 1);
        arg = arg.substr(0, eq);
        has_inline = true;
      }
    }
    auto take = [&](const std::string& name) -> std::string {
      if (has_inline) return value;
      if (i + 1 >= argv.size()) throw UsageError("option " + name + ": needs a value");
      return argv[++i];
    };
    auto flag = [&](const std::string& name) {
      if (has_inline) throw UsageError("option " + name + ": takes no value");
    };
    auto is = [&](const char* s, const char* l) { return (s && arg == s) || arg == l; };
    const std::string name = arg;
    if (is("-h", "--help")) {
      flag(name);
      a.help = true;
    } else if (is("-i", "--input")) {
      a.input = take(name);
      if (a.input.empty()) throw UsageError("option " + name + ": empty file name");
    } else if (is("-p", "--psf")) {
      a.psf = take(name);
      if (a.psf.empty()) throw UsageError("option " + name + ": empty file name");
    } else if (is("-o", "--output")) {
      a.output = take(name);
      if (a.output.empty()) throw UsageError("option " + name + ": empty file name");
    } else if (is("-m", "--model")) {
      a.model = take(name);
      if (a.model.empty()) throw UsageError("option " + name + ": empty file name");
    } else if (is("-w", "--wavelength")) {
      detail::parse_wavelength(name, take(name), a.options);
    } else if (is("-s", "--specmin")) {
      a.options.specmin = detail::parse_int_min(name, take(name), 0);
    } else if (is("-n", "--nspec")) {
      a.options.nspec = detail::parse_int_min(name, take(name), 1);
    } else if (is(nullptr, "--bundlesize")) {
      a.options.bundlesize = detail::parse_int_min(name, take(name), 1);
    } else if (is(nullptr, "--nsubbundles")) {
      a.options.nsubbundles = detail::parse_int_min(name, take(name), 1);
    } else if (is(nullptr, "--nwavestep")) {
      a.options.nwavestep = detail::parse_int_min(name, take(name), 1);
    } else if (is(nullptr, "--wavepad-frac")) {
      a.options.wavepad_frac = detail::parse_double_range(name, take(name), 0.0, HUGE_VAL);
    } else if (is(nullptr, "--pixpad-frac")) {
      a.options.pixpad_frac = detail::parse_double_range(name, take(name), 0.0, 1.0);
    } else if (is(nullptr, "--regularize")) {
      a.options.regularize = detail::parse_double_range(name, take(name), 0.0, HUGE_VAL);
    } else if (is(nullptr, "--psferr")) {
      a.options.psferr = detail::parse_double_range(name, take(name), 0.0, HUGE_VAL);
    } else if (is(nullptr, "--decorrelate-fibers")) {
      flag(name);
      a.options.decorrelation = extract::Decorrelation::noise;
    } else if (is(nullptr, "--backend")) {
      const std::string b = take(name);
      const auto avail = available_backends();
      bool ok = false;
      for (const auto& x : avail) ok = ok || x == b;
      if (!ok)
        throw UsageError("option " + name + ": '" + b + "' is not one of " + join(avail, ", "));
      a.backend = b;
    } else if (is(nullptr, "--threads")) {
      a.threads = detail::parse_int_min(name, take(name), 1);
    } else if (rest) {
      rest->push_back(argv[i]);
    } else if (!arg.empty() && arg[0] == '-') {
      throw UsageError("unknown option " + arg + " (see --help)");
    } else {
      throw UsageError("unexpected argument '" + arg + "' (see --help)");
    }
  }
  a.options.model_image = !a.model.empty();
  if (a.backend.empty()) a.backend = default_backend();
  if (require_files && !a.help) {
    if (a.input.empty()) throw UsageError("option -i/--input: required");
    if (a.psf.empty()) throw UsageError("option -p/--psf: required");
    if (a.output.empty()) throw UsageError("option -o/--output: required");
  }
  return a;
}

inline ExtractArgs parse_extract_args(int argc, const char* const* argv,
                                      bool require_files = true) {
  std::vector<std::string> v;
  for (int i = 1; i < argc; ++i) v.emplace_back(argv[i]);
  return parse_extract_args(v, require_files);
}

// Kokkos for the process's lifetime, with `threads` host threads (0 = default).
class KokkosSession {
 public:
  explicit KokkosSession(int threads) {
    if (Kokkos::is_initialized()) return;
    // Unset OMP_PROC_BIND means "false" for OpenMP; saying so silences Kokkos' start-up warning.
    setenv("OMP_PROC_BIND", "false", /*overwrite=*/0);
#if KOKKOS_VERSION >= 30700
    Kokkos::InitializationSettings s;
    if (threads > 0) s.set_num_threads(threads);
    Kokkos::initialize(s);
#else
    Kokkos::InitArguments args;
    if (threads > 0) args.num_threads = threads;
    Kokkos::initialize(args);
#endif
    owner_ = true;
  }
  ~KokkosSession() {
    if (owner_) Kokkos::finalize();
  }
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

inline int backend_threads(const std::string& backend) {
  return with_backend(backend, [](const auto& exec) { return perfex::concurrency(exec); });
}

// Progress on a terminal: "[#####.....] 120/260 patches  35.2 patches/s  ETA 4 s". Draws
// only when enabled (perfex-extract: stderr is a terminal), at most ~10 times a second.
class ProgressBar {
 public:
  ProgressBar(std::ostream& out, bool enabled)
      : out_(out), enabled_(enabled), start_(clock::now()) {}
  static bool stderr_is_terminal() { return isatty(fileno(stderr)) != 0; }

  // (0, 0) marks the start of the extraction (run_extraction sends it): the clock restarts.
  void update(int done, int total) {
    if (done == 0 && total == 0) start_ = clock::now();
    if (!enabled_ || total <= 0) return;
    const auto now = clock::now();
    if (drawn_ && done < total && now - last_ < std::chrono::milliseconds(100)) return;
    last_ = now;
    drawn_ = true;
    const double t = std::chrono::duration<double>(now - start_).count();
    const double rate = t > 0 ? done / t : 0.0;
    const int width = 30;
    const int fill = static_cast<int>(static_cast<double>(width) * done / total);
    std::ostringstream line;
    line << "\r[" << std::string(static_cast<std::size_t>(fill), '#')
         << std::string(static_cast<std::size_t>(width - fill), '.') << "] " << done << "/" << total
         << " patches  ";
    line.setf(std::ios::fixed);
    line.precision(1);
    line << rate << " patches/s";
    if (done < total && rate > 0) {
      line.precision(0);
      line << "  ETA " << (total - done) / rate << " s";
    }
    line << "   ";
    out_ << line.str() << std::flush;
  }
  // Ends the bar's line (once, if anything was drawn).
  void finish() {
    if (enabled_ && drawn_) out_ << "\n" << std::flush;
    drawn_ = false;
  }
  extract::ProgressCallback callback() {
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
inline RunResult run_extraction(const std::string& backend, const psf::GaussHermitePsfData& psf,
                                const extract::CcdImage& image,
                                const extract::ExtractionOptions& options,
                                const extract::ProgressCallback& progress = {}) {
  RunResult r;
  r.backend = backend;
  if (progress) progress(0, 0);
  const auto t0 = std::chrono::steady_clock::now();
  r.frame = with_backend(backend, [&](const auto& exec) {
    r.threads = perfex::concurrency(exec);
    return extract::extract_frame(exec, psf, image, options, progress);
  });
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

// perfex-extract's whole job: read the PSF and the image, extract, write the frame (and the
// model when asked). The options' nspec is clipped to the PSF's fibres after specmin.
// Fails early (before a long extraction) when an output file's folder is not writable.
inline void check_output_folder(const std::string& option, const std::string& path) {
  const std::string folder = frame_fits_detail::folder_of(path);
  if (access(folder.c_str(), W_OK) != 0)
    throw Error("option " + option + ": cannot write " + path + ": folder " + folder + ": " +
                std::strerror(errno));
}

inline RunResult run_extract_files(const ExtractArgs& args,
                                   const extract::ProgressCallback& progress = {}) {
  check_output_folder("-o/--output", args.output);
  if (!args.model.empty()) check_output_folder("-m/--model", args.model);
  const psf::GaussHermitePsfData psf = read_psf(args.psf);
  const PreprocImage image = read_preproc(args.input);
  extract::ExtractionOptions options = args.options;
  options.model_image = !args.model.empty();
  if (options.specmin >= psf.nfib)
    throw UsageError("option -s/--specmin: " + std::to_string(options.specmin) +
                     " is beyond the PSF's " + std::to_string(psf.nfib) + " fibres");
  if (options.specmin + options.nspec > psf.nfib) options.nspec = psf.nfib - options.specmin;
  RunResult r = run_extraction(args.backend, psf, image.ccd, options, progress);
  const FrameProvenance prov{args.input, args.psf};
  write_frame(args.output, r.frame, prov);
  if (!args.model.empty()) write_model(args.model, r.frame, prov);
  return r;
}

// "perfex-extract: N fibres x K wavelengths, P patches in T s (X patches/s, G GFLOP/s),
// backend B, threads T, failed patches F" (GFLOP/s of the patch linear algebra,
// Frame::linalg_flops)
inline std::string summary_line(const std::string& tool, const RunResult& r) {
  std::ostringstream s;
  const double rate = r.seconds > 0 ? r.frame.npatches / r.seconds : 0.0;
  s << tool << ": " << r.frame.nspec << " fibres x " << r.frame.nwave << " wavelengths, "
    << r.frame.npatches << " patches in ";
  s.setf(std::ios::fixed);
  s.precision(2);
  s << r.seconds << " s (";
  s.precision(1);
  s << rate << " patches/s, " << (r.seconds > 0 ? r.frame.linalg_flops / r.seconds / 1e9 : 0.0)
    << " GFLOP/s), backend " << r.backend << ", threads " << r.threads << ", failed patches "
    << r.frame.failed_patches;
  return s.str();
}

// main() of perfex-extract.
inline int extract_main(int argc, const char* const* argv) {
  const std::string tool = "perfex-extract";
  ExtractArgs args;
  try {
    args = parse_extract_args(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << tool << ": error: " << e.what() << "\n";
    return 2;
  }
  if (args.help) {
    std::cout << "usage: " << tool << " -i IMAGE -p PSF -o FRAME [options]\n"
              << "Spectro-perfectionism extraction of a DESI preproc image (perfex "
              << PERFEX_VERSION_STRING << ").\n\noptions:\n"
              << extract_options_help();
    return 0;
  }
  try {
    KokkosSession kokkos(args.threads);
    ProgressBar bar(std::cerr, ProgressBar::stderr_is_terminal());
    RunResult r;
    try {
      r = run_extract_files(args, bar.callback());
    } catch (...) {
      bar.finish();
      throw;
    }
    bar.finish();
    for (const auto& w : r.frame.warnings) std::cerr << tool << ": warning: " << w << "\n";
    std::cout << summary_line(tool, r) << std::endl;
  } catch (const UsageError& e) {
    std::cerr << tool << ": error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << tool << ": error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}

}  // namespace cli
}  // namespace io
}  // namespace perfex
