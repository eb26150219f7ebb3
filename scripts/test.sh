#!/usr/bin/env bash
# The default test run (fast; slow LLM-generation tests are excluded by pytest's addopts).
# Usage: scripts/test.sh [pytest args]    Slow tests: scripts/test.sh -m slow
set -euo pipefail
cd "$(dirname "$0")/.."
exec .venv/bin/python -m pytest "$@"
