"""The client packages (gpu_specter, desispec, desiutil, desitarget, specter: checkouts with
their py/ folders under $PERFEX_CLIENTS, default ../clients next to the repository) run on
perfex, never vendored: tests import this module for the paths and the simulated input, and
run it as a script (`python3 clients.py COMMAND ...`, under mpirun for several ranks) to run the
clients' own code in a fresh process with gpu_specter aliased to perfex.gpu_specter.

Commands:
  test-core PREPROC     gpu_specter's py/gpu_specter/test/test_core.py, unchanged, its
                        find_test_file giving PREPROC (a simulated preproc of PSF
                        psf-r0-00067784) and the checkout's psf-r0-00067784.fits
  test-extract          desispec's py/desispec/test/test_extract.py
  test-extract-drop-ins the same with perfex's two drop-ins (perfex.gpu_specter and
                        perfex.specter aliased) and no gpu_specter or specter checkout
  desi-extract ARGS...  desispec.scripts.extract.main(parse(ARGS)) (desi_extract_spectra)
  script NAME ARGS...   gpu_specter's bin/NAME (spex, desi_benchmark_extract), unchanged
  coordinators          every method of gpu_specter.mpi's IO coordinators, gpu_specter's
                        classes and perfex's side by side, on every rank (MPI)
  io PREPROC FOLDER     gpu_specter.io (the checkout's, with fitsio) and perfex.gpu_specter.io
                        reading and writing the same files (no alias)
desispec, desiutil and desitarget come from the environment where installed (CI installs
desispec and desiutil from the package index), else from the checkouts; gpu_specter and DESI's
specter are not on the index (its `specter` is another project) and come from the checkouts.
Each command prints a line "client NAME VERSION from PATH" per client it uses.
A missing client module exits with status 77 and a line "missing module NAME".
"""

import importlib
import importlib.util
import inspect
import io
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
CLIENTS = ("gpu_specter", "desispec", "desiutil", "desitarget", "specter")
MISSING = 77  # exit status: a client module cannot be imported
PSF_67784 = "py/gpu_specter/test/data/psf-r0-00067784.fits"


def clients_root():
    return os.environ.get("PERFEX_CLIENTS") or os.path.normpath(os.path.join(REPO, "..", "clients"))


def client_py(name):
    """The py/ folder of client `name`, or None when its checkout is absent."""
    path = os.path.join(clients_root(), name, "py")
    return path if os.path.isdir(os.path.join(path, name)) else None


def missing_clients(*names):
    return [n for n in names if client_py(n) is None]


# ---- the simulated preproc of PSF psf-r0-00067784 -----------------------------------------


def simulate_preproc(psf_path, path, nspec=10, wavelength="5700,7700,0.8", read_noise=3.0, seed=67784):
    """Writes a preproc image (IMAGE, IVAR, MASK, FIBERMAP) of fibres [0, nspec) of the PSF:
    the spectra that a flat 5 e-/pixel continuum with 23 sky-like lines (peaks 20 to 1000 e-)
    gives, projected through perfex's spots (perfex's model image of that input), then IMAGE =
    Poisson(model) + N(0, read_noise), IVAR = 1 / (read_noise^2 + model), MASK = 0.
    Dark-sky levels (S/N ~3 per bin), as the real exposure gpu_specter's test_core was written
    for: on a 4x brighter continuum gpu_specter itself misses test_compare_specter's 99 %
    (specter and gpu_specter differ at patch edges in proportion to S/N)."""
    import numpy as np
    import perfex
    from astropy.io import fits

    psf = perfex.read_psf(psf_path)
    rows = np.arange(psf.npix_y, dtype=np.float64)
    brightness = np.full(psf.npix_y, 5.0)
    for row, amplitude in zip(np.linspace(300, psf.npix_y - 300, 23), np.geomspace(20, 1000, 23)):
        brightness += amplitude * np.exp(-0.5 * ((rows - row) / 1.2) ** 2)
    light = np.repeat(brightness[:, None], psf.npix_x, axis=1)
    truth = perfex.extract_frame(
        light,
        np.ones_like(light),
        psf,
        wavelength=wavelength,
        specmin=0,
        nspec=nspec,
        bundlesize=nspec,
        nsubbundles=2,
        psferr=0.01,
        model_image=True,
        progress=False,
    )
    model = np.clip(truth.model, 0, None)
    rng = np.random.default_rng(seed)
    pixels = rng.poisson(model) + rng.normal(0.0, read_noise, model.shape)
    header = fits.Header(
        [
            ("EXTNAME", "IMAGE"),
            ("CAMERA", "r0", "simulated camera"),
            ("RDNOISE", read_noise, "[electron] read noise"),
            ("FLAVOR", "science"),
            ("BUNIT", "electron"),
            ("SIMPSF", os.path.basename(psf_path), "PSF of the simulation"),
            ("SIMWAVE", wavelength, "[Angstrom] simulated grid wmin,wmax,dw"),
        ]
    )
    header.add_history(
        "perfex tests/clients.py: flat continuum + lines on fibres 0-"
        f"{nspec - 1}, projected with perfex's spots; Poisson + read noise"
    )
    fibermap = np.zeros(nspec, dtype=[("FIBER", "i4"), ("TARGETID", "i8")])
    fibermap["FIBER"] = np.arange(nspec)
    fibermap["TARGETID"] = 1000 + np.arange(nspec)
    fits.HDUList(
        [
            fits.PrimaryHDU(pixels.astype(np.float32), header=header),
            fits.ImageHDU((1.0 / (read_noise**2 + model)).astype(np.float32), name="IVAR"),
            fits.ImageHDU(np.zeros(model.shape, dtype=np.int32), name="MASK"),
            fits.BinTableHDU(fibermap, name="FIBERMAP"),
        ]
    ).writeto(path, overwrite=True)
    return path


