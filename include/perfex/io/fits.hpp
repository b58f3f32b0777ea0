#pragma once
// Host-only RAII wrapper over CFITSIO (perfex::io): the only place perfex calls CFITSIO.
//
// A FitsFile owns one open fitsfile*. Every CFITSIO failure becomes a perfex::Error whose
// message names the file, the current HDU (by EXTNAME, else its number), the keyword or
// column involved, and CFITSIO's own status text. HDUs are addressed by EXTNAME; the
// destructor closes the file and never throws (call close() to see a flush error).
// Output files are written through io::write_atomically (output_file.hpp).
//
// Image axes are given in FITS order: axes[0] = NAXIS1 (the fastest, i.e. the column index of
// a row-major [NAXIS2][NAXIS1] C array).
#include <fitsio.h>
#include <zlib.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <perfex/detail/host_pages.hpp>
#include <perfex/error.hpp>
#include <perfex/io/output_file.hpp>

namespace perfex {
namespace io {

enum class HduType { image, ascii_table, binary_table };

// An image HDU's pixels (row-major, NAXIS1 fastest) and its axes (NAXIS1 first).
template <class T>
struct ImageData {
  std::vector<long> axes;
  std::vector<T> data;
};

// A binary-table column to create: name, TFORM ("8A", "2000D", "J", "K", "E"), optional
// unit and optional TDIM (FITS order, fastest first).
struct ColumnSpec {
  std::string name;
  std::string tform;
  std::string unit;
  std::vector<long> tdim;
};

namespace detail {

// CFITSIO datatype code and image BITPIX of a C++ element type.
template <class T>
struct FitsType;
template <>
struct FitsType<double> {
  static constexpr int datatype = TDOUBLE, bitpix = DOUBLE_IMG;
};
template <>
struct FitsType<float> {
  static constexpr int datatype = TFLOAT, bitpix = FLOAT_IMG;
};
template <>
struct FitsType<std::int16_t> {
  static constexpr int datatype = TSHORT, bitpix = SHORT_IMG;
};
template <>
struct FitsType<std::uint8_t> {
  static constexpr int datatype = TBYTE, bitpix = BYTE_IMG;
};
template <>
struct FitsType<std::uint16_t> {
  static constexpr int datatype = TUSHORT, bitpix = USHORT_IMG;
};
template <>
struct FitsType<std::int32_t> {
  static_assert(sizeof(int) == 4, "perfex::io assumes a 32-bit int");
  static constexpr int datatype = TINT, bitpix = LONG_IMG;
};
template <>
struct FitsType<std::uint32_t> {
  static constexpr int datatype = TUINT, bitpix = ULONG_IMG;
};
// std::int64_t is long (LP64) or long long: both are covered.
template <>
struct FitsType<long> {
  static constexpr int datatype = TLONG, bitpix = sizeof(long) == 8 ? LONGLONG_IMG : LONG_IMG;
};
template <>
struct FitsType<long long> {
  static constexpr int datatype = TLONGLONG, bitpix = LONGLONG_IMG;
};

// ": no space left on device" and the like for the errno of a failed write or create, when it
// is one of the reasons a write fails for ("" for any other value, which may be stale).
inline std::string system_reason(int error) {
  switch (error) {
    case ENOSPC:
    case EDQUOT:
    case EFBIG:
    case EIO:
    case EROFS:
    case EACCES:
    case EMFILE:
    case ENFILE:
      return std::string(" (") + std::strerror(error) + ")";
    default:
      return "";
  }
}

inline std::string status_text(int status) {
  char text[FLEN_STATUS] = {0};
  fits_get_errstatus(status, text);
  std::string s = text;
  // The first message of CFITSIO's error stack often says more (e.g. which file failed).
  char msg[FLEN_ERRMSG] = {0};
  if (fits_read_errmsg(msg) && msg[0] != '\0') {
    std::string m = msg;
    if (m != s) s += " (" + m + ")";
  }
  fits_clear_errmsg();
  return s + " [CFITSIO status " + std::to_string(status) + "]";
}

inline long long element_count(const std::vector<long>& axes) {
  long long n = axes.empty() ? 0 : 1;
  for (long a : axes) n *= a;
  return n;
}

// The value field of a header card (columns 11-80 up to a comment), blanks trimmed.
inline std::string card_value(const char* card) {
  std::string v(card + 10, 70);
  if (!v.empty() && v.find_first_not_of(' ') != std::string::npos &&
      v[v.find_first_not_of(' ')] != '\'') {
    const auto slash = v.find('/');
    if (slash != std::string::npos) v.resize(slash);
  }
  const auto first = v.find_first_not_of(' ');
  if (first == std::string::npos) return "";
  v = v.substr(first);
  while (!v.empty() && v.back() == ' ') v.pop_back();
  return v;
}

// Refuses what CFITSIO would hang on or misread: standard input ("-", which CFITSIO reads
// once, where perfex may open a file more than once), a FIFO or a pipe (/dev/stdin from a
// pipe: opening a FIFO waits for a writer; a pipe cannot seek), a socket or a device.
inline void check_readable_file(const std::string& path) {
  if (path == "-")
    throw Error(
        "FITS file '-': standard input is not read (perfex may open an input more than "
        "once); save the stream to a file and name it");
  struct stat st {};
  if (stat(path.c_str(), &st) != 0 || S_ISREG(st.st_mode) || S_ISDIR(st.st_mode)) return;
  const char* kind = S_ISFIFO(st.st_mode)   ? "a pipe (FIFO)"
                     : S_ISSOCK(st.st_mode) ? "a socket"
                     : S_ISCHR(st.st_mode)  ? "a character device"
                     : S_ISBLK(st.st_mode)  ? "a block device"
                                            : "not a regular file";
  throw Error("FITS file '" + path + "': is " + kind +
              "; perfex reads FITS files from regular files (it may open one more than once): "
              "save the stream to a file and name it");
}

// Walks the headers of a FITS file (plain or gzip) before CFITSIO parses them and refuses the
// structural values that make CFITSIO 4.2 hang or crash instead of reporting an error: a
// negative or non-integer BITPIX/NAXIS/NAXISn/PCOUNT/GCOUNT (GCOUNT -32 loops forever) and, in
// tile-compressed images, a ZNAXISn or ZTILEn that is not a positive integer (ZTILE2 = 0.5
// divides by zero). Anything else (truncation, missing END, ...) is left to CFITSIO's errors.
// A directory, an empty file and a file that does not begin with a SIMPLE card (nor with the
// magic number of a compression CFITSIO reads) are refused as not FITS files.
// `file`: the name to open it by (an InputFile's reopen_name), when not `path`.
inline void check_header_structure(const std::string& path, const std::string& file = "") {
  const std::string& name = file.empty() ? path : file;
  struct stat st {};
  if (stat(name.c_str(), &st) != 0) return;  // CFITSIO's call (a missing file, "f.fits[1]")
  if (S_ISDIR(st.st_mode)) throw Error("FITS file '" + path + "': is a directory, not a FITS file");
  gzFile in = gzopen(name.c_str(), "rb");
  if (!in) return;  // CFITSIO reports it
  struct Closer {
    gzFile f;
    ~Closer() { gzclose(f); }
  } closer{in};
  char block[2880];
  const int first = gzread(in, block, 8);
  if (first == 0) throw Error("FITS file '" + path + "': the file is empty, not a FITS file");
  const auto starts = [&](const char* magic, int n) {
    return first >= n && std::memcmp(block, magic, static_cast<std::size_t>(n)) == 0;
  };
  // .Z (compress), pkzip and bzip2 files: CFITSIO's own readers.
  if (starts("\x1f\x9d", 2) || starts("PK\x03\x04", 4) || starts("BZh", 3)) return;
  if (!starts("SIMPLE  ", 8))
    throw Error("FITS file '" + path + "': not a FITS file (it does not begin with a SIMPLE card)");
  if (gzrewind(in) != 0) return;
  long long offset = 0;
  for (int hdu = 0; hdu < 100000; ++hdu) {
    long long bitpix = 0, naxis = 0, pcount = 0, gcount = 1, values = 1;
    bool zimage = false, end = false, first_card = true;
    auto fail = [&](const std::string& key, const std::string& value) {
      throw Error("FITS file '" + path + "', HDU " + std::to_string(hdu) + ": keyword '" + key +
                  "' = " + value + " is invalid (damaged header)");
    };
    while (!end) {
      if (gzread(in, block, sizeof(block)) != static_cast<int>(sizeof(block))) return;
      offset += sizeof(block);
      for (int c = 0; c < 36 && !end; ++c) {
        const char* card = block + 80 * c;
        std::string key(card, 8);
        while (!key.empty() && key.back() == ' ') key.pop_back();
        if (first_card) {
          if (key != "SIMPLE" && key != "XTENSION") return;  // not a header: CFITSIO's call
          first_card = false;
        }
        if (key == "END") {
          end = true;
          break;
        }
        if (card[8] != '=') continue;
        const std::string v = card_value(card);
        auto integer = [&](long long lo) {
          char* e = nullptr;
          errno = 0;
          const long long x = std::strtoll(v.c_str(), &e, 10);
          if (v.empty() || *e != '\0' || errno == ERANGE || x < lo) fail(key, v);
          return x;
        };
        if (key == "BITPIX") {
          bitpix = integer(-64);
          if (bitpix != 8 && bitpix != 16 && bitpix != 32 && bitpix != 64 && bitpix != -32 &&
              bitpix != -64)
            fail(key, v);
        } else if (key == "NAXIS") {
          naxis = integer(0);
          if (naxis > 999) fail(key, v);
        } else if (key.size() > 5 && key.compare(0, 5, "NAXIS") == 0) {
          const long long n = integer(0);
          values = n > 0 && values > (1LL << 62) / n ? (1LL << 62) : values * n;
        } else if (key == "PCOUNT") {
          pcount = integer(0);
        } else if (key == "GCOUNT") {
          gcount = integer(0);
        } else if (key == "ZIMAGE") {
          zimage = v == "T";
        } else if (zimage && (key.compare(0, 5, "ZTILE") == 0 ||
                              (key.compare(0, 6, "ZNAXIS") == 0 && key.size() > 6))) {
          integer(1);
        } else if (zimage && key == "ZNAXIS") {
          if (integer(0) > 999) fail(key, v);
        }
      }
    }
    if (naxis == 0) values = 0;
    const long double bytes = static_cast<long double>(bitpix < 0 ? -bitpix : bitpix) / 8 * gcount *
                              (static_cast<long double>(pcount) + static_cast<long double>(values));
    const long double padded = std::ceil(bytes / 2880) * 2880;
    if (padded > 1e15) return;  // beyond any file: CFITSIO reports the truncation
    offset += static_cast<long long>(padded);
    if (gzseek(in, offset, SEEK_SET) != offset) return;
  }
}

// A FITS file to read, opened once by its name: the header checks and CFITSIO then read this one
// file, through the descriptor's own name (/proc/self/fd/N), even while a writer renames a new
// version over the name (else each would open the name again and might meet another version).
// Only a regular file is held; anything else (missing, a folder, a FIFO, "f.fits[1]", no /proc)
// is left to the readers by name, whose messages say what it is.
class InputFile {
 public:
  explicit InputFile(const std::string& path) {
    if (path == "-") return;
    // O_NONBLOCK: a FIFO swapped in after check_readable_file must not block the open.
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    struct stat st {};
    if (fd_ >= 0 && (fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode))) release();
    if (fd_ >= 0) name_ = descriptor_name(fd_);
    if (name_.empty()) release();
  }
  ~InputFile() { release(); }
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;
  // The file open as descriptor `fd` by name: "" where the system gives it none.
  static std::string descriptor_name(int fd) {
    const std::string name = "/proc/self/fd/" + std::to_string(fd);
    return ::access(name.c_str(), F_OK) == 0 ? name : "";
  }
  // The name that opens this very file again ("" when none is held).
  const std::string& reopen_name() const { return name_; }

