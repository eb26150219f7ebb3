#!/usr/bin/env bash
# The three case studies at reduced scale, with and without the embedded LLM agents (same jobs,
# seed and cluster), so the README can say what the LLM changes. CPU generation is slow (a
# ReAct extraction takes ~1-2 min per artefact here), hence the small scale and, per case, the
# LLM only in the agent the case exercises: the advisor (Sia, Lucid; Lucid's tracker too) and
# the Failure Handler (standalone). Usage: bash scripts/llm_reduced.sh [OUT] [CASES]
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-results/llm-reduced}
CASES=${2:-sia,lucid,standalone}
SM=.venv/bin/schedmate
for mode in no-llm llm; do
  case ",$CASES," in *,sia,*)
    $SM experiment sia --seeds 1 --workloads philly/workload-1.csv --limit 24 --"$mode" --llm-modules advisor \
        --out "$OUT/sia-$mode" --cache-dir "$OUT/cache-$mode" --no-precomputed ;; esac
  case ",$CASES," in *,lucid,*)
    $SM experiment lucid --traces synthetic --jobs 12 --seeds 1 --sweep "" --gpus 8 --arms lucid,lucid+sm --history 12 \
        --"$mode" --llm-modules advisor,tracker --out "$OUT/lucid-$mode" --cache-dir "$OUT/cache-$mode" --no-precomputed ;; esac
  case ",$CASES," in *,standalone,*)
    $SM experiment standalone --trace synthetic --jobs 60 --seeds 1 --gpus 16 --resubmit-delays "" --detection-rates "" \
        --arms fifo,tiresias,schedmate-srpt,schedmate-srpt+fh --"$mode" --llm-modules failure \
        --out "$OUT/standalone-$mode" --cache-dir "$OUT/cache-$mode" --no-precomputed ;; esac
done
