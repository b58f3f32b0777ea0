"""perfex.plot: the quick-look PNG."""

import pytest

import perfex

from conftest import run_python

pytest.importorskip("matplotlib", reason="Debian: python3-matplotlib")
import perfex.plot  # noqa: E402


def test_quicklook_png(small_frame, tmp_path):
    path = perfex.plot.quicklook(small_frame, tmp_path / "frame.png", fibers=[0, 28, 59])
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20000
    with pytest.raises(ValueError, match="60 spectra"):
        perfex.plot.quicklook(small_frame, tmp_path / "bad.png", fibers=[60])


def test_mask_states(small_frame):
    states = perfex.plot.mask_states(small_frame)
    assert states.shape == small_frame.flux.shape
    assert ((states > 0) == ((small_frame.mask != 0) | (small_frame.ivar == 0))).all()
    assert perfex.plot.default_fibers(small_frame) == [0, 29, 59]


def test_command_line(small_frame, tmp_path):
    perfex.write_frame(tmp_path / "frame.fits", small_frame)
    r = run_python(["-m", "perfex.plot", str(tmp_path / "frame.fits")])
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "frame.png").stat().st_size > 20000
    r = run_python(["-m", "perfex.plot", str(tmp_path / "missing.fits")])
    assert r.returncode == 1 and "missing.fits" in r.stderr and "Traceback" not in r.stderr
