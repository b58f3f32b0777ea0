// perfex._perfex: the Python extension around the header-only library. numpy arrays in (used in
// place when they are C-contiguous native float64) and out (the C++ result's vectors are moved
// into capsule-owned heap objects: no copy), the GIL released while extracting, the Kokkos
// runtime started and stopped by the Python layer (perfex/runtime.py) and driven from one
// thread of its own, whichever Python thread calls. One translation unit per module of the
// Python package, named as it is.
#include <perfex/config.hpp>

#include "bindings.hpp"

PYBIND11_MODULE(_perfex, m) {
  namespace py = pybind11;
  m.doc() = "perfex C++ core (use the perfex package, not this module)";
  m.attr("__version__") = PERFEX_VERSION_STRING;
  // pybind11's own objects, which live as long as the module.
  static const py::exception<perfex::Error>& error =
      py::register_exception<perfex::Error>(m, "Error", PyExc_RuntimeError);
  static const py::exception<perfex::RequestError>& request_error =
      py::register_exception<perfex::RequestError>(m, "RequestError", error.ptr());
  // Messages name files by their bytes: decoded as the file system's names are (os.fsdecode),
  // not as UTF-8, which a Latin-1 name is not.
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const perfex::RequestError& e) {
      PyErr_SetObject(request_error.ptr(), perfex_py::fs_text(e.what()).ptr());
    } catch (const perfex::Error& e) {
      PyErr_SetObject(error.ptr(), perfex_py::fs_text(e.what()).ptr());
    }
  });
  perfex_py::register_runtime(m);
  perfex_py::register_profiling(m);
  // Classes before the functions that take them: their signatures then name the Python class.
  perfex_py::register_psf(m);
  perfex_py::register_options(m);
  perfex_py::register_images(m);
  perfex_py::register_frames(m);
  perfex_py::register_extraction(m);
  perfex_py::register_files(m);
}