# ---- commands (run in a fresh process) ------------------------------------------------------


def _require(*modules):
    """Imports the modules; a missing one (a client or its dependency) exits with MISSING."""
    for name in modules:
        try:
            importlib.import_module(name)
        except ModuleNotFoundError as e:
            print(f"missing module {e.name} (importing {name})", flush=True)
            sys.exit(MISSING)


def _checkout(name):
    """The py/ folder of client `name`; exits with MISSING when its checkout is absent."""
    path = client_py(name)
    if path is None:
        print(f"missing module {name} (no checkout in {clients_root()})", flush=True)
        sys.exit(MISSING)
    return path


# Clients installed from the package index: used from the environment when importable there.
FROM_INDEX = ("desispec", "desiutil", "desitarget")


def _use_clients(*names):
    for name in names:
        if name not in FROM_INDEX or importlib.util.find_spec(name) is None:
            sys.path.insert(0, _checkout(name))


def _report_clients(*names):
    """Prints where each client module comes from (the environment or a checkout)."""
    for name in names:
        module = sys.modules.get(name) or importlib.import_module(name)
        version = getattr(module, "__version__", "?")
        # One write per line: under mpirun a line written in pieces can interleave with another
        # rank's.
        sys.stdout.flush()
        os.write(sys.stdout.fileno(), f"client {name} {version} from {os.path.dirname(module.__file__)}\n".encode())


def _alias():
    import perfex.gpu_specter

    perfex.gpu_specter.install_alias()


