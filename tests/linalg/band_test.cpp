// Tests of the band Cholesky kernels (tag [linalg]): factor, solve and strided blocks of the
// inverse (from the plain and the twisted factor) against the dense kernels, LAPACK's
// dpbtrf/dpbtrs, failure reports and team sizes; the one-thread factor in panels against the
// one a pivot block at a time.
#include "perfex_test.hpp"

#include <perfex/config.hpp>
#include <perfex/linalg/band_cholesky.hpp>
#include <perfex/linalg/reference/batched.hpp>

#include "linalg_test_util.hpp"

using namespace linalg_test;
namespace pl = perfex::linalg;

namespace {

template <class Exec>
using Blocks = Kokkos::View<double****, Kokkos::LayoutLeft, typename Exec::memory_space>;

// Symmetric band matrix with half-bandwidth kd, uniform off-diagonals and a diagonal
// (1 + margin) times the row's off-diagonal sum: positive definite, conditioning set by margin.
inline Dense random_band_spd(int n, int kd, double margin, std::uint32_t seed) {
  Dense A(n);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  for (int j = 0; j < n; ++j)
    for (int i = j + 1; i <= std::min(n - 1, j + kd); ++i) A(i, j) = A(j, i) = u(rng);
  for (int i = 0; i < n; ++i) {
    double s = 0;
    for (int j = 0; j < n; ++j) s += j == i ? 0.0 : std::abs(A(i, j));
    A(i, i) = (1 + margin) * s + 1e-3;
  }
  return A;
}

// Inverse by a plain host Cholesky (the oracle shares no code with the kernels).
inline Dense host_inverse(const Dense& A) {
  const int n = A.n;
  Dense L = A, X(n);
  for (int j = 0; j < n; ++j) {
    for (int k = 0; k < j; ++k)
      for (int i = j; i < n; ++i) L(i, j) -= L(i, k) * L(j, k);
    const double d = std::sqrt(L(j, j));
    for (int i = j; i < n; ++i) L(i, j) /= d;
  }
  for (int c = 0; c < n; ++c) {
    std::vector<double> y(static_cast<std::size_t>(n), 0.0);
    y[static_cast<std::size_t>(c)] = 1.0;
    for (int j = 0; j < n; ++j) {
      y[j] /= L(j, j);
      for (int i = j + 1; i < n; ++i) y[i] -= L(i, j) * y[j];
    }
    for (int j = n - 1; j >= 0; --j) {
      for (int i = j + 1; i < n; ++i) y[j] -= L(i, j) * y[i];
      y[j] /= L(j, j);
    }
    for (int i = 0; i < n; ++i) X(i, c) = y[i];
  }
  return X;
}

// Lower band storage (kd+1, n, batch) of the dense matrices.
inline HostMat to_band(const std::vector<Dense>& A, int kd) {
  const int n = A[0].n;
  HostMat B("band", kd + 1, n, A.size());
  for (std::size_t b = 0; b < A.size(); ++b)
    for (int j = 0; j < n; ++j)
      for (int d = 0; d <= kd && j + d < n; ++d) B(d, j, b) = A[b](j + d, j);
  return B;
}

}  // namespace

