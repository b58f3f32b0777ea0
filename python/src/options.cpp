// perfex.options: extraction options as dicts and objects, checked exactly as they convert.
#include <perfex/detail/closest_name.hpp>
#include <perfex/extract/plan.hpp>
#include <perfex/extract/wavelength_grid.hpp>

#include <limits>
#include <set>
#include <type_traits>

#include "bindings.hpp"

namespace perfex_py {

using perfex::extract::ExtractionOptions;

namespace {

// Every numeric field of ExtractionOptions by its C++ name (decorrelation and geometry are
// strings in Python: "signal" or "noise"; "automatic", "gpu_specter" or "specter").
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
  f("row_min", &ExtractionOptions::row_min);
  f("row_max", &ExtractionOptions::row_max);
  f("regularize", &ExtractionOptions::regularize);
  f("psferr", &ExtractionOptions::psferr);
  f("eigen_clip", &ExtractionOptions::eigen_clip);
  f("model_image", &ExtractionOptions::model_image);
  f("memory_budget", &ExtractionOptions::memory_budget);
  f("batch_patches", &ExtractionOptions::batch_patches);
}

[[noreturn]] void throw_out_of_range(const char* name, const std::string& value) {
  throw RequestError(std::string("extraction option ") + name + ": " + value + " is out of range");
}

}  // namespace

py::dict options_to_dict(const ExtractionOptions& o) {
  py::dict d;
  for_each_option([&](const char* name, auto member) { d[name] = o.*member; });
  d["decorrelation"] = perfex::extract::decorrelation_name(o.decorrelation);
  d["geometry"] = perfex::extract::geometry_name(o.geometry);
  return d;
}

// Unknown keys are an error naming them (a typo must not silently keep a default); so is a
// value that does not convert exactly (2**31 for an int, 0.5 for an int, "x" for a number).
ExtractionOptions options_from_dict(const py::dict& d) {
  ExtractionOptions o;
  std::set<std::string> known{"decorrelation", "geometry"};
  for_each_option([&](const char* name, auto member) {
    known.insert(name);
    if (!d.contains(name)) return;
    using T = std::remove_reference_t<decltype(o.*member)>;
    const py::object value = d[name];
    try {
      if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
        // pybind11 would wrap 2**32 + 5 into 5 for an int; a float would truncate.
        if (py::isinstance<py::bool_>(value)) throw py::cast_error();
        PyObject* index = PyNumber_Index(value.ptr());  // ints and numpy ints, not floats
        if (!index) {
          PyErr_Clear();
          throw py::cast_error();
        }
        const py::object as_int = py::reinterpret_steal<py::object>(index);
        int overflow = 0;
        const long long v = PyLong_AsLongLongAndOverflow(as_int.ptr(), &overflow);
        if (overflow) throw_out_of_range(name, py::str(as_int));
        if (v < std::numeric_limits<T>::min() || v > std::numeric_limits<T>::max())
          throw_out_of_range(name, std::to_string(v));
        o.*member = static_cast<T>(v);
      } else {
        o.*member = value.template cast<T>();
      }
    } catch (const py::cast_error&) {
      throw RequestError(std::string("extraction option ") + name + ": cannot convert '" +
                         py::str(value).cast<std::string>() + "'");
    }
  });
  if (d.contains("decorrelation"))
    o.decorrelation = perfex::extract::parse_decorrelation(
        py::str(d["decorrelation"]).cast<std::string>(), "extraction option decorrelation");
  if (d.contains("geometry"))
    o.geometry = perfex::extract::parse_geometry(py::str(d["geometry"]).cast<std::string>(),
                                                 "extraction option geometry");
  for (const auto& item : d) {
    const std::string key = py::str(item.first);
    if (known.count(key)) continue;
    const std::string near =
        perfex::closest_name(key, std::vector<std::string>(known.begin(), known.end()));
    throw RequestError("unknown extraction option '" + key + "'" +
                       (near.empty() ? "" : " (did you mean '" + near + "'?)"));
  }
  return o;
}

void register_options(py::module_& m) {
  m.def("closest_name", &perfex::closest_name, py::arg("word"), py::arg("names"),
        "The name of names nearest to word (a mistyped option), or '' when none is near.");
  py::class_<ExtractionOptions> options(m, "ExtractionOptions");
  options.def(py::init<>());
  for_each_option([&](const char* name, auto member) { options.def_readwrite(name, member); });
  options.def_property(
      "decorrelation",
      [](const ExtractionOptions& o) {
        return perfex::extract::decorrelation_name(o.decorrelation);
      },
      [](ExtractionOptions& o, const std::string& v) {
        o.decorrelation =
            perfex::extract::parse_decorrelation(v, "extraction option decorrelation");
      });
  options.def_property(
      "geometry",
      [](const ExtractionOptions& o) { return perfex::extract::geometry_name(o.geometry); },
      [](ExtractionOptions& o, const std::string& v) {
        o.geometry = perfex::extract::parse_geometry(v, "extraction option geometry");
      });
  options.def("validate", [](const ExtractionOptions& o) {
    try {
      o.validate();
    } catch (const RequestError&) {
      throw;
    } catch (const Error& e) {
      throw RequestError(e.what());
    }
  });
  options.def("wavepad", &ExtractionOptions::wavepad);
  m.def("options_to_dict", &options_to_dict);
  m.def("options_from_dict", &options_from_dict);
  m.def(
      "bundle_ranges",
      [](const py::dict& options, int nfib) {
        const ExtractionOptions o = options_from_dict(options);
        o.validate();
        std::vector<std::pair<int, int>> ranges;
        for (const auto& b : perfex::extract::plan_bundles(o, nfib))
          ranges.emplace_back(b.req_lo, b.req_hi);
        return ranges;
      },
      "The requested fibres of each bundle, [lo, hi), in order.");
  m.def(
      "grid_of_values",
      [](const std::vector<double>& wave, const std::string& what) {
        const auto g = perfex::extract::grid_of_values(wave, what);
        return py::make_tuple(g.wmin, g.wmax, g.dw);
      },
      py::arg("wave"), py::arg("what") = "wavelength",
      "perfex::extract::grid_of_values: (wmin, wmax, dw) of a uniform grid given by its values; "
      "RequestError naming the first value at fault.");
}

}  // namespace perfex_py
