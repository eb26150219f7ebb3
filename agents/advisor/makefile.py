"""`make train EPOCHS=50`: the recipe a Makefile target runs, with make variables expanded.

A small reader of GNU make syntax, enough for the Makefiles training projects keep beside their
scripts: `include` files, `ifeq`/`ifdef` conditionals, variable assignments (`=`, `:=`, `::=`, `?=`,
`+=`, `override`, `export`), command-line variables (which beat the file's assignments unless those
say `override`; `?=` keeps an environment value), rules with prerequisites (their recipes run
first), pattern rules (`train-%:` with `$*`), tab-indented recipe lines with `\\` continuations,
`$(VAR)` / `${VAR}` references (undefined ones are empty, as in make) and `$$`. Functions such as
`$(shell ...)` stay as written. Nothing is executed.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

__all__ = ["MakeGoal", "make_goal"]

_ASSIGN = re.compile(r"^(override\s+)?(export\s+)?([A-Za-z_][\w.-]*)\s*(\?=|::=|:=|\+=|!=|=)\s*(.*)$")
_EXPORT = re.compile(r"^export\s+([A-Za-z_][\w.\s-]*)$")
_RULE = re.compile(r"^([^\s:=#][^:=#]*?)\s*::?(?!=)\s*(.*)$")
_REF = re.compile(r"\$[({]([A-Za-z_][\w.-]*)[)}]")
_MAX_DEPTH = 8


@dataclass
class MakeGoal:
    """The Makefile a `make` command reads and what its goal runs."""

    makefile: str
    goal: str | None
    recipe: list[str] = field(default_factory=list)  # expanded shell lines, prerequisites' first
    variables: dict[str, str] = field(default_factory=dict)
    environment: dict[str, str] = field(default_factory=dict)  # what recipes see: exported and command-line ones


def parse_make_args(argv: list[str]) -> tuple[str | None, list[str], dict[str, str], str]:
    """(`-f` file, goals, command-line variables, `-C` directory) of `make [-f F] [-C D] [goal...] [VAR=value...]`."""
    makefile: str | None = None
    directory = ""
    goals: list[str] = []
    cli: dict[str, str] = {}
    i = 1
    while i < len(argv):
        tok = argv[i]
        if tok in ("-f", "--file", "--makefile") and i + 1 < len(argv):
            makefile, i = argv[i + 1], i + 2
            continue
        if tok.startswith("--file="):
            makefile = tok.partition("=")[2]
        elif tok in ("-C", "--directory") and i + 1 < len(argv):
            directory = argv[i + 1].rstrip("/")
            i += 1
        elif tok in ("-I", "-o", "-W"):
            i += 1
        elif tok.startswith("-"):
            pass
        elif re.match(r"^[A-Za-z_][\w.-]*=", tok):
            k, _, v = tok.partition("=")
            cli[k] = v
        else:
            goals.append(tok)
        i += 1
    if directory and makefile and not makefile.startswith("/"):
        makefile = f"{directory}/{makefile}"
    return makefile, goals, cli, directory


def _lines(text: str) -> list[str]:
    out: list[str] = []
    buf = ""
    for raw in text.splitlines():
        if raw.endswith("\\"):
            buf += raw[:-1] + " "
            continue
        out.append(buf + raw)
        buf = ""
    if buf:
        out.append(buf)
    return out


_CONDITIONAL = re.compile(r"^(ifeq|ifneq|ifdef|ifndef|else|endif)\b\s*(.*)$")


def _condition(word: str, rest: str, scope: Mapping[str, str]) -> bool:
    """`ifeq ($(A),b)` / `ifeq "a" "b"` / `ifdef VAR` with the variables known at that line."""
    if word in ("ifdef", "ifndef"):
        defined = bool(scope.get(rest.strip(), ""))
        return defined if word == "ifdef" else not defined
    rest = rest.strip()
    if rest.startswith("(") and rest.endswith(")"):
        left, _, right = rest[1:-1].partition(",")
    else:
        parts = re.findall(r"\"([^\"]*)\"|'([^']*)'", rest)
        if len(parts) != 2:
            return False
        left, right = (a or b for a, b in parts)
    same = _expand(left.strip(), scope) == _expand(right.strip(), scope)
    return same if word == "ifeq" else not same


def _expand(value: str, variables: Mapping[str, str], depth: int = 0) -> str:
    if depth > _MAX_DEPTH:
        return value
    value = value.replace("$$", "\0")
    out = _REF.sub(lambda m: _expand(variables.get(m.group(1), ""), variables, depth + 1), value)
    return out.replace("\0", "$")


def _included(text: str, reader: Callable[[str], str | None] | None, depth: int = 0) -> str:
    """`include config.mk` / `-include .env`: the named files' text in place (their assignments count)."""
    if reader is None or depth > 3:
        return text
    out: list[str] = []
    for line in text.splitlines():
        m = re.match(r"^-?(?:s?include)\s+(.+)$", line)
        if m:
            for name in m.group(1).split():
                inc = reader(name.removeprefix("./"))
                if inc is not None:
                    out.append(_included(inc, reader, depth + 1))
            continue
        out.append(line)
    return "\n".join(out)


