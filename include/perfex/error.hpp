#pragma once
#include <new>
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

// Runs f(); an allocation failure (std::bad_alloc, Kokkos' allocation error) becomes a
// perfex::Error "out of memory while <what>".
template <class F>
decltype(auto) while_doing(const std::string& what, F&& f) {
  try {
    return f();
  } catch (const Error&) {
    throw;
  } catch (const std::bad_alloc&) {
    throw Error("out of memory while " + what);
  } catch (const std::runtime_error& e) {
    // Kokkos 3.4 reports a failed View allocation as a runtime_error with a call stack.
    const std::string m = e.what();
    if (m.find("allocation fail") == std::string::npos &&
        m.find("Allocation fail") == std::string::npos &&
        m.find("failed to allocate") == std::string::npos)
      throw;
    throw Error("out of memory while " + what + " (" + m.substr(0, m.find('\n')) + ")");
  }
}

}  // namespace perfex
