"""perfex.plot: the quick-look PNG."""

import perfex
import pytest

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


def test_nonfinite_values_are_drawn_as_masked(small_frame, tmp_path):
    """A frame with NaN/Inf flux or ivar (a damaged or foreign file) still gets its picture,
    with those bins counted; the command line says so."""
    bad = perfex.Frame(**small_frame.__dict__)
    bad.flux = small_frame.flux.copy()
    bad.ivar = small_frame.ivar.copy()
    bad.flux[3, 10:20] = float("nan")
    bad.flux[7, 5] = float("inf")
    bad.ivar[9, 1] = float("nan")
    assert perfex.plot.nonfinite_bins(bad) == 12
    path = perfex.plot.quicklook(bad, tmp_path / "bad.png")
    assert open(path, "rb").read()[:8] == b"\x89PNG\r\n\x1a\n"
    perfex.write_frame(tmp_path / "bad.fits", bad)
    r = run_python(["-m", "perfex.plot", str(tmp_path / "bad.fits")])
    assert r.returncode == 0, r.stderr
    assert "12 bins with a NaN or infinite flux or ivar" in r.stderr


def test_output_names(small_frame, tmp_path):
    """-o FOLDER writes FOLDER/NAME.png, -o NAME without .png writes NAME.png; the command line
    prints the file it wrote."""
    perfex.write_frame(tmp_path / "frame.fits", small_frame)
    (tmp_path / "pictures").mkdir()
    r = run_python(["-m", "perfex.plot", str(tmp_path / "frame.fits"), "-o", str(tmp_path / "pictures")])
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == str(tmp_path / "pictures" / "frame.png")
    assert (tmp_path / "pictures" / "frame.png").stat().st_size > 20000
    r = run_python(["-m", "perfex.plot", str(tmp_path / "frame.fits"), "-o", str(tmp_path / "quick")])
    assert r.returncode == 0 and r.stdout.strip() == str(tmp_path / "quick.png")
    assert (tmp_path / "quick.png").exists()
