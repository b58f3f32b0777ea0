"""The command line: desi_extract_spectra's options on perfex (python3 -m perfex, or
python3 -m perfex.extract as documented; python3 -m perfex.cli is the same).

Every option of desispec's desi_extract_spectra, with its defaults (-w from the PSF's
WAVEMIN/WAVEMAX with dw 0.8, -n 500, --nsubbundles 5, ...); the options perfex does not
implement (--barycentric-correction, --use-specter) stop with a message saying so. An exposure
(many frames) is several -i/-p/-o (and -m/-f) in order, or --frames LIST with one
"INPUT PSF OUTPUT [MODEL]" line per frame; with --mpi the ranks split into groups, one frame per
group at a time. A failing frame is reported by name, the others complete, and the exit status
is 1; a bad command line exits with status 2.
"""

import argparse
import codecs
import os
import sys

from . import extras, logs, runtime
from ._perfex import Error, RequestError
from .exposure import extract_frames
from .files import FailedPatches, FrameFiles, check_frame_outputs
from .options import closest_name, cxx_options, make_options

# Frames named in the summary line of an exposure with failures.
SUMMARY_FRAMES = 5

NOT_IMPLEMENTED = {
    "barycentric_correction": "--barycentric-correction (desispec.heliocentric's correction of "
    "the wavelength grid): run desi_extract_spectra for such frames",
    "use_specter": "--use-specter (specter's extraction): perfex is the extraction; run "
    "desi_extract_spectra --use-specter for specter",
}


def parser(prog="python3 -m perfex.extract"):
    p = argparse.ArgumentParser(
        prog=prog,
        description="Extract spectra from pre-processed raw data (desi_extract_spectra's options, perfex extraction).",
    )
    p.error = lambda message: _error(p, message)
    runtime.add_version_option(p)
    p.add_argument("-i", "--input", action="append", default=[], help="input image (repeat for an exposure)")
    p.add_argument(
        "-f", "--fibermap", action="append", default=[], help="input fibermap file (default: the image's FIBERMAP)"
    )
    p.add_argument(
        "-p",
        "--psf",
        action="append",
        default=[],
        help="input psf file (PSFTYPE GAUSS-HERMITE of specex, GAUSS-HERMITE2 or SPOTGRID of specter)",
    )
    p.add_argument("-o", "--output", action="append", default=[], help="output extracted spectra file")
    p.add_argument("-m", "--model", action="append", default=[], help="output 2D pixel model file")
    p.add_argument(
        "-w", "--wavelength", type=str, default=None, help="wavemin,wavemax,dw (default: the PSF's WAVEMIN,WAVEMAX,0.8)"
    )
    p.add_argument("-s", "--specmin", type=int, default=0, help="first spectrum to extract")
    p.add_argument(
        "-n",
        "--nspec",
        type=int,
        default=None,
        help="number of spectra to extract (default 500, at most the PSF's from specmin)",
    )
    p.add_argument("-r", "--regularize", type=float, default=0.0, help="regularization amount (default %(default)s)")
    p.add_argument("--bundlesize", type=int, default=25, help="number of spectra per bundle")
    p.add_argument("--nsubbundles", type=int, default=5, help="number of extraction sub-bundles")
    p.add_argument(
        "--nwavestep", type=int, default=50, help="number of wavelength steps per divide-and-conquer extraction step"
    )
    p.add_argument("-v", "--verbose", action="store_true", help="print more stuff")
    p.add_argument("--mpi", action="store_true", help="Use MPI for parallelism")
    p.add_argument(
        "--decorrelate-fibers", action="store_true", help="Not recommended (perfex: the full H^1/2 decorrelation)"
    )
    p.add_argument(
        "--no-scores", action="store_true", help="Do not compute scores (perfex never computes desispec's frame scores)"
    )
    p.add_argument(
        "--psferr",
        type=float,
        default=None,
        help="fractional PSF model error used to compute chi2 and mask pixels (default = value saved in psf file)",
    )
    p.add_argument(
        "--barycentric-correction",
        action="store_true",
        help="apply barycentric correction to wavelength (not implemented by perfex)",
    )
    p.add_argument(
        "--use-specter",
        action="store_true",
        help="use classic specter instead of gpu_specter (not implemented by perfex)",
    )
    p.add_argument("--no-gpu", action="store_true", help="Do not use GPU even if available")
    p.add_argument(
        "--pixpad-frac", type=float, default=0.8, help="fraction of a PSF spotsize to pad in pixels when extracting"
    )
    p.add_argument(
        "--wavepad-frac",
        type=float,
        default=0.2,
        help="fraction of a PSF spotsize to pad in wavelengths when extracting",
    )
    g = p.add_argument_group("perfex")
    g.add_argument(
        "--frames", metavar="LIST", help="exposure: a file of 'INPUT PSF OUTPUT [MODEL]' lines, one per frame"
    )
    g.add_argument(
        "--backend",
        choices=runtime.backends(),
        help="execution space (default: %s; --no-gpu skips cuda)" % runtime.default_backend(),
    )
    g.add_argument(
        "--geometry",
        choices=("gpu_specter", "specter"),
        help="patches cut as gpu_specter or as specter cuts them (default: gpu_specter for specex's "
        "GAUSS-HERMITE files, specter for the other formats)",
    )
    g.add_argument(
        "--timing", action="store_true", help="log each frame's phases with their times (perfex-extract --timing's)"
    )
    g.add_argument(
        "--threads",
        type=int,
        default=None,
        help="host threads per process, at most %d (default: OMP_NUM_THREADS, else "
        "the rank's share of the node's cores)" % runtime.MAX_HOST_THREADS,
    )
    return p


