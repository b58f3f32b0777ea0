#pragma once
// PSF files of every format perfex reads: read_psf, and write_psf of each format.
#include <perfex/psf/gauss_hermite/read.hpp>