def _load(name, path, package=False):
    """Imports the file at path as module `name` (a package when package)."""
    spec = importlib.util.spec_from_file_location(
        name,
        os.path.join(path, "__init__.py") if package else path,
        submodule_search_locations=[path] if package else None,
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _run_tests(suite):
    """Runs a unittest suite (verbose); exit status 1 when anything failed. Under MPI (the
    suite imported mpi4py) rank 0 prints every rank's report in rank order, so that the ranks'
    lines do not interleave."""
    report = io.StringIO()
    result = unittest.TextTestRunner(verbosity=2, stream=report).run(suite)
    ok, text = result.wasSuccessful(), report.getvalue()
    mpi = sys.modules.get("mpi4py.MPI")
    if mpi is not None and mpi.COMM_WORLD.size > 1:
        reports = mpi.COMM_WORLD.gather((ok, text), root=0)
        if mpi.COMM_WORLD.rank == 0:
            text = "".join(f"---- rank {r} ----\n{t}" for r, (_, t) in enumerate(reports))
            ok = all(o for o, _ in reports)
        else:
            text = ""
    sys.stderr.write(text)
    sys.exit(0 if ok else 1)


def test_core(preproc):
    """gpu_specter's test_core.py as in its checkout, against the whole aliased package: the
    checkout's gpu_specter.test package (its __init__ and util) is loaded by file, and
    util.find_test_file is wrapped before test_core imports it."""
    gpu_specter_py = _checkout("gpu_specter")
    _alias()
    specter_py = client_py("specter")
    if specter_py is not None:  # test_compare_specter; test_core skips it without specter
        sys.path.insert(0, specter_py)
    tests = os.path.join(gpu_specter_py, "gpu_specter", "test")
    _load("gpu_specter.test", tests, package=True)
    util = _load("gpu_specter.test.util", os.path.join(tests, "util.py"))
    original = util.find_test_file
    files = {
        "preproc": preproc,
        "psf": os.path.join(gpu_specter_py, "gpu_specter", "test", "data", os.path.basename(PSF_67784)),
    }

    def find_test_file(filetype):
        return files[filetype] if filetype in files else original(filetype)

    util.find_test_file = find_test_file
    module = _load("gpu_specter.test.test_core", os.path.join(tests, "test_core.py"))
    _run_tests(unittest.defaultTestLoader.loadTestsFromModule(module))


def _stand_in_focalplane():
    """When desimodel or its focal-plane data (not in the package index's desimodel: it is
    installed separately, $DESIMODEL) is absent: a load_focalplane giving 5000 positioners
    (petal = fibre // 500, no exclusion zones), which test_extract's setup
    (desispec.io.empty_fibermap) needs to fill the position columns of its -f fibermap; the
    extraction reads only FIBER from it."""
    try:
        installed = importlib.import_module("desimodel.io")
    except ModuleNotFoundError:
        installed = None
    if installed is not None and os.path.isdir(installed.datadir()):
        return
    import types

    import numpy as np
    from astropy.table import Table

    def load_focalplane(*args, **kwargs):
        fiber = np.arange(5000)
        angle = 2 * np.pi * fiber / 5000
        fp = Table(
            dict(
                FIBER=fiber,
                DEVICE_TYPE=np.full(5000, "POS"),
                PETAL=fiber // 500,
                DEVICE=fiber % 500,
                LOCATION=1000 * (fiber // 500) + fiber % 500,
                OFFSET_X=400 * np.cos(angle),
                OFFSET_Y=400 * np.sin(angle),
            )
        )
        return fp, {}, fp[:0], None

    if installed is not None:
        installed.load_focalplane = load_focalplane
        print("desimodel's data absent: test_extract's fibermap positions come from a stand-in focal plane", flush=True)
        return
    package = types.ModuleType("desimodel")
    package.__path__ = []
    package.__version__ = "stand-in (perfex tests/clients.py)"  # desiutil.depend records it
    package.io = types.ModuleType("desimodel.io")
    package.io.load_focalplane = load_focalplane
    sys.modules.update({"desimodel": package, "desimodel.io": package.io})
    print("desimodel absent: test_extract's fibermap positions come from a stand-in focal plane", flush=True)


def test_extract(drop_ins=False):
    if drop_ins:
        _require("perfex.specter")
        import perfex.specter

        perfex.specter.install_alias()
        _use_clients("desiutil", "desitarget", "desispec")
    else:
        _use_clients("desiutil", "desitarget", "specter", "desispec")
    _alias()
    _stand_in_focalplane()
    _require("specter.extract", "desispec.scripts.extract", "desispec.test.test_extract")
    _report_clients("desispec", "desiutil", "desitarget", "specter")
    _run_tests(unittest.defaultTestLoader.loadTestsFromName("desispec.test.test_extract"))


def desi_extract(args):
    _use_clients("desiutil", "desitarget", "specter", "desispec")
    _alias()
    _require("desispec.scripts.extract")
    _report_clients("desispec", "desiutil", "desitarget", "specter")
    import desispec.scripts.extract

    desispec.scripts.extract.main(desispec.scripts.extract.parse(args))


def script(name, args):
    """gpu_specter's bin/NAME as its checkout has it, run as __main__ with the alias (and
    desispec's extraction importable: desi_benchmark_extract imports it)."""
    import runpy

    path = os.path.join(os.path.dirname(_checkout("gpu_specter")), "bin", name)
    if name == "desi_benchmark_extract":
        _use_clients("desiutil", "desitarget", "specter", "desispec")
    _alias()
    if name == "desi_benchmark_extract":
        _require("desispec.scripts.extract")
        _report_clients("desispec", "desiutil", "desitarget", "specter")
    sys.argv = [path] + list(args)
    runpy.run_path(path, run_name="__main__")


def coordinators():
    """For each pair (gpu_specter's class, perfex's), the same read / process / write calls
    with rank-tagged functions and payloads; every rank checks that both return the same and
    that the functions ran on the same ranks; rank 0 prints a line per rank and class."""
    import perfex.gpu_specter.mpi as ours
    from mpi4py import MPI

    theirs = _load("client_gpu_specter_mpi", os.path.join(_checkout("gpu_specter"), "gpu_specter", "mpi.py"))
    comm = MPI.COMM_WORLD
    rank = comm.rank
    lines = []
    names = ["NoMPIIOCoordinator", "SerialIOCoordinator"]
    if comm.size >= 3:
        names.append("ParallelIOCoordinator")
    for name in names:
        runs = {}
        for label, module in (("gpu_specter", theirs), ("perfex", ours)):
            cls = getattr(module, name)
            c = cls() if name == "NoMPIIOCoordinator" else cls(comm)
            ran = []

            def read():
                ran.append("read")
                return ("read", rank)

            def process():
                ran.append("process")
                return ("processed", rank, c.work_comm.rank if c.work_comm is not None else None)

            def write(payload):
                ran.append("write")
                return ("written", rank, payload)

            got = (
                c.read(read, ("dummy-read", rank)),
                c.process(process, ("dummy-process", rank)),
                c.write(write, ("payload", rank)),
            )
            roles = tuple(
                role(r)
                for role in (cls.is_reader, cls.is_writer, cls.is_worker_root, cls.is_worker)
                for r in range(comm.size)
            )
            runs[label] = (got, ran, roles, (c.rank, c.size, c.work_comm is None))
            comm.barrier()
        assert runs["gpu_specter"] == runs["perfex"], (name, rank, runs)
        lines.append(f"rank {rank} {name}: same results {runs['perfex'][0]}")
    for part in comm.gather(lines, root=0) or []:  # one writer: the ranks' lines do not interleave
        print("\n".join(part), flush=True)


def compare_io(preproc, folder):
    """Reads and writes with both io modules; raises AssertionError on any difference."""
    import numpy as np

    _use_clients("gpu_specter")
    _require("fitsio", "gpu_specter.io")
    import gpu_specter.io as theirs
    import perfex.gpu_specter.io as ours

    def same(a, b, what):
        if a is None or b is None:
            assert a is None and b is None, what
            return
        a, b = np.asarray(a), np.asarray(b)
        assert a.shape == b.shape, (what, a.shape, b.shape)
        assert a.dtype.newbyteorder("=") == b.dtype.newbyteorder("="), (what, a.dtype, b.dtype)
        if a.dtype.names:
            for field in a.dtype.names:
                assert np.array_equal(a[field], b[field]), (what, field)
        else:
            assert np.array_equal(a, b, equal_nan=a.dtype.kind == "f"), what

    pair = theirs.read_img(preproc), ours.read_img(preproc)
    assert set(pair[0]) == set(pair[1])
    img = {k: (pair[0][k], pair[1][k]) for k in pair[0]}
    for key in ("image", "ivar", "mask", "fibermap"):
        same(*img[key], f"read_img {key}")
    for key in ("imagehdr", "fibermaphdr"):
        fitsio_header, astropy_header = img[key]
        keys = {k for k in fitsio_header.keys() if k not in ("COMMENT", "HISTORY", "")}
        assert keys == {k for k in astropy_header.keys() if k not in ("COMMENT", "HISTORY", "")}, key
        assert all(fitsio_header[k] == astropy_header[k] for k in keys - {"CHECKSUM", "DATASUM"}), key
    print(f"read_img: same arrays and header cards ({len(img['imagehdr'][1])} IMAGE cards)", flush=True)

    rng = np.random.default_rng(1)
    nspec, nwave = 5, 40
    ivar = rng.uniform(0.5, 2, (nspec, nwave))
    ivar[1, 3] = 0
    frame = dict(
        specflux=rng.normal(size=(nspec, nwave)),
        specivar=ivar,
        specmask=(ivar == 0).astype(int),
        wave=np.arange(5760.0, 5760.0 + 0.8 * nwave - 0.4, 0.8),
        Rdiags=rng.uniform(size=(nspec, 11, nwave)),
        chi2pix=rng.uniform(size=(nspec, nwave)),
        imagehdr=img["imagehdr"][0],
        fibermap=img["fibermap"][0][:nspec],
        fibermaphdr=img["fibermaphdr"][0],
    )
    paths = {}
    for label, writer in (("gpu_specter", theirs), ("perfex", ours)):
        paths[label] = os.path.join(folder, f"frame-{label}.fits")
        writer.write_frame(paths[label], frame)
        writer.write_model(
            os.path.join(folder, f"model-{label}.fits"), dict(frame, modelimage=img["image"][0][:50, :60])
        )
    for reader in (theirs, ours):
        a, b = reader.read_frame(paths["gpu_specter"]), reader.read_frame(paths["perfex"])
        assert set(a) == set(b)
        for key in a:
            same(a[key], b[key], f"{reader.__name__}.read_frame {key}")
    import fitsio

    for kind in ("frame", "model"):
        a, b = (fitsio.FITS(os.path.join(folder, f"{kind}-{label}.fits")) for label in ("gpu_specter", "perfex"))
        with a, b:
            assert [h.get_extname() for h in a] == [h.get_extname() for h in b], kind
            for ha, hb in zip(a, b):
                # Every card of gpu_specter's HDU but fitsio's own COMMENTs, the checksums and
                # EXTEND (astropy writes it only when there are extensions).
                cards = [(r["name"], r.get("value")) for r in hb.read_header().records()]
                for r in ha.read_header().records():
                    if r["name"] not in ("COMMENT", "CHECKSUM", "DATASUM", "EXTEND"):
                        assert (r["name"], r.get("value")) in cards, (kind, ha.get_extname(), r)
                same(ha.read(), hb.read(), f"{kind} {ha.get_extname()}")
    assert sorted(os.listdir(folder)) == sorted(
        f"{k}-{label}.fits" for k in ("frame", "model") for label in ("gpu_specter", "perfex")
    ), os.listdir(folder)
    print("write_frame / write_model / read_frame: the same files and dicts", flush=True)

    for reader in ("read_img", "read_frame"):
        wrong_kind = paths["perfex"] if reader == "read_img" else preproc  # lacks IMAGE / FLUX
        for target in (os.path.join(folder, "absent.fits"), wrong_kind):
            errors = []
            for module in (theirs, ours):
                try:
                    getattr(module, reader)(target)
                    errors.append(None)
                except Exception as e:
                    errors.append(e)
            assert all(isinstance(e, OSError) for e in errors), (reader, target, errors)
            print(f"{reader}({os.path.basename(target)}): OSError from both; perfex: {errors[1]}", flush=True)
    big = np.arange(4, dtype=">f8")
    assert np.array_equal(theirs.native_endian(big), ours.native_endian(big))
    import gpu_specter.core
    import gpu_specter.util
    import perfex.gpu_specter

    for module, names in (
        ("io", ("read_psf", "read_img", "write_frame", "write_model", "read_frame", "native_endian")),
        ("core", ("extract_frame",)),
        ("util", ("get_logger",)),
    ):
        for name in names:
            a = inspect.signature(getattr(getattr(gpu_specter, module), name))
            b = inspect.signature(getattr(getattr(perfex.gpu_specter, module), name))
            assert str(a) == str(b), (module, name, a, b)
    print("io, core.extract_frame, util.get_logger: gpu_specter's signatures", flush=True)
    assert ours.native_endian(big).dtype.isnative and ours.native_endian(big.astype("f8")).dtype.isnative


def main(argv):
    command, args = argv[0], argv[1:]
    if command == "test-core":
        test_core(*args)
    elif command == "test-extract":
        test_extract()
    elif command == "test-extract-drop-ins":
        test_extract(drop_ins=True)
    elif command == "desi-extract":
        desi_extract(args)
    elif command == "script":
        script(args[0], args[1:])
    elif command == "coordinators":
        coordinators()
    elif command == "io":
        compare_io(*args)
    else:
        sys.exit(f"clients.py: unknown command {command}")


if __name__ == "__main__":
    main(sys.argv[1:])
