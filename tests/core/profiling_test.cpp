// perfex/profiling.hpp: phases in the order they started, nested by construction (tag [core]).
#include "perfex_test.hpp"

#include <perfex/profiling.hpp>

#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace {

std::vector<std::pair<std::string, int>> names(const perfex::PhaseTimes& times) {
  std::vector<std::pair<std::string, int>> out;
  for (const perfex::PhaseTime& p : times.list()) out.emplace_back(p.name, p.depth);
  return out;
}

}  // namespace

TEST_CASE("profiling: a phase started inside another sits one level below it", "[core]") {
  perfex::PhaseTimes times;
  {
    perfex::Phase outer("driver::outer", times);
    CHECK(times.level() == 1);
    perfex::Phase inner("job::inner", times);
    CHECK(times.level() == 2);
    inner.stop();
    // A driver's own phases, appended once its phase stopped: one level below the open ones.
    perfex::PhaseTimes plan;
    { perfex::Phase step("plan::step", plan); }
    times.append(plan, 1);
    CHECK(times.level() == 1);
  }
  CHECK(times.level() == 0);
  { perfex::Phase again("job::inner", times); }  // a new phase at the top: its own entry
  using Names = std::vector<std::pair<std::string, int>>;
  CHECK(names(times) ==
        Names{{"driver::outer", 0}, {"job::inner", 1}, {"plan::step", 2}, {"job::inner", 0}});
  for (const perfex::PhaseTime& p : times.list()) CHECK(p.seconds >= 0);
}

TEST_CASE("profiling: a phase that runs again adds to its entry; an exception closes it",
          "[core]") {
  perfex::PhaseTimes times;
  for (int i = 0; i < 3; ++i) {
    perfex::Phase phase("loop::step", times);
  }
  CHECK_THROWS_AS(([&] {
                    perfex::Phase failing("loop::failing", times);
                    throw std::runtime_error("stop");
                  })(),
                  std::runtime_error);
  CHECK(times.level() == 0);
  REQUIRE(times.list().size() == 2);
  CHECK(times.list()[0].name == "loop::step");
  CHECK(times.list()[1].name == "loop::failing");
  CHECK(times.list()[1].depth == 0);
}

TEST_CASE("profiling: phases ended out of order leave the later phases at their depth", "[core]") {
  perfex::PhaseTimes times;
  auto first = std::make_unique<perfex::Phase>("a", times);
  auto second = std::make_unique<perfex::Phase>("b", times);  // (another thread's, say)
  first.reset();
  CHECK(times.level() == 2);  // b is still open, at depth 1
  second.reset();
  CHECK(times.level() == 0);
  { perfex::Phase after("c", times); }
  using Names = std::vector<std::pair<std::string, int>>;
  CHECK(names(times) == Names{{"a", 0}, {"b", 1}, {"c", 0}});
}
