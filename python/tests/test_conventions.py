"""DESI's habits: perfex's messages through desiutil's logger (else logging's), progress with the
time left and the share of a frame, --version and the console scripts, near-match suggestions,
a missing optional dependency named by its extra, and imports that load no optional package."""

import importlib
import logging
import os
import re
import sys
import types

import numpy as np
import perfex
import perfex.logs
import pytest
from perfex import extras, runtime

from conftest import MASKED, PSF, REPO, data_path, run_python

# A desispec-style process: its own lines through desiutil's logger, then an extraction whose
# image has a NaN pixel on fibre 12's trace (a warning) and whose progress is logged.
DESISPEC_STYLE = """
import sys
import numpy as np
from desiutil.log import get_logger

log = get_logger()
log.info("desispec-style line")
import perfex

psf = perfex.read_psf(sys.argv[1])
img = perfex.read_preproc(sys.argv[2])
pixels = np.array(img.pixels)
pixels[453, 208] = np.nan
perfex.extract_frame(pixels, img.ivar, psf, wavelength="5760,5860,0.8", specmin=5, nspec=20, psferr=0.01)
"""


def _extraction_lines(output):
    progress = [line for line in output.splitlines() if "patches (100 %)" in line]
    warnings = [line for line in output.splitlines() if "NaN/Inf" in line]
    return progress, warnings


def test_a_desispec_process_shows_perfexs_progress_and_warnings_once(psf_path):
    pytest.importorskip("desiutil", reason="desiutil is not installed (the project's environment has it)")
    r = run_python(["-c", DESISPEC_STYLE, psf_path, data_path(MASKED)], DESI_LOGLEVEL="INFO")
    assert r.returncode == 0, r.stderr
    progress, warnings = _extraction_lines(r.stdout + r.stderr)
    assert len(progress) == 1 and len(warnings) == 1, r.stdout + r.stderr
    # desiutil's format (LEVEL:file:line:function: message) on its stream, stdout.
    assert (
        re.match(r"INFO:runtime\.py:\d+:__call__: extract: (\d+)/\1 patches", progress[0]) and progress[0] in r.stdout
    )
    assert warnings[0].startswith("WARNING:") and "desispec-style line" in r.stdout


def test_desi_loglevel_quiets_perfex_in_a_desispec_process(psf_path):
    pytest.importorskip("desiutil", reason="desiutil is not installed (the project's environment has it)")
    r = run_python(["-c", DESISPEC_STYLE, psf_path, data_path(MASKED)], DESI_LOGLEVEL="WARNING")
    progress, warnings = _extraction_lines(r.stdout + r.stderr)
    assert r.returncode == 0 and not progress and len(warnings) == 1, r.stdout + r.stderr


def test_without_desiutil_messages_go_to_the_perfex_logger(psf_path):
    script = "import sys; sys.modules['desiutil'] = None\nimport logging; logging.basicConfig(level=logging.INFO)\n"
    r = run_python(
        [
            "-c",
            script + DESISPEC_STYLE.replace("from desiutil.log import get_logger", "get_logger = logging.getLogger"),
            psf_path,
            data_path(MASKED),
        ]
    )
    progress, warnings = _extraction_lines(r.stderr)
    assert r.returncode == 0 and len(progress) == 1 and len(warnings) == 1, r.stderr
    assert progress[0].startswith("INFO:perfex:") and warnings[0].startswith("WARNING:perfex:")


def test_progress_names_the_share_and_the_time_left(caplog, monkeypatch):
    name = perfex.logs.get_logger().name
    share = "rank 0's share (patches 0-99 of the frame's 260)"
    progress = perfex.extraction.progress_callback(runtime.ProgressLog("frame r0"), share=share)
    # Always 10 s in, however slow the machine: 50 patches at 5 patches/s leave 10 s.
    monkeypatch.setattr(runtime, "time", types.SimpleNamespace(perf_counter=lambda: progress.start + 10.0))
    with caplog.at_level(logging.INFO, logger=name):
        progress(50, 100)
        progress(100, 100)
    lines = [r.getMessage() for r in caplog.records if r.name == name]
    assert lines[0].startswith(f"frame r0: 50/100 patches (50 %) of {share}, 5.0 patches/s, 10 s left"), lines
    assert lines[1].startswith(f"frame r0: 100/100 patches (100 %) of {share}") and "left" not in lines[1]


@pytest.mark.parametrize("seconds, text", [(0.2, "under 1 s"), (8.4, "8 s"), (200, "3 min 20 s"), (3900, "1 h 05 min")])
def test_duration_text(seconds, text):
    assert runtime.duration_text(seconds) == text


# ---- --version, console scripts, option names ------------------------------------------------

VERSION = re.compile(r"perfex (\S+)\nKokkos \d+\.\d+\.\d+\nbackends: [a-z]+ \(default\)[a-z, ]*\nnumpy \S+\nPython \S+")


@pytest.mark.parametrize("module", ["perfex", "perfex.cli", "perfex.extract", "perfex.plot", "perfex.gpu_specter.spex"])
def test_version_on_every_python_command(module):
    r = run_python(["-m", module, "--version"])
    assert r.returncode == 0 and VERSION.fullmatch(r.stdout.strip()), r.stdout + r.stderr
    assert (
        f"perfex {perfex.__version__}\n" in r.stdout and f"backends: {runtime.default_backend()} (default)" in r.stdout
    )