 private:
  void release() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
    name_.clear();
  }
  int fd_ = -1;
  std::string name_;
};

}  // namespace detail

class FitsFile {
 public:
  enum class Mode { read, readwrite, create };

  FitsFile() = default;
  // read / readwrite: open an existing file (compressed .gz files are read transparently).
  // create: create a new file, replacing any existing one.
  FitsFile(const std::string& path, Mode mode) : path_(path) {
    int status = 0;
    if (mode == Mode::create) {
      // Overwrite semantics without CFITSIO's '!' syntax; a temporary of write_atomically is
      // re-created here, so this is one of its creation steps (output_file.hpp).
      const output_detail::TemporaryCreation creating;
      std::remove(path.c_str());
      fits_create_diskfile(&fptr_, path.c_str(), &status);
      if (status) fail(status, "cannot create FITS file");
    } else if (mode == Mode::read) {
      detail::check_readable_file(path);
      // Held while open: CFITSIO takes a name it already has open for that file.
      input_ = std::make_unique<detail::InputFile>(path);
      open_existing(input_->reopen_name(), READONLY);
    } else {
      detail::check_readable_file(path);
      open_existing("", READWRITE);
    }
  }
  // The file a caller holds open as descriptor fd (the caller's, open while this is), read only,
  // named path in messages: for a caller that reads it too (the gpu_specter drop-in's astropy
  // reader), so that both read one file whatever a writer renames over the name meanwhile.
  FitsFile(const std::string& path, int fd) : path_(path) {
    open_existing(detail::InputFile::descriptor_name(fd), READONLY);
  }
  static FitsFile open(const std::string& path) { return FitsFile(path, Mode::read); }
  static FitsFile open_readwrite(const std::string& path) {
    return FitsFile(path, Mode::readwrite);
  }
  static FitsFile create(const std::string& path) { return FitsFile(path, Mode::create); }

