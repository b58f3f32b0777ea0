#pragma once
// Output files that never destroy anything by accident (host only; link perfex::io).
//
// * An output path that is a symbolic link is written through: the file the link (chain)
//   ends at is replaced, the link stays. An output whose target exists and is not a regular
//   file (a directory, /dev/full or any device, a FIFO, a socket) is refused.
// * write_atomically writes a hidden temporary ".NAME.tmp-XXXXXX" in the target's folder and
//   renames it over the target only once complete: a failure leaves the old file as it was.
//   A name ending in ".gz" is written gzip-compressed. AtomicOutput is the same temporary for
//   a writer of its own (the Python package's astropy writers).
// * remove_temp_files_on_signals(): SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGXCPU and SIGXFSZ
//   remove the temporaries being written before the process ends (async-signal-safe: a
//   fixed table of names, unlink(2), then the default action). A temporary's name is in that
//   table before its file exists, so no signal leaves one behind.
// * file_identity / same_file tell whether two paths (existing or not) name one file, so a
//   tool can refuse to write over its own inputs.
#include <perfex/error.hpp>

#include <zlib.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

namespace perfex {
namespace io {

namespace output_detail {

inline std::string folder_of(const std::string& path) {
  const auto slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

inline std::string base_of(const std::string& path) {
  const auto slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

inline bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

inline const char* file_kind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

// Names of the temporaries being written, readable from a signal handler: a fixed table with
// an atomic state per slot (0 free, 1 being filled or emptied, 2 holds a name). Trivially
// constructible, so a static instance is zero-initialised before any code runs.
class TempFileRegistry {
 public:
  static constexpr int kSlots = 16;
  static constexpr std::size_t kMaxPath = 4096;

  // The slot now holding `path`, or -1 (name too long, table full: that file is then not
  // removed on a signal, only on errors).
  int add(const std::string& path) noexcept {
    if (path.size() >= kMaxPath) return -1;
    for (int s = 0; s < kSlots; ++s) {
      int expected = 0;
      if (!state_[s].compare_exchange_strong(expected, 1)) continue;
      std::memcpy(path_[s], path.c_str(), path.size() + 1);
      state_[s].store(2, std::memory_order_release);
      return s;
    }
    return -1;
  }
  void remove(int slot) noexcept {
    if (slot < 0) return;
    state_[slot].store(1);
    path_[slot][0] = '\0';
    state_[slot].store(0, std::memory_order_release);
  }
  // Async-signal-safe.
  void unlink_all() noexcept {
    for (int s = 0; s < kSlots; ++s)
      if (state_[s].load(std::memory_order_acquire) == 2) ::unlink(path_[s]);
  }

 private:
  std::atomic<int> state_[kSlots];
  char path_[kSlots][kMaxPath];
};

inline TempFileRegistry temp_files;

constexpr int kCleanupSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGXCPU, SIGXFSZ};
inline struct sigaction previous_actions[sizeof(kCleanupSignals) / sizeof(int)];

// A temporary's name enters the table before its file can exist, so a signal never finds a
// file it does not know; and once a cleanup handler has unlinked the files, nothing may create
// one again (CFITSIO and zlib open the temporary by name, creating it). Every step that makes
// a temporary exist under its name is therefore a TemporaryCreation: the cleanup signals are
// blocked on that thread, and a handler running on another thread stops new creations
// (cleanup_started) and waits for those in flight (creations_in_flight) before unlinking.
// Either the creator sees the flag and creates nothing, or the handler sees the creation and
// unlinks its file once it exists.
inline std::atomic<int> creations_in_flight{0};
inline std::atomic<bool> cleanup_started{false};

// Removes the temporaries, restores the signal's previous action and raises it again: the
// signal is blocked while this runs, so it is delivered (default: the process ends with it)
// as soon as the handler returns.
inline void remove_temp_files_and_reraise(int sig) {
  const int saved_errno = errno;
  cleanup_started.store(true);
  // A creation in flight is on another thread (its own has the signal blocked), one open(2)
  // away from done.
  while (creations_in_flight.load() != 0) {
  }
  temp_files.unlink_all();
  for (std::size_t i = 0; i < sizeof(kCleanupSignals) / sizeof(int); ++i)
    if (kCleanupSignals[i] == sig) sigaction(sig, &previous_actions[i], nullptr);
  raise(sig);
  errno = saved_errno;
}

// Once a handler has unlinked the temporaries, the process is ending with its signal, but the
// other threads run on until it does: a writer may find its temporary gone. Such a failure is
// not reported (an error message, an exception ending the process with another status);
// the thread waits for the end instead.
inline void await_end_if_cleaning_up() {
  if (cleanup_started.load())
    for (;;) pause();
}

// The scope of one step that creates (or re-creates) a temporary by name. Once a cleanup
// handler has started, the process is ending with its signal: the constructor then waits for
// that end instead of letting the step run.
class TemporaryCreation {
 public:
  TemporaryCreation() {
    sigset_t cleanup;
    sigemptyset(&cleanup);
    for (int sig : kCleanupSignals) sigaddset(&cleanup, sig);
    pthread_sigmask(SIG_BLOCK, &cleanup, &before_);
    creations_in_flight.fetch_add(1);
    if (cleanup_started.load()) {
      creations_in_flight.fetch_sub(1);
      pthread_sigmask(SIG_SETMASK, &before_, nullptr);
      for (;;) pause();
    }
  }
  ~TemporaryCreation() {
    creations_in_flight.fetch_sub(1);
    // A cleanup signal that arrived meanwhile is delivered here, with the file in the table.
    pthread_sigmask(SIG_SETMASK, &before_, nullptr);
  }
  TemporaryCreation(const TemporaryCreation&) = delete;
  TemporaryCreation& operator=(const TemporaryCreation&) = delete;

 private:
  sigset_t before_;
};

// A temporary file next to `target`, removed by the destructor unless released (renamed).
class TempFile {
 public:
  // Created like any new file (mode 0666 less the umask), under a name no other file has; with
  // link_from, a hard link to that file instead (the old content of an output being replaced).
  TempFile(const std::string& target, const char* tag, const std::string& link_from = "") {
    const std::string stem = folder_of(target) + "/." + base_of(target) + "." + tag + "-";
    static std::atomic<unsigned> counter{0};
    const unsigned long long seed = (static_cast<unsigned long long>(getpid()) << 32) ^
                                    static_cast<unsigned long long>(time(nullptr));
    for (int attempt = 0; attempt < 100; ++attempt) {
      unsigned long long x = seed + 0x9E3779B97F4A7C15ULL * (counter.fetch_add(1) + 1);
      x = (x ^ (x >> 31)) * 0xBF58476D1CE4E5B9ULL;
      const char* digits = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
      std::string name = stem;
      for (int c = 0; c < 6; ++c, x /= 62) name += digits[x % 62];
      const int error = create_registered(name, link_from);
      if (error == 0) return;
      if (error != EEXIST) {
        throw Error("perfex: cannot create a temporary file in " + folder_of(target) +
                    (link_from.empty() ? " to write " : " to keep the old ") + target + ": " +
                    std::strerror(error));
      }
    }
    throw Error("perfex: cannot create a temporary file in " + folder_of(target) + " to write " +
                target + ": 100 names taken");
  }
  ~TempFile() {
    if (!path_.empty()) ::unlink(path_.c_str());
    temp_files.remove(slot_);
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  const std::string& path() const { return path_; }
  // Renames the temporary to `target` (atomic within a file system).
  void rename_to(const std::string& target) {
    const int error = try_rename_to(target);
    if (error == 0) return;
    await_end_if_cleaning_up();
    throw Error("perfex: cannot rename " + path_ + " to " + target + ": " + std::strerror(error));
  }
  // rename_to's rename: 0 (the file is target's now, no longer this temporary) or the errno.
  int try_rename_to(const std::string& target) {
    if (std::rename(path_.c_str(), target.c_str()) != 0) return errno;
    release();
    return 0;
  }
  // Forgets the file: the destructor leaves it where it is.
  void release() {
    path_.clear();
    temp_files.remove(slot_);
    slot_ = -1;
  }

 private:
  // Registers `name`, then creates it (O_EXCL, or a hard link to link_from), as one
  // TemporaryCreation; on success path_ and slot_ hold it. Returns 0 or the errno of the failure.
  int create_registered(const std::string& name, const std::string& link_from) {
    const TemporaryCreation creating;
    const int slot = temp_files.add(name);
    const int fd = link_from.empty()
                       ? ::open(name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666)
                       : ::link(link_from.c_str(), name.c_str());
    if (fd < 0) {
      const int error = errno;
      temp_files.remove(slot);
      return error;
    }
    if (link_from.empty()) ::close(fd);
    path_ = name;
    slot_ = slot;
    return 0;
  }

  std::string path_;
  int slot_ = -1;
};

// gzip-compresses src into dst (zlib level 1, as CFITSIO writes .gz files).
inline void gzip_file(const std::string& src, const std::string& dst, const std::string& target) {
  auto fail = [&](const std::string& what) {
    await_end_if_cleaning_up();
    throw Error("perfex: cannot write compressed " + target + ": " + what);
  };
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> in(std::fopen(src.c_str(), "rb"), std::fclose);
  if (!in) fail(src + ": " + std::strerror(errno));
  gzFile out = [&] {
    const TemporaryCreation creating;
    return gzopen(dst.c_str(), "wb1");
  }();
  if (!out) fail(dst + ": " + std::strerror(errno));
  std::vector<char> buf(1 << 20);
  std::size_t n = 0;
  while ((n = std::fread(buf.data(), 1, buf.size(), in.get())) > 0) {
    if (gzwrite(out, buf.data(), static_cast<unsigned>(n)) != static_cast<int>(n)) {
      int code = 0;
      const std::string msg = gzerror(out, &code);
      gzclose(out);
      fail(code == Z_ERRNO ? std::string(std::strerror(errno)) : msg);
    }
  }
  const bool read_error = std::ferror(in.get()) != 0;
  if (gzclose(out) != Z_OK) fail(std::string("closing: ") + std::strerror(errno));
  if (read_error) fail("reading " + src);
}

}  // namespace output_detail

// The file writing `path` replaces: `path` itself, or, for a symbolic link, the end of its
// chain of links (which need not exist yet).
inline std::string output_target(const std::string& path) {
  if (path.empty()) throw Error("perfex: empty output file name");
  std::string p = path;
  for (int hops = 0; hops < 40; ++hops) {
    struct stat st;
    if (lstat(p.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) return p;
    std::vector<char> buf(static_cast<std::size_t>(st.st_size > 0 ? st.st_size : 4096) + 1);
    const ssize_t n = readlink(p.c_str(), buf.data(), buf.size() - 1);
    if (n < 0) throw Error("perfex: cannot read the link " + p + ": " + std::strerror(errno));
    const std::string to(buf.data(), static_cast<std::size_t>(n));
    p = (!to.empty() && to[0] == '/') ? to : output_detail::folder_of(p) + "/" + to;
  }
  throw Error("perfex: output " + path + ": too many levels of symbolic links");
}

// Throws perfex::Error, starting with `what` (e.g. "option -o/--output"), unless `path` can be
// written: its target is absent or a regular file, in a writable folder.
inline void check_output_path(const std::string& path, const std::string& what = "output") {
  const std::string target = output_target(path);
  const std::string via = target == path ? "" : " (the target of the link " + path + ")";
  struct stat st;
  if (stat(target.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
    throw Error(what + ": " + target + via + " exists and is " +
                output_detail::file_kind(st.st_mode) + "; perfex writes only regular files");
  const std::string folder = output_detail::folder_of(target);
  if (stat(folder.c_str(), &st) != 0)
    throw Error(what + ": cannot write " + target + via + ": folder " + folder + ": " +
                std::strerror(errno));
  if (!S_ISDIR(st.st_mode))
    throw Error(what + ": cannot write " + target + via + ": " + folder + " is not a folder");
  if (access(folder.c_str(), W_OK | X_OK) != 0)
    throw Error(what + ": cannot write " + target + via + ": folder " + folder + ": " +
                std::strerror(errno));
  // Permission bits do not bind root, nor tell of a read-only mount or /proc: a hidden file
  // created and removed says whether the folder takes new files (the writers' temporaries).
  try {
    const output_detail::TempFile probe(target, "probe");
  } catch (const Error& e) {
    const std::string m = e.what(), reason = m.substr(m.rfind(": ") + 2);
    throw Error(what + ": cannot write " + target + via + ": folder " + folder +
                " takes no new file (" + reason + ")");
  }
}

// What a path designates: an existing file (device and inode, after symbolic links) or the
// file it would create (its folder's canonical path and its name).
struct FileIdentity {
  bool exists = false;
  dev_t device = 0;
  ino_t inode = 0;
  std::string would_be;  // canonical name of a file that does not exist yet
};

inline FileIdentity file_identity(const std::string& path) {
  FileIdentity id;
  const std::string target = output_target(path);
  struct stat st;
  if (stat(target.c_str(), &st) == 0) {
    id.exists = true;
    id.device = st.st_dev;
    id.inode = st.st_ino;
    return id;
  }
  char* folder = realpath(output_detail::folder_of(target).c_str(), nullptr);
  if (folder) {
    id.would_be = std::string(folder) + "/" + output_detail::base_of(target);
    std::free(folder);
  } else {
    id.would_be = target;
  }
  return id;
}

inline bool same_file(const FileIdentity& a, const FileIdentity& b) {
  if (a.exists != b.exists) return false;
  return a.exists ? a.device == b.device && a.inode == b.inode : a.would_be == b.would_be;
}

// Runs body(temporary path) and renames the temporary over output_target(path) once body
// returns; on any failure the temporary is removed and the exception propagates. A `path`
// ending in ".gz" receives the body's file gzip-compressed.
// An output being written: a registered hidden temporary next to output_target(path) (see
// write_atomically) that commit() renames over the target; destroyed uncommitted, it is
// removed. For writers that open the file themselves: they must write into the existing
// temporary (open it for writing without creating or removing it), so that a signal's cleanup
// cannot miss it.
class AtomicOutput {
 public:
  explicit AtomicOutput(const std::string& path, const std::string& what = "output")
      : target_((check_output_path(path, what), output_target(path))), tmp_(target_, "tmp") {}
  const std::string& path() const { return tmp_.path(); }
  const std::string& target() const { return target_; }
  void commit() { tmp_.rename_to(target_); }

 private:
  friend class OutputSet;
  std::string target_;
  output_detail::TempFile tmp_;
};

namespace output_detail {
// Runs body(temp); its error names the target instead of the hidden temporary.
template <class Body>
void writing(const std::string& temp, const std::string& target, Body&& body) {
  try {
    body(temp);
  } catch (const Error& e) {
    std::string m = e.what();
    for (auto at = m.find(temp); at != std::string::npos; at = m.find(temp, at + target.size()))
      m.replace(at, temp.size(), target);
    if (dynamic_cast<const RequestError*>(&e)) throw RequestError(m);
    throw Error(m);
  }
}
}  // namespace output_detail

// The outputs of one job, which must change together (a frame and its model image): add()
// writes each into its hidden temporary, commit() renames them all once every one is complete.
// A failure while writing any of them (a full disk) leaves every existing output as it was; the
// temporaries are removed when the set is destroyed uncommitted. One file may be only one output
// of a set (RequestError naming both names).
class OutputSet {
 public:
  // Output `path`'s hidden temporary, for a writer that opens it itself (as AtomicOutput's).
  AtomicOutput& start(const std::string& path) {
    auto out = std::make_unique<AtomicOutput>(path);
    const FileIdentity id = file_identity(out->target());
    for (const auto& [earlier, earlier_id] : outputs_)
      if (same_file(id, earlier_id))
        throw RequestError("output " + path + " is the same file as output " + earlier.path +
                           " of the same set; name each output once");
    outputs_.push_back({Started{path, std::move(out)}, id});
    return *outputs_.back().first.out;
  }
  // Removes the output whose temporary is `temporary` (its writer failed): the file is deleted.
  void drop(const std::string& temporary) {
    for (auto o = outputs_.begin(); o != outputs_.end(); ++o)
      if (o->first.out->path() == temporary) {
        outputs_.erase(o);
        return;
      }
  }
  // Runs body(temporary path) for output `path` (".gz": the body's file gzip-compressed).
  template <class Body>
  void add(const std::string& path, Body&& body) {
    AtomicOutput& out = start(path);
    try {
      if (output_detail::ends_with(out.target(), ".gz")) {
        output_detail::TempFile raw(out.target(), "raw");
        output_detail::writing(raw.path(), out.target(), body);
        output_detail::gzip_file(raw.path(), out.path(), out.target());
      } else {
        output_detail::writing(out.path(), out.target(), body);
      }
    } catch (...) {
      drop(out.path());
      throw;
    }
  }
  // Renames every temporary over its target (renames within a folder need no space), all or
  // none: every target is checked first (a directory or device now there changes nothing), and
  // when a rename fails, the outputs already renamed get their old files back (hard links kept
  // during the commit, so the targets never go missing) or are removed if they were new; where
  // no hard link can be made, the commit is refused before any rename. What remains: readers may
  // see the new outputs renamed before the failure until they are restored, and a process killed
  // mid-commit (SIGKILL, a crash) may leave some outputs new, the old files kept in hidden
  // .NAME.old-XXXXXX next to them.
  void commit() {
    for (const auto& [started, id] : outputs_) {
      struct stat st;
      const std::string& target = started.out->target();
      if (stat(target.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
        throw Error("perfex: cannot replace " + target + ": it is now " +
                    output_detail::file_kind(st.st_mode) + "; no output of " +
                    (outputs_.size() > 1 ? "the set" : "it") + " was changed");
    }
    if (outputs_.size() > 1)
      commit_together();
    else if (!outputs_.empty())
      outputs_[0].first.out->commit();
    outputs_.clear();
  }

 private:
  struct Started {
    std::string path;  // as the caller named it
    std::unique_ptr<AtomicOutput> out;
  };

  void commit_together() {
    using output_detail::TempFile;
    std::vector<std::unique_ptr<TempFile>> old(outputs_.size());
    for (std::size_t i = 0; i < outputs_.size(); ++i) {
      const std::string& target = outputs_[i].first.out->target();
      if (::access(target.c_str(), F_OK) == 0)
        old[i] = std::make_unique<TempFile>(target, "old", target);
    }
    // From the first rename to the last restore, a cleanup signal waits (the scope creates no
    // temporary: a nested creation would wait for a handler that waits for this scope).
    const output_detail::TemporaryCreation committing;
    for (std::size_t i = 0; i < outputs_.size(); ++i) {
      AtomicOutput& out = *outputs_[i].first.out;
      const std::string temp = out.path();
      const int error = out.tmp_.try_rename_to(out.target());
      if (error == 0) continue;
      std::string message = "perfex: cannot rename " + temp + " to " + out.target() + ": " +
                            std::strerror(error) +
                            "; the set's other outputs were left as they were";
      for (std::size_t j = 0; j < i; ++j) {
        const std::string& target = outputs_[j].first.out->target();
        const int undo =
            old[j] ? old[j]->try_rename_to(target) : (::unlink(target.c_str()) == 0 ? 0 : errno);
        if (undo == 0) continue;
        message += "; but " + target + " could not be restored (" + std::strerror(undo) + ")";
        if (old[j]) {
          message += ": its old content is in " + old[j]->path();
          old[j]->release();
        }
      }
      throw Error(message);
    }
  }

  std::vector<std::pair<Started, FileIdentity>> outputs_;
};

template <class Body>
void write_atomically(const std::string& path, Body&& body) {
  OutputSet out;
  out.add(path, std::forward<Body>(body));
  out.commit();
}

// Makes the signals that end a run (SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGXCPU, SIGXFSZ)
// remove the temporaries of write_atomically first, then end the process as before. Only
// signals whose action is the default (ending the process) are taken over: ignored ones
// (nohup) stay ignored, and a handler of the program's own (Python's SIGINT, which raises
// KeyboardInterrupt once the write is done) stays in place. Safe to call any number of times,
// from any thread, and from libraries: it changes nothing but what a dying process leaves.
inline void remove_temp_files_on_signals() {
  using namespace output_detail;
  static std::mutex installing;
  const std::lock_guard<std::mutex> lock(installing);
  for (std::size_t i = 0; i < sizeof(kCleanupSignals) / sizeof(int); ++i) {
    struct sigaction now;
    if (sigaction(kCleanupSignals[i], nullptr, &now) != 0 || (now.sa_flags & SA_SIGINFO) != 0 ||
        now.sa_handler != SIG_DFL)
      continue;
    struct sigaction act;
    std::memset(&act, 0, sizeof(act));
    act.sa_handler = remove_temp_files_and_reraise;
    sigemptyset(&act.sa_mask);
    sigaction(kCleanupSignals[i], &act, &previous_actions[i]);
  }
}

// A file as a front end names it in its messages: ("-o/--output", "frame.fits").
struct NamedPath {
  std::string name;
  std::string path;
};

// Throws RequestError unless every output can be written (io::check_output_path) and none is
// one of the inputs or an earlier output: the same file by device and inode, or by canonical
// folder and name before it exists. Messages: "<prefix><output name>: <path> is the <input
// name> file <path>; perfex never writes over its inputs".
inline void check_outputs(const std::vector<NamedPath>& outputs,
                          const std::vector<NamedPath>& inputs, const std::string& prefix = "") {
  std::vector<std::pair<const NamedPath*, FileIdentity>> seen;
  for (const NamedPath& out : outputs) {
    if (out.path.empty()) continue;  // not asked for
    try {
      check_output_path(out.path, prefix + out.name);
    } catch (const RequestError&) {
      throw;
    } catch (const Error& e) {
      throw RequestError(e.what());
    }
    const FileIdentity id = file_identity(out.path);
    for (const NamedPath& in : inputs)
      if (!in.path.empty() && same_file(id, file_identity(in.path)))
        throw RequestError(prefix + out.name + ": " + out.path + " is the " + in.name + " file " +
                           in.path + "; perfex never writes over its inputs");
    for (const auto& [earlier, earlier_id] : seen)
      if (same_file(id, earlier_id))
        throw RequestError(prefix + out.name + ": " + out.path + " is also the " + earlier->name +
                           " file");
    seen.emplace_back(&out, id);
  }
}

}  // namespace io
}  // namespace perfex
