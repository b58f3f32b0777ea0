#pragma once
// Host-side planning of a frame's work: its patches (patches.hpp; bundles and windows by the
// plan's geometry, geometry.hpp), then how they are cut into spot groups and solver launches
// within a memory budget.
#include <perfex/error.hpp>
#include <perfex/extract/geometry.hpp>
#include <perfex/extract/patches.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

namespace perfex {
namespace extract {

// The frame's sub-bundles in order, each with the fibres its patches solve (absolute, with the
// padding) and its patches' positions in plan_frame_patches' list.
struct SubBundleSpan {
  int fibre_lo = 0, fibre_hi = 0;
  int patch_lo = 0, patch_hi = 0;
};

inline std::vector<SubBundleSpan> subbundle_spans(const std::vector<BundlePlan>& bundles,
                                                  int patches_per_subbundle) {
  std::vector<SubBundleSpan> spans;
  int patch = 0;
  for (const BundlePlan& b : bundles)
    for (const SubBundle& sub : b.subbundles) {
      const FibreRange solved = solved_fibres(b, sub);
      spans.push_back({solved.lo, solved.hi, patch, patch + patches_per_subbundle});
      patch += patches_per_subbundle;
    }
  return spans;
}

// Consecutive sub-bundles whose spots are computed in one launch and kept while their patches
// are solved.
struct SpotGroup {
  int fibre_lo = 0, fibre_hi = 0;  // absolute fibres whose spots the group's patches use
  int patch_lo = 0, patch_hi = 0;  // the group's patches in the frame's list
};

// How a frame's patches run within a memory budget: the spot groups, the patches per solver
// launch, and what that allocates.
struct LaunchPlan {
  std::vector<SpotGroup> groups;
  int batch = 0;            // patches per solver launch at most (the scratch's slices)
  int spot_fibres = 0;      // fibres of the largest group (the spot buffer's)
  int solver_launches = 0;  // over all groups
  std::int64_t bytes = 0;   // spot buffer + patch scratch
};

// Sets plan's batch from at most batch patches per launch, as many launches per group, as even
// as they can be (the least scratch), with the launches and bytes that follow.
inline void set_batch(LaunchPlan& plan, int batch, double spot_bytes_per_fibre,
                      double bytes_per_patch) {
  int even = 1, launches = 0;
  for (const SpotGroup& g : plan.groups) {
    const int n = g.patch_hi - g.patch_lo, per = (n + batch - 1) / batch;
    if (per > 0) even = std::max(even, (n + per - 1) / per);
    launches += per;
  }
  plan.batch = even;
  plan.solver_launches = launches;
  plan.bytes =
      static_cast<std::int64_t>(spot_bytes_per_fibre * plan.spot_fibres + bytes_per_patch * even);
}

// Chooses the spot groups (consecutive sub-bundles, near-equal in size) and the batch so that
// the spots of a group (spot_bytes_per_fibre each) and batch patches' scratch
// (bytes_per_patch each) fit in budget bytes together, with the fewest solver launches, then
// the fewest groups (spot launches). max_batch > 0 caps the batch. Throws when even one
// sub-bundle's spots and one patch do not fit.
inline LaunchPlan plan_launches(const std::vector<SubBundleSpan>& spans,
                                double spot_bytes_per_fibre, double bytes_per_patch, double budget,
                                int max_batch = 0) {
  const int nspans = static_cast<int>(spans.size());
  LaunchPlan best;
  double smallest_need = -1;
  for (int ngroups = 1; ngroups <= nspans; ++ngroups) {
    std::vector<SpotGroup> groups;
    int spot_fibres = 0, largest = 0;
    for (int g = 0; g < ngroups; ++g) {
      const SubBundleSpan& first = spans[static_cast<std::size_t>(g * nspans / ngroups)];
      const SubBundleSpan& last = spans[static_cast<std::size_t>((g + 1) * nspans / ngroups - 1)];
      groups.push_back({first.fibre_lo, last.fibre_hi, first.patch_lo, last.patch_hi});
      spot_fibres = std::max(spot_fibres, last.fibre_hi - first.fibre_lo);
      largest = std::max(largest, last.patch_hi - first.patch_lo);
    }
    const double spot_bytes = spot_bytes_per_fibre * spot_fibres;
    const double need = spot_bytes + bytes_per_patch;
    if (smallest_need < 0 || need < smallest_need) smallest_need = need;
    if (need > budget) continue;
    int batch = static_cast<int>(
        std::min<double>(largest, std::floor((budget - spot_bytes) / bytes_per_patch)));
    if (max_batch > 0) batch = std::min(batch, max_batch);
    int launches = 0;
    for (const SpotGroup& g : groups) launches += (g.patch_hi - g.patch_lo + batch - 1) / batch;
    if (!best.groups.empty() && launches >= best.solver_launches) continue;
    best.groups = groups;
    best.spot_fibres = spot_fibres;
    set_batch(best, batch, spot_bytes_per_fibre, bytes_per_patch);
  }
  if (best.groups.empty() && nspans > 0) {
    auto mib = [](double bytes) {
      char text[32];
      std::snprintf(text, sizeof text, "%.1f MiB", bytes / 1048576.0);
      return std::string(text);
    };
    throw Error("extraction option memory_budget: " + mib(budget) + " is less than the " +
                mib(smallest_need) + " that one sub-bundle's spots and one patch's scratch need");
  }
  return best;
}

}  // namespace extract
}  // namespace perfex
