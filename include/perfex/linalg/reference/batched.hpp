#pragma once
// The batched front ends' reference half (linalg/batched.hpp has the portable kernels): the
// dense Cholesky family (team_cholesky of reference/cholesky.hpp, one team per matrix) and
// Backend::lapack, the host LAPACK routines as the same front ends (one matrix per RangePolicy
// index on exec, only for host-accessible memory with a host execution space and when
// PERFEX_HAVE_LAPACK; otherwise perfex::Error). Test oracles and benchmark baselines: not in
// perfex.hpp, not what the extraction runs.
#include <perfex/config.hpp>
#include <perfex/error.hpp>
#include <perfex/linalg/batched.hpp>
#include <perfex/linalg/reference/cholesky.hpp>
#include <perfex/linalg/reference/lapack.hpp>
#include <perfex/linalg/status.hpp>

#include <string>
#include <tuple>

namespace perfex {
namespace linalg {

enum class Backend { portable, lapack };

namespace detail {

struct DenseCholesky {
  template <class M, class A>
  KOKKOS_INLINE_FUNCTION static int factor(const M& member, const A& a) {
    return team_cholesky(member, a);
  }
  template <class M, class L, class X>
  KOKKOS_INLINE_FUNCTION static void solve(const M& member, const L& l, const X& x) {
    team_cholesky_solve(member, l, x);
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
    team_cholesky_inverse_diag_blocks(member, Kokkos::subview(L, Kokkos::ALL(), Kokkos::ALL(), b),
                                      bs, first_block, nblocks, BlockSlice<C4>{C, b}, work);
  }
};

// Storage of the matrices a LAPACK Cholesky functor works on: dense (n, n) or lower band
// (kd+1, n).
enum class Storage { dense, band };

// Host LAPACK functors, one matrix per index (only instantiated when PERFEX_HAVE_LAPACK).
template <Storage S, class A3, class S1>
struct LapackCholesky {
  A3 A;
  S1 status;
  void operator()(int b) const {
    const int n = int(A.extent(1)), ld = int(A.stride(1));
    const int info = S == Storage::band ? lapack::pbtrf(n, int(A.extent(0)) - 1, &A(0, 0, b), ld)
                                        : lapack::potrf(n, &A(0, 0, b), ld);
    status(b) = info == 0 ? ok : not_positive_definite;
  }
};
template <Storage S, class L3, class B2>
struct LapackCholeskySolve {
  L3 L;
  B2 x;
  void operator()(int b) const {
    const int n = int(L.extent(1)), ld = int(L.stride(1)), ldx = n > 0 ? n : 1;
    if (S == Storage::band)
      lapack::pbtrs(n, int(L.extent(0)) - 1, 1, &L(0, 0, b), ld, &x(0, b), ldx);
    else
      lapack::potrs(n, 1, &L(0, 0, b), ld, &x(0, b), ldx);
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

template <class ExecSpace, class View>
void require_lapack_usable(const std::string& what, const View& v) {
  if (!PERFEX_HAVE_LAPACK)
    throw Error(what + ": Backend::lapack requested but perfex was built without LAPACK");
  constexpr bool host =
      host_exec<ExecSpace>() &&
      Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename View::memory_space>::accessible;
  if (!host) throw Error(what + ": Backend::lapack needs a host execution space and host memory");
  if (v.extent(0) > 1 && v.stride(0) != 1)
    throw Error(what + ": Backend::lapack needs column-major (LayoutLeft) views");
}

// Backend::lapack's host path for run_batched: the LAPACK functor over the batch, once the
// views are checked usable (else perfex::Error); nothing under Backend::portable.
template <class Functor, class... Views>
struct LapackPath {
  bool on;
  Functor host;
  std::tuple<Views...> views;
  template <class ExecSpace>
  bool run(const ExecSpace& exec, const std::string& name, int nbatch) const {
    if (!on) return false;
    std::apply([&](const auto&... v) { (require_lapack_usable<ExecSpace>(name, v), ...); }, views);
    if constexpr (PERFEX_HAVE_LAPACK && host_exec<ExecSpace>())
      Kokkos::parallel_for(name + "_lapack", Kokkos::RangePolicy<ExecSpace>(exec, 0, nbatch), host);
    return true;
  }
};
template <class Functor, class... Views>
LapackPath<Functor, Views...> lapack_path(Backend backend, const Functor& host,
                                          const Views&... views) {
  return {backend == Backend::lapack, host, std::tuple<Views...>(views...)};
}

}  // namespace detail

// Lower Cholesky factor of every A(:, :, b) in place; status(b) = ok or not_positive_definite.
template <class ExecSpace, class A3, class S1>
void batched_cholesky(const ExecSpace& exec, const A3& A, const S1& status,
                      Backend backend = Backend::portable) {
  static_assert(detail::check_view<ExecSpace, A3, 3>() &&
                detail::check_view<ExecSpace, S1, 1, int>());
  detail::require_extent("batched_cholesky", "A.extent(1)", A.extent(1), A.extent(0));
  detail::require_extent("batched_cholesky", "status.extent(0)", status.extent(0), A.extent(2));
  detail::run_batched(
      exec, "perfex::linalg::batched_cholesky", int(A.extent(2)),
      detail::lapack_path(backend,
                          detail::LapackCholesky<detail::Storage::dense, A3, S1>{A, status}, A),
      detail::BatchedCholesky<ExecSpace, detail::DenseCholesky, A3, S1>{A, status});
}

// b(:, k) <- H_k^{-1} b(:, k) with the factors L(:, :, k) from batched_cholesky. b: (n, batch).
template <class ExecSpace, class L3, class B2>
void batched_cholesky_solve(const ExecSpace& exec, const L3& L, const B2& b,
                            Backend backend = Backend::portable) {
  static_assert(detail::check_view<ExecSpace, L3, 3>() && detail::check_view<ExecSpace, B2, 2>());
  detail::require_extent("batched_cholesky_solve", "L.extent(1)", L.extent(1), L.extent(0));
  detail::require_extent("batched_cholesky_solve", "b.extent(0)", b.extent(0), L.extent(0));
  detail::require_extent("batched_cholesky_solve", "b.extent(1)", b.extent(1), L.extent(2));
  detail::run_batched(
      exec, "perfex::linalg::batched_cholesky_solve", int(L.extent(2)),
      detail::lapack_path(backend,
                          detail::LapackCholeskySolve<detail::Storage::dense, L3, B2>{L, b}, L, b),
      detail::BatchedCholeskySolve<ExecSpace, detail::DenseCholesky, L3, B2>{L, b});
}

// Diagonal blocks of H_k^{-1} from the factors L(:, :, k) (n = L.extent(0), blocks of size bs):
// C(:, :, b, k) <- block first_block + b of H_k^{-1}, b = 0 .. C.extent(2)-1.
// C: (bs, bs, nblocks, batch), e.g. View<double****, LayoutLeft, Mem>. Scratch: n*bs doubles per
// team (level-1 team scratch). Portable kernel only (the LAPACK equivalent, potri, forms the
// whole inverse: see lapack::potri).
template <class ExecSpace, class L3, class C4>
void batched_cholesky_inverse_diag_blocks(const ExecSpace& exec, const L3& L, int bs, const C4& C,
                                          int first_block = 0) {
  static_assert(detail::check_view<ExecSpace, L3, 3>() && detail::check_view<ExecSpace, C4, 4>());
  detail::require_extent("batched_cholesky_inverse_diag_blocks", "C.extent(0)", C.extent(0), bs);
  detail::require_extent("batched_cholesky_inverse_diag_blocks", "C.extent(1)", C.extent(1), bs);
  detail::require_extent("batched_cholesky_inverse_diag_blocks", "C.extent(3)", C.extent(3),
                         L.extent(2));
  const int n = int(L.extent(0));
  const int nblocks = int(C.extent(2));
  if (bs <= 0 || (first_block + nblocks) * bs > n)
    throw Error(
        "perfex::linalg::batched_cholesky_inverse_diag_blocks: blocks exceed the matrix size");
  detail::run_teams(
      exec, "perfex::linalg::batched_cholesky_inverse_diag_blocks", int(L.extent(2)),
      detail::BatchedInverseDiagBlocks<ExecSpace, L3, C4>{L, C, n, bs, first_block, nblocks},
      detail::ScratchMatrix<ExecSpace>::shmem_size(n, bs));
}

// batched_syev, batched_band_cholesky and batched_band_cholesky_solve (linalg/batched.hpp) with a
// choice of backend: the portable kernels, or Backend::lapack's dsyevd, dpbtrf and dpbtrs.
template <class ExecSpace, class A3, class W2, class S1>
void batched_syev(const ExecSpace& exec, const A3& A, const W2& w, const S1& status,
                  Backend backend) {
  detail::syev_batch(exec, A, w, status,
                     detail::lapack_path(backend, detail::LapackSyev<A3, W2, S1>{A, w, status}, A));
}
template <class ExecSpace, class A3, class S1>
void batched_band_cholesky(const ExecSpace& exec, const A3& AB, const S1& status, Backend backend) {
  detail::band_cholesky_batch(
      exec, AB, status,
      detail::lapack_path(backend,
                          detail::LapackCholesky<detail::Storage::band, A3, S1>{AB, status}, AB));
}
template <class ExecSpace, class L3, class B2>
void batched_band_cholesky_solve(const ExecSpace& exec, const L3& L, const B2& x, Backend backend) {
  detail::band_cholesky_solve_batch(
      exec, L, x,
      detail::lapack_path(backend, detail::LapackCholeskySolve<detail::Storage::band, L3, B2>{L, x},
                          L, x));
}

}  // namespace linalg
}  // namespace perfex
