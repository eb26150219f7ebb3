"""The launch command, followed to the Python entry point: shell scripts, sbatch files, launchers.

`parse_launch(command, repo)` returns a `Launch`: which script runs (`train.py`, a module, or
a CLI such as `yolo`), the arguments it receives, the environment the launcher exports, and the
file those arguments were written in. It understands what training launches look like:

* `VAR=1 torchrun --nproc_per_node=8 train.py --lr 3e-4`, `python -m torch.distributed.run`,
  `deepspeed`, `accelerate launch`, `python -m pkg.mod`, `srun`, `yolo detect train k=v`;
* `bash run.sh` / `sbatch job.sbatch`: a small, side-effect-free shell reader (assignments,
  `export`, `${VAR:-default}`, multi-line quoted argument variables as Megatron scripts use, line
  continuations, comments); the last launching line wins (commented-out alternatives are ignored),
  and a script that calls another script is followed (depth-limited);
* wrapper scripts: the arguments a script is called with become `$1..$9`, `$@`, `$*` and `$#`
  (`shift` at top level consumes them), a `while/case` option loop (`--lr) LR="$2"`) assigns its
  variables, and bash arrays (`ARGS=(--lr 1e-4 ...)`, `ARGS+=(...)`, `"${ARGS[@]}"`) expand to their
  elements;
* project CLIs (`tune run recipe --config x`, `litgpt finetune ... --config x.yaml`): the last
  command that is not a shell utility, kept as `cli` with its arguments;
* command lines split at `|`, `&&`, `||`, `&` with redirections dropped, and `cd dir` remembered;
  `source x.env` / `. x.sh` / `export $(grep -v '^#' .env | xargs)` / `set -a` (exports);
* `sbatch [options] job.sh`: the options beat the script's `#SBATCH` lines, `--export=ALL,K=V` sets
  the environment, and `$SLURM_CPUS_PER_TASK`, `$SLURM_NNODES`, ... take the allocation's values;
* `make [-f F] [-C D] goal VAR=value`: the goal's recipe (`makefile.make_goal`) runs as a script.

Nothing is executed. Unknown variables stay as `$NAME` text, command substitutions as `$(...)`.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from schedmate.agents.advisor import budget
from schedmate.agents.advisor.makefile import make_goal, parse_make_args

__all__ = ["Launch", "parse_launch", "read_shell", "ShellScript"]

_ASSIGN = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$", re.S)
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*|\d)(?:(:?[-=])([^}]*))?\}|\$([A-Za-z_][A-Za-z0-9_]*|\d|#)")
_ARRAY_REF = re.compile(r'"?\$\{([A-Za-z_][A-Za-z0-9_]*)\[[@*]\]\}"?')
_ALL_ARGS = re.compile(r'"?\$(?:\{[@*]\}|[@*])"?')
_ARGS_SLICE = re.compile(r'"?\$\{@:(\d+)\}"?')  # ${@:3}: the arguments from the third on
_SCRIPT_DIR = re.compile(r'\$\(\s*dirname\s+"?\$(?:0|\{0\}|\{BASH_SOURCE(?:\[0\])?\}|BASH_SOURCE)"?\s*\)')
_ARRAY_ASSIGN = re.compile(r"^(?:(?:declare|local|typeset)\s+-a\s+)?([A-Za-z_][A-Za-z0-9_]*)(\+?)=\((.*)\)\s*$", re.S)
# option loops: `--lr) LR="$2"` / `--lr|-l) LR=$2` / `--lr=*) LR="${1#*=}"`
_CASE_NEXT = re.compile(r"""(--?[\w-]+)(?:\|[^)\s]*)?\)\s*([A-Za-z_]\w*)=["']?\$\{?2\}?""")
_CASE_INLINE = re.compile(r"""(--?[\w-]+)=\*\)\s*([A-Za-z_]\w*)=["']?\$\{1#\*=\}""")
_OPEN = re.compile(r"^(?:while|for|until|case|if|select)\b")
_CLOSE = re.compile(r"(?:^|[\s;])(?:done|esac|fi)\b")
_SUBST = re.compile(r"\$\(\((?:[^()]|\([^()]*\))*\)\)|\$\((?:[^()]|\([^()]*\))*\)|`[^`]*`")
_PY = re.compile(r"^(?:.*/)?python(?:\d(?:\.\d+)?)?$")
_NOT_LAUNCH = {
    "if", "then", "else", "elif", "fi", "for", "while", "do", "done", "case", "esac", "echo", "printf", "set",
    "module", "source", ".", "mkdir", "cd", "trap", "wait", "exit", "return", "pip", "conda", "rm", "cp", "mv",
    "ln", "cat", "ls", "unset", "shift", "sleep", "nvidia-smi", "scontrol", "hostname", "date", "tee", "touch",
    "function", "local", "declare", "readonly", "test", "[", "[[", "true", "false", "ulimit", "git", "wget", "curl",
}
# environment runners: tool -> subcommands that run a command inside the environment
_RUNNERS = {"uv": ("run",), "poetry": ("run",), "pipenv": ("run",), "conda": ("run",), "mamba": ("run",),
            "micromamba": ("run",), "pixi": ("run",), "hatch": ("run",), "singularity": ("exec", "run"),
            "apptainer": ("exec", "run"), "docker": ("run", "exec"), "podman": ("run", "exec"),
            "nvidia-docker": ("run",), "enroot": ("start",)}
