"""What to install into Slurm: the slurm.conf lines, job_submit.lua and the EpilogSlurmctld script.

The Lua plugin and the epilog script are package files with `@NAME@` placeholders filled here, so
`schedmate slurm config` prints exactly what the tests install into their real Slurm.
"""

from __future__ import annotations

import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

from schedmate.deploy.slurm.hook import DEFAULT_TIMEOUT_S, DEFAULT_URL, TIME_LIMIT_PATH
from schedmate.deploy.slurm.timelimit import DEFAULT_MARGIN

__all__ = ["HookConfig", "epilog_script", "hook_command", "job_submit_lua", "slurm_conf_lines", "write_files"]

HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class HookConfig:
    """How slurmctld reaches SchedMate: the service, the bounds, the Python that runs the epilog."""

    url: str = DEFAULT_URL
    python: str = sys.executable
    token_file: Path | None = None
    timeout_s: float = DEFAULT_TIMEOUT_S  # the whole submit-time call (curl --max-time)
    margin: float = DEFAULT_MARGIN
    log_file: Path | None = None  # one JSON line per estimate / job end
    slurm_conf: Path = Path("/etc/slurm/slurm.conf")

    @property
    def submit_budget_s(self) -> float:
        """Hard bound on the submit-time call: curl gives up at `timeout_s`, SIGKILL one second later."""
        return self.timeout_s + 1.0


def hook_command(cfg: HookConfig) -> str:
    """The shell command line of the epilog hook (`epilog` follows)."""
    parts = [cfg.python, "-I", "-m", "schedmate.deploy.slurm.hook", "--url", cfg.url]
    if cfg.token_file is not None:
        parts += ["--token-file", str(cfg.token_file)]
    if cfg.log_file is not None:
        parts += ["--log-file", str(cfg.log_file)]
    return shlex.join(parts)


def _fill(template: str, values: dict[str, str]) -> str:
    text = (HERE / template).read_text(encoding="utf-8")
    for key, value in values.items():
        text = text.replace(f"@{key}@", value)
    return text


def job_submit_lua(cfg: HookConfig) -> str:
    auth = f'--oauth2-bearer "$(cat {shlex.quote(str(cfg.token_file))})"' if cfg.token_file is not None else ""
    return _fill("job_submit.lua", {"URL": _lua_string(cfg.url.rstrip("/") + TIME_LIMIT_PATH),
                                    "AUTH": _lua_string(auth), "TIMEOUT_S": f"{cfg.timeout_s:g}",
                                    "MARGIN": f"{cfg.margin:g}"})


def _lua_string(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def epilog_script(cfg: HookConfig) -> str:
    return _fill("epilog.sh", {"HOOK": hook_command(cfg), "SLURM_CONF": shlex.quote(str(cfg.slurm_conf))})


def slurm_conf_lines(epilog_path: Path) -> list[str]:
    """The slurm.conf lines (job_submit.lua is read from slurm.conf's own directory)."""
    return ["JobSubmitPlugins=lua", f"EpilogSlurmctld={epilog_path}"]


def write_files(cfg: HookConfig, conf_dir: Path, epilog_path: Path | None = None) -> dict[str, Path]:
    """Write job_submit.lua beside slurm.conf and the epilog script (mode 0755)."""
    lua = conf_dir / "job_submit.lua"
    lua.write_text(job_submit_lua(cfg), encoding="utf-8")
    epilog = epilog_path or conf_dir / "schedmate-epilog.sh"
    epilog.write_text(epilog_script(cfg), encoding="utf-8")
    epilog.chmod(0o755)
    return {"job_submit.lua": lua, "epilog": epilog}
