"""Slurm, for real: submit-time time limits, job-end reports, and a local test cluster.

- `job_submit.lua` (rendered by `config`): runs in slurmctld; for a batch job without --time it
  asks the service with one bounded `curl` and sets the answer as the time limit.
- the service answers it at `POST /v1/slurm/time-limit` (`deploy/service/slurm_route.py`, one line of text
  for the Lua plugin); nothing here imports the service.
- `timelimit`: the rule, ceil(margin x p90 of similar jobs' durations), capped by the partition.
- `hook`: what EpilogSlurmctld runs (stdlib only), and the client of the submit-time call.
- `slurmjob`: `scontrol show job` parsing, final status, GPUs, the launch command of a script.
- `lookup`: a job's log for `schedmate diagnose --job ID`.
- `localcluster`: a real single-node Slurm in a folder (tests, trying it out).
- `extend`: progress-aware extension of SchedMate-set limits (`schedmate slurm extend`).
- `user_requests`: a model of users' `--time` requests from the HPC literature (the simulator's).

Nothing is imported here, so the epilog hook starts without loading the rest of SchedMate.
"""
