// perfex._perfex: the Python extension around the header-only library. numpy arrays in
// (used in place when they are C-contiguous native float64) and out (the C++ result's vectors
// are moved into capsule-owned heap objects: no copy), the GIL released while extracting, the
// Kokkos runtime started and stopped by the Python layer (perfex/_runtime.py) and driven from
// one thread of its own, whichever Python thread calls.
#include <perfex/config.hpp>
#include <perfex/error.hpp>
#include <perfex/extract/extract_frame.hpp>
#include <perfex/extract/frame.hpp>
#include <perfex/extract/image.hpp>
#include <perfex/extract/options.hpp>
#include <perfex/extract/plan.hpp>
#include <perfex/io/frame_fits.hpp>
#include <perfex/io/image_fits.hpp>
#include <perfex/io/psf_fits.hpp>
#include <perfex/psf/psf_data.hpp>

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <Kokkos_Core.hpp>

#include <array>
#include <atomic>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <cstdint>
#include <ctime>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace py = pybind11;
using perfex::Error;
using perfex::extract::ExtractionOptions;
using perfex::psf::GaussHermitePsfData;

namespace {

// ---- runtime ---------------------------------------------------------------------------------

// Every Kokkos call of the process runs on this one thread: Kokkos 3.4's OpenMP backend works
// only on the thread that initialized it (its instance is thread-local), and a backend runs
// one parallel region at a time anyway. Callers wait without the GIL; the work may take the
// GIL back (progress callbacks). While waiting, the main thread still sees Ctrl-C: the work
// stops at its next progress report and KeyboardInterrupt is raised.
class KokkosThread {
 public:
  // Runs f() on the Kokkos thread and returns its result or rethrows its exception.
  template <class F>
  auto run(F&& f) -> decltype(f()) {
    using R = decltype(f());
    std::packaged_task<R()> task(std::forward<F>(f));
    std::future<R> result = task.get_future();
    std::atomic<bool> cancel{false};
    bool from_job = false;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      from_job = thread_.joinable() && thread_.get_id() == std::this_thread::get_id();
      if (!from_job) {
        if (!thread_.joinable()) thread_ = std::thread([this] { loop(); });
        queue_.push_back({[&task] { task(); }, &cancel});
      }
    }
    if (from_job) {  // called by a job (from a progress callback): run in place
      task();
      return result.get();
    }
    ready_.notify_one();
    bool interrupted = false;
    {
      py::gil_scoped_release nogil;
      while (result.wait_for(std::chrono::milliseconds(100)) != std::future_status::ready) {
        py::gil_scoped_acquire gil;
        if (!interrupted && PyErr_CheckSignals() != 0) interrupted = cancel = true;
      }
    }
    if (interrupted) throw py::error_already_set();  // the pending KeyboardInterrupt
    return result.get();
  }

  // Called by a job between its steps: stops it once its caller saw Ctrl-C.
  void check_cancel() const {
    if (current_cancel_ && *current_cancel_) throw Error("perfex: interrupted");
  }

  void stop() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!thread_.joinable()) return;
      stopping_ = true;
    }
    ready_.notify_one();
    py::gil_scoped_release nogil;
    thread_.join();
  }

 private:
  struct Job {
    std::function<void()> run;  // a packaged task: never throws
    const std::atomic<bool>* cancel;
  };

  void loop() {
    for (;;) {
      Job job;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        ready_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
        if (queue_.empty()) return;
        job = std::move(queue_.front());
        queue_.pop_front();
      }
      current_cancel_ = job.cancel;  // read only on this thread
      job.run();
      current_cancel_ = nullptr;
    }
  }

  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<Job> queue_;
  std::thread thread_;
  bool stopping_ = false;
  const std::atomic<bool>* current_cancel_ = nullptr;
};

// Never destroyed: a joinable std::thread must not meet a static destructor at exit.
KokkosThread& kokkos_thread() {
  static KokkosThread* t = new KokkosThread();
  return *t;
}

bool runtime_finalized = false;

void require_runtime() {
  if (!Kokkos::is_initialized())
    throw Error(runtime_finalized ? "perfex: the runtime was finalized (interpreter exit)"
                                  : "perfex: the runtime is not initialized (perfex.initialize)");
}

std::vector<std::string> backend_names() {
  std::vector<std::string> names;
#ifdef KOKKOS_ENABLE_CUDA
  names.push_back("cuda");
#endif
#ifdef KOKKOS_ENABLE_OPENMP
  names.push_back("openmp");
#endif
#ifdef KOKKOS_ENABLE_SERIAL
  names.push_back("serial");
#endif
  return names;
}

