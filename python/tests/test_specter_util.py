"""perfex.specter's util helpers (sincshift, sincshift2d, trapz, resample) and extract's
eigen_compose and resolution_from_icov against specter's: real specter from its checkout
($PERFEX_CLIENTS, skipped with a message without it) and, everywhere, a numpy rewrite of
specter's algorithm in this file plus numbers worked out by hand."""

import importlib.util
import sys
import types

import numpy as np
import pytest

pytest.importorskip("scipy", reason="perfex.specter needs scipy")
pytest.importorskip("astropy", reason="perfex.specter reads PSF headers with astropy")

import perfex.specter  # noqa: E402
import scipy.linalg  # noqa: E402
from perfex.specter import extract, util  # noqa: E402

import clients  # noqa: E402

EPS10 = 10.0 * np.finfo(np.float64).eps  # specter's eigenvalue threshold


def specter_modules():
    return [k for k in sys.modules if k == "specter" or k.startswith("specter.")]


@pytest.fixture(scope="module")
def real():
    """Real specter's specter.util.util and specter.extract.ex2d, imported from the checkout and
    then taken out of sys.modules again (the drop-in's alias tests import `specter` too). Without
    numba, a stand-in whose jit returns the function unchanged (numba's NUMBA_DISABLE_JIT=1):
    specter imports numba at module level, and none of the functions compared here is jitted."""
    specter_py = clients.client_py("specter")
    if specter_py is None:
        pytest.skip(f"specter's checkout not found in {clients.clients_root()} (set PERFEX_CLIENTS)")
    saved = {k: sys.modules.pop(k) for k in specter_modules()}
    stand_in = importlib.util.find_spec("numba") is None
    if stand_in:
        numba = types.ModuleType("numba")
        numba.jit = lambda *args, **kwargs: args[0] if args and callable(args[0]) else (lambda f: f)
        sys.modules["numba"] = numba
    sys.path.insert(0, specter_py)
    try:
        return types.SimpleNamespace(
            util=importlib.import_module("specter.util.util"), ex2d=importlib.import_module("specter.extract.ex2d")
        )
    finally:
        sys.path.remove(specter_py)
        for k in specter_modules():
            del sys.modules[k]
        sys.modules.update(saved)
        if stand_in:
            del sys.modules["numba"]


# ---- numpy rewrites of specter's algorithms ------------------------------------------------


