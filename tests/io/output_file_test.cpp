// Output paths: symbolic links are written through, anything but a regular file is refused,
// "same file" is decided by device/inode (or canonical folder + name before creation), and
// the temporaries of an interrupted write are removable from a signal handler.
#include "perfex_test.hpp"

#ifdef PERFEX_TEST_HAVE_IO
#include "io/io_test_util.hpp"

#include <perfex/io/output_file.hpp>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <sys/stat.h>
#include <unistd.h>

using perfex::io::check_output_path;
using perfex::io::file_identity;
using perfex::io::output_target;
using perfex::io::same_file;

namespace {

bool exists(const std::string& path) {
  struct stat st;
  return lstat(path.c_str(), &st) == 0;
}

}  // namespace

TEST_CASE("io: output paths resolve through symbolic links", "[io]") {
  perfex_io_test::TempDir tmp;
  const std::string a = tmp.file("a.fits"), b = tmp.file("b.fits"), c = tmp.file("c.fits");
  CHECK(output_target(a) == a);
  REQUIRE(symlink("b.fits", a.c_str()) == 0);  // relative, resolved from the link's folder
  REQUIRE(symlink(c.c_str(), b.c_str()) == 0);
  CHECK(output_target(a) == c);  // c does not exist yet: a dangling chain is fine
  REQUIRE_NOTHROW(check_output_path(a));

  const std::string loop1 = tmp.file("loop1"), loop2 = tmp.file("loop2");
  REQUIRE(symlink("loop2", loop1.c_str()) == 0);
  REQUIRE(symlink("loop1", loop2.c_str()) == 0);
  CHECK_THROWS_WITH(output_target(loop1), Catch::Contains("too many levels of symbolic links"));
  CHECK_THROWS_WITH(output_target(""), Catch::Contains("empty output file name"));
}

TEST_CASE("io: only regular files are ever replaced", "[io]") {
  perfex_io_test::TempDir tmp;
  using Catch::Contains;
  CHECK_THROWS_WITH(check_output_path("/dev/null", "option -o/--output"),
                    Contains("option -o/--output: /dev/null exists and is a character device"));
  CHECK_THROWS_WITH(check_output_path(tmp.file("")), Contains("is a directory"));
  const std::string fifo = tmp.file("fifo");
  REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
  CHECK_THROWS_WITH(check_output_path(fifo), Contains("is a FIFO"));
  const std::string link = tmp.file("null.fits");
  REQUIRE(symlink("/dev/null", link.c_str()) == 0);
  CHECK_THROWS_WITH(check_output_path(link),
                    Contains("/dev/null (the target of the link " + link + ")"));
  CHECK_THROWS_WITH(check_output_path(tmp.file("no/such/folder.fits")),
                    Contains(tmp.file("no/such")) && Contains("No such file"));
  { std::ofstream(tmp.file("plain")) << "x"; }
  CHECK_THROWS_WITH(check_output_path(tmp.file("plain/frame.fits")),
                    Contains("is not a folder") || Contains("Not a directory"));
  CHECK_NOTHROW(check_output_path(tmp.file("new.fits")));
  CHECK_NOTHROW(check_output_path(tmp.file("plain")));

  // write_atomically refuses the same way and leaves the device alone.
  bool ran = false;
  CHECK_THROWS_WITH(perfex::io::write_atomically(fifo, [&](const std::string&) { ran = true; }),
                    Contains("FIFO"));
  CHECK_FALSE(ran);
  struct stat st;
  REQUIRE(stat(fifo.c_str(), &st) == 0);
  CHECK(S_ISFIFO(st.st_mode));
}

TEST_CASE("io: same file by device and inode, or by canonical name before creation", "[io]") {
  perfex_io_test::TempDir tmp;
  REQUIRE(mkdir(tmp.file("d").c_str(), 0700) == 0);
  const std::string x = tmp.file("d/x.fits");
  { std::ofstream(x) << "x"; }
  const std::string hard = tmp.file("hard.fits"), soft = tmp.file("soft.fits");
  REQUIRE(link(x.c_str(), hard.c_str()) == 0);
  REQUIRE(symlink(x.c_str(), soft.c_str()) == 0);
  const auto id = file_identity(x);
  CHECK(id.exists);
  CHECK(same_file(id, file_identity(tmp.file("d/../d/./x.fits"))));
  CHECK(same_file(id, file_identity(hard)));
  CHECK(same_file(id, file_identity(soft)));
  CHECK_FALSE(same_file(id, file_identity(tmp.file("d/y.fits"))));

  // Outputs that do not exist yet.
  const auto y = file_identity(tmp.file("d/y.fits"));
  CHECK_FALSE(y.exists);
  CHECK(same_file(y, file_identity(tmp.file("d/../d/./y.fits"))));
  CHECK_FALSE(same_file(y, file_identity(tmp.file("d/z.fits"))));
  const std::string to_y = tmp.file("to-y.fits");
  REQUIRE(symlink("d/y.fits", to_y.c_str()) == 0);
  CHECK(same_file(y, file_identity(to_y)));
}