// Calls f(exec) with a default instance of the named execution space.
template <class F>
decltype(auto) on_backend(const std::string& name, F&& f) {
#ifdef KOKKOS_ENABLE_CUDA
  if (name == "cuda") return f(Kokkos::Cuda());
#endif
#ifdef KOKKOS_ENABLE_OPENMP
  if (name == "openmp") return f(Kokkos::OpenMP());
#endif
#ifdef KOKKOS_ENABLE_SERIAL
  if (name == "serial") return f(Kokkos::Serial());
#endif
  std::string known;
  for (const auto& b : backend_names()) known += (known.empty() ? "" : ", ") + b;
  throw Error("backend '" + name + "' is not one of this build's: " + known);
}

// ---- numpy <-> std::vector -------------------------------------------------------------------

// The vector's buffer becomes the array's memory: the vector moves into a heap object that a
// capsule owns, so the array frees it when numpy is done with it.
template <class T>
py::array_t<T> to_numpy(std::vector<T>&& values, std::vector<py::ssize_t> shape) {
  auto* owner = new std::vector<T>(std::move(values));
  py::capsule capsule(owner, [](void* p) { delete static_cast<std::vector<T>*>(p); });
  return py::array_t<T>(std::move(shape), owner->data(), capsule);
}

template <class T>
std::vector<T> to_vector(const py::handle& obj, const char* what, std::size_t expected) {
  const auto a = py::array_t<T, py::array::c_style | py::array::forcecast>::ensure(obj);
  if (!a) throw Error(std::string("frame: '") + what + "' is not a numeric array");
  if (static_cast<std::size_t>(a.size()) != expected)
    throw Error(std::string("frame: '") + what + "' has " + std::to_string(a.size()) +
                " values, expected " + std::to_string(expected));
  return std::vector<T>(a.data(), a.data() + a.size());
}

// ---- options ---------------------------------------------------------------------------------

// Every numeric field of ExtractionOptions by its C++ name (decorrelation is a string in
// Python: "signal" or "noise").
template <class F>
void for_each_option(F&& f) {
  f("wmin", &ExtractionOptions::wmin);
  f("wmax", &ExtractionOptions::wmax);
  f("dw", &ExtractionOptions::dw);
  f("specmin", &ExtractionOptions::specmin);
  f("nspec", &ExtractionOptions::nspec);
  f("bundlesize", &ExtractionOptions::bundlesize);
  f("nsubbundles", &ExtractionOptions::nsubbundles);
  f("nwavestep", &ExtractionOptions::nwavestep);
  f("wavepad0", &ExtractionOptions::wavepad0);
  f("wavepad_frac", &ExtractionOptions::wavepad_frac);
  f("pixpad_frac", &ExtractionOptions::pixpad_frac);
  f("regularize", &ExtractionOptions::regularize);
  f("psferr", &ExtractionOptions::psferr);
  f("eigen_clip", &ExtractionOptions::eigen_clip);
  f("model_image", &ExtractionOptions::model_image);
  f("batch_patches", &ExtractionOptions::batch_patches);
}

std::string decorrelation_name(perfex::extract::Decorrelation d) {
  return d == perfex::extract::Decorrelation::noise ? "noise" : "signal";
}

perfex::extract::Decorrelation parse_decorrelation(const std::string& name) {
  if (name == "signal") return perfex::extract::Decorrelation::signal;
  if (name == "noise") return perfex::extract::Decorrelation::noise;
  throw Error("extraction option decorrelation must be 'signal' or 'noise', got '" + name + "'");
}

py::dict options_to_dict(const ExtractionOptions& o) {
  py::dict d;
  for_each_option([&](const char* name, auto member) { d[name] = o.*member; });
  d["decorrelation"] = decorrelation_name(o.decorrelation);
  return d;
}

// Unknown keys are an error naming them (a typo must not silently keep a default).
ExtractionOptions options_from_dict(const py::dict& d) {
  ExtractionOptions o;
  std::set<std::string> known{"decorrelation"};
  for_each_option([&](const char* name, auto member) {
    known.insert(name);
    if (!d.contains(name)) return;
    using T = std::remove_reference_t<decltype(o.*member)>;
    try {
      o.*member = d[name].template cast<T>();
    } catch (const py::cast_error&) {
      throw Error(std::string("extraction option ") + name + ": cannot convert '" +
                  py::str(d[name]).cast<std::string>() + "'");
    }
  });
  if (d.contains("decorrelation"))
    o.decorrelation = parse_decorrelation(py::str(d["decorrelation"]).cast<std::string>());
  for (const auto& item : d) {
    const std::string key = py::str(item.first);
    if (!known.count(key)) throw Error("unknown extraction option '" + key + "'");
  }
  return o;
}

