"""Suika (EuroSys '26): incremental rescheduling of 3D-parallel LLM training jobs (spec: shared/specs/suika.md).

`model` (iteration time and memory), `planner` (affinity prefixes, expand-and-balance), `redeploy`
(device-to-device vs checkpoint-restart), `policy` (SCHEDULE and the baselines), `workload`
(the §5.2 trace), `experiment` (the reproduction check) and `timing` (decision time per round).
Importing this package imports nothing heavy; import the submodule you need.
"""