_WRAPPERS = {"srun", "mpirun", "mpiexec", "nohup", "exec", "time", "env", "stdbuf", "numactl", "taskset", "xargs"}
MAX_SCRIPT_DEPTH = 3


@dataclass
class ShellScript:
    """What a shell script defines and runs (no execution)."""

    path: str
    variables: dict[str, str] = field(default_factory=dict)
    exported: set[str] = field(default_factory=set)
    var_lines: dict[str, str] = field(default_factory=dict)  # variable -> its assignment text
    commands: list[tuple[list[str], dict[str, str], str]] = field(default_factory=list)  # (argv, prefix env, text)
    sbatch: dict[str, str] = field(default_factory=dict)
    cwd: dict[int, str] = field(default_factory=dict)  # command index -> directory it runs in (after `cd`)


@dataclass
class Launch:
    """The entry point a launch command reaches and what it passes to it."""

    command: str
    launcher: str = "unknown"  # python / torchrun / deepspeed / accelerate / yolo / module / unknown
    entry: str | None = None  # repo-relative script path (train.py)
    module: str | None = None  # `python -m pkg.mod`
    cli: str | None = None  # a tool CLI (yolo)
    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)  # exported to the entry
    env_source: dict[str, str] = field(default_factory=dict)  # variable -> file ('<command>' for the command)
    args_source: str = "<command>"  # file the entry arguments were written in
    scripts: list[str] = field(default_factory=list)  # shell scripts followed
    shell_vars: dict[str, str] = field(default_factory=dict)  # every variable set on the way (for name hints)
    launcher_args: list[str] = field(default_factory=list)
    sbatch: dict[str, str] = field(default_factory=dict)
    texts: dict[str, str] = field(default_factory=dict)  # source -> text (command, scripts) for snippets


# ----------------------------------------------------------------------------------------- shell


