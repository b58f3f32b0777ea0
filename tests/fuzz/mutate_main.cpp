// Deterministic fuzzing of the FITS readers for CTest: valid seed files (a small synthetic PSF,
// preproc image and frame written by perfex itself, plus any files named on the command line
// that exist) are damaged the ways files get damaged (truncation, bit flips, header values
// replaced by extreme ones, cards blanked, blocks copied over others, data bytes set to NaN
// patterns) by a seeded generator, and each damaged file goes through the fuzz target
// (fuzz_readers.cpp). Same seed, same inputs: a failure reproduces.
//
//   perfex_fuzz_readers [--iterations N] [--seconds S] [--seed N] [SEED-FILE...]
//
// N damaged files per seed (default 300); S bounds the whole run's time (default 60; the
// remaining seeds are then skipped, and said so).
#include "fuzz_readers.hpp"

#include <perfex/io/frame_fits.hpp>
#include <perfex/io/image_fits.hpp>
#include <perfex/io/psf_files.hpp>
#include <perfex/psf/synthetic.hpp>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

#include <unistd.h>

namespace {

using Bytes = std::vector<std::uint8_t>;

// The synthetic PSF's portable generator (splitmix64), with a bounded draw.
struct Rng : perfex::psf::detail::SplitMix64 {
  std::size_t below(std::size_t n) { return n ? static_cast<std::size_t>(next() % n) : 0; }
};

Bytes file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Offsets of the header cards "KEYWORD = value" (80-byte records in 2880-byte blocks whose
// first card is SIMPLE or XTENSION, up to END).
std::vector<std::size_t> header_cards(const Bytes& b) {
  std::vector<std::size_t> cards;
  for (std::size_t block = 0; block + 2880 <= b.size(); block += 2880) {
    const bool starts =
        std::memcmp(&b[block], "SIMPLE  =", 9) == 0 || std::memcmp(&b[block], "XTENSION=", 9) == 0;
    if (!starts) continue;
    for (std::size_t c = block; c + 80 <= b.size(); c += 80) {
      if (std::memcmp(&b[c], "END     ", 8) == 0) break;
      if (b[c + 8] == '=') cards.push_back(c);
    }
  }
  return cards;
}

const char* const kValues[] = {"0",
                               "-1",
                               "1",
                               "2",
                               "3",
                               "4",
                               "8",
                               "16",
                               "-32",
                               "-64",
                               "64",
                               "999",
                               "100000",
                               "2147483647",
                               "-2147483648",
                               "4294967296",
                               "9223372036854775807",
                               "1E308",
                               "-1E308",
                               "1E-308",
                               "NaN",
                               "0.5",
                               "1E30",
                               "'x'",
                               "''",
                               "T",
                               "F",
                               "'GAUSS-HERMITE'",
                               "'2'",
                               "'4'",
                               "'3'",
                               "'1PD(10)'",
                               "'1000000D'",
                               "'(2,2)'",
                               "'(0)'"};

Bytes mutate(const Bytes& seed, Rng& rng) {
  Bytes b = seed;
  const std::vector<std::size_t> cards = header_cards(b);
  const int rounds = 1 + static_cast<int>(rng.below(3));
  for (int r = 0; r < rounds && !b.empty(); ++r) {
    switch (rng.below(6)) {
      case 0: {  // truncation, often at or near a block boundary
        std::size_t cut = rng.below(b.size());
        if (rng.below(2)) cut = (cut / 2880) * 2880 + rng.below(3) * 80;
        b.resize(std::min(cut, b.size()));
        break;
      }
      case 1: {  // bit flips
        const int n = 1 + static_cast<int>(rng.below(16));
        for (int i = 0; i < n; ++i)
          b[rng.below(b.size())] ^= static_cast<std::uint8_t>(1u << rng.below(8));
        break;
      }
      case 2: {  // a header value replaced by an extreme one
        if (cards.empty()) break;
        const std::size_t c = cards[rng.below(cards.size())];
        if (c + 80 > b.size()) break;
        const char* v = kValues[rng.below(sizeof(kValues) / sizeof(kValues[0]))];
        char field[71];
        std::snprintf(field, sizeof(field), "%20s", v);
        std::memset(&b[c + 10], ' ', 70);
        std::memcpy(&b[c + 10], field, std::strlen(field));
        break;
      }
      case 3: {  // a header card blanked
        if (cards.empty()) break;
        const std::size_t c = cards[rng.below(cards.size())];
        if (c + 80 <= b.size()) std::memset(&b[c], ' ', 80);
        break;
      }
      case 4: {  // a block copied over another
        if (b.size() < 2 * 2880) break;
        const std::size_t from = rng.below(b.size() / 2880) * 2880,
                          to = rng.below(b.size() / 2880) * 2880;
        std::memmove(&b[to], &b[from], 2880);
        break;
      }
      default: {  // data bytes set to NaN / Inf / huge patterns
        const std::uint8_t patterns[][8] = {{0x7f, 0xf8, 0, 0, 0, 0, 0, 0},
                                            {0x7f, 0xf0, 0, 0, 0, 0, 0, 0},
                                            {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff},
                                            {0x7f, 0xef, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}};
        const auto& p = patterns[rng.below(4)];
        const std::size_t at = rng.below(b.size());
        for (std::size_t i = 0; i < 8 && at + i < b.size(); ++i) b[at + i] = p[i];
      }
    }
  }
  return b;
}

// A small valid PSF, preproc image (with FIBERMAP) and frame, as files' bytes.
std::vector<std::pair<std::string, Bytes>> synthetic_seeds() {
  const std::string dir = std::string(std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp") +
                          "/perfex-fuzz-seeds-" + std::to_string(getpid());
  const std::string psf_path = dir + "-psf.fits", img_path = dir + "-img.fits",
                    frame_path = dir + "-frame.fits";
  perfex::psf::SyntheticPsfOptions po;
  po.nfib = 3;
  po.npix_x = 40;
  po.npix_y = 30;
  const auto psf = perfex::psf::make_synthetic_psf(po);
  perfex::io::write_psf(psf_path, psf);
  // The same PSF in the other layouts read_psf reads.
  const std::string v2_path = dir + "-psf-v2.fits", gh2_path = dir + "-psf-gh2.fits",
                    grid_path = dir + "-psf-spotgrid.fits";
  perfex::io::write_psf(v2_path, psf, 2);
  perfex::io::write_psf(gh2_path, perfex::psf::as_gauss_hermite2(psf));
  perfex::psf::SpotGridSampling sampling;
  sampling.rebin = 2;
  sampling.box = 5;
  sampling.fibre_step = 2;
  sampling.nwave = 3;
  perfex::io::write_psf(grid_path, perfex::psf::make_spot_grid_psf(psf, sampling));

  perfex::extract::CcdImage img;
  img.nrows = 30;
  img.ncols = 40;
  img.pixels.assign(1200, 5.0);
  img.ivar.assign(1200, 0.2);
  std::vector<std::int32_t> mask(1200, 0);
  mask[7] = 1;
  perfex::io::write_preproc(img_path, img, mask);
  {
    auto f = perfex::io::FitsFile::open_readwrite(img_path);
    f.create_table("FIBERMAP", 3, {{"FIBER", "J", "", {}}, {"TARGETID", "K", "", {}}});
    f.write_column("FIBER", std::vector<std::int32_t>{0, 1, 2});
    f.write_column("TARGETID", std::vector<long long>{7, 8, 9});
    f.close();
  }

  perfex::extract::Frame fr;
  fr.specmin = 0;
  fr.nspec = 3;
  fr.nwave = 20;
  fr.ndiag = 2;
  const std::size_t n = 60;
  for (int k = 0; k < 20; ++k) fr.wave.push_back(6000.0 + 0.8 * k);
  fr.flux.assign(n, 1.5);
  fr.ivar.assign(n, 2.0);
  fr.mask.assign(n, 0u);
  fr.chi2pix.assign(n, 1.0);
  fr.pixmask_fraction.assign(n, 0.0);
  fr.resolution.assign(n * 5, 0.2);
  perfex::io::write_frame(frame_path, fr, {img_path, psf_path});

  std::vector<std::pair<std::string, Bytes>> seeds{
      {"synthetic PSF", file_bytes(psf_path)},
      {"synthetic preproc", file_bytes(img_path)},
      {"synthetic frame", file_bytes(frame_path)},
      {"synthetic PSF, PSFVER 2", file_bytes(v2_path)},
      {"synthetic GAUSS-HERMITE2", file_bytes(gh2_path)},
      {"synthetic SPOTGRID", file_bytes(grid_path)}};
  for (const auto& p : {psf_path, img_path, frame_path, v2_path, gh2_path, grid_path})
    std::remove(p.c_str());
  return seeds;
}

}  // namespace

int main(int argc, char* argv[]) {
  long iterations = 300;
  double seconds = 60;
  std::uint64_t seed = 20260101;
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--iterations" && i + 1 < argc)
      iterations = std::atol(argv[++i]);
    else if (a == "--seconds" && i + 1 < argc)
      seconds = std::atof(argv[++i]);
    else if (a == "--seed" && i + 1 < argc)
      seed = std::strtoull(argv[++i], nullptr, 10);
    else if (!a.empty() && a[0] == '-') {
      std::cerr << "usage: perfex_fuzz_readers [--iterations N] [--seconds S] [--seed N] "
                   "[SEED-FILE...]\n";
      return 2;
    } else
      files.push_back(a);
  }
  auto seeds = synthetic_seeds();
  // The synthetic seeds' own readers accept them.
  const unsigned expected[] = {1, 2, 4, 1, 1, 1};
  const std::size_t nsynthetic = seeds.size();
  for (const auto& f : files) {
    if (access(f.c_str(), R_OK) != 0) {
      std::cout << "perfex_fuzz_readers: seed " << f << " absent: skipped\n";
      continue;
    }
    seeds.push_back({f, file_bytes(f)});
  }

  const auto t0 = std::chrono::steady_clock::now();
  auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  long total = 0;
  for (std::size_t s = 0; s < seeds.size(); ++s) {
    const Bytes& b = seeds[s].second;
    LLVMFuzzerTestOneInput(b.data(), b.size());
    const unsigned seed_accepted = perfex_fuzz::last_accepted();
    if (s < nsynthetic && (seed_accepted & expected[s]) == 0) {
      std::cout << "perfex_fuzz_readers: FAIL: the " << seeds[s].first << " seed is rejected\n";
      return 1;
    }
    Rng rng{{seed + 1000003ULL * s}};
    long done = 0, accepted[3] = {0, 0, 0};
    for (; done < iterations && elapsed() < seconds; ++done) {
      const Bytes m = mutate(b, rng);
      LLVMFuzzerTestOneInput(m.data(), m.size());
      for (int r = 0; r < 3; ++r) accepted[r] += (perfex_fuzz::last_accepted() >> r) & 1u;
    }
    total += done;
    std::printf(
        "perfex_fuzz_readers: %s (%zu bytes, read by%s%s%s%s): %ld damaged copies, "
        "accepted by read_psf %ld, read_preproc %ld, read_frame %ld; every other one "
        "refused with a perfex::Error\n",
        seeds[s].first.c_str(), b.size(), seed_accepted & 1 ? " read_psf" : "",
        seed_accepted & 2 ? " read_preproc" : "", seed_accepted & 4 ? " read_frame" : "",
        seed_accepted ? "" : " none", done, accepted[0], accepted[1], accepted[2]);
    if (done < iterations)
      std::printf("perfex_fuzz_readers: time limit (%.0f s) reached\n", seconds);
  }
  std::printf("perfex_fuzz_readers: %ld inputs in %.1f s, no crash\n", total, elapsed());
  return 0;
}
