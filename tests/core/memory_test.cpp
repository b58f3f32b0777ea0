// perfex/memory.hpp: host and device memory, how processes share a node's GPUs, and the default
// memory budget (tag [core]).
#include "perfex_test.hpp"

#include <perfex/memory.hpp>

#include <limits>

TEST_CASE("memory: a node's GPUs dealt to its processes, the budget shared", "[core]") {
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

PERFEX_BACKEND_TEST_CASE("memory: host backends plan with 512 MiB, devices with a share of theirs",
                         "[core]") {
  PERFEX_ONLY_SELECTED_BACKEND();
  CHECK(perfex::available_host_memory() > 0);
  if constexpr (perfex::reaches_host_memory<TestType>()) {
    CHECK(perfex::free_device_memory<TestType>() == std::numeric_limits<double>::infinity());
    CHECK(perfex::default_memory_budget<TestType>() == std::int64_t(512) << 20);
  } else {
    const double free = perfex::free_device_memory<TestType>();
    REQUIRE(free < std::numeric_limits<double>::infinity());
    CHECK(perfex::default_memory_budget<TestType>() ==
          perfex::shared_device_budget(static_cast<std::int64_t>(free), perfex::device_sharers()));
  }
}
