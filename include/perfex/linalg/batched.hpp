#pragma once
// Batched front-ends: one team per matrix over View<double***, LayoutLeft, Mem> (n, n, batch).
// Each launches a TeamPolicy on the given execution-space instance, its team size and vector
// length from perfex::detail::default_team_shape (asynchronous: fence exec before reading
// results on the host). A matrix's team only writes that matrix's slices, so a failing member
// never touches its neighbours.
//
// The views are checked at compile time (batched_view_compatible): Kokkos views of double (int
// for the status) of the documented rank, in a memory space the execution space can access;
// any layout, so subviews (LayoutStride) are fine.
//
// These are the portable kernels only. linalg/reference/batched.hpp adds the dense Cholesky
// family and Backend::lapack (the host LAPACK routines as the same front ends): test oracles and
// benchmark baselines, kept out of perfex.hpp.
#include <perfex/detail/team_shape.hpp>
#include <perfex/error.hpp>
#include <perfex/linalg/band_cholesky.hpp>
#include <perfex/linalg/eigen.hpp>
#include <perfex/linalg/status.hpp>

#include <string>
#include <type_traits>

namespace perfex {
namespace linalg {

// True when View can be an argument of rank Rank to a batched front-end launched on ExecSpace:
// a Kokkos view of non-const Value (double; int for the status views), any layout, in memory
// ExecSpace can access.
template <class ExecSpace, class View, int Rank, class Value = double>
struct batched_view_compatible {
  template <class V, bool IsView>
  struct check : std::false_type {};
  template <class V>
  struct check<V, true>
      : std::integral_constant<
            bool, int(V::rank) == Rank && std::is_same<typename V::value_type, Value>::value &&
                      Kokkos::SpaceAccessibility<ExecSpace, typename V::memory_space>::accessible> {
  };
  static constexpr bool value = check<View, Kokkos::is_view<View>::value>::value;
};

namespace detail {

// Compile-time checks of a front-end's argument, one message per cause.
template <class ExecSpace, class View, int Rank, class Value = double>
constexpr bool check_view() {
  static_assert(Kokkos::is_view<View>::value,
                "perfex::linalg batched front-end: arguments must be Kokkos::View");
  if constexpr (Kokkos::is_view<View>::value) {
    static_assert(int(View::rank) == Rank,
                  "perfex::linalg batched front-end: wrong view rank (matrices and bands: 3, "
                  "right-hand sides and eigenvalues: 2, status: 1, blocks of the inverse: 4)");
    static_assert(std::is_same<typename View::non_const_value_type, Value>::value,
                  "perfex::linalg batched front-end: wrong value type (double; int for status)");
    static_assert(
        Kokkos::SpaceAccessibility<ExecSpace, typename View::memory_space>::accessible,
        "perfex::linalg batched front-end: the view's memory space is not accessible from the "
        "execution space");
    static_assert(!std::is_const<typename View::value_type>::value,
                  "perfex::linalg batched front-end: views of const data are not supported");
  }
  return true;
}

// The runtime half of those checks, the same in every front end: `what`'s extent is `expected`.
inline void require_extent(const char* function, const char* what, std::size_t got,
                           std::size_t expected) {
  if (got != expected)
    throw Error(std::string("perfex::linalg::") + function + ": " + what + " is " +
                std::to_string(got) + ", expected " + std::to_string(expected));
}

template <class ExecSpace>
using Member = typename Kokkos::TeamPolicy<ExecSpace>::member_type;

template <class ExecSpace>
using ScratchVector =
    Kokkos::View<double*, typename ExecSpace::scratch_memory_space, Kokkos::MemoryUnmanaged>;
template <class ExecSpace>
using ScratchMatrix =
    Kokkos::View<double**, Kokkos::LayoutLeft, typename ExecSpace::scratch_memory_space,
                 Kokkos::MemoryUnmanaged>;

// A team's Cholesky factorisation and solve of one matrix (Op: BandCholesky here, the dense
// reference's in linalg/reference/batched.hpp).
struct BandCholesky {
  template <class M, class A>
  KOKKOS_INLINE_FUNCTION static int factor(const M& member, const A& a) {
    return team_band_cholesky(member, a);
  }
  template <class M, class L, class X>
  KOKKOS_INLINE_FUNCTION static void solve(const M& member, const L& l, const X& x) {
    team_band_cholesky_solve(member, l, x);
  }
};

template <class ExecSpace, class Op, class A3, class S1>
struct BatchedCholesky {
  A3 A;
  S1 status;
  KOKKOS_INLINE_FUNCTION void operator()(const Member<ExecSpace>& member) const {
    const int b = member.league_rank();
    const int st = Op::factor(member, Kokkos::subview(A, Kokkos::ALL(), Kokkos::ALL(), b));
    Kokkos::single(Kokkos::PerTeam(member), [&]() { status(b) = st; });
  }
};

template <class ExecSpace, class Op, class L3, class B2>
struct BatchedCholeskySolve {
  L3 L;
  B2 x;
  KOKKOS_INLINE_FUNCTION void operator()(const Member<ExecSpace>& member) const {
    const int b = member.league_rank();
    Op::solve(member, Kokkos::subview(L, Kokkos::ALL(), Kokkos::ALL(), b),
              Kokkos::subview(x, Kokkos::ALL(), b));
  }
};

template <class ExecSpace, class A3, class W2, class S1>
struct BatchedSyev {
  A3 A;
  W2 w;
  S1 status;
  int n;
  bool in_level0;  // matrix and work copied to level-0 scratch (device teams, when they fit)
  KOKKOS_INLINE_FUNCTION void operator()(const Member<ExecSpace>& member) const {
    const int b = member.league_rank();
    const auto Ab = Kokkos::subview(A, Kokkos::ALL(), Kokkos::ALL(), b);
    const auto wb = Kokkos::subview(w, Kokkos::ALL(), b);
    int st;
    if (in_level0) {
      ScratchMatrix<ExecSpace> As(member.team_scratch(0), n, n);
      ScratchVector<ExecSpace> work(member.team_scratch(0), syev_team_work_size(n));
      Kokkos::parallel_for(Kokkos::TeamThreadRange(member, 0, n), [&](int j) {
        Kokkos::parallel_for(Kokkos::ThreadVectorRange(member, 0, n),
                             [&](int i) { As(i, j) = Ab(i, j); });
      });
      member.team_barrier();
      st = team_syev(member, As, wb, work);
      Kokkos::parallel_for(Kokkos::TeamThreadRange(member, 0, n), [&](int j) {
        Kokkos::parallel_for(Kokkos::ThreadVectorRange(member, 0, n),
                             [&](int i) { Ab(i, j) = As(i, j); });
      });
    } else {
      ScratchVector<ExecSpace> work(member.team_scratch(1), syev_work_size(n));
      st = team_syev(member, Ab, wb, work);
    }
    Kokkos::single(Kokkos::PerTeam(member), [&]() { status(b) = st; });
  }
};

template <class ExecSpace, class A3, class T3, class S1>
struct BatchedBandCholeskyTwisted {
  A3 AB;
  T3 tail;
  S1 status;
  int twist;
  KOKKOS_INLINE_FUNCTION void operator()(const Member<ExecSpace>& member) const {
    const int b = member.league_rank();
    const int st =
        team_band_cholesky_twisted(member, Kokkos::subview(AB, Kokkos::ALL(), Kokkos::ALL(), b),
                                   Kokkos::subview(tail, Kokkos::ALL(), Kokkos::ALL(), b), twist);
    Kokkos::single(Kokkos::PerTeam(member), [&]() { status(b) = st; });
  }
};

// Strided blocks from L alone (T3 = L3, twist = n) or from L and the twisted tail.
template <class ExecSpace, class L3, class T3, class C4>
struct BatchedBandInverseStridedBlocks {
  L3 L;
  T3 tail;
  C4 C;
  int n, twist, stride, count, first;
  KOKKOS_INLINE_FUNCTION void operator()(const Member<ExecSpace>& member) const {
    const int b = member.league_rank();
    ScratchMatrix<ExecSpace> work(member.team_scratch(1), n, count);
    auto Lb = Kokkos::subview(L, Kokkos::ALL(), Kokkos::ALL(), b);
    auto Tb = Kokkos::subview(tail, Kokkos::ALL(), Kokkos::ALL(), b);
    for (int blk = 0; blk < int(C.extent(2)); ++blk)
      team_band_cholesky_inverse_strided_block(
          member, Lb, Tb, twist, first + blk, stride, count,
          Kokkos::subview(C, Kokkos::ALL(), Kokkos::ALL(), blk, b), work);
  }
};

template <class ExecSpace>
constexpr bool host_exec() {
  return Kokkos::SpaceAccessibility<ExecSpace, Kokkos::HostSpace>::accessible;
}

// One team per batch member, optionally with team scratch (level 1 unless level0).
template <class ExecSpace, class Functor>
void run_teams(const ExecSpace& exec, const std::string& name, int nbatch, const Functor& f,
               std::size_t scratch = 0, bool level0 = false) {
  auto policy =
      perfex::detail::team_policy(exec, nbatch, perfex::detail::default_team_shape<ExecSpace>());
  if (scratch > 0) policy.set_scratch_size(level0 ? 0 : 1, Kokkos::PerTeam(scratch));
  Kokkos::parallel_for(name, policy, f);
}

// The portable kernels alone: run() declines, the team functor runs (a host path,
// linalg/reference/batched.hpp's Backend::lapack, runs instead where its run() returns true).
struct PortableOnly {
  template <class ExecSpace>
  bool run(const ExecSpace&, const std::string&, int) const {
    return false;
  }
};

// The team functor (with `scratch` bytes of team scratch, level 1 unless level0), unless the
// host path runs the batch.
template <class ExecSpace, class Host, class Functor>
void run_batched(const ExecSpace& exec, const std::string& name, int nbatch, const Host& host,
                 const Functor& portable, std::size_t scratch = 0, bool level0 = false) {
  if (host.run(exec, name, nbatch)) return;
  run_teams(exec, name, nbatch, portable, scratch, level0);
}

template <class ExecSpace, class A3, class W2, class S1, class Host>
void syev_batch(const ExecSpace& exec, const A3& A, const W2& w, const S1& status,
                const Host& host) {
  static_assert(detail::check_view<ExecSpace, A3, 3>() && detail::check_view<ExecSpace, W2, 2>() &&
                detail::check_view<ExecSpace, S1, 1, int>());
  detail::require_extent("batched_syev", "A.extent(1)", A.extent(1), A.extent(0));
  detail::require_extent("batched_syev", "w.extent(0)", w.extent(0), A.extent(0));
  detail::require_extent("batched_syev", "w.extent(1)", w.extent(1), A.extent(2));
  detail::require_extent("batched_syev", "status.extent(0)", status.extent(0), A.extent(2));
  const int n = int(A.extent(0));
  // Device teams (explicit Q + QL) work on a copy in level-0 scratch when matrix and work fit.
  const std::size_t level0 = detail::ScratchMatrix<ExecSpace>::shmem_size(n, n) +
                             detail::ScratchVector<ExecSpace>::shmem_size(syev_team_work_size(n));
  const bool in_level0 = !detail::host_exec<ExecSpace>() &&
                         level0 <= std::size_t(Kokkos::TeamPolicy<ExecSpace>::scratch_size_max(0));
  run_batched(exec, "perfex::linalg::batched_syev", int(A.extent(2)), host,
              detail::BatchedSyev<ExecSpace, A3, W2, S1>{A, w, status, n, in_level0},
              in_level0 ? level0 : detail::ScratchVector<ExecSpace>::shmem_size(syev_work_size(n)),
              in_level0);
}

template <class ExecSpace, class A3, class S1, class Host>
void band_cholesky_batch(const ExecSpace& exec, const A3& AB, const S1& status, const Host& host) {
  static_assert(detail::check_view<ExecSpace, A3, 3>() &&
                detail::check_view<ExecSpace, S1, 1, int>());
  detail::require_extent("batched_band_cholesky", "status.extent(0)", status.extent(0),
                         AB.extent(2));
  run_batched(exec, "perfex::linalg::batched_band_cholesky", int(AB.extent(2)), host,
              BatchedCholesky<ExecSpace, BandCholesky, A3, S1>{AB, status});
}

template <class ExecSpace, class L3, class B2, class Host>
void band_cholesky_solve_batch(const ExecSpace& exec, const L3& L, const B2& x, const Host& host) {
  static_assert(detail::check_view<ExecSpace, L3, 3>() && detail::check_view<ExecSpace, B2, 2>());
  detail::require_extent("batched_band_cholesky_solve", "x.extent(0)", x.extent(0), L.extent(1));
  detail::require_extent("batched_band_cholesky_solve", "x.extent(1)", x.extent(1), L.extent(2));
  run_batched(exec, "perfex::linalg::batched_band_cholesky_solve", int(L.extent(2)), host,
              BatchedCholeskySolve<ExecSpace, BandCholesky, L3, B2>{L, x});
}

}  // namespace detail

// Eigenvectors of every A(:, :, b) (full symmetric input) in place, eigenvalues ascending in
// w(:, b); status(b) = ok or not_converged. Scratch: syev_work_size(n) doubles per team (level-1
// team scratch); on a device, when n^2 + syev_team_work_size(n) doubles fit in level-0 scratch
// (n <= 74 in 48 KB), the team works on a copy of its matrix there.
template <class ExecSpace, class A3, class W2, class S1>
void batched_syev(const ExecSpace& exec, const A3& A, const W2& w, const S1& status) {
  detail::syev_batch(exec, A, w, status, detail::PortableOnly{});
}

// Band Cholesky factor of every lower band AB(:, :, b) ((kd+1) x n, AB(d, j, b) = A(j+d, j))
// in place; status(b) = ok or not_positive_definite.
template <class ExecSpace, class A3, class S1>
void batched_band_cholesky(const ExecSpace& exec, const A3& AB, const S1& status) {
  detail::band_cholesky_batch(exec, AB, status, detail::PortableOnly{});
}

// x(:, k) <- H_k^{-1} x(:, k) with the band factors L(:, :, k) of batched_band_cholesky.
template <class ExecSpace, class L3, class B2>
void batched_band_cholesky_solve(const ExecSpace& exec, const L3& L, const B2& x) {
  detail::band_cholesky_solve_batch(exec, L, x, detail::PortableOnly{});
}

namespace detail {
// A tail for the factors of AB twisted at band_twist(n): (kd+1) x (n - band_twist(n)) or wider,
// one per matrix.
template <class A3, class T3>
void check_twisted_tail(const A3& AB, const T3& tail, const char* function) {
  const int n = int(AB.extent(1));
  if (tail.extent(0) != AB.extent(0) || int(tail.extent(1)) < n - band_twist(n) ||
      tail.extent(2) != AB.extent(2))
    throw Error(std::string("perfex::linalg::") + function +
                ": tail must be (kd+1) x (n - band_twist(n)) or wider, one per matrix");
}
}  // namespace detail

// The twisted band factors of every lower band AB(:, :, b) ((kd+1) x n) at band_twist(n): AB
// <- L, tail(:, :, b) ((kd+1) x at least n - band_twist(n)) <- the reversed factor of the Schur
// complement (team_band_cholesky_twisted); status(b) = ok or not_positive_definite. For
// batched_band_cholesky_inverse_strided_blocks with the tail. Portable kernel only.
template <class ExecSpace, class A3, class T3, class S1>
void batched_band_cholesky_twisted(const ExecSpace& exec, const A3& AB, const T3& tail,
                                   const S1& status) {
  static_assert(detail::check_view<ExecSpace, A3, 3>() && detail::check_view<ExecSpace, T3, 3>() &&
                detail::check_view<ExecSpace, S1, 1, int>());
  detail::require_extent("batched_band_cholesky_twisted", "status.extent(0)", status.extent(0),
                         AB.extent(2));
  detail::check_twisted_tail(AB, tail, "batched_band_cholesky_twisted");
  const int twist = band_twist(int(AB.extent(1)));
  detail::run_teams(
      exec, "perfex::linalg::batched_band_cholesky_twisted", int(AB.extent(2)),
      detail::BatchedBandCholeskyTwisted<ExecSpace, A3, T3, S1>{AB, tail, status, twist}, 0);
}

namespace detail {
template <class ExecSpace, class L3, class T3, class C4>
void band_inverse_strided_blocks(const ExecSpace& exec, const L3& L, const T3& tail, int twist,
                                 int stride, const C4& C, int first) {
  const int n = int(L.extent(1));
  const int count = int(C.extent(0)), nblocks = int(C.extent(2));
  detail::require_extent("batched_band_cholesky_inverse_strided_blocks", "C.extent(1)", C.extent(1),
                         C.extent(0));
  detail::require_extent("batched_band_cholesky_inverse_strided_blocks", "C.extent(3)", C.extent(3),
                         L.extent(2));
  if (stride <= 0 || count <= 0 || first < 0 || first + nblocks - 1 + (count - 1) * stride >= n)
    throw Error(
        "perfex::linalg::batched_band_cholesky_inverse_strided_blocks: blocks exceed the matrix "
        "size");
  detail::run_teams(exec, "perfex::linalg::batched_band_cholesky_inverse_strided_blocks",
                    int(L.extent(2)),
                    detail::BatchedBandInverseStridedBlocks<ExecSpace, L3, T3, C4>{
                        L, tail, C, n, twist, stride, count, first},
                    detail::ScratchMatrix<ExecSpace>::shmem_size(n, count));
}
}  // namespace detail

// Strided blocks of H_k^{-1} from the band factors L(:, :, k): C(a, c, blk, k) = H_k^{-1}(i_a, i_c)
// with i_a = first + blk + a * stride, a < count = C.extent(0) (block blk of a "stride-interleaved"
// unknown ordering, e.g. fibre blk of a wavelength-major patch). C: (count, count, nblocks, batch).
// Scratch: n * count doubles per team (level-1 team scratch). Portable kernel only.
template <class ExecSpace, class L3, class C4>
void batched_band_cholesky_inverse_strided_blocks(const ExecSpace& exec, const L3& L, int stride,
                                                  const C4& C, int first = 0) {
  static_assert(detail::check_view<ExecSpace, L3, 3>() && detail::check_view<ExecSpace, C4, 4>());
  detail::band_inverse_strided_blocks(exec, L, L, int(L.extent(1)), stride, C, first);
}

// The same from the twisted factors of batched_band_cholesky_twisted (L and tail): half the
// work.
template <class ExecSpace, class L3, class T3, class C4>
void batched_band_cholesky_inverse_strided_blocks(const ExecSpace& exec, const L3& L,
                                                  const T3& tail, int stride, const C4& C,
                                                  int first = 0) {
  static_assert(detail::check_view<ExecSpace, L3, 3>() && detail::check_view<ExecSpace, T3, 3>() &&
                detail::check_view<ExecSpace, C4, 4>());
  detail::check_twisted_tail(L, tail, "batched_band_cholesky_inverse_strided_blocks");
  detail::band_inverse_strided_blocks(exec, L, tail, band_twist(int(L.extent(1))), stride, C,
                                      first);
}

}  // namespace linalg
}  // namespace perfex
