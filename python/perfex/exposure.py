"""The frames of an exposure: in one process, each frame's reads and writes overlapped with the
extraction of the next one (threads), or over the ranks of a communicator split into groups
(comm.Split), each group extracting its share of the frames (perfex.files over its ranks). A
failing frame is reported by name and the others complete."""

import logging
import time
from concurrent.futures import ThreadPoolExecutor

from .collective import RankError, idle_barrier, on_root
from .files import FailedPatches, check_frame_outputs, extract_files, log_written, open_files
from .frames import Frame
from .images import Image, PreprocImage
from .profiling import format_phases
from .runtime import check_backend, default_backend, initialize

log = logging.getLogger("perfex")


def log_phases(files, phases):
    """A frame's phases and their times, one per line (as perfex-extract --timing prints them)."""
    log.info("%s", format_phases(phases, f"frame {files.name}: phases"))


def _overlapped(frames, backend, options, timing):
    """The frames in one process, I/O overlapped with the extraction: while frame i extracts (on
    the runtime's threads), a reader thread reads frame i+1's pixels (only those its patches
    read) and a writer thread writes frame i-1. The same library phases as one frame at a time;
    returns each frame's exception or None."""

    def prepare(files):
        """files::inputs, job::check and job::plan on the caller's thread (the plan runs on the
        runtime), then files::read in the reader."""
        opened = open_files(files, backend, options)
        job = opened.check()
        job.plan()
        return opened, job, reader.submit(opened.read_box, job.pixel_box())

    errors = [None] * len(frames)
    with ThreadPoolExecutor(1) as reader, ThreadPoolExecutor(1) as writer:
        prepared, pending = {}, None

        def prepare_next(i):
            if i < len(frames):
                try:
                    prepared[i] = prepare(frames[i])
                except Exception as e:
                    errors[i] = e

        def finish(write):
            """Waits for a frame's write (at most one frame is held beyond the current one)."""
            i, files, opened, frame, t0, done = write
            try:
                done.result()
                log_written(files, frame.nspec, frame.nwave, t0)
                if timing:
                    log_phases(files, opened.phases)
                if frame.failed_patches:
                    errors[i] = FailedPatches.of(files, frame.failed_patches, frame.npatches)
            except Exception as e:
                errors[i] = e

        prepare_next(0)
        for i, files in enumerate(frames):
            t0 = time.time()
            prepare_next(i + 1)  # its pixels read while this frame extracts
            if errors[i] is not None:
                continue
            opened, job, image = prepared.pop(i)
            try:
                log.info("frame %s: extracting %s with %s", files.name, files.input, files.psf)
                pre = PreprocImage(**image.result())
                frame = Frame(**job.extract(Image(pre.pixels, pre.ivar, pre.region)._handle))
                for w in dict.fromkeys(frame.warnings):
                    log.warning("frame %s: %s", files.name, w)
            except Exception as e:
                errors[i] = e
                continue
            if pending is not None:
                finish(pending)
            pending = (i, files, opened, frame, t0, writer.submit(opened.write, frame))
        if pending is not None:
            finish(pending)
    return errors


def _extract(files, group, backend, threads, options, timing):
    """One frame's files (perfex.files.extract_files), its phases logged when timing."""
    phases = []
    extract_files(files, group, backend=backend, threads=threads, options=options, phases=phases)
    if timing and phases:
        log_phases(files, phases)


def extract_frames(frames, comm=None, *, backend=None, threads=None, overlap=True, timing=False, **options):
    """Extracts and writes every FrameFiles: alone (comm None) or with the ranks of comm split
    into min(len(frames), comm.size) groups, group g taking frames g, g + ngroups, ... Every rank
    returns the list of (frame files, exception) of the frames that failed (the others were
    written; a FailedPatches was written with failed patches). options: as
    perfex.extract_frame's; wavelength=None and nspec=None take the PSF-dependent defaults of
    desi_extract_spectra. The frames' outputs are checked against each other and every input
    before any work (check_frame_outputs). overlap: in one process, read the next frame's pixels
    and write the last frame in background threads while a frame extracts. timing: log each
    frame's phases with their times (the rank that writes it)."""
    frames = list(frames)
    backend = check_backend(backend or default_backend())
    if comm is None or comm.size == 1:
        check_frame_outputs(frames)
        initialize(threads)
        if len(frames) == 1 or not overlap:
            errors = []
            for files in frames:
                try:
                    _extract(files, None, backend, threads, options, timing)
                    errors.append(None)
                except Exception as e:
                    errors.append(e)
        else:
            errors = _overlapped(frames, backend, options, timing)
        failed = [(files, e) for files, e in zip(frames, errors) if e is not None]
        for files, e in failed:
            log.error("frame %s: FAILED: %s: %s", files.name, type(e).__name__, e)
        return failed
    on_root(comm, lambda: check_frame_outputs(frames))
    initialize(threads, comm=comm)
    ngroups = max(1, min(len(frames), comm.size))
    color = comm.rank * ngroups // comm.size
    group = comm.Split(color, comm.rank)
    try:
        mine = []
        for i in range(color, len(frames), ngroups):
            try:
                _extract(frames[i], group, backend, threads, options, timing)
            except Exception as e:
                if group.rank == 0:
                    log.error("frame %s: FAILED: %s: %s", frames[i].name, type(e).__name__, e)
                mine.append((i, RankError.of(e)))
        idle_barrier(comm)
        failed = comm.allgather(mine if group.rank == 0 else [])
    finally:
        group.Free()
    return [(frames[i], e.exception()) for part in failed for i, e in part]