  ~FitsFile() { close_quietly(); }
  FitsFile(const FitsFile&) = delete;
  FitsFile& operator=(const FitsFile&) = delete;
  FitsFile(FitsFile&& o) noexcept
      : fptr_(o.fptr_),
        path_(std::move(o.path_)),
        input_(std::move(o.input_)),
        via_(std::move(o.via_)) {
    o.fptr_ = nullptr;
  }
  FitsFile& operator=(FitsFile&& o) noexcept {
    if (this != &o) {
      close_quietly();
      fptr_ = o.fptr_;
      path_ = std::move(o.path_);
      input_ = std::move(o.input_);
      via_ = std::move(o.via_);
      o.fptr_ = nullptr;
    }
    return *this;
  }

  // Closes now, reporting a flush error as perfex::Error.
  void close() {
    if (!fptr_) return;
    int status = 0;
    fits_close_file(fptr_, &status);
    fptr_ = nullptr;
    input_.reset();
    if (status)
      throw Error("FITS file '" + path_ + "': error while closing: " + detail::status_text(status));
  }

  bool is_open() const { return fptr_ != nullptr; }
  const std::string& path() const { return path_; }

  // ---- HDUs -------------------------------------------------------------------------------
  int num_hdus() const {
    int n = 0, status = 0;
    fits_get_num_hdus(handle_checked(), &n, &status);
    if (status) fail(status, "cannot count HDUs");
    return n;
  }
  // 0-based index of the current HDU.
  int hdu_index() const {
    int n = 0;
    fits_get_hdu_num(handle_checked(), &n);
    return n - 1;
  }
  void move_to_index(int index0) {
    int status = 0, type = 0;
    fits_movabs_hdu(handle_checked(), index0 + 1, &type, &status);
    if (status) fail(status, "cannot move to HDU " + std::to_string(index0));
  }
  // Whether an HDU with this EXTNAME exists (the current HDU does not change).
  bool has_hdu(const std::string& extname) {
    int status = 0;
    const int here = hdu_index();
    fits_movnam_hdu(handle_checked(), ANY_HDU, const_cast<char*>(extname.c_str()), 0, &status);
    const bool found = status == 0;
    fits_clear_errmsg();
    int s2 = 0, type = 0;  // stay on the current HDU
    fits_movabs_hdu(fptr_, here + 1, &type, &s2);
    return found;
  }
  // Moves to the HDU whose EXTNAME (or HDUNAME) is extname; throws naming the file, the HDU and
  // the HDUs the file has.
  void move_to(const std::string& extname) {
    int status = 0;
    fits_movnam_hdu(handle_checked(), ANY_HDU, const_cast<char*>(extname.c_str()), 0, &status);
    if (status) {
      fits_clear_errmsg();
      std::string names;
      int n = 0, s = 0, type = 0;
      fits_get_num_hdus(fptr_, &n, &s);
      for (int i = 0; s == 0 && i < std::min(n, 20); ++i) {
        fits_movabs_hdu(fptr_, i + 1, &type, &s);
        const std::string label = hdu_label();  // "HDU 'NAME'" or "HDU n"
        if (s == 0)
          names += (names.empty() ? "" : ", ") + (label == "HDU 0" ? "primary" : label.substr(4));
      }
      fits_clear_errmsg();
      throw Error("FITS file '" + path_ + "': no HDU with EXTNAME '" + extname + "'" +
                  (names.empty() ? "" : " (its HDUs: " + names + (n > 20 ? ", ..." : "") + ")"));
    }
  }
  HduType hdu_type() const {
    int status = 0, type = 0;
    fits_get_hdu_type(handle_checked(), &type, &status);
    if (status) fail(status, "cannot get HDU type");
    return type == IMAGE_HDU ? HduType::image
                             : (type == ASCII_TBL ? HduType::ascii_table : HduType::binary_table);
  }
  // "HDU 'NAME'" or "HDU n" for messages.
  std::string hdu_label() const {
    if (!fptr_) return "no HDU";
    char value[FLEN_VALUE] = {0};
    int status = 0;
    fits_read_key(fptr_, TSTRING, "EXTNAME", value, nullptr, &status);
    fits_clear_errmsg();
    if (status == 0 && value[0] != '\0') return "HDU '" + std::string(value) + "'";
    return "HDU " + std::to_string(hdu_index());
  }

