"""A frame's files and the job around them: preproc image and PSF in, frame (and model) out, in
the phases of perfex-extract's job (perfex::io::extract_files), in one process or over the ranks
of a group alike: prepare (files::inputs, job::check, job::plan), PreparedFrame.read
(files::read: only the pixels the patches read), extract_prepared (job::extract, or perfex.mpi's
phases over the group, as perfex.dispatch chooses), PreparedFrame.write (files::write). Rank 0
of a group reads and writes; an error is raised as its class on every rank of the group; a
frame written with failed patches is a FailedPatches."""

import os
import time
from dataclasses import dataclass
from typing import Optional

from . import _perfex
from ._perfex import Error
from .collective import root_only
from .dispatch import extract
from .extraction import options_request
from .frames import check_outputs
from .images import PreprocImage
from .logs import log
from .profiling import format_phases, recorder
from .runtime import ProgressLog

# desi_extract_spectra's option names, for the messages of the command line.
CLI_NAMES = dict(input="-i/--input", psf="-p/--psf", output="-o/--output", model="-m/--model", fibermap="-f/--fibermap")


@dataclass
class FrameFiles:
    """One frame's files.

    Parameters
    ----------
    input : str
        The preproc image.
    psf : str
        The PSF file.
    output : str
        The frame file to write.
    model : str, optional
        The model image file to write.
    fibermap : str, optional
        A fibermap file whose FIBERMAP rows [specmin, specmin + nspec) replace the frame's.
    """

    input: str
    psf: str
    output: str
    model: Optional[str] = None
    fibermap: Optional[str] = None

    @property
    def name(self):
        return os.path.basename(self.output)


class FailedPatches(Error):
    """A frame written with failed patches: their bins are masked BAD2DFIT | NODATA.

    A perfex.Error; perfex-extract's exit status 3.
    """

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


class PreparedFrame:
    """A frame's files through job::plan (prepare): the library's handle of the files (opened:
    .read_box, .write), the planned job, and the PhaseTimes both time their phases into."""

    def __init__(self, files, opened, job, phases):
        self.files, self.opened, self.job, self.phases = files, opened, job, phases

    def read(self):
        """files::read: only the pixels the job's patches read, as a PreprocImage."""
        return PreprocImage(**self.opened.read_box(self.job.pixel_box()))

    def write(self, frame, start, timing=False):
        """files::write: the frame (and the model when asked for), atomically; logged with the
        time since `start`, and with the frame's phases when timing. Raises FailedPatches once
        a frame with failed patches is written."""
        self.opened.write(frame)
        log_written(self.files, frame.nspec, frame.nwave, start)
        if timing:
            log.info("%s", format_phases(self.phases, f"frame {self.files.name}: phases"))
        if frame.failed_patches:
            raise FailedPatches.of(self.files, frame.failed_patches, frame.npatches)


def _warn(files):
    """A callable(message) that logs a frame's warning, naming the frame."""
    return lambda warning: log.warning("frame %s: %s", files.name, warning)


def open_files(files, backend, options, phases=None, warn=None):
    """files::inputs of a frame's files (the outputs checked, the PSF and the image's header
    read): the library's handle of the job's next phases (.check() -> the FrameJob, .read_box,
    .write), timed into phases (a PhaseTimes; None: a new one); warn: a callable(message) for
    each warning of the files and the check (None: they are not reported)."""
    paths = (os.fsencode(p or "") for p in (files.input, files.psf, files.output, files.model, files.fibermap))
    opts, wavelength_given, nspec_given = options_request(options, psf_defaults=True)
    mismatch = False  # the image's size is held to the PSF's
    return _perfex.FrameFiles(*paths, opts, wavelength_given, nspec_given, mismatch, backend, warn, recorder(phases))


def prepare(files, backend, options, phases=None):
    """A frame's files through job::plan (files::inputs, job::check, job::plan, timed into
    phases): the PreparedFrame. Warnings are logged as they arise, naming the frame."""
    times = recorder(phases)
    opened = open_files(files, backend, options, times, _warn(files))
    job = opened.check()
    job.plan()
    return PreparedFrame(files, opened, job, times)


def extract_prepared(files, prepared, image, group=None, threads=None, phases=None):
    """job::extract of a prepared frame's pixels in this process, or perfex.mpi's phases over the
    ranks of group (as perfex.dispatch chooses; rank 0's prepared frame and image, the other ranks
    pass None), timed into phases; progress and warnings logged naming the frame. Returns the
    Frame (rank 0)."""
    if prepared is not None:
        ranks = f" on {group.size} ranks" if group is not None and group.size > 1 else ""
        log.info("frame %s: extracting %s with %s%s", files.name, files.input, files.psf, ranks)
    job = prepared.job if prepared is not None else None
    progress = ProgressLog(f"frame {files.name}")
    return extract(group, image, job=job, threads=threads, progress=progress, phases=phases, warn=_warn(files))


def log_written(files, nspec, nwave, start):
    log.info("frame %s: %d fibres x %d wavelengths written in %.1f s", files.name, nspec, nwave, time.time() - start)


def extract_files(files, group=None, *, backend, threads=None, options, phases=None, timing=False):
    """Extracts and writes one frame, in the phases of perfex-extract's job.

    Rank 0 of the group reads and writes; the outputs are checked before any work and written
    atomically. Progress and warnings are logged to perfex's logger (perfex.logs), naming the frame. An
    error is raised on every rank of the group, as its class.

    Parameters
    ----------
    files : FrameFiles
        The frame's files.
    group : mpi4py.MPI.Comm, optional
        Extract with the ranks of this communicator (every rank calls); None: this process
        alone.
    backend : str
        'openmp', 'serial' or 'cuda'.
    threads : int, optional
        Host threads of the process (see perfex.initialize).
    options : dict
        The extraction options by name, as perfex.extract_frame's; wavelength=None and
        nspec=None take desi_extract_spectra's PSF-dependent defaults (the PSF's WAVEMIN,
        WAVEMAX with dw 0.8; 500 fibres clipped to the PSF's).
    phases : PhaseTimes, optional
        The recorder this rank's phases are timed into.
    timing : bool, default False
        Log the frame's phases with their times once it is written.

    Raises
    ------
    FailedPatches
        The frame was written with failed patches.
    RequestError
        The request or the outputs refused before any work.
    Error
        Unreadable or invalid inputs, a failed write.
    """
    start = time.time()
    times = recorder(phases)
    prepared = root_only(group, lambda: prepare(files, backend, options, times))
    image = root_only(group, lambda: prepared.read())
    frame = extract_prepared(files, prepared, image, group, threads, times)
    root_only(group, lambda: prepared.write(frame, start, timing))
