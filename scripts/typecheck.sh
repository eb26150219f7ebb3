#!/usr/bin/env bash
# Type-check the whole `schedmate` namespace with mypy (config: [tool.mypy] in pyproject.toml).
# mypy has no notion of setuptools' package-dir mapping (agents/ is schedmate.agents, ...), so this
# builds a view of the namespace out of symlinks in a temporary folder and checks that.
# Usage: scripts/typecheck.sh [mypy args]     Prints mypy's report; exits non-zero on any error.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
view="$(mktemp -d)"
trap 'rm -rf "$view"' EXIT
mkdir -p "$view/schedmate"
for f in "$root"/schedmate/*; do ln -s "$f" "$view/schedmate/$(basename "$f")"; done
for d in agents embeddings adapters sim deploy schedulers dashboards evals synthetic; do ln -s "$root/$d" "$view/schedmate/$d"; done
cd "$view"
exec "$root/.venv/bin/python" -m mypy --config-file "$root/pyproject.toml" -p schedmate "$@"
