#pragma once
#include <stdexcept>
#include <string>

namespace perfex {

// Every error perfex reports on the host: the message names the file, HDU, keyword or
// parameter at fault.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

// A request refused before any work: an option value out of range, an output that must not
// be written, fibres or wavelengths beyond the PSF, a run larger than the machine. The tools
// exit with status 2 for these (1 for other errors: unreadable or invalid inputs, I/O).
class RequestError : public Error {
 public:
  explicit RequestError(const std::string& what) : Error(what) {}
};

}  // namespace perfex
