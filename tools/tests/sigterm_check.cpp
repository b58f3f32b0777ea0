// A SIGTERM while a frame is being written leaves nothing behind: a child process writes a
// ~50 MB frame with perfex-extract's signal cleanup installed; the parent sends SIGTERM as soon
// as the temporary file appears, then checks that the child died of SIGTERM and that the
// folder holds neither the temporary nor a frame.
#include <perfex/io/frame_fits.hpp>
#include <perfex/io/output_file.hpp>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <iostream>
#include <string>
#include <thread>

#include <sys/wait.h>
#include <unistd.h>

namespace fs = std::filesystem;

namespace {

perfex::extract::Frame big_frame() {
  perfex::extract::Frame fr;
  fr.nspec = 200;
  fr.nwave = 4000;
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

}  // namespace

int main(int argc, char* argv[]) {
  if (argc != 2) {
    std::cerr << "usage: perfex_sigterm_check EMPTY-FOLDER\n";
    return 2;
  }
  const std::string dir = argv[1];
  fs::remove_all(dir);
  fs::create_directories(dir);
  const perfex::extract::Frame fr = big_frame();
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
