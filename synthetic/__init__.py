"""Synthetic artefacts: generated job repositories, training/failure logs and job histories.

Two users: the trace-driven simulator, which needs code and logs for jobs that public traces
describe only by size and time (`sim.artefacts`), and the evaluation suites, which need
labelled corpora (`evals`). The agents never import from here: what they know about workloads
and failures is written independently (`tests/test_layering.py` enforces it), so a score on a
generated corpus is not the generator grading itself.
"""
