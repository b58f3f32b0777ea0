"""The frames of an exposure: in one process, each frame's reads and writes overlapped with the
extraction of the next one (threads), or over the ranks of a communicator split into groups
(comm.Split), each group extracting its share of the frames (perfex.files over its ranks). A
failing frame is reported by name and the others complete. Every frame goes through the phases
of perfex.files: prepare, read, extract_prepared, write."""

import time
from concurrent.futures import ThreadPoolExecutor

from .collective import RankError, idle_barrier, root_only
from .files import check_frame_outputs, extract_files, extract_prepared, prepare
from .logs import log
from .runtime import check_backend, default_backend, initialize


def _prepared_ahead(frames, backend, options, reader, errors):
    """(index, PreparedFrame, its pixels being read) of each frame in turn, the next frame
    prepared (on this thread: the plan runs on the runtime) and its read started in the reader
    before this one is handed out; a frame that cannot be prepared gets its error in errors."""
    ahead = None
    for i in range(len(frames) + 1):
        current, ahead = ahead, None
        if i < len(frames):
            try:
                prepared = prepare(frames[i], backend, options)
                ahead = i, prepared, reader.submit(prepared.read)
            except Exception as e:
                errors[i] = e
        if current is not None:
            yield current


def _finish(write, errors):
    """Waits for a frame's write, its error (a FailedPatches too) into errors."""
    i, done = write
    try:
        done.result()
    except Exception as e:
        errors[i] = e


def _overlapped(frames, backend, options, timing):
    """The frames in one process, I/O overlapped with the extraction: while frame i extracts (on
    the runtime's threads), a reader thread reads frame i+1's pixels (only those its patches
    read) and a writer thread writes frame i-1 (at most one frame is held beyond the current
    one). The same phases as one frame at a time; returns each frame's exception or None."""
    errors = [None] * len(frames)
    with ThreadPoolExecutor(1) as reader, ThreadPoolExecutor(1) as writer:
        pending = None
        for i, prepared, pixels in _prepared_ahead(frames, backend, options, reader, errors):
            start = time.time()
            try:
                frame = extract_prepared(frames[i], prepared, pixels.result(), phases=prepared.phases)
            except Exception as e:
                errors[i] = e
                continue
            if pending is not None:
                _finish(pending, errors)
            pending = i, writer.submit(prepared.write, frame, start, timing)
        if pending is not None:
            _finish(pending, errors)
    return errors


def _one_by_one(frames, backend, options, timing):
    """The frames in one process, one after the other; returns each frame's exception or None."""
    errors = []
    for files in frames:
        try:
            extract_files(files, backend=backend, options=options, timing=timing)
            errors.append(None)
        except Exception as e:
            errors.append(e)
    return errors


def _in_groups(frames, comm, backend, threads, options, timing):
    """The frames over min(len(frames), comm.size) groups of comm's ranks, group g taking frames
    g, g + ngroups, ...; every rank returns the (index, RankError) of the frames that failed."""
    ngroups = max(1, min(len(frames), comm.size))
    color = comm.rank * ngroups // comm.size
    group = comm.Split(color, comm.rank)
    try:
        mine = []
        for i in range(color, len(frames), ngroups):
            try:
                extract_files(frames[i], group, backend=backend, threads=threads, options=options, timing=timing)
            except Exception as e:
                if group.rank == 0:
                    log.error("frame %s: FAILED: %s: %s", frames[i].name, type(e).__name__, e)
                mine.append((i, RankError.of(e)))
        idle_barrier(comm)
        failed = comm.allgather(mine if group.rank == 0 else [])
    finally:
        group.Free()
    return [(i, e) for part in failed for i, e in part]


def extract_frames(frames, comm=None, *, backend=None, threads=None, overlap=True, timing=False, **options):
    """Extracts and writes the frames of an exposure.

    The frames' outputs are checked against each other and every input before any work
    (check_frame_outputs). A failing frame is logged by name and the others complete.

    Parameters
    ----------
    frames : iterable of FrameFiles
        The frames' files.
    comm : mpi4py.MPI.Comm, optional
        None: this process alone. Else every rank of comm calls, and the ranks are split into
        min(len(frames), comm.size) groups, group g taking frames g, g + ngroups, ...
    backend : str, optional
        'openmp', 'serial' or 'cuda'; default: the first of perfex.backends().
    threads : int, optional
        Host threads of each process (see perfex.initialize).
    overlap : bool, default True
        In one process, read the next frame's pixels and write the last frame in background
        threads while a frame extracts.
    timing : bool, default False
        Log each frame's phases with their times (the rank that writes it).
    **options
        The extraction options by name, as perfex.extract_frame's; wavelength=None and
        nspec=None take the PSF-dependent defaults of desi_extract_spectra.

    Returns
    -------
    list of (FrameFiles, Exception)
        The frames that failed, on every rank; the others were written (a FailedPatches was
        written with failed patches).

    Raises
    ------
    RequestError
        An unknown backend, or outputs that cannot be written or that are inputs or other
        outputs.
    """
    frames = list(frames)
    backend = check_backend(backend or default_backend())
    root_only(comm, lambda: check_frame_outputs(frames))
    initialize(threads, comm=comm)
    if comm is not None and comm.size > 1:
        return [(frames[i], e.exception()) for i, e in _in_groups(frames, comm, backend, threads, options, timing)]
    run = _overlapped if overlap and len(frames) > 1 else _one_by_one
    failed = [(files, e) for files, e in zip(frames, run(frames, backend, options, timing)) if e is not None]
    for files, e in failed:
        log.error("frame %s: FAILED: %s: %s", files.name, type(e).__name__, e)
    return failed
