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

}  // namespace perfex