PERFEX_BACKEND_TEST_CASE(
    "linalg: band Cholesky, solve and strided inverse blocks equal the dense results", "[linalg]") {
  PERFEX_ONLY_SELECTED_BACKEND();
  using Exec = TestType;
  struct Case {
    int n, kd, stride, count;
    double margin;
  };
  // A DESI patch (7 fibres x 74 wavelengths, kd 58), kd 0, kd >= n (dense), odd sizes.
  for (const Case c : {Case{518, 58, 7, 74, 1e-3}, Case{40, 0, 5, 8, 1.0}, Case{12, 15, 3, 4, 0.1},
                       Case{61, 9, 6, 10, 1e-2}}) {
    CAPTURE(c.n, c.kd, c.stride, c.count);
    const int nb = 2;
    std::vector<Dense> A;
    for (int b = 0; b < nb; ++b) A.push_back(random_band_spd(c.n, c.kd, c.margin, 900u + c.n + b));
    HostMat dense("dense", c.n, c.n, nb);
    for (int b = 0; b < nb; ++b) store(dense, b, A[b]);

    // Dense oracle: factor, solve of ones, and the whole inverse column by column.
    auto L = to_device<Exec>(dense);
    DevStatus<Exec> sd("sd", nb);
    pl::batched_cholesky(Exec(), L, sd);
    DevVecs<Exec> xd("xd", c.n, nb);
    Kokkos::deep_copy(xd, 1.0);
    pl::batched_cholesky_solve(Exec(), L, xd);

    auto LB = to_device<Exec>(to_band(A, c.kd));
    DevStatus<Exec> sb("sb", nb);
    pl::batched_band_cholesky(Exec(), LB, sb);
    DevVecs<Exec> xb("xb", c.n, nb);
    Kokkos::deep_copy(xb, 1.0);
    pl::batched_band_cholesky_solve(Exec(), LB, xb);
    const int nblocks = c.stride;
    Blocks<Exec> C("C", c.count, c.count, nblocks, nb);
    pl::batched_band_cholesky_inverse_strided_blocks(Exec(), LB, c.stride, C);
    // The same blocks from the factor twisted at the middle.
    auto LT = to_device<Exec>(to_band(A, c.kd));
    DevMat<Exec> tail("tail", c.kd + 1, pl::band_tail_columns(c.n), nb);
    DevStatus<Exec> st("st", nb);
    pl::batched_band_cholesky_twisted(Exec(), LT, tail, st);
    Blocks<Exec> CT("CT", c.count, c.count, nblocks, nb);
    pl::batched_band_cholesky_inverse_strided_blocks(Exec(), LT, tail, c.stride, CT);
    Exec().fence();
    auto CTh = to_host(CT);
    auto sth = to_host(st);

    // One declaration each: `auto` must deduce one type for all declarators (nvcc enforces it).
    auto Lh = to_host(L);
    auto LBh = to_host(LB);
    auto xdh = to_host(xd);
    auto xbh = to_host(xb);
    auto Ch = to_host(C);
    auto sdh = to_host(sd);
    auto sbh = to_host(sb);
    for (int b = 0; b < nb; ++b) {
      REQUIRE(sdh(b) == pl::ok);
      REQUIRE(sbh(b) == pl::ok);
      REQUIRE(sth(b) == pl::ok);
      double lerr = 0, lref = 0;
      for (int j = 0; j < c.n; ++j)
        for (int d = 0; d <= c.kd && j + d < c.n; ++d) {
          lerr = std::max(lerr, std::abs(LBh(d, j, b) - Lh(j + d, j, b)));
          lref = std::max(lref, std::abs(Lh(j + d, j, b)));
        }
      CHECK(lerr <= 1e-13 * lref);
      for (int i = 0; i < c.n; ++i)
        CHECK(std::abs(xbh(i, b) - xdh(i, b)) <= 1e-11 * std::abs(xdh(i, b)));
      const Dense inv = host_inverse(A[b]);
      double cerr = 0, cterr = 0, cref = 0;
      for (int blk = 0; blk < nblocks; ++blk)
        for (int a = 0; a < c.count; ++a)
          for (int q = 0; q < c.count; ++q) {
            const int ia = blk + a * c.stride, iq = blk + q * c.stride;
            if (ia >= c.n || iq >= c.n) continue;
            cerr = std::max(cerr, std::abs(Ch(a, q, blk, b) - inv(ia, iq)));
            cterr = std::max(cterr, std::abs(CTh(a, q, blk, b) - inv(ia, iq)));
            cref = std::max(cref, std::abs(inv(ia, iq)));
            REQUIRE(Ch(a, q, blk, b) == Ch(q, a, blk, b));
            REQUIRE(CTh(a, q, blk, b) == CTh(q, a, blk, b));
          }
      CHECK(cerr <= 1e-11 * cref);
      CHECK(cterr <= 1e-11 * cref);
    }
  }
}

