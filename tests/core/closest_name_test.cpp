// The near match of a mistyped name (the tools' unknown options, the Python keywords).
#include <catch2/catch.hpp>

#include <perfex/detail/closest_name.hpp>

#include <string>
#include <vector>

TEST_CASE("closest_name: the near match of a mistyped name, or none", "[core]") {
  using perfex::closest_name;
  using perfex::edit_distance;
  CHECK(edit_distance("", "") == 0);
  CHECK(edit_distance("abc", "") == 3);
  CHECK(edit_distance("nspec", "nspce") == 1);  // a transposition counts once
  CHECK(edit_distance("kitten", "sitting") == 3);
  CHECK(edit_distance("ca", "abc") == 3);  // optimal string alignment: no edit of a swapped pair

  const std::vector<std::string> options{"--nspec", "--nsubbundles", "--nwavestep", "--regularize"};
  CHECK(closest_name("--nsubbundle", options) == "--nsubbundles");
  CHECK(closest_name("--regularise", options) == "--regularize");
  CHECK(closest_name("--nspce", options) == "--nspec");
  CHECK(closest_name("--frobnicate", options).empty());
  CHECK(closest_name("anything", {}).empty());
  // Short words have no near match; the allowance grows with the word, up to 3 edits.
  CHECK(closest_name("-x", {"-h", "-i"}).empty());
  CHECK(closest_name("nspc", {"nspec"}) == "nspec");
  CHECK(closest_name("ns", {"nspec"}).empty());
  CHECK(closest_name("wavepad_fraction", {"wavepad_frac"}).empty());  // 4 edits
  CHECK(closest_name("wavepad_fracti", {"wavepad_frac"}) == "wavepad_frac");
  // The nearest wins, the first of equally near ones.
  CHECK(closest_name("nspecc", {"specmin", "nspec"}) == "nspec");
  CHECK(closest_name("abcd", {"abce", "abcf"}) == "abce");
}