def test_console_scripts_name_commands_that_exist():
    """pyproject.toml's [project.scripts]: each names a function that runs its command, under a
    name apart from the C++ tools' (the pip route of install_routes.sh runs them installed)."""
    with open(os.path.join(REPO, "pyproject.toml")) as f:
        text = f.read()
    section = text.split("[project.scripts]\n", 1)[1].split("\n\n", 1)[0]
    scripts = dict(re.findall(r'^(\S+) = "(\S+)"$', section, re.M))
    assert set(scripts) == {"perfex_extract_spectra", "perfex_plot"}
    for name, target in scripts.items():
        module, function = target.split(":")
        assert callable(getattr(importlib.import_module(module), function)), name


@pytest.mark.parametrize("module", ["perfex.cli", "perfex.extract", "perfex"])
def test_help_names_the_command_as_run(module):
    r = run_python(["-m", module, "--help"])
    assert r.returncode == 0 and r.stdout.startswith(f"usage: python3 -m {module} "), r.stdout


def test_unknown_option_suggests_the_closest(tmp_path):
    r = run_python(["-m", "perfex.cli", "-i", "a", "-p", "b", "-o", str(tmp_path / "c.fits"), "--nsubundles", "2"])
    assert r.returncode == 2 and "--nsubundles: did you mean --nsubbundles?" in r.stderr, r.stderr
    r = run_python(["-m", "perfex.cli", "-i", "a", "-p", "b", "-o", str(tmp_path / "c.fits"), "--zzz"])
    assert r.returncode == 2 and "did you mean" not in r.stderr, r.stderr


def test_short_regularize_option():
    args = perfex.cli.parse(["-i", "a", "-p", "b", "-o", "c.fits", "-r", "0.5"])
    assert perfex.cli.extraction_options(args)["regularize"] == 0.5


# ---- optional dependencies -------------------------------------------------------------------


def _run_without(modules, module, args):
    """`python3 -m module args` in a process where `modules` cannot be imported."""
    script = (
        "import runpy, sys\n"
        f"sys.modules.update(dict.fromkeys({modules!r}))\n"
        f"sys.argv = [{module!r}] + {list(args)!r}\n"
        f"runpy.run_module({module!r}, run_name='__main__', alter_sys=True)\n"
    )
    return run_python(["-c", script])


def _one_line_error(r, extra):
    """Exit status 2 and one error line, the last (before it, the command's own log lines)."""
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert [line for line in lines if "error" in line.lower() or "needs" in line] == lines[-1:], lines
    assert f"pip install 'perfex[{extra}]'" in lines[-1], lines


def test_mpi_without_mpi4py(tmp_path):
    out = str(tmp_path / "frame.fits")
    r = _run_without(["mpi4py"], "perfex.cli", ["-i", data_path(MASKED), "-p", data_path(PSF), "-o", out, "--mpi"])
    _one_line_error(r, "mpi")
    assert "--mpi needs mpi4py" in r.stderr and not os.path.exists(out)


def test_plot_without_matplotlib(tmp_path, small_frame):
    frame = str(tmp_path / "frame.fits")
    perfex.write_frame(frame, small_frame)
    r = _run_without(["matplotlib"], "perfex.plot", [frame])
    _one_line_error(r, "plot")
    assert not os.path.exists(str(tmp_path / "frame.png"))


def test_gpu_specter_readers_without_astropy(tmp_path, psf_path):
    args = ["-i", data_path(MASKED), "-p", psf_path, "-o", str(tmp_path / "frame.fits"), "-w", "5760,5860,0.8"]
    r = _run_without(["astropy"], "perfex.gpu_specter.spex", args + ["--nspec", "25"])
    _one_line_error(r, "gpu_specter")


def test_specter_without_scipy():
    r = run_python(["-c", "import sys; sys.modules['scipy'] = None\nimport perfex.specter"])
    assert r.returncode == 1 and "pip install 'perfex[specter]'" in r.stderr.strip().splitlines()[-1], r.stderr


def test_require_names_the_extra():
    assert extras.require("numpy", "anything") is np
    sys.modules["mpi4py"] = None
    try:
        with pytest.raises(extras.MissingExtra, match=r"--mpi needs mpi4py, .*pip install 'perfex\[mpi\]'"):
            extras.require("mpi4py.MPI", "--mpi")
    finally:
        del sys.modules["mpi4py"]


# ---- imports ---------------------------------------------------------------------------------

OPTIONAL = ("scipy", "astropy", "matplotlib", "mpi4py")


@pytest.mark.parametrize(
    "module",
    [
        "perfex",
        "perfex.cli",
        "perfex.plot",
        "perfex.mpi",
        "perfex.files",
        "perfex.gpu_specter",
        "perfex.gpu_specter.spex",
        "perfex.specter",
        "perfex.specter.psf",
        "perfex.specter.extract",
        "perfex.specter.util",
    ],
)
def test_imports_load_no_optional_package(module):
    if module.startswith("perfex.specter"):
        pytest.importorskip("scipy", reason="perfex.specter needs scipy and astropy")
        pytest.importorskip("astropy", reason="perfex.specter needs scipy and astropy")
    script = f"import sys, {module}\nprint(sorted(m for m in {OPTIONAL!r} if m in sys.modules))"
    r = run_python(["-c", script])
    assert r.returncode == 0 and r.stdout.strip() == "[]", r.stdout + r.stderr
