"""`schedmate slurm doctor`: run what slurmctld will run, as the user it runs it as, and say what fails.

The epilog and job_submit.lua run inside slurmctld as `SlurmUser`, not as the admin who installed
them. A virtualenv under a home folder SlurmUser cannot read made the epilog fail with
"Permission denied" while Slurm carried on, and no job was recorded. The doctor therefore runs,
as SlurmUser (through `runuser` when it runs as root): the installed epilog's interpreter with
the hook's `check` (token file, log file, scontrol, the service's /health), and the submit-time
call's curl against the service; and it checks that the files and slurm.conf lines are in place.
"""

from __future__ import annotations

import json
import os
import pwd
import re
import shlex
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from schedmate.deploy.slurm.config import HookConfig, hook_command

__all__ = ["Check", "run_checks", "slurm_user"]


@dataclass(frozen=True)
class Check:
    name: str
    status: str  # "ok" | "FAIL" | "skip"
    detail: str


def slurm_user(slurm_conf: Path) -> str:
    """SlurmUser from the running controller (`scontrol show config`), else slurm.conf, else root."""
    env = os.environ | {"SLURM_CONF": str(slurm_conf)}
    try:
        out = subprocess.run(["scontrol", "show", "config"], capture_output=True, text=True, timeout=10, env=env).stdout
        m = re.search(r"^SlurmUser\s*=\s*([^\s(]+)", out, re.M)
        if m:
            return m.group(1)
    except (OSError, subprocess.SubprocessError):
        pass
    try:
        m = re.search(r"^\s*SlurmUser\s*=\s*(\S+)", slurm_conf.read_text(encoding="utf-8", errors="replace"), re.M | re.I)
        if m:
            return m.group(1)
    except OSError:
        pass
    return "root"


def _as_user(user: str) -> list[str] | None:
    """The prefix that runs a command as `user`; None when this process cannot switch to it."""
    me = pwd.getpwuid(os.geteuid()).pw_name
    if user == me:
        return []
    if os.geteuid() == 0 and shutil.which("runuser"):
        return ["runuser", "-u", user, "--"]
    return None


def _run(argv: list[str], timeout: float) -> tuple[int, str, str]:
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
        return p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired:
        return 124, "", f"no answer within {timeout:g} s"
    except OSError as exc:
        return 127, "", exc.strerror or str(exc)


def run_checks(cfg: HookConfig, *, user: str | None = None, timeout: float = 30.0) -> list[Check]:
    """Every check, in the order slurmctld meets them; never raises."""
    conf_dir = cfg.slurm_conf.parent
    epilog = conf_dir / "schedmate-epilog.sh"
    lua = conf_dir / "job_submit.lua"
    user = user or slurm_user(cfg.slurm_conf)
    out: list[Check] = []
    try:
        pwd.getpwnam(user)
    except KeyError:
        return [Check("SlurmUser", "FAIL", f"user {user!r} does not exist here")]
    prefix = _as_user(user)
    out.append(Check("SlurmUser", "ok" if prefix is not None else "skip",
                     f"{user}" + ("" if prefix is not None else ": run the doctor as root (or as it) to check as it")))
    try:
        conf = cfg.slurm_conf.read_text(encoding="utf-8", errors="replace")
        wanted = {"JobSubmitPlugins=lua": re.search(r"^\s*JobSubmitPlugins\s*=.*\blua\b", conf, re.M | re.I),
                  f"EpilogSlurmctld={epilog}": re.search(rf"^\s*EpilogSlurmctld\s*=\s*{re.escape(str(epilog))}\s*$",
                                                         conf, re.M | re.I)}
        missing = [k for k, found in wanted.items() if not found]
        out.append(Check("slurm.conf", "FAIL" if missing else "ok",
                         f"{cfg.slurm_conf} lacks {', '.join(missing)}" if missing else f"{cfg.slurm_conf} has both lines"))
    except OSError as exc:
        out.append(Check("slurm.conf", "FAIL", f"{cfg.slurm_conf}: {exc.strerror or exc}"))
    for name, path in (("job_submit.lua", lua), ("epilog script", epilog)):
        if not path.is_file():
            out.append(Check(name, "FAIL", f"{path} not installed (`schedmate slurm config --write`)"))
        elif prefix is not None:
            test = "-r" if name == "job_submit.lua" else "-x"
            rc, _, err = _run([*prefix, "test", test, str(path)], timeout)
            out.append(Check(name, "ok" if rc == 0 else "FAIL",
                             f"{path} {'readable' if test == '-r' else 'executable'} by {user}" if rc == 0 else
                             f"{path} not {'readable' if test == '-r' else 'executable'} by {user} {err.strip()}".strip()))
        else:
            out.append(Check(name, "ok", f"{path} present"))
    if prefix is None:
        out.append(Check("epilog hook", "skip", f"cannot run as {user}"))
        out.append(Check("submit-time call", "skip", f"cannot run as {user}"))
        return out
    # the epilog's own command line, with `check` instead of `epilog --background`
    rc, stdout, stderr = _run([*prefix, *shlex.split(hook_command(cfg)), "check"], timeout)
    lines = [json.loads(ln) for ln in stdout.splitlines() if ln.startswith("{")]
    if not lines:  # the interpreter did not even start: the failure the epilog used to swallow
        why = (stderr.strip().splitlines() or [f"exit {rc}"])[-1]
        out.append(Check("epilog hook", "FAIL", f"{cfg.python} as {user}: {why}"))
    for ln in lines:
        out.append(Check(f"epilog: {ln['check']}", "ok" if ln["ok"] else "FAIL", ln["detail"]))
    curl = ["curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", f"{cfg.timeout_s:g}",
            cfg.url.rstrip("/") + "/health"]
    rc, stdout, stderr = _run([*prefix, *curl], timeout)
    ok = rc == 0 and stdout.strip() == "200"
    out.append(Check("submit-time call", "ok" if ok else "FAIL",
                     f"curl as {user} reached {cfg.url} within {cfg.timeout_s:g} s" if ok else
                     f"curl as {user} to {cfg.url}: {stderr.strip() or 'HTTP ' + stdout.strip()} "
                     "(submissions then keep Slurm's default time limit)"))
    if cfg.token_file is not None:
        rc, _, _ = _run([*prefix, "test", "-r", str(cfg.token_file)], timeout)
        out.append(Check("token file", "ok" if rc == 0 else "FAIL",
                         f"{cfg.token_file} {'readable' if rc == 0 else 'not readable'} by {user}"))
    return out
