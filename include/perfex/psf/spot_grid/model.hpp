#pragma once
// A SPOTGRID PSF as a model of the PSF concept (psf/model.hpp): SpotGridPsf, whose constructor
// validates the data and uploads them with exec (upload_psf).
#include <Kokkos_Core.hpp>

#include <string>
#include <vector>

#include <perfex/psf/device.hpp>
#include <perfex/psf/model.hpp>
#include <perfex/psf/spot_grid/data.hpp>
#include <perfex/psf/spot_grid/device.hpp>

namespace perfex {
namespace psf {

template <class MemorySpace>
class SpotGridPsf : public FormatModel<MemorySpace, SpotGridDevice<MemorySpace>> {
  using Base = FormatModel<MemorySpace, SpotGridDevice<MemorySpace>>;
  using Base::d_;

 public:
  template <class ExecSpace>
  SpotGridPsf(const ExecSpace& exec, const SpotGridPsfData& data) : Base(data.summary()) {
    data.validate();
    detail::upload_traces(exec, data.xtrace, data.ytrace, data.nfib, d_);
    d_.npos = static_cast<int>(data.spotpos.size());
    d_.nwave = static_cast<int>(data.spotwave.size());
    d_.sny = data.spot_ny;
    d_.snx = data.spot_nx;
    d_.rebin = data.rebin();
    d_.ny = data.box_rows();
    d_.nx = data.box_cols();
    auto vector = [&](const char* label, const std::vector<double>& v) {
      Kokkos::View<double*, MemorySpace> d(std::string(label), v.size());
      detail::copy_to_device(exec, d, v);
      return Kokkos::View<const double*, MemorySpace>(d);
    };
    d_.fiberpos = vector("perfex::psf::fiberpos", data.fiberpos);
    d_.spotpos = vector("perfex::psf::spotpos", data.spotpos);
    d_.spotwave = vector("perfex::psf::spotwave", data.spotwave);
    Kokkos::View<double****, Kokkos::LayoutRight, MemorySpace> s("perfex::psf::spot_grid", d_.npos,
                                                                 d_.nwave, d_.sny, d_.snx);
    detail::copy_to_device(exec, s, data.spots);
    d_.spots = s;
  }
};

static_assert(require_psf_model<SpotGridPsf<Kokkos::HostSpace>>(), "");

}  // namespace psf
}  // namespace perfex
