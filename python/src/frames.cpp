// perfex.frames: the C++ Frame as a dict of numpy arrays and back, the frame mask, the FITS
// readers and writers (atomic, with the temporaries' signal cleanup installed) and the check of
// a run's outputs against its inputs.
#include <perfex/io/frame_fits.hpp>
#include <perfex/io/output_file.hpp>

#include <array>
#include <cstdint>

#include "bindings.hpp"

namespace perfex_py {

py::dict frame_to_dict(perfex::extract::Frame&& fr) {
  const py::ssize_t nspec = fr.nspec, nwave = fr.nwave, nband = 2 * fr.ndiag + 1;
  py::dict d;
  d["specmin"] = fr.specmin;
  d["flux"] = to_numpy(std::move(fr.flux), {nspec, nwave});
  d["ivar"] = to_numpy(std::move(fr.ivar), {nspec, nwave});
  d["mask"] = to_numpy(std::move(fr.mask), {nspec, nwave});
  d["wave"] = to_numpy(std::move(fr.wave), {nwave});
  d["resolution"] = to_numpy(std::move(fr.resolution), {nspec, nband, nwave});
  d["chi2pix"] = to_numpy(std::move(fr.chi2pix), {nspec, nwave});
  d["pixmask_fraction"] = to_numpy(std::move(fr.pixmask_fraction), {nspec, nwave});
  if (fr.model.empty())
    d["model"] = py::none();
  else
    d["model"] = to_numpy(std::move(fr.model), {fr.model_rows, fr.model_cols});
  if (!fr.model_blocks.empty()) {
    const auto n = static_cast<py::ssize_t>(fr.model_blocks.size());
    d["model_blocks"] = to_numpy(std::move(fr.model_blocks), {n});
  }
  d["options"] = options_to_dict(fr.options);
  d["npatches"] = fr.npatches;
  d["failed_patches"] = fr.failed_patches;
  py::list failed_bins;
  for (const auto& b : fr.failed_bins)
    failed_bins.append(py::make_tuple(b.fibre0, b.nfibres, b.wave0, b.nwaves));
  d["failed_bins"] = failed_bins;
  d["nonfinite_pixels"] = fr.nonfinite_pixels;
  d["seconds"] = fr.seconds;
  d["linalg_flops"] = fr.linalg_flops;
  d["max_band"] = fr.max_band;
  py::list warnings;  // they may name files
  for (const std::string& w : fr.warnings) warnings.append(fs_text(w));
  d["warnings"] = warnings;
  d["phases"] = phases_to_list(fr.phases);
  return d;
}

namespace {

// (fibre0, nfibres, wave0, nwaves) blocks, frame-relative.
std::vector<perfex::extract::BinBlock> failed_bins_from_object(const py::object& blocks) {
  std::vector<perfex::extract::BinBlock> out;
  for (const py::handle b : blocks) {
    const auto t = b.cast<std::array<int, 4>>();
    out.push_back({t[0], t[1], t[2], t[3]});
  }
  return out;
}

// The frame's mask as uint32: integer values in [0, 2^32) only (numpy's casts would turn 0.7
// into 0 and -1 into 4294967295 without a word).
std::vector<std::uint32_t> mask_values(const py::handle& obj, std::size_t expected) {
  const py::array a = py::array::ensure(obj);
  if (!a) throw Error("frame: 'mask' is not a numeric array");
  const char kind = a.dtype().kind();
  if (kind != 'u' && kind != 'i' && kind != 'b')
    throw Error("frame: 'mask' must hold integers (desispec mask bits), got dtype " +
                py::str(a.dtype()).cast<std::string>());
  if (kind == 'i') {
    const auto v = py::array_t<long long, py::array::c_style | py::array::forcecast>::ensure(a);
    for (py::ssize_t i = 0; i < v.size(); ++i)
      if (v.data()[i] < 0 || v.data()[i] > 0xFFFFFFFFLL)
        throw Error("frame: 'mask' value " + std::to_string(v.data()[i]) + " at index " +
                    std::to_string(i) + " is not a 32-bit mask");
  } else if (kind == 'u' && a.itemsize() > 4) {
    const auto v =
        py::array_t<unsigned long long, py::array::c_style | py::array::forcecast>::ensure(a);
    for (py::ssize_t i = 0; i < v.size(); ++i)
      if (v.data()[i] > 0xFFFFFFFFULL)
        throw Error("frame: 'mask' value " + std::to_string(v.data()[i]) + " at index " +
                    std::to_string(i) + " is not a 32-bit mask");
  }
  return to_vector<std::uint32_t>(a, "mask", expected);
}

}  // namespace

// A C++ Frame from the Python Frame's fields (for writing; the arrays are copied once).
perfex::extract::Frame frame_from_object(const py::object& f) {
  perfex::extract::Frame fr;
  const auto flux = py::array::ensure(f.attr("flux"));
  const auto res = py::array::ensure(f.attr("resolution"));
  if (!flux || flux.ndim() != 2) throw Error("frame: 'flux' must be a 2-D [nspec][nwave] array");
  if (!res || res.ndim() != 3 || res.shape(1) % 2 != 1)
    throw Error("frame: 'resolution' must be a [nspec][2*ndiag+1][nwave] array");
  fr.nspec = static_cast<int>(flux.shape(0));
  fr.nwave = static_cast<int>(flux.shape(1));
  fr.ndiag = static_cast<int>((res.shape(1) - 1) / 2);
  fr.specmin = f.attr("specmin").cast<int>();
  const std::size_t n = static_cast<std::size_t>(fr.nspec) * fr.nwave;
  fr.flux = to_vector<double>(flux, "flux", n);
  fr.ivar = to_vector<double>(f.attr("ivar"), "ivar", n);
  fr.mask = mask_values(f.attr("mask"), n);
  fr.wave = to_vector<double>(f.attr("wave"), "wave", static_cast<std::size_t>(fr.nwave));
  fr.resolution = to_vector<double>(res, "resolution", n * (2 * fr.ndiag + 1));
  fr.chi2pix = to_vector<double>(f.attr("chi2pix"), "chi2pix", n);
  fr.pixmask_fraction = to_vector<double>(f.attr("pixmask_fraction"), "pixmask_fraction", n);
  const py::object model = f.attr("model");
  if (!model.is_none()) {
    const auto m = py::array::ensure(model);
    if (!m || m.ndim() != 2) throw Error("frame: 'model' must be a 2-D image");
    fr.model_rows = static_cast<int>(m.shape(0));
    fr.model_cols = static_cast<int>(m.shape(1));
    fr.model = to_vector<double>(m, "model", static_cast<std::size_t>(m.size()));
  }
  fr.options = options_from_dict(f.attr("options").cast<py::dict>());
  fr.npatches = f.attr("npatches").cast<int>();
  fr.failed_patches = f.attr("failed_patches").cast<int>();
  fr.failed_bins = failed_bins_from_object(f.attr("failed_bins"));
  fr.nonfinite_pixels = f.attr("nonfinite_pixels").cast<long long>();
  fr.seconds = f.attr("seconds").cast<double>();
  fr.linalg_flops = f.attr("linalg_flops").cast<double>();
  fr.max_band = f.attr("max_band").cast<int>();
  fr.warnings = f.attr("warnings").cast<std::vector<std::string>>();
  fr.phases = phases_from_list(f.attr("phases"));
  return fr;
}

namespace {

// desispec's spectrum mask of a whole frame (the medians span every fibre: after an MPI
// gather, rank 0 recomputes it on the assembled frame): SOMEBADPIX, ALLBADPIX, BAD2DFIT,
// NODATA where ivar is 0, BAD2DFIT | NODATA on the failed patches' bins.
py::array_t<std::uint32_t> frame_mask(const py::array& chi2pix, const py::array& pixmask_fraction,
                                      const py::array& ivar, const py::object& failed_bins) {
  if (chi2pix.ndim() != 2) throw Error("frame mask: chi2pix must be a 2-D [nspec][nwave] array");
  perfex::extract::Frame fr;
  fr.nspec = static_cast<int>(chi2pix.shape(0));
  fr.nwave = static_cast<int>(chi2pix.shape(1));
  const std::size_t n = static_cast<std::size_t>(fr.nspec) * fr.nwave;
  fr.chi2pix = to_vector<double>(chi2pix, "chi2pix", n);
  fr.pixmask_fraction = to_vector<double>(pixmask_fraction, "pixmask_fraction", n);
  fr.ivar = to_vector<double>(ivar, "ivar", n);
  fr.failed_bins = failed_bins_from_object(failed_bins);
  fr.flux.resize(n);
  {
    py::gil_scoped_release nogil;
    perfex::extract::set_frame_mask(fr);
  }
  return to_numpy(std::move(fr.mask), {fr.nspec, fr.nwave});
}

std::vector<perfex::io::NamedPath> named_paths(
    const std::vector<std::pair<std::string, std::string>>& v) {
  std::vector<perfex::io::NamedPath> out;
  for (const auto& [name, path] : v) out.push_back({name, path});
  return out;
}

// The Frame does not know its backend: the frames of the Python API record perfex, Kokkos and
// numpy (perfex.files' frames record their backend too).
perfex::io::FrameProvenance provenance(const std::string& image_path, const std::string& psf_path,
                                       const std::string& fibermap) {
  perfex::io::FrameProvenance prov{image_path, psf_path, fibermap};
  prov.dependencies = python_dependencies();
  return prov;
}

}  // namespace

std::vector<perfex::io::Dependency> python_dependencies() {
  return {{"numpy", py::str(py::module_::import("numpy").attr("__version__"))}};
}

void register_frames(py::module_& m) {
  m.def(
      "dependencies",
      [](const std::string& backend) {
        py::list out;
        std::vector<perfex::io::Dependency> deps = perfex::io::default_dependencies(backend);
        for (const auto& dep : python_dependencies()) deps.push_back(dep);
        for (const auto& dep : deps) out.append(py::make_tuple(dep.name, dep.version));
        return out;
      },
      py::arg("backend") = "",
      "The (DEPNAMnn, DEPVERnn) pairs of the files the Python package writes: perfex, kokkos, "
      "perfex-backend (when backend is given), numpy.");
  m.def("frame_mask", &frame_mask, py::arg("chi2pix"), py::arg("pixmask_fraction"), py::arg("ivar"),
        py::arg("failed_bins") = py::list());
  // Both return the writer's warnings (e.g. a FIBERMAP shorter than the frame).
  m.def(
      "write_frame",
      [](const std::string& path, const py::object& frame, const std::string& image_path,
         const std::string& psf_path, const std::string& fibermap) {
        const perfex::extract::Frame fr = frame_from_object(frame);
        perfex::io::remove_temp_files_on_signals();
        const perfex::io::FrameProvenance prov = provenance(image_path, psf_path, fibermap);
        std::vector<std::string> warnings;
        {
          py::gil_scoped_release nogil;
          warnings = perfex::io::write_frame(path, fr, prov);
        }
        py::list out;
        for (const std::string& w : warnings) out.append(fs_text(w));
        return out;
      },
      py::arg("path"), py::arg("frame"), py::arg("image_path") = "", py::arg("psf_path") = "",
      py::arg("fibermap") = "");
  m.def(
      "write_model",
      [](const std::string& path, const py::object& frame, const std::string& image_path,
         const std::string& psf_path) {
        const perfex::extract::Frame fr = frame_from_object(frame);
        perfex::io::remove_temp_files_on_signals();
        const perfex::io::FrameProvenance prov = provenance(image_path, psf_path, "");
        py::gil_scoped_release nogil;
        perfex::io::write_model(path, fr, prov);
      },
      py::arg("path"), py::arg("frame"), py::arg("image_path") = "", py::arg("psf_path") = "");
  // The library's set of outputs for the Python writers (astropy): each written through an open
  // file object into its registered temporary, all renamed together by commit(), removed when
  // dropped or when a signal ends the process.
  py::class_<perfex::io::OutputSet>(m, "OutputSet")
      .def(py::init([] {
        perfex::io::remove_temp_files_on_signals();
        return new perfex::io::OutputSet();
      }))
      .def(
          "start",
          [](perfex::io::OutputSet& set, const std::string& path) {
            try {
              return py::bytes(set.start(path).path());
            } catch (const RequestError&) {
              throw;
            } catch (const Error& e) {
              throw RequestError(e.what());
            }
          },
          py::arg("path"),
          "The hidden temporary (bytes) that output path's writer opens and writes (without "
          "creating or removing it); RequestError for an output that cannot be written or is "
          "already in the set.")
      .def("drop", &perfex::io::OutputSet::drop, py::arg("temporary"),
           "Removes the output whose temporary start gave (its writer failed).")
      .def(
          "commit",
          [](perfex::io::OutputSet& set) {
            py::gil_scoped_release nogil;
            set.commit();
          },
          "Renames every temporary over its output, all or none.");
  m.def(
      "check_fits",
      [](const std::string& path, const std::vector<std::string>& hdus, int fd) {
        py::gil_scoped_release nogil;
        perfex::io::check_fits_file(path, hdus, fd);
      },
      py::arg("path"), py::arg("hdus") = std::vector<std::string>{}, py::arg("fd") = -1,
      "perfex::io::check_fits_file: opens the file as every perfex reader does (fd: the file "
      "open as this descriptor, named path) and requires the HDUs named (Error naming the file "
      "and HDU).");
  m.def(
      "read_frame",
      [](const std::string& path) {
        perfex::extract::Frame fr;
        {
          py::gil_scoped_release nogil;
          fr = perfex::io::read_frame(path);
        }
        return frame_to_dict(std::move(fr));
      },
      py::arg("path"));
  m.def(
      "check_outputs",
      [](const std::vector<std::pair<std::string, std::string>>& outputs,
         const std::vector<std::pair<std::string, std::string>>& inputs,
         const std::string& prefix) {
        perfex::io::check_outputs(named_paths(outputs), named_paths(inputs), prefix);
      },
      py::arg("outputs"), py::arg("inputs"), py::arg("prefix") = "",
      "Raises RequestError unless every (name, path) output can be written and none is an input "
      "or an earlier output (the same file by device and inode, or by folder and name).");
}

}  // namespace perfex_py