// ---- frames ----------------------------------------------------------------------------------

py::dict frame_to_dict(perfex::extract::Frame&& fr) {
  const py::ssize_t nspec = fr.nspec, nwave = fr.nwave, nband = 2 * fr.ndiag + 1;
  py::dict d;
  d["specmin"] = fr.specmin;
  d["flux"] = to_numpy(std::move(fr.flux), {nspec, nwave});
  d["ivar"] = to_numpy(std::move(fr.ivar), {nspec, nwave});
  d["mask"] = to_numpy(std::move(fr.mask), {nspec, nwave});
  d["wave"] = to_numpy(std::move(fr.wave), {nwave});
  d["resolution"] = to_numpy(std::move(fr.resolution), {nspec, nband, nwave});
  d["chi2pix"] = to_numpy(std::move(fr.chi2pix), {nspec, nwave});
  d["pixmask_fraction"] = to_numpy(std::move(fr.pixmask_fraction), {nspec, nwave});
  if (fr.model.empty())
    d["model"] = py::none();
  else
    d["model"] = to_numpy(std::move(fr.model), {fr.model_rows, fr.model_cols});
  d["options"] = options_to_dict(fr.options);
  d["npatches"] = fr.npatches;
  d["failed_patches"] = fr.failed_patches;
  py::list failed_bins;
  for (const auto& b : fr.failed_bins)
    failed_bins.append(py::make_tuple(b.fibre0, b.nfibres, b.wave0, b.nwaves));
  d["failed_bins"] = failed_bins;
  d["nonfinite_pixels"] = fr.nonfinite_pixels;
  d["seconds"] = fr.seconds;
  d["linalg_flops"] = fr.linalg_flops;
  d["max_band"] = fr.max_band;
  d["warnings"] = fr.warnings;
  return d;
}

// (fibre0, nfibres, wave0, nwaves) blocks, frame-relative.
std::vector<perfex::extract::BinBlock> failed_bins_from_object(const py::object& blocks) {
  std::vector<perfex::extract::BinBlock> out;
  for (const py::handle b : blocks) {
    const auto t = b.cast<std::array<int, 4>>();
    out.push_back({t[0], t[1], t[2], t[3]});
  }
  return out;
}

// A C++ Frame from the Python Frame's fields (for writing; the arrays are copied once).
perfex::extract::Frame frame_from_object(const py::object& f) {
  perfex::extract::Frame fr;
  const auto flux = py::array::ensure(f.attr("flux"));
  const auto res = py::array::ensure(f.attr("resolution"));
  if (!flux || flux.ndim() != 2) throw Error("frame: 'flux' must be a 2-D [nspec][nwave] array");
  if (!res || res.ndim() != 3 || res.shape(1) % 2 != 1)
    throw Error("frame: 'resolution' must be a [nspec][2*ndiag+1][nwave] array");
  fr.nspec = static_cast<int>(flux.shape(0));
  fr.nwave = static_cast<int>(flux.shape(1));
  fr.ndiag = static_cast<int>((res.shape(1) - 1) / 2);
  fr.specmin = f.attr("specmin").cast<int>();
  const std::size_t n = static_cast<std::size_t>(fr.nspec) * fr.nwave;
  fr.flux = to_vector<double>(flux, "flux", n);
  fr.ivar = to_vector<double>(f.attr("ivar"), "ivar", n);
  fr.mask = to_vector<std::uint32_t>(f.attr("mask"), "mask", n);
  fr.wave = to_vector<double>(f.attr("wave"), "wave", static_cast<std::size_t>(fr.nwave));
  fr.resolution = to_vector<double>(res, "resolution", n * (2 * fr.ndiag + 1));
  fr.chi2pix = to_vector<double>(f.attr("chi2pix"), "chi2pix", n);
  fr.pixmask_fraction = to_vector<double>(f.attr("pixmask_fraction"), "pixmask_fraction", n);
  const py::object model = f.attr("model");
  if (!model.is_none()) {
    const auto m = py::array::ensure(model);
    if (!m || m.ndim() != 2) throw Error("frame: 'model' must be a 2-D image");
    fr.model_rows = static_cast<int>(m.shape(0));
    fr.model_cols = static_cast<int>(m.shape(1));
    fr.model = to_vector<double>(m, "model", static_cast<std::size_t>(m.size()));
  }
  fr.options = options_from_dict(f.attr("options").cast<py::dict>());
  fr.npatches = f.attr("npatches").cast<int>();
  fr.failed_patches = f.attr("failed_patches").cast<int>();
  fr.failed_bins = failed_bins_from_object(f.attr("failed_bins"));
  fr.nonfinite_pixels = f.attr("nonfinite_pixels").cast<long long>();
  fr.seconds = f.attr("seconds").cast<double>();
  fr.linalg_flops = f.attr("linalg_flops").cast<double>();
  fr.max_band = f.attr("max_band").cast<int>();
  fr.warnings = f.attr("warnings").cast<std::vector<std::string>>();
  return fr;
}

