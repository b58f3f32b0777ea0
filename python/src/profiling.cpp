// perfex.profiling: the phases of the Python drivers (an MPI frame, an exposure) as Kokkos
// profiling regions like the library's, and phases as lists of (name, depth, seconds).
#include <perfex/profiling.hpp>

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

void register_profiling(py::module_& m) {
  // Regions are pushed and popped on the Kokkos thread, in turn with its kernels.
  m.def(
      "push_region",
      [](const std::string& name) {
        require_runtime();
        kokkos_thread().run([&] { Kokkos::Profiling::pushRegion(name); });
      },
      py::arg("name"));
  m.def("pop_region", [] {
    require_runtime();
    kokkos_thread().run([] { Kokkos::Profiling::popRegion(); });
  });
  m.def(
      "format_phases",
      [](const py::handle& phases, const std::string& title) {
        return perfex::format_phases(phases_from_list(phases), title);
      },
      py::arg("phases"), py::arg("title"));
}

}  // namespace perfex_py