  // ---- keywords ---------------------------------------------------------------------------
  // Supported T: double, float, int, long, long long, bool, std::string.
  template <class T>
  std::optional<T> read_key_optional(const std::string& name) const {
    T value{};
    if (read_key(name, value)) return value;
    return std::nullopt;
  }
  template <class T>
  T read_key(const std::string& name) const {
    T value{};
    if (!read_key(name, value)) {
      throw Error("FITS file '" + path_ + "', " + hdu_label() + ": missing keyword '" + name + "'");
    }
    return value;
  }
  // Returns false when the keyword is absent; throws when present but not convertible.
  bool read_key(const std::string& name, std::string& out) const {
    char value[FLEN_VALUE] = {0};
    int status = 0;
    fits_read_key(handle_checked(), TSTRING, name.c_str(), value, nullptr, &status);
    if (status == KEY_NO_EXIST) return absent();
    if (status) fail_key(status, name);
    out = value;
    return true;
  }
  // Numbers and logicals are converted by perfex from the card's text, not by CFITSIO, whose
  // conversions overflow a buffer on some damaged values (CFITSIO 4.2, e.g. "( 0").
  bool read_key(const std::string& name, bool& out) const {
    std::string v;
    if (!read_key_text(name, v)) return false;
    if (v != "T" && v != "F") fail_key(0, name, "'" + v + "' is not a logical (T or F)");
    out = v == "T";
    return true;
  }
  template <class T,
            class = std::enable_if_t<std::is_arithmetic<T>::value && !std::is_same<T, bool>::value>>
  bool read_key(const std::string& name, T& out) const {
    std::string v;
    if (!read_key_text(name, v)) return false;
    // FITS allows a D exponent; a quoted number reads as CFITSIO reads it.
    if (v.size() >= 2 && v.front() == '\'' && v.back() == '\'') {
      v = v.substr(1, v.size() - 2);
      while (!v.empty() && v.back() == ' ') v.pop_back();
    }
    for (char& c : v)
      if (c == 'D' || c == 'd') c = 'E';
    const char* s = v.c_str();
    char* end = nullptr;
    errno = 0;
    if (std::is_floating_point<T>::value) {
      const double d = std::strtod(s, &end);
      if (v.empty() || *end != '\0' || errno == ERANGE)
        fail_key(0, name, "'" + v + "' is not a number");
      out = static_cast<T>(d);
      return true;
    }
    const long long i = std::strtoll(s, &end, 10);
    if (!v.empty() && *end == '\0' && errno != ERANGE && i >= std::numeric_limits<T>::min() &&
        i <= std::numeric_limits<T>::max()) {
      out = static_cast<T>(i);
      return true;
    }
    // An integer written as a real ("3.0", "1E3"), as CFITSIO accepts it.
    errno = 0;
    const double d = std::strtod(s, &end);
    if (v.empty() || *end != '\0' || errno == ERANGE || !(d == std::floor(d)) ||
        !(d >= static_cast<double>(std::numeric_limits<T>::min())) ||
        !(d < static_cast<double>(std::numeric_limits<T>::max()) + 1.0))  // 2^63 overflows
      fail_key(0, name, "'" + v + "' is not an integer in range");
    out = static_cast<T>(d);
    return true;
  }

