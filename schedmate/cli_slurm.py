"""Slurm integration commands (deploy/slurm/): submit-time estimate and epilog reporting.

`schedmate slurm config` prints (or writes) what to install; `slurm estimate` shows the time limit a
script would get (the same service call job_submit.lua makes with curl); `slurm epilog` reports a
finished job by hand, as the EpilogSlurmctld hook (`python -m schedmate.deploy.slurm.hook`) does.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from schedmate.defaults import SERVICE_URL, TOKEN_ENV
from schedmate.errors import BadInput, DependencyUnavailable, NotFound

if TYPE_CHECKING:
    from schedmate.deploy.slurm.config import HookConfig

slurm_app = typer.Typer(help="Slurm: time limits from SchedMate's estimates, job ends reported by an epilog.",
                        no_args_is_help=True)

UrlOpt = Annotated[str, typer.Option(help="The SchedMate service (`schedmate serve`).")]
TokenFileOpt = Annotated[Path | None, typer.Option(help="File holding the service's bearer token.")]


@slurm_app.command("config")
def config(
    url: UrlOpt = SERVICE_URL,
    python: Annotated[str, typer.Option(help="Python with SchedMate installed, for the epilog.")] = sys.executable,
    token_file: TokenFileOpt = None,
    timeout: Annotated[float, typer.Option(help="Seconds the submit-time call may take (curl --max-time).",
                                           min=0.1)] = 2.0,
    margin: Annotated[float, typer.Option(help="Time limit = ceil(margin x p90 of similar jobs' durations).",
                                          min=1.0)] = 1.2,
    log_file: Annotated[Path | None, typer.Option(help="Hook log (one JSON line per estimate / job end).")] = Path(
        "/var/log/slurm/schedmate-hook.log"),
    slurm_conf: Annotated[Path, typer.Option(help="slurm.conf (job_submit.lua goes beside it).")] = Path(
        "/etc/slurm/slurm.conf"),
    write: Annotated[bool, typer.Option("--write", help="Write job_submit.lua and the epilog beside slurm.conf "
                                                        "instead of printing them.")] = False,
    check: Annotated[bool, typer.Option("--check", help="Run the installed epilog and the submit-time call as "
                                                        "SlurmUser and report what would fail (`slurm doctor`).")] = False,
    slurm_user: Annotated[str | None, typer.Option(help="Check as this user (default: SlurmUser).")] = None,
) -> None:
    """The slurm.conf lines, job_submit.lua and the EpilogSlurmctld script to install."""
    from schedmate.deploy.slurm.config import (
        HookConfig,
        epilog_script,
        job_submit_lua,
        slurm_conf_lines,
        write_files,
    )

    cfg = HookConfig(url=url, python=python, token_file=token_file, timeout_s=timeout, margin=margin,
                     log_file=log_file, slurm_conf=slurm_conf)
    if check:
        _doctor(cfg, slurm_user)
        return
    epilog = slurm_conf.parent / "schedmate-epilog.sh"
    if write:
        if not slurm_conf.parent.is_dir():
            raise NotFound(f"no such folder: {slurm_conf.parent}")
        paths = write_files(cfg, slurm_conf.parent, epilog)
        typer.echo(f"wrote {paths['job_submit.lua']} and {paths['epilog']}; add to {slurm_conf}:")
        typer.echo("\n".join(slurm_conf_lines(epilog)))
        typer.echo("then `scontrol reconfigure`")
        return
    typer.echo(f"# --- add to {slurm_conf}, then `scontrol reconfigure`")
    typer.echo("\n".join(slurm_conf_lines(epilog)))
    typer.echo(f"\n# --- {slurm_conf.parent / 'job_submit.lua'}")
    typer.echo(job_submit_lua(cfg))
    typer.echo(f"# --- {epilog} (mode 0755)")
    typer.echo(epilog_script(cfg))


def _doctor(cfg: HookConfig, user: str | None, as_json: bool = False) -> None:
    from schedmate.deploy.slurm.doctor import run_checks

    checks = run_checks(cfg, user=user)
    if as_json:
        print(json.dumps([c.__dict__ for c in checks]))
    else:
        for c in checks:
            typer.echo(f"{c.status:4s}  {c.name}: {c.detail}")
    failed = [c.name for c in checks if c.status == "FAIL"]
    if not as_json:
        typer.echo(f"{len(failed)} check(s) failed: {', '.join(failed)}" if failed else "all checks passed")
    if failed:
        raise typer.Exit(code=1)


@slurm_app.command("doctor")
def doctor(
    url: UrlOpt = SERVICE_URL,
    python: Annotated[str, typer.Option(help="The Python the epilog runs.")] = sys.executable,
    token_file: TokenFileOpt = None,
    timeout: Annotated[float, typer.Option(help="Seconds the submit-time call may take.", min=0.1)] = 2.0,
    log_file: Annotated[Path | None, typer.Option(help="The hook's log file.")] = Path("/var/log/slurm/schedmate-hook.log"),
    slurm_conf: Annotated[Path, typer.Option(help="slurm.conf (job_submit.lua and the epilog beside it).")] = Path(
        "/etc/slurm/slurm.conf"),
    slurm_user: Annotated[str | None, typer.Option(help="Check as this user (default: SlurmUser).")] = None,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Run the epilog's hook and the submit-time call as SlurmUser; say what would fail (exit 1 if anything)."""
    from schedmate.deploy.slurm.config import HookConfig

    _doctor(HookConfig(url=url, python=python, token_file=token_file, timeout_s=timeout, log_file=log_file,
                       slurm_conf=slurm_conf), slurm_user, as_json)


