#pragma once
// A PSF in any format perfex reads (AnyPsfData, host data as read from a file): the front ends
// take one of these, check a request against its summary, and extract with the matching device
// model (with_psf_model). Each format lives in its own folder, psf/<format>/ (data.hpp,
// device.hpp, model.hpp, read.hpp); adding one is its folder and its line in Formats below
// (docs/library.md, "Adding a PSF format").
#include <algorithm>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>

#include <perfex/psf/data.hpp>
#include <perfex/psf/gauss_hermite/model.hpp>
#include <perfex/psf/gauss_hermite2/model.hpp>
#include <perfex/psf/spot_grid/model.hpp>

namespace perfex {
namespace psf {

class AnyPsfData {
 public:
  // Every format, one line each; a file that states no PSFTYPE is read as the first.
  using Formats = std::variant<GaussHermitePsfData,   // GAUSS-HERMITE, PSFVER 1-3
                               GaussHermite2PsfData,  // GAUSS-HERMITE2
                               SpotGridPsfData>;      // SPOTGRID

  AnyPsfData() = default;
  template <class T, std::enable_if_t<std::is_constructible<Formats, T&&>::value &&
                                          !std::is_same<std::decay_t<T>, AnyPsfData>::value,
                                      int> = 0>
  AnyPsfData(T&& data) : data_(std::forward<T>(data)) {}  // NOLINT: implicit by design

  // f(the format's data), e.g. with_psf_model's upload.
  template <class F>
  decltype(auto) visit(F&& f) const {
    return std::visit(std::forward<F>(f), data_);
  }
  // The format's data, or nullptr.
  template <class T>
  const T* get_if() const {
    return std::get_if<T>(&data_);
  }
  // f(static_cast<Data*>(nullptr)) for each format's data type Data, in Formats' order.
  template <class F>
  static void for_each_format(F&& f) {
    for_each_format(f, std::make_index_sequence<std::variant_size<Formats>::value>());
  }

  PsfSummary summary() const {
    return visit([](const auto& d) { return d.summary(); });
  }
  std::string source() const { return summary().source; }
  std::string label() const {
    return visit([](const auto& d) { return d.label(); });
  }
  void validate() const {
    visit([](const auto& d) { d.validate(); });
  }
  // The trace's rows, y_f(λ).
  const LegendreTraceSet& rows() const {
    return visit([](const auto& d) -> const LegendreTraceSet& { return d.rows(); });
  }
  // The trace's columns, x_f(λ).
  const LegendreTraceSet& columns() const {
    return visit([](const auto& d) -> const LegendreTraceSet& { return d.columns(); });
  }
  // Throws unless the model stays valid over [w0, w1] (where a grid makes it extrapolate).
  void check_over(double w0, double w1) const {
    visit([&](const auto& d) { d.check_over(w0, w1); });
  }

 private:
  template <class F, std::size_t... I>
  static void for_each_format(F& f, std::index_sequence<I...>) {
    (f(static_cast<std::variant_alternative_t<I, Formats>*>(nullptr)), ...);
  }
  Formats data_;
};

// Wavelengths [lo, hi] where fibre f has a spot: the PSF's domain, extended (its series
// extrapolated, as specter's PSFs do) while the spot's centre stays within a spot box of the CCD,
// by at most half the domain on each side, so that an extrapolated position is always a pixel
// index. Whether the model stays valid there is check_over's business.
struct SpotWavelengths {
  double lo = 0, hi = 0;
  bool contains(double w) const { return w >= lo && w <= hi; }  // false for NaN
};
inline SpotWavelengths spot_wavelengths(const AnyPsfData& psf, int f) {
  const PsfSummary s = psf.summary();
  const double w0 = std::max(s.wavemin, s.trace_wavemin), w1 = std::min(s.wavemax, s.trace_wavemax);
  const auto near_ccd = [&](double w) {
    const double x = psf.columns().value(f, w), y = psf.rows().value(f, w);
    return x >= -0.5 - s.spot_cols && x <= s.npix_x - 0.5 + s.spot_cols &&
           y >= -0.5 - s.spot_rows && y <= s.npix_y - 0.5 + s.spot_rows;
  };
  constexpr int steps = 4096;  // of half the domain: a small part of a spot box each
  const double h = 0.5 * (w1 - w0) / steps;
  SpotWavelengths r{w0, w1};
  for (int i = 1; i <= steps && near_ccd(w0 - i * h); ++i) r.lo = w0 - i * h;
  for (int i = 1; i <= steps && near_ccd(w1 + i * h); ++i) r.hi = w1 + i * h;
  return r;
}

// The device model of PSF data of one format in exec's memory (what upload_psf returns).
template <class ExecSpace, class Data>
using ModelOf = typename Data::template Model<typename ExecSpace::memory_space>;

// f(model) with the device model of data's format in exec's memory; returns what f returns.
template <class ExecSpace, class F>
decltype(auto) with_psf_model(const ExecSpace& exec, const AnyPsfData& data, F&& f) {
  return data.visit([&](const auto& d) -> decltype(auto) { return f(upload_psf(exec, d)); });
}

}  // namespace psf
}  // namespace perfex