  // Doubles are written with 17 significant digits, so they read back bit for bit.
  void write_key(const std::string& name, double value, const std::string& comment = "") {
    int status = 0;
    fits_update_key_dbl(handle_checked(), name.c_str(), value, -17, cstr_or_null(comment), &status);
    if (status) fail_key(status, name);
  }
  void write_key(const std::string& name, long long value, const std::string& comment = "") {
    int status = 0;
    LONGLONG v = value;
    fits_update_key(handle_checked(), TLONGLONG, name.c_str(), &v, cstr_or_null(comment), &status);
    if (status) fail_key(status, name);
  }
  void write_key(const std::string& name, long value, const std::string& comment = "") {
    write_key(name, static_cast<long long>(value), comment);
  }
  void write_key(const std::string& name, int value, const std::string& comment = "") {
    write_key(name, static_cast<long long>(value), comment);
  }
  void write_key(const std::string& name, bool value, const std::string& comment = "") {
    int status = 0;
    int v = value ? 1 : 0;
    fits_update_key(handle_checked(), TLOGICAL, name.c_str(), &v, cstr_or_null(comment), &status);
    if (status) fail_key(status, name);
  }
  void write_key(const std::string& name, const std::string& value,
                 const std::string& comment = "") {
    int status = 0;
    fits_update_key(handle_checked(), TSTRING, name.c_str(), const_cast<char*>(value.c_str()),
                    cstr_or_null(comment), &status);
    if (status) fail_key(status, name);
  }
  void write_key(const std::string& name, const char* value, const std::string& comment = "") {
    write_key(name, std::string(value), comment);
  }
  // A string of any length (CFITSIO's long-string convention beyond 68 characters).
  void write_long_string_key(const std::string& name, const std::string& value,
                             const std::string& comment = "") {
    int status = 0;
    fits_update_key_longstr(handle_checked(), name.c_str(), value.c_str(), cstr_or_null(comment),
                            &status);
    if (status) fail_key(status, name);
  }
  // CHECKSUM and DATASUM of the current HDU (write them last).
  void write_checksum() {
    int status = 0;
    fits_write_chksum(handle_checked(), &status);
    if (status) fail(status, "cannot write CHECKSUM/DATASUM");
  }
  // A COMMENT card (long texts continue on further cards).
  void write_comment(const std::string& text) {
    int status = 0;
    fits_write_comment(handle_checked(), text.c_str(), &status);
    if (status) fail(status, "cannot write COMMENT");
  }
  void delete_key(const std::string& name) {
    int status = 0;
    fits_delete_key(handle_checked(), name.c_str(), &status);
    if (status == KEY_NO_EXIST) {
      fits_clear_errmsg();
      return;
    }
    if (status) fail_key(status, name);
  }
  // Copies the descriptive cards of src's current HDU into this file's current HDU (appended):
  // everything except structural/compression/scaling/null/TDIM/TDISP/TUNIT cards, EXTNAME
  // and the other HDU-identity keywords, CHECKSUM and DATASUM.
  void copy_header_cards_from(const FitsFile& src) {
    int status = 0, nkeys = 0, more = 0;
    fits_get_hdrspace(src.handle_checked(), &nkeys, &more, &status);
    if (status) src.fail(status, "cannot read header size");
    char card[FLEN_CARD];
    for (int i = 1; i <= nkeys; ++i) {
      fits_read_record(src.fptr_, i, card, &status);
      if (status) src.fail(status, "cannot read header card " + std::to_string(i));
      const int cls = fits_get_keyclass(card);
      const std::string c(card);
      if (cls == TYP_STRUC_KEY || cls == TYP_CMPRS_KEY || cls == TYP_SCAL_KEY ||
          cls == TYP_NULL_KEY || cls == TYP_DIM_KEY || cls == TYP_DISP_KEY ||
          cls == TYP_CKSUM_KEY || cls == TYP_HDUID_KEY ||
          (cls == TYP_UNIT_KEY && c.compare(0, 5, "TUNIT") == 0) ||
          c.compare(0, 8, "END     ") == 0) {
        continue;
      }
      fits_write_record(fptr_, card, &status);
      if (status) fail(status, "cannot write header card '" + c.substr(0, 8) + "'");
    }
  }

