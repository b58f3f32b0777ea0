#pragma once
// The FITS readers' fuzz target (libFuzzer's entry point, also driven by mutate_main.cpp):
// the bytes become a file that read_psf, read_preproc and read_frame each read. Each must
// return or throw perfex::Error; any other exception aborts (a crash, a leak or undefined
// behaviour is the sanitizers' to report).
#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace perfex_fuzz {

// What the readers made of the last input: bit r set when reader r (PSF, preproc, frame)
// accepted it.
unsigned last_accepted();

}  // namespace perfex_fuzz
