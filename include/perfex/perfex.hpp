#pragma once
// Umbrella header: the device-side library (PSF model, linear algebra, extraction).
// The FITS layer is separate: include <perfex/io/...> and link perfex::io.
#include <perfex/config.hpp>
#include <perfex/detail/kokkos_compat.hpp>
#include <perfex/error.hpp>
#include <perfex/extract/extract_frame.hpp>
#include <perfex/extract/simulate.hpp>
#include <perfex/linalg/batched.hpp>
#include <perfex/psf/synthetic.hpp>
