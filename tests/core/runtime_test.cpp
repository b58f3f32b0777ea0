// perfex/runtime.hpp: execution spaces by name, the host thread cap, and how processes share a
// node's GPUs (tag [core]).
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

TEST_CASE("runtime: a node's GPUs dealt to its processes, the budget shared", "[core]") {
  // 2 I/O ranks + 5 workers per GPU on a 4-GPU node: 28 local ranks.
  CHECK(perfex::device_for_rank(0, 4) == 0);
  CHECK(perfex::device_for_rank(5, 4) == 1);
  CHECK(perfex::device_for_rank(27, 4) == 3);
  CHECK(perfex::device_for_rank(27, 4, 2) == 2);  // the user's choice wins
  CHECK(perfex::device_for_rank(3, 0) == -1);     // no GPU
  CHECK_THROWS_AS(perfex::device_for_rank(0, 4, 4), perfex::RequestError);
  int total = 0;
  for (int device = 0; device < 4; ++device) {
    int dealt = 0;
    for (int rank = 0; rank < 30; ++rank) dealt += perfex::device_for_rank(rank, 4) == device;
    CHECK(perfex::ranks_sharing_device(device, 30, 4) == dealt);
    total += dealt;
  }
  CHECK(total == 30);
  CHECK(perfex::ranks_sharing_device(0, 1, 1) == 1);
  CHECK(perfex::ranks_sharing_device(-1, 8, 0) == 1);
  // Half the free memory, shared: 5 ranks on a GPU with 140 GB free get 14 GB each.
  CHECK(perfex::shared_device_budget(140'000'000'000LL, 5) == 14'000'000'000LL);
  CHECK(perfex::shared_device_budget(1000, 0) == 500);
  perfex::set_device_sharers(7);
  CHECK(perfex::device_sharers() == 7);
  perfex::set_device_sharers(0);
  CHECK(perfex::device_sharers() == 1);
}