  // ---- images -----------------------------------------------------------------------------
  std::vector<long> image_axes() const {
    int status = 0, bitpix = 0, naxis = 0;
    long axes[9] = {0};
    fits_get_img_param(handle_checked(), 9, &bitpix, &naxis, axes, &status);
    if (status) fail(status, "cannot read image dimensions");
    return std::vector<long>(axes, axes + naxis);
  }
  // Reads the whole current image HDU converted to T (NaN stays NaN; BSCALE/BZERO applied).
  template <class T>
  ImageData<T> read_image() const {
    check_image_hdu();
    ImageData<T> img;
    img.axes = image_axes();
    long double values = img.axes.empty() ? 0 : 1;
    for (long a : img.axes) values *= a;
    check_data_in_file(values * std::abs(image_bitpix()) / 8, "image data");
    const long long n = static_cast<long long>(values);
    img.data.assign(static_cast<std::size_t>(n), T{});
    if (n > 0) {
      int status = 0, anynul = 0;
      fits_read_img(fptr_, detail::FitsType<T>::datatype, 1, n, nullptr, img.data.data(), &anynul,
                    &status);
      if (status) fail(status, "cannot read image data");
    }
    return img;
  }
  // Reads the box [begin, end) of the current image HDU (0-based, one bound per axis, NAXIS1
  // first, like `axes`), converted to T; the result's axes are end - begin.
  template <class T>
  ImageData<T> read_image_section(const std::vector<long>& begin,
                                  const std::vector<long>& end) const {
    check_image_hdu();
    const std::vector<long> axes = image_axes();
    ImageData<T> img;
    std::vector<long> first, last, step(axes.size(), 1);
    bool ok = begin.size() == axes.size() && end.size() == axes.size() && !axes.empty();
    for (std::size_t a = 0; ok && a < axes.size(); ++a) {
      ok = begin[a] >= 0 && begin[a] < end[a] && end[a] <= axes[a];
      img.axes.push_back(end[a] - begin[a]);
      first.push_back(begin[a] + 1);  // CFITSIO: 1-based, inclusive
      last.push_back(end[a]);
    }
    if (!ok) {
      auto text = [](const std::vector<long>& v) {
        std::string t;
        for (long x : v) t += (t.empty() ? "" : ",") + std::to_string(x);
        return "(" + t + ")";
      };
      fail(0, "image section " + text(begin) + " to " + text(end) + " is not inside the axes " +
                  text(axes));
    }
    long double values = 1;
    for (long a : axes) values *= a;
    check_data_in_file(values * std::abs(image_bitpix()) / 8, "image data");
    perfex::detail::assign_advised(img.data,
                                   static_cast<std::size_t>(detail::element_count(img.axes)), T{});
    int status = 0, anynul = 0;
    fits_read_subset(fptr_, detail::FitsType<T>::datatype, first.data(), last.data(), step.data(),
                     nullptr, img.data.data(), &anynul, &status);
    if (status) fail(status, "cannot read image section");
    return img;
  }
  template <class T>
  ImageData<T> read_image(const std::string& extname) {
    move_to(extname);
    return read_image<T>();
  }
  // Appends an image HDU (the primary HDU when the file is empty) of BITPIX chosen by T,
  // with the given axes (NAXIS1 first) and EXTNAME (skipped when empty).
  template <class T>
  void write_image(const std::string& extname, const std::vector<long>& axes, const T* data) {
    int status = 0;
    std::vector<long> ax(axes);
    fits_create_img(handle_checked(), detail::FitsType<T>::bitpix, static_cast<int>(ax.size()),
                    ax.empty() ? nullptr : ax.data(), &status);
    if (status) fail(status, "cannot create image HDU '" + extname + "'");
    if (!extname.empty()) write_key("EXTNAME", extname);
    const long long n = detail::element_count(ax);
    if (n > 0) {
      fits_write_img(fptr_, detail::FitsType<T>::datatype, 1, n, const_cast<T*>(data), &status);
      if (status) fail(status, "cannot write image data of '" + extname + "'");
    }
  }
  template <class T>
  void write_image(const std::string& extname, const std::vector<long>& axes,
                   const std::vector<T>& data) {
    const long long n = detail::element_count(axes);
    if (static_cast<long long>(data.size()) != n) {
      throw Error("FITS file '" + path_ + "': image '" + extname + "' has " +
                  std::to_string(data.size()) + " values for " + std::to_string(n) + " pixels");
    }
    write_image(extname, axes, data.data());
  }

