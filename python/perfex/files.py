"""A frame's files and the job around them: preproc image and PSF in, frame (and model) out.

In one process this is perfex-extract's whole job, one library call (perfex::io::extract_files:
it reads only the pixels the patches touch). Over the ranks of a group the same library phases
run on rank 0 (files::inputs, job::check, job::plan, files::read), the frame is extracted over
the ranks (perfex.mpi) and rank 0 writes it (files::write). Either way an error is raised as its
class on every rank of the group; a frame written with failed patches is a FailedPatches."""

import logging
import os
import time
from dataclasses import dataclass
from typing import Optional

from . import _perfex
from ._perfex import Error
from .collective import RankError, idle_barrier, on_root
from .frames import check_outputs
from .images import PreprocImage
from .mpi import extract_over_ranks
from .options import make_options
from .profiling import PhaseTimes
from .runtime import ProgressLog

log = logging.getLogger("perfex")

# desi_extract_spectra's option names, for the messages of the command line.
CLI_NAMES = dict(input="-i/--input", psf="-p/--psf", output="-o/--output", model="-m/--model", fibermap="-f/--fibermap")


@dataclass
class FrameFiles:
    """One frame's files: preproc image, PSF, output frame file, optional model file and fibermap
    file (whose FIBERMAP rows [specmin, specmin + nspec) replace the frame's)."""

    input: str
    psf: str
    output: str
    model: Optional[str] = None
    fibermap: Optional[str] = None

    @property
    def name(self):
        return os.path.basename(self.output)


class FailedPatches(Error):
    """A frame written with failed patches: their bins are masked BAD2DFIT | NODATA."""

    @classmethod
    def of(cls, files, failed, total):
        return cls(f"{failed} of {total} patches failed; their bins are masked BAD2DFIT | NODATA in {files.output}")


def check_frame_outputs(frames, frames_list=None):
    """Raises RequestError unless every frame's outputs can be written and none is an input or
    an output of any frame (the same file by device and inode, or by folder and name): so two
    outputs d/a.fits and d/./a.fits, or a model that is another frame's input, are refused
    before any work. frames_list: the file that listed the frames (an input too)."""
    outputs, inputs = [], [("--frames", frames_list)]
    for n, files in enumerate(frames, 1):
        where = f" (frame {n}, {files.name})" if len(frames) > 1 else ""
        outputs += [(CLI_NAMES["output"] + where, files.output), (CLI_NAMES["model"] + where, files.model)]
        inputs += [
            (CLI_NAMES["input"] + where, files.input),
            (CLI_NAMES["psf"] + where, files.psf),
            (CLI_NAMES["fibermap"] + where, files.fibermap),
        ]
    check_outputs(outputs, inputs, prefix="option ")


def request(options):
    """(options dict, wavelength_given, nspec_given) of the command line's options, where
    wavelength None and nspec None take desi_extract_spectra's PSF-dependent defaults."""
    opts = dict(options)
    wavelength_given = opts.get("wavelength") is not None
    nspec_given = opts.get("nspec") is not None
    if not wavelength_given:
        opts.pop("wavelength", None)
    if not nspec_given:
        opts.pop("nspec", None)
    return make_options(**opts), wavelength_given, nspec_given


def _job_arguments(files, options):
    """The library's files -> frame job arguments of a frame's files and options: the paths,
    the resolved options, whether wavelength and nspec were given, and the image's size held to
    the PSF's (allow_image_size_mismatch=False)."""
    opts, wavelength_given, nspec_given = request(options)
    paths = (files.input, files.psf, files.output, files.model or "", files.fibermap or "")
    return (*paths, opts, wavelength_given, nspec_given, False)


def open_files(files, backend, options, warn=None):
    """files::inputs of a frame's files (the outputs checked, the PSF and the image's header
    read): the library's handle of the job's next phases (.check() -> the FrameJob, .read_box,
    .write, .phases)."""
    return _perfex.FrameFiles(*_job_arguments(files, options), backend, warn)


def log_written(files, nspec, nwave, start):
    log.info("frame %s: %d fibres x %d wavelengths written in %.1f s", files.name, nspec, nwave, time.time() - start)


def extract_files(files, group=None, *, backend, threads=None, options, phases=None):
    """Extracts and writes one frame with the ranks of group (None: this process alone).
    Raises the frame's error as its class on every rank of the group (FailedPatches when it was
    written with failed patches). options: as perfex.extract_frame's, wavelength=None and
    nspec=None taking desi_extract_spectra's PSF-dependent defaults. phases: a list that
    receives the phases of the job on rank 0 (name, depth, seconds)."""
    start = time.time()
    if group is None or group.size == 1:
        log.info("frame %s: extracting %s with %s", files.name, files.input, files.psf)
        result = _perfex.extract_files(
            *_job_arguments(files, options),
            backend,
            ProgressLog(f"frame {files.name}"),
            lambda w: log.warning("frame %s: %s", files.name, w),
        )
        for w in result["frame_warnings"]:
            log.warning("frame %s: %s", files.name, w)
        log_written(files, result["nspec"], result["nwave"], start)
        if isinstance(phases, list):
            phases[:] = result["phases"]
        if result["failed_patches"]:
            raise FailedPatches.of(files, result["failed_patches"], result["npatches"])
        return
    opened = job = image = None

    def read():
        """perfex-extract's phases up to the pixels: only those the patches read."""
        nonlocal opened, job, image
        opened = open_files(files, backend, options)
        job = opened.check()
        job.plan()
        image = PreprocImage(**opened.read_box(job.pixel_box()))
        log.info("frame %s: extracting %s with %s on %d ranks", files.name, files.input, files.psf, group.size)

    on_root(group, read)
    mpi_phases = []
    frame = extract_over_ranks(
        group, image, psf=opened.psf if opened else None, job=job, backend=backend, threads=threads, phases=mpi_phases
    )
    error = None
    if group.rank == 0:
        try:
            opened.write(frame)
            log_written(files, frame.nspec, frame.nwave, start)
            if frame.failed_patches:
                error = RankError.of(FailedPatches.of(files, frame.failed_patches, frame.npatches))
        except Exception as e:
            error = RankError.of(e)
        if isinstance(phases, list):
            # The files' phases up to the read, the ranks' (the job's extraction inside), the write.
            names = [p[0] for p in opened.phases]
            times = PhaseTimes(opened.phases[: names.index("files::read") + 1])
            times.extend(mpi_phases)
            times.extend([p for p in opened.phases if p[0] == "files::write"])
            phases[:] = times.tuples()
    idle_barrier(group)
    error = group.bcast(error, root=0)
    if error is not None:
        raise error.exception()
