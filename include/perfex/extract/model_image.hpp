#pragma once
// The model image from the patches' blocks, each on its patch's pixel window, folded into the
// image in the plan's order, pixel by pixel, by the rule of the plan's geometry (ModelFold).
// Each pixel's fold therefore runs over its patches in one order, whatever the backend's thread
// count, the launches the patches ran in, or the processes that extracted ranges of the plan
// (perfex.mpi: each rank sends its blocks, and the process holding the plan's first patches
// folds them after its own): the image is the same to the last bit.
#include <perfex/detail/kokkos_compat.hpp>
#include <perfex/extract/options.hpp>
#include <perfex/extract/patches.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace perfex {
namespace extract {

// What a block holds and how the blocks make the image (each geometry's: model_fold(Geometry),
// geometry.hpp).
//   sum        gpu_specter's: A·(R f), the spots of the patch's kept fibres and core bins times
//              their reconvolved flux, added over the patches.
//   overwrite  specter's ex2d's: A·φ̂, the fit itself (every solved fibre and wavelength), each
//              patch's block written over the blocks of the patches before it.
enum class ModelFold { sum, overwrite };

// Pixels of a patch's block (its window, row after row).
KOKKOS_INLINE_FUNCTION std::int64_t model_block_size(const PatchDesc& p) {
  return static_cast<std::int64_t>(p.row1 - p.row0) * (p.col1 - p.col0);
}

// Folds the blocks of `patches` (in their order) into `model` by `fold`: patch i's block starts
// at blocks(offsets(i)), one row of its window after another. Rows [row0, row1) hold every
// window (rows elsewhere are not touched); one thread per row, so no pixel is shared.
template <class ExecSpace, class Model>
void fold_model_blocks(
    const ExecSpace& exec, const Model& model,
    const Kokkos::View<const double*, typename ExecSpace::memory_space>& blocks,
    const Kokkos::View<const std::int64_t*, typename ExecSpace::memory_space>& offsets,
    const Kokkos::View<const PatchDesc*, typename ExecSpace::memory_space>& patches, int row0,
    int row1, ModelFold fold) {
  const bool overwrite = fold == ModelFold::overwrite;
  const int count = static_cast<int>(patches.extent(0));
  Kokkos::parallel_for(
      "perfex::extract::fold_model_blocks",
      Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<int>>(exec, row0, std::max(row0, row1)),
      KOKKOS_LAMBDA(int row) {
        for (int i = 0; i < count; ++i) {
          const PatchDesc p = patches(i);
          if (row < p.row0 || row >= p.row1) continue;
          const int wcols = p.col1 - p.col0;
          const double* block =
              &blocks(offsets(i) + static_cast<std::int64_t>(row - p.row0) * wcols);
          for (int c = 0; c < wcols; ++c) {
            double& pixel = model(row, p.col0 + c);
            pixel = overwrite ? block[c] : pixel + block[c];
          }
        }
      });
}

// The same on the host, for blocks packed one after another (a range's Frame::model_blocks)
// and an image in host memory (rows x cols, row-major).
inline void fold_model_blocks(double* model, int rows, int cols,
                              const std::vector<PatchDesc>& patches, const double* blocks,
                              std::size_t nblocks_values, ModelFold fold) {
  using Host = Kokkos::DefaultHostExecutionSpace;
  std::vector<std::int64_t> offsets(patches.size());
  std::int64_t total = 0;
  int row0 = rows, row1 = 0;
  for (std::size_t i = 0; i < patches.size(); ++i) {
    offsets[i] = total;
    total += model_block_size(patches[i]);
    row0 = std::min(row0, patches[i].row0);
    row1 = std::max(row1, patches[i].row1);
  }
  if (static_cast<std::size_t>(total) != nblocks_values)
    throw Error("model blocks: " + std::to_string(nblocks_values) + " values for patches of " +
                std::to_string(total) + " window pixels");
  for (const PatchDesc& p : patches)
    if (p.row0 < 0 || p.col0 < 0 || p.row1 > rows || p.col1 > cols)
      throw Error("model blocks: a patch window lies outside the " + std::to_string(rows) + " x " +
                  std::to_string(cols) + " image");
  fold_model_blocks(
      Host(), Kokkos::View<double**, Kokkos::LayoutRight, Kokkos::HostSpace>(model, rows, cols),
      Kokkos::View<const double*, Kokkos::HostSpace>(blocks, nblocks_values),
      Kokkos::View<const std::int64_t*, Kokkos::HostSpace>(offsets.data(), offsets.size()),
      Kokkos::View<const PatchDesc*, Kokkos::HostSpace>(patches.data(), patches.size()), row0, row1,
      fold);
  Host().fence();
}

}  // namespace extract
}  // namespace perfex
