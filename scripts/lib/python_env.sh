# Sourced by install-deps.sh: the project's Python environment from the package index, a
# virtual environment of Debian's python3 with python/requirements/dev.txt (numpy 2, pybind11,
# mpi4py 4, desispec, ruff, pybind11-stubgen, ...) and docs.txt (Sphinx, numpydoc), made once
# per version of those files in DEPS/venv-<hash> and reached through the link DEPS/venv.

python_env_log() { echo "[perfex-deps] $*" >&2; }

# python_env DEPS REQUIREMENTS... → prints the environment's folder (DEPS/venv).
python_env() {
  local deps=$1
  shift
  local base=/usr/bin/python3
  [ -x "$base" ] || base=$(command -v python3)
  local key requirements=() file
  for file in "$@"; do requirements+=(-r "$file"); done
  key=$({ cat "$@"; "$base" -c 'import sys; print(sys.version)'; } | sha256sum | cut -c1-12)
  local env="${deps}/venv-${key}"
  if [ ! -f "${env}/.perfex-complete" ]; then
    local logf="${env}.log" t0=$SECONDS
    rm -rf "$env"
    python_env_log "making the Python environment ${env} from the package index (log: ${logf})"
    if ! { "$base" -m venv "$env" && "$env/bin/python" -m pip install --disable-pip-version-check \
             "${requirements[@]}"; } >"$logf" 2>&1; then
      tail -n 30 "$logf" >&2
      python_env_log "could not make the Python environment from the package index (see ${logf});" \
                     "the Python package needs it (pybind11 >= 2.12). PERFEX_PYTHON_ENV=OFF skips it."
      rm -rf "$env"
      return 1
    fi
    "$env/bin/python" -m pip freeze >"${env}/requirements-frozen.txt" 2>/dev/null || true
    echo "$key" >"${env}/.perfex-complete"
    python_env_log "Python environment ready in $((SECONDS - t0)) s"
  fi
  ln -sfn "venv-${key}" "${deps}/venv"
  echo "${deps}/venv"
}
