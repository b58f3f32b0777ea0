"""One frame over the ranks of an MPI communicator (mpi4py, handed in by the caller as desispec
does): extract_over_ranks, which perfex.dispatch.extract chooses for more than one rank.

Rank 0 checks and plans the job (the library's job::check and job::plan: the same checks as
perfex-extract) and deals the plan's patches in contiguous ranges of about equal work (the
patch linear algebra's flop counts) over the ranks, so any rank count gets an even share, more
ranks than bundles included: what the ranks agree on is a RankPlan. Rank 0 sends each rank only
the pixels its patches read; each rank plans the job too and extracts its patches (job::extract
of a range); rank 0 gathers their bins into the frame, recomputes the frame mask over all
fibres and returns the frame. The result is bitwise the single-process frame for any rank
count. A rank that waits (for its pixels, for the others to finish) sleeps in short polls
instead of spinning in MPI. An error on any rank is raised on every rank as its class
(perfex.collective).

The driver's phases, each a function here and a profiling region, on every rank: mpi::check
(rank 0: job::check and job::plan inside), mpi::scatter, mpi::extract (job::extract inside),
mpi::gather, mpi::assemble.
"""

import time
from dataclasses import dataclass
from typing import Optional

import numpy as np

from .collective import RankError, agree, deal, idle_barrier, pack_blocks, root_only, unpack_blocks, wait_idle
from .extraction import FrameRequest, check_job, job_of, progress_callback, report_warnings
from .frames import Frame, frame_mask
from .images import Image, image_arrays
from .profiling import recorder
from .psf import as_psf
from .runtime import initialize

# Rank 0's own work for a frame besides its patches (checking and planning the job, sending
# each rank its pixels, gathering and placing the bins, the frame mask), as a share of the
# frame's extraction: measured at 5-7 % on 500-fibre frames with 4 to 16 ranks (it grows with the
# ranks it sends to and gathers from). From 15 ranks on, rank 0 only coordinates.
ROOT_OVERHEAD = 0.07

_BIN_ARRAYS = ("flux", "ivar", "chi2pix", "pixmask_fraction")
_STATISTICS = ("npatches", "failed_patches", "linalg_flops", "max_band", "warnings", "failed_bins")


@dataclass
class RankPlan:
    """What the ranks agree on for one frame, made by rank 0 and sent to every rank: the job's
    CCD shape, PSF, resolved options and backend; the patches dealt (rank r solves patches
    [starts[r], starts[r + 1])) and the pixels they read (boxes[r]: (row0, row1, col0, col1), or
    None for a rank without patches); the plan's bins (blocks: [npatches][4] of the first kept
    fibre's frame row, kept fibres, first core bin, core bins); the grid's size; the warnings
    the frame starts with (the check's); and on rank 0 the error it defers (deferred: a RankError
    of mpi::scatter, raised on every rank in mpi::extract once every rank is there)."""

    ccd_shape: tuple
    psf: object
    options: dict
    backend: str
    allow_image_size_mismatch: bool
    starts: list
    boxes: list
    blocks: np.ndarray
    nwave: int
    ndiags: int
    warnings: list
    deferred: Optional[RankError] = None

    @classmethod
    def of(cls, job, size, allow_image_size_mismatch):
        """The plan of rank 0's planned job over size ranks."""
        starts = deal(job.flops, size, ROOT_OVERHEAD)
        boxes = [job.pixel_box(a, b) if a < b else None for a, b in zip(starts, starts[1:])]
        return cls(
            job.ccd_shape,
            job.psf,
            job.options,
            job.backend,
            bool(allow_image_size_mismatch),
            starts,
            boxes,
            job.blocks(),
            job.nwave,
            2 * job.ndiag + 1,
            list(job.frame_warnings),
        )

    def patches(self, rank):
        """(first, last): the patches rank solves."""
        return self.starts[rank], self.starts[rank + 1]

    def bins(self, rank):
        """How many bins of a frame array rank's patches give."""
        first, last = self.patches(rank)
        return int(np.sum(self.blocks[first:last, 1] * self.blocks[first:last, 3]))


@dataclass
class RootInput:
    """Rank 0's side of a frame: the image's float64 arrays, its Image when the caller gave one,
    where the arrays sit on the CCD (None: they are the CCD), and the planned job."""

    pixels: np.ndarray
    weights: np.ndarray
    image: Optional[Image]
    region: Optional[tuple]
    job: object


