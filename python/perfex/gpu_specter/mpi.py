"""gpu_specter.mpi's IO coordinators: which ranks read, process and write (desispec's
main_gpu_specter takes one). Same classes, methods and rank roles."""


class NoMPIIOCoordinator:
    """Everything on this process."""

    def __init__(self):
        self.comm, self.rank, self.size, self.work_comm = None, 0, 1, None

    @staticmethod
    def is_reader(rank):
        return rank == 0

    is_writer = is_worker_root = is_worker = is_reader

    def read(self, func, payload):
        return func()

    def process(self, func, payload):
        return func()

    def write(self, func, payload):
        return func(payload)


class SerialIOCoordinator(NoMPIIOCoordinator):
    """Rank 0 reads and writes; every rank of comm processes (work_comm = comm)."""

    def __init__(self, comm):
        self.comm, self.rank, self.size, self.work_comm = comm, comm.rank, comm.size, comm

    @staticmethod
    def is_worker(rank):
        return True

    def read(self, func, payload):
        return func() if self.rank == 0 else payload

    def write(self, func, payload):
        return func(payload) if self.rank == 0 else payload


class ParallelIOCoordinator:
    """Rank 0 reads, rank 1 writes, ranks 2.. process (work_comm): reading and writing of one
    frame overlap the processing of another. Needs at least 3 ranks."""

    _read, _write, _root = 0, 1, 2

    def __init__(self, comm):
        if comm.size < 3:
            raise ValueError("ParallelIOCoordinator requires at least 3 MPI ranks")
        self.comm, self.rank, self.size = comm, comm.rank, comm.size
        group = comm.group.Excl([self._read, self._write])
        self.work_comm = comm.Create_group(group) if self.rank >= self._root else None

    @classmethod
    def is_reader(cls, rank):
        return rank == cls._read

    @classmethod
    def is_writer(cls, rank):
        return rank == cls._write

    @classmethod
    def is_worker_root(cls, rank):
        return rank == cls._root

    @classmethod
    def is_worker(cls, rank):
        return rank >= cls._root

    def read(self, func, payload):
        if self.is_reader(self.rank):
            self.comm.send(func(), dest=self._root, tag=1)
        elif self.is_worker_root(self.rank):
            return self.comm.recv(source=self._read, tag=1)
        return payload

    def process(self, func, payload):
        return func() if self.is_worker(self.rank) else payload

    def write(self, func, payload):
        if self.is_worker_root(self.rank):
            self.comm.recv(source=self._write, tag=2)  # the writer is ready
            self.comm.send(payload, dest=self._write, tag=3)
        elif self.is_writer(self.rank):
            self.comm.send(None, dest=self._root, tag=2)
            return func(self.comm.recv(source=self._root, tag=3))
        return payload
