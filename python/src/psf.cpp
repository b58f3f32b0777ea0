// PSFs of every format perfex reads (perfex::psf::AnyPsfData): read from files, converted from and
// to dicts (pickling, MPI broadcasts, PSFs built from arrays such as gpu_specter's tables), and
// evaluated like specter's PSF.xypix.
#include <perfex/extract/specter_geometry.hpp>
#include <perfex/io/psf_files.hpp>
#include <perfex/psf/any_psf.hpp>
#include <perfex/psf/synthetic.hpp>
#include <perfex/runtime.hpp>

#include "bindings.hpp"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <optional>
#include <sstream>
#include <type_traits>

namespace perfex_py {

using perfex::psf::AnyPsfData;
using perfex::psf::GaussHermite2PsfData;
using perfex::psf::GaussHermitePsfData;

namespace {

// Throws "PSF: <what> <layout> has <axis> = <got>, expected <expected>" unless they agree.
void check_axis(const char* what, const std::string& layout, const char* axis, py::ssize_t got,
                py::ssize_t expected) {
  if (got != expected) {
    throw Error(std::string("PSF: ") + what + " " + layout + " has " + axis + " = " +
                std::to_string(got) + ", expected " + std::to_string(expected));
  }
}

// A file name from Python (str or bytes) as the library takes it: its bytes, as os.fsencode gives
// them.
std::string file_name(const py::object& name) {
  if (py::isinstance<py::bytes>(name)) return name.cast<std::string>();
  const auto bytes = py::reinterpret_steal<py::object>(PyUnicode_EncodeFSDefault(name.ptr()));
  if (!bytes) throw py::error_already_set();
  return bytes.cast<std::string>();
}

template <class T>
T field(const py::dict& s, const char* key) {
  if (!s.contains(key)) throw Error(std::string("PSF: missing '") + key + "'");
  try {
    return s[key].cast<T>();
  } catch (const py::cast_error& e) {
    throw Error(std::string("PSF: field '") + key + "' has the wrong type (" + e.what() + ")");
  }
}

// A format's named fields (its fields(), psf/data.hpp) into a dict, each copied: it changes
// nothing (the later fields' sizes read the earlier).
struct DictWriter {
  py::dict& s;
  template <class T>
  void value(const char* name, const T& v) {
    s[name] = v;
  }
  void optional(const char* name, const std::string& v) { s[name] = v; }
  void file(const char* name, const std::string& v) { s[name] = fs_text(v); }
  void array(const char* name, const std::vector<double>& values,
             std::initializer_list<perfex::psf::FieldAxis> axes) {
    std::vector<py::ssize_t> shape;
    for (const auto& axis : axes) shape.push_back(axis.size);
    if (shape.empty()) shape.push_back(static_cast<py::ssize_t>(values.size()));
    s[name] = to_numpy(std::vector<double>(values), std::move(shape));
  }
};

// A format's named fields from a dict, each checked as it comes (the format's validate() checks
// the whole).
struct DictReader {
  const py::dict& s;
  template <class T>
  void value(const char* name, T& v) {
    v = field<T>(s, name);
  }
  void optional(const char* name, std::string& v) {
    if (s.contains(name)) v = field<std::string>(s, name);
  }
  void file(const char* name, std::string& v) { v = file_name(field<py::object>(s, name)); }
  void array(const char* name, std::vector<double>& values,
             std::initializer_list<perfex::psf::FieldAxis> axes) {
    const auto a = py::array_t<double, py::array::c_style | py::array::forcecast>::ensure(
        field<py::object>(s, name));
    if (axes.size() == 0 && !a)
      throw Error(std::string("PSF: ") + name + " must be an array of numbers");
    if (axes.size() > 0) {
      std::string layout;
      for (const auto& axis : axes) layout += std::string("[") + axis.name + "]";
      if (!a || a.ndim() != static_cast<py::ssize_t>(axes.size()))
        throw Error(std::string("PSF: ") + name + " must be a " + std::to_string(axes.size()) +
                    "-D " + layout + " array");
      int i = 0;
      for (const auto& axis : axes) {
        const py::ssize_t got = a.shape(i++);
        if (axis.set)
          *axis.set = static_cast<int>(got);
        else
          check_axis(name, layout, axis.name, got, axis.size);
      }
    }
    values.assign(a.data(), a.data() + a.size());
  }
};

// The PSFTYPE of each format perfex reads, the first one's that of a dict that names none.
std::vector<std::string> psftypes() {
  std::vector<std::string> names;
  AnyPsfData::for_each_format(
      [&](auto* format) { names.push_back(std::remove_pointer_t<decltype(format)>::psftype); });
  return names;
}

// Every field, for pickling (MPI broadcasts) and for PSFs built from arrays; "psftype" names
// the format.
py::dict psf_to_dict(const AnyPsfData& psf) {
  return psf.visit([](const auto& data) {
    py::dict s;
    s["psftype"] = data.psftype;
    DictWriter writer{s};
    // fields() takes the data mutable for DictReader; the writer only reads them.
    const_cast<std::decay_t<decltype(data)>&>(data).fields(writer);
    return s;
  });
}

std::shared_ptr<AnyPsfData> psf_from_dict(const py::dict& s) {
  const std::vector<std::string> types = psftypes();
  const std::string type = s.contains("psftype") ? field<std::string>(s, "psftype") : types[0];
  std::optional<AnyPsfData> psf;
  AnyPsfData::for_each_format([&](auto* format) {
    using Data = std::remove_pointer_t<decltype(format)>;
    if (type != Data::psftype) return;
    Data d;
    DictReader reader{s};
    d.fields(reader);
    psf = std::move(d);
  });
  if (!psf) {
    std::string names;
    for (const std::string& name : types) names += (names.empty() ? "" : ", ") + name;
    throw Error("PSF: psftype '" + type + "' is not one perfex reads (" + names + ")");
  }
  psf->validate();
  return std::make_shared<AnyPsfData>(std::move(*psf));
}

// The spots of fibres [fibremin, fibremin + nfibre) at wavelengths, on the host backend, after
// the checks every spot needs: (values [nfibre][nwave][ny][nx], xcorner, ycorner [nfibre][nwave]).
struct HostSpots {
  std::vector<double> values;
  std::vector<int> xcorner, ycorner;
  int ny = 0, nx = 0;
};

// first_name, count_name: the caller's arguments, for the messages.
HostSpots host_spots(const AnyPsfData& psf, long long first, long long count,
                     const std::vector<double>& waves, const char* first_name,
                     const char* count_name) {
  const perfex::psf::PsfSummary s = psf.summary();
  const std::string problem =
      perfex::psf::fibre_range_problem(first, count, s.nfib, first_name, count_name);
  if (!problem.empty()) throw RequestError(problem);
  const int fibremin = static_cast<int>(first), nfibre = static_cast<int>(count);
  start_runtime();
  // Spots are defined on the PSF's domain, extended while they stay near the CCD (specter's
  // PSFs extrapolate there); beyond, a position extrapolated without bound is no pixel index.
  double wlo = s.wavemin, whi = s.wavemax;
  for (int f = fibremin; f < fibremin + nfibre; ++f) {
    const perfex::psf::SpotWavelengths domain = perfex::psf::spot_wavelengths(psf, f);
    for (const double wavelength : waves) {
      if (!domain.contains(wavelength)) {
        std::ostringstream m;
        m << "wavelength " << wavelength << ": "
          << (std::isfinite(wavelength) ? "outside" : "not in") << " fibre " << f
          << "'s spot domain " << domain.lo << "-" << domain.hi
          << " A (the PSF's domain, extended to where its trace leaves the CCD), where its "
             "spots are defined (specter's xypix gives an empty spot beyond)";
        throw RequestError(m.str());
      }
      wlo = std::min(wlo, wavelength);
      whi = std::max(whi, wavelength);
    }
  }
  if (wlo < s.wavemin) psf.check_over(wlo, s.wavemin);
  if (whi > s.wavemax) psf.check_over(s.wavemax, whi);
  HostSpots out;
  const int nwave = static_cast<int>(waves.size());
  kokkos_thread().run([&] {
    const Kokkos::DefaultHostExecutionSpace exec;
    perfex::psf::with_psf_model(exec, psf, [&](const auto& model) {
      using Mem = typename std::decay_t<decltype(model)>::memory_space;
      out.ny = model.spot_rows();
      out.nx = model.spot_cols();
      Kokkos::View<const double*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged> host(waves.data(),
                                                                                   nwave);
      Kokkos::View<double*, Mem> wave("perfex::spots::wave", nwave);
      Kokkos::deep_copy(wave, host);
      Kokkos::View<double****, Kokkos::LayoutRight, Mem> spot("perfex::spots::spot", nfibre, nwave,
                                                              out.ny, out.nx);
      Kokkos::View<int**, Kokkos::LayoutRight, Mem> xc("perfex::spots::xc", nfibre, nwave),
          yc("perfex::spots::yc", nfibre, nwave);
      perfex::psf::compute_spots(exec, model, fibremin, nfibre, wave, spot, xc, yc);
      exec.fence();
      out.values.assign(spot.data(), spot.data() + spot.size());
      out.xcorner.assign(xc.data(), xc.data() + xc.size());
      out.ycorner.assign(yc.data(), yc.data() + yc.size());
      return 0;
    });
  });
  return out;
}

// specter's PSF.xypix(ispec, wavelength) without the clipping to the CCD: (xslice, yslice,
// pixels[ny][nx]) of the normalised spot.
py::tuple xypix(const AnyPsfData& psf, long long fibre, double wavelength) {
  HostSpots spots = host_spots(psf, fibre, 1, {wavelength}, "fibre", "");
  const int col0 = spots.xcorner[0], row0 = spots.ycorner[0], ny = spots.ny, nx = spots.nx;
  py::object slice = py::module_::import("builtins").attr("slice");
  return py::make_tuple(slice(col0, col0 + nx), slice(row0, row0 + ny),
                        to_numpy(std::move(spots.values), {ny, nx}));
}

// Every spot of fibres [fibremin, fibremin + nfibre) at wavelengths in one evaluation:
// (pixels[nfibre][nwave][ny][nx], xcorner[nfibre][nwave], ycorner[nfibre][nwave]).
py::tuple spots(const AnyPsfData& psf, long long fibremin, long long nfibre,
                const std::vector<double>& wavelengths) {
  HostSpots spots = host_spots(psf, fibremin, nfibre, wavelengths, "fibremin", "nfibre");
  const py::ssize_t nwave = static_cast<py::ssize_t>(wavelengths.size());
  auto corners = [&](std::vector<int>& values) {
    py::array_t<int> array({static_cast<py::ssize_t>(nfibre), nwave});
    std::copy(values.begin(), values.end(), array.mutable_data());
    return array;
  };
  return py::make_tuple(
      to_numpy(std::move(spots.values),
               {static_cast<int>(nfibre), static_cast<int>(nwave), spots.ny, spots.nx}),
      corners(spots.xcorner), corners(spots.ycorner));
}

// What f returns of the PSF's specter geometry (extract::specter_traces) in host memory.
template <class R, class F>
R with_specter_traces(const AnyPsfData& psf, F&& f) {
  start_runtime();
  R r{};
  kokkos_thread().run([&] {
    const Kokkos::DefaultHostExecutionSpace exec;
    perfex::psf::with_psf_model(exec, psf, [&](const auto& model) {
      r = f(perfex::extract::specter_traces(exec, model));
      return 0;
    });
  });
  return r;
}

// specter's PSF.xypix(fibre, wavelength, xmin, xmax, ymin, ymax)'s (xslice, yslice), by the
// library's rule (the specter drop-in's, and the specter geometry's patch boxes).
py::tuple specter_xypix(const AnyPsfData& psf, long long fibre, double wavelength, int xmin,
                        int xmax, int ymin, int ymax) {
  const std::string problem =
      perfex::psf::fibre_range_problem(fibre, 1, psf.summary().nfib, "fibre");
  if (!problem.empty()) throw RequestError(problem);
  const auto s = with_specter_traces<perfex::extract::SpecterSlices>(psf, [&](const auto& t) {
    return t.xypix(static_cast<int>(fibre), wavelength, xmin, xmax, ymin, ymax);
  });
  py::object slice = py::module_::import("builtins").attr("slice");
  return py::make_tuple(slice(s.x0, s.x1), slice(s.y0, s.y1));
}

// specter's PSF.xyrange((specmin, specmax), (wavemin, wavemax)): (xmin, xmax, ymin, ymax).
py::tuple specter_xyrange(const AnyPsfData& psf, long long specmin, long long specmax,
                          double wavemin, double wavemax) {
  const std::string problem = perfex::psf::fibre_range_problem(
      specmin, specmax - specmin, psf.summary().nfib, "specmin", "specmax - specmin");
  if (!problem.empty()) throw RequestError(problem);
  perfex::extract::SpecterPatch p;
  const bool on_ccd = with_specter_traces<bool>(psf, [&](const auto& t) {
    return t.xyrange(static_cast<int>(specmin), static_cast<int>(specmax), wavemin, wavemax, p);
  });
  if (!on_ccd) {  // where specter's fails
    std::ostringstream m;
    m << "xyrange: spectra " << specmin << "-" << specmax - 1 << " have no wavelength of "
      << wavemin << "-" << wavemax << " A on the CCD";
    throw py::value_error(m.str());
  }
  return py::make_tuple(p.xlo, p.xhi, p.ylo, p.yhi);
}

// perfex.Psf's docstring, in numpydoc's form as the API reference (docs/api) shows it.
const char* const kPsfDoc = R"doc(A PSF of any format perfex reads, held by the library.

Made by perfex.read_psf (a file), perfex.psf_from_tables (gpu_specter's dict) or
Psf.from_dict (to_dict's dict); picklable (MPI ranks receive it so). Read-only.

Attributes
----------
source : str
    The file it was read from, or the source a dict named ("" by default).
psftype : str
    'GAUSS-HERMITE', 'GAUSS-HERMITE2' or 'SPOTGRID'.
nfib : int
    The fibres it models.
npix_x, npix_y : int
    The CCD's columns and rows.
psferr : float
    The fractional model error (PSFERR; 0.01 when the file has none) that chi2pix takes by
    default.
wavemin, wavemax : float
    The PSF's wavelength domain, in Angstrom: the ends of the default grid.
spot_rows, spot_cols : int
    The size of a spot's pixel box.
hsizex, hsizey : int
    Half the spot box's columns and rows (HSIZEX, HSIZEY of a GAUSS-HERMITE PSF).
fibermin : int
    The first fibre of a GAUSS-HERMITE PSF (0 for the other formats).
param_names : list of str
    The Gauss-Hermite parameters' names (empty for SPOTGRID).
)doc";

}  // namespace

void register_psf(py::module_& m) {
  py::class_<AnyPsfData, std::shared_ptr<AnyPsfData>> psf(m, "Psf", kPsfDoc);
  auto summary = [](auto member) {
    return [member](const AnyPsfData& d) { return d.summary().*member; };
  };
  psf.def_property_readonly("source",
                            [](const AnyPsfData& d) { return fs_text(d.summary().source); })
      .def_property_readonly("psftype", summary(&perfex::psf::PsfSummary::type))
      .def_property_readonly("nfib", summary(&perfex::psf::PsfSummary::nfib))
      .def_property_readonly("npix_x", summary(&perfex::psf::PsfSummary::npix_x))
      .def_property_readonly("npix_y", summary(&perfex::psf::PsfSummary::npix_y))
      .def_property_readonly("psferr", summary(&perfex::psf::PsfSummary::psferr))
      .def_property_readonly("wavemin", summary(&perfex::psf::PsfSummary::wavemin))
      .def_property_readonly("wavemax", summary(&perfex::psf::PsfSummary::wavemax))
      .def_property_readonly("spot_rows", summary(&perfex::psf::PsfSummary::spot_rows))
      .def_property_readonly("spot_cols", summary(&perfex::psf::PsfSummary::spot_cols))
      // The spot box's half sizes (HSIZEX/HSIZEY for a GAUSS-HERMITE PSF).
      .def_property_readonly("hsizex",
                             [](const AnyPsfData& d) { return d.summary().spot_cols / 2; })
      .def_property_readonly("hsizey",
                             [](const AnyPsfData& d) { return d.summary().spot_rows / 2; })
      .def_property_readonly("fibermin",
                             [](const AnyPsfData& d) {
                               const auto* gh = d.get_if<GaussHermitePsfData>();
                               return gh ? gh->fibermin : 0;
                             })
      .def_property_readonly("param_names",
                             [](const AnyPsfData& d) {
                               if (const auto* gh = d.get_if<GaussHermitePsfData>())
                                 return gh->param_names;
                               if (const auto* gh2 = d.get_if<GaussHermite2PsfData>())
                                 return gh2->gh.param_names;
                               return std::vector<std::string>();
                             })
      .def("to_dict", &psf_to_dict)
      .def_static("from_dict", &psf_from_dict)
      .def_static("psftypes", &psftypes,
                  "The PSFTYPEs of the formats perfex reads, in the library's order (the first "
                  "is that of a file or dict that names none).")
      .def("xypix", &xypix, py::arg("fibre"), py::arg("wavelength"),
           "(xslice, yslice, pixels): the normalised spot of a fibre at a wavelength and the "
           "CCD columns and rows it covers (specter's PSF.xypix, not clipped to the CCD). A "
           "wavelength outside the fibre's spot domain (the PSF's, extended while the spot stays "
           "near the CCD) or not finite is a RequestError.")
      .def("spots", &spots, py::arg("fibremin"), py::arg("nfibre"), py::arg("wavelengths"),
           "(pixels[nfibre][nwave][ny][nx], xcorner[nfibre][nwave], ycorner[nfibre][nwave]): "
           "the normalised spots of fibres fibremin.. at every wavelength in one evaluation, "
           "each covering CCD columns xcorner.. and rows ycorner.. (not clipped to the CCD), with "
           "xypix's refusals.")
      .def("specter_xypix", &specter_xypix, py::arg("fibre"), py::arg("wavelength"),
           py::arg("xmin"), py::arg("xmax"), py::arg("ymin"), py::arg("ymax"),
           "(xslice, yslice): specter's PSF.xypix(fibre, wavelength, xmin, xmax, ymin, ymax)'s "
           "slices, the spot's box clipped to the image of columns [xmin, xmax) and rows "
           "[ymin, ymax), relative to xmin and ymin (empty where specter's are).")
      .def("specter_xyrange", &specter_xyrange, py::arg("specmin"), py::arg("specmax"),
           py::arg("wavemin"), py::arg("wavemax"),
           "(xmin, xmax, ymin, ymax): specter's PSF.xyrange((specmin, specmax), (wavemin, "
           "wavemax)), the CCD box holding those spectra's spots over that range. A ValueError "
           "where specter's fails (none of the range on the CCD).")
      .def("__repr__",
           [](const AnyPsfData& d) {
             const auto s = d.summary();
             return fs_text("<perfex.Psf " + d.label() + ": " + s.type + ", " +
                            std::to_string(s.nfib) + " fibres, " + std::to_string(s.wavemin) + "-" +
                            std::to_string(s.wavemax) + " A>");
           })
      .def(py::pickle([](const AnyPsfData& d) { return psf_to_dict(d); },
                      [](const py::dict& s) { return psf_from_dict(s); }));
  m.def(
      "write_synthetic_psfs",
      [](const std::string& folder, int nfib, double tailamp) {
        perfex::psf::SyntheticPsfOptions o;
        o.nfib = nfib;
        o.tailamp = tailamp;
        o.trace_wavemax = o.wavemax;  // one domain: the older layouts' readers share it
        const GaussHermitePsfData gh = perfex::psf::make_synthetic_psf(o);
        std::vector<std::string> paths;
        for (const char* name :
             {"gauss-hermite-v3", "gauss-hermite-v2", "gauss-hermite2", "spotgrid"})
          paths.push_back(folder + "/psf-synthetic-" + name + ".fits");
        perfex::io::write_psf(paths[0], gh);
        perfex::io::write_psf(paths[1], gh, 2);
        perfex::io::write_psf(paths[2], perfex::psf::as_gauss_hermite2(gh));
        perfex::io::write_psf(paths[3], perfex::psf::make_spot_grid_psf(gh));
        return paths;
      },
      py::arg("folder"), py::arg("nfib") = 25, py::arg("tailamp") = 0.0,
      "Writes the synthetic DESI-like PSF (psf/synthetic.hpp) in every format perfex reads: "
      "GAUSS-HERMITE PSFVER 3 and 2, GAUSS-HERMITE2 and sampled into a SPOTGRID; returns the "
      "paths.");
  m.def(
      "read_psf",
      [](const std::string& path) {
        py::gil_scoped_release nogil;
        return std::make_shared<AnyPsfData>(perfex::io::read_psf(path));
      },
      py::arg("path"));
}

}  // namespace perfex_py
