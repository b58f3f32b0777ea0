#pragma once
// specex's GAUSS-HERMITE2 PSF as a model of the PSF concept (psf/model.hpp): GaussHermite2Psf,
// whose constructor validates the data and uploads them with exec (upload_psf).
#include <Kokkos_Core.hpp>

#include <vector>

#include <perfex/psf/device.hpp>
#include <perfex/psf/gauss_hermite2/data.hpp>
#include <perfex/psf/gauss_hermite2/device.hpp>
#include <perfex/psf/model.hpp>

namespace perfex {
namespace psf {

template <class MemorySpace>
class GaussHermite2Psf : public FormatModel<MemorySpace, GaussHermite2Device<MemorySpace>> {
  using Base = FormatModel<MemorySpace, GaussHermite2Device<MemorySpace>>;
  using Base::d_;

 public:
  template <class ExecSpace>
  GaussHermite2Psf(const ExecSpace& exec, const GaussHermite2PsfData& data) : Base(data.summary()) {
    data.validate();
    const GaussHermitePsfData& g = data.gh;
    detail::upload_table(exec, g, d_);  // TAILAMP is a parameter (validate)
    d_.dx1 = g.ghdegx;
    d_.dy1 = g.ghdegy;
    d_.dx2 = data.ghdegx2;
    d_.dy2 = data.ghdegy2;
    d_.row_nsig = g.param_index("GHNSIG");
    d_.row_sigx2 = g.param_index("GHSIGX2");
    d_.row_sigy2 = g.param_index("GHSIGY2");
    std::vector<int> r1, r2;
    for (int i = 0; i <= d_.dx1; ++i)
      for (int j = 0; j <= d_.dy1; ++j)
        r1.push_back(g.param_index(GaussHermitePsfData::core_name(i, j)));
    for (int i = 0; i <= d_.dx2; ++i)
      for (int j = 0; j <= d_.dy2; ++j)
        r2.push_back(g.param_index(GaussHermite2PsfData::core2_name(i, j)));
    Kokkos::View<int*, MemorySpace> v1("perfex::psf::gh2_rows1", r1.size()),
        v2("perfex::psf::gh2_rows2", r2.size());
    detail::copy_to_device(exec, v1, r1);
    detail::copy_to_device(exec, v2, r2);
    d_.rows1 = v1;
    d_.rows2 = v2;
  }
};

static_assert(require_psf_model<GaussHermite2Psf<Kokkos::HostSpace>>(), "");

}  // namespace psf
}  // namespace perfex