def parse(argv=None, prog="python3 -m perfex.extract"):
    """The parsed command line (argparse.Namespace) plus .jobs, the list of FrameFiles.
    Exits with status 2 on a bad or unsupported command line."""
    p = parser(prog)
    args = p.parse_args(argv)
    for name, text in NOT_IMPLEMENTED.items():
        if getattr(args, name):
            p.exit(2, f"{p.prog}: error: perfex does not implement {text}\n")
    args.jobs = _jobs(p, args)
    if args.threads is not None and not 1 <= args.threads <= runtime.MAX_HOST_THREADS:
        p.error(
            f"--threads must be in [1, {runtime.MAX_HOST_THREADS}] (Kokkos' OpenMP thread pool), got {args.threads}"
        )
    # Values checked now (the PSF-dependent defaults stand in as valid placeholders).
    opts = extraction_options(args)
    opts["wavelength"] = "1,2,1" if opts["wavelength"] is None else opts["wavelength"]
    opts["nspec"] = 1 if opts["nspec"] is None else opts["nspec"]
    try:
        cxx_options(make_options(**opts))
        check_frame_outputs(args.jobs, args.frames)  # outputs: writable, none an input or another output
    except Error as e:
        p.error(str(e))
    return args


def frames_line_fields(line):
    """The fields of a --frames line, split as a POSIX shell splits words: blanks separate them,
    '...' and "..." quote (a backslash escapes \\, " and $ inside "..."), a backslash escapes the
    next character, and # starts a comment only at the start of a word (so a#1.fits is one
    name). Raises ValueError for an unclosed quote or a trailing backslash."""
    fields, word, quote, in_word, i = [], [], None, False, 0
    while i < len(line):
        c = line[i]
        if quote == "'":
            if c == "'":
                quote = None
            else:
                word.append(c)
        elif quote == '"':
            if c == '"':
                quote = None
            elif c == "\\" and i + 1 < len(line) and line[i + 1] in '\\"$`':
                i += 1
                word.append(line[i])
            else:
                word.append(c)
        elif c in " \t\r\n\f\v":
            if in_word:
                fields.append("".join(word))
                word, in_word = [], False
        elif c == "#" and not in_word:
            break
        elif c in "'\"":
            quote, in_word = c, True
        elif c == "\\":
            if i + 1 >= len(line) or line[i + 1] == "\n":
                raise ValueError("a backslash ends the line")
            i += 1
            word.append(line[i])
            in_word = True
        else:
            word.append(c)
            in_word = True
        i += 1
    if quote:
        raise ValueError(f"no closing {quote}")
    if in_word:
        fields.append("".join(word))
    return fields


def _frames_list(p, path):
    """The FrameFiles of a --frames file (UTF-8 text, one INPUT PSF OUTPUT [MODEL] line per
    frame); a bad file is a command-line error naming the line."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        p.error(f"--frames: {e}")
    # Editors on Windows start UTF-8 text with an invisible byte-order mark and end lines with
    # CRLF: neither is part of a file name.
    if data.startswith(codecs.BOM_UTF8):
        data = data[len(codecs.BOM_UTF8) :]
    jobs = []
    for n, raw in enumerate(data.split(b"\n"), 1):
        if raw.endswith(b"\r"):
            raw = raw[:-1]
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            p.error(
                f"--frames {path} line {n}: not UTF-8 text (byte 0x{raw[e.start]:02x} at byte "
                f"{e.start + 1}); perfex reads the list as UTF-8"
            )
        try:
            fields = frames_line_fields(line)
        except ValueError as e:
            p.error(f"--frames {path} line {n}: {e}")
        if fields and len(fields) not in (3, 4):
            p.error(
                f"--frames {path} line {n}: expected INPUT PSF OUTPUT [MODEL], got {len(fields)} "
                f"fields {fields} (quote a name with blanks or a leading #)"
            )
        if fields:
            jobs.append(FrameFiles(*fields))
    return jobs


def _jobs(p, args):
    jobs = []
    if args.frames:
        if args.input or args.psf or args.output or args.model:
            p.error("--frames replaces -i/-p/-o/-m")
        jobs = _frames_list(p, args.frames)
        if args.fibermap and len(args.fibermap) != len(jobs):
            p.error(f"{len(args.fibermap)} -f for the {len(jobs)} frames of --frames: give one per frame, in order")
    else:
        if not args.input or not args.psf or not args.output:
            p.error("-i/--input, -p/--psf and -o/--output are required (or --frames)")
        n = len(args.input)
        psfs = args.psf * n if len(args.psf) == 1 else args.psf
        if len(psfs) != n or len(args.output) != n:
            p.error(
                f"{n} -i but {len(args.psf)} -p and {len(args.output)} -o: give one of each "
                "per frame (or one -p for all)"
            )
        jobs = [FrameFiles(i, ps, o) for i, ps, o in zip(args.input, psfs, args.output)]
        for opt, values in (("-m", args.model), ("-f", args.fibermap)):
            if values and len(values) != n:
                p.error(f"{len(values)} {opt} for {n} frames")
        for job, model in zip(jobs, args.model):
            job.model = model
    if args.fibermap:
        for job, fibermap in zip(jobs, args.fibermap):
            job.fibermap = fibermap
    if not jobs:
        p.error("no frame to extract")
    return jobs


def extraction_options(args):
    """perfex.extract_frame options of the command line (wavelength and nspec None: the
    PSF-dependent defaults, resolved per frame)."""
    return dict(
        wavelength=args.wavelength,
        specmin=args.specmin,
        nspec=args.nspec,
        regularize=args.regularize,
        bundlesize=args.bundlesize,
        nsubbundles=args.nsubbundles,
        nwavestep=args.nwavestep,
        psferr=args.psferr,
        pixpad_frac=args.pixpad_frac,
        wavepad_frac=args.wavepad_frac,
        decorrelation="noise" if args.decorrelate_fibers else "signal",
        geometry=args.geometry or "automatic",
    )


def _error(p, message):
    """argparse's error, with the closest option named for an unknown one."""
    if message.startswith("unrecognized arguments: "):
        options = [o for action in p._actions for o in action.option_strings]
        hints = []
        for word in message.split(": ", 1)[1].split():
            close = closest_name(word.split("=")[0], options) if word.startswith("-") else ""
            if close:
                hints.append(f"{word}: did you mean {close}?")
        if hints:
            message += " (" + "; ".join(hints) + ")"
    p.print_usage(sys.stderr)
    p.exit(2, f"{p.prog}: error: {message}\n")