def rewrite_kernel(shift, sincrad, dampfac):
    s = np.arange(-sincrad, sincrad + 1.0)
    if shift == 0:
        return (np.arange(len(s)) == len(s) // 2).astype(float)
    return np.exp(-(((s - shift) / dampfac) ** 2)) * np.sinc(s - shift)


def rewrite_same(line, kernel):
    """scipy.signal.convolve(line, kernel, mode='same') of 1D arrays."""
    start = (len(kernel) - 1) // 2
    return np.convolve(line, kernel, mode="full")[start : start + len(line)]


def rewrite_sincshift(image, dx, dy, sincrad=10, dampfac=3.25):
    if abs(dx) > 1e-6:
        image = rewrite_same(image.ravel(), rewrite_kernel(dx, sincrad, dampfac)).reshape(image.shape)
    if abs(dy) > 1e-6:
        image = rewrite_same(image.T.ravel(), rewrite_kernel(dy, sincrad, dampfac)).reshape(image.shape[::-1]).T
    return image


def rewrite_sincshift2d(image, dx, dy, sincrad=10, dampfac=3.25):
    kx, ky = rewrite_kernel(dx, sincrad, dampfac), rewrite_kernel(dy, sincrad, dampfac)
    rows = np.array([rewrite_same(row, kx) for row in image])
    return np.array([rewrite_same(col, ky) for col in rows.T]).T


def rewrite_trapz(edges, xp, yp):
    out = []
    for lo, hi in zip(edges[:-1], edges[1:]):
        inside = (xp >= lo) & (xp < hi)
        x = np.concatenate(([lo], xp[inside], [hi]))
        y = np.concatenate(([np.interp(lo, xp, yp)], yp[inside], [np.interp(hi, xp, yp)]))
        out.append(np.sum(np.diff(x) * (y[1:] + y[:-1]) / 2))
    return np.array(out)


def rewrite_edges(c):
    mid = (c[1:] + c[:-1]) / 2
    return np.concatenate(([2 * mid[0] - mid[1]], mid, [2 * mid[-1] - mid[-2]]))


def rewrite_resample(x, xp, yp, xedges=False, xpedges=False):
    """The pixel spline as a dense system: y = A_i + B_i t + C_i t^2 (t from bin i's lower edge)
    with mean yp_i over the bin, value and slope continuous, slope 0 at both ends; each new bin
    gets the exact integral over its overlap with the old bins divided by its width."""
    old = xp if xpedges else rewrite_edges(xp)
    new = x if xedges else rewrite_edges(x)
    n, d = len(yp), np.diff(old)
    m, rhs, row = np.zeros((3 * n, 3 * n)), np.zeros(3 * n), 0
    for i in range(n):
        m[row, 3 * i : 3 * i + 3], rhs[row] = (1, d[i] / 2, d[i] ** 2 / 3), yp[i]
        row += 1
    for i in range(n - 1):
        m[row, 3 * i : 3 * i + 6] = (1, d[i], d[i] ** 2, -1, 0, 0)
        m[row + 1, 3 * i : 3 * i + 6] = (0, 1, 2 * d[i], 0, -1, 0)
        row += 2
    m[row, 1], m[row + 1, 3 * n - 2 : 3 * n] = 1, (1, 2 * d[-1])
    a, b, c = np.linalg.solve(m, rhs).reshape(n, 3).T
    antiderivative = lambda i, t: a[i] * t + b[i] * t**2 / 2 + c[i] * t**3 / 3  # noqa: E731
    out = np.zeros(len(new) - 1)
    for k in range(len(out)):
        for i in range(n):
            lo, hi = max(new[k], old[i]), min(new[k + 1], old[i + 1])
            if hi > lo:
                out[k] += antiderivative(i, hi - old[i]) - antiderivative(i, lo - old[i])
    return out / np.diff(new)


def rewrite_eigen_compose(w, v, invert=False, sqr=False):
    """specter's four cases: the floor is 10 eps of max(w) (of sqrt(max(w)) with sqr); with
    invert it is compared with f(w), without with w itself."""
    floor = EPS10 * (np.sqrt(np.max(w)) if sqr else np.max(w))
    f = []
    for x in w:
        root = np.sqrt(x) if x >= 0 else np.nan
        value, compared = (root, (root if invert else x)) if sqr else (x, x)
        f.append(value if compared > floor else floor)
    f = np.array(f)
    # specter's order, v (F v^T): with decorr, a singular matrix's C has entries ~1e14 whose
    # rounding moves its blocks' small eigenvalues, and R, by 1e-8
    return v.dot(np.diag(1 / f if invert else f).dot(v.T))


def rewrite_resolution(icov, decorr=None):
    w, v = scipy.linalg.eigh((icov + icov.T) / 2)
    if decorr is None:
        q = rewrite_eigen_compose(w, v, sqr=True)
    else:
        cov, q, k = rewrite_eigen_compose(w, v, invert=True), np.zeros_like(icov), 0
        for b in decorr:
            q[k : k + b, k : k + b] = rewrite_eigen_compose(*scipy.linalg.eigh(cov[k : k + b, k : k + b]), True, True)
            k += b
    norm = q.sum(axis=1)
    return q / norm[:, None], norm**2


# ---- inputs ----------------------------------------------------------------------------------


def shift_cases():
    """(image, dx, dy, keywords): random images, small to wider than the kernel, fractional and
    skipped (1e-7) shifts, specter's defaults and other sincrad and dampfac."""
    rng = np.random.default_rng(11)
    cases = []
    for k in range(24):
        image = rng.normal(size=(int(rng.integers(1, 19)), int(rng.integers(1, 25))))
        dx, dy = rng.uniform(-2.5, 2.5, 2)
        dx = 0.0 if k % 5 == 0 else dx
        dy = 1e-7 if k % 7 == 0 else dy
        keywords = {"sincrad": int(rng.integers(1, 13)), "dampfac": float(rng.uniform(1, 5))} if k % 2 else {}
        cases.append((image, dx, dy, keywords))
    return cases


def spectra_cases():
    """(xp, yp, x, edges): uneven sorted samples, new grids reaching beyond them, and grids whose
    edges fall on the old ones (specter's searchsorted ties)."""
    rng = np.random.default_rng(12)
    cases = []
    for k in range(12):
        n = int(rng.integers(4, 30))
        xp = np.linspace(0.0, 10.0, n) + (rng.uniform(-0.15, 0.15, n) if k % 2 else 0.0)
        yp = rng.uniform(0.0, 1.0, n)
        x = np.sort(rng.uniform(-1.0, 11.0, int(rng.integers(4, 40))))
        x = x[np.concatenate(([True], np.diff(x) > 1e-3))]
        edges = np.sort(rng.uniform(-1.0, 11.0, int(rng.integers(2, 25))))
        cases.append((xp, yp, x, edges))
    xp = np.arange(10.0)
    cases.append((xp, np.sin(xp) + 1, np.arange(-2.0, 12.0, 0.5), np.arange(-1.5, 11.0, 1.0)))
    return cases


def eigen_cases():
    """(w, v): orthonormal v with eigenvalues all positive, tiny of both signs (as a singular
    matrix's), negative, or positive far below the threshold."""
    rng = np.random.default_rng(13)
    cases = []
    for k in range(16):
        n = int(rng.integers(3, 25))
        v = scipy.linalg.qr(rng.normal(size=(n, n)))[0]
        w = rng.uniform(0.1, 10.0, n)
        if k % 4 == 1:
            w[: n // 2] = rng.normal(scale=1e-14, size=n // 2)
        elif k % 4 == 2:
            w[: n // 3] = -rng.uniform(0.0, 1e-3, n // 3)
        elif k % 4 == 3:
            w[: n // 2] = 10.0 ** rng.uniform(-30, -10, n // 2)
        cases.append((w, v))
    return cases


def icov_cases():
    """(icov, decorr): well-conditioned, singular (rank n/2 + 1) and indefinite matrices, whole
    or in two spectra's blocks."""
    cases = []
    for k, (w, v) in enumerate(eigen_cases()):
        n = len(w)
        icov = (v * w) @ v.T
        if k % 4 == 0:
            a = np.random.default_rng(k).normal(size=(n, n // 2 + 1))
            icov = a @ a.T
        cases += [(icov, None), (icov, [n // 2, n - n // 2])]
    return cases


def assert_close(actual, expected, rtol):
    """Equal to rtol of expected's largest magnitude (NaN where expected has NaN)."""
    expected = np.asarray(expected)
    np.testing.assert_allclose(actual, expected, rtol=0, atol=rtol * np.nanmax(np.abs(expected)), equal_nan=True)


# ---- sincshift, sincshift2d --------------------------------------------------------------


@pytest.mark.parametrize("shift", [util.sincshift, util.sincshift2d])
def test_sincshift_moves_towards_higher_indices(shift):
    """A point at row 7, column 8 shifted by dx = +1 lands on column 9, by dy = +1 on row 8, as
    specter's (which gives NaN at exactly integer shifts, dividing 0 by 0: the drop-in takes the
    limit, a whole-pixel move)."""
    image = np.zeros((15, 15))
    image[7, 8] = 1.0
    right, down = np.zeros((15, 15)), np.zeros((15, 15))
    right[7, 9] = down[8, 8] = 1.0
    np.testing.assert_allclose(shift(image, 1.0, 0.0), right, rtol=0, atol=1e-15)
    np.testing.assert_allclose(shift(image, 0.0, 1.0), down, rtol=0, atol=1e-15)
    half = 2.0 / np.pi * np.exp(-((0.5 / 3.25) ** 2))  # specter's kernel at +-0.5: sinc, damped
    np.testing.assert_allclose(shift(image, 0.5, 0.0)[7, 8:10], [half, half], rtol=1e-14)


@pytest.mark.parametrize("shift", [util.sincshift, util.sincshift2d])
def test_sincshift_takes_sincrad_and_dampfac(shift):
    """sincrad: the kernel's half width (1: columns 7 to 9 of a point at column 8 shifted by
    0.5); dampfac: the width of its Gaussian damping."""
    image = np.zeros((5, 15))
    image[2, 8] = 1.0
    row = shift(image, 0.5, 0.0, sincrad=1)[2]
    kernel = [np.exp(-((s / 3.25) ** 2)) * np.sinc(s) for s in (-1.5, -0.5, 0.5)]
    np.testing.assert_allclose(row, np.r_[np.zeros(7), kernel, np.zeros(5)], rtol=1e-14, atol=1e-300)
    assert shift(image, 0.5, 0.0)[2, 10] != 0.0  # specter's default sincrad 10 reaches further
    damped = shift(image, 0.5, 0.0, dampfac=1.0)[2, 8]
    np.testing.assert_allclose(damped, np.exp(-0.25) * 2 / np.pi, rtol=1e-14)


@pytest.mark.parametrize("k", range(len(shift_cases())))
def test_sincshift_matches_specter_rewrite(k):
    image, dx, dy, keywords = shift_cases()[k]
    assert_close(util.sincshift(image, dx, dy, **keywords), rewrite_sincshift(image, dx, dy, **keywords), 1e-13)
    assert_close(util.sincshift2d(image, dx, dy, **keywords), rewrite_sincshift2d(image, dx, dy, **keywords), 1e-13)


def test_sincshift_matches_real_specter(real):
    for image, dx, dy, keywords in shift_cases():
        assert_close(util.sincshift(image, dx, dy, **keywords), real.util.sincshift(image, dx, dy, **keywords), 1e-13)
        assert_close(
            util.sincshift2d(image, dx, dy, **keywords), real.util.sincshift2d(image, dx, dy, **keywords), 1e-13
        )


# ---- trapz, resample -----------------------------------------------------------------------


def test_trapz_numbers_and_errors():
    """A tent integrated by hand; edges beyond the samples integrate the clamped end values;
    unsorted samples and samples of another length refused with specter's ValueErrors."""
    xp, yp = np.array([0.0, 1.0, 2.0]), np.array([0.0, 1.0, 0.0])
    np.testing.assert_allclose(util.trapz([0.0, 0.5, 2.0], xp, yp), [0.125, 0.875], rtol=1e-15)
    np.testing.assert_allclose(util.trapz([-2.0, -1.0, 3.0], xp, yp), [0.0, 1.0], rtol=1e-15)
    x = np.linspace(0, 2, 20)  # specter's test_trapz: the whole range is numpy's trapezoid, to the bit
    whole = np.trapezoid(np.sin(x), x) if hasattr(np, "trapezoid") else np.trapz(np.sin(x), x)
    assert util.trapz((x[0], x[-1]), x, np.sin(x))[0] == whole
    # a step (a repeated sample): a bin ending on it takes the step's upper value, as specter
    np.testing.assert_allclose(util.trapz([0.0, 1.0, 2.0], [0.0, 1.0, 1.0, 2.0], [0.0, 1.0, 5.0, 2.0]), [2.5, 3.5])
    with pytest.raises(ValueError, match="Input x must be sorted in increasing order"):
        util.trapz([0.0, 1.0], xp[::-1], yp)
    with pytest.raises(ValueError, match="xp and yp must have same length"):
        util.trapz([0.0, 1.0], xp, yp[:2])


def test_resample_numbers():
    """The pixel spline of bins [0, 1, 2, 3] with averages 0, 1, 0 has slopes 2 and -2 at the
    inner edges: over [0.5, 1.5] it averages 1/8 + 1/2 = 0.625 (linear interpolation of the
    centres gives 0.75). A constant stays constant; the integral over the old bins is kept."""
    edges = np.array([0.0, 1.0, 2.0, 3.0])
    np.testing.assert_allclose(util.resample([0.5, 1.5], edges, [0.0, 1.0, 0.0], True, True), [0.625], rtol=1e-15)
    x = np.linspace(1.0, 9.0, 13)
    np.testing.assert_allclose(util.resample(x, np.arange(11.0), np.full(11, 2.5)), 2.5, rtol=1e-14)
    y = np.random.default_rng(4).uniform(0, 1, 10)
    new = np.linspace(0.0, 10.0, 7)
    np.testing.assert_allclose(np.sum(util.resample(new, np.arange(11.0), y, True, True) * np.diff(new)), y.sum())
    outside = util.resample([-3.0, -1.0, 12.0, 13.0], np.arange(11.0), y, True, True)  # zero beyond the bins
    np.testing.assert_allclose(outside, [0.0, y.sum() / 13.0, 0.0], rtol=1e-14)


@pytest.mark.parametrize("k", range(len(spectra_cases())))
def test_trapz_and_resample_match_specter_rewrite(k):
    xp, yp, x, edges = spectra_cases()[k]
    assert_close(util.trapz(edges, xp, yp), rewrite_trapz(edges, xp, yp), 1e-14)
    for xedges in (False, True):
        for xpedges, xxp in ((False, xp), (True, rewrite_edges(xp))):
            assert_close(
                util.resample(x, xxp, yp, xedges, xpedges), rewrite_resample(x, xxp, yp, xedges, xpedges), 1e-12
            )


def test_trapz_and_resample_match_real_specter(real):
    """To rounding, decreasing edges and repeated samples at the edges included."""
    for xp, yp, x, edges in spectra_cases():
        assert_close(util.trapz(edges, xp, yp), real.util.trapz(edges, xp, yp), 1e-15)
        assert_close(util.trapz(edges[::-1], xp, yp), real.util.trapz(edges[::-1], xp, yp), 1e-15)
        for xedges in (False, True):
            for xpedges, xxp in ((False, xp), (True, rewrite_edges(xp))):
                expected = real.util.resample(x, xxp, yp, xedges=xedges, xpedges=xpedges)
                assert_close(util.resample(x, xxp, yp, xedges=xedges, xpedges=xpedges), expected, 1e-13)
    xp, yp, edges = (
        np.array([0.0, 1.0, 1.0, 2.0, 3.0, 3.0]),
        np.array([0.0, 1.0, 5.0, 2.0, 3.0, -1.0]),
        [0.5, 1, 2, 3, 4],
    )
    assert_close(util.trapz(edges, xp, yp), real.util.trapz(edges, xp, yp), 1e-15)


# ---- eigen_compose, resolution_from_icov ---------------------------------------------------


def test_eigen_compose_numbers():
    """Eigenvalues -1, 1e-20, 4 (v = I) in specter's four cases: -1 always takes the floor (10 eps
    of 4, or of 2 with sqr); 1e-20 too, but for invert with sqr, where its square root 1e-10 is
    compared and kept."""
    w, v = np.array([-1.0, 1e-20, 4.0]), np.eye(3)
    diag = lambda **kw: np.diag(extract.eigen_compose(w, v, **kw))  # noqa: E731
    np.testing.assert_allclose(diag(), [4 * EPS10, 4 * EPS10, 4.0], rtol=1e-15)
    np.testing.assert_allclose(diag(sqr=True), [2 * EPS10, 2 * EPS10, 2.0], rtol=1e-15)
    np.testing.assert_allclose(diag(invert=True), [1 / (4 * EPS10), 1 / (4 * EPS10), 0.25], rtol=1e-15)
    np.testing.assert_allclose(diag(invert=True, sqr=True), [1 / (2 * EPS10), 1e10, 0.5], rtol=1e-15)


@pytest.mark.parametrize("k", range(len(eigen_cases())))
def test_eigen_compose_matches_specter_rewrite(k):
    w, v = eigen_cases()[k]
    for invert in (False, True):
        for sqr in (False, True):
            actual = extract.eigen_compose(w, v, invert=invert, sqr=sqr)
            assert_close(actual, rewrite_eigen_compose(w, v, invert, sqr), 1e-11)


@pytest.mark.parametrize("k", range(len(icov_cases())))
def test_resolution_from_icov_matches_specter_rewrite(k):
    icov, decorr = icov_cases()[k]
    for actual, expected in zip(extract.resolution_from_icov(icov, decorr), rewrite_resolution(icov, decorr)):
        assert_close(actual, expected, 1e-11)


def test_eigen_compose_and_resolution_match_real_specter(real):
    """To 1e-11 of the largest value (the CHANGELOG's promise), singular and indefinite matrices
    included."""
    with np.errstate(invalid="ignore", divide="ignore"):  # specter's sqrt of negative eigenvalues
        for w, v in eigen_cases():
            for invert in (False, True):
                for sqr in (False, True):
                    expected = real.ex2d.eigen_compose(w, v, invert=invert, sqr=sqr)
                    assert_close(extract.eigen_compose(w, v, invert=invert, sqr=sqr), expected, 1e-11)
        for icov, decorr in icov_cases():
            expected = real.ex2d.resolution_from_icov(icov, decorr)
            for actual, theirs in zip(extract.resolution_from_icov(icov, decorr), expected):
                assert_close(actual, theirs, 1e-11)


# ---- the import ------------------------------------------------------------------------------


def test_import_leaves_scipy_special_unloaded():
    """`import perfex.specter` does not import scipy.special (0.3 s): the helpers import scipy
    where they use it."""
    import subprocess

    from conftest import python_env

    code = "import sys, perfex.specter; print('scipy.special' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], env=python_env(), capture_output=True, text=True)
    assert result.stdout.strip() == "False", result.stdout + result.stderr
    assert perfex.specter.util.custom_erf(np.array([0.0]))[0] == 0.0
