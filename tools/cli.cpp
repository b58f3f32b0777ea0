#include "cli.hpp"

#include <perfex/config.hpp>
#include <perfex/detail/closest_name.hpp>
#include <perfex/io/extract_files.hpp>
#include <perfex/io/output_file.hpp>
#include <perfex/io/psf_files.hpp>
#include <perfex/runtime.hpp>
#include <perfex/version.hpp>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>
#include <iostream>
#include <limits>
#include <sstream>
#include <type_traits>

#include <unistd.h>

namespace perfex {
namespace cli {

io::FilesRequest files_request(const ExtractArgs& a) {
  io::FilesRequest job;
  job.image = a.input;
  job.psf = a.psf;
  job.output = a.output;
  job.model = a.model;
  job.fibermap = a.fibermap;
  job.request.options = a.options;
  job.request.wavelength_given = a.wavelength_given;
  job.request.nspec_given = a.nspec_given;
  job.request.allow_image_size_mismatch = a.allow_image_size_mismatch;
  job.backend = a.backend;
  return job;
}

std::string extract_options_help(bool input_output) {
  std::ostringstream o;
  const extract::ExtractionOptions d;
  if (input_output)
    o << "  -i, --input FILE        preproc image (HDUs IMAGE, IVAR[, MASK, FIBERMAP])\n"
      << "  -p, --psf FILE          PSF file of a format perfex reads (by its PSFTYPE):\n"
      << "                          " << io::psf_formats() << "\n"
      << "  -o, --output FILE       output frame file (FILE.gz: gzip-compressed)\n";
  o << "  -m, --model FILE        also write the model image\n"
    << "  -f, --fibermap FILE     FIBERMAP rows SPECMIN.. from this file (default: the image's)\n"
    << "  -w, --wavelength WMIN,WMAX,DW\n"
    << "                          output wavelength grid in Angstrom (default: the PSF's\n"
    << "                          WAVEMIN,WAVEMAX with DW 0.8)\n"
    << "  -s, --specmin N         first fibre (default " << d.specmin << ")\n"
    << "  -n, --nspec N           number of fibres (default " << d.nspec
    << ", or the PSF's fibres from -s when fewer)\n"
    << "      --bundlesize N      fibres per bundle (default " << d.bundlesize << ")\n"
    << "      --nsubbundles N     sub-bundles per bundle (default " << d.nsubbundles << ")\n"
    << "      --nwavestep N       core wavelengths per patch (default " << d.nwavestep
    << "; at most the grid's)\n"
    << "      --wavepad-frac X    wavelength padding fraction in [0," << extract::kMaxWavepadFrac
    << "] (default " << d.wavepad_frac << ")\n"
    << "      --pixpad-frac X     pixel padding fraction in [0,1] (default " << d.pixpad_frac
    << ")\n"
    << "  -r, --regularize X      regularisation (default " << d.regularize << ")\n"
    << "      --psferr X          PSF error for chi2pix (default: the PSF's PSFERR, else 0.01)\n"
    << "      --decorrelate-fibers  decorrelate across fibres (full H^1/2; not recommended)\n"
    << "      --geometry NAME     patches cut as gpu_specter or specter cuts them (default:\n"
    << "                          gpu_specter for specex's GAUSS-HERMITE files, else specter)\n"
    << "      --allow-image-size-mismatch\n"
    << "                          accept an image that is not the PSF's NPIX_Y x NPIX_X CCD\n"
    << "      --backend NAME      execution space: " << join_names(backend_names()) << " (default "
    << default_backend() << ")\n"
    << "      --threads N         host threads, at most " << kMaxHostThreads
    << " (default: KOKKOS_NUM_THREADS, else\n"
    << "                          OMP_NUM_THREADS, else the CPUs this process may use;\n"
    << "                          --kokkos-threads=N and --kokkos-num-threads=N say the same)\n"
    << "      --memory-budget MB  memory for spots and patch scratch, in MiB (default: half\n"
    << "                          the free GPU memory on CUDA, 512 on CPUs)\n"
    << "      --timing            print the run's phases with their times\n"
    << "      --kokkos-tools-libs FILE\n"
    << "                          load a Kokkos Tools library (a profiler: perfex's phases are\n"
    << "                          regions perfex::..., its kernels perfex::...); also\n"
    << "                          KOKKOS_TOOLS_LIBS (KOKKOS_PROFILE_LIBRARY with Kokkos 3.4)\n"
    << "  -h, --help              this help\n"
    << "      --version           perfex's and Kokkos' versions and the backends of this build\n"
    << "exit status: 0 done, 1 failed (bad input file, I/O, memory), 2 refused (options,\n"
    << "outputs, request beyond the PSF or the memory), 3 frame written but some patches failed\n";
  return o.str();
}

// ---- ArgReader -------------------------------------------------------------------------------
bool ArgReader::next() {
  if (next_ >= args_.size()) return false;
  name_ = args_[next_++];
  has_inline_ = false;
  inline_value_.clear();
  known_.clear();
  if (name_.size() > 2 && name_.compare(0, 2, "--") == 0) {
    const auto eq = name_.find('=');
    if (eq != std::string::npos) {
      inline_value_ = name_.substr(eq + 1);
      name_.resize(eq);
      has_inline_ = true;
    }
  }
  return true;
}

bool ArgReader::is(const char* short_name, const char* long_name) const {
  known_.push_back(long_name);
  return (short_name && name_ == short_name) || name_ == long_name;
}

std::string ArgReader::value() {
  if (has_inline_) return inline_value_;
  if (next_ >= args_.size()) throw UsageError("option " + name_ + ": needs a value");
  return args_[next_++];
}

std::string ArgReader::nonempty_value(const char* what) {
  std::string v = value();
  if (v.empty()) throw UsageError("option " + name_ + ": empty " + what + " name");
  return v;
}

int ArgReader::int_value(int min) {
  const std::string text = value();
  const char* s = text.c_str();
  char* end = nullptr;
  errno = 0;
  const long v = std::strtol(s, &end, 10);
  if (text.empty() || end == s || *end != '\0' || errno == ERANGE || v < -2147483647L ||
      v > 2147483647L)
    throw UsageError("option " + name_ + ": '" + text + "' is not an integer");
  if (v < min)
    throw UsageError("option " + name_ + ": must be >= " + std::to_string(min) + ", got " + text);
  return static_cast<int>(v);
}

namespace {

// A finite number filling the whole of `text`.
bool to_double(const std::string& text, double& v) {
  const char* s = text.c_str();
  char* end = nullptr;
  errno = 0;
  v = std::strtod(s, &end);
  return !text.empty() && end != s && *end == '\0' && errno != ERANGE && std::isfinite(v);
}

// "wmin,wmax,dw"
void parse_wavelength(const std::string& opt, const std::string& text,
                      extract::ExtractionOptions& o) {
  const std::string expected = "option " + opt + ": expected WMIN,WMAX,DW, got '" + text + "'";
  std::vector<double> v;
  std::stringstream parts(text);
  std::string part;
  while (std::getline(parts, part, ',')) {
    double x = 0;
    if (!to_double(part, x)) throw UsageError(expected);
    v.push_back(x);
  }
  if (v.size() != 3 || text.back() == ',') throw UsageError(expected);
  if (!(v[2] > 0)) throw UsageError("option " + opt + ": DW must be > 0, got '" + text + "'");
  if (!(v[1] >= v[0]))
    throw UsageError("option " + opt + ": WMAX must be >= WMIN, got '" + text + "'");
  if (!(v[0] > 0)) throw UsageError("option " + opt + ": WMIN must be > 0, got '" + text + "'");
  o.wmin = v[0];
  o.wmax = v[1];
  o.dw = v[2];
}

}  // namespace

double ArgReader::double_value(double lo, double hi) {
  const std::string text = value();
  double v = 0;
  if (!to_double(text, v)) throw UsageError("option " + name_ + ": '" + text + "' is not a number");
  if (v < lo || v > hi) {
    std::ostringstream m;
    m << "option " << name_ << ": must be ";
    if (hi == HUGE_VAL)
      m << ">= " << lo;
    else
      m << "in [" << lo << ", " << hi << "]";
    m << ", got " << text;
    throw UsageError(m.str());
  }
  return v;
}

void ArgReader::no_value() const {
  if (has_inline_) throw UsageError("option " + name_ + ": takes no value");
}

void ArgReader::reject() const {
  if (!name_.empty() && name_[0] == '-') {
    const std::string near = closest_name(name_, known_);
    throw UsageError("unknown option " + name_ +
                     (near.empty() ? " (see --help)" : " (did you mean " + near + "?)"));
  }
  throw UsageError("unexpected argument '" + name_ + "' (see --help)");
}

// ---- perfex-extract's options ----------------------------------------------------------------
bool parse_extract_option(ArgReader& r, ExtractArgs& a) {
  auto& o = a.options;
  if (r.is("-h", "--help")) {
    r.no_value();
    a.help = true;
  } else if (r.is(nullptr, "--version")) {
    r.no_value();
    a.version = true;
  } else if (r.is("-i", "--input")) {
    a.input = r.nonempty_value("file");
  } else if (r.is("-p", "--psf")) {
    a.psf = r.nonempty_value("file");
  } else if (r.is("-o", "--output")) {
    a.output = r.nonempty_value("file");
  } else if (r.is("-m", "--model")) {
    a.model = r.nonempty_value("file");
  } else if (r.is("-f", "--fibermap")) {
    a.fibermap = r.nonempty_value("file");
  } else if (r.is("-w", "--wavelength")) {
    const std::string name = r.name();
    parse_wavelength(name, r.value(), o);
    a.wavelength_given = true;
  } else if (r.is("-s", "--specmin")) {
    o.specmin = r.int_value(0);
  } else if (r.is("-n", "--nspec")) {
    o.nspec = r.int_value(1);
    a.nspec_given = true;
  } else if (r.is(nullptr, "--bundlesize")) {
    o.bundlesize = r.int_value(1);
  } else if (r.is(nullptr, "--nsubbundles")) {
    o.nsubbundles = r.int_value(1);
  } else if (r.is(nullptr, "--nwavestep")) {
    o.nwavestep = r.int_value(1);
  } else if (r.is(nullptr, "--wavepad-frac")) {
    o.wavepad_frac = r.double_value(0.0, extract::kMaxWavepadFrac);
  } else if (r.is(nullptr, "--pixpad-frac")) {
    o.pixpad_frac = r.double_value(0.0, 1.0);
  } else if (r.is("-r", "--regularize")) {
    o.regularize = r.double_value(0.0, HUGE_VAL);
  } else if (r.is(nullptr, "--psferr")) {
    o.psferr = r.double_value(0.0, HUGE_VAL);
  } else if (r.is(nullptr, "--decorrelate-fibers")) {
    r.no_value();
    o.decorrelation = extract::Decorrelation::noise;
  } else if (r.is(nullptr, "--geometry")) {
    const std::string name = r.name();
    o.geometry = extract::parse_geometry(r.value(), "option " + name);
  } else if (r.is(nullptr, "--backend")) {
    const std::string name = r.name();
    a.backend = r.value();
    check_backend(a.backend, "option " + name);
  } else if (r.is(nullptr, "--threads")) {
    const std::string name = r.name();
    a.threads = check_thread_count(r.int_value(1), "option " + name);
  } else if (r.is(nullptr, "--kokkos-threads") || r.is(nullptr, "--kokkos-num-threads")) {
    const std::string name = r.name();
    a.kokkos_thread_options.push_back(
        name + "=" + std::to_string(check_thread_count(r.int_value(1), "option " + name)));
  } else if (r.is(nullptr, "--memory-budget")) {
    o.memory_budget = static_cast<std::int64_t>(r.int_value(1)) << 20;
  } else if (r.is(nullptr, "--allow-image-size-mismatch")) {
    r.no_value();
    a.allow_image_size_mismatch = true;
  } else if (r.is(nullptr, "--timing")) {
    r.no_value();
    a.timing = true;
  } else if (r.is(nullptr, "--kokkos-tools-libs") || r.is(nullptr, "--kokkos-tools-library")) {
    a.tools_libs = r.nonempty_value("file");
  } else {
    return false;
  }
  return true;
}

void finish_extract_args(ExtractArgs& a, bool require_files) {
  a.options.model_image = !a.model.empty();
  if (a.backend.empty()) a.backend = default_backend();
  if (require_files && !a.help && !a.version) {
    if (a.input.empty()) throw UsageError("option -i/--input: required");
    if (a.psf.empty()) throw UsageError("option -p/--psf: required");
    if (a.output.empty()) throw UsageError("option -o/--output: required");
  }
}

ExtractArgs parse_extract_args(const std::vector<std::string>& args) {
  ExtractArgs a;
  ArgReader r(args);
  while (r.next())
    if (!parse_extract_option(r, a)) r.reject();
  finish_extract_args(a, /*require_files=*/true);
  return a;
}

// ---- progress, extraction -------------------------------------------------------------------
ProgressBar::ProgressBar(std::ostream& out, Style style, std::string tool)
    : out_(out), style_(style), tool_(std::move(tool)), start_(clock::now()) {}

bool ProgressBar::stderr_is_terminal() { return isatty(fileno(stderr)) != 0; }

ProgressBar::Style ProgressBar::stderr_style() {
  return stderr_is_terminal() ? Style::terminal : Style::log;
}

void ProgressBar::update(int done, int total) {
  if (done == 0 && total == 0) {
    start_ = clock::now();
    logged_tenths_ = 0;
  }
  if (style_ == Style::none || total <= 0) return;
  const auto now = clock::now();
  const int tenths = static_cast<int>(10LL * done / total);
  if (style_ == Style::log ? tenths <= logged_tenths_
                           : drawn_ && done < total && now - last_ < std::chrono::milliseconds(100))
    return;
  last_ = now;
  logged_tenths_ = tenths;
  const double t = std::chrono::duration<double>(now - start_).count();
  const double rate = t > 0 ? done / t : 0.0;
  std::ostringstream line;
  if (style_ == Style::log) {
    line << tool_ << ": " << done << "/" << total << " patches (" << 100LL * done / total
         << " %), ";
  } else {
    drawn_ = true;
    const int width = 30;
    const int fill = static_cast<int>(static_cast<double>(width) * done / total);
    line << "\r[" << std::string(static_cast<std::size_t>(fill), '#')
         << std::string(static_cast<std::size_t>(width - fill), '.') << "] " << done << "/" << total
         << " patches  ";
  }
  const char* gap = style_ == Style::log ? ", " : "  ";
  line.setf(std::ios::fixed);
  line.precision(1);
  line << rate << " patches/s";
  if (done < total && rate > 0) {
    line.precision(0);
    line << gap << "ETA " << (total - done) / rate << " s";
  }
  line << (style_ == Style::log ? "\n" : "   ");
  out_ << line.str() << std::flush;
}

void ProgressBar::finish() {
  if (style_ == Style::terminal && drawn_) out_ << "\n" << std::flush;
  drawn_ = false;
}

std::string summary_line(const std::string& tool, const RunResult& r) {
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

std::string timing_lines(const std::string& tool, const RunResult& r) {
  return format_phases(r.frame.phases, tool + ": phases");
}

HostThreads runtime_settings(const ExtractArgs& args) {
  HostThreads h = host_threads(args.threads, "option --threads", args.kokkos_thread_options);
  h.tools_libs = args.tools_libs;
  return h;
}

RunResult run_extract_files_reporting(const std::string& tool, const ExtractArgs& args) {
  ProgressBar bar(std::cerr, ProgressBar::stderr_style(), tool);
  RunResult r;
  try {
    r = io::extract_files(files_request(args), io::FilesNames(), bar.callback(),
                          [&](const std::string& w) {
                            bar.finish();
                            std::cerr << tool << ": warning: " << w << "\n";
                          });
  } catch (...) {
    bar.finish();
    throw;
  }
  bar.finish();
  for (const auto& w : r.frame.warnings) std::cerr << tool << ": warning: " << w << "\n";
  return r;
}

int guarded_main(const std::string& tool, const std::function<int()>& body) {
  try {
    return body();
  } catch (const RequestError& e) {
    std::cerr << tool << ": error: " << e.what() << "\n";
    return exit_usage;
  } catch (const std::bad_alloc& e) {
    std::cerr << tool << ": error: out of memory (" << e.what() << ")\n";
    return exit_failure;
  } catch (const std::exception& e) {
    std::cerr << tool << ": error: " << e.what() << "\n";
    return exit_failure;
  }
}

int extract_main(int argc, const char* const* argv) {
  const std::string tool = "perfex-extract";
  return guarded_main(tool, [&] {
    const ExtractArgs args = parse_extract_args(std::vector<std::string>(argv + 1, argv + argc));
    if (args.help) {
      std::cout << "usage: " << tool << " -i IMAGE -p PSF -o FRAME [options]\n"
                << "Spectro-perfectionism extraction of a DESI preproc image (perfex "
                << PERFEX_VERSION_STRING << ").\n\noptions:\n"
                << extract_options_help();
      return 0;
    }
    if (args.version) {
      std::cout << version_text();
      return 0;
    }
    io::remove_temp_files_on_signals();
    const HostThreads threads = runtime_settings(args);
    Runtime runtime(threads);
    if (!threads.warning.empty()) std::cerr << tool << ": warning: " << threads.warning << "\n";
    const RunResult r = run_extract_files_reporting(tool, args);
    std::cout << summary_line(tool, r) << std::endl;
    if (args.timing) std::cout << timing_lines(tool, r) << std::endl;
    if (r.frame.failed_patches > 0) {
      std::cerr << tool << ": error: " << r.frame.failed_patches << " of " << r.frame.npatches
                << " patches failed; their bins are masked BAD2DFIT | NODATA in " << args.output
                << "\n";
      return static_cast<int>(exit_failed_patches);
    }
    return static_cast<int>(exit_ok);
  });
}

}  // namespace cli
}  // namespace perfex