def main(argv=None, prog="python3 -m perfex.extract"):
    """The command line: desi_extract_spectra's options on perfex.

    Parameters
    ----------
    argv : list of str, optional
        The arguments (None: sys.argv[1:]).
    prog : str, default "python3 -m perfex.extract"
        The program's name in messages.

    Returns
    -------
    int
        perfex-extract's exit status: 0 every frame written, 1 a frame failed, 2 a frame's
        request refused or an optional dependency missing (mpi4py for --mpi: one line naming
        the extra to install), 3 a frame written with failed patches (the first of 1, 2, 3
        that happened).

    Raises
    ------
    SystemExit
        Status 2 for a bad command line or thread count (argparse's message).

    Examples
    --------
    >>> from perfex.cli import main
    >>> main(["-i", "preproc-r0-00051060.fits", "-p", "psf-r0-00051060.fits",
    ...       "-o", "frame-r0.fits", "-w", "5760,7620,0.8"])
    0
    """
    return extras.run_command(_main, argv, prog)


def command():
    """The console script perfex_extract_spectra (pip install puts it on PATH)."""
    return main(prog=os.path.basename(sys.argv[0]))


def _main(argv, prog):
    args = parse(argv, prog)
    comm = extras.require("mpi4py.MPI", "--mpi").COMM_WORLD if args.mpi else None
    rank = 0 if comm is None else comm.rank
    logs.configure_command_line(args.verbose, "" if comm is None else f"rank {rank}: ")
    backend = args.backend or runtime.default_backend(gpu=not args.no_gpu)
    if args.no_gpu and backend == "cuda":
        parser(prog).error("--no-gpu with --backend cuda")
    try:  # a bad thread variable (KOKKOS_NUM_THREADS=600) is refused before the runtime starts
        runtime.initialize(args.threads, comm=comm)
    except RequestError as e:
        parser(prog).exit(2, f"{prog}: error: {e}\n")
    failed = extract_frames(
        args.jobs, comm, backend=backend, threads=args.threads, timing=args.timing, **extraction_options(args)
    )
    if rank == 0:
        log = logs.get_logger()
        if failed:
            # Each failure was logged with its frame; the summary names a few and counts all.
            shown = ", ".join(job.name for job, _ in failed[:SUMMARY_FRAMES])
            more = f" and {len(failed) - SUMMARY_FRAMES} more" if len(failed) > SUMMARY_FRAMES else ""
            log.error(
                "%d of %d frames failed: %s%s (each FAILED line above says why)",
                len(failed),
                len(args.jobs),
                shown,
                more,
            )
        elif len(args.jobs) > 1:
            log.info("all %d frames written", len(args.jobs))
    # perfex-extract's statuses: 1 failed, 2 refused, 3 written with failed patches.
    statuses = {exit_status(error) for _, error in failed}
    for status in (1, 2, 3):
        if status in statuses:
            return status
    return 0


def exit_status(error):
    """perfex-extract's exit status for a frame's exception (extract_frames')."""
    if isinstance(error, RequestError):
        return 2
    if isinstance(error, FailedPatches):
        return 3
    return 1


if __name__ == "__main__":
    sys.exit(main(prog="python3 -m perfex.cli"))
