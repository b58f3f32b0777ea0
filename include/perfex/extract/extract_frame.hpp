#pragma once
// Frame extraction driver: bundles → sub-bundles → wavelength patches, solved in batches on
// the execution space, stitched into a Frame (spec §5).
#include <perfex/extract/frame.hpp>
#include <perfex/extract/image.hpp>
#include <perfex/extract/options.hpp>
#include <perfex/psf/psf_data.hpp>

#include <functional>

namespace perfex {
namespace extract {

// Called on the host after each batch of patches: (patches done, patches in total).
using ProgressCallback = std::function<void(int, int)>;

template <class ExecSpace>
Frame extract_frame(const ExecSpace& exec, const psf::GaussHermitePsfData& psf, const CcdImage& image,
                    const ExtractionOptions& options, const ProgressCallback& progress = {});

}  // namespace extract
}  // namespace perfex