// desispec's spectrum mask of a whole frame (the medians span every fibre: after an MPI
// gather, rank 0 recomputes it on the assembled frame): SOMEBADPIX, ALLBADPIX, BAD2DFIT,
// NODATA where ivar is 0, BAD2DFIT | NODATA on the failed patches' bins.
py::array_t<std::uint32_t> frame_mask(const py::array& chi2pix, const py::array& pixmask_fraction,
                                      const py::array& ivar, const py::object& failed_bins) {
  if (chi2pix.ndim() != 2) throw Error("frame mask: chi2pix must be a 2-D [nspec][nwave] array");
  perfex::extract::Frame fr;
  fr.nspec = static_cast<int>(chi2pix.shape(0));
  fr.nwave = static_cast<int>(chi2pix.shape(1));
  const std::size_t n = static_cast<std::size_t>(fr.nspec) * fr.nwave;
  fr.chi2pix = to_vector<double>(chi2pix, "chi2pix", n);
  fr.pixmask_fraction = to_vector<double>(pixmask_fraction, "pixmask_fraction", n);
  fr.ivar = to_vector<double>(ivar, "ivar", n);
  fr.failed_bins = failed_bins_from_object(failed_bins);
  fr.flux.resize(n);
  {
    py::gil_scoped_release nogil;
    perfex::extract::set_frame_mask(fr);
  }
  return to_numpy(std::move(fr.mask), {fr.nspec, fr.nwave});
}

// ---- images ----------------------------------------------------------------------------------

class HostImage;
std::set<HostImage*> live_images;  // guarded by the GIL

// A CCD image for the extraction: the numpy arrays themselves when they are clean
// (perfex::extract::wrap_host_image), else a sanitised copy (NaN/Inf masked and counted; a
// negative ivar is an error). Uploaded once to a device backend on first use there. Every
// Kokkos allocation it holds is released before Kokkos is finalized.
class HostImage {
 public:
  using Array = py::array_t<double, py::array::c_style>;
  HostImage(const Array& pixels, const Array& ivar) : pixels_(pixels), ivar_(ivar) {
    require_runtime();
    if (pixels.ndim() != 2 || ivar.ndim() != 2 || pixels.shape(0) != ivar.shape(0) ||
        pixels.shape(1) != ivar.shape(1))
      throw Error("image: pixels and ivar must be 2-D arrays of one shape, got " +
                  shape_text(pixels) + " and " + shape_text(ivar));
    if (pixels.shape(0) > INT_MAX || pixels.shape(1) > INT_MAX)
      throw Error("image: " + shape_text(pixels) + " is too large");
    const double* p = pixels.data();
    const double* w = ivar.data();
    const int nrows = static_cast<int>(pixels.shape(0)), ncols = static_cast<int>(pixels.shape(1));
    host_ =
        kokkos_thread().run([&] { return perfex::extract::wrap_host_image(p, w, nrows, ncols); });
    live_images.insert(this);
  }
  ~HostImage() { live_images.erase(this); }
  HostImage(const HostImage&) = delete;
  HostImage& operator=(const HostImage&) = delete;

  void release() {
    host_ = {};
#ifdef KOKKOS_ENABLE_CUDA
    cuda_.reset();
#endif
    released_ = true;
  }

