// perfex._perfex: the Python extension around the header-only library. numpy arrays in (used in
// place when they are C-contiguous native float64) and out (the C++ result's vectors are moved
// into capsule-owned heap objects: no copy), the GIL released while extracting, the Kokkos
// runtime started and stopped by the Python layer (perfex/runtime.py) and driven from one
// thread of its own, whichever Python thread calls. One translation unit per topic.
#include <perfex/config.hpp>

#include "bindings.hpp"

PYBIND11_MODULE(_perfex, m) {
  namespace py = pybind11;
  m.doc() = "perfex C++ core (use the perfex package, not this module)";
  m.attr("__version__") = PERFEX_VERSION_STRING;
  const py::object error = py::register_exception<perfex::Error>(m, "Error", PyExc_RuntimeError);
  py::register_exception<perfex::RequestError>(m, "RequestError", error.ptr());
  perfex_py::register_runtime(m);
  // Classes before the functions that take them: their signatures then name the Python class.
  perfex_py::register_psf(m);
  perfex_py::register_options(m);
  perfex_py::register_images(m);
  perfex_py::register_frames(m);
  perfex_py::register_files(m);
}
