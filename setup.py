"""Package layout: the repository's top-level folders form one namespace, `schedmate`.

pyproject.toml holds the metadata; this file only maps folders to packages with setuptools'
`package-dir`, and lists every sub-package found under them so a new one can never be left out of
a wheel (a plain `packages = [...]` list in pyproject drifts as folders are added).
"""

from pathlib import Path

from setuptools import setup

ROOTS = {
    "schedmate": "schedmate",
    "schedmate.agents": "agents",
    "schedmate.embeddings": "embeddings",
    "schedmate.adapters": "adapters",
    "schedmate.sim": "sim",
    "schedmate.deploy": "deploy",
    "schedmate.schedulers": "schedulers",
    "schedmate.dashboards": "dashboards",
    "schedmate.evals": "evals",
    "schedmate.synthetic": "synthetic",
    "schedmate.tests": "tests",
}


def find_packages() -> list[str]:
    here = Path(__file__).parent
    found = []
    for package, folder in ROOTS.items():
        for init in sorted((here / folder).rglob("__init__.py")):
            rel = init.parent.relative_to(here / folder)
            found.append(".".join([package, *rel.parts]))
    return found


setup(package_dir=ROOTS, packages=find_packages())
