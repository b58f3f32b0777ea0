// PSFs: read from files, converted from and to dicts (pickling, MPI broadcasts, PSFs built from
// arrays such as gpu_specter's tables).
#include <perfex/io/psf_fits.hpp>

#include "bindings.hpp"

namespace perfex_py {

using perfex::psf::GaussHermitePsfData;

namespace {

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

void register_psf(py::module_& m) {
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
}

}  // namespace perfex_py