PERFEX_BACKEND_TEST_CASE(
    "linalg: band Cholesky reports indefinite and non-finite members, neighbours untouched",
    "[linalg]") {
  PERFEX_ONLY_SELECTED_BACKEND();
  using Exec = TestType;
  const int n = 30, kd = 4;
  std::vector<Dense> A;
  for (int b = 0; b < 3; ++b) A.push_back(random_band_spd(n, kd, 0.5, 77u + b));
  A[0](17, 17) = -1.0;
  A[2](3, 2) = A[2](2, 3) = std::numeric_limits<double>::quiet_NaN();
  auto LB = to_device<Exec>(to_band(A, kd));
  DevStatus<Exec> st("st", 3);
  pl::batched_band_cholesky(Exec(), LB, st);
  Exec().fence();
  auto sh = to_host(st);
  CHECK(sh(0) == pl::not_positive_definite);
  CHECK(sh(1) == pl::ok);
  CHECK(sh(2) == pl::not_positive_definite);
  std::vector<Dense> good{A[1]};
  auto ref = to_device<Exec>(to_band(good, kd));
  DevStatus<Exec> s1("s1", 1);
  pl::batched_band_cholesky(Exec(), ref, s1);
  Exec().fence();
  auto LBh = to_host(LB), refh = to_host(ref);
  for (int j = 0; j < n; ++j)
    for (int d = 0; d <= kd; ++d) CHECK(LBh(d, j, 1) == refh(d, j, 0));
}

#if PERFEX_HAVE_LAPACK
PERFEX_BACKEND_TEST_CASE("linalg: LAPACK dpbtrf/dpbtrs backend of the band front-ends",
                         "[linalg]") {
  PERFEX_ONLY_SELECTED_BACKEND();
  using Exec = TestType;
  if constexpr (!Kokkos::SpaceAccessibility<Exec, Kokkos::HostSpace>::accessible) {
    SUCCEED("not a host backend");
  } else {
    const int n = 200, kd = 21, nb = 3;
    std::vector<Dense> A;
    for (int b = 0; b < nb; ++b) A.push_back(random_band_spd(n, kd, 1e-2, 300u + b));
    A[1](50, 50) = -5.0;
    const HostMat band = to_band(A, kd);
    auto P = to_device<Exec>(band), Q = to_device<Exec>(band);
    DevStatus<Exec> sp("sp", nb), sq("sq", nb);
    pl::batched_band_cholesky(Exec(), P, sp);
    pl::batched_band_cholesky(Exec(), Q, sq, pl::Backend::lapack);
    DevVecs<Exec> xp("xp", n, nb), xq("xq", n, nb);
    Kokkos::deep_copy(xp, 1.0);
    Kokkos::deep_copy(xq, 1.0);
    pl::batched_band_cholesky_solve(Exec(), P, xp);
    pl::batched_band_cholesky_solve(Exec(), Q, xq, pl::Backend::lapack);
    Exec().fence();
    CHECK(sp(1) == pl::not_positive_definite);
    CHECK(sq(1) == pl::not_positive_definite);
    for (int b : {0, 2}) {
      REQUIRE(sp(b) == pl::ok);
      REQUIRE(sq(b) == pl::ok);
      for (int j = 0; j < n; ++j) {
        for (int d = 0; d <= kd && j + d < n; ++d)
          CHECK(std::abs(P(d, j, b) - Q(d, j, b)) <= 1e-13 * std::abs(Q(0, j, b)));
        CHECK(std::abs(xp(j, b) - xq(j, b)) <= 1e-12 * std::abs(xq(j, b)));
      }
    }
  }
}
#endif

