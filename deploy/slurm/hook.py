"""What slurmctld runs at a job's end (EpilogSlurmctld), and the client of the submit-time call.

    python -I -m schedmate.deploy.slurm.hook [--url U] epilog [--job ID] [--background]

Standard library only: it runs once per job on the controller, where the full CLI's imports
(typer, rich, pydantic) would be wasted. It reports the job's end (state, exit code, run time,
log) to a running `schedmate serve` and writes one JSON line to the log file saying what the
service kept. On any failure the reason is logged, never raised.

`ask_time_limit` posts to `/v1/slurm/time-limit` what job_submit.lua posts with curl (the plugin
itself does not run Python: see README "Why a job_submit.lua plugin").
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from schedmate.defaults import SERVICE_URL, TOKEN_ENV
from schedmate.deploy.slurm.slurmjob import (
    ScontrolError,
    SlurmJob,
    batch_script,
    final_status,
    gpus_requested,
    launch_command,
    show_job,
)
from schedmate.deploy.slurm.timelimit import DEFAULT_MARGIN, Decision
from schedmate.errors import DependencyUnavailable

__all__ = ["DEFAULT_TIMEOUT_S", "DEFAULT_URL", "Service", "ServiceCallError", "ask_time_limit", "job_key",
           "report_end", "main"]

DEFAULT_URL = SERVICE_URL
DEFAULT_TIMEOUT_S = 2.0  # the submit-time call (job_submit.lua's curl --max-time)
TIME_LIMIT_PATH = "/v1/slurm/time-limit"
JOB_PREFIX = "slurm-"  # job ids in SchedMate's history, as `schedmate history ingest` names sacct rows


class ServiceCallError(DependencyUnavailable):
    """The service did not answer 200 (status None: no HTTP answer at all)."""

    def __init__(self, status: int | None, reason: str) -> None:
        super().__init__(f"{status or 'no answer'}: {reason}")
        self.status = status
        self.reason = reason


@dataclass(frozen=True)
class Service:
    """Where `schedmate serve` listens, and how long one call may take."""

    url: str = DEFAULT_URL
    token: str | None = None
    timeout_s: float = DEFAULT_TIMEOUT_S
    retries: int = 0  # 429/503 answers retried after a pause (the epilog can wait; the submit path cannot)

    def post(self, op: str, body: dict[str, Any]) -> dict[str, Any]:
        return json.loads(self.post_raw(f"/v1/{op}", body))

    def post_raw(self, path: str, body: dict[str, Any]) -> bytes:
        data = json.dumps({k: v for k, v in body.items() if v is not None}).encode()
        headers = {"Content-Type": "application/json"}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        for attempt in range(self.retries + 1):
            req = urllib.request.Request(f"{self.url.rstrip('/')}{path}", data=data, headers=headers, method="POST")
            try:
                with urllib.request.urlopen(req, timeout=self.timeout_s) as resp:
                    return resp.read()
            except urllib.error.HTTPError as exc:
                reason = _reason(exc)
                if exc.code not in (429, 503) or attempt == self.retries:
                    raise ServiceCallError(exc.code, reason) from None
                time.sleep(min(5.0, float(exc.headers.get("Retry-After") or 1)))
            except (urllib.error.URLError, OSError, ValueError) as exc:
                raise ServiceCallError(None, f"{type(exc).__name__}: {getattr(exc, 'reason', exc)}") from None
        raise AssertionError("unreachable")


def _reason(exc: urllib.error.HTTPError) -> str:
    try:
        body = json.loads(exc.read() or b"{}")
    except ValueError:
        body = {}
    if not isinstance(body, dict):
        body = {}
    return str(body.get("reason") or body.get("detail") or exc.reason)[:300]


def job_key(job_id: str) -> str:
    """SchedMate's id of Slurm job `job_id` (accepts `123` or `slurm-123`)."""
    job_id = str(job_id).strip()
    return job_id if job_id.startswith(JOB_PREFIX) else f"{JOB_PREFIX}{job_id}"


