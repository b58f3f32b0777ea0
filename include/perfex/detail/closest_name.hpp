#pragma once
// The near match of a mistyped name among the known ones, for "did you mean ...?" in the
// messages of unknown options (the tools' command line, the Python package's keywords).
#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>

namespace perfex {

// The optimal string alignment distance of a and b: insertions, deletions, substitutions and
// transpositions of two adjacent characters ("nspce") each count 1.
inline std::size_t edit_distance(const std::string& a, const std::string& b) {
  const std::size_t n = a.size(), m = b.size();
  // Three rows of the dynamic programming table: i - 2, i - 1 and i.
  std::vector<std::size_t> before(m + 1), previous(m + 1), row(m + 1);
  for (std::size_t j = 0; j <= m; ++j) previous[j] = j;
  for (std::size_t i = 1; i <= n; ++i) {
    row[0] = i;
    for (std::size_t j = 1; j <= m; ++j) {
      const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      row[j] = std::min({previous[j] + 1, row[j - 1] + 1, previous[j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        row[j] = std::min(row[j], before[j - 2] + 1);
    }
    std::swap(before, previous);
    std::swap(previous, row);
  }
  return previous[m];
}

// The name of `names` nearest to `word`, the first of equally near ones, or "" when none is
// near: a quarter of the word's characters may differ, at least 1 and at most 3 (a word of
// fewer than 3 characters, as "-x", has no near match: every short option would be one).
inline std::string closest_name(const std::string& word, const std::vector<std::string>& names) {
  if (word.size() < 3) return "";
  const std::size_t allowed = std::clamp<std::size_t>(word.size() / 4, 1, 3);
  std::string best;
  std::size_t best_distance = allowed + 1;
  for (const std::string& name : names) {
    const std::size_t d = edit_distance(word, name);
    if (d < best_distance) {
      best = name;
      best_distance = d;
    }
  }
  return best;
}

}  // namespace perfex
