#pragma once
// PSF files of every format perfex reads (psf/any_psf.hpp): read_psf chooses the format by the
// file's PSFTYPE (specter's load_psf rule; GAUSS-HERMITE when not stated) and reads it with that
// format's reader (io/psf/<format>.hpp, io::PsfFile); write_psf writes each format. Any other
// PSFTYPE (MONOSPOT, PCA-PIX, ...) is refused by name.
#include <optional>
#include <string>
#include <type_traits>

#include <perfex/error.hpp>
#include <perfex/io/fits.hpp>
#include <perfex/io/psf/gauss_hermite.hpp>
#include <perfex/io/psf/gauss_hermite2.hpp>
#include <perfex/io/psf/read.hpp>
#include <perfex/io/psf/spot_grid.hpp>
#include <perfex/psf/any_psf.hpp>

namespace perfex {
namespace io {

// The formats read_psf reads, as messages and the tools' help name them ("GAUSS-HERMITE PSFVER
// 1-3, GAUSS-HERMITE2, SPOTGRID").
inline std::string psf_formats() {
  std::string formats;
  psf::AnyPsfData::for_each_format([&](auto* format) {
    using Data = std::remove_pointer_t<decltype(format)>;
    formats += (formats.empty() ? "" : ", ") + std::string(PsfFile<Data>::layouts);
  });
  return formats;
}

// A PSF file of any format perfex reads.
inline psf::AnyPsfData read_psf(const std::string& path) {
  std::string type;
  {
    FitsFile file = FitsFile::open(path);
    type = detail::psf_kind(file).type;
  }
  std::optional<psf::AnyPsfData> psf;
  psf::AnyPsfData::for_each_format([&](auto* format) {
    using Data = std::remove_pointer_t<decltype(format)>;
    if (type.empty()) type = Data::psftype;  // the first format's when not stated
    if (!psf && type == Data::psftype) psf = PsfFile<Data>::read(path);
  });
  if (!psf)
    throw Error("PSF '" + path + "': PSFTYPE '" + type + "' is not a format perfex reads (" +
                psf_formats() + ")");
  return std::move(*psf);
}

}  // namespace io
}  // namespace perfex