def _logical_lines(text: str) -> list[str]:
    """Split into logical lines: continuations joined, quoted newlines kept, comments dropped."""
    out: list[str] = []
    buf: list[str] = []
    quote: str | None = None
    i, n = 0, len(text)
    at_word_start = True
    depth = 0  # inside an array literal `NAME=( ... )`: newlines are separators, not line ends
    while i < n:
        ch = text[i]
        if quote is None:
            if ch == "(" and buf and buf[-1] == "=":
                depth += 1
            elif ch == ")" and depth:
                depth -= 1
            if ch == "\n" and depth:
                buf.append(" ")
                at_word_start = True
                i += 1
                continue
            if ch == "\\" and i + 1 < n and text[i + 1] == "\n":
                i += 2
                buf.append(" ")
                continue
            if ch == "#" and at_word_start:
                while i < n and text[i] != "\n":
                    i += 1
                continue
            if ch in "\"'":
                quote = ch
            elif ch == "\n":
                out.append("".join(buf))
                buf = []
                at_word_start = True
                i += 1
                continue
            elif ch == ";" and not depth:
                out.append("".join(buf))
                buf = []
                at_word_start = True
                i += 1
                continue
            buf.append(ch)
            at_word_start = ch in " \t|&("
        else:
            if quote == '"' and ch == "\\" and i + 1 < n and text[i + 1] == "\n":
                i += 2  # continuation inside double quotes: removed
                continue
            if ch == "\\" and quote == '"' and i + 1 < n:
                buf.append(ch)
                buf.append(text[i + 1])
                i += 2
                continue
            if ch == quote:
                quote = None
            buf.append(ch)
            at_word_start = False
        i += 1
    if buf:
        out.append("".join(buf))
    return [ln.strip() for ln in out if ln.strip()]


def _expand(text: str, variables: dict[str, str]) -> str:
    """$VAR / ${VAR} / ${VAR:-default} with known values; unknown ones stay as written."""

    def sub(m: re.Match[str]) -> str:
        name = m.group(1) or m.group(4)
        if name in variables:
            val = variables[name]
            if m.group(2) and m.group(2).startswith(":") and val == "":
                return m.group(3) or ""
            return val
        if m.group(2):  # ${VAR:-default}: the default applies when unset
            return _expand(m.group(3) or "", variables)
        return m.group(0)

    def array(m: re.Match[str]) -> str:
        key = f"{m.group(1)}[@]"
        return variables[key] if key in variables else m.group(0)

    text = _ARRAY_REF.sub(array, text)
    if "@" in variables:
        text = _ARGS_SLICE.sub(lambda m: shlex.join(shlex.split(variables["@"])[int(m.group(1)) - 1:]), text)
        text = _ALL_ARGS.sub(lambda m: variables["@"], text)
    prev = None
    for _ in range(4):  # nested defaults / values holding variables
        if prev == text:
            break
        prev = text
        text = _VAR.sub(sub, text)
    return text


def _split(text: str) -> list[str]:
    text = _SUBST.sub(lambda m: "$(" + re.sub(r"\s+", "_", m.group(0).strip("$()`")) + ")", text)
    try:
        return shlex.split(text, comments=False, posix=True)
    except ValueError:  # unbalanced quotes: best effort
        return text.replace('"', " ").replace("'", " ").split()


def _set_positionals(variables: dict[str, str], argv: list[str]) -> None:
    for k in [k for k in variables if k.isdigit() and k != "0"]:
        del variables[k]
    for i, a in enumerate(argv[:9], start=1):
        variables[str(i)] = a
    variables["#"] = str(len(argv))
    variables["@"] = shlex.join(argv)


_CONTROL = {"|", "|&", "&&", "||", "&", ";"}
_REDIRECT = re.compile(r"^(?:\d*|&)(?:>>?|<)(?:&\d+|&-)?$")
_REDIRECT_ATTACHED = re.compile(r"^(?:\d*|&)(?:>>?|<)\S+$")


def _segments(argv: list[str]) -> list[list[str]]:
    """Commands of one line split at `|`, `&&`, `||`, `&`, with redirections (`> log 2>&1`) dropped."""
    out: list[list[str]] = [[]]
    i = 0
    while i < len(argv):
        tok = argv[i]
        if tok in _CONTROL:
            out.append([])
        elif _REDIRECT.match(tok):
            i += 0 if re.search(r"&\d+$|&-$", tok) else 1  # `> file`: the file goes too; `2>&1` stands alone
        elif not _REDIRECT_ATTACHED.match(tok):
            out[-1].append(tok)
        i += 1
    return [seg for seg in out if seg]


def _chdir(cwd: str, target: str) -> str:
    if target.startswith(("/", "$", "~")) or target == "-":
        return ""
    parts = [p for p in (cwd.split("/") if cwd else [])]
    for part in target.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if not parts:
                return ""
            parts.pop()
        else:
            parts.append(part)
    return "/".join(parts)