def extract_over_ranks(comm, image, ivar=None, psf=None, *, work=None, **arguments):
    """perfex.extract_frame over the ranks of comm.

    Every rank calls it; only rank 0's image, ivar, psf and options are used (the others may
    pass None). The frame is bitwise the single-process frame for any rank count. An error on
    any rank is raised on every rank, as its class.

    Parameters
    ----------
    comm : mpi4py.MPI.Comm
        The ranks.
    image, ivar, psf
        As perfex.extract_frame's (rank 0's).
    work : dict, optional
        Receives this rank's share: "patches", the patches it solved, and "first", the first
        of them.
    **arguments
        perfex.extraction.FrameRequest's keywords: backend, threads, progress,
        allow_image_size_mismatch, log_warnings as perfex.extract_frame's; job, rank 0's job
        checked already for this image (a frame's files: perfex.files) instead of psf, backend
        and the options; phases, the recorder this rank's phases are timed into (None: a new
        one); warn, called with each of the frame's warnings on rank 0 (None: perfex's logger
        (perfex.logs); log_warnings False: none). Then the extraction options by name, as
        perfex.extract_frame's.

    Returns
    -------
    Frame or None
        On rank 0 the frame (its phases: rank 0's), on the other ranks None.
    """
    start = time.time()
    request, options = FrameRequest.split(arguments)
    initialize(request.threads, comm=comm)
    times = recorder(request.phases)
    with times.phase("mpi::check"):
        root, plan = plan_ranks(comm, image, ivar, psf, times, request, options)
    if isinstance(work, dict):
        first, last = plan.patches(comm.rank)
        work.update(patches=last - first, first=first)
    with times.phase("mpi::scatter"):
        mine = scatter_pixels(comm, plan, root)
    with times.phase("mpi::extract"):
        local = extract_share(comm, plan, root, mine, request.progress, times)
    with times.phase("mpi::gather"):
        gathered = gather_frame(comm, plan, root, local)
    frame = None
    with times.phase("mpi::assemble"):
        if comm.rank == 0:
            frame = assemble(plan, local, *gathered)
    if frame is not None:
        frame.phases, frame.seconds = times.list(), time.time() - start
        if request.log_warnings:
            report_warnings(frame.warnings, request.warn)
    return frame


def plan_ranks(comm, image, ivar, psf, times, request, options):
    """mpi::check: rank 0 takes the image's arrays, checks and plans the job (job::check and
    job::plan, timed into times; request.job only planned) and deals its patches over the ranks.
    Returns (rank 0's RootInput, None elsewhere; the RankPlan, on every rank)."""
    mismatch = request.allow_image_size_mismatch

    def prepare():
        pixels, weights, img, region = image_arrays(image, ivar)
        job = request.job
        if job is None:
            ccd = region[2:] if region else pixels.shape
            job = check_job(
                as_psf(psf), ccd, backend=request.backend, allow_image_size_mismatch=mismatch, phases=times, **options
            )
        job.plan()
        plan = RankPlan.of(job, comm.size, mismatch)
        return RootInput(pixels, weights, img, region, job), plan

    root, plan = root_only(comm, prepare) or (None, None)
    return root, comm.bcast(plan, root=0)


def scatter_pixels(comm, plan, root):
    """mpi::scatter: each rank receives from rank 0 the rectangle of pixels its patches read
    (single-copy transfers), while rank 0 builds its own Image; an error building it is deferred
    in plan.deferred. Returns rank 0's Image (None after an error), another rank's (pixels, ivar)
    of its rectangle, or None for a rank without patches."""
    from mpi4py import MPI

    if comm.rank != 0:
        box = plan.boxes[comm.rank]
        if box is None:
            return None
        r0, r1, c0, c1 = box
        arrays = np.empty((r1 - r0, c1 - c0)), np.empty((r1 - r0, c1 - c0))
        for tag, array in enumerate(arrays, 1):
            wait_idle(comm.Irecv([array, MPI.DOUBLE], source=0, tag=tag))
        return arrays
    sends = []
    dr, dc = root.region[:2] if root.region else (0, 0)  # rank 0 may hold only the pixels needed
    for r, box in enumerate(plan.boxes[1:], 1):
        if box is not None:
            r0, r1, c0, c1 = box
            for tag, array in enumerate((root.pixels, root.weights), 1):
                block = np.ascontiguousarray(array[r0 - dr : r1 - dr, c0 - dc : c1 - dc])
                sends.append((comm.Isend([block, MPI.DOUBLE], dest=r, tag=tag), block))
    image = None
    try:
        image = root.image or Image(root.pixels, root.weights, root.region, check=False)
    except Exception as e:  # the other ranks wait for their pixels: raised once every rank is there
        plan.deferred = RankError.of(e, f"rank 0: {e}")
    for request, _ in sends:
        wait_idle(request)
    return image