TEST_CASE("io: temporaries are removed on errors and by the signal-time cleanup", "[io]") {
  perfex_io_test::TempDir tmp;
  const std::string out = tmp.file("out.fits");
  std::string seen;
  CHECK_THROWS_WITH(perfex::io::write_atomically(out,
                                                 [&](const std::string& t) {
                                                   seen = t;
                                                   CHECK(exists(t));
                                                   throw perfex::Error("body failed");
                                                 }),
                    Catch::Contains("body failed"));
  CHECK(seen.find("/.out.fits.tmp-") != std::string::npos);
  CHECK_FALSE(exists(seen));
  CHECK_FALSE(exists(out));

  // What a signal handler does: every temporary being written disappears at once.
  perfex::io::write_atomically(out, [&](const std::string& t) {
    seen = t;
    { std::ofstream(t) << "partial"; }
    perfex::io::output_detail::temp_files.unlink_all();
    CHECK_FALSE(exists(t));
    { std::ofstream(t) << "complete"; }  // (the test goes on writing: no signal was raised)
  });
  CHECK_FALSE(exists(seen));
  std::ifstream in(out);
  std::string text;
  in >> text;
  CHECK(text == "complete");
}
namespace {

std::string content(const std::string& path) {
  std::ifstream in(path);
  std::string text;
  in >> text;
  return text;
}

// Adds an output whose content is `text` to the set.
void add_text(perfex::io::OutputSet& set, const std::string& path, const std::string& text) {
  set.add(path, [&](const std::string& t) { std::ofstream(t) << text; });
}

// The hidden temporaries next to `path` (.NAME.<tag>-XXXXXX).
std::vector<std::string> temporaries(const std::string& folder) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(folder))
    if (e.path().filename().string()[0] == '.') out.push_back(e.path().string());
  return out;
}

}  // namespace

TEST_CASE("io: an output set changes all its outputs or none", "[io]") {
  perfex_io_test::TempDir tmp;
  const std::string a = tmp.file("a"), b = tmp.file("b"), c = tmp.file("c");
  { std::ofstream(a) << "old-a"; }
  { std::ofstream(b) << "old-b"; }

  SECTION("a target that became a folder after the writes: nothing is renamed") {
    perfex::io::OutputSet set;
    add_text(set, a, "new-a");
    add_text(set, c, "new-c");
    REQUIRE(mkdir(c.c_str(), 0755) == 0);
    CHECK_THROWS_WITH(set.commit(), Catch::Contains(c + ": it is now a directory") &&
                                        Catch::Contains("no output of the set was changed"));
    CHECK(content(a) == "old-a");
  }
  SECTION("a rename that fails: the outputs renamed before get their old files back") {
    {
      perfex::io::OutputSet set;
      add_text(set, a, "new-a");
      add_text(set, c, "new-c");  // a new output: removed again
      add_text(set, b, "new-b");
      for (const std::string& t : temporaries(tmp.file("")))
        if (t.find(".b.tmp-") != std::string::npos) REQUIRE(::unlink(t.c_str()) == 0);
      CHECK_THROWS_WITH(set.commit(),
                        Catch::Contains("cannot rename") &&
                            Catch::Contains("the set's other outputs were left as they were"));
      CHECK(content(a) == "old-a");
      CHECK(content(b) == "old-b");
      CHECK_FALSE(exists(c));
    }
    CHECK(temporaries(tmp.file("")).empty());
  }
  SECTION("a commit keeps no temporary") {
    perfex::io::OutputSet set;
    add_text(set, a, "new-a");
    add_text(set, b, "new-b");
    set.commit();
    CHECK(content(a) == "new-a");
    CHECK(content(b) == "new-b");
    CHECK(temporaries(tmp.file("")).empty());
  }
}

TEST_CASE("io: one file is one output of a set, whatever its names", "[io]") {
  perfex_io_test::TempDir tmp;
  const std::string c = tmp.file("c");
  REQUIRE(symlink("c", tmp.file("link").c_str()) == 0);
  for (const std::string& second : {tmp.file("./c"), tmp.file("link")}) {
    perfex::io::OutputSet set;
    add_text(set, c, "first");
    CHECK_THROWS_WITH(add_text(set, second, "second"),
                      Catch::Contains("output " + second + " is the same file as output " + c));
    set.commit();
    CHECK(content(c) == "first");
  }
}
#endif