namespace {
// Every band kernel on one matrix, for comparing team sizes.
template <class Exec>
struct BandKernels {
  DevMat<Exec> L;
  DevVecs<Exec> x, work;
  Blocks<Exec> C;
  DevStatus<Exec> st;
  int stride;
  KOKKOS_INLINE_FUNCTION void operator()(
      const typename Kokkos::TeamPolicy<Exec>::member_type& m) const {
    auto Lb = Kokkos::subview(L, Kokkos::ALL(), Kokkos::ALL(), 0);
    const int s = pl::team_band_cholesky(m, Lb);
    pl::team_band_cholesky_solve(m, Lb, Kokkos::subview(x, Kokkos::ALL(), 0));
    pl::team_band_cholesky_inverse_strided_block(
        m, Lb, 1, stride, int(C.extent(0)), Kokkos::subview(C, Kokkos::ALL(), Kokkos::ALL(), 0, 0),
        work);
    Kokkos::single(Kokkos::PerTeam(m), [&]() { st(0) = s; });
  }
};

template <class Exec>
std::vector<double> band_kernels(const HostMat& band, int stride, int count, TeamShape shape) {
  const int n = int(band.extent(1));
  BandKernels<Exec> f{to_device<Exec>(band),           DevVecs<Exec>("x", n, 1),
                      DevVecs<Exec>("work", n, count), Blocks<Exec>("C", count, count, 1, 1),
                      DevStatus<Exec>("st", 1),        stride};
  Kokkos::deep_copy(f.x, 1.0);
  run_one_team<Exec>("perfex::test::band_kernels", f, shape);
  REQUIRE(to_host(f.st)(0) == pl::ok);
  std::vector<double> out;
  auto L = to_host(f.L);
  auto x = to_host(f.x);
  auto C = to_host(f.C);
  out.insert(out.end(), L.data(), L.data() + L.size());
  out.insert(out.end(), C.data(), C.data() + C.size());
  out.insert(out.end(), x.data(), x.data() + x.size());
  return out;
}
}  // namespace

PERFEX_BACKEND_TEST_CASE("linalg: band kernels give the one-thread results in every team shape",
                         "[linalg][team]") {
  PERFEX_ONLY_SELECTED_BACKEND();
  using Exec = TestType;
  struct Case {
    int n, kd, stride, count;
  };
  // A DESI-like band (wavelength-major, 7 fibres), a small one, and kd below the one-thread
  // kernels' pivot block.
  for (const Case c : {Case{518, 58, 7, 74}, Case{150, 20, 5, 29}, Case{40, 2, 3, 13}}) {
    const HostMat band = to_band({random_band_spd(c.n, c.kd, 1e-2, 5u + c.n)}, c.kd);
    const std::vector<double> one = band_kernels<Exec>(band, c.stride, c.count, {1, 1});
    for (const TeamShape shape : team_shapes<Exec>(BandKernels<Exec>{})) {
      CAPTURE(c.n, c.kd, shape.team_size, shape.vector_length);
      CHECK(max_relative_difference(one, band_kernels<Exec>(band, c.stride, c.count, shape)) <=
            1e-12);
    }
  }
}

namespace {
// The twisted factor at `twist`, its solve of x and one strided block from it.
template <class Exec>
struct TwistedKernels {
  DevMat<Exec> L, tail;
  DevVecs<Exec> x, work;
  Blocks<Exec> C;
  DevStatus<Exec> st;
  int twist, first, stride;
  KOKKOS_INLINE_FUNCTION void operator()(
      const typename Kokkos::TeamPolicy<Exec>::member_type& m) const {
    auto Lb = Kokkos::subview(L, Kokkos::ALL(), Kokkos::ALL(), 0);
    auto Tb = Kokkos::subview(tail, Kokkos::ALL(), Kokkos::ALL(), 0);
    const int s = pl::team_band_cholesky_twisted(m, Lb, Tb, twist);
    pl::team_band_cholesky_solve(m, Lb, Tb, twist, Kokkos::subview(x, Kokkos::ALL(), 0));
    pl::team_band_cholesky_inverse_strided_block(
        m, Lb, Tb, twist, first, stride, int(C.extent(0)),
        Kokkos::subview(C, Kokkos::ALL(), Kokkos::ALL(), 0, 0), work);
    Kokkos::single(Kokkos::PerTeam(m), [&]() { st(0) = s; });
  }
};

// x = H^-1 1 and the block, as one list.
template <class Exec>
std::vector<double> twisted_kernels(const HostMat& band, int twist, int first, int stride,
                                    int count, TeamShape shape) {
  const int n = int(band.extent(1)), kd = int(band.extent(0)) - 1;
  TwistedKernels<Exec> f{to_device<Exec>(band),
                         DevMat<Exec>("tail", kd + 1, std::max(1, n - twist), 1),
                         DevVecs<Exec>("x", n, 1),
                         DevVecs<Exec>("work", n, count),
                         Blocks<Exec>("C", count, count, 1, 1),
                         DevStatus<Exec>("st", 1),
                         twist,
                         first,
                         stride};
  Kokkos::deep_copy(f.x, 1.0);
  run_one_team<Exec>("perfex::test::twisted_kernels", f, shape);
  REQUIRE(to_host(f.st)(0) == pl::ok);
  auto x = to_host(f.x);
  auto C = to_host(f.C);
  std::vector<double> out(x.data(), x.data() + x.size());
  out.insert(out.end(), C.data(), C.data() + C.size());
  return out;
}
}  // namespace

