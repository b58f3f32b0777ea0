#include "cli.hpp"

#include <perfex/config.hpp>
#include <perfex/detail/kokkos_compat.hpp>
#include <perfex/extract/extract_frame.hpp>
#include <perfex/extract/preflight.hpp>
#include <perfex/io/frame_fits.hpp>
#include <perfex/io/image_fits.hpp>
#include <perfex/io/output_file.hpp>
#include <perfex/io/psf_fits.hpp>

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

#include <sys/resource.h>
#include <unistd.h>

#ifdef KOKKOS_ENABLE_OPENMP
#include <omp.h>
#endif

namespace perfex {
namespace cli {

std::vector<std::string> available_backends() {
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

std::string default_backend() {
#if defined(KOKKOS_ENABLE_CUDA)
  return "cuda";
#elif defined(KOKKOS_ENABLE_OPENMP)
  return "openmp";
#else
  return "serial";
#endif
}

std::string join(const std::vector<std::string>& v, const char* sep) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : sep) + x;
  return s;
}

std::string extract_options_help() {
  std::ostringstream o;
  const extract::ExtractionOptions d;
  o << "  -i, --input FILE        preproc image (HDUs IMAGE, IVAR, MASK[, FIBERMAP])\n"
    << "  -p, --psf FILE          GaussHermite PSF file (specex PSFVER 3)\n"
    << "  -o, --output FILE       output frame file (FILE.gz: gzip-compressed)\n"
    << "  -m, --model FILE        also write the model image\n"
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
    << "      --wavepad-frac X    wavelength padding fraction in [0," << kMaxWavepadFrac
    << "] (default " << d.wavepad_frac << ")\n"
    << "      --pixpad-frac X     pixel padding fraction in [0,1] (default " << d.pixpad_frac
    << ")\n"
    << "      --regularize X      regularisation (default " << d.regularize << ")\n"
    << "      --psferr X          PSF error for chi2pix (default: the PSF's PSFERR, else 0.01)\n"
    << "      --decorrelate-fibers  decorrelate across fibres (full H^1/2; not recommended)\n"
    << "      --allow-image-size-mismatch\n"
    << "                          accept an image that is not the PSF's NPIX_Y x NPIX_X CCD\n"
    << "      --backend NAME      execution space: " << join(available_backends(), ", ")
    << " (default " << default_backend() << ")\n"
    << "      --threads N         host threads, at most " << kMaxThreads
    << " (default: OMP_NUM_THREADS / all cores)\n"
    << "      --memory-budget MB  memory for spots and patch scratch, in MiB (default: half\n"
    << "                          the free GPU memory on CUDA, 512 on CPUs)\n"
    << "  -h, --help              this help\n"
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
  if (!name_.empty() && name_[0] == '-')
    throw UsageError("unknown option " + name_ + " (see --help)");
  throw UsageError("unexpected argument '" + name_ + "' (see --help)");
}

// ---- perfex-extract's options ----------------------------------------------------------------
bool parse_extract_option(ArgReader& r, ExtractArgs& a) {
  auto& o = a.options;
  if (r.is("-h", "--help")) {
    r.no_value();
    a.help = true;
  } else if (r.is("-i", "--input")) {
    a.input = r.nonempty_value("file");
  } else if (r.is("-p", "--psf")) {
    a.psf = r.nonempty_value("file");
  } else if (r.is("-o", "--output")) {
    a.output = r.nonempty_value("file");
  } else if (r.is("-m", "--model")) {
    a.model = r.nonempty_value("file");
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
    o.wavepad_frac = r.double_value(0.0, kMaxWavepadFrac);
  } else if (r.is(nullptr, "--pixpad-frac")) {
    o.pixpad_frac = r.double_value(0.0, 1.0);
  } else if (r.is(nullptr, "--regularize")) {
    o.regularize = r.double_value(0.0, HUGE_VAL);
  } else if (r.is(nullptr, "--psferr")) {
    o.psferr = r.double_value(0.0, HUGE_VAL);
  } else if (r.is(nullptr, "--decorrelate-fibers")) {
    r.no_value();
    o.decorrelation = extract::Decorrelation::noise;
  } else if (r.is(nullptr, "--backend")) {
    const std::string name = r.name(), b = r.value();
    const auto avail = available_backends();
    bool ok = false;
    for (const auto& x : avail) ok = ok || x == b;
    if (!ok)
      throw UsageError("option " + name + ": '" + b + "' is not one of " + join(avail, ", "));
    a.backend = b;
  } else if (r.is(nullptr, "--threads")) {
    const std::string name = r.name();
    a.threads = r.int_value(1);
    if (a.threads > kMaxThreads)
      throw UsageError("option " + name + ": at most " + std::to_string(kMaxThreads) +
                       " (Kokkos' OpenMP thread pool), got " + std::to_string(a.threads));
  } else if (r.is(nullptr, "--memory-budget")) {
    o.memory_budget = static_cast<std::int64_t>(r.int_value(1)) << 20;
  } else if (r.is(nullptr, "--allow-image-size-mismatch")) {
    r.no_value();
    a.allow_image_size_mismatch = true;
  } else {
    return false;
  }
  return true;
}

void finish_extract_args(ExtractArgs& a, bool require_files) {
  a.options.model_image = !a.model.empty();
  if (a.backend.empty()) a.backend = default_backend();
  if (require_files && !a.help) {
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

// ---- Kokkos, progress, extraction ------------------------------------------------------------
int host_threads(int requested, std::string& warning) {
  warning.clear();
  if (requested > 0) return requested;
#ifdef KOKKOS_ENABLE_OPENMP
  const int omp = omp_get_max_threads();
  if (omp > kMaxThreads) {
    const char* env = std::getenv("OMP_NUM_THREADS");
    warning =
        std::string(env ? "OMP_NUM_THREADS=" + std::string(env) : std::to_string(omp) + " cores") +
        " exceeds the " + std::to_string(kMaxThreads) +
        " threads Kokkos' OpenMP backend can hold: using " + std::to_string(kMaxThreads);
    return kMaxThreads;
  }
#endif
  return 0;
}

KokkosSession::KokkosSession(int threads) {
  if (Kokkos::is_initialized()) return;
  // Unset OMP_PROC_BIND means "false" for OpenMP; saying so silences Kokkos' start-up warning.
  setenv("OMP_PROC_BIND", "false", /*overwrite=*/0);
  initialize_kokkos(threads);
  owner_ = true;
}

KokkosSession::~KokkosSession() {
  if (owner_) Kokkos::finalize();
}

ProgressBar::ProgressBar(std::ostream& out, bool enabled)
    : out_(out), enabled_(enabled), start_(clock::now()) {}

bool ProgressBar::stderr_is_terminal() { return isatty(fileno(stderr)) != 0; }

void ProgressBar::update(int done, int total) {
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

void ProgressBar::finish() {
  if (enabled_ && drawn_) out_ << "\n" << std::flush;
  drawn_ = false;
}

double available_host_memory() {
  double bytes = std::numeric_limits<double>::infinity();
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  double kb = 0;
  std::string unit;
  while (meminfo >> key >> kb >> unit)
    if (key == "MemAvailable:") bytes = kb * 1024;
  for (int resource : {RLIMIT_AS, RLIMIT_DATA}) {
    struct rlimit lim;
    if (getrlimit(resource, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY)
      bytes = std::min(bytes, static_cast<double>(lim.rlim_cur));
  }
  return bytes;
}

extract::ExtractionOptions resolve_options(const ExtractArgs& args,
                                           const psf::GaussHermitePsfData& psf,
                                           const WarningCallback& warn) {
  auto note = [&](const std::string& w) {
    if (warn) warn(w);
  };
  extract::ExtractionOptions o = args.options;
  o.model_image = !args.model.empty();
  if (!args.wavelength_given) {
    o.wmin = psf.wavemin;
    o.wmax = psf.wavemax;
    o.dw = 0.8;
  }
  const std::string fibre_options =
      args.nspec_given ? "options -s/--specmin, -n/--nspec: " : "option -s/--specmin: ";
  if (!args.nspec_given && o.specmin < psf.nfib && o.specmin + o.nspec > psf.nfib) {
    note("the PSF has " + std::to_string(psf.nfib) + " fibres: extracting " +
         std::to_string(psf.nfib - o.specmin) + " (fibres " + std::to_string(o.specmin) + "-" +
         std::to_string(psf.nfib - 1) + ") instead of the default " + std::to_string(o.nspec));
    o.nspec = psf.nfib - o.specmin;
  }
  try {
    extract::check_fibres(o, psf);
  } catch (const Error& e) {
    throw UsageError(fibre_options + e.what());
  }
  const std::string grid_option =
      args.wavelength_given ? "option -w/--wavelength: " : "the PSF's default grid: ";
  try {
    const std::string outside = extract::check_wavelength_grid(o, psf);
    if (!outside.empty()) note(outside);
  } catch (const Error& e) {
    throw UsageError(grid_option + e.what());
  }
  for (const std::string& w : extract::fit_patches_to_grid(o))
    note("option --nwavestep / --wavepad-frac: " + w);
  try {
    extract::check_psf_over_grid(o, psf);
  } catch (const Error& e) {
    throw UsageError(grid_option + "beyond the PSF's domain: " + e.what());
  }
  return o;
}

void check_outputs(const ExtractArgs& args) {
  struct Named {
    std::string option, path;
  };
  std::vector<Named> outputs{{"-o/--output", args.output}};
  if (!args.model.empty()) outputs.push_back({"-m/--model", args.model});
  const std::vector<Named> inputs{{"-i/--input", args.input}, {"-p/--psf", args.psf}};
  for (const Named& out : outputs) {
    try {
      io::check_output_path(out.path, "option " + out.option);
    } catch (const Error& e) {
      throw UsageError(e.what());
    }
    const io::FileIdentity id = io::file_identity(out.path);
    for (const Named& other : inputs)
      if (io::same_file(id, io::file_identity(other.path)))
        throw UsageError("option " + out.option + ": " + out.path + " is the " + other.option +
                         " file " + other.path + "; perfex never writes over its inputs");
    if (&out != &outputs.front() && io::same_file(id, io::file_identity(outputs.front().path)))
      throw UsageError("option " + out.option + ": " + out.path + " is also the " +
                       outputs.front().option + " file");
  }
}

RunResult run_extract_files(const ExtractArgs& args, const ProgressCallback& progress,
                            const WarningCallback& warn) {
  std::vector<std::string> notes;  // this run's warnings, for the frame header
  const WarningCallback note = [&](const std::string& w) {
    notes.push_back(w);
    if (warn) warn(w);
  };
  check_outputs(args);
  const psf::GaussHermitePsfData psf =
      while_doing("reading the PSF " + args.psf, [&] { return io::read_psf(args.psf); });
  const extract::ExtractionOptions options = resolve_options(args, psf, note);
  const extract::PixelBox ccd = while_doing("reading the image " + args.input,
                                            [&] { return io::preproc_extent(args.input); });
  try {
    extract::check_image_size(psf, ccd.row1, ccd.col1);
  } catch (const Error& e) {
    const std::string what = "image " + args.input + ": " + e.what();
    if (!args.allow_image_size_mismatch)
      throw Error(what + "; --allow-image-size-mismatch extracts it anyway");
    note(what);
  }

  // Memory: refuse what cannot fit rather than being killed half-way.
  const extract::RunSize size = extract::estimate_run_size(options, psf, ccd.row1, ccd.col1);
  const double available = available_host_memory();
  if (size.host_bytes() > available)
    throw UsageError("the run needs " + extract::describe(size, false) + "; " +
                     extract::human_bytes(available) + " are available");
#ifdef KOKKOS_ENABLE_CUDA
  if (args.backend == "cuda") {
    std::size_t free = 0, total = 0;
    if (cudaMemGetInfo(&free, &total) == cudaSuccess && size.device_bytes() > free)
      throw UsageError("the run needs " + extract::describe(size, true) + "; " +
                       extract::human_bytes(static_cast<double>(free)) + " are free on the GPU");
  }
#endif

  RunResult r;
  r.backend = args.backend;
  if (progress) progress(0, 0);
  r.frame = while_doing("extracting " + extract::describe(size, args.backend == "cuda"), [&] {
    return with_backend(args.backend, [&](const auto& exec) {
      using Exec = std::decay_t<decltype(exec)>;
      r.threads = perfex::concurrency(exec);
      // Plan from the PSF first, then read only the image rows and columns the patches touch,
      // converted once; on host backends the extraction uses those arrays in place.
      const auto t0 = std::chrono::steady_clock::now();
      const auto device_psf = extract::upload_psf(exec, psf);
      const auto plan = extract::plan_frame(exec, device_psf, ccd.row1, ccd.col1, options);
      const auto t1 = std::chrono::steady_clock::now();
      const io::PreprocImage image = while_doing("reading the image " + args.input, [&] {
        return io::read_preproc(args.input, 0x2FF, plan.pixel_box());
      });
      for (const std::string& w : image.warnings) note(w);
      const auto t2 = std::chrono::steady_clock::now();
      auto device_image = [&] {
        if constexpr (Kokkos::SpaceAccessibility<Exec, Kokkos::HostSpace>::accessible) {
          auto in_place = extract::wrap_host_image(image.ccd.pixels.data(), image.ccd.ivar.data(),
                                                   image.ccd.nrows, image.ccd.ncols);
          in_place.region = image.ccd.region;
          return in_place;
        } else {
          return extract::upload_image(exec, image.ccd);
        }
      }();
      extract::Frame frame = extract::extract_frame(exec, plan, device_psf, device_image, progress);
      r.seconds =
          std::chrono::duration<double>(t1 - t0 + (std::chrono::steady_clock::now() - t2)).count();
      return frame;
    });
  });
  io::FrameProvenance prov{args.input, args.psf};
  prov.notes = notes;
  while_doing("writing the frame " + args.output, [&] {
    for (const std::string& w : io::write_frame(args.output, r.frame, prov)) {
      if (warn) warn(w);
    }
  });
  if (!args.model.empty())
    while_doing("writing the model " + args.model,
                [&] { io::write_model(args.model, r.frame, prov); });
  return r;
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

RunResult run_extract_files_reporting(const std::string& tool, const ExtractArgs& args) {
  ProgressBar bar(std::cerr, ProgressBar::stderr_is_terminal());
  RunResult r;
  try {
    r = run_extract_files(args, bar.callback(), [&](const std::string& w) {
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
  } catch (const UsageError& e) {
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
    io::remove_temp_files_on_signals();
    std::string threads_warning;
    KokkosSession kokkos(host_threads(args.threads, threads_warning));
    if (!threads_warning.empty()) std::cerr << tool << ": warning: " << threads_warning << "\n";
    const RunResult r = run_extract_files_reporting(tool, args);
    std::cout << summary_line(tool, r) << std::endl;
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
