// A PSF model missing two pieces (nfib(), and its device type's trace_wavelength): it must not
// compile, and the compiler must name both (test psf.concept_messages).
#include <perfex/psf/model.hpp>

struct Device {
  KOKKOS_INLINE_FUNCTION double trace_x(int, double) const { return 0; }
  KOKKOS_INLINE_FUNCTION double trace_y(int, double) const { return 0; }
  KOKKOS_INLINE_FUNCTION perfex::psf::SpotCorner spot_corner(int, double) const { return {}; }
  KOKKOS_INLINE_FUNCTION int spot_scratch() const { return 0; }
  template <class Member>
  KOKKOS_INLINE_FUNCTION void spot(const Member&, int, double, double*,
                                   const perfex::psf::SpotOutput&) const {}
};

struct Incomplete {
  using memory_space = Kokkos::HostSpace;
  using device_type = Device;
  Device d;
  const Device& device() const { return d; }
  int npix_x() const { return 10; }
  int npix_y() const { return 10; }
  int spot_rows() const { return 3; }
  int spot_cols() const { return 3; }
  double wavemin() const { return 0; }
  double wavemax() const { return 1; }
  double psferr() const { return 0.01; }
};

static_assert(perfex::psf::require_psf_model<Incomplete>(), "");

int main() { return 0; }
