#pragma once
// The phases of perfex's drivers. Each driver (io::extract_files, extract::plan_frame,
// extract::extract_frame, ...) is a list of steps; each step runs inside its own Kokkos
// profiling region named "perfex::<driver>::<step>", so any Kokkos Tools library shows them
// (--kokkos-tools-libs / KOKKOS_TOOLS_LIBS, KOKKOS_PROFILE_LIBRARY on Kokkos 3.4: the
// space-time-stack on a CPU, the NVTX connector in Nsight Systems on a GPU). The same steps are
// timed into PhaseTimes, which the drivers return (perfex-extract --timing, the Python API's
// Frame.phases).
#include <perfex/detail/kokkos_compat.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

namespace perfex {

// One phase of a run: its region's name without "perfex::", its depth among the drivers (a
// driver called by another's phase sits one level deeper), and its host time in seconds.
struct PhaseTime {
  std::string name;
  int depth = 0;
  double seconds = 0;
};

// The phases of a run in the order they started; a phase that runs several times (once per spot
// group, say) appears once, with its total. Phases nest by construction: a Phase started while
// others are open on the same PhaseTimes sits one level below them, and so do the phases of a
// driver appended then, so that drivers in both languages (a Python driver around the library's
// job, say) can write into one PhaseTimes without counting depths. A phase that ends while
// phases it holds are still open (a misuse: phases interleaved by two threads, or ended out of
// order) takes only itself off the open ones, so the phases after both sit where they belong.
// Not thread-safe: one thread records at a time.
class Phase;
class PhaseTimes {
 public:
  void add(const std::string& name, int depth, double seconds) {
    for (PhaseTime& p : list_) {
      if (p.name == name && p.depth == depth) {
        p.seconds += seconds;
        return;
      }
    }
    list_.push_back({name, depth, seconds});
  }
  // Another driver's phases, run inside one of ours: `depth` levels below the phases open now.
  void append(const PhaseTimes& inner, int depth) {
    for (const PhaseTime& p : inner.list_) add(p.name, level() + p.depth + depth, p.seconds);
  }
  const std::vector<PhaseTime>& list() const { return list_; }
  bool empty() const { return list_.empty(); }
  // The total of the phase named `name` (0 when it did not run).
  double seconds(const std::string& name) const {
    for (const PhaseTime& p : list_)
      if (p.name == name) return p.seconds;
    return 0;
  }
  // The depth of the next phase: one below the innermost phase open (0 when none is).
  int level() const { return open_.empty() ? 0 : open_.back().second; }

 private:
  friend class Phase;
  std::vector<PhaseTime> list_;
  // The phases open, each with the level inside it.
  std::vector<std::pair<const Phase*, int>> open_;
};

// One phase of a driver: the Kokkos profiling region "perfex::" + name from construction to
// stop(), timed on the host into `times`, `depth` levels below the phases open there. Its entry
// is made when it starts (the phases it holds come after it). stop(exec) fences exec first, so
// that a device's asynchronous work counts in the phase that launched it. The destructor stops a
// phase still running (an exception left it): regions and levels stay balanced.
class Phase {
 public:
  Phase(const std::string& name, PhaseTimes& times, int depth = 0)
      : name_(name),
        times_(&times),
        depth_(times.level() + depth),
        start_(std::chrono::steady_clock::now()) {
    Kokkos::Profiling::pushRegion("perfex::" + name_);
    times.add(name_, depth_, 0.0);
    times.open_.emplace_back(this, depth_ + 1);
  }
  ~Phase() { stop(); }
  Phase(const Phase&) = delete;
  Phase& operator=(const Phase&) = delete;

  template <class ExecSpace>
  void stop(const ExecSpace& exec) {
    if (times_) exec.fence();
    stop();
  }
  void stop() {
    if (!times_) return;
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    Kokkos::Profiling::popRegion();
    times_->add(name_, depth_, s);
    auto& open = times_->open_;
    open.erase(
        std::find_if(open.begin(), open.end(), [this](const auto& o) { return o.first == this; }));
    times_ = nullptr;
  }

 private:
  std::string name_;
  PhaseTimes* times_;
  int depth_;
  std::chrono::steady_clock::time_point start_;
};

// The phases as lines "  name  seconds", indented by depth (perfex-extract --timing, and
// perfex.extract's, one per line after `title`).
inline std::string format_phases(const PhaseTimes& times, const std::string& title) {
  std::string s = title;
  for (const PhaseTime& p : times.list()) {
    char buf[160];
    const std::string name = std::string(2 * static_cast<std::size_t>(p.depth) + 2, ' ') + p.name;
    std::snprintf(buf, sizeof(buf), "\n%-44s %9.3f s", name.c_str(), p.seconds);
    s += buf;
  }
  return s;
}

}  // namespace perfex
