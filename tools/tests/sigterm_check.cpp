// A signal while a frame is being written leaves nothing behind.
//
// perfex_sigterm_check FOLDER: a child process writes a ~50 MB frame with perfex-extract's
// signal cleanup installed; the parent sends SIGTERM as soon as the temporary file appears,
// then checks that the child died of SIGTERM and that the folder holds neither the temporary
// nor a frame.
//
// perfex_sigterm_check --stress SECONDS FOLDER: aims at the moments around a temporary's
// creation. For SECONDS, children (four at a time) write small frames and gzip-compressed
// frames in a loop, half of them with an idle second thread (so the signal may be handled on a
// thread other than the writer's); each is killed by one of the cleanup signals after a
// random delay of 0-20 ms, often before its first file exists. Afterwards no temporary may be
// left, and every frame under its own name must read back whole.
//
// perfex_sigterm_check --vanished FOLDER: a handler on another thread has unlinked the
// temporaries and the process is about to end with its signal; a writer that now finds its
// temporary gone (the rename, the gzip step) must wait for that end, not report an error or
// end the process otherwise. Each case runs in a child that SIGALRM ends after a second.
#include <perfex/io/frame_fits.hpp>
#include <perfex/io/output_file.hpp>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

namespace fs = std::filesystem;

namespace {

perfex::extract::Frame frame_of(int nspec, int nwave) {
  perfex::extract::Frame fr;
  fr.nspec = nspec;
  fr.nwave = nwave;
  fr.ndiag = 5;
  const std::size_t n = static_cast<std::size_t>(fr.nspec) * fr.nwave;
  for (int k = 0; k < fr.nwave; ++k) fr.wave.push_back(5000.0 + 0.8 * k);
  fr.flux.assign(n, 1.0);
  fr.ivar.assign(n, 1.0);
  fr.mask.assign(n, 0u);
  fr.chi2pix.assign(n, 1.0);
  fr.pixmask_fraction.assign(n, 0.0);
  fr.resolution.assign(n * 11, 0.1);
  return fr;
}

std::vector<std::string> entries(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  return names;
}

// A writer that never stops by itself: frames (every third one gzip-compressed) over and over.
[[noreturn]] void write_until_killed(const std::string& dir, int id, bool second_thread) {
  perfex::io::remove_temp_files_on_signals();
  if (second_thread)
    std::thread([] {
      for (;;) pause();
    }).detach();
  const perfex::extract::Frame fr = frame_of(20, 200);
  for (long n = 0;; ++n) {
    const std::string name = "frame-" + std::to_string(id) + (n % 3 == 2 ? ".fits.gz" : ".fits");
    perfex::io::write_frame(dir + "/" + name, fr, {});
  }
}

int stress(double seconds, const std::string& dir) {
  const int signals[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGXCPU, SIGXFSZ};
  std::mt19937 rng(20261201);
  std::uniform_int_distribution<int> delay_us(0, 20000), pick(0, 5);
  const auto t0 = std::chrono::steady_clock::now();
  int children = 0, by_signal = 0;
  while (std::chrono::steady_clock::now() - t0 < std::chrono::duration<double>(seconds)) {
    std::vector<pid_t> batch;
    for (int k = 0; k < 4; ++k, ++children) {
      const pid_t child = fork();
      if (child < 0) return 1;
      if (child == 0) write_until_killed(dir, children % 8, children % 2 == 1);
      batch.push_back(child);
    }
    std::vector<int> sent;
    for (pid_t child : batch) {
      std::this_thread::sleep_for(std::chrono::microseconds(delay_us(rng)));
      sent.push_back(signals[pick(rng)]);
      kill(child, sent.back());
    }
    for (std::size_t k = 0; k < batch.size(); ++k) {
      int status = 0;
      waitpid(batch[k], &status, 0);
      if (!WIFSIGNALED(status) || WTERMSIG(status) != sent[k]) {
        std::cout << "perfex_sigterm_check: FAIL: a writer sent signal " << sent[k] << " "
                  << (WIFSIGNALED(status) ? "died of signal " + std::to_string(WTERMSIG(status))
                                          : "exited with " + std::to_string(WEXITSTATUS(status)))
                  << "\n";
        return 1;
      }
      ++by_signal;
    }
    for (const auto& name : entries(dir)) {
      if (name[0] == '.') {
        std::cout << "perfex_sigterm_check: FAIL: after " << children
                  << " killed writers, a temporary is left: " << name << "\n";
        return 1;
      }
      try {
        perfex::io::read_frame(dir + "/" + name);
      } catch (const std::exception& e) {
        std::cout << "perfex_sigterm_check: FAIL: " << name << " is not a whole frame: " << e.what()
                  << "\n";
        return 1;
      }
    }
  }
  std::cout << "perfex_sigterm_check: PASS: " << by_signal
            << " writers killed by signals, no temporary left, " << entries(dir).size()
            << " frames all whole\n";
  return 0;
}

// Runs `step` in a child as if a cleanup handler had just run; true when the child waited
// (ended by SIGALRM) instead of failing.
template <class Step>
bool waits_for_the_end(const char* what, Step step) {
  const pid_t child = fork();
  if (child < 0) return false;
  if (child == 0) {
    alarm(1);
    try {
      step();
      std::cout << "perfex_sigterm_check: FAIL: " << what << " succeeded\n";
    } catch (const std::exception& e) {
      std::cout << "perfex_sigterm_check: FAIL: " << what
                << " failed instead of waiting: " << e.what() << "\n";
    }
    std::cout.flush();
    _exit(1);
  }
  int status = 0;
  waitpid(child, &status, 0);
  return WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM;
}

int vanished(const std::string& dir) {
  const auto as_a_handler_does = [] {
    perfex::io::output_detail::cleanup_started.store(true);
    perfex::io::output_detail::temp_files.unlink_all();
  };
  const bool rename_waits = waits_for_the_end("the rename of a vanished temporary", [&] {
    perfex::io::AtomicOutput out(dir + "/frame.fits");
    as_a_handler_does();
    out.commit();
  });
  const bool gzip_waits = waits_for_the_end("compressing a vanished temporary", [&] {
    perfex::io::write_atomically(dir + "/frame.fits.gz",
                                 [&](const std::string&) { as_a_handler_does(); });
  });
  const auto left = entries(dir);
  if (!rename_waits || !gzip_waits || !left.empty()) {
    std::cout << "perfex_sigterm_check: FAIL: " << left.size() << " file(s) left\n";
    return 1;
  }
  std::cout
      << "perfex_sigterm_check: PASS: writers whose temporaries vanished waited for the end\n";
  return 0;
}

}  // namespace

