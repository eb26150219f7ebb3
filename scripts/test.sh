#!/usr/bin/env bash
# The default test run (fast; slow LLM-generation tests are excluded by pytest's addopts).
# Usage: scripts/test.sh [pytest args]    Slow tests: scripts/test.sh -m slow
#
# Test files run in parallel on SCHEDMATE_TEST_WORKERS processes (default: one per core plus one, at
# most 4: many tests wait on a server or a subprocess, and on 2 cores a third worker fills that idle
# time: 4 min 56 s and 5 min 6 s in two runs (wall), against 5 min 24 s with two workers, quiet 2-core VM),
# one file per worker at a time (--dist loadfile) so module-scoped servers stay in one process, handed
# out in collection order (--no-loadscope-reorder): tests/conftest.py puts the long-wall files
# (LONG_WALL_FILES) first so that none of them is left running alone at the end.
# Every test that starts a server (redis, Slurm, llama.cpp, uvicorn) takes free loopback ports and
# its own tmp folder, so workers never collide. SCHEDMATE_TEST_WORKERS=0 runs serially; the slow step
# does, since its tests each drive the one local LLM and would only contend for the cores.
set -euo pipefail
cd "$(dirname "$0")/.."
workers="${SCHEDMATE_TEST_WORKERS:-}"
if [ -z "$workers" ]; then
  workers=$(( $(nproc 2>/dev/null || echo 1) + 1 ))
  [ "$workers" -gt 4 ] && workers=4
  for arg in "$@"; do [ "$arg" = "slow" ] && workers=0; done
fi
if [ "$workers" -gt 1 ] && .venv/bin/python -c "import xdist" 2>/dev/null; then
  exec .venv/bin/python -m pytest -n "$workers" --dist loadfile --no-loadscope-reorder "$@"
fi
exec .venv/bin/python -m pytest "$@"
