"""Grafana dashboards generated from code (`build.py`); `python -m schedmate.dashboards --out DIR`
writes their JSON (committed copies in `dashboards/json/`)."""
