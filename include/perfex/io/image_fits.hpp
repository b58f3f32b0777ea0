#pragma once
// DESI preproc images: HDUs IMAGE, IVAR and optional MASK, read by EXTNAME.
// The extraction sees (pixels, ivar) only: ivar := 0 where (MASK & mask_bits) != 0 (default
// kDefaultMaskBits), and a pixel whose value or ivar is NaN/Inf becomes value 0, ivar 0
// (counted in nonfinite_pixels). A negative ivar is an error; a missing MASK HDU is a warning.
// Compressed (.fits.gz) files are read transparently by CFITSIO.
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <perfex/error.hpp>
#include <perfex/extract/image.hpp>
#include <perfex/io/fits.hpp>

namespace perfex {
namespace io {

// The MASK bits that zero a pixel's ivar unless a caller says otherwise, desispec's: DESI CCD
// bits 0-7 and 9 (bit 8, BADREADNOISE, does not mask). Every front end's default (Python:
// perfex._perfex.DEFAULT_MASK_BITS).
constexpr std::uint32_t kDefaultMaskBits = 0x2FF;

struct PreprocImage {
  std::string path;
  extract::CcdImage ccd;
  long long masked_pixels = 0;     // pixels with (MASK & mask_bits) != 0
  long long nonfinite_pixels = 0;  // pixels whose value or ivar was NaN/Inf
  bool has_fibermap = false;  // a FIBERMAP HDU is present (copy it with FitsFile::copy_hdu_from)
  std::vector<std::string> warnings;  // e.g. no MASK HDU
};

// The whole CCD of a preproc image (IMAGE's rows and columns), without reading pixels.
inline extract::PixelBox preproc_extent(const std::string& path) {
  FitsFile file = FitsFile::open(path);
  file.move_to("IMAGE");
  const std::vector<long> axes = file.image_axes();
  if (axes.size() != 2)
    file.fail(0, "expected a 2-D image, found " + std::to_string(axes.size()) + " axes");
  return {0, static_cast<int>(axes[1]), 0, static_cast<int>(axes[0])};
}

// Reads the image, or only the CCD pixels in box when it is not empty (e.g. plan_frame's
// pixel_box: the rest is never read); ccd.region says where they sit.
inline PreprocImage read_preproc(const std::string& path,
                                 std::uint32_t mask_bits = kDefaultMaskBits,
                                 const extract::PixelBox& box = {}) {
  FitsFile file = FitsFile::open(path);
  PreprocImage out;
  out.path = path;
  std::vector<long> ccd_axes;
  auto read2d = [&](const char* name, auto element) {
    using T = decltype(element);
    file.move_to(name);
    const std::vector<long> axes = file.image_axes();
    if (axes.size() != 2) {
      file.fail(0, "expected a 2-D image, found " + std::to_string(axes.size()) + " axes");
    }
    if (axes[0] < 1 || axes[1] < 1)
      file.fail(0, "empty image: NAXIS1 (columns) = " + std::to_string(axes[0]) +
                       ", NAXIS2 (rows) = " + std::to_string(axes[1]));
    if (ccd_axes.empty()) ccd_axes = axes;
    if (axes != ccd_axes) {
      file.fail(0, "shape " + std::to_string(axes[1]) + "x" + std::to_string(axes[0]) +
                       " differs from IMAGE's " + std::to_string(ccd_axes[1]) + "x" +
                       std::to_string(ccd_axes[0]));
    }
    return box.empty() ? file.read_image<T>()
                       : file.read_image_section<T>({box.col0, box.row0}, {box.col1, box.row1});
  };
  auto image = read2d("IMAGE", double{});
  auto ivar = read2d("IVAR", double{});
  std::vector<std::int64_t> mask;
  if (file.has_hdu("MASK")) {
    mask = read2d("MASK", std::int64_t{}).data;
  } else {
    out.warnings.push_back("image " + path +
                           " has no MASK HDU: only IVAR = 0 marks bad pixels (none of the CCD "
                           "mask bits apply)");
  }
  out.has_fibermap = file.has_hdu("FIBERMAP");

  out.ccd.ncols = static_cast<int>(image.axes[0]);
  out.ccd.nrows = static_cast<int>(image.axes[1]);
  if (!box.empty())
    out.ccd.region = {box.row0, box.col0, static_cast<int>(ccd_axes[1]),
                      static_cast<int>(ccd_axes[0])};
  out.ccd.pixels = std::move(image.data);
  out.ccd.ivar = std::move(ivar.data);
  auto& pix = out.ccd.pixels;
  auto& iv = out.ccd.ivar;
  for (std::size_t n = 0; n < pix.size(); ++n) {
    if (!std::isfinite(pix[n]) || !std::isfinite(iv[n])) {
      pix[n] = 0;
      iv[n] = 0;
      ++out.nonfinite_pixels;
    } else if (iv[n] < 0) {
      file.move_to("IVAR");
      file.fail(0, "negative inverse variance " + std::to_string(iv[n]) + " at row " +
                       std::to_string(out.ccd.region.row0 + n / out.ccd.ncols) + ", column " +
                       std::to_string(out.ccd.region.col0 + n % out.ccd.ncols));
    }
    if (!mask.empty() && (static_cast<std::uint64_t>(mask[n]) & mask_bits) != 0) {
      iv[n] = 0;
      ++out.masked_pixels;
    }
  }
  return out;
}

// Writes IMAGE (primary, float32), IVAR (float32) and MASK (int32; zeros when mask is empty).
inline void write_preproc(const std::string& path, const extract::CcdImage& img,
                          const std::vector<std::int32_t>& mask) {
  const std::size_t n = static_cast<std::size_t>(img.nrows) * static_cast<std::size_t>(img.ncols);
  if (img.nrows <= 0 || img.ncols <= 0 || img.pixels.size() != n || img.ivar.size() != n ||
      (!mask.empty() && mask.size() != n)) {
    throw Error("write_preproc '" + path + "': inconsistent image (" + std::to_string(img.nrows) +
                " x " + std::to_string(img.ncols) + ", " + std::to_string(img.pixels.size()) +
                " pixels, " + std::to_string(img.ivar.size()) + " ivar, " +
                std::to_string(mask.size()) + " mask values)");
  }
  const std::vector<long> axes{img.ncols, img.nrows};
  FitsFile file = FitsFile::create(path);
  file.write_image<float>("IMAGE", axes, std::vector<float>(img.pixels.begin(), img.pixels.end()));
  file.write_key("BUNIT", "electron");
  file.write_image<float>("IVAR", axes, std::vector<float>(img.ivar.begin(), img.ivar.end()));
  if (mask.empty()) {
    file.write_image<std::int32_t>("MASK", axes, std::vector<std::int32_t>(n, 0));
  } else {
    file.write_image<std::int32_t>("MASK", axes, mask);
  }
  file.close();
}

}  // namespace io
}  // namespace perfex