  const perfex::extract::DeviceImage<Kokkos::HostSpace>& on(const Kokkos::HostSpace&) {
    check();
    return host_;
  }
#ifdef KOKKOS_ENABLE_CUDA
  const perfex::extract::DeviceImage<Kokkos::CudaSpace>& on(const Kokkos::CudaSpace&) {
    check();
    if (!cuda_) {
      perfex::extract::DeviceImage<Kokkos::CudaSpace> d;
      Kokkos::View<double**, Kokkos::LayoutRight, Kokkos::CudaSpace> p(
          perfex::uninitialized("perfex::image"), host_.nrows(), host_.ncols());
      Kokkos::View<double**, Kokkos::LayoutRight, Kokkos::CudaSpace> w(
          perfex::uninitialized("perfex::ivar"), host_.nrows(), host_.ncols());
      Kokkos::deep_copy(p, host_.pixels);
      Kokkos::deep_copy(w, host_.ivar);
      d.pixels = p;
      d.ivar = w;
      d.nonfinite_pixels = host_.nonfinite_pixels;
      cuda_ = d;
    }
    return *cuda_;
  }
#endif

  int nrows() const { return static_cast<int>(pixels_.shape(0)); }
  int ncols() const { return static_cast<int>(pixels_.shape(1)); }
  long long nonfinite_pixels() const { return host_.nonfinite_pixels; }
  // Addresses the extraction reads (equal to the numpy buffers' when used in place).
  std::uintptr_t pixels_address() const {
    return reinterpret_cast<std::uintptr_t>(host_.pixels.data());
  }
  std::uintptr_t ivar_address() const {
    return reinterpret_cast<std::uintptr_t>(host_.ivar.data());
  }
  bool in_place() const {
    return host_.pixels.data() == pixels_.data() && host_.ivar.data() == ivar_.data();
  }
  py::array pixels() const { return pixels_; }
  py::array ivar() const { return ivar_; }

 private:
  static std::string shape_text(const py::array& a) {
    std::string s = "(";
    for (py::ssize_t i = 0; i < a.ndim(); ++i) s += (i ? ", " : "") + std::to_string(a.shape(i));
    return s + (a.ndim() == 1 ? ",)" : ")");
  }
  void check() const {
    if (released_) throw Error("image: released when the perfex runtime was finalized");
  }
  Array pixels_, ivar_;  // keep the numpy buffers alive while the views point into them
  perfex::extract::DeviceImage<Kokkos::HostSpace> host_;
#ifdef KOKKOS_ENABLE_CUDA
  std::optional<perfex::extract::DeviceImage<Kokkos::CudaSpace>> cuda_;
#endif
  bool released_ = false;
};

// ---- extraction ------------------------------------------------------------------------------

// progress: a Python callable(done, total) or None. A Python exception raised by it ends the
// extraction and propagates to the caller.
py::dict extract_frame(HostImage& image, const GaussHermitePsfData& psf,
                       const ExtractionOptions& options, const std::string& backend,
                       const py::object& progress) {
  require_runtime();
  const perfex::extract::ProgressCallback callback = [&progress](int done, int total) {
    kokkos_thread().check_cancel();
    if (progress.is_none()) return;
    py::gil_scoped_acquire gil;
    progress(done, total);
  };
  perfex::extract::Frame frame = kokkos_thread().run([&] {
    return on_backend(backend, [&](const auto& exec) {
      using Mem = typename std::decay_t<decltype(exec)>::memory_space;
      return perfex::extract::extract_frame(exec, psf, image.on(Mem()), options, callback);
    });
  });
  return frame_to_dict(std::move(frame));
}

// (wall, CPU) seconds of the C++ call alone, its result dropped: the baseline the benchmark
// measures the Python call's overhead against. host_copy: the C++ entry for host arrays instead
// (extract_frame of a CcdImage holding a copy of the image, which it checks and uploads).
std::pair<double, double> time_extract_frame(HostImage& image, const GaussHermitePsfData& psf,
                                             const ExtractionOptions& options,
                                             const std::string& backend, bool host_copy) {
  require_runtime();
  return kokkos_thread().run([&] {
    const auto& host = image.on(Kokkos::HostSpace());
    perfex::extract::CcdImage ccd;
    if (host_copy) {
      const std::size_t n = host.pixels.size();
      ccd.nrows = host.nrows();
      ccd.ncols = host.ncols();
      ccd.pixels.assign(host.pixels.data(), host.pixels.data() + n);
      ccd.ivar.assign(host.ivar.data(), host.ivar.data() + n);
    }
    const auto start = std::chrono::steady_clock::now();
    const std::clock_t cpu_start = std::clock();  // the process's CPU time, every thread
    on_backend(backend, [&](const auto& exec) {
      using Mem = typename std::decay_t<decltype(exec)>::memory_space;
      if (host_copy)
        perfex::extract::extract_frame(exec, psf, ccd, options);
      else
        perfex::extract::extract_frame(exec, psf, image.on(Mem()), options);
    });
    return std::make_pair(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(),
        static_cast<double>(std::clock() - cpu_start) / CLOCKS_PER_SEC);
  });
}

