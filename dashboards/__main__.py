"""`python -m schedmate.dashboards [--out DIR]`: regenerate the Grafana dashboards' JSON."""

from __future__ import annotations

import argparse
from pathlib import Path

from schedmate.dashboards.build import write_all

DEFAULT_OUT = Path(__file__).resolve().parent / "json"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m schedmate.dashboards", description=__doc__)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"output folder (default: {DEFAULT_OUT})")
    args = parser.parse_args(argv)
    for path in write_all(args.out):
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
