"""Sphinx configuration of perfex's API reference (scripts/docs.sh builds it).

The Python pages are autodoc's, from the docstrings (numpydoc's format) of the perfex package
that PYTHONPATH reaches: a build's python folder, so the extension imports. The C++ page is
written by hand in Sphinx's C++ domain.
"""

import perfex

project = "perfex"
author = "the perfex developers"
copyright = "the perfex developers"
release = version = perfex.__version__

extensions = ["sphinx.ext.autodoc", "numpydoc"]

# numpydoc builds the member tables itself; autosummary's stubs would be generated files.
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
autodoc_member_order = "bysource"
# The signatures say what the defaults are; the types are in each docstring's Parameters.
autodoc_typehints = "none"

# Standard library, numpy, Kokkos and template parameters are not part of this reference;
# C++ namespaces and dependent names are no link targets; Phase is the context manager PhaseTimes.phase returns.
nitpick_ignore_regex = [
    ("py:class", r"(numpy|np|os|mpi4py|collections)\..*"),
    ("py:class", r"perfex\._perfex\.Phase"),
    ("cpp:identifier", r"(std|Kokkos)(::.*)?"),
    ("cpp:identifier", r"(ExecSpace|Psf|View|MemorySpace)(::.*)?"),
    ("cpp:identifier", r"(perfex::)?(psf|extract|io)"),
    ("cpp:identifier", r"psf::is_psf_model<Psf>(::value)?"),  # dependent: no target
]

html_theme = "alabaster"
html_title = f"perfex {release} API reference"
html_show_sourcelink = False
exclude_patterns = ["_build"]
