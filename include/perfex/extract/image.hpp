#pragma once
#include <vector>

namespace perfex {
namespace extract {

// A CCD image on the host as the extraction sees it (spec §1.7): pixel values and inverse
// variances, row-major [nrows][ncols]; ivar 0 marks a masked pixel.
struct CcdImage {
  int nrows = 0;
  int ncols = 0;
  std::vector<double> pixels;
  std::vector<double> ivar;
};

}  // namespace extract
}  // namespace perfex
