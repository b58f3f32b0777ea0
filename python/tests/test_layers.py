"""The package's layers import one way: where messages go and the optional dependencies (logs,
extras) -> extension -> runtime -> {profiling, options, the MPI helpers} -> the numpy API (psf,
images, frames, extraction) -> a frame over MPI ranks -> the choice between this process and
the ranks (dispatch) -> a frame's files -> an exposure -> {command line, gpu_specter and
specter drop-ins, plot, the package's front}; no module imports one of a later layer, not even
inside a function, so there is no import cycle. The extension's source files mirror the
modules: python/src/<module>.cpp for each module that has C++ behind it, and only those modules
call the extension; no module uses another's private names."""

import ast
import os
import subprocess
import sys

import perfex
import pytest

PACKAGE = os.path.dirname(perfex.__file__)
LAYERS = [
    {"logs", "extras"},
    {"_perfex"},
    {"runtime"},
    {"profiling", "options", "collective"},
    {"psf", "images", "frames"},
    {"extraction"},
    {"mpi"},
    {"dispatch"},
    {"files"},
    {"exposure"},
    {"cli"},
    {
        "aliases",
        "extract",
        "plot",
        "gpu_specter",
        "gpu_specter.core",
        "gpu_specter.io",
        "gpu_specter.mpi",
        "gpu_specter.spex",
        "gpu_specter.util",
        "specter",
        "specter.dense",
        "specter.extract",
        "specter.psf",
        "specter.util",
        "specter.util.traceset",
        "specter.util.util",
        "",
        "__main__",
    },
]
LAYER = {name: n for n, names in enumerate(LAYERS) for name in names}  # "": perfex/__init__.py


def modules():
    """(module name relative to perfex, is a package's __init__, path) of every .py file."""
    for root, _, files in os.walk(PACKAGE):
        for f in sorted(files):
            if f.endswith(".py"):
                parts = os.path.relpath(os.path.join(root, f), PACKAGE)[:-3].split(os.sep)
                package = parts[-1] == "__init__"
                yield ".".join(parts[:-1] if package else parts), package, os.path.join(root, f)


def imports(module, package, path):
    """The perfex modules a module imports (every import statement, in functions too)."""
    here = module.split(".") if module else []
    if not package:
        here = here[:-1]
    for node in ast.walk(ast.parse(open(path).read())):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name == "perfex" or a.name.startswith("perfex."):
                    yield a.name[len("perfex.") :] if "." in a.name else ""
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = here[: len(here) - (node.level - 1)] + (node.module.split(".") if node.module else [])
            elif node.module and (node.module == "perfex" or node.module.startswith("perfex.")):
                parts = node.module.split(".")[1:]
            else:
                continue
            base = ".".join(parts)
            for a in node.names:
                sub = f"{base}.{a.name}" if base else a.name
                yield sub if sub in LAYER else base


def test_every_module_is_in_a_layer():
    found = {m for m, _, _ in modules()}
    assert found <= set(LAYER), found - set(LAYER)


def test_imports_go_one_way():
    for module, package, path in modules():
        for target in imports(module, package, path):
            if target == module:
                continue
            assert target in LAYER, f"perfex.{module} imports unknown perfex.{target}"
            assert LAYER[target] <= LAYER[module], (
                f"perfex.{module or '__init__'} (layer {LAYER[module]}) imports perfex.{target or '__init__'} "
                f"(layer {LAYER[target]})"
            )


def test_one_process_loads_no_mpi_driver():
    """The front ends of one process (the package, a frame's files, an exposure, the command
    line, the drop-ins) import perfex.mpi only when a communicator has more than one rank."""
    fronts = "perfex, perfex.files, perfex.exposure, perfex.cli, perfex.gpu_specter.spex"
    script = f"import sys, {fronts}\nprint('perfex.mpi' in sys.modules)"
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout.strip() == "False", r.stdout + r.stderr


def test_bindings_mirror_the_modules():
    """Each source file of the extension (but module.cpp, which assembles them) is named after
    the module of the package that it serves."""
    sources = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src")
    if not os.path.isdir(sources):
        pytest.skip("the extension's sources are not beside the tests")
    names = {f[:-4] for f in os.listdir(sources) if f.endswith(".cpp")} - {"module"}
    assert names <= set(LAYER), names - set(LAYER)


def extension_modules():
    """The modules with C++ behind them (python/src/<module>.cpp, module.cpp aside)."""
    sources = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src")
    if not os.path.isdir(sources):
        pytest.skip("the extension's sources are not beside the tests")
    return {f[:-4] for f in os.listdir(sources) if f.endswith(".cpp")} - {"module"}


def dotted(node):
    """ "a.b.c" of an attribute chain on a name, else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    return ".".join([node.id] + parts[::-1]) if isinstance(node, ast.Name) else None


def private(name):
    return name.startswith("_") and not name.endswith("__")


def test_no_private_names_across_modules():
    """A module uses another's public API only: no `from .images import _as_float64`, no
    perfex.options._DEFAULTS; the extension (perfex._perfex) is called by the modules it serves
    alone, the others take only the package's public names from it (perfex.Error, ...)."""
    serving = extension_modules()
    for module, _, path in modules():
        for node in ast.walk(ast.parse(open(path).read())):
            where = f"perfex.{module or '__init__'}, line {getattr(node, 'lineno', 0)}"
            if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").startswith("perfex")):
                source = (node.module or "").split(".")[-1]
                for a in node.names:
                    assert not private(a.name) or a.name == "_perfex", f"{where}: imports {a.name}"
                    if source == "_perfex" and module not in serving:
                        assert a.name in perfex.__all__, f"{where}: takes {a.name} from the extension"
                    if a.name == "_perfex":
                        assert module in serving, f"{where}: imports the extension"
            elif isinstance(node, ast.Attribute) and (chain := dotted(node)):
                names = chain.split(".")
                if names[0] == "perfex" and len(names) > 2:
                    assert not any(private(n) for n in names[1:]), f"{where}: uses {chain}"
