#pragma once
// Host description of specex's GAUSS-HERMITE2 PSF (device model: psf/gauss_hermite2/device.hpp):
// a GAUSS-HERMITE PSF's traces, keywords and parameter rows, plus a second core's degrees.
#include <string>

#include <perfex/error.hpp>
#include <perfex/psf/data.hpp>
#include <perfex/psf/gauss_hermite/data.hpp>

namespace perfex {
namespace psf {

template <class MemorySpace>
class GaussHermite2Psf;

struct GaussHermite2PsfData {
  static constexpr const char* psftype = "GAUSS-HERMITE2";
  template <class MemorySpace>
  using Model = GaussHermite2Psf<MemorySpace>;  // its model, psf/gauss_hermite2/model.hpp
  // Traces, keywords (HSIZEX/Y, GHDEGX/Y of the first core, NPIX_X/Y, PSFERR) and every
  // parameter row (GH-i-j, GH2-i-j, GHNSIG, GHSIGX2, GHSIGY2, TAIL*, ...).
  GaussHermitePsfData gh;
  int ghdegx2 = 0, ghdegy2 = 0;  // the second core's degrees

  // Its named fields (psf/data.hpp): GAUSS-HERMITE's, then the second core's degrees.
  template <class V>
  void fields(V& v) {
    gh.fields(v);
    v.value("ghdegx2", ghdegx2);
    v.value("ghdegy2", ghdegy2);
  }

  std::string label() const { return gh.label(); }
  const LegendreTraceSet& rows() const { return gh.ytrace; }
  const LegendreTraceSet& columns() const { return gh.xtrace; }
  PsfSummary summary() const {
    PsfSummary s = gh.summary();
    s.type = psftype;
    s.spot_rows = 2 * gh.hsizey;
    s.spot_cols = 2 * gh.hsizex;
    return s;
  }
  // The name of the second core's coefficient a_ij, "GH2-i-j".
  static std::string core2_name(int i, int j) {
    return "GH2-" + std::to_string(i) + "-" + std::to_string(j);
  }
  void validate() const {
    gh.validate();
    if (ghdegx2 < 0 || ghdegy2 < 0 || ghdegx2 > kMaxGhDegree || ghdegy2 > kMaxGhDegree)
      throw Error(label() + ", HDU 1: keywords GHDEGX2/GHDEGY2 = " + std::to_string(ghdegx2) + "/" +
                  std::to_string(ghdegy2) + " outside [0, " + std::to_string(kMaxGhDegree) + "]");
    for (const char* p : {"GHNSIG", "GHSIGX2", "GHSIGY2", "TAILAMP"}) gh.param_index(p);
    for (int i = 0; i <= ghdegx2; ++i)
      for (int j = 0; j <= ghdegy2; ++j) gh.param_index(core2_name(i, j));
    check_over(gh.wavemin, gh.wavemax);
  }
  // Both cores' widths positive and finite over [w0, w1] (the first also within the box).
  void check_over(double w0, double w1) const {
    gh.check_widths(w0, w1);
    gh.check_width("HDU 1", "GHSIGX2", 0, w0, w1);
    gh.check_width("HDU 1", "GHSIGY2", 0, w0, w1);
  }
};

}  // namespace psf
}  // namespace perfex