@slurm_app.command("estimate")
def estimate(
    script: Annotated[Path, typer.Argument(help="The batch script, as it would be submitted.")],
    work_dir: Annotated[Path | None, typer.Option(help="Where it would be submitted from (default: its folder).")] = None,
    gpus: Annotated[int | None, typer.Option(help="GPUs (default: from its #SBATCH --gres line).", min=1)] = None,
    url: UrlOpt = SERVICE_URL,
    token_file: TokenFileOpt = None,
    timeout: Annotated[float, typer.Option(help="Seconds for the call.", min=0.1)] = 10.0,
    margin: Annotated[float, typer.Option(min=1.0)] = 1.2,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """The time limit job_submit.lua would give SCRIPT if submitted without --time."""
    import re

    from schedmate.deploy.slurm.hook import Service, ask_time_limit

    if not script.is_file():
        raise NotFound(f"script not found: {script}")
    text = script.read_text(encoding="utf-8", errors="replace")
    tres = ""
    if gpus is not None:
        tres = f"gres:gpu:{gpus}"
    elif gres := re.search(r"^#SBATCH\s+--gres[= ](\S+)", text, re.M):
        tres = gres.group(1)
    folder = (work_dir or script.parent).resolve()
    decision = ask_time_limit(Service(url, _token(token_file), timeout), script=text, work_dir=str(folder),
                              tres_per_node=tres, margin=margin)
    if as_json:
        print(json.dumps({"minutes": decision.minutes, "note": decision.note, "work_dir": str(folder), "tres": tres}))
    elif decision.minutes is None:
        typer.echo(f"no time limit from SchedMate (Slurm's default stays): {decision.note}")
    else:
        typer.echo(f"--time={decision.minutes}  ({decision.note})")


@slurm_app.command("epilog")
def epilog(
    job: Annotated[str, typer.Option("--job", help="Slurm job id (still known to slurmctld).")],
    url: UrlOpt = SERVICE_URL,
    token_file: TokenFileOpt = None,
    timeout: Annotated[float, typer.Option(min=0.1)] = 60.0,
) -> None:
    """Report a finished job's end to the service, as EpilogSlurmctld does (prints what was kept)."""
    from schedmate.deploy.slurm.hook import Service, report_end
    from schedmate.deploy.slurm.slurmjob import batch_script, show_job

    job_info = show_job(job)  # scontrol missing or failing: ScontrolError, a DependencyUnavailable
    script = batch_script(job)
    if not job_info.settled:
        raise BadInput(f"job {job} is {job_info.state}: report it once it has ended")
    print(json.dumps(report_end(Service(url, _token(token_file), timeout, retries=3), job_info, script), default=str))


@slurm_app.command("extend")
def extend(
    enable: Annotated[bool, typer.Option("--enable", help="Change limits (default: dry-run, decisions logged only).")] = False,
    cap_hours: Annotated[float, typer.Option(help="Most time added to a SchedMate limit, in hours (operator cap; "
                                                  "the partition's MaxTime also bounds it).", min=0.0)] = 24.0,
    check_before_min: Annotated[float, typer.Option(help="Look at a job this many minutes before its limit.",
                                                    min=0.0)] = 15.0,
    every: Annotated[float, typer.Option(help="Seconds between passes; 0: one pass and exit.", min=0.0)] = 0.0,
    log_file: Annotated[Path | None, typer.Option(help="One JSON line per decision.")] = None,
) -> None:
    """Extend SchedMate-set time limits of running jobs that are still progressing (run as SlurmUser or root)."""
    import time

    from schedmate.deploy.slurm.extend import ExtendConfig, Extender

    ext = Extender(ExtendConfig(enabled=enable, max_extension_s=cap_hours * 3600, check_before_s=check_before_min * 60),
                   log_file=log_file)
    while True:  # scontrol missing or failing: ScontrolError, a DependencyUnavailable (one line, exit 2)
        for d in ext.run_pass():
            if d.action == "extend" or not d.reason.endswith("not due"):
                verb = ("extended to" if d.applied else "would extend to") if d.action == "extend" else "kept"
                new = f" {d.new_limit_s / 60:.0f} min" if d.new_limit_s else ""
                typer.echo(f"job {d.job_id}: {verb}{new} ({d.reason})")
        if every <= 0:
            typer.echo(f"{dict(ext.counts)}{'' if enable else ' (dry-run: --enable to change limits)'}")
            return
        try:
            time.sleep(every)
        except KeyboardInterrupt:
            typer.echo(f"stopped: {dict(ext.counts)}")
            return


def _token(path: Path | None) -> str | None:
    import os

    if path is None:
        return os.environ.get(TOKEN_ENV)
    try:
        return path.read_text().strip()
    except OSError as exc:
        raise BadInput(f"cannot read the token file: {exc}") from None


def register(app: typer.Typer, eval_app: typer.Typer) -> None:
    """Add this area's commands to the `schedmate` app (top level) or to `schedmate eval`."""
    app.add_typer(slurm_app, name="slurm")


localcluster_app = typer.Typer(help="A real single-node Slurm (munge, slurmctld, slurmd, fake GPUs) in one folder, "
                                    "for trying the integration.", no_args_is_help=True)
slurm_app.add_typer(localcluster_app, name="localcluster")
RootOpt = Annotated[Path | None, typer.Option("--root", help="The cluster's folder (default: $SCHEDMATE_HOME/slurm).")]


def _cluster_root(root: Path | None) -> Path:
    from schedmate.config import data_dir

    return (root or data_dir() / "slurm").resolve()


@localcluster_app.command("up")
def localcluster_up(
    root: RootOpt = None,
    gpus: Annotated[int, typer.Option(help="Fake GPUs (gres.conf File= entries on empty device files).", min=1)] = 8,
    url: Annotated[str | None, typer.Option(help="Also install SchedMate's job_submit.lua and epilog for this "
                                                 f"service (e.g. {SERVICE_URL}).")] = None,
) -> None:
    """Start the cluster (needs root and Debian's slurm-wlm + munge); prints the SLURM_CONF to export."""
    from schedmate.deploy.slurm.config import HookConfig, slurm_conf_lines, write_files
    from schedmate.deploy.slurm.localcluster import LocalSlurm, SlurmStartError

    folder = _cluster_root(root)
    extra: list[str] = []
    cluster = LocalSlurm(folder, gpus=gpus)
    if url is not None:
        cfg = HookConfig(url=url, log_file=folder / "log" / "schedmate-hook.log", slurm_conf=cluster.conf)
        extra = slurm_conf_lines(cluster.conf_dir / "schedmate-epilog.sh")
        cluster = LocalSlurm(folder, gpus=gpus, extra_conf=extra)
    try:
        if os.geteuid() != 0:
            raise SlurmStartError("slurmd needs root: run `sudo schedmate slurm localcluster up`")
        cluster.write_config()  # munge key, slurm.conf, gres.conf with File= for each fake GPU
        if url is not None:
            write_files(cfg, cluster.conf_dir)
        cluster.start()
    except (SlurmStartError, OSError) as exc:
        cluster.stop()
        raise DependencyUnavailable(str(exc).splitlines()[0]) from None
    typer.echo(f"Slurm up in {folder} ({gpus} fake GPUs){'; SchedMate hooks for ' + url if url else ''}.")
    typer.echo(f"export SLURM_CONF={cluster.conf}    # then: sbatch, squeue, schedmate diagnose --job ID")


@localcluster_app.command("down")
def localcluster_down(root: RootOpt = None) -> None:
    """Stop the cluster's daemons (by their pid files); its folder is kept."""
    from schedmate.deploy.slurm.localcluster import LocalSlurm

    folder = _cluster_root(root)
    if not (folder / "etc" / "slurm.conf").exists():
        raise NotFound(f"no cluster in {folder}")
    LocalSlurm(folder).stop()
    typer.echo(f"Slurm in {folder} stopped")
