"""python3 -m perfex.extract (and python3 -m perfex): desi_extract_spectra's options and defaults,
exposures."""

import os
import subprocess

import numpy as np
import perfex
import perfex.cli as cli
import perfex.mpi
import pytest

from conftest import SMALL, assert_frames_identical, output, run_python, timing_phases

DESI_OPTIONS = [
    "-i",
    "-f",
    "-p",
    "-o",
    "-m",
    "-w",
    "-s",
    "-n",
    "-r",
    "--bundlesize",
    "--nsubbundles",
    "--nwavestep",
    "-v",
    "--mpi",
    "--decorrelate-fibers",
    "--no-scores",
    "--psferr",
    "--barycentric-correction",
    "--use-specter",
    "--no-gpu",
    "--pixpad-frac",
    "--wavepad-frac",
]


def test_every_desi_option_is_known():
    known = cli.parser()._option_string_actions
    for opt in DESI_OPTIONS:
        assert opt in known, opt


def test_defaults_are_desi_extract_spectras():
    args = cli.parse(["-i", "img.fits", "-p", "psf.fits", "-o", "frame.fits"])
    assert (args.wavelength, args.specmin, args.nspec, args.regularize) == (None, 0, None, 0.0)
    assert (args.bundlesize, args.nsubbundles, args.nwavestep) == (25, 5, 50)
    assert (args.psferr, args.pixpad_frac, args.wavepad_frac) == (None, 0.8, 0.2)
    assert not (args.verbose or args.mpi or args.decorrelate_fibers or args.no_scores or args.no_gpu)
    opts = cli.extraction_options(args)
    assert opts["decorrelation"] == "signal"
    defaults = perfex.option_defaults()
    for key in ("bundlesize", "nsubbundles", "nwavestep", "regularize", "pixpad_frac", "wavepad_frac", "specmin"):
        assert opts[key] == defaults[key], key


def test_psf_dependent_defaults(masked, psf, tmp_path):
    """No -w: the PSF's WAVEMIN,WAVEMAX with dw 0.8; no -n: 500, clipped to the PSF's fibres
    (perfex-extract's rule, the same library call)."""
    from perfex.files import FrameFiles, open_files

    def check(**options):
        files = FrameFiles(masked.path, psf.source, str(tmp_path / "f.fits"))
        job = open_files(files, "serial", {"wavelength": None, "nspec": None, **options}).check()
        return job.options, job.warnings

    resolved, warnings = check()
    assert (resolved["wmin"], resolved["wmax"], resolved["dw"]) == (5543.0, 7827.0, 0.8)
    assert resolved["nspec"] == 500 and not any("extracting" in w for w in warnings)
    resolved, warnings = check(specmin=480)
    assert resolved["nspec"] == 20 and any("extracting 20" in w for w in warnings)
    with pytest.raises(perfex.RequestError, match="options -s/--specmin, -n/--nspec"):
        check(specmin=480, nspec=25)


@pytest.mark.parametrize("option", ["--barycentric-correction", "--use-specter"])
def test_unimplemented_options_stop_with_a_message(option, capsys):
    with pytest.raises(SystemExit) as e:
        cli.parse(["-i", "a", "-p", "b", "-o", "c", option])
    assert e.value.code == 2
    assert f"perfex does not implement {option}" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv, message",
    [
        (["-i", "a", "-p", "b"], "required"),
        (["-i", "a", "-i", "b", "-p", "p", "-o", "x"], "give one of each"),
        (["-i", "a", "-i", "b", "-p", "p", "-o", "x", "-o", "x"], "is also the -o/--output (frame 1"),
        (["-i", "a", "-p", "p", "-o", "x", "-m", "m1", "-m", "m2"], "2 -m for 1 frames"),
        (["-i", "a", "-p", "b", "-o", "c", "-n", "five"], "invalid int"),
        (["-i", "a", "-p", "b", "-o", "c", "--threads", "0"], "--threads"),
        (["-i", "a", "-p", "b", "-o", "c", "-n", "0"], "nspec must be >= 1"),
        (["-i", "a", "-p", "b", "-o", "c", "-w", "5760,7620"], "wavelength: expected"),
        (["-i", "a", "-p", "b", "-o", "c", "--pixpad-frac", "1.5"], "pixpad_frac"),
    ],
)
def test_bad_command_lines(argv, message, capsys):
    with pytest.raises(SystemExit) as e:
        cli.parse(argv)
    assert e.value.code == 2 and message in capsys.readouterr().err


