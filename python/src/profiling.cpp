// perfex.profiling: the library's phase recorder (perfex::PhaseTimes) for the Python drivers,
// which time their own phases into it (each a Kokkos profiling region like the library's) and
// hand it to the library's jobs, whose phases then nest inside theirs; phases as lists of
// (name, depth, seconds).
#include <perfex/profiling.hpp>

#include <memory>

#include "bindings.hpp"

namespace perfex_py {

py::list phases_to_list(const perfex::PhaseTimes& times) {
  py::list out;
  for (const perfex::PhaseTime& p : times.list())
    out.append(py::make_tuple(p.name, p.depth, p.seconds));
  return out;
}

perfex::PhaseTimes phases_from_list(const py::handle& list) {
  perfex::PhaseTimes times;
  if (list.is_none()) return times;
  for (const py::handle item : list) {
    const auto t = item.cast<std::tuple<std::string, int, double>>();
    times.add(std::get<0>(t), std::get<1>(t), std::get<2>(t));
  }
  return times;
}

std::shared_ptr<perfex::PhaseTimes> recorder(const py::object& times) {
  if (times.is_none()) return std::make_shared<perfex::PhaseTimes>();
  if (!py::isinstance<perfex::PhaseTimes>(times))
    throw py::type_error("times: a perfex.PhaseTimes or None, got " +
                         std::string(py::str(py::type::of(times).attr("__name__"))));
  return times.cast<std::shared_ptr<perfex::PhaseTimes>>();
}

namespace {

// A phase of a Python driver, a context manager: perfex::Phase from __enter__ to __exit__, made
// and ended on the Kokkos thread, so that its region is pushed and popped in turn with the
// kernels.
class PythonPhase {
 public:
  PythonPhase(std::shared_ptr<perfex::PhaseTimes> times, std::string name)
      : times_(std::move(times)), name_(std::move(name)) {}
  void enter() {
    if (phase_) throw Error("phase " + name_ + ": already entered");
    start_runtime();
    kokkos_thread().run([&] { phase_ = std::make_unique<perfex::Phase>(name_, *times_); });
  }
  void exit() {
    if (!phase_) return;
    require_runtime();
    kokkos_thread().run([&] { phase_.reset(); });
  }

 private:
  std::shared_ptr<perfex::PhaseTimes> times_;
  std::string name_;
  std::unique_ptr<perfex::Phase> phase_;
};

}  // namespace

void register_profiling(py::module_& m) {
  // Phase first: PhaseTimes.phase's signature names it.
  py::class_<PythonPhase>(m, "Phase", "A phase of PhaseTimes.phase(name): a context manager.")
      .def("__enter__", [](PythonPhase& p) { p.enter(); })
      .def("__exit__", [](PythonPhase& p, const py::object&, const py::object&, const py::object&) {
        p.exit();
        return false;
      });
  py::class_<perfex::PhaseTimes, std::shared_ptr<perfex::PhaseTimes>>(
      m, "PhaseTimes",
      "The phases of a run (perfex::PhaseTimes), in the order they started, a phase that ran "
      "several times once with its total: the library's jobs and the Python drivers time their "
      "phases into one, a phase started inside another one level below it.")
      .def(py::init<>())
      .def(
          "phase",
          [](const std::shared_ptr<perfex::PhaseTimes>& times, const std::string& name) {
            return PythonPhase(times, name);
          },
          py::arg("name"),
          "A context manager: the block as phase `name`, inside the profiling region "
          "\"perfex::<name>\", one level below the phases open.")
      .def(
          "list", [](const perfex::PhaseTimes& t) { return phases_to_list(t); },
          "The phases as (name, depth, seconds).")
      .def_property_readonly("level", &perfex::PhaseTimes::level,
                             "How many phases are open: the depth of the next one.")
      .def("__len__", [](const perfex::PhaseTimes& t) { return t.list().size(); })
      .def("__repr__", [](const perfex::PhaseTimes& t) {
        return "<perfex.PhaseTimes of " + std::to_string(t.list().size()) + " phases>";
      });
  m.def(
      "format_phases",
      [](const py::handle& phases, const std::string& title) {
        return perfex::format_phases(phases_from_list(phases), title);
      },
      py::arg("phases"), py::arg("title"));
}

}  // namespace perfex_py