# ----------------------------------------------------------------------------- submit time


def ask_time_limit(service: Service, *, script: str, work_dir: str, tres_per_node: str = "", tres_per_job: str = "",
                   nodes: int | None = None, user: str | None = None, max_minutes: int | None = None,
                   margin: float = DEFAULT_MARGIN) -> Decision:
    """The service's answer to job_submit.lua's question for this job; never raises."""
    body = {"work_dir": work_dir, "script": script, "tres_per_node": tres_per_node, "tres_per_job": tres_per_job,
            "nodes": nodes, "user": user, "max_minutes": max_minutes, "margin": margin}
    try:
        text = service.post_raw(TIME_LIMIT_PATH, body).decode("utf-8", "replace")
    except ServiceCallError as exc:
        return Decision(None, f"SchedMate service {exc}")
    return Decision.parse(text)


# ----------------------------------------------------------------------------- epilog


def report_end(service: Service, job: SlurmJob, script: str | None) -> dict[str, Any]:
    """Tell the service how `job` ended; returns what was kept (for the hook's log line).

    The job is registered (fingerprint of its script in its working directory, with its log) and
    its outcome recorded, so later similar submissions get estimates; a failed job's log is
    diagnosed and kept as failure history. A job with no fingerprint is not job history, but a
    failure of it is still reported (`/v1/failures/report`), so `diagnose --job` finds its log.
    """
    key = job_key(job.job_id)
    status = final_status(job)
    log = job.log_for(status)
    out: dict[str, Any] = {"job_id": key, "slurm_state": job.state, "status": status, "exit_code": job.exit_code,
                           "signal": job.signal, "duration_s": job.run_time_s, "log": log, "stored": False}
    stored = False
    if script and job.work_dir:
        try:
            ack = service.post("jobs/register", {
                "job_id": key, "repo": job.work_dir, "command": launch_command(script),
                "gpus": gpus_requested(job.tres_per_node, job.num_nodes), "nodes": job.num_nodes,
                "user": job.user, "log": log})
            stored = bool(ack.get("stored"))
            if not stored:
                out["history"] = ack.get("reason")
        except ServiceCallError as exc:
            out["history"] = f"register: {exc}"
    else:
        out["history"] = "no batch script or working directory: not job history"
    try:
        if stored:
            ack = service.post("jobs/end", {"job_id": key, "status": status, "duration_s": job.run_time_s,
                                            "log": log if status == "failed" else None})
            out["stored"] = bool(ack.get("stored"))
            out["records"] = ack.get("records")
        elif status == "failed" and log:
            ack = service.post("failures/report", {"job_id": key, "log": log})
            out["failure_stored"] = bool(ack.get("stored"))
        else:
            return out
    except ServiceCallError as exc:
        out["error"] = str(exc)
        return out
    d = ack.get("diagnosis") or {}
    if d:
        out["diagnosis"] = {k: d.get(k) for k in ("status", "category", "reason_code", "line", "root_cause")}
    return out


def wait_settled(job_id: str, settle_s: float, poll_s: float = 0.5) -> SlurmJob:
    """`scontrol show job` once the job left COMPLETING (or as it is when `settle_s` ran out)."""
    deadline = time.monotonic() + settle_s
    job = show_job(job_id)
    while not job.settled and time.monotonic() < deadline:
        time.sleep(poll_s)
        job = show_job(job_id)
    return job


def _daemonize() -> bool:
    """Detach (double fork, new session) so EpilogSlurmctld returns at once; True in the child."""
    if os.fork() > 0:
        return False
    os.setsid()
    if os.fork() > 0:
        os._exit(0)
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    return True


# ----------------------------------------------------------------------------- command line


