"""Spec for the root-cause line (issue 28 item 4, issue 27 item 4): the most specific statement of
the cascade is quoted (the errno, not the generic wrapper), and an exception class printed on the
root-cause line is never overruled by a learned guess naming another class."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from schedmate.agents.failure import FailureHandler, FailureHandlerConfig
from schedmate.agents.failure.decision import ClassifierMethod, settle
from schedmate.agents.failure.learned import Candidate, LearnedVerdict
from schedmate.agents.failure.rules import RulesClassifier
from schedmate.agents.failure.specific import most_specific
from schedmate.taxonomy import Component, FailureReason, category_of

R = FailureReason
D003 = Path(__file__).resolve().parents[1] / "evals" / "devset" / "failures" / "logs" / "d-003.log"
CASCADE = [
    "step 10 loss 2.31",
    "[W socket.cpp:436] [c10d] The server socket cannot be initialized on [::]:29500 (errno: 97 - Address family not "
    "supported by protocol).",
    "[E socket.cpp:472] [c10d] The server socket has failed to bind to 0.0.0.0:29500 (errno: 98 - Address already in use).",
    "Traceback (most recent call last):",
    '  File "/opt/conda/bin/torchrun", line 8, in <module>',
    "    sys.exit(main())",
    "RuntimeError: The server socket has failed to listen on any local network address.",
]
# the README's Slurm walkthrough (tests/test_slurm.py CRASH): a KeyError the learned method called NameError
SLURM_CRASH = [
    "loading data", "building the scheduler", "Traceback (most recent call last):",
    '  File "/shared/jobs/crash/crash.py", line 5, in <module>', '    schedule = config["lr_schedule"]',
    "               ~~~~~~^^^^^^^^^^^^^^^", "KeyError: 'lr_schedule'",
]


def test_within_one_line_the_errno_sentence_is_the_root_cause() -> None:
    line = D003.read_text()
    found = most_specific([line], 0)
    assert found is not None and found[0] == 0
    assert found[1] == "The server socket has failed to bind to [::]:29500 (errno: 98 - Address already in use)."


def test_in_a_cascade_the_errno_line_before_the_wrapper_is_the_root_cause_not_a_benign_errno() -> None:
    found = most_specific(CASCADE, 6, block=3)
    assert found is not None and found[0] == 2 and "errno: 98" in found[1]  # not the IPv6 errno 97 warning


def test_a_line_already_specific_or_an_errno_of_another_failure_is_left_alone() -> None:
    assert most_specific(["FileNotFoundError: [Errno 2] No such file or directory: 'x.json'"], 0) is None
    other = ["wandb: WARNING [Errno 2] No such file or directory: 'wandb/settings'", "KeyError: 'lr'"]
    assert most_specific(other, 1) is None


def test_the_port_in_use_diagnosis_quotes_the_errno_and_proposes_a_port(classifier: Any, tmp_path: Path) -> None:
    handler = FailureHandler(classifier, config=FailureHandlerConfig(method="rules"))
    d = handler.diagnose(D003, {"job_id": "d-003"})
    assert d.located is not None and d.located.line_no == 0
    assert d.root_cause is not None and d.root_cause.startswith("The server socket has failed to bind") \
        and "errno: 98" in d.root_cause
    assert d.remediation is not None and d.remediation.key == "change_port" and d.remediation.values["port"] == "29500"
    log = tmp_path / "cascade.log"
    log.write_text("\n".join(CASCADE) + "\n")
    d = handler.diagnose(log, {"job_id": "cascade"})
    assert d.located is not None and d.located.line_no == 2 and "errno: 98" in (d.root_cause or "")


def _learned(*cands: tuple[FailureReason, float], confident: bool = True) -> LearnedVerdict:
    cs = tuple(Candidate(r, category_of(r), p) for r, p in cands)
    return LearnedVerdict(cs[0].category, cs[0].probability, cs[0].reason, cs[0].probability, Component.SOFTWARE,
                          confident, cs)


def test_a_printed_exception_class_beats_a_learned_guess_naming_another_class() -> None:
    key = RulesClassifier().classify(["KeyError: 'lr_schedule'"])
    name_guess = _learned((R.NAME_ERROR, 0.9), (R.KEY_ERROR, 0.05))
    v = settle(key, name_guess, class_on_root=True)
    assert v is not None and v.reason is R.KEY_ERROR and v.source == "rules" and "class wins" in v.note
    # not on the root line (e.g. a class read further down the block), the learned guess stands
    kept = settle(key, name_guess, class_on_root=False)
    assert kept is not None and kept.reason is R.NAME_ERROR
    # a learned reason that is not an exception class (the class is only its container) stands
    loading = _learned((R.MODEL_LOADING_ERROR, 0.9), (R.KEY_ERROR, 0.05))
    stands = settle(key, loading, class_on_root=True)
    assert stands is not None and stands.reason is R.MODEL_LOADING_ERROR


@pytest.mark.parametrize("method", ["learned", "rules"])
def test_the_readme_slurm_example_is_a_key_error_with_every_method(classifier: Any, method: ClassifierMethod) -> None:
    handler = FailureHandler(classifier, config=FailureHandlerConfig(method=method))
    d = handler.diagnose_lines(SLURM_CRASH, {"job_id": "slurm-crash"})
    assert d.reason is R.KEY_ERROR and d.root_cause == "KeyError: 'lr_schedule'", (d.reason, d.message)
    assert d.located is not None and d.located.line_no == 6
    assert d.remediation is not None and d.remediation.key == "fix_code" and d.remediation.values == {"exception": "KeyError"}
