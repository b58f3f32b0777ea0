#pragma once
// The Kokkos Kernels routines perfex::linalg calls, in one place. Their headers and spellings
// are the same in Kokkos Kernels 3.4 and 4.x (KokkosBatched::Trans is KokkosBlas::Trans there,
// re-exported under the same name), so no version switch is needed; a difference would go here.
//
// What is used, and why (measured against the hand-written loops, same build, same run:
// bench/linalg_bench.cpp, linalg/kk/...): the two triangular solves of a dense Cholesky solve
// on one host thread (KokkosBatched's blocked SerialTrsv is ~15 % faster than a column sweep
// and a dot-product sweep). The products of the pipeline's kernels stay hand-written: they use
// structure SerialGemm cannot see (lower triangles, columns zero above a start, reflector
// blocks) and are 2-8x faster than SerialGemm/SerialTrsm computing the same.
#include <KokkosBatched_Trsv_Decl.hpp>
#include <KokkosBatched_Trsv_Serial_Impl.hpp>

namespace perfex {
namespace linalg {
namespace detail {

// x <- (L L^T)^{-1} x with the lower triangle of L (rank-2 view) and x (rank-1 view).
template <class LView, class XView>
KOKKOS_INLINE_FUNCTION void serial_cholesky_solve_kk(const LView& L, const XView& x) {
  namespace kb = KokkosBatched;
  kb::SerialTrsv<kb::Uplo::Lower, kb::Trans::NoTranspose, kb::Diag::NonUnit,
                 kb::Algo::Trsv::Blocked>::invoke(1.0, L, x);
  kb::SerialTrsv<kb::Uplo::Lower, kb::Trans::Transpose, kb::Diag::NonUnit,
                 kb::Algo::Trsv::Blocked>::invoke(1.0, L, x);
}

}  // namespace detail
}  // namespace linalg
}  // namespace perfex