  // ---- binary tables ----------------------------------------------------------------------
  long num_rows() const {
    int status = 0;
    long n = 0;
    fits_get_num_rows(handle_checked(), &n, &status);
    if (status) fail(status, "cannot read the number of table rows");
    return n;
  }
  bool has_column(const std::string& name) const {
    int status = 0, col = 0;
    fits_get_colnum(handle_checked(), CASEINSEN, const_cast<char*>(name.c_str()), &col, &status);
    fits_clear_errmsg();
    return status == 0;
  }
  // 1-based column number; throws naming the column.
  int column_number(const std::string& name) const {
    int status = 0, col = 0;
    fits_get_colnum(handle_checked(), CASEINSEN, const_cast<char*>(name.c_str()), &col, &status);
    if (status) fail_column(status, name, "no such column");
    return col;
  }
  // Number of elements per cell (for strings: the width in characters).
  long column_repeat(const std::string& name) const {
    int status = 0, type = 0;
    long repeat = 0, width = 0;
    fits_get_coltype(fptr_, column_number(name), &type, &repeat, &width, &status);
    if (status) fail_column(status, name, "cannot get column type");
    return repeat;
  }
  // TDIM of a column (fastest first); {repeat} when TDIM is absent.
  std::vector<long> column_dims(const std::string& name) const {
    int status = 0, naxis = 0;
    long axes[9] = {0};
    fits_read_tdim(fptr_, column_number(name), 9, &naxis, axes, &status);
    if (status) fail_column(status, name, "cannot read TDIM");
    return std::vector<long>(axes, axes + naxis);
  }
  // All cells of a numeric column, row after row (nrows × repeat values).
  template <class T>
  std::vector<T> read_column(const std::string& name) const {
    check_table_in_file();
    const int col = column_number(name);
    const long nrows = num_rows();
    const long repeat = column_repeat(name);
    std::vector<T> out(static_cast<std::size_t>(nrows) * static_cast<std::size_t>(repeat));
    if (!out.empty()) {
      int status = 0, anynul = 0;
      fits_read_col(fptr_, detail::FitsType<T>::datatype, col, 1, 1,
                    static_cast<LONGLONG>(out.size()), nullptr, out.data(), &anynul, &status);
      if (status) fail_column(status, name, "cannot read column");
    }
    return out;
  }
  // A string column, trailing blanks stripped.
  std::vector<std::string> read_column_strings(const std::string& name) const {
    check_table_in_file();
    const int col = column_number(name);
    const long nrows = num_rows();
    int status = 0, type = 0;
    long repeat = 0, width = 0;
    fits_get_coltype(fptr_, col, &type, &repeat, &width, &status);
    if (status) fail_column(status, name, "cannot get column type");
    if (type != TSTRING) fail_column(0, name, "not a string column");
    const long w = repeat > 0 ? repeat : 1;
    std::vector<char> buffer(static_cast<std::size_t>(nrows) * static_cast<std::size_t>(w + 1),
                             '\0');
    std::vector<char*> ptrs(static_cast<std::size_t>(nrows));
    for (long r = 0; r < nrows; ++r) ptrs[r] = buffer.data() + r * (w + 1);
    std::vector<std::string> out;
    if (nrows == 0) return out;
    int anynul = 0;
    fits_read_col(fptr_, TSTRING, col, 1, 1, nrows, nullptr, ptrs.data(), &anynul, &status);
    if (status) fail_column(status, name, "cannot read column");
    for (long r = 0; r < nrows; ++r) {
      std::string s(ptrs[r]);
      while (!s.empty() && s.back() == ' ') s.pop_back();
      out.push_back(s);
    }
    return out;
  }
  // Appends a binary table HDU with nrows rows and the given columns.
  void create_table(const std::string& extname, long nrows,
                    const std::vector<ColumnSpec>& columns) {
    std::vector<char*> ttype, tform, tunit;
    for (const auto& c : columns) {
      ttype.push_back(const_cast<char*>(c.name.c_str()));
      tform.push_back(const_cast<char*>(c.tform.c_str()));
      tunit.push_back(const_cast<char*>(c.unit.c_str()));
    }
    int status = 0;
    fits_create_tbl(handle_checked(), BINARY_TBL, nrows, static_cast<int>(columns.size()),
                    ttype.data(), tform.data(), tunit.data(),
                    extname.empty() ? nullptr : extname.c_str(), &status);
    if (status) fail(status, "cannot create binary table '" + extname + "'");
    for (std::size_t i = 0; i < columns.size(); ++i) {
      if (columns[i].tdim.empty()) continue;
      std::vector<long> dims(columns[i].tdim);
      fits_write_tdim(fptr_, static_cast<int>(i + 1), static_cast<int>(dims.size()), dims.data(),
                      &status);
      if (status) fail_column(status, columns[i].name, "cannot write TDIM");
    }
  }
  // Writes cells of a numeric column of the current table, row after row from first_row
  // (1-based; the default writes the whole column).
  template <class T>
  void write_column(const std::string& name, const std::vector<T>& values, long first_row = 1) {
    const int col = column_number(name);
    if (values.empty()) return;
    int status = 0;
    fits_write_col(fptr_, detail::FitsType<T>::datatype, col, first_row, 1,
                   static_cast<LONGLONG>(values.size()), const_cast<T*>(values.data()), &status);
    if (status) fail_column(status, name, "cannot write column");
  }
  void write_column_strings(const std::string& name, const std::vector<std::string>& values) {
    const int col = column_number(name);
    if (values.empty()) return;
    std::vector<char*> ptrs;
    for (const auto& s : values) ptrs.push_back(const_cast<char*>(s.c_str()));
    int status = 0;
    fits_write_col(fptr_, TSTRING, col, 1, 1, static_cast<LONGLONG>(ptrs.size()), ptrs.data(),
                   &status);
    if (status) fail_column(status, name, "cannot write column");
  }

  // ---- copying ----------------------------------------------------------------------------
  // Appends a copy of src's HDU named extname (header and data) to this file; src's current
  // HDU moves there. (E.g. the FIBERMAP pass-through.)
  void copy_hdu_from(FitsFile& src, const std::string& extname) {
    src.move_to(extname);
    int status = 0;
    fits_copy_hdu(src.handle_checked(), handle_checked(), 0, &status);
    if (status) {
      throw Error("FITS: cannot copy HDU '" + extname + "' from '" + src.path() + "' to '" + path_ +
                  "': " + detail::status_text(status));
    }
  }
  // Appends a binary table with the header of src's current table HDU and, in this order, the
  // given rows of it (1-based; 0 gives a row of zero bytes). E.g. a FIBERMAP restricted to the
  // extracted fibres.
  void copy_table_rows_from(const FitsFile& src, const std::vector<long>& rows) {
    if (src.hdu_type() != HduType::binary_table) src.fail(0, "not a binary table");
    const long long rowbytes = src.read_key<long long>("NAXIS1");
    int status = 0;
    fits_copy_header(src.handle_checked(), handle_checked(), &status);
    if (status) fail(status, "cannot copy the header of '" + src.path() + "', " + src.hdu_label());
    // The copied header still describes src's rows: empty the table, then add the new rows.
    fits_modify_key_lng(fptr_, "NAXIS2", 0, "&", &status);
    fits_set_hdustruc(fptr_, &status);
    fits_insert_rows(fptr_, 0, static_cast<LONGLONG>(rows.size()), &status);
    if (status) fail(status, "cannot size the table");
    if (rowbytes <= 0) return;
    std::vector<unsigned char> bytes(static_cast<std::size_t>(rowbytes));
    for (std::size_t i = 0; i < rows.size(); ++i) {
      if (rows[i] > 0) {
        fits_read_tblbytes(src.fptr_, rows[i], 1, rowbytes, bytes.data(), &status);
        if (status) src.fail(status, "cannot read table row " + std::to_string(rows[i]));
      } else {
        std::fill(bytes.begin(), bytes.end(), 0);
      }
      fits_write_tblbytes(fptr_, static_cast<LONGLONG>(i + 1), 1, rowbytes, bytes.data(), &status);
      if (status) fail(status, "cannot write table row " + std::to_string(i + 1));
    }
  }