int main(int argc, char* argv[]) {
  const bool stress_mode = argc == 4 && std::string(argv[1]) == "--stress";
  const bool vanished_mode = argc == 3 && std::string(argv[1]) == "--vanished";
  if (argc != 2 && !stress_mode && !vanished_mode) {
    std::cerr << "usage: perfex_sigterm_check EMPTY-FOLDER\n"
                 "       perfex_sigterm_check --stress SECONDS EMPTY-FOLDER\n"
                 "       perfex_sigterm_check --vanished EMPTY-FOLDER\n";
    return 2;
  }
  const std::string dir = argv[argc - 1];
  fs::remove_all(dir);
  fs::create_directories(dir);
  if (stress_mode) return stress(std::atof(argv[2]), dir);
  if (vanished_mode) return vanished(dir);
  const perfex::extract::Frame fr = frame_of(200, 4000);
  const pid_t child = fork();
  if (child < 0) return 1;
  if (child == 0) {
    perfex::io::remove_temp_files_on_signals();
    perfex::io::write_frame(dir + "/frame.fits", fr, {});
    _exit(0);
  }
  const auto t0 = std::chrono::steady_clock::now();
  bool seen = false;
  while (!seen && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(60)) {
    for (const auto& name : entries(dir)) seen = seen || name.rfind(".frame.fits.tmp-", 0) == 0;
    if (!seen) std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  kill(child, SIGTERM);
  int status = 0;
  waitpid(child, &status, 0);
  const auto left = entries(dir);
  std::cout << "perfex_sigterm_check: temporary " << (seen ? "seen" : "never seen") << ", child "
            << (WIFSIGNALED(status) ? "killed by signal " + std::to_string(WTERMSIG(status))
                                    : "exited with " + std::to_string(WEXITSTATUS(status)))
            << ", " << left.size() << " file(s) left\n";
  for (const auto& name : left) std::cout << "  left: " << name << "\n";
  if (!seen || !WIFSIGNALED(status) || WTERMSIG(status) != SIGTERM) {
    std::cout << "perfex_sigterm_check: FAIL: the signal did not arrive during the write\n";
    return 1;
  }
  if (!left.empty()) {
    std::cout << "perfex_sigterm_check: FAIL: files left behind\n";
    return 1;
  }
  std::cout << "perfex_sigterm_check: PASS\n";
  return 0;
}
