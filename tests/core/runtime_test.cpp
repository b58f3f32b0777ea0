// perfex/runtime.hpp and backends.hpp: execution spaces by name and the host thread cap (tag
// [core]).
#include "perfex_test.hpp"

#include <perfex/runtime.hpp>

TEST_CASE("runtime: backends by name, preferred first", "[core]") {
  const auto names = perfex::backend_names();
  REQUIRE(!names.empty());
  CHECK(perfex::default_backend() == names.front());
  CHECK(perfex::default_backend(false) != "cuda");
  for (const auto& name : names) {
    CHECK_NOTHROW(perfex::check_backend(name));
    CHECK(perfex::with_backend(name, [](const auto& exec) {
            return perfex::backend_name<std::decay_t<decltype(exec)>>();
          }) == name);
  }
  CHECK_THROWS_AS(perfex::check_backend("vulkan"), perfex::RequestError);
  CHECK_THROWS_WITH(perfex::with_backend("vulkan", [](const auto&) { return 0; }),
                    Catch::Contains("'vulkan' is not one of this build's execution spaces"));
}