def extract_share(comm, plan, root, mine, progress, times):
    """mpi::extract: this rank's patches (job::extract of its range, timed into times) from
    `mine`, scatter_pixels' result (a rank other than 0 checks and plans the job first, from the
    plan). Rank 0 extracts even without patches (it returns the frame's metadata). An error on
    any rank, plan.deferred's included, is raised on every rank. Returns job.extract's dict, or
    None for a rank without patches."""
    rank = comm.rank
    first, last = plan.patches(rank)
    local, error = None, plan.deferred
    if (first < last or rank == 0) and error is None:
        try:
            if rank == 0:
                job, image = root.job, mine
                share = None
                if comm.size > 1:
                    share = f"rank 0's share (patches {first}-{last - 1} of the frame's {plan.starts[-1]})"
                callback = progress_callback(progress, "extract", share)
            else:
                r0, r1, c0, c1 = plan.boxes[rank]
                image = Image(*mine, (r0, c0, *plan.ccd_shape), check=False)
                job = job_of(
                    plan.psf,
                    plan.ccd_shape,
                    plan.options,
                    plan.backend,
                    plan.allow_image_size_mismatch,
                    phases=times,
                    frame_warnings=False,
                )
                callback = None
            # Ranks other than 0 return their model's blocks, which rank 0 adds after its own.
            local = job.extract(image._handle, callback, first, last, model_blocks=rank != 0)
        except Exception as e:
            error = RankError.of(e, f"rank {rank}: {e}")
    agree(comm, error)
    return local


def gather_frame(comm, plan, root, local):
    """mpi::gather: every rank's bins, model blocks and statistics to rank 0. Returns, on rank 0,
    (the frame's arrays by name, its model image or None, every rank's statistics or None)."""
    arrays = {name: _gather_bins(comm, plan, local, name) for name in _BIN_ARRAYS}
    arrays["resolution"] = _gather_bins(comm, plan, local, "resolution", plan.ndiags)
    model = _gather_model(comm, plan, root, local) if plan.options["model_image"] else None
    idle_barrier(comm)
    stats = comm.gather({k: local[k] for k in _STATISTICS} if local is not None else None, root=0)
    return arrays, model, stats


def _gather_bins(comm, plan, local, name, per_bin=1):
    """Frame array `name` on rank 0 from every rank's bins, in its patches' order (Gatherv puts
    the ranks' parts in rank order: the plan's patch order); None elsewhere."""
    from mpi4py import MPI

    first, last = plan.patches(comm.rank)
    send = pack_blocks(local[name], plan.blocks[first:last]) if local is not None else np.empty(0)
    counts = [plan.bins(r) * per_bin for r in range(comm.size)]
    recv = [np.empty(sum(counts)), counts, MPI.DOUBLE] if comm.rank == 0 else None
    wait_idle(comm.Igatherv([np.ascontiguousarray(send), MPI.DOUBLE], recv, root=0))
    if comm.rank != 0:
        return None
    nspec = plan.options["nspec"]
    out = np.zeros((nspec, plan.nwave) if per_bin == 1 else (nspec, per_bin, plan.nwave))
    return unpack_blocks(recv[0], plan.blocks, out)


def _gather_model(comm, plan, root, local):
    """The model image on rank 0: its own image holds the patches from the plan's first; it adds
    the other ranks' blocks, rank after rank, in the plan's order: the one-process image to the
    last bit. None elsewhere."""
    from mpi4py import MPI

    send = local.get("model_blocks") if local is not None and comm.rank != 0 else None
    send = np.ascontiguousarray(np.empty(0) if send is None else send)
    recv = sizes = None
    if comm.rank == 0:
        sizes = [0] + [root.job.model_block_values(*plan.patches(r)) for r in range(1, comm.size)]
        recv = [np.empty(sum(sizes)), sizes, MPI.DOUBLE]
    wait_idle(comm.Igatherv([send, MPI.DOUBLE], recv, root=0))
    if comm.rank != 0:
        return None
    model = local["model"]
    offsets = np.cumsum([0] + sizes)
    for r in range(1, comm.size):
        root.job.fold_model_blocks(model, *plan.patches(r), recv[0][offsets[r] : offsets[r + 1]])
    return model


def assemble(plan, local, arrays, model, stats):
    """mpi::assemble: rank 0's frame from the gathered bins and every rank's statistics: the
    warnings of the check and of each rank (the NaN/Inf counts only of rank 0, which holds the
    whole image), the failed bins, and the frame mask over all fibres."""
    warnings = list(plan.warnings)
    for r, s in enumerate(stats):
        if s is not None:
            warnings += [w for w in s["warnings"] if w not in plan.warnings and (r == 0 or "NaN/Inf" not in w)]
    stats = [s for s in stats if s is not None]
    failed_bins = sorted(tuple(b) for s in stats for b in s["failed_bins"])
    return Frame(
        mask=frame_mask(arrays["chi2pix"], arrays["pixmask_fraction"], arrays["ivar"], failed_bins),
        wave=local["wave"],
        specmin=plan.options["specmin"],
        model=model,
        options=local["options"],
        npatches=sum(s["npatches"] for s in stats),
        failed_patches=sum(s["failed_patches"] for s in stats),
        failed_bins=failed_bins,
        nonfinite_pixels=local["nonfinite_pixels"],
        linalg_flops=sum(s["linalg_flops"] for s in stats),
        max_band=max(s["max_band"] for s in stats),
        warnings=warnings,
        **arrays,
    )