  // Throws a perfex::Error naming this file, the current HDU and `what`.
  [[noreturn]] void fail(int status, const std::string& what) const {
    const int saved_errno = errno;
    std::string msg = "FITS file '" + path_ + "'";
    if (fptr_) msg += ", " + hdu_label();
    msg += ": " + what;
    if (status) msg += ": " + detail::status_text(status);
    // CFITSIO's messages name the file as it was opened: the caller knows it by path_.
    for (auto at = via_.empty() ? std::string::npos : msg.find(via_); at != std::string::npos;
         at = msg.find(via_, at + path_.size()))
      msg.replace(at, via_.size(), path_);
    // CFITSIO says only "error writing to FITS file"; the system's reason is what to act on.
    if (status == WRITE_ERROR || status == FILE_NOT_CREATED || status == FILE_NOT_OPENED)
      msg += detail::system_reason(saved_errno);
    throw Error(msg);
  }

 private:
  // Opens path_ (through `file`, another name of the same file, when not empty) after the
  // header checks.
  void open_existing(const std::string& file, int iomode) {
    detail::check_header_structure(path_, file);
    via_ = file;
    int status = 0;
    fits_open_file(&fptr_, (file.empty() ? path_ : file).c_str(), iomode, &status);
    if (status) {
      fptr_ = nullptr;
      fail(status, "cannot open FITS file");
    }
  }

  void check_image_hdu() const {
    if (hdu_type() != HduType::image) fail(0, "not an image HDU");
  }
  // The value field of keyword `name` as written (blanks trimmed); false when it is absent.
  bool read_key_text(const std::string& name, std::string& out) const {
    char value[FLEN_VALUE] = {0};
    int status = 0;
    fits_read_keyword(handle_checked(), name.c_str(), value, nullptr, &status);
    if (status == KEY_NO_EXIST) return absent();
    if (status) fail_key(status, name);
    out = value;
    const auto first = out.find_first_not_of(' ');
    out = first == std::string::npos ? std::string() : out.substr(first);
    while (!out.empty() && out.back() == ' ') out.pop_back();
    if (out.empty()) fail_key(0, name, "no value");
    return true;
  }
  int image_bitpix() const {
    int status = 0, bitpix = 0;
    fits_get_img_type(handle_checked(), &bitpix, &status);
    if (status) fail(status, "cannot read BITPIX");
    return bitpix;
  }
  // Throws unless `bytes` of data from the start of the current HDU's data lie inside the file
  // (tile-compressed images excepted): a damaged header must not make a reader allocate what
  // the file cannot hold.
  void check_data_in_file(long double bytes, const std::string& what) const {
    int status = 0;
    if (fits_is_compressed_image(handle_checked(), &status)) return;
    LONGLONG head = 0, start = 0, end = 0;
    fits_get_hduaddrll(fptr_, &head, &start, &end, &status);
    if (status) fail(status, "cannot locate the " + what);
    const long double size = static_cast<long double>(fptr_->Fptr->logfilesize);
    if (start + bytes > size) {
      char text[160];
      std::snprintf(text, sizeof(text),
                    "the header describes %.0Lf bytes of %s, but the file ends %.0Lf bytes "
                    "after the header (truncated or damaged)",
                    bytes, what.c_str(), size - start);
      fail(0, text);
    }
  }
  // The rows of the current table (NAXIS1 x NAXIS2 bytes) lie inside the file.
  void check_table_in_file() const {
    const long double rowbytes = read_key<long long>("NAXIS1"),
                      rows = read_key<long long>("NAXIS2");
    if (rowbytes < 0 || rows < 0) fail(0, "negative NAXIS1 or NAXIS2");
    check_data_in_file(rowbytes * rows, "table rows");
  }
  void close_quietly() noexcept {
    if (fptr_) {
      int status = 0;
      fits_close_file(fptr_, &status);
      fits_clear_errmsg();
      fptr_ = nullptr;
    }
    input_.reset();
  }
  fitsfile* handle_checked() const {
    if (!fptr_) throw Error("FITS file '" + path_ + "': not open");
    return fptr_;
  }
  static bool absent() {
    fits_clear_errmsg();
    return false;
  }
  static char* cstr_or_null(const std::string& s) {
    return s.empty() ? nullptr : const_cast<char*>(s.c_str());
  }
  [[noreturn]] void fail_key(int status, const std::string& key,
                             const std::string& what = "") const {
    fail(status, "keyword '" + key + "'" + (what.empty() ? "" : ": " + what));
  }
  [[noreturn]] void fail_column(int status, const std::string& col, const std::string& what) const {
    fail(status, "column '" + col + "': " + what);
  }

  fitsfile* fptr_ = nullptr;
  std::string path_;
  std::unique_ptr<detail::InputFile> input_;  // the file read (Mode::read)
  std::string via_;                           // the name CFITSIO opened it by, when not path_
};

// Opens a FITS file as every reader does (the same checks and messages: missing, a directory,
// not FITS, damaged headers) and requires the HDUs named; for readers outside the library
// (the gpu_specter drop-in's astropy readers) to fail as perfex's own do.
// fd: the file open as this descriptor, named path (FitsFile(path, fd)); -1: path opened.
inline void check_fits_file(const std::string& path, const std::vector<std::string>& hdus,
                            int fd = -1) {
  FitsFile f = fd < 0 ? FitsFile::open(path) : FitsFile(path, fd);
  for (const std::string& extname : hdus) f.move_to(extname);
}

}  // namespace io
}  // namespace perfex
