#pragma once
// A PSF as read from a file, in any format perfex reads (host only): the front ends take one of
// these, check a request against its summary, and extract with the matching device model
// (extract::with_psf_model).
#include <string>
#include <type_traits>
#include <utility>
#include <variant>

#include <perfex/psf/gauss_hermite/data.hpp>
#include <perfex/psf/spot_grid/data.hpp>

namespace perfex {
namespace psf {

class PsfData {
 public:
  using Model = std::variant<GaussHermitePsfData, GaussHermite2PsfData, SpotGridPsfData>;

  PsfData() = default;
  template <class T, std::enable_if_t<std::is_constructible<Model, T&&>::value &&
                                          !std::is_same<std::decay_t<T>, PsfData>::value,
                                      int> = 0>
  PsfData(T&& data) : model_(std::forward<T>(data)) {}  // NOLINT: implicit by design

  const Model& model() const { return model_; }
  // f(the format's data), e.g. extract::with_psf_model's upload.
  template <class F>
  decltype(auto) visit(F&& f) const {
    return std::visit(std::forward<F>(f), model_);
  }
  // The format's data, or nullptr.
  template <class T>
  const T* get_if() const {
    return std::get_if<T>(&model_);
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
  // Throws unless the model stays valid over [w0, w1] (where a grid makes it extrapolate).
  void check_over(double w0, double w1) const {
    visit([&](const auto& d) { d.check_over(w0, w1); });
  }

 private:
  Model model_;
};

}  // namespace psf
}  // namespace perfex
