#pragma once
// What the translation units of perfex._perfex share: the Kokkos thread every Kokkos call runs
// on, numpy conversions, and one register_* function per module of the Python package, in a
// file of its name (module.cpp calls them).
#include <perfex/error.hpp>
#include <perfex/extract/frame.hpp>
#include <perfex/extract/options.hpp>
#include <perfex/extract/preflight.hpp>
#include <perfex/profiling.hpp>
#include <perfex/psf/any_psf.hpp>

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace perfex {
namespace io {
struct Dependency;  // io/frame_fits.hpp
}  // namespace io
}  // namespace perfex

namespace perfex_py {

namespace py = pybind11;
using perfex::Error;
using perfex::RequestError;

// ---- runtime (runtime.cpp) --------------------------------------------------------------------

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

  void stop();

 private:
  struct Job {
    std::function<void()> run;  // a packaged task: never throws
    const std::atomic<bool>* cancel;
  };
  void loop();

  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<Job> queue_;
  std::thread thread_;
  bool stopping_ = false;
  const std::atomic<bool>* current_cancel_ = nullptr;
};

KokkosThread& kokkos_thread();

// An object that holds Kokkos allocations (an image, a planned job): registered while it lives,
// so that the runtime drops them all before Kokkos is finalized (release_kokkos_holders).
class HoldsKokkos {
 public:
  HoldsKokkos() { holders().insert(this); }
  virtual ~HoldsKokkos() { holders().erase(this); }
  HoldsKokkos(const HoldsKokkos&) = delete;
  HoldsKokkos& operator=(const HoldsKokkos&) = delete;
  virtual void release() = 0;
  static std::set<HoldsKokkos*>& holders();  // guarded by the GIL
};
void release_kokkos_holders();
// Throws unless the runtime is usable in this process (started, not finalized, not a child
// forked after it started).
void require_runtime();
// Starts the runtime as the API's first call does (perfex.runtime.initialize(): the default
// threads), for entry points usable before any extraction; then require_runtime().
void start_runtime();

// ---- file names --------------------------------------------------------------------------

// Text that may hold file names (messages, warnings) as Python str: decoded as os.fsdecode
// decodes file names, since a name is bytes (the Python layer passes os.fsencode's).
inline py::str fs_text(const std::string& s) {
  return py::reinterpret_steal<py::str>(
      PyUnicode_DecodeFSDefaultAndSize(s.data(), static_cast<py::ssize_t>(s.size())));
}

// ---- numpy <-> std::vector ------------------------------------------------------------------

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

// ---- shared conversions ---------------------------------------------------------------------

// options.cpp
perfex::extract::ExtractionOptions options_from_dict(const py::dict& d);
py::dict options_to_dict(const perfex::extract::ExtractionOptions& o);
// frames.cpp
py::dict frame_to_dict(perfex::extract::Frame&& fr);
perfex::extract::Frame frame_from_object(const py::object& frame);
// The Python package's own DEPNAMnn/DEPVERnn cards in the files it writes (numpy's version),
// after perfex's, Kokkos' and the backend's.
std::vector<perfex::io::Dependency> python_dependencies();
// profiling.cpp: phases as a list of (name, depth, seconds), and back; the recorder a Python
// argument names (a PhaseTimes; None: a new one)
py::list phases_to_list(const perfex::PhaseTimes& times);
perfex::PhaseTimes phases_from_list(const py::handle& list);
std::shared_ptr<perfex::PhaseTimes> recorder(const py::object& times);

// ---- the modules: one file each, as the Python package's -----------------------------------
void register_runtime(py::module_& m);     // perfex.runtime
void register_profiling(py::module_& m);   // perfex.profiling
void register_options(py::module_& m);     // perfex.options
void register_psf(py::module_& m);         // perfex.psf
void register_images(py::module_& m);      // perfex.images
void register_frames(py::module_& m);      // perfex.frames
void register_extraction(py::module_& m);  // perfex.extraction: the job; the testing submodule
void register_files(py::module_& m);       // perfex.files: a frame's files, the job around them

}  // namespace perfex_py
