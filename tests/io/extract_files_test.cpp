// The files -> frame job's result (io/extract_files.hpp).
#include "perfex_test.hpp"

#ifdef PERFEX_TEST_HAVE_IO
#include <perfex/io/extract_files.hpp>

TEST_CASE("io: a files job's times come from its phases, the request's check in none", "[io]") {
  perfex::PhaseTimes times;
  times.add("files::inputs", 0, 1.0);
  times.add("job::check", 0, 2.0);
  times.add("job::plan", 0, 4.0);
  times.add("plan_frame", 1, 64.0);  // inside job::plan: not counted again
  times.add("files::read", 0, 8.0);
  times.add("job::extract", 0, 16.0);
  times.add("files::write", 0, 32.0);
  perfex::io::FilesResult r;
  perfex::io::set_times(r, times);
  CHECK(r.read_seconds == 9.0);
  CHECK(r.seconds == 20.0);
  CHECK(r.write_seconds == 32.0);
}

#endif
