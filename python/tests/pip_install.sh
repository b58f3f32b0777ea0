#!/usr/bin/env bash
# CTest python.pip_install: `pip install --no-build-isolation SOURCE` into a fresh virtual
# environment that sees the system's packages (as docs/python.md says), then that install
# extracts. Usage: pip_install.sh VENV-FOLDER SOURCE-FOLDER PYTHON [PSF IMAGE]
set -euo pipefail
venv=$1 source=$2 python=$3
rm -rf "$venv"
"$python" -m venv --system-site-packages "$venv"
PERFEX_BUILD_JOBS=${PERFEX_BUILD_JOBS:-2} "$venv/bin/pip" install --no-build-isolation --no-index \
  --quiet "$source"
cd "$venv"  # away from the source tree: the installed package must be the one imported
"$venv/bin/python" - "$venv" "${4:-}" "${5:-}" <<'PY'
import os, sys
import perfex
venv, psf, image = sys.argv[1:4]
assert perfex.__file__.startswith(venv), perfex.__file__
perfex.initialize(1)
if not psf or not os.path.exists(psf):
    print(f"pip_install: perfex {perfex.__version__} imported from {venv}; extraction SKIPPED "
          "(reference data ../shared/data absent)")
    sys.exit(0)
pre = perfex.read_preproc(image)
frame = perfex.extract_frame(pre.pixels, pre.ivar, perfex.read_psf(psf), wavelength="5760,5800,0.8",
                             specmin=0, nspec=5, psferr=0.01, progress=False)
assert frame.npatches == 10 and frame.failed_patches == 0, frame
print(f"pip_install: perfex {perfex.__version__} from {venv} extracted {frame}")
PY