// The C++ path end to end, no numpy: read_psf + read_preproc + extract_frame of the host
// CcdImage (uploaded inside). The reference the tests and benchmarks hold the Python API to.
py::dict extract_files(const std::string& image_path, const std::string& psf_path,
                       const ExtractionOptions& options, const std::string& backend) {
  require_runtime();
  perfex::extract::Frame frame = kokkos_thread().run([&] {
    const GaussHermitePsfData psf = perfex::io::read_psf(psf_path);
    const perfex::io::PreprocImage image = perfex::io::read_preproc(image_path);
    return on_backend(backend, [&](const auto& exec) {
      return perfex::extract::extract_frame(exec, psf, image.ccd, options);
    });
  });
  return frame_to_dict(std::move(frame));
}

// ---- PSF -------------------------------------------------------------------------------------

py::array_t<double> trace_array(const perfex::psf::LegendreTraceSet& t, int nfib) {
  return to_numpy(std::vector<double>(t.coeff), {nfib, t.ncoeff});
}

perfex::psf::LegendreTraceSet trace_from(const py::handle& coeff, double wavemin, double wavemax,
                                         const char* what) {
  const auto a = py::array_t<double, py::array::c_style | py::array::forcecast>::ensure(coeff);
  if (!a || a.ndim() != 2)
    throw Error(std::string("PSF: ") + what + " must be a 2-D [nfib][ncoeff] array");
  perfex::psf::LegendreTraceSet t;
  t.wavemin = wavemin;
  t.wavemax = wavemax;
  t.ncoeff = static_cast<int>(a.shape(1));
  t.coeff.assign(a.data(), a.data() + a.size());
  return t;
}

// Every field, for pickling (MPI broadcasts) and for PSFs built from arrays.
py::dict psf_to_dict(const GaussHermitePsfData& d) {
  py::dict s;
  s["source"] = d.source;
  s["fibermin"] = d.fibermin;
  s["hsizex"] = d.hsizex;
  s["hsizey"] = d.hsizey;
  s["ghdegx"] = d.ghdegx;
  s["ghdegy"] = d.ghdegy;
  s["legdeg"] = d.legdeg;
  s["npix_x"] = d.npix_x;
  s["npix_y"] = d.npix_y;
  s["psferr"] = d.psferr;
  s["wavemin"] = d.wavemin;
  s["wavemax"] = d.wavemax;
  s["xtrace"] = trace_array(d.xtrace, d.nfib);
  s["xtrace_wavemin"] = d.xtrace.wavemin;
  s["xtrace_wavemax"] = d.xtrace.wavemax;
  s["ytrace"] = trace_array(d.ytrace, d.nfib);
  s["ytrace_wavemin"] = d.ytrace.wavemin;
  s["ytrace_wavemax"] = d.ytrace.wavemax;
  s["param_names"] = d.param_names;
  s["coeff"] = to_numpy(std::vector<double>(d.coeff),
                        {d.nparam(), d.nfib, static_cast<py::ssize_t>(d.ncoeff())});
  return s;
}

