#pragma once
// PSF data from files in exec's memory: upload_psf gives the device model of each format, and
// with_psf_model runs a generic callable with the model of a PsfData, whatever its format.
#include <perfex/psf/any_psf.hpp>
#include <perfex/psf/gauss_hermite/device.hpp>
#include <perfex/psf/gauss_hermite2/device.hpp>
#include <perfex/psf/spot_grid/device.hpp>

#include <utility>

namespace perfex {
namespace extract {

// A PSF resident in exec's memory space: upload once, extract many times.
template <class ExecSpace>
psf::GaussHermitePsf<typename ExecSpace::memory_space> upload_psf(
    const ExecSpace& exec, const psf::GaussHermitePsfData& data) {
  return psf::GaussHermitePsf<typename ExecSpace::memory_space>(exec, data);
}

template <class ExecSpace>
psf::GaussHermite2Psf<typename ExecSpace::memory_space> upload_psf(
    const ExecSpace& exec, const psf::GaussHermite2PsfData& data) {
  return psf::GaussHermite2Psf<typename ExecSpace::memory_space>(exec, data);
}

template <class ExecSpace>
psf::SpotGridPsf<typename ExecSpace::memory_space> upload_psf(const ExecSpace& exec,
                                                              const psf::SpotGridPsfData& data) {
  return psf::SpotGridPsf<typename ExecSpace::memory_space>(exec, data);
}

// The device model of PSF data of one format in exec's memory.
template <class ExecSpace, class PsfFormat>
using DeviceModel =
    decltype(upload_psf(std::declval<const ExecSpace&>(), std::declval<const PsfFormat&>()));

// f(model) with the device model of data's format in exec's memory; returns what f returns.
template <class ExecSpace, class F>
decltype(auto) with_psf_model(const ExecSpace& exec, const psf::PsfData& data, F&& f) {
  return data.visit([&](const auto& d) -> decltype(auto) { return f(upload_psf(exec, d)); });
}

}  // namespace extract
}  // namespace perfex
