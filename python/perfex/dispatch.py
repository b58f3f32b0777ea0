"""One frame in this process or over the ranks of an MPI communicator: extract, the choice every
Python front end (perfex.extract_frame, a frame's files, the gpu_specter drop-in) makes in this
one place. perfex.mpi is imported only for a communicator of more than one rank, so that
single-process work never loads the MPI driver."""

from .extraction import extract_in_process


def extract(comm, image, ivar=None, psf=None, **arguments):
    """A frame in this process, or over the ranks of comm.

    Parameters
    ----------
    comm : mpi4py.MPI.Comm or None
        None or a communicator of one rank: the frame is extracted in this process
        (perfex.extract_frame's arguments); else over the ranks of comm
        (perfex.mpi.extract_over_ranks).
    image, ivar, psf
        As perfex.extract_frame's.
    **arguments
        perfex.extract_frame's keyword arguments and options.

    Returns
    -------
    Frame or None
        The frame; None on the ranks other than 0.
    """
    if comm is None or comm.size == 1:
        return extract_in_process(image, ivar, psf, **arguments)
    from .mpi import extract_over_ranks

    return extract_over_ranks(comm, image, ivar, psf, **arguments)
