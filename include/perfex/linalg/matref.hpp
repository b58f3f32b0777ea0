#pragma once
// Internal: raw strided references to the matrices and vectors the team kernels work on.
// Every rank-1/rank-2 Kokkos view is turned into (pointer, strides); the kernels are written
// once over these and instantiated for unit row stride (LayoutLeft columns: contiguous inner
// loops the compiler vectorises) and for a general stride.
#include <Kokkos_Core.hpp>

namespace perfex {
namespace linalg {
namespace detail {

// Column-major-ish matrix: element (i, j) at p[i*s0 + j*s1]; s0 == 1 when Unit.
template <bool Unit>
struct MatRef {
  double* p;
  long s0;
  long s1;
  KOKKOS_INLINE_FUNCTION double& operator()(int i, int j) const {
    return p[(Unit ? long(i) : long(i) * s0) + long(j) * s1];
  }
  // Address of element (i, j); rows of one column are at stride rs().
  KOKKOS_INLINE_FUNCTION double* ptr(int i, int j) const { return &(*this)(i, j); }
  KOKKOS_INLINE_FUNCTION long rs() const { return Unit ? 1 : s0; }
};

template <bool Unit>
struct VecRef {
  double* p;
  long s0;
  KOKKOS_INLINE_FUNCTION double& operator()(int i) const {
    return p[Unit ? long(i) : long(i) * s0];
  }
};

// True when the team is one host thread: the kernels then take loops written for one thread
// (vectorised by the compiler) instead of the team-vector shape. On device backends a team of
// one thread still has vector lanes, so those always take the team shape.
template <class Member>
KOKKOS_INLINE_FUNCTION bool sequential_team(const Member& member) {
  return Kokkos::SpaceAccessibility<typename Member::execution_space,
                                    Kokkos::HostSpace>::accessible &&
         member.team_size() == 1;
}

template <class V>
KOKKOS_INLINE_FUNCTION bool unit_rows(const V& v) {
  return v.stride(0) == 1 || v.extent(0) <= 1;
}

template <bool Unit, class V>
KOKKOS_INLINE_FUNCTION MatRef<Unit> mat(const V& v) {
  static_assert(V::rank == 2, "perfex::linalg: expected a rank-2 view");
  return MatRef<Unit>{v.data(), long(v.stride(0)), long(v.stride(1))};
}

template <bool Unit, class V>
KOKKOS_INLINE_FUNCTION VecRef<Unit> vec(const V& v) {
  static_assert(V::rank == 1, "perfex::linalg: expected a rank-1 view");
  return VecRef<Unit>{v.data(), long(v.stride(0))};
}

// Contiguous-when-possible dot product of two strided columns (4 partial sums: lets the
// compiler use SIMD registers for the accumulation without -ffast-math).
template <bool Unit>
KOKKOS_INLINE_FUNCTION double dot(int n, const double* x, const double* y, long sx, long sy) {
  if (Unit) {
    double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    int i = 0;
    for (; i + 4 <= n; i += 4) {
      s0 += x[i] * y[i];
      s1 += x[i + 1] * y[i + 1];
      s2 += x[i + 2] * y[i + 2];
      s3 += x[i + 3] * y[i + 3];
    }
    for (; i < n; ++i) s0 += x[i] * y[i];
    return (s0 + s1) + (s2 + s3);
  } else {
    double s = 0;
    for (int i = 0; i < n; ++i) s += x[i * sx] * y[i * sy];
    return s;
  }
}

}  // namespace detail
}  // namespace linalg
}  // namespace perfex
