"""The Python quickstart is the README's Python block, character for character, and runs as
written: in a folder holding the reference PSF and image under the names it uses."""

import os
import re
import subprocess
import sys

import numpy as np
import perfex

from conftest import REPO, data_path, python_env, without_log_lines


def readme_block():
    with open(os.path.join(REPO, "README.md")) as f:
        return re.search(r"```python\n(.*?)```", f.read(), re.S).group(1)


def test_quickstart_is_the_readme_block():
    with open(os.path.join(REPO, "examples", "python", "quickstart.py")) as f:
        assert f.read() == readme_block()


def test_quickstart(tmp_path, psf_path):
    image = data_path("sim-r0-b0-1.fits.gz")
    os.symlink(psf_path, tmp_path / "psf-r0-00051060.fits")
    os.symlink(image, tmp_path / "preproc-r0-00051060.fits")
    script = os.path.join(REPO, "examples", "python", "quickstart.py")
    r = subprocess.run(
        [sys.executable, script], env=python_env(), cwd=tmp_path, capture_output=True, text=True, timeout=900
    )
    assert r.returncode == 0, r.stderr
    printed = re.search(r"print\(.*\)\s*# (.*)", readme_block()).group(1)  # what the README shows
    assert without_log_lines(r.stdout).strip() == printed, r.stdout
    frame = perfex.read_frame(tmp_path / "frame-r0.fits")
    pre = perfex.read_preproc(image)
    direct = perfex.extract_frame(
        pre.pixels,
        pre.ivar,
        perfex.read_psf(psf_path),
        progress=False,
        wavelength="5760,7620,0.8",
        specmin=0,
        nspec=50,
        psferr=0.01,
    )
    assert np.array_equal(frame.flux, direct.flux.astype(np.float32))
