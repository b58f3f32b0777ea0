#pragma once
// What every PSF format's reader shares (io/psf/<format>.hpp, the FITS layer of a format,
// host only: link perfex::io): the PSF type and version a file states, integer keywords, trace
// HDUs, and PsfFile<Data>, the reader and writer of one format's files, which each format's
// header defines and io::read_psf (io/psf_files.hpp) chooses from by the file's PSFTYPE.
#include <cmath>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include <perfex/io/fits.hpp>
#include <perfex/psf/data.hpp>

namespace perfex {
namespace io {

// The files of one PSF format (io/psf/<format>.hpp):
//   static Data read(const std::string& path);   the file's data, validated
//   static constexpr const char* layouts;        the layouts it reads, for messages
template <class Data>
struct PsfFile;

namespace detail {

// A trace HDU: an image [nfib][ncoeff] of Legendre coefficients on WAVEMIN/WAVEMAX.
inline psf::LegendreTraceSet read_trace_hdu(FitsFile& file, const std::string& extname) {
  file.move_to(extname);
  if (file.hdu_type() != HduType::image) file.fail(0, "is not an image HDU");
  const std::vector<long> axes = file.image_axes();
  if (axes.size() != 2)
    file.fail(0, "expected a 2-D [nfib][ncoeff] coefficient image, found " +
                     std::to_string(axes.size()) + " axes");
  if (axes[0] < 1 || axes[1] < 1)
    file.fail(0, "empty coefficient image: NAXIS1 (coefficients) = " + std::to_string(axes[0]) +
                     ", NAXIS2 (fibres) = " + std::to_string(axes[1]));
  auto img = file.read_image<double>();
  psf::LegendreTraceSet t;
  t.wavemin = file.read_key<double>("WAVEMIN");
  t.wavemax = file.read_key<double>("WAVEMAX");
  t.ncoeff = static_cast<int>(img.axes[0]);
  t.coeff = std::move(img.data);
  return t;
}

// Integer keywords, refused outside ±10⁹ (no count or size of a PSF comes near).
inline int checked_int_key(FitsFile& file, const std::string& name, long long v) {
  if (v < -1000000000LL || v > 1000000000LL) file.fail(0, "keyword '" + name + "' out of range");
  return static_cast<int>(v);
}
inline int read_int_key(FitsFile& file, const std::string& name) {
  return checked_int_key(file, name, file.read_key<long long>(name));
}
inline std::optional<int> read_int_key_optional(FitsFile& file, const std::string& name) {
  if (auto v = file.read_key_optional<long long>(name)) return checked_int_key(file, name, *v);
  return std::nullopt;
}

// PSFVER's number ('2       ', '3', 2.0), NaN when it is not one.
inline double version_number(const std::string& ver) {
  char* end = nullptr;
  const double v = std::strtod(ver.c_str(), &end);
  while (end && *end == ' ') ++end;
  return end == ver.c_str() || *end != '\0' ? std::nan("") : v;
}

// The type and version a file states in its primary HDU, else in the HDU of its parameters.
struct PsfKind {
  std::string type;     // "" when not stated
  std::string version;  // "" when not stated
};
inline PsfKind psf_kind(FitsFile& file) {
  PsfKind k;
  file.move_to_index(0);
  k.type = file.read_key_optional<std::string>("PSFTYPE").value_or("");
  k.version = file.read_key_optional<std::string>("PSFVER").value_or("");
  if ((k.type.empty() || k.version.empty()) && file.num_hdus() > 1) {
    if (file.has_hdu("PSF"))
      file.move_to("PSF");
    else
      file.move_to_index(1);
    if (k.type.empty()) k.type = file.read_key_optional<std::string>("PSFTYPE").value_or("");
    if (k.version.empty()) k.version = file.read_key_optional<std::string>("PSFVER").value_or("");
  }
  while (!k.type.empty() && k.type.back() == ' ') k.type.pop_back();
  return k;
}

}  // namespace detail
}  // namespace io
}  // namespace perfex
