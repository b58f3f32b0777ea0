"""Drop-ins under another package's name: one check and one sys.modules update for both
(perfex.gpu_specter and perfex.specter)."""

import sys

import perfex


def install(top, aliases):
    """Puts aliases ({module name: module}, top among them) into sys.modules. Raises perfex.Error
    when another module named top is already imported: its users would keep the other one.
    Returns the module names installed."""
    present = sys.modules.get(top)
    if present is not None and present is not aliases[top]:
        where = getattr(present, "__file__", None) or repr(present)
        raise perfex.Error(
            f"install_alias: {top} is already imported (from {where}); alias it before anything imports {top}"
        )
    sys.modules.update(aliases)
    return sorted(aliases)
