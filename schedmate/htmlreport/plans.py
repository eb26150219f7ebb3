"""A dry-run recovery plan (the Failure Handler's `RecoveryPlan`, as JSON) as steps a person reads.

The one description of a plan: the handler's dry run (`recovery.execute_plan`), the wire
`Diagnosis.plan_steps` (CLI, chat) and every report use these sentences. Works on the plan's JSON
form, so a report can show a plan without importing the agents."""

from __future__ import annotations

from typing import Any

DIAGNOSTIC_WHAT = {
    "nccl-tests": "NCCL all-reduce test across the node's GPUs",
    "dcgm-diag": "DCGM GPU diagnostic (`dcgmi diag -r 3`)",
    "nvlink-status": "NVLink status and error counters",
    "ib-check": "InfiniBand port and HCA check",
    "node-health": "node health check (kernel, mounts, daemons)",
    "storage-check": "read/write probe of the job's filesystems",
}


def plan_step(action: dict[str, Any]) -> str:
    """One action as a sentence (markdown-ish); an unknown kind is still shown, field by field."""
    kind = action.get("kind")
    cond = "If a diagnostic on it fails, " if action.get("when") == "diagnostic_failed" else ""
    if kind == "run_diagnostic":
        d = str(action.get("diagnostic"))
        return f"Run `{d}` on node `{action.get('node')}`: {DIAGNOSTIC_WHAT.get(d, 'diagnostic')}."
    if kind == "cordon_node":
        return f"{cond or 'Then '}cordon node `{action.get('node')}` so no new job lands on it."
    if kind == "resubmit_from_checkpoint":
        ckpt = action.get("checkpoint")
        src = f"checkpoint `{ckpt}`" if ckpt else "the beginning (no checkpoint known)"
        avoid = ", avoiding cordoned nodes" if action.get("exclude_cordoned") else ""
        return f"{cond[:1].upper() + cond[1:] if cond else ''}Resubmit job `{action.get('job_id')}` from {src}{avoid}."
    fields = ", ".join(f"{k} `{v}`" for k, v in action.items() if k != "kind")
    return f"{str(kind).replace('_', ' ').capitalize()}: {fields}."


def plan_steps(plan: dict[str, Any] | None) -> list[str]:
    if not plan:
        return []
    return [plan_step(a) for a in plan.get("actions") or []]