std::shared_ptr<GaussHermitePsfData> psf_from_dict(const py::dict& s) {
  auto d = std::make_shared<GaussHermitePsfData>();
  auto get = [&](const char* key) -> py::object {
    if (!s.contains(key)) throw Error(std::string("PSF: missing '") + key + "'");
    return s[key];
  };
  try {
    d->source = get("source").cast<std::string>();
    d->fibermin = get("fibermin").cast<int>();
    d->hsizex = get("hsizex").cast<int>();
    d->hsizey = get("hsizey").cast<int>();
    d->ghdegx = get("ghdegx").cast<int>();
    d->ghdegy = get("ghdegy").cast<int>();
    d->legdeg = get("legdeg").cast<int>();
    d->npix_x = get("npix_x").cast<int>();
    d->npix_y = get("npix_y").cast<int>();
    d->psferr = get("psferr").cast<double>();
    d->wavemin = get("wavemin").cast<double>();
    d->wavemax = get("wavemax").cast<double>();
    d->xtrace = trace_from(get("xtrace"), get("xtrace_wavemin").cast<double>(),
                           get("xtrace_wavemax").cast<double>(), "xtrace");
    d->ytrace = trace_from(get("ytrace"), get("ytrace_wavemin").cast<double>(),
                           get("ytrace_wavemax").cast<double>(), "ytrace");
    d->param_names = get("param_names").cast<std::vector<std::string>>();
  } catch (const py::cast_error& e) {
    throw Error(std::string("PSF: a field has the wrong type (") + e.what() + ")");
  }
  const auto coeff =
      py::array_t<double, py::array::c_style | py::array::forcecast>::ensure(get("coeff"));
  if (!coeff || coeff.ndim() != 3)
    throw Error("PSF: coeff must be a 3-D [nparam][nfib][legdeg+1] array");
  d->nfib = static_cast<int>(d->xtrace.ncoeff > 0 ? d->xtrace.coeff.size() / d->xtrace.ncoeff : 0);
  if (coeff.shape(1) != d->nfib)
    throw Error("PSF: coeff has " + std::to_string(coeff.shape(1)) + " fibres, xtrace " +
                std::to_string(d->nfib));
  d->coeff.assign(coeff.data(), coeff.data() + coeff.size());
  d->validate();
  return d;
}

}  // namespace

