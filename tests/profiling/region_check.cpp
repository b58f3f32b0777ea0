// region_check LOG EXPECTED: the regions and kernels region_recorder logged, as a tree (one line
// per region, and per run of consecutive kernels of one name, indented two spaces per level),
// must be EXPECTED's; every kernel a perfex kernel ("perfex::...") or one of Kokkos' own
// ("Kokkos::...", left out of the tree), every region perfex's ("perfex::..."), and every
// region popped. Prints the tree and the first difference.
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: region_check LOG EXPECTED\n";
    return 2;
  }
  std::ifstream log(argv[1]), expected_file(argv[2]);
  if (!log || !expected_file) {
    std::cerr << "region_check: cannot read " << (log ? argv[2] : argv[1]) << "\n";
    return 2;
  }
  std::vector<std::string> tree, errors;
  int depth = 0;
  std::string line, last_kernel;
  const auto indent = [&] { return std::string(2 * static_cast<std::size_t>(depth), ' '); };
  while (std::getline(log, line)) {
    if (line.rfind("push ", 0) == 0) {
      const std::string name = line.substr(5);
      if (name.rfind("perfex::", 0) != 0) errors.push_back("a region not perfex's: " + name);
      tree.push_back(indent() + name);
      ++depth;
      last_kernel.clear();
    } else if (line == "pop") {
      if (--depth < 0) errors.push_back("a region popped that was not pushed");
      last_kernel.clear();
    } else if (line.rfind("kernel ", 0) == 0) {
      const std::string name = line.substr(7);
      if (name.rfind("Kokkos::", 0) == 0) continue;
      if (name.rfind("perfex::", 0) != 0) errors.push_back("a kernel not named perfex::: " + name);
      if (name != last_kernel) tree.push_back(indent() + "kernel " + name);
      last_kernel = name;
    }
  }
  if (depth != 0) errors.push_back(std::to_string(depth) + " regions never popped");
  std::vector<std::string> expected;
  while (std::getline(expected_file, line))
    if (!line.empty() && line[0] != '#') expected.push_back(line);
  for (std::size_t i = 0; i < std::max(tree.size(), expected.size()) && errors.empty(); ++i) {
    const std::string got = i < tree.size() ? tree[i] : "(end)";
    const std::string want = i < expected.size() ? expected[i] : "(end)";
    if (got != want)
      errors.push_back("line " + std::to_string(i + 1) + ": got '" + got + "', expected '" + want +
                       "'");
  }
  for (const std::string& t : tree) std::cout << t << "\n";
  for (const std::string& e : errors) std::cerr << "region_check: " << e << "\n";
  return errors.empty() ? 0 : 1;
}