def _log(path: Path | None, record: dict[str, Any]) -> None:
    line = json.dumps({"time": time.strftime("%Y-%m-%dT%H:%M:%S"), **record}, default=str)
    if path is None:
        print(line, file=sys.stderr)
        return
    with path.open("a", encoding="utf-8") as fh:
        fh.write(line + "\n")


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="schedmate.deploy.slurm.hook", description=__doc__.splitlines()[0])
    ap.add_argument("--url", default=DEFAULT_URL, help="the SchedMate service")
    ap.add_argument("--token-file", type=Path, help="file holding the service's bearer token")
    ap.add_argument("--timeout", type=float, default=30.0, help="seconds per HTTP call")
    ap.add_argument("--log-file", type=Path, help="append one JSON line per call here (default: stderr)")
    sub = ap.add_subparsers(dest="cmd", required=True)
    epi = sub.add_parser("epilog", help="report a finished job (EpilogSlurmctld)")
    epi.add_argument("--job", default=os.environ.get("SLURM_JOB_ID"), help="default: $SLURM_JOB_ID")
    epi.add_argument("--background", action="store_true", help="return at once; report from a detached process")
    epi.add_argument("--settle", type=float, default=30.0, help="seconds to wait for the job's final state")
    epi.add_argument("--retries", type=int, default=3, help="retries of a 429/503 answer")
    sub.add_parser("check", help="what the epilog needs, checked as the user running it (`schedmate slurm doctor`)")
    return ap


def check(args: argparse.Namespace) -> int:
    """One JSON line per precondition of recording a job (token, log file, scontrol, service);
    exit 1 when any fails. Run by `schedmate slurm doctor` as SlurmUser with the epilog's flags."""
    import shutil

    results: list[tuple[str, bool, str]] = [("interpreter", True, f"{sys.executable} runs and imports the hook")]
    if args.token_file is not None:
        try:
            ok = bool(args.token_file.read_text().strip())
            results.append(("token file", ok, f"{args.token_file} " + ("readable" if ok else "is empty")))
        except OSError as exc:
            results.append(("token file", False, f"{args.token_file}: {exc.strerror or exc}"))
    if args.log_file is not None:
        try:
            with args.log_file.open("a", encoding="utf-8"):
                pass
            results.append(("log file", True, f"{args.log_file} writable"))
        except OSError as exc:
            results.append(("log file", False, f"{args.log_file}: {exc.strerror or exc}"))
    found = shutil.which("scontrol")
    results.append(("scontrol", found is not None, found or "scontrol not on PATH: the epilog cannot read the job"))
    try:
        with urllib.request.urlopen(args.url.rstrip("/") + "/health", timeout=args.timeout) as resp:
            results.append(("service", resp.status == 200, f"{args.url} /health answered {resp.status}"))
    except (urllib.error.URLError, OSError) as exc:
        results.append(("service", False, f"{args.url} unreachable: {getattr(exc, 'reason', exc)}"))
    for name, ok, detail in results:
        print(json.dumps({"check": name, "ok": ok, "detail": detail}))
    return 0 if all(ok for _, ok, _ in results) else 1


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.cmd == "check":
        return check(args)
    token = os.environ.get(TOKEN_ENV)
    if args.token_file is not None:
        try:
            token = args.token_file.read_text().strip() or token
        except OSError as exc:  # every report would be refused (401): fail loudly, do not lose jobs quietly
            _log(args.log_file, {"event": args.cmd, "error": f"token file: {exc}"})
            return 3
    if not args.job:
        _log(args.log_file, {"event": "epilog", "error": "no job id (--job or $SLURM_JOB_ID)"})
        return 0
    if args.background and not _daemonize():
        return 0
    service = Service(args.url, token, args.timeout, retries=args.retries)
    try:
        script: str | None = batch_script(args.job)  # first: Slurm drops it once the job is done
    except ScontrolError as exc:
        script = None
        _log(args.log_file, {"event": "epilog", "job_id": job_key(args.job), "note": f"no batch script: {exc}"})
    try:
        job = wait_settled(args.job, args.settle)
    except ScontrolError as exc:
        _log(args.log_file, {"event": "epilog", "job_id": job_key(args.job), "error": str(exc)})
        return 0
    _log(args.log_file, {"event": "epilog", **report_end(service, job, script)})
    return 0


if __name__ == "__main__":
    sys.exit(main())