PYBIND11_MODULE(_perfex, m) {
  m.doc() = "perfex C++ core (use the perfex package, not this module)";
  m.attr("__version__") = PERFEX_VERSION_STRING;
  py::register_exception<Error>(m, "Error", PyExc_RuntimeError);

  // Runtime.
  m.def(
      "initialize",
      [](int threads) {
        if (runtime_finalized) throw Error("perfex: the runtime was finalized and cannot restart");
        kokkos_thread().run([threads] {
          if (!Kokkos::is_initialized()) perfex::initialize_kokkos(threads);
        });
      },
      py::arg("threads") = 0, "Starts Kokkos (threads <= 0: its default).");
  m.def("finalize", []() {
    if (Kokkos::is_initialized()) {
      for (HostImage* image : live_images) image->release();
      kokkos_thread().run([] { Kokkos::finalize(); });
      runtime_finalized = true;
    }
    kokkos_thread().stop();
  });
  m.def("is_initialized", []() { return static_cast<bool>(Kokkos::is_initialized()); });
  m.def("backends", &backend_names, "Execution spaces of this build, preferred first.");
  m.def("concurrency", [](const std::string& backend) {
    require_runtime();
    return kokkos_thread().run([&] {
      return on_backend(backend, [](const auto& exec) { return perfex::concurrency(exec); });
    });
  });

  // Options.
  py::class_<ExtractionOptions> options(m, "ExtractionOptions");
  options.def(py::init<>());
  for_each_option([&](const char* name, auto member) { options.def_readwrite(name, member); });
  options.def_property(
      "decorrelation",
      [](const ExtractionOptions& o) { return decorrelation_name(o.decorrelation); },
      [](ExtractionOptions& o, const std::string& v) { o.decorrelation = parse_decorrelation(v); });
  options.def("validate", &ExtractionOptions::validate);
  options.def("wavepad", &ExtractionOptions::wavepad);
  m.def("options_to_dict", &options_to_dict);
  m.def("options_from_dict", &options_from_dict);
  m.def(
      "bundle_ranges",
      [](const ExtractionOptions& o, int nfib) {
        o.validate();
        std::vector<std::pair<int, int>> ranges;
        for (const auto& b : perfex::extract::plan_bundles(o, nfib))
          ranges.emplace_back(b.req_lo, b.req_hi);
        return ranges;
      },
      "The requested fibres of each bundle, [lo, hi), in order (the unit of MPI work).");

  // PSF.
  py::class_<GaussHermitePsfData, std::shared_ptr<GaussHermitePsfData>> psf(m, "Psf");
  psf.def_readonly("source", &GaussHermitePsfData::source)
      .def_readonly("nfib", &GaussHermitePsfData::nfib)
      .def_readonly("fibermin", &GaussHermitePsfData::fibermin)
      .def_readonly("hsizex", &GaussHermitePsfData::hsizex)
      .def_readonly("hsizey", &GaussHermitePsfData::hsizey)
      .def_readonly("npix_x", &GaussHermitePsfData::npix_x)
      .def_readonly("npix_y", &GaussHermitePsfData::npix_y)
      .def_readonly("psferr", &GaussHermitePsfData::psferr)
      .def_readonly("wavemin", &GaussHermitePsfData::wavemin)
      .def_readonly("wavemax", &GaussHermitePsfData::wavemax)
      .def_readonly("param_names", &GaussHermitePsfData::param_names)
      .def("to_dict", &psf_to_dict)
      .def_static("from_dict", &psf_from_dict)
      .def("__repr__",
           [](const GaussHermitePsfData& d) {
             return "<perfex.Psf " + d.label() + ": " + std::to_string(d.nfib) + " fibres, " +
                    std::to_string(d.wavemin) + "-" + std::to_string(d.wavemax) + " A>";
           })
      .def(py::pickle([](const GaussHermitePsfData& d) { return psf_to_dict(d); },
                      [](const py::dict& s) { return psf_from_dict(s); }));
  m.def(
      "read_psf",
      [](const std::string& path) {
        py::gil_scoped_release nogil;
        return std::make_shared<GaussHermitePsfData>(perfex::io::read_psf(path));
      },
      py::arg("path"));

  // Images.
  m.def(
      "read_preproc",
      [](const std::string& path, std::uint32_t mask_bits) {
        perfex::io::PreprocImage img;
        {
          py::gil_scoped_release nogil;
          img = perfex::io::read_preproc(path, mask_bits);
        }
        const py::ssize_t nrows = img.ccd.nrows, ncols = img.ccd.ncols;
        py::dict d;
        d["path"] = img.path;
        d["pixels"] = to_numpy(std::move(img.ccd.pixels), {nrows, ncols});
        d["ivar"] = to_numpy(std::move(img.ccd.ivar), {nrows, ncols});
        d["masked_pixels"] = img.masked_pixels;
        d["nonfinite_pixels"] = img.nonfinite_pixels;
        d["has_fibermap"] = img.has_fibermap;
        return d;
      },
      py::arg("path"), py::arg("mask_bits") = 0x2FF);
  py::class_<HostImage>(m, "HostImage")
      .def(py::init<const HostImage::Array&, const HostImage::Array&>(),
           py::arg("pixels").noconvert(), py::arg("ivar").noconvert())
      .def_property_readonly(
          "shape", [](const HostImage& i) { return py::make_tuple(i.nrows(), i.ncols()); })
      .def_property_readonly("nonfinite_pixels", &HostImage::nonfinite_pixels)
      .def_property_readonly("pixels_address", &HostImage::pixels_address)
      .def_property_readonly("ivar_address", &HostImage::ivar_address)
      .def_property_readonly("in_place", &HostImage::in_place)
      .def_property_readonly("pixels", &HostImage::pixels)
      .def_property_readonly("ivar", &HostImage::ivar);

  // Extraction and frames.
  m.def("extract_frame", &extract_frame, py::arg("image"), py::arg("psf"), py::arg("options"),
        py::arg("backend"), py::arg("progress") = py::none());
  m.def("time_extract_frame", &time_extract_frame, py::arg("image"), py::arg("psf"),
        py::arg("options"), py::arg("backend"), py::arg("host_copy") = false);
  m.def("extract_files", &extract_files, py::arg("image_path"), py::arg("psf_path"),
        py::arg("options"), py::arg("backend"));
  m.def("frame_mask", &frame_mask, py::arg("chi2pix"), py::arg("pixmask_fraction"), py::arg("ivar"),
        py::arg("failed_bins") = py::list());
  // Both return the writer's warnings (e.g. a FIBERMAP shorter than the frame).
  m.def(
      "write_frame",
      [](const std::string& path, const py::object& frame, const std::string& image_path,
         const std::string& psf_path) {
        const perfex::extract::Frame fr = frame_from_object(frame);
        py::gil_scoped_release nogil;
        return perfex::io::write_frame(path, fr, {image_path, psf_path});
      },
      py::arg("path"), py::arg("frame"), py::arg("image_path") = "", py::arg("psf_path") = "");
  m.def(
      "write_model",
      [](const std::string& path, const py::object& frame, const std::string& image_path,
         const std::string& psf_path) {
        const perfex::extract::Frame fr = frame_from_object(frame);
        py::gil_scoped_release nogil;
        perfex::io::write_model(path, fr, {image_path, psf_path});
        return std::vector<std::string>{};
      },
      py::arg("path"), py::arg("frame"), py::arg("image_path") = "", py::arg("psf_path") = "");
  m.def(
      "read_frame",
      [](const std::string& path) {
        perfex::extract::Frame fr;
        {
          py::gil_scoped_release nogil;
          fr = perfex::io::read_frame(path);
        }
        return frame_to_dict(std::move(fr));
      },
      py::arg("path"));
}
