#pragma once
// A per-test temporary folder, removed at the end, and raw CFITSIO edits of test files.
#include <fitsio.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <string>

namespace perfex_io_test {

class TempDir {
 public:
  TempDir() {
    static std::atomic<int> counter{0};
    dir_ = std::filesystem::temp_directory_path() /
           ("perfex-io-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    std::filesystem::create_directories(dir_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string file(const std::string& name) const { return (dir_ / name).string(); }

 private:
  std::filesystem::path dir_;
};

// Runs f(fptr, status) on the HDU named extname of an existing file opened read-write with
// CFITSIO itself: for damaging files in ways perfex::io::FitsFile deliberately does not offer.
template <class F>
void edit_with_cfitsio(const std::string& path, const std::string& extname, F&& f) {
  fitsfile* fptr = nullptr;
  int status = 0;
  fits_open_file(&fptr, path.c_str(), READWRITE, &status);
  fits_movnam_hdu(fptr, ANY_HDU, const_cast<char*>(extname.c_str()), 0, &status);
  f(fptr, status);
  if (fptr) fits_close_file(fptr, &status);
  REQUIRE(status == 0);
}

}  // namespace perfex_io_test