PERFEX_BACKEND_TEST_CASE(
    "linalg: the twisted band factor solves and gives the strided blocks of H^-1 at any twist, in "
    "every team shape",
    "[linalg]") {
  PERFEX_ONLY_SELECTED_BACKEND();
  using Exec = TestType;
  struct Case {
    int n, kd, first, stride, count;
  };
  // A DESI-like patch (fibre 3 of 7), a small band, kd 0, a block whose columns all start
  // below the middle, and kd >= n (dense).
  for (const Case c : {Case{518, 58, 3, 7, 74}, Case{61, 9, 2, 6, 10}, Case{40, 0, 1, 5, 8},
                       Case{50, 6, 31, 2, 9}, Case{12, 15, 1, 3, 4}}) {
    const Dense A = random_band_spd(c.n, c.kd, 1e-2, 40u + c.n);
    const HostMat band = to_band({A}, c.kd);
    const Dense inv = host_inverse(A);
    std::vector<double> expect(static_cast<std::size_t>(c.n), 0.0);
    for (int i = 0; i < c.n; ++i)
      for (int j = 0; j < c.n; ++j) expect[i] += inv(i, j);
    for (int a = 0; a < c.count; ++a)
      for (int q = 0; q < c.count; ++q)
        expect.push_back(inv(c.first + q * c.stride, c.first + a * c.stride));
    // Twists at both ends, on and off the pivot blocks, before and inside the block's rows.
    for (const int twist : {0, 1, 3, c.n / 3, pl::band_twist(c.n), c.n - 1, c.n}) {
      const auto one = twisted_kernels<Exec>(band, twist, c.first, c.stride, c.count, {1, 1});
      CAPTURE(c.n, c.kd, twist);
      CHECK(max_relative_difference(expect, one) <= 1e-11);
      for (const TeamShape shape : team_shapes<Exec>(TwistedKernels<Exec>{})) {
        CAPTURE(shape.team_size, shape.vector_length);
        CHECK(max_relative_difference(one, twisted_kernels<Exec>(band, twist, c.first, c.stride,
                                                                 c.count, shape)) <= 1e-12);
      }
    }
  }
}

PERFEX_BACKEND_TEST_CASE("linalg: the twisted batched entry points reject a tail of the wrong size",
                         "[linalg]") {
  PERFEX_ONLY_SELECTED_BACKEND();
  using Exec = TestType;
  using Catch::Contains;
  const int n = 40, kd = 5, nb = 2, need = n - pl::band_twist(n);
  const Dense A = random_band_spd(n, kd, 1e-2, 7u);
  auto L = to_device<Exec>(to_band({A, A}, kd));
  DevStatus<Exec> st("st", nb);
  Blocks<Exec> C("C", 4, 4, 1, nb);
  for (const DevMat<Exec>& tail :
       {DevMat<Exec>("narrow", kd + 1, need - 1, nb), DevMat<Exec>("short", kd, need, nb),
        DevMat<Exec>("fewer", kd + 1, need, nb - 1)}) {
    CAPTURE(tail.label());
    CHECK_THROWS_WITH(pl::batched_band_cholesky_twisted(Exec(), L, tail, st),
                      Contains("batched_band_cholesky_twisted: tail must be (kd+1) x"));
    CHECK_THROWS_WITH(pl::batched_band_cholesky_inverse_strided_blocks(Exec(), L, tail, 5, C),
                      Contains("batched_band_cholesky_inverse_strided_blocks: tail must be"));
  }
  // The smallest tail that fits passes both, and the factors are usable.
  DevMat<Exec> tail("fits", kd + 1, need, nb);
  CHECK_NOTHROW(pl::batched_band_cholesky_twisted(Exec(), L, tail, st));
  CHECK_NOTHROW(pl::batched_band_cholesky_inverse_strided_blocks(Exec(), L, tail, 5, C));
  Exec().fence();
  auto sth = to_host(st);
  auto Ch = to_host(C);
  const Dense inv = host_inverse(A);
  for (int b = 0; b < nb; ++b) {
    REQUIRE(sth(b) == pl::ok);
    for (int a = 0; a < 4; ++a)
      for (int q = 0; q < 4; ++q)
        CHECK(std::abs(Ch(a, q, 0, b) - inv(5 * a, 5 * q)) <= 1e-11 * std::abs(inv(0, 0)));
  }
}

