#include "fuzz_readers.hpp"

#include <perfex/error.hpp>
#include <perfex/io/frame_fits.hpp>
#include <perfex/io/image_fits.hpp>
#include <perfex/io/psf_files.hpp>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include <unistd.h>

namespace perfex_fuzz {
namespace {

unsigned accepted = 0;

const std::string& input_path() {
  static const std::string path = [] {
    const char* dir = std::getenv("TMPDIR");
    return std::string(dir && *dir ? dir : "/tmp") + "/perfex-fuzz-" + std::to_string(getpid()) +
           ".fits";
  }();
  return path;
}

template <class Read>
void read(unsigned bit, const char* what, Read&& f) {
  try {
    f(input_path());
    accepted |= bit;
  } catch (const perfex::Error&) {
    // Rejected with a message: what every bad input must get.
  } catch (const std::exception& e) {
    std::fprintf(stderr, "perfex fuzz: %s threw a non-perfex exception: %s (input kept in %s)\n",
                 what, e.what(), input_path().c_str());
    std::abort();
  }
}

}  // namespace

unsigned last_accepted() { return accepted; }

}  // namespace perfex_fuzz

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace perfex_fuzz;
  std::FILE* f = std::fopen(input_path().c_str(), "wb");
  if (!f) std::abort();
  if (size > 0 && std::fwrite(data, 1, size, f) != size) std::abort();
  std::fclose(f);
  accepted = 0;
  read(1, "read_psf", [](const std::string& p) { perfex::io::read_psf(p); });
  read(2, "read_preproc", [](const std::string& p) { perfex::io::read_preproc(p); });
  read(4, "read_frame", [](const std::string& p) { perfex::io::read_frame(p); });
  std::remove(input_path().c_str());
  return 0;
}