def test_frames_list_file(tmp_path, capsys):
    listing = tmp_path / "frames.txt"
    listing.write_text("# exposure\na.fits psf-a.fits fa.fits\nb.fits psf-b.fits fb.fits mb.fits  # model\n\n")
    jobs = cli.parse(["--frames", str(listing)]).jobs
    assert [(j.input, j.psf, j.output, j.model) for j in jobs] == [
        ("a.fits", "psf-a.fits", "fa.fits", None),
        ("b.fits", "psf-b.fits", "fb.fits", "mb.fits"),
    ]
    listing.write_text("a.fits psf.fits\n")
    with pytest.raises(SystemExit):
        cli.parse(["--frames", str(listing)])
    assert "line 1" in capsys.readouterr().err


def test_python_m_perfex_is_the_command_line():
    """python3 -m perfex is the same command line, named as it was called in its messages."""
    r = run_python(["-m", "perfex", "--help"])
    assert r.returncode == 0 and r.stdout.startswith("usage: python3 -m perfex "), output(r)
    assert "--frames" in r.stdout
    r = run_python(["-m", "perfex", "-i", "a", "-p", "b", "-o", "c", "-n", "0"])
    assert r.returncode == 2 and "python3 -m perfex: error: " in r.stderr and "nspec must be >= 1" in r.stderr


def test_frames_list_with_byte_order_mark_and_crlf(tmp_path):
    # A list saved by a Windows editor: an invisible BOM before the first name, CRLF line ends
    # (also inside a quoted name's line and after a trailing backslash-free comment).
    listing = tmp_path / "frames.txt"
    listing.write_bytes(b"\xef\xbb\xbfa.fits psf-a.fits fa.fits\r\n'b c.fits' psf-b.fits 'fb.fits'\r\n# end\r\n")
    jobs = cli.parse(["--frames", str(listing)]).jobs
    assert [(j.input, j.psf, j.output) for j in jobs] == [
        ("a.fits", "psf-a.fits", "fa.fits"),
        ("b c.fits", "psf-b.fits", "fb.fits"),
    ]


def test_extraction_matches_the_library(tmp_path, masked, psf, small_frame):
    out, model = tmp_path / "frame.fits", tmp_path / "model.fits"
    r = run_python(
        [
            "-m",
            "perfex.extract",
            "-i",
            masked.path,
            "-p",
            psf.source,
            "-o",
            str(out),
            "-m",
            str(model),
            "-w",
            SMALL["wavelength"],
            "-s",
            str(SMALL["specmin"]),
            "-n",
            str(SMALL["nspec"]),
            "--psferr",
            "0.01",
            "--threads",
            "2",
        ]
    )
    assert r.returncode == 0, r.stderr
    assert "written" in output(r)
    written = perfex.read_frame(out)
    expected = perfex.Frame(
        **{
            **small_frame.__dict__,
            **{
                k: getattr(small_frame, k).astype(np.float32)
                for k in ("flux", "ivar", "resolution", "chi2pix", "pixmask_fraction")
            },
        }
    )
    assert_frames_identical(written, expected)
    assert perfex.read_frame(out).nspec == 60
    fits = pytest.importorskip("astropy.io.fits")
    with fits.open(model) as m:
        assert m[0].data.shape == masked.pixels.shape


def test_fibermap_option(tmp_path, masked, psf):
    """-f: the frame's FIBERMAP is rows [specmin, specmin + nspec) of the file's."""
    fits = pytest.importorskip("astropy.io.fits", reason="-f rewrites the FIBERMAP with astropy")
    fibermap = tmp_path / "fibermap.fits"
    with fits.open(masked.path) as img:
        table = img["FIBERMAP"].copy()
        table.data["TARGETID"] = np.arange(len(table.data)) + 1000
        table.writeto(fibermap)
    base = [
        "-m",
        "perfex.extract",
        "-i",
        masked.path,
        "-p",
        psf.source,
        "-w",
        "5760,5860,0.8",
        "-s",
        "5",
        "-f",
        str(fibermap),
    ]
    r = run_python(base + ["-n", "10", "-o", str(tmp_path / "f.fits")])
    assert r.returncode == 0, r.stderr
    with fits.open(tmp_path / "f.fits") as f:
        assert list(f["FIBERMAP"].data["TARGETID"]) == list(range(1005, 1015))
        assert f["FIBERMAP"].verify_checksum() == 1
    r = run_python(base + ["-n", "50", "-o", str(tmp_path / "g.fits")])
    assert r.returncode == 1 and "FIBERMAP has 50 rows, fibres 5-54 need 55" in output(r)
    assert not (tmp_path / "g.fits").exists()