TEST_CASE(
    "linalg: the one-thread band factor in panels equals the factor a pivot block at a time, "
    "within the band only",
    "[linalg]") {
  namespace pd = perfex::linalg::detail;
  struct Case {
    int n, kd, pad, j1;
  };
  // DESI's band (to the twist and whole), bands of two and three panels, bands reaching past
  // the end, a leading dimension larger than the band (a patch in a frame's scratch), pivots
  // stopping off a panel boundary.
  for (const Case c :
       {Case{518, 58, 0, 256}, Case{518, 58, 0, 518}, Case{150, 16, 0, 150}, Case{150, 23, 5, 150},
        Case{30, 40, 0, 30}, Case{200, 38, 3, 77}, Case{61, 17, 1, 61}}) {
    CAPTURE(c.n, c.kd, c.pad, c.j1);
    const Dense A = random_band_spd(c.n, c.kd, 1e-2, 60u + c.n + c.kd);
    const int ld = c.kd + 1 + c.pad;
    std::vector<double> by_pivots(static_cast<std::size_t>(ld) * c.n, -7.0);
    for (int j = 0; j < c.n; ++j)
      for (int d = 0; d <= c.kd && j + d < c.n; ++d) by_pivots[d + j * ld] = A(j + d, j);
    std::vector<double> panels = by_pivots;
    REQUIRE(pd::band_cholesky_by_pivots(pd::MatRef<true>{by_pivots.data(), 1, ld}, c.n, c.kd, 0,
                                        c.j1) == pl::ok);
    REQUIRE(pd::band_cholesky_sequential(pd::MatRef<true>{panels.data(), 1, ld}, c.n, c.kd, 0,
                                         c.j1) == pl::ok);
    double scale = 0, diff = 0;
    for (int j = 0; j < c.n; ++j)
      for (int d = 0; d < ld; ++d) {
        const std::size_t i = static_cast<std::size_t>(d + j * ld);
        if (d > c.kd || j + d >= c.n) {
          CHECK(panels[i] == -7.0);  // padding and the entries past the matrix, untouched
        } else {
          scale = std::max(scale, std::abs(by_pivots[i]));
          diff = std::max(diff, std::abs(panels[i] - by_pivots[i]));
        }
      }
    CHECK(diff <= 1e-13 * scale);
  }
  // A matrix that is not positive definite fails at the same pivot either way.
  Dense A = random_band_spd(100, 20, 1e-2, 5u);
  A(60, 60) = -1.0;
  std::vector<double> band(21 * 100, 0.0);
  for (int j = 0; j < 100; ++j)
    for (int d = 0; d <= 20 && j + d < 100; ++d) band[d + j * 21] = A(j + d, j);
  std::vector<double> other = band;
  CHECK(pd::band_cholesky_sequential(pd::MatRef<true>{band.data(), 1, 21}, 100, 20, 0, 100) ==
        pl::not_positive_definite);
  CHECK(pd::band_cholesky_by_pivots(pd::MatRef<true>{other.data(), 1, 21}, 100, 20, 0, 100) ==
        pl::not_positive_definite);
  for (int j = 0; j < 60; ++j) CHECK(std::abs(band[j * 21] - other[j * 21]) <= 1e-12 * band[0]);
}
