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
  command that is not a shell utility, kept as `cli` with its arguments.

Nothing is executed. Unknown variables stay as `$NAME` text, command substitutions as `$(...)`.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

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


def read_shell(text: str, path: str, env: dict[str, str] | None = None, argv: list[str] | None = None) -> ShellScript:
    """Variables, exports, #SBATCH options and command lines of a shell script called with `argv`."""
    script = ShellScript(path=path)
    for raw in text.splitlines():
        m = re.match(r"^#SBATCH\s+(--?[\w-]+)(?:[= ]\s*(\S+))?", raw.strip())
        if m:
            script.sbatch[m.group(1).lstrip("-")] = m.group(2) or "true"
    variables = dict(env or {})
    positionals = list(argv or [])
    if argv is not None:
        _set_positionals(variables, positionals)
    loop = option_loop(text) if argv else {}
    loop_applied = False
    depth = 0
    for line in _logical_lines(text):
        if _OPEN.match(line):
            depth += 1
        if _CLOSE.search(line):
            depth = max(0, depth - len(_CLOSE.findall(line)))
            if loop and not loop_applied and re.search(r"\besac\b|\bdone\b", line) and depth == 0:
                variables.update(_loop_assignments(loop, positionals))
                loop_applied = True
        here = str(Path(path).parent) if path != "<command>" else "."
        expanded = _expand(_SCRIPT_DIR.sub(here, line), variables)
        arr = _ARRAY_ASSIGN.match(expanded)
        if arr:
            key = f"{arr.group(1)}[@]"
            elems = _split(arr.group(3))
            joined = shlex.join(elems)
            variables[key] = f"{variables[key]} {joined}".strip() if arr.group(2) and key in variables else joined
            script.var_lines[key] = line
            continue
        argv_line = _split(expanded)
        if not argv_line:
            continue
        head = argv_line[0]
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
            continue
        script.commands.append((argv_line, prefix, line))
    script.variables = variables
    return script


# ----------------------------------------------------------------------------------------- launchers


def _strip_wrappers(argv: list[str], env: dict[str, str]) -> list[str]:
    """Drop srun/nohup/env/... and their options; collect `env K=V` assignments."""
    while argv:
        head = Path(argv[0]).name
        if head not in _WRAPPERS:
            break
        argv = argv[1:]
        while argv and (argv[0].startswith("-") or (head == "env" and _ASSIGN.match(argv[0]))):
            m = _ASSIGN.match(argv[0])
            if head == "env" and m:
                env[m.group(1)] = m.group(2)
            argv = argv[1:]
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
        if not real.is_relative_to(repo.resolve()) or not real.is_file() or real.stat().st_size > 1_000_000:
            return None
        return real.read_text(encoding="utf-8", errors="replace")
    except (OSError, RuntimeError):
        return None


def parse_launch(command: str, repo: Path | str) -> Launch:
    """Follow `command` (as the scheduler received it) to the training entry point in `repo`."""
    repo = Path(repo)
    launch = Launch(command=command)
    launch.texts["<command>"] = command
    script = read_shell(command, "<command>")
    _follow(script, repo, launch, {}, "<command>", depth=0)
    return launch


def _follow(script: ShellScript, repo: Path, launch: Launch, env: dict[str, str], source: str, depth: int) -> bool:
    launch.shell_vars.update({k: v for k, v in script.variables.items() if k not in env})
    launch.sbatch.update(script.sbatch)
    exported = {k: script.variables[k] for k in script.exported if k in script.variables}
    for k in exported:
        launch.env_source.setdefault(k, source)
    env = {**env, **exported}
    for argv, prefix, _line in reversed(script.commands):
        local_env = {**env, **prefix}
        argv = _strip_wrappers(list(argv), local_env)
        kind = _launch_kind(argv)
        if kind is None:
            continue
        for k in prefix:
            launch.env_source[k] = source
        if kind == "script":
            if Path(argv[0]).name in ("bash", "sh", "zsh", "sbatch"):  # `sbatch --nodes 2 job.sh a b`
                named = [k for k in range(1, len(argv)) if _is_script(argv[k])]
                plain = [k for k in range(1, len(argv)) if not argv[k].startswith("-")]
                j = named[0] if named else plain[0] if plain else 1
            else:
                j = 0
            target = argv[j].removeprefix("./")
            script_args = argv[j + 1:]
            text = _read_text(repo, target) if depth < MAX_SCRIPT_DEPTH else None
            if text is None:
                continue
            launch.scripts.append(target)
            launch.texts[target] = text
            sub = read_shell(text, target, env=local_env, argv=script_args)
            if _follow(sub, repo, launch, local_env, target, depth + 1):
                return True
            continue
        _set_entry(launch, repo, kind, argv, local_env, source)
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


def _set_entry(launch: Launch, repo: Path, kind: str, argv: list[str], env: dict[str, str], source: str) -> None:
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
        launch.entry = _resolve_entry(repo, entry)
    elif module:
        launch.module = module
        launch.entry = _module_path(repo, module)
        if launch.launcher == "python":
            launch.launcher = "module"
