#!/usr/bin/env bash
# Installs what cfeval needs on a fresh Debian machine with a Rust toolchain.
# Idempotent: each step checks first and does nothing when already done.
#
#   - Debian packages for native builds (only those missing; needs root or sudo)
#   - a Python virtual environment at .venv with the Parquet readers the
#     checks use (pyarrow, polars, duckdb) and numpy for the baselines
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

apt_packages=()
missing=()
for package in "${apt_packages[@]}"; do
  dpkg -s "$package" >/dev/null 2>&1 || missing+=("$package")
done
if ((${#missing[@]})); then
  sudo=""
  [[ $(id -u) -eq 0 ]] || sudo="sudo"
  echo "installing Debian packages: ${missing[*]}" >&2
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi

python_packages=(pyarrow==26.0.1 polars==2.1.0 duckdb==2.0.1 numpy==2.4.6)
venv="$root/.venv"
if [[ ! -x "$venv/bin/python" ]]; then
  echo "creating Python environment at $venv" >&2
  python3 -m venv "$venv"
fi
if ! "$venv/bin/python" - "${python_packages[@]}" <<'PY' >/dev/null 2>&1
import sys
from importlib.metadata import version
for spec in sys.argv[1:]:
    name, wanted = spec.split("==")
    if version(name) != wanted:
        raise SystemExit(1)
PY
then
  echo "installing Python packages: ${python_packages[*]}" >&2
  "$venv/bin/python" -m pip install -q --disable-pip-version-check "${python_packages[@]}"
fi