def option_loop(text: str) -> dict[str, tuple[str, bool]]:
    """Flags a `while/case` option loop assigns: flag -> (variable, value is inline `--k=v`)."""
    out: dict[str, tuple[str, bool]] = {}
    for m in _CASE_NEXT.finditer(text):
        out.setdefault(m.group(1), (m.group(2), False))
    for m in _CASE_INLINE.finditer(text):
        out.setdefault(m.group(1) + "=", (m.group(2), True))
    return out


def _loop_assignments(loop: dict[str, tuple[str, bool]], argv: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for i, tok in enumerate(argv):
        flag, eq, val = tok.partition("=")
        if eq and flag + "=" in loop:
            out[loop[flag + "="][0]] = val
        elif tok in loop and i + 1 < len(argv):
            out[loop[tok][0]] = argv[i + 1]
    return out


_EXPORT_FILE = re.compile(r"""^export\s+["']?\$\(\s*(?:cat|grep\b[^)|]*?|sed\b[^)|]*?)\s+["']?([\w./${}-]+)["']?\s*(?:\||\))""")
_SBATCH_SHORT = {"N": "nodes", "c": "cpus-per-task", "n": "ntasks", "G": "gpus", "J": "job-name", "t": "time",
                 "p": "partition"}
# variables SLURM sets in the job's environment from its allocation options
_SLURM_VARS = {"cpus-per-task": ("SLURM_CPUS_PER_TASK",), "nodes": ("SLURM_NNODES", "SLURM_JOB_NUM_NODES"),
               "ntasks-per-node": ("SLURM_NTASKS_PER_NODE",), "ntasks": ("SLURM_NTASKS",),
               "gpus-per-node": ("SLURM_GPUS_PER_NODE", "SLURM_GPUS_ON_NODE"), "gpus": ("SLURM_GPUS",),
               "job-name": ("SLURM_JOB_NAME",), "gpus-per-task": ("SLURM_GPUS_PER_TASK",)}
Reader = Callable[[str], "str | None"]


def sbatch_options(args: list[str]) -> dict[str, str]:
    """`--nodes=2 -c 12 --exclusive` -> {'nodes': '2', 'cpus-per-task': '12', 'exclusive': 'true'}."""
    out: dict[str, str] = {}
    i = 0
    while i < len(args):
        tok = args[i]
        if not tok.startswith("-"):
            break
        key, eq, val = tok.lstrip("-").partition("=")
        if not eq and i + 1 < len(args) and not args[i + 1].startswith("-") and not _is_script(args[i + 1]):
            val, i = args[i + 1], i + 1
        out[_SBATCH_SHORT.get(key, key)] = val or "true"
        i += 1
    return out


def _slurm_environment(sbatch: dict[str, str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for opt, names in _SLURM_VARS.items():
        val = sbatch.get(opt)
        if opt.startswith("gpus") and val is None and opt == "gpus-per-node":
            m = re.search(r"gpu(?::\w+)?:(\d+)", sbatch.get("gres", ""))
            val = m.group(1) if m else None
        if val is None:
            continue
        val = val.rsplit(":", 1)[-1] if opt.startswith("gpus") else val  # --gpus-per-node=a100:8
        for name in names:
            out[name] = val
    if "SLURM_NTASKS" not in out and "ntasks-per-node" in sbatch:
        try:
            out["SLURM_NTASKS"] = str(int(sbatch.get("nodes", "1")) * int(sbatch["ntasks-per-node"]))
        except ValueError:
            pass
    return out


def read_shell(text: str, path: str, env: dict[str, str] | None = None, argv: list[str] | None = None, *,
               reader: Reader | None = None, sbatch: dict[str, str] | None = None,
               allexport: bool = False, _depth: int = 0) -> ShellScript:
    """Variables, exports, #SBATCH options and command lines of a shell script called with `argv`.

    `reader(path)` reads files the script sources (`source run.env`, `. ./env.sh`); `sbatch` holds
    options given to `sbatch` itself, which beat the script's `#SBATCH` lines; the `$SLURM_*` variables
    of the allocation are set from both. `set -a` exports every later assignment."""
    script = ShellScript(path=path)
    for raw in text.splitlines():
        m = re.match(r"^#SBATCH\s+(--?[\w-]+)(?:[= ]\s*(\S+))?", raw.strip())
        if m:
            key = m.group(1).lstrip("-")
            script.sbatch[_SBATCH_SHORT.get(key, key)] = m.group(2) or "true"
    script.sbatch.update(sbatch or {})
    slurm = _slurm_environment(script.sbatch)
    variables = {**slurm, **(env or {})}
    script.exported |= set(slurm)  # SLURM puts them in the job's environment
    positionals = list(argv or [])
    if argv is not None:
        _set_positionals(variables, positionals)
    loop = option_loop(text) if argv else {}
    loop_applied = False
    depth = 0
    cwd = ""  # repository-relative directory after `cd` (unknown absolute paths reset it)
    for line in _logical_lines(text):
        if _OPEN.match(line):
            depth += 1
        if _CLOSE.search(line):
            depth = max(0, depth - len(_CLOSE.findall(line)))
            if loop and not loop_applied and re.search(r"\besac\b|\bdone\b", line) and depth == 0:
                variables.update(_loop_assignments(loop, positionals))
                loop_applied = True
        here = str(Path(path).parent) if path != "<command>" else "."
        dotenv = _EXPORT_FILE.match(line)
        if dotenv and reader is not None and _depth < MAX_SCRIPT_DEPTH:  # export $(grep -v '^#' .env | xargs): every assignment of the file
            target = _expand(dotenv.group(1), variables).removeprefix("./")
            sourced = reader((Path(here) / target).as_posix()) or reader(target)
            if sourced is not None:
                sub = read_shell(sourced, target, env=variables, reader=reader, allexport=True, _depth=_depth + 1)
                variables.update(sub.variables)
                script.exported |= sub.exported
            continue
        expanded = _expand(_SCRIPT_DIR.sub(here, line), variables)
        arr = _ARRAY_ASSIGN.match(expanded)
        if arr:
            key = f"{arr.group(1)}[@]"
            elems = _split(arr.group(3))
            joined = shlex.join(elems)
            variables[key] = f"{variables[key]} {joined}".strip() if arr.group(2) and key in variables else joined
            script.var_lines[key] = line
            continue
        words = _split(expanded)
        if not words:
            continue
        for argv_line in _segments(words):
            if argv_line[0] == "cd" and len(argv_line) > 1:
                cwd = _chdir(cwd, argv_line[1])
                continue
            head = argv_line[0]
            if head == "set" and len(argv_line) > 1 and re.fullmatch(r"[-+]\w*a\w*|[-+]o", argv_line[1]):
                if argv_line[1] != "-o" and argv_line[1] != "+o" or argv_line[2:3] == ["allexport"]:
                    allexport = argv_line[1].startswith("-")
                continue
            if head in ("source", ".") and len(argv_line) > 1 and reader is not None and _depth < MAX_SCRIPT_DEPTH:
                here_dir = Path(path).parent if path != "<command>" else Path(".")
                target = argv_line[1].removeprefix("./")
                sourced = reader((here_dir / target).as_posix()) or reader(target)
                if sourced is not None:
                    sub = read_shell(sourced, target, env=variables, reader=reader, allexport=allexport,
                                     _depth=_depth + 1)
                    variables.update(sub.variables)
                    script.exported |= sub.exported
                    script.var_lines.update(sub.var_lines)
                    script.commands += sub.commands
                continue
            if head == "shift" and depth == 0 and argv is not None:
                n = int(argv_line[1]) if len(argv_line) > 1 and argv_line[1].isdigit() else 1
                positionals = positionals[n:]
                _set_positionals(variables, positionals)
                continue
            if head in ("export", "declare", "local", "readonly"):
                for tok in argv_line[1:]:
                    if tok.startswith("-"):
                        continue
                    m = _ASSIGN.match(tok)
                    if m:
                        variables[m.group(1)] = m.group(2)
                        script.var_lines[m.group(1)] = line
                        script.exported.add(m.group(1))
                    else:
                        script.exported.add(tok)
                continue
            prefix: dict[str, str] = {}
            while argv_line and _ASSIGN.match(argv_line[0]):
                m = _ASSIGN.match(argv_line[0])
                assert m
                prefix[m.group(1)] = m.group(2)
                argv_line = argv_line[1:]
            if not argv_line:  # plain assignments
                for k, v in prefix.items():
                    variables[k] = v
                    script.var_lines[k] = line
                    if allexport:
                        script.exported.add(k)
                continue
            script.commands.append((argv_line, prefix, line))
            script.cwd[len(script.commands) - 1] = cwd
    script.variables = variables
    return script


# ----------------------------------------------------------------------------------------- launchers


def _strip_wrappers(argv: list[str], env: dict[str, str]) -> list[str]:
    """Drop srun/mpirun/nohup/env/... and environment runners (`uv run`, `conda run -n x`, `singularity exec
    img.sif`, `docker run ... image`) with their options; collect `env K=V` / `mpirun -x K=V` assignments. The
    wrapped command starts at the first token that launches something (`python`, `torchrun`, `x.py`, `x.sh`)."""
    while argv:
        head = Path(argv[0]).name
        runner = head in _RUNNERS and len(argv) > 1 and argv[1] in _RUNNERS[head]
        if head not in _WRAPPERS and not runner:
            break
        rest = argv[2:] if runner else argv[1:]
        if head == "env":
            while rest and (rest[0].startswith("-") or _ASSIGN.match(rest[0])):
                m = _ASSIGN.match(rest[0])
                if m:
                    env[m.group(1)] = m.group(2)
                rest = rest[2:] if rest[0] in ("-u", "--unset", "-C", "--chdir") else rest[1:]
            argv = rest
            continue
        k = next((i for i in range(len(rest)) if _launch_kind(rest[i:]) is not None or (
            rest[i].endswith(".py") and not rest[i].startswith("-"))), None)
        if k is None:
            return rest
        for i, tok in enumerate(rest[:k]):  # mpirun -x NCCL_DEBUG=INFO
            m = _ASSIGN.match(tok)
            if m and i and rest[i - 1] in ("-x", "--env", "-e"):
                env[m.group(1)] = m.group(2)
        argv = rest[k:] if _launch_kind(rest[k:]) is not None else ["python", *rest[k:]]  # `uv run train.py`
    return argv


def _is_script(tok: str) -> bool:
    return tok.endswith((".sh", ".bash", ".sbatch", ".slurm")) or tok.endswith(".job")


def _launch_kind(argv: list[str]) -> str | None:
    if not argv:
        return None
    head = Path(argv[0]).name
    if _PY.match(head) or head in ("torchrun", "deepspeed", "accelerate", "yolo", "lightning", "composer"):
        return head if not _PY.match(head) else "python"
    if head in ("bash", "sh", "zsh", "sbatch") and len(argv) > 1:
        return "script"
    if head in ("make", "gmake"):
        return "make"
    if _is_script(argv[0]) and (argv[0].startswith("./") or "/" in argv[0] or head.endswith(".sh")):
        return "script"
    return None


def _entry_after(argv: list[str]) -> tuple[list[str], str | None, str | None, list[str]]:
    """Split launcher options from (entry script | -m module) and its arguments."""
    for i, tok in enumerate(argv):
        if tok in ("-m", "--module") and i + 1 < len(argv):
            return argv[:i], None, argv[i + 1], argv[i + 2 :]
        if tok.endswith(".py") and not tok.startswith("-"):
            return argv[:i], tok, None, argv[i + 1 :]
    return argv, None, None, []


def _resolve_entry(repo: Path, entry: str, cwd: str = "") -> str | None:
    for base in (cwd, ""):
        cand = (Path(base) / entry) if base else Path(entry)
        p = (repo / cand)
        if p.is_file():
            try:
                return p.resolve().relative_to(repo.resolve()).as_posix()
            except ValueError:
                return None
    # an absolute or variable-prefixed path (/workspace/proj/tools/train.py, $ROOT/train.py): the longest tail
    # of it that is a file of the repository
    parts = [p for p in entry.split("/") if p and p not in (".", "..")]
    for i in range(1, len(parts)):
        tail = "/".join(parts[i:])
        if (repo / tail).is_file() and not tail.startswith("$"):
            return tail
    return entry.lstrip("./") or None


def _module_path(repo: Path, module: str) -> str | None:
    rel = module.replace(".", "/")
    for cand in (f"{rel}.py", f"{rel}/__main__.py"):
        if (repo / cand).is_file():
            return cand
    return None


def _read_text(repo: Path, rel: str) -> str | None:
    p = repo / rel
    try:
        real = p.resolve(strict=True)
        if not real.is_relative_to(repo.resolve()) or not real.is_file() or not budget.admit(real, real.stat().st_size):
            return None
        return real.read_text(encoding="utf-8", errors="replace")
    except (OSError, RuntimeError):
        return None


def parse_launch(command: str, repo: Path | str) -> Launch:
    """Follow `command` (as the scheduler received it) to the training entry point in `repo`."""
    repo = Path(repo)
    launch = Launch(command=command)
    launch.texts["<command>"] = command
    script = read_shell(command, "<command>", reader=lambda rel: _read_text(repo, rel))
    _follow(script, repo, launch, {}, "<command>", depth=0)
    return launch


def _make_script(repo: Path, argv: list[str], env: dict[str, str]) -> tuple[str, str, dict[str, str]] | None:
    """(Makefile path, the goal's recipe as a shell script, what the recipe's environment adds) of `make`."""
    named, _, _, directory = parse_make_args(argv)
    prefix = f"{directory}/" if directory else ""
    for rel in ([named] if named else [f"{prefix}GNUmakefile", f"{prefix}makefile", f"{prefix}Makefile"]):
        text = _read_text(repo, rel)
        if text is not None:
            goal = make_goal(text, rel, argv, env, reader=lambda r: _read_text(repo, f"{prefix}{r}"))
            recipe = ([f"cd {directory}"] if directory else []) + goal.recipe  # `make -C dir`: recipes run there
            return (rel, "\n".join(recipe), goal.environment) if goal.recipe else None
    return None


def _follow(script: ShellScript, repo: Path, launch: Launch, env: dict[str, str], source: str, depth: int) -> bool:
    launch.shell_vars.update({k: v for k, v in script.variables.items() if k not in env})
    launch.sbatch.update(script.sbatch)
    exported = {k: script.variables[k] for k in script.exported if k in script.variables}
    for k in exported:
        launch.env_source.setdefault(k, source)
    env = {**env, **exported}
    for idx, (argv, prefix, _line) in reversed(list(enumerate(script.commands))):
        cwd = script.cwd.get(idx, "")
        local_env = {**env, **prefix}
        argv = _strip_wrappers(list(argv), local_env)
        if len(argv) > 2 and Path(argv[0]).name in ("bash", "sh", "zsh") and argv[1] in ("-c", "-lc"):
            # `srun bash -c "torchrun ... train.py ..."`: the string is the command line
            inner = read_shell(argv[2], source, env={**script.variables, **local_env},
                               reader=lambda r: _read_text(repo, r))
            if _follow(inner, repo, launch, local_env, source, depth + 1):
                return True
            continue
        kind = _launch_kind(argv)
        if kind is None:
            continue
        for k in prefix:
            launch.env_source[k] = source
        if kind == "make":
            made = _make_script(repo, argv, local_env) if depth < MAX_SCRIPT_DEPTH else None
            if made is None:
                continue
            rel, recipe_text, make_env = made
            launch.scripts.append(rel)
            launch.texts[rel] = recipe_text
            recipe_env = {**local_env, **make_env}
            for k in make_env:
                launch.env_source.setdefault(k, rel)
            sub = read_shell(recipe_text, rel, env=recipe_env, reader=lambda r: _read_text(repo, r))
            if _follow(sub, repo, launch, recipe_env, rel, depth + 1):
                return True
            continue
        if kind == "script":
            if Path(argv[0]).name in ("bash", "sh", "zsh", "sbatch"):  # `sbatch --nodes 2 job.sh a b`
                named = [k for k in range(1, len(argv)) if _is_script(argv[k])]
                plain = [k for k in range(1, len(argv)) if not argv[k].startswith("-")]
                j = named[0] if named else plain[0] if plain else 1
            else:
                j = 0
            target = argv[j].removeprefix("./")
            if cwd and _read_text(repo, f"{cwd}/{target}") is not None:
                target = f"{cwd}/{target}"  # `cd scripts && bash train.sh`
            script_args = argv[j + 1:]
            text = _read_text(repo, target) if depth < MAX_SCRIPT_DEPTH else None
            if text is None:
                continue
            launch.scripts.append(target)
            launch.texts[target] = text
            opts = sbatch_options(argv[1:j]) if Path(argv[0]).name == "sbatch" else {}
            for item in opts.pop("export", "").split(","):  # sbatch --export=ALL,LR=1e-4
                k, eq, v = item.partition("=")
                if eq and _ASSIGN.match(item):
                    local_env[k] = v
                    launch.env_source[k] = source
            sub = read_shell(text, target, env=local_env, argv=script_args, reader=lambda r: _read_text(repo, r),
                             sbatch=opts)
            if _follow(sub, repo, launch, local_env, target, depth + 1):
                return True
            continue
        _set_entry(launch, repo, kind, argv, local_env, source, cwd)
        return True
    # no python/launcher line: a project CLI (`tune run ...`, `litgpt finetune ...`)
    for argv, prefix, _line in reversed(script.commands):
        argv = _strip_wrappers(list(argv), {**env, **prefix})
        if argv and _is_project_cli(argv):
            _set_entry(launch, repo, "cli", argv, {**env, **prefix}, source)
            return True
    return False


def _is_project_cli(argv: list[str]) -> bool:
    head = Path(argv[0]).name
    if head in _NOT_LAUNCH or head in _WRAPPERS or "=" in head or head.startswith(("$", "-")) or _is_script(head):
        return False
    return re.fullmatch(r"[a-z][a-z0-9_.-]*", head) is not None and len(argv) > 1


def _set_entry(launch: Launch, repo: Path, kind: str, argv: list[str], env: dict[str, str], source: str,
               cwd: str = "") -> None:
    launch.env = env
    launch.args_source = source
    if kind == "yolo":
        launch.launcher, launch.cli = "yolo", "yolo"
        launch.args = argv[1:]
        return
    if kind == "cli":
        head = Path(argv[0]).name
        launch.launcher, launch.cli, launch.args = "cli", head, argv[1:]
        pkg = head.replace("-", "_")
        for cand in (f"{pkg}/__main__.py", f"src/{pkg}/__main__.py"):
            if (repo / cand).is_file():
                launch.entry = cand
        return
    rest = argv[1:]
    if kind == "accelerate" and rest[:1] == ["launch"]:
        rest = rest[1:]
    launcher = kind
    opts, entry, module, args = _entry_after(rest)
    if kind == "python" and module in ("torch.distributed.run", "torch.distributed.launch"):
        launcher = "torchrun"
        opts, entry, module, args = _entry_after(args)
    elif kind == "python" and module in ("accelerate.commands.launch", "deepspeed.launcher.runner"):
        launcher = module.split(".")[0]
        opts, entry, module, args = _entry_after(args)
    launch.launcher = launcher if (entry or module) else kind
    launch.launcher_args = opts
    launch.args = args
    if entry:
        launch.entry = _resolve_entry(repo, entry, cwd)
    elif module:
        launch.module = module
        launch.entry = _module_path(repo, module)
        if launch.launcher == "python":
            launch.launcher = "module"
