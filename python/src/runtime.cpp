// The Kokkos runtime of the process: one thread runs every Kokkos call; started with a thread
// count perfex::host_threads accepts; a child forked after the start never touches it.
#include <perfex/memory.hpp>
#include <perfex/runtime.hpp>
#include <perfex/version.hpp>

#include <pthread.h>

#include "bindings.hpp"

namespace perfex_py {

namespace {

bool runtime_finalized = false;
// Set in a child forked after the runtime started: its Kokkos thread and OpenMP pool do not
// exist there (fork copies only the calling thread), so every call would wait for them.
std::atomic<bool> forked_child{false};
std::atomic<bool> started{false};

void mark_forked_child() {
  if (started.load()) forked_child = true;
}

}  // namespace

void KokkosThread::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!thread_.joinable()) return;
    stopping_ = true;
  }
  ready_.notify_one();
  py::gil_scoped_release nogil;
  thread_.join();
}

void KokkosThread::loop() {
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

std::set<HoldsKokkos*>& HoldsKokkos::holders() {
  static std::set<HoldsKokkos*>* h = new std::set<HoldsKokkos*>();  // never destroyed, as below
  return *h;
}

void release_kokkos_holders() {
  for (HoldsKokkos* h : HoldsKokkos::holders()) h->release();
}

// Never destroyed: a joinable std::thread must not meet a static destructor at exit.
KokkosThread& kokkos_thread() {
  static KokkosThread* t = new KokkosThread();
  return *t;
}

void require_runtime() {
  if (forked_child)
    throw Error(
        "perfex: this process was forked after the perfex runtime started in its parent, and "
        "the runtime's threads do not exist in a forked child; start perfex in the child only "
        "(multiprocessing: the 'spawn' or 'forkserver' start method)");
  if (!Kokkos::is_initialized())
    throw Error(runtime_finalized ? "perfex: the runtime was finalized (interpreter exit)"
                                  : "perfex: the runtime is not initialized (perfex.initialize)");
}

void start_runtime() {
  py::module_::import("perfex.runtime").attr("initialize")();
  require_runtime();
}

void register_runtime(py::module_& m) {
  pthread_atfork(nullptr, nullptr, mark_forked_child);
  m.def(
      "initialize",
      [](int threads, int device) {
        if (forked_child) require_runtime();
        if (runtime_finalized) throw Error("perfex: the runtime was finalized and cannot restart");
        perfex::HostThreads h = perfex::host_threads(threads, "threads");
        h.device = device;
        kokkos_thread().run([&h] {
          if (!Kokkos::is_initialized()) perfex::initialize_runtime(h);
        });
        started = true;
        return h.warning;
      },
      py::arg("threads") = 0, py::arg("device") = -1,
      "Starts Kokkos with perfex::host_threads' count (threads <= 0: from the environment, "
      "capped at 512; a bad thread variable is a RequestError naming it; device: the GPU, -1 "
      "Kokkos' default); returns the cap's warning or ''.");
  m.def(
      "version_info",
      [] {
        const perfex::VersionInfo v = perfex::version_info();
        py::dict d;
        d["perfex"] = v.perfex;
        d["kokkos"] = v.kokkos;
        d["backends"] = v.backends;
        return d;
      },
      "The versions of this build, as the tools' --version prints them: {'perfex': ..., "
      "'kokkos': '3.4.1', 'backends': [the default first, ...]}.");
  m.def(
      "version_text", [] { return perfex::version_text(); },
      "The tools' --version text: perfex's and Kokkos' versions and the backends, a line each.");
  m.def("cuda_device_count", &perfex::device_count);
  m.def("device_for_rank", &perfex::device_for_rank, py::arg("local_rank"), py::arg("ndevices"),
        py::arg("requested") = -1);
  m.def("ranks_sharing_device", &perfex::ranks_sharing_device, py::arg("device"),
        py::arg("local_size"), py::arg("ndevices"));
  m.def("shared_device_budget", &perfex::shared_device_budget, py::arg("free_bytes"),
        py::arg("sharers"));
  m.def("set_device_sharers", &perfex::set_device_sharers);
  m.def("device_sharers", &perfex::device_sharers);
  m.def("finalize", []() {
    if (forked_child) return;  // nothing of the parent's runtime runs here
    if (Kokkos::is_initialized()) {
      release_kokkos_holders();
      kokkos_thread().run([] { Kokkos::finalize(); });
      runtime_finalized = true;
    }
    kokkos_thread().stop();
  });
  m.def("is_initialized", []() { return static_cast<bool>(Kokkos::is_initialized()); });
  m.def(
      "is_forked_child", []() { return forked_child.load(); },
      "Whether this process was forked after the runtime started (the runtime is unusable).");
  m.def("backends", &perfex::backend_names, "Execution spaces of this build, preferred first.");
  m.def(
      "default_backend", [](bool gpu) { return perfex::default_backend(gpu); },
      py::arg("gpu") = true);
  m.def("check_backend", [](const std::string& name, const std::string& what) {
    perfex::check_backend(name, what);
  });
  m.attr("MAX_HOST_THREADS") = perfex::kMaxHostThreads;
  m.def("concurrency", [](const std::string& backend) {
    require_runtime();
    return kokkos_thread().run([&] {
      return perfex::with_backend(backend,
                                  [](const auto& exec) { return perfex::concurrency(exec); });
    });
  });
}

}  // namespace perfex_py
