#pragma once
// specex's GaussHermite PSF as a model of the PSF concept (psf/model.hpp): GaussHermitePsf,
// whose constructor uploads the data (upload_psf), and its parameters' kernel
// (evaluate_params).
#include <Kokkos_Core.hpp>

#include <cstddef>
#include <string>
#include <vector>

#include <perfex/error.hpp>
#include <perfex/psf/device.hpp>
#include <perfex/psf/gauss_hermite/data.hpp>
#include <perfex/psf/gauss_hermite/device.hpp>
#include <perfex/psf/kernels.hpp>
#include <perfex/psf/model.hpp>

namespace perfex {
namespace psf {

template <class MemorySpace>
class GaussHermitePsf : public FormatModel<MemorySpace, GaussHermiteDevice<MemorySpace>> {
  using Base = FormatModel<MemorySpace, GaussHermiteDevice<MemorySpace>>;
  using Base::d_;

 public:
  explicit GaussHermitePsf(const GaussHermitePsfData& data)
      : GaussHermitePsf(typename MemorySpace::execution_space(), data) {}

  // Validates the data and copies them with exec (upload_psf).
  template <class ExecSpace>
  GaussHermitePsf(const ExecSpace& exec, const GaussHermitePsfData& data) : Base(data.summary()) {
    data.validate();
    detail::upload_table(exec, data, d_);
    d_.nfib = data.nfib;
    d_.nparam = data.nparam();
    d_.dx = data.ghdegx;
    d_.dy = data.ghdegy;
    if (d_.row_tailamp >= 0) {
      for (int f = 0; f < data.nfib; ++f) {
        for (int m = 0; m < data.ncoeff(); ++m)
          d_.tails = d_.tails || data.c(d_.row_tailamp, f, m) != 0.0;
      }
    }
    const int nij = (d_.dx + 1) * (d_.dy + 1);
    Kokkos::View<double***, Kokkos::LayoutRight, MemorySpace> gh("perfex::psf::ghcoeff", d_.nfib,
                                                                 d_.ncp, nij);
    std::vector<double> ghc(static_cast<std::size_t>(d_.nfib) * d_.ncp * nij);
    for (int i = 0; i <= d_.dx; ++i) {
      for (int j = 0; j <= d_.dy; ++j) {
        const int row = data.param_index(GaussHermitePsfData::core_name(i, j));
        for (int f = 0; f < d_.nfib; ++f) {
          for (int m = 0; m < d_.ncp; ++m)
            ghc[(static_cast<std::size_t>(f) * d_.ncp + m) * nij + i * (d_.dy + 1) + j] =
                data.c(row, f, m);
        }
      }
    }
    detail::copy_to_device(exec, gh, ghc);
    d_.ghcoeff = gh;
  }

  int nparam() const { return d_.nparam; }
  int nx() const { return 2 * d_.hx + 1; }
  int ny() const { return 2 * d_.hy + 1; }
  bool has_tails() const { return d_.tails; }
};

static_assert(require_psf_model<GaussHermitePsf<Kokkos::HostSpace>>(), "");

// params(p, f, k): parameter row p of fibre f0 + f at wave(k).
template <class MemorySpace>
struct EvaluateParamsFunctor {
  GaussHermiteDevice<MemorySpace> d;
  int f0;
  Kokkos::View<const double*, MemorySpace> wave;
  Kokkos::View<double***, MemorySpace> params;
  KOKKOS_INLINE_FUNCTION void operator()(int f, int k) const {
    double P[kMaxLegendreCoeffs];
    detail::legendre_values(detail::reduced(wave(k), d.pw0, d.pscale), d.ncp, P);
    for (int p = 0; p < d.nparam; ++p) params(p, f, k) = d.param(p, f0 + f, P);
  }
};

template <class ExecSpace, class MemorySpace>
void evaluate_params(const ExecSpace& exec, const GaussHermitePsf<MemorySpace>& psf, int f0, int nf,
                     Kokkos::View<const double*, MemorySpace> wave,
                     Kokkos::View<double***, MemorySpace> params) {
  check_fibre_range(f0, nf, psf.nfib(), "perfex::psf::evaluate_params");
  const int K = static_cast<int>(wave.extent(0));
  if (static_cast<int>(params.extent(0)) < psf.nparam() ||
      static_cast<int>(params.extent(1)) < nf || static_cast<int>(params.extent(2)) < K) {
    throw Error("perfex::psf::evaluate_params: output view smaller than [nparam][nf][K]");
  }
  if (nf == 0 || K == 0) return;
  using Policy = Kokkos::MDRangePolicy<ExecSpace, Kokkos::Rank<2>, Kokkos::IndexType<int>>;
  Kokkos::parallel_for("perfex::psf::evaluate_params", Policy(exec, {0, 0}, {nf, K}),
                       EvaluateParamsFunctor<MemorySpace>{psf.device(), f0, wave, params});
}

}  // namespace psf
}  // namespace perfex
