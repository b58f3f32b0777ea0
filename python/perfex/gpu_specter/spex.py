"""gpu_specter.spex on perfex: the `spex` command (gpu_specter's bin/spex and
bin/desi_benchmark_extract import it) with gpu_specter's options, pre-flight checks and MPI IO
coordinators, extracting with perfex.

    python -m perfex.gpu_specter.spex -i preproc.fits -p psf.fits -o frame.fits -w 5760,7620,0.8
"""

import argparse
import functools
import sys

import perfex
import perfex.collective
import perfex.extras
import perfex.files
import perfex.runtime

from .core import check_values, extract_frame, perfex_options
from .io import read_img, write_together
from .mpi import NoMPIIOCoordinator, ParallelIOCoordinator, SerialIOCoordinator
from .util import Timer, get_logger

__all__ = ["parse", "main_gpu_specter"]


def parse(options=None):
    """gpu_specter's spex options (sys.argv[1:] when options is None)."""
    parser = argparse.ArgumentParser(
        description="Extract spectra from pre-processed raw data.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    perfex.runtime.add_version_option(parser)
    parser.add_argument("-i", "--input", type=str, required=False, help="input image")
    parser.add_argument("-p", "--psf", type=str, required=False, help="input psf file")
    parser.add_argument("-o", "--output", type=str, required=True, help="output extracted spectra file")
    parser.add_argument("-m", "--model", type=str, required=False, help="output 2D pixel model file")
    parser.add_argument("-w", "--wavelength", type=str, required=False, help="wavemin,wavemax,dw")
    parser.add_argument("-s", "--specmin", type=int, required=False, default=0, help="first spectrum to extract")
    parser.add_argument("-n", "--nspec", type=int, required=False, default=500, help="number of spectra to extract")
    parser.add_argument(
        "-r",
        "--regularize",
        type=float,
        required=False,
        default=0.0,
        help="regularization amount (default %(default)s)",
    )
    parser.add_argument("--bundlesize", type=int, required=False, default=25, help="number of spectra per bundle")
    parser.add_argument("--nsubbundles", type=int, required=False, default=5, help="number of extraction sub-bundles")
    parser.add_argument(
        "--nwavestep",
        type=int,
        required=False,
        default=50,
        help="number of wavelength steps per divide-and-conquer extraction step",
    )
    parser.add_argument("--loglevel", default="info", help="log print level (debug,info,warn,error)")
    parser.add_argument("--mpi", action="store_true", help="Use MPI for parallelism")
    parser.add_argument("--use-gpu", action="store_true", help="Use GPU for extraction")
    parser.add_argument(
        "--psferr",
        type=float,
        default=None,
        required=False,
        help="fractional PSF model error used to compute chi2 and mask pixels (default = value saved in psf file)",
    )
    parser.add_argument("--async-io", action="store_true", help="use asynchronous read/write mpi comm")
    parser.add_argument(
        "--pixpad-frac",
        type=float,
        required=False,
        default=0.8,
        help="fraction of a PSF spotsize to pad in pixels when extracting",
    )
    parser.add_argument(
        "--wavepad-frac",
        type=float,
        default=0.2,
        help="fraction of a PSF spotsize to pad in wavelengths when extracting",
    )
    parser.add_argument(
        "--wavepad",
        type=int,
        required=False,
        default=10,
        help="Number of wavelength bins to pad on both ends of extraction patch",
    )
    parser.add_argument("--ranks-per-bundle", type=int, default=None, help="number of ranks per bundle")
    return parser.parse_args(options)


def check_input_options(args):
    """gpu_specter's pre-flight checks of spex's options: returns (ok, message). Bundles must
    split into whole sub-bundles and the fibres into whole bundles from a bundle boundary (as
    gpu_specter requires, so that spex accepts and refuses the same commands), and --use-gpu
    needs perfex's CUDA backend. perfex's own checks of the request (the PSF's fibres and
    wavelengths, the image) follow in the extraction, before any work."""
    if args.bundlesize % args.nsubbundles != 0:
        return False, (f"bundlesize ({args.bundlesize}) must be evenly divisible by nsubbundles ({args.nsubbundles})")
    if args.nspec % args.bundlesize != 0:
        return False, f"nspec ({args.nspec}) must be evenly divisible by bundlesize ({args.bundlesize})"
    if args.specmin % args.bundlesize != 0:
        return False, f"specmin ({args.specmin}) must begin at a bundle boundary"
    if args.use_gpu and "cuda" not in perfex.backends():
        return False, "gpu is not available (this perfex build has no CUDA backend)"
    return True, "OK"


def check_request(args, log):
    """perfex-extract's checks of spex's request, before any work (the library's, which every
    entry point makes): the options' values, gpu_specter's own rules (check_input_options: a
    ValueError, logged as CRITICAL), then the files: the outputs writable and none an input, the
    PSF and the image's header read, the request against them (perfex.RequestError: refused;
    perfex.Error: an input that cannot be read)."""
    options = perfex_options(
        args.bundlesize,
        args.specmin,
        args.nspec,
        args.nwavestep,
        args.nsubbundles,
        args.model,
        args.regularize,
        args.psferr,
        args.wavepad,
        args.pixpad_frac,
        args.wavepad_frac,
    )
    check_values(options)
    ok, message = check_input_options(args)
    if not ok:
        log.critical(message)
        raise ValueError(message)
    for name, value in (("-i/--input", args.input), ("-p/--psf", args.psf)):
        if not value:
            raise perfex.RequestError(f"option {name}: required")
    files = perfex.files.FrameFiles(args.input, args.psf, args.output, args.model)
    backend = perfex.default_backend(gpu=args.use_gpu)
    perfex.files.open_files(files, backend, dict(options, wavelength=args.wavelength)).check()


def main_gpu_specter(args=None, comm=None, timing=None, coordinator=None):
    """spex: reads the image and the PSF, extracts the frame and writes it (and the model
    image with -m), as gpu_specter's main_gpu_specter. comm (an mpi4py communicator, or
    MPI.COMM_WORLD with --mpi) or coordinator (one of gpu_specter.mpi's IO coordinators) spread
    the work over ranks; timing, a dict, receives the extraction's time stamps. A failed
    pre-flight check is logged as CRITICAL and raised as ValueError."""
    timer = Timer()
    args = parse() if args is None else args
    log = get_logger(args.loglevel)
    coordinator = _checked_coordinator(args, comm, coordinator, log)
    timer.split("init")
    img, psf = coordinator.read(functools.partial(read, args, log), (None, None))
    timer.split("load")
    frame = coordinator.process(functools.partial(process, args, img, psf, coordinator, timing), None)
    timer.split("extract")
    coordinator.write(functools.partial(write, args, log), frame)
    timer.split("write")
    if coordinator.is_worker_root(coordinator.rank):
        timer.log_splits(log)


def _checked_coordinator(args, comm, coordinator, log):
    """The request checked (check_request: every rank learns of a refusal on rank 0, none
    waiting in a collective), then the IO coordinator: the caller's, or one over comm
    (MPI.COMM_WORLD with --mpi), or none."""
    if coordinator is None and comm is None and args.mpi:
        comm = perfex.extras.require("mpi4py.MPI", "--mpi").COMM_WORLD
    perfex.collective.on_root(coordinator.comm if coordinator is not None else comm, lambda: check_request(args, log))
    if coordinator is not None:
        return coordinator
    if comm is None:
        return NoMPIIOCoordinator()
    return ParallelIOCoordinator(comm) if args.async_io else SerialIOCoordinator(comm)


def read(args, log):
    """The reader's phase (named as gpu_specter's, which its log lines carry): the image and the PSF."""
    log.info(f"Reading image: {args.input}")
    img = read_img(args.input)
    log.info(f"Reading PSF: {args.psf}")
    return img, perfex.read_psf(args.psf)


def process(args, img, psf, coordinator, timing):
    """The workers' phase (gpu_specter's name): the frame (extract_frame over the coordinator's work_comm), with the
    image's headers and fibre map on the worker root."""
    frame = extract_frame(
        img,
        psf,
        args.bundlesize,
        args.specmin,
        args.nspec,
        args.wavelength,
        args.nwavestep,
        args.nsubbundles,
        args.model,
        args.regularize,
        args.psferr,
        coordinator.work_comm,
        args.use_gpu,
        args.loglevel,
        timing=timing,
        wavepad=args.wavepad,
        wavepad_frac=args.wavepad_frac,
        pixpad_frac=args.pixpad_frac,
        ranks_per_bundle=args.ranks_per_bundle,
    )
    if coordinator.is_worker_root(coordinator.rank):
        frame.update(imagehdr=img["imagehdr"], fibermap=img["fibermap"], fibermaphdr=img["fibermaphdr"])
    return frame


def write(args, log, frame):
    """The writer's phase (gpu_specter's name): the frame and the model image, renamed into place once both are
    written."""
    if args.output is not None:
        log.info(f"Writing {args.output}")
    if args.model is not None:
        log.info(f"Writing model {args.model}")
    write_together(frame, args.output, args.model)


def main(argv=None):
    """`python -m perfex.gpu_specter.spex`: exit status 2 for a refused request (a failed
    pre-flight check, a perfex.RequestError or a missing optional dependency), 1 for a failed
    extraction, as perfex-extract."""
    args = parse(argv)
    try:
        main_gpu_specter(args)
    except (ValueError, perfex.RequestError, perfex.extras.MissingExtra) as e:
        print(f"spex: {e}", file=sys.stderr)
        return 2
    except perfex.Error as e:
        print(f"spex: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