def make_goal(text: str, makefile: str, argv: list[str], env: Mapping[str, str] | None = None,
              reader: Callable[[str], str | None] | None = None) -> MakeGoal:
    """What `argv` (`make train EPOCHS=50`) runs from the Makefile `text` (`reader` reads included files)."""
    _, goals, cli, _ = parse_make_args(argv)
    text = _included(text, reader)
    env = dict(env or {})
    variables: dict[str, str] = {"MAKE": "make", "CURDIR": ".", "PWD": "."}  # make's own variables
    overridden: set[str] = set()
    exported: set[str] = set(cli)
    rules: dict[str, tuple[list[str], list[str]]] = {}
    first: str | None = None
    current: list[str] = []
    active: list[bool] = []  # one entry per open conditional: is its current branch read?
    taken: list[bool] = []  # has any branch of it been read?
    for line in _lines(text):
        cond = _CONDITIONAL.match(line.strip())
        if cond:
            word, rest = cond.group(1), cond.group(2)
            outer = all(active)
            if word == "endif":
                if active:
                    active.pop()
                    taken.pop()
            elif word == "else":
                if active:
                    nested = _CONDITIONAL.match(rest)  # `else ifeq (...)`
                    ok = _condition(nested.group(1), nested.group(2), {**env, **variables, **cli}) if nested else True
                    active[-1] = not taken[-1] and ok
                    taken[-1] = taken[-1] or active[-1]
            else:
                ok = outer and _condition(word, rest, {**env, **variables, **cli})
                active.append(ok)
                taken.append(ok)
            continue
        if not all(active):
            continue
        if line.startswith("\t"):
            cmd = line.strip()
            if cmd and not cmd.startswith("#"):
                for t in current:
                    rules[t][1].append(cmd)
            continue
        stripped = line.split("#", 1)[0].strip() if not line.lstrip().startswith("\t") else line
        if not stripped:
            continue
        exp = _EXPORT.match(stripped)
        if exp:
            exported.update(exp.group(1).split())
            continue
        m = _ASSIGN.match(stripped)
        if m:
            current = []
            override, name, op, val = bool(m.group(1)), m.group(3), m.group(4), m.group(5).strip()
            if m.group(2):
                exported.add(name)
            if name in cli and not override:
                continue
            if op == "?=":
                if name not in variables and name not in env:
                    variables[name] = val
            elif op in (":=", "::="):
                variables[name] = _expand(val, {**env, **variables})
            elif op == "+=":
                variables[name] = f"{variables.get(name, '')} {val}".strip()
            elif op == "=":
                variables[name] = val
            if override:
                overridden.add(name)
            continue
        m = _RULE.match(stripped)
        if m:
            targets = m.group(1).split()
            prereq_text, _, inline = m.group(2).partition(";")
            if re.match(r"^[A-Za-z_][\w.-]*\s*[:?+]?=", prereq_text):
                current = []  # a target-specific variable, not a rule
                continue
            current = targets
            for t in targets:
                rules.setdefault(t, ([], []))
                rules[t][0].extend(prereq_text.split())
                if inline.strip():
                    rules[t][1].append(inline.strip())
                if first is None and not t.startswith(".") and "%" not in t:
                    first = t
    for k, v in cli.items():
        if k not in overridden:
            variables[k] = v
    scope = {**env, **variables}
    goal = goals[0] if goals else first
    recipe: list[str] = []
    seen: set[str] = set()

    def rule_for(target: str) -> tuple[list[str], list[str], dict[str, str]] | None:
        """The target's rule, else a pattern rule (`train-%:`) with `$*` the matched stem."""
        if target in rules:
            return rules[target][0], rules[target][1], {"@": target}
        for name, (prereqs, cmds) in rules.items():
            head, pct, tail = name.partition("%")
            if pct and target.startswith(head) and target.endswith(tail) and len(target) > len(head) + len(tail):
                stem = target[len(head):len(target) - len(tail)]
                return [p.replace("%", stem) for p in prereqs], cmds, {"@": target, "*": stem}
        return None

    def run(target: str, depth: int) -> None:
        rule = rule_for(target)
        if target in seen or rule is None or depth > _MAX_DEPTH:
            return
        seen.add(target)
        prereqs, cmds, automatic = rule
        for p in prereqs:
            run(_expand(p, scope), depth + 1)
        for c in cmds:
            for var, val in automatic.items():  # automatic variables: $@, $*, $(@), $(*)
                c = c.replace(f"$({var})", val).replace(f"${var}", val)
            recipe.append(_expand(c, scope).lstrip("@-+ "))

    if goal:
        run(goal, 0)
    environment = {k: _expand(variables[k], scope) for k in exported if k in variables}
    return MakeGoal(makefile=makefile, goal=goal, recipe=recipe, variables=variables, environment=environment)
