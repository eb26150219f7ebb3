#!/usr/bin/env bash
# The three case studies at reduced scale, with and without the embedded LLM agents (same jobs,
# seed and cluster), so the README can say what the LLM changes. CPU generation is slow (about
# 5-100 s per agent call here), hence the small scale. Usage: bash scripts/llm_reduced.sh [OUT]
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-results/llm-reduced}
SM=.venv/bin/schedmate
for mode in no-llm llm; do
  $SM experiment sia --seeds 1 --workloads philly/workload-1.csv --limit 24 --"$mode" \
      --out "$OUT/sia-$mode" --cache-dir "$OUT/cache-$mode" --no-precomputed
  $SM experiment lucid --traces synthetic --jobs 40 --seeds 1 --sweep "" --gpus 16 --arms lucid,lucid+sm \
      --"$mode" --out "$OUT/lucid-$mode" --cache-dir "$OUT/cache-$mode" --no-precomputed
  $SM experiment standalone --trace synthetic --jobs 60 --seeds 1 --gpus 16 --resubmit-delays "" --detection-rates "" \
      --arms fifo,tiresias,schedmate-srpt,schedmate-srpt+fh --"$mode" --out "$OUT/standalone-$mode" \
      --cache-dir "$OUT/cache-$mode" --no-precomputed
done