def test_psf_defaults_end_to_end(tmp_path, masked, psf):
    """No -w: the PSF's WAVEMIN..WAVEMAX by 0.8; no -n: 500 clipped to the PSF's fibres."""
    out = tmp_path / "frame.fits"
    r = run_python(
        ["-m", "perfex.extract", "-i", masked.path, "-p", psf.source, "-o", str(out), "-s", "497", "--nsubbundles", "1"]
    )
    assert r.returncode == 0, r.stderr
    frame = perfex.read_frame(out)
    assert frame.specmin == 497 and frame.nspec == 3
    assert np.array_equal(frame.wave, np.arange(5543.0, 7827.0 + 0.4, 0.8))
    assert frame.options["dw"] == 0.8


def test_exposure_with_a_broken_frame(tmp_path, clean, masked, psf):
    broken = tmp_path / "broken.fits"
    broken.write_text("this is not a preproc image\n")
    outs = [tmp_path / f"frame-{n}.fits" for n in ("clean", "broken", "masked")]
    argv = ["-m", "perfex.extract", "-w", "5760,5960,0.8", "-n", "5", "-p", psf.source]
    for image, out in zip((clean.path, str(broken), masked.path), outs):
        argv += ["-i", image, "-o", str(out)]
    r = run_python(argv)
    assert r.returncode == 1
    printed = output(r)  # desiutil's logger prints on stdout, logging's on stderr
    assert "frame frame-broken.fits: FAILED" in printed and "broken.fits" in printed
    assert "1 of 3 frames failed" in printed
    assert outs[0].exists() and outs[2].exists() and not outs[1].exists()


# The phases of a frame's job, as perfex-extract --timing prints them.
FILES_PHASES = (
    ["files::inputs", "job::check", "job::plan"]
    + [f"  plan_frame::{p}" for p in ("grids", "corners", "patches", "bandwidths", "budget")]
    + ["files::read", "job::extract"]
    + [f"  extract_frame::{p}" for p in ("allocate", "spots", "solve", "finish")]
    + ["files::write"]
)


def test_frames_as_perfex_extract_writes_them(tmp_path, masked, psf):
    """A frame alone and the frames of an exposure (its reads and writes overlapped) run
    perfex-extract's phases and write what it writes: each warning of the run (here nspec
    clipped to the PSF's fibres) once in the header, the same phases with --timing."""
    fits = pytest.importorskip("astropy.io.fits")
    grid = ["-w", "5760,5800,0.8", "-s", "490", "--psferr", "0.01", "--timing", "-p", psf.source]
    alone = run_python(["-m", "perfex", "-i", masked.path, "-o", str(tmp_path / "alone.fits")] + grid)
    assert alone.returncode == 0, alone.stderr
    exposure = ["-i", masked.path, "-o", str(tmp_path / "a.fits"), "-i", masked.path, "-o", str(tmp_path / "b.fits")]
    both = run_python(["-m", "perfex"] + exposure + grid)
    assert both.returncode == 0, both.stderr
    expected = [(" " * (2 + p.count(" ")), p.strip()) for p in FILES_PHASES]
    assert timing_phases(output(alone)) == expected
    assert timing_phases(output(both)) == 2 * expected
    exe = os.environ.get("PERFEX_EXTRACT_EXE")
    outputs = ["alone", "a", "b"]
    if exe:
        tool = subprocess.run(
            [exe, "-i", masked.path, "-o", str(tmp_path / "tool.fits")] + grid, capture_output=True, text=True
        )
        assert tool.returncode == 0, tool.stderr
        assert timing_phases(output(tool)) == expected
        outputs.append("tool")
    warnings = {}
    for name in outputs:
        with fits.open(tmp_path / f"{name}.fits") as f:
            header = f["FLUX"].header
            warnings[name] = (header["NWARN"], [str(c) for c in header["COMMENT"]])
    # Two: nspec clipped, and the image's FIBERMAP without rows for fibres 490-499.
    assert warnings["alone"][0] == 2 and " ".join(warnings["alone"][1]).count("extracting 10") == 1
    assert all(w == warnings["alone"] for w in warnings.values()), warnings
