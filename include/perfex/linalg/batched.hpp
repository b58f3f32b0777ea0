#pragma once
// Batched front-ends: one team per matrix over View<double***, LayoutLeft, Mem> (n, n, batch).
// Each launches a TeamPolicy<ExecSpace>(exec, batch, AUTO) on the given execution-space
// instance (asynchronous: fence exec before reading results on the host). A matrix's team only
// writes that matrix's slices, so a failing member never touches its neighbours.
//
// Backend::lapack runs the host LAPACK routines instead (one matrix per RangePolicy index on
// exec), only for host-accessible memory with a host execution space and when
// PERFEX_HAVE_LAPACK; otherwise it throws perfex::Error.
#include <perfex/config.hpp>
#include <perfex/error.hpp>
#include <perfex/linalg/band_cholesky.hpp>
#include <perfex/linalg/cholesky.hpp>
#include <perfex/linalg/eigen.hpp>
#include <perfex/linalg/lapack.hpp>
#include <perfex/linalg/status.hpp>

#include <string>

namespace perfex {
namespace linalg {

enum class Backend { portable, lapack };

namespace detail {

template <class ExecSpace>
using Member = typename Kokkos::TeamPolicy<ExecSpace>::member_type;

template <class ExecSpace>
using ScratchVector = Kokkos::View<double*, typename ExecSpace::scratch_memory_space, Kokkos::MemoryUnmanaged>;
template <class ExecSpace>
using ScratchMatrix =
    Kokkos::View<double**, Kokkos::LayoutLeft, typename ExecSpace::scratch_memory_space, Kokkos::MemoryUnmanaged>;

template <class ExecSpace, class A3, class S1>
struct BatchedCholesky {
  A3 A;
  S1 status;
  KOKKOS_INLINE_FUNCTION void operator()(const Member<ExecSpace>& member) const {
    const int b = member.league_rank();
    const int st = team_cholesky(member, Kokkos::subview(A, Kokkos::ALL(), Kokkos::ALL(), b));
    Kokkos::single(Kokkos::PerTeam(member), [&]() { status(b) = st; });
  }
};

template <class ExecSpace, class L3, class B2>
struct BatchedCholeskySolve {
  L3 L;
  B2 x;
  KOKKOS_INLINE_FUNCTION void operator()(const Member<ExecSpace>& member) const {
    const int b = member.league_rank();
    team_cholesky_solve(member, Kokkos::subview(L, Kokkos::ALL(), Kokkos::ALL(), b),
                        Kokkos::subview(x, Kokkos::ALL(), b));
  }
};

template <class ExecSpace, class A3, class W2, class S1>
struct BatchedSyev {
  A3 A;
  W2 w;
  S1 status;
  int n;
  KOKKOS_INLINE_FUNCTION void operator()(const Member<ExecSpace>& member) const {
    const int b = member.league_rank();
    ScratchVector<ExecSpace> work(member.team_scratch(1), syev_work_size(n));
    const int st = team_syev(member, Kokkos::subview(A, Kokkos::ALL(), Kokkos::ALL(), b),
                             Kokkos::subview(w, Kokkos::ALL(), b), work);
    Kokkos::single(Kokkos::PerTeam(member), [&]() { status(b) = st; });
  }
};

// C(b, i, j) view of one batch member of a (bs, bs, nblocks, batch) array.
template <class C4>
struct BlockSlice {
  C4 C;
  int k;
  KOKKOS_INLINE_FUNCTION double& operator()(int b, int i, int j) const { return C(i, j, b, k); }
};

template <class ExecSpace, class L3, class C4>
struct BatchedInverseDiagBlocks {
  L3 L;
  C4 C;
  int n, bs, first_block, nblocks;
  KOKKOS_INLINE_FUNCTION void operator()(const Member<ExecSpace>& member) const {
    const int b = member.league_rank();
    ScratchMatrix<ExecSpace> work(member.team_scratch(1), n, bs);
    team_cholesky_inverse_diag_blocks(member, Kokkos::subview(L, Kokkos::ALL(), Kokkos::ALL(), b), bs, first_block,
                                      nblocks, BlockSlice<C4>{C, b}, work);
  }
};

template <class ExecSpace, class A3, class S1>
struct BatchedBandCholesky {
  A3 AB;
  S1 status;
  KOKKOS_INLINE_FUNCTION void operator()(const Member<ExecSpace>& member) const {
    const int b = member.league_rank();
    const int st = team_band_cholesky(member, Kokkos::subview(AB, Kokkos::ALL(), Kokkos::ALL(), b));
    Kokkos::single(Kokkos::PerTeam(member), [&]() { status(b) = st; });
  }
};

template <class ExecSpace, class L3, class B2>
struct BatchedBandCholeskySolve {
  L3 L;
  B2 x;
  KOKKOS_INLINE_FUNCTION void operator()(const Member<ExecSpace>& member) const {
    const int b = member.league_rank();
    team_band_cholesky_solve(member, Kokkos::subview(L, Kokkos::ALL(), Kokkos::ALL(), b),
                             Kokkos::subview(x, Kokkos::ALL(), b));
  }
};

template <class ExecSpace, class L3, class C4>
struct BatchedBandInverseStridedBlocks {
  L3 L;
  C4 C;
  int n, stride, count, first;
  KOKKOS_INLINE_FUNCTION void operator()(const Member<ExecSpace>& member) const {
    const int b = member.league_rank();
    ScratchMatrix<ExecSpace> work(member.team_scratch(1), n, count);
    auto Lb = Kokkos::subview(L, Kokkos::ALL(), Kokkos::ALL(), b);
    for (int blk = 0; blk < int(C.extent(2)); ++blk)
      team_band_cholesky_inverse_strided_block(member, Lb, first + blk, stride, count,
                                               Kokkos::subview(C, Kokkos::ALL(), Kokkos::ALL(), blk, b), work);
  }
};

#if PERFEX_HAVE_LAPACK
template <class A3, class S1>
struct LapackBandCholesky {
  A3 AB;
  S1 status;
  void operator()(int b) const {
    const int n = int(AB.extent(1)), kd = int(AB.extent(0)) - 1;
    const int info = lapack::pbtrf(n, kd, &AB(0, 0, b), int(AB.stride(1)));
    status(b) = info == 0 ? ok : not_positive_definite;
  }
};
template <class L3, class B2>
struct LapackBandCholeskySolve {
  L3 L;
  B2 x;
  void operator()(int b) const {
    const int n = int(L.extent(1)), kd = int(L.extent(0)) - 1;
    lapack::pbtrs(n, kd, 1, &L(0, 0, b), int(L.stride(1)), &x(0, b), n > 0 ? n : 1);
  }
};
template <class A3, class S1>
struct LapackCholesky {
  A3 A;
  S1 status;
  void operator()(int b) const {
    const int n = int(A.extent(0));
    const int info = lapack::potrf(n, &A(0, 0, b), int(A.stride(1)));
    status(b) = info == 0 ? ok : not_positive_definite;
  }
};
template <class L3, class B2>
struct LapackCholeskySolve {
  L3 L;
  B2 x;
  void operator()(int b) const {
    const int n = int(L.extent(0));
    lapack::potrs(n, 1, &L(0, 0, b), int(L.stride(1)), &x(0, b), n > 0 ? n : 1);
  }
};
template <class A3, class W2, class S1>
struct LapackSyev {
  A3 A;
  W2 w;
  S1 status;
  void operator()(int b) const {
    const int n = int(A.extent(0));
    const int info = lapack::syevd(n, &A(0, 0, b), int(A.stride(1)), &w(0, b));
    status(b) = info == 0 ? ok : not_converged;
  }
};
#endif

template <class ExecSpace, class View>
void require_lapack_usable(const char* what, const View& v) {
#if PERFEX_HAVE_LAPACK
  constexpr bool host = Kokkos::SpaceAccessibility<ExecSpace, Kokkos::HostSpace>::accessible &&
                        Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename View::memory_space>::accessible;
  if (!host) throw Error(std::string(what) + ": Backend::lapack needs a host execution space and host memory");
  if (v.extent(0) > 1 && v.stride(0) != 1)
    throw Error(std::string(what) + ": Backend::lapack needs column-major (LayoutLeft) matrices");
#else
  (void)v;
  throw Error(std::string(what) + ": Backend::lapack requested but perfex was built without LAPACK");
#endif
}

template <class ExecSpace>
constexpr bool host_exec() {
  return Kokkos::SpaceAccessibility<ExecSpace, Kokkos::HostSpace>::accessible;
}

}  // namespace detail

// Lower Cholesky factor of every A(:, :, b) in place; status(b) = ok or not_positive_definite.
template <class ExecSpace, class A3, class S1>
void batched_cholesky(const ExecSpace& exec, const A3& A, const S1& status, Backend backend = Backend::portable) {
  const int nbatch = int(A.extent(2));
  if (backend == Backend::lapack) {
    detail::require_lapack_usable<ExecSpace>("perfex::linalg::batched_cholesky", A);
#if PERFEX_HAVE_LAPACK
    if constexpr (detail::host_exec<ExecSpace>())
      Kokkos::parallel_for("perfex::linalg::batched_cholesky_lapack", Kokkos::RangePolicy<ExecSpace>(exec, 0, nbatch),
                           detail::LapackCholesky<A3, S1>{A, status});
#endif
    return;
  }
  Kokkos::parallel_for("perfex::linalg::batched_cholesky", Kokkos::TeamPolicy<ExecSpace>(exec, nbatch, Kokkos::AUTO),
                       detail::BatchedCholesky<ExecSpace, A3, S1>{A, status});
}

// b(:, k) <- H_k^{-1} b(:, k) with the factors L(:, :, k) from batched_cholesky. b: (n, batch).
template <class ExecSpace, class L3, class B2>
void batched_cholesky_solve(const ExecSpace& exec, const L3& L, const B2& b, Backend backend = Backend::portable) {
  const int nbatch = int(L.extent(2));
  if (backend == Backend::lapack) {
    detail::require_lapack_usable<ExecSpace>("perfex::linalg::batched_cholesky_solve", L);
    if (b.extent(0) > 1 && b.stride(0) != 1)
      throw Error("perfex::linalg::batched_cholesky_solve: Backend::lapack needs a LayoutLeft b");
#if PERFEX_HAVE_LAPACK
    if constexpr (detail::host_exec<ExecSpace>())
      Kokkos::parallel_for("perfex::linalg::batched_cholesky_solve_lapack",
                           Kokkos::RangePolicy<ExecSpace>(exec, 0, nbatch),
                           detail::LapackCholeskySolve<L3, B2>{L, b});
#endif
    return;
  }
  Kokkos::parallel_for("perfex::linalg::batched_cholesky_solve",
                       Kokkos::TeamPolicy<ExecSpace>(exec, nbatch, Kokkos::AUTO),
                       detail::BatchedCholeskySolve<ExecSpace, L3, B2>{L, b});
}

// Eigenvectors of every A(:, :, b) (full symmetric input) in place, eigenvalues ascending in
// w(:, b); status(b) = ok or not_converged. Scratch: syev_work_size(n) doubles per team (level-1
// team scratch).
template <class ExecSpace, class A3, class W2, class S1>
void batched_syev(const ExecSpace& exec, const A3& A, const W2& w, const S1& status,
                  Backend backend = Backend::portable) {
  const int n = int(A.extent(0));
  const int nbatch = int(A.extent(2));
  if (backend == Backend::lapack) {
    detail::require_lapack_usable<ExecSpace>("perfex::linalg::batched_syev", A);
#if PERFEX_HAVE_LAPACK
    if constexpr (detail::host_exec<ExecSpace>())
      Kokkos::parallel_for("perfex::linalg::batched_syev_lapack", Kokkos::RangePolicy<ExecSpace>(exec, 0, nbatch),
                           detail::LapackSyev<A3, W2, S1>{A, w, status});
#endif
    return;
  }
  Kokkos::TeamPolicy<ExecSpace> policy(exec, nbatch, Kokkos::AUTO);
  policy.set_scratch_size(1, Kokkos::PerTeam(detail::ScratchVector<ExecSpace>::shmem_size(syev_work_size(n))));
  Kokkos::parallel_for("perfex::linalg::batched_syev", policy, detail::BatchedSyev<ExecSpace, A3, W2, S1>{A, w, status, n});
}

// Diagonal blocks of H_k^{-1} from the factors L(:, :, k) (n = L.extent(0), blocks of size bs):
// C(:, :, b, k) <- block first_block + b of H_k^{-1}, b = 0 .. C.extent(2)-1.
// C: (bs, bs, nblocks, batch), e.g. View<double****, LayoutLeft, Mem>. Scratch: n*bs doubles per
// team (level-1 team scratch). Portable kernel only (the LAPACK equivalent, potri, forms the
// whole inverse: see lapack::potri).
template <class ExecSpace, class L3, class C4>
void batched_cholesky_inverse_diag_blocks(const ExecSpace& exec, const L3& L, int bs, const C4& C, int first_block = 0) {
  const int n = int(L.extent(0));
  const int nbatch = int(L.extent(2));
  const int nblocks = int(C.extent(2));
  if (bs <= 0 || (first_block + nblocks) * bs > n)
    throw Error("perfex::linalg::batched_cholesky_inverse_diag_blocks: blocks exceed the matrix size");
  Kokkos::TeamPolicy<ExecSpace> policy(exec, nbatch, Kokkos::AUTO);
  policy.set_scratch_size(1, Kokkos::PerTeam(detail::ScratchMatrix<ExecSpace>::shmem_size(n, bs)));
  Kokkos::parallel_for("perfex::linalg::batched_cholesky_inverse_diag_blocks", policy,
                       detail::BatchedInverseDiagBlocks<ExecSpace, L3, C4>{L, C, n, bs, first_block, nblocks});
}

// Band Cholesky factor of every lower band AB(:, :, b) ((kd+1) x n, AB(d, j, b) = A(j+d, j))
// in place; status(b) = ok or not_positive_definite. Backend::lapack runs dpbtrf.
template <class ExecSpace, class A3, class S1>
void batched_band_cholesky(const ExecSpace& exec, const A3& AB, const S1& status, Backend backend = Backend::portable) {
  const int nbatch = int(AB.extent(2));
  if (backend == Backend::lapack) {
    detail::require_lapack_usable<ExecSpace>("perfex::linalg::batched_band_cholesky", AB);
#if PERFEX_HAVE_LAPACK
    if constexpr (detail::host_exec<ExecSpace>())
      Kokkos::parallel_for("perfex::linalg::batched_band_cholesky_lapack",
                           Kokkos::RangePolicy<ExecSpace>(exec, 0, nbatch),
                           detail::LapackBandCholesky<A3, S1>{AB, status});
#endif
    return;
  }
  Kokkos::parallel_for("perfex::linalg::batched_band_cholesky",
                       Kokkos::TeamPolicy<ExecSpace>(exec, nbatch, Kokkos::AUTO),
                       detail::BatchedBandCholesky<ExecSpace, A3, S1>{AB, status});
}

// x(:, k) <- H_k^{-1} x(:, k) with the band factors L(:, :, k) of batched_band_cholesky.
template <class ExecSpace, class L3, class B2>
void batched_band_cholesky_solve(const ExecSpace& exec, const L3& L, const B2& x, Backend backend = Backend::portable) {
  const int nbatch = int(L.extent(2));
  if (backend == Backend::lapack) {
    detail::require_lapack_usable<ExecSpace>("perfex::linalg::batched_band_cholesky_solve", L);
    if (x.extent(0) > 1 && x.stride(0) != 1)
      throw Error("perfex::linalg::batched_band_cholesky_solve: Backend::lapack needs a LayoutLeft x");
#if PERFEX_HAVE_LAPACK
    if constexpr (detail::host_exec<ExecSpace>())
      Kokkos::parallel_for("perfex::linalg::batched_band_cholesky_solve_lapack",
                           Kokkos::RangePolicy<ExecSpace>(exec, 0, nbatch),
                           detail::LapackBandCholeskySolve<L3, B2>{L, x});
#endif
    return;
  }
  Kokkos::parallel_for("perfex::linalg::batched_band_cholesky_solve",
                       Kokkos::TeamPolicy<ExecSpace>(exec, nbatch, Kokkos::AUTO),
                       detail::BatchedBandCholeskySolve<ExecSpace, L3, B2>{L, x});
}

// Strided blocks of H_k^{-1} from the band factors L(:, :, k): C(a, c, blk, k) = H_k^{-1}(i_a, i_c)
// with i_a = first + blk + a * stride, a < count = C.extent(0) (block blk of a "stride-interleaved"
// unknown ordering, e.g. fibre blk of a wavelength-major patch). C: (count, count, nblocks, batch).
// Scratch: n * count doubles per team (level-1 team scratch). Portable kernel only.
template <class ExecSpace, class L3, class C4>
void batched_band_cholesky_inverse_strided_blocks(const ExecSpace& exec, const L3& L, int stride, const C4& C,
                                                  int first = 0) {
  const int n = int(L.extent(1)), nbatch = int(L.extent(2));
  const int count = int(C.extent(0)), nblocks = int(C.extent(2));
  if (stride <= 0 || count <= 0 || first < 0 || first + nblocks - 1 + (count - 1) * stride >= n)
    throw Error("perfex::linalg::batched_band_cholesky_inverse_strided_blocks: blocks exceed the matrix size");
  Kokkos::TeamPolicy<ExecSpace> policy(exec, nbatch, Kokkos::AUTO);
  policy.set_scratch_size(1, Kokkos::PerTeam(detail::ScratchMatrix<ExecSpace>::shmem_size(n, count)));
  Kokkos::parallel_for("perfex::linalg::batched_band_cholesky_inverse_strided_blocks", policy,
                       detail::BatchedBandInverseStridedBlocks<ExecSpace, L3, C4>{L, C, n, stride, count, first});
}

}  // namespace linalg
}  // namespace perfex
