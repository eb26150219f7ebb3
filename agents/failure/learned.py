"""The primary failure classifier: learned from labelled root-cause windows, not hand-written.

Why: an exception class does not decide a failure's category, its context does. `RuntimeError:
NCCL communicator was aborted` is an infrastructure fault after a watchdog timeout and a
framework one after another rank ran out of memory; a `KeyError` raised while loading a config
is the user's path, not the library. Signature rules keyed on the exception name cannot see that;
a classifier over the *window* around the root-cause line can.

How: a window is the root-cause line plus a few lines around it (traceback frames, the record
before, the launcher's line after) and the few lines elsewhere in the log that match a
signature, all normalised (`embedding_text`: launcher/record prefixes, ANSI and markdown
removed; numbers, hex, ids and paths masked, but a frame keeps its `package/module.py` and
function, which say whose code raised). The root-cause line and the context are embedded
separately with MiniLM (`schedmate.embeddings.embedder`), concatenated (context down-weighted),
with one signed column for whose code raised the exception (`frame_origin`: the user's or an
installed package's), and a multinomial logistic regression (scikit-learn) over the 29 Acme
reasons (a reason whose category the context moved, `by_context` in the bank, is a class of its
own: `ModelLoadingError@script` for a mistyped local path) is fitted on the
example bank (`data/examples.jsonl`, hand-written from public knowledge of real failures). The
category probability is the sum of its reasons'; probabilities are calibrated by one temperature
fitted on out-of-fold logits (grouped cross-validation over the bank).

Untrusted text: lines addressed to a model (`cleaning.looks_like_instruction`) never enter a
window, and the output is only ever a taxonomy enum with a probability.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from schedmate.agents.failure.cleaning import looks_like_instruction
from schedmate.agents.failure.locator import is_cascade
from schedmate.agents.failure.rules import (
    CleanLine,
    RulesClassifier,
    clean_line,
    is_traceback_header,
    traceback_exceptions,
)
from schedmate.embeddings.embedder import Embedder
from schedmate.embeddings.templates import mask_variables
from schedmate.taxonomy import Component, FailureCategory, FailureReason, category_of, component_of

DEFAULT_BANK = Path(__file__).with_name("data") / "examples.jsonl"
_RULES = RulesClassifier()
_MAX_CHARS = 300  # per line fed to the embedder (MiniLM reads 256 tokens; the head says most)

# `File "/opt/conda/lib/python3.10/site-packages/transformers/modeling_utils.py", line 3370, in from_pretrained`
_FRAME = re.compile(r'^\s*File "(?P<path>[^"]*)", line \d+(?:, in (?P<func>\S+))?')


# --- the example bank ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Example:
    """One labelled root-cause window of the bank."""

    reason: FailureReason
    line: str
    before: tuple[str, ...] = ()
    after: tuple[str, ...] = ()
    context_category: FailureCategory | None = None  # whose fault, when the context overrides the taxonomy

    @property
    def category(self) -> FailureCategory:
        return self.context_category or category_of(self.reason)


def load_examples(path: str | Path = DEFAULT_BANK) -> list[Example]:
    """The bank: one JSON object per line with `reason`, `line`, `before`, `after` and a
    `category`. The category must agree with the taxonomy (a typo in the bank is an error, not a
    label) unless the example says `"by_context": true`: the context decides whose fault it is
    (an `AttributeError` raised in the user's own dataset class is the script's, not the
    framework's; a state_dict that does not fit the user's own model is the user's checkpoint)."""
    out: list[Example] = []
    for n, raw in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if not raw.strip():
            continue
        item = json.loads(raw)
        reason = FailureReason(item["reason"])
        category = FailureCategory(item["category"]) if "category" in item else category_of(reason)
        override: FailureCategory | None = None
        if category is not category_of(reason):
            if item.get("by_context") is not True:
                raise ValueError(f"{path}:{n}: category {category.value} does not hold reason {reason.value}"
                                 " (set by_context when the context decides)")  # fmt: skip
            override = category
        before, after = tuple(item.get("before", ())), tuple(item.get("after", ()))
        out.append(Example(reason, item["line"], before, after, override))
    return out


def _label(reason: FailureReason, category: FailureCategory) -> str:
    """One class of the model: a reason, with its category when the context moved it."""
    return reason.value if category is category_of(reason) else f"{reason.value}@{category.value}"


def _unlabel(label: str) -> tuple[FailureReason, FailureCategory]:
    reason, _, category = label.partition("@")
    return FailureReason(reason), FailureCategory(category) if category else category_of(reason)


# --- windows ------------------------------------------------------------------------------------


def embedding_text(raw: str | bytes | CleanLine) -> str:
    """One line as the classifier reads it: cleaned (`rules.clean_line`), a traceback frame
    reduced to `File package/module.py in function`, variables masked, capped."""
    line = raw if isinstance(raw, CleanLine) else clean_line(raw)
    text = line.text.strip()
    m = _FRAME.match(text)
    if m is not None:
        parts = [p for p in re.split(r"[/\\]", m.group("path")) if p]
        text = f"File {'/'.join(parts[-2:])}" + (f" in {m.group('func')}" if m.group("func") else "")
        return text[:_MAX_CHARS]
    return mask_variables(text)[:_MAX_CHARS]


@dataclass(frozen=True, slots=True)
class RootCauseWindow:
    """What the classifier reads, normalised: the root-cause line, its neighbours (`context`),
    and the lines near it that carry a failure signature (`evidence`: a watchdog timeout, an Xid,
    an OOM on another rank), each embedded on its own so a signature is not diluted by frames."""

    focus: str
    context: tuple[str, ...] = ()
    evidence: tuple[str, ...] = ()
    origin: Origin = ""  # whose code raised it: the innermost traceback frame before the focus


Origin = Literal["user", "library", ""]
_ORIGIN_SIGN: dict[str, float] = {"user": 1.0, "library": -1.0, "": 0.0}
# `  File "/x/site-packages/torch/nn/modules/module.py", line 2041, in load_state_dict` and IPython's
# `/usr/local/lib/python3.7/dist-packages/mmcv/runner/base.py in run(self, ...)`
_ANY_FRAME = re.compile(r'^\s*File "(?P<path>[^"]*)", line \d+|^(?P<ipath>\S+\.py) in [\w<>]+')
# Installed or standard-library code: a package directory, the interpreter's lib, a frozen module.
_LIBRARY_PATH = re.compile(r"(?:site|dist)-packages|[/\\]lib[/\\]python\d|^<frozen |[/\\]lib[/\\]python$", re.IGNORECASE)


_CODE_MARK = re.compile(r"^\s*(?:-+>|[\^~]+\s*$|\d+ )")


def frame_origin(lines: Sequence[CleanLine]) -> Origin:
    """Where the innermost frame in `lines` (a traceback read top to bottom) points: installed
    or standard-library code (`library`), anything else (`user`), or no frame (`""`). Whose code
    raised an exception says more about whose fault it is than the exception's class. Only the
    traceback directly above the last line counts."""
    for k in range(len(lines) - 1, -1, -1):
        text = lines[k].text
        m = _ANY_FRAME.match(text)
        if m is not None:
            path = m.group("path") or m.group("ipath") or ""
            return "library" if _LIBRARY_PATH.search(path) else "user"
        if not text.strip() or text[:1].isspace() or _CODE_MARK.match(text):
            continue  # code, carets, IPython's `---> 12` markers, blank lines under a frame
        if k > 0 and _ANY_FRAME.match(lines[k - 1].text):
            continue  # the code line under a frame, its indentation lost to a launcher prefix
        return ""  # something that is not this traceback: no frame of its own
    return ""


# Lines every traceback has: they say nothing about which failure it is.
_UNINFORMATIVE = re.compile(
    r"^(?:Traceback \(most recent call last\):|During handling of the above exception|The above exception was the direct cause)"
)


def _split(lines: Sequence[CleanLine], rules: RulesClassifier) -> RootCauseWindow:
    context: list[str] = []
    evidence: list[str] = []
    for line in lines:
        if line.binary or not line.text.strip() or looks_like_instruction(line.text) or _UNINFORMATIVE.match(line.text.strip()):
            continue
        if is_cascade(line.text, rules):
            continue  # the launcher reporting that something failed says nothing about what
        (evidence if rules.match(line.text) is not None else context).append(embedding_text(line))
    return RootCauseWindow("", tuple(dict.fromkeys(t for t in context if t)), tuple(dict.fromkeys(t for t in evidence if t)))


def window_of(example: Example, rules: RulesClassifier | None = None) -> RootCauseWindow:
    split = _split([clean_line(x) for x in (*example.before, *example.after)], rules or _RULES)
    origin = frame_origin([clean_line(x) for x in example.before])
    return RootCauseWindow(embedding_text(example.line), split.context, split.evidence, origin)


def root_cause_window(
    lines: Sequence[str | bytes],
    focus: int,
    *,
    before: int = 4,
    after: int = 2,
    salient: int = 3,
    rules: RulesClassifier | None = None,
) -> RootCauseWindow:
    """The window around `lines[focus]` (the root-cause line): up to `before` distinct lines of
    the same stream before it, `after` after it, and the `salient` lines nearest to it elsewhere
    that match a signature rule (an Xid line 80 lines earlier says more than the line before).
    Blank, binary and instruction-like lines are left out; other streams' lines too."""
    rules = rules or _RULES
    cleaned = [clean_line(x) for x in lines]
    if not 0 <= focus < len(cleaned):
        raise IndexError(f"focus {focus} outside the window of {len(cleaned)} lines")
    source = cleaned[focus].source

    def usable(i: int) -> bool:
        c = cleaned[i]
        return not c.binary and bool(c.text.strip()) and not looks_like_instruction(c.text)

    picked: list[int] = []
    for rng, n in ((range(focus - 1, max(-1, focus - 40), -1), before), (range(focus + 1, min(len(cleaned), focus + 20)), after)):
        seen: set[str] = set()
        for i in rng:
            if len(seen) >= n:
                break
            if rng.step == 1 and is_traceback_header(cleaned[i].text):
                break  # another traceback (the launcher's, the next rank's) starts: not this failure's context
            if usable(i) and cleaned[i].source == source:
                key = embedding_text(cleaned[i])
                if key not in seen:
                    seen.add(key)
                    picked.append(i)
    near = sorted(
        (i for i in range(len(cleaned)) if i != focus and i not in picked and usable(i) and rules.match(cleaned[i].text)),
        key=lambda i: abs(i - focus),
    )[:salient]
    split = _split([cleaned[i] for i in sorted({*picked, *near})], rules)
    frames = [c for c in cleaned[max(0, focus - 40) : focus] if c.source == source]
    return RootCauseWindow(embedding_text(cleaned[focus]), split.context, split.evidence, frame_origin(frames))


def exception_focus(lines: Sequence[str | bytes], focus: int) -> int:
    """The root exception line of a traceback opened at `focus`, else `focus` itself."""
    found = traceback_exceptions([clean_line(x) for x in lines], focus)
    return found[0] if found else focus


# --- the classifier -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Candidate:
    reason: FailureReason
    category: FailureCategory
    probability: float


@dataclass(frozen=True, slots=True)
class LearnedVerdict:
    """The learned answer: category with its (calibrated) probability, the reason when it is
    probable enough (else None), and the top reasons for tie-breaking and the record."""

    category: FailureCategory
    probability: float  # of the category
    reason: FailureReason | None
    reason_probability: float
    component: Component
    confident: bool
    candidates: tuple[Candidate, ...]
    category_probabilities: dict[FailureCategory, float] = field(default_factory=dict)
    window: RootCauseWindow | None = None


class LearnedFailureClassifier:
    """Logistic regression over MiniLM embeddings of root-cause windows (module docstring).

    Fitted lazily on first use (embedding the bank takes seconds on a CPU; the embedder's cache
    keeps repeated texts free). `min_confidence`: the category probability at which the answer
    is `confident` (the LLM may not touch it); `min_reason`: the probability at which a reason
    is named at all."""

    def __init__(
        self,
        embedder: Embedder,
        examples: Sequence[Example] | None = None,
        *,
        context_weight: float = 0.5,
        evidence_weight: float = 0.8,
        origin_weight: float = 0.5,
        c: float = 8.0,
        min_confidence: float = 0.6,
        min_reason: float = 0.3,
        folds: int = 4,
        seed: int = 0,
        feature_cache: Path | None = None,
    ) -> None:
        self.embedder = embedder
        # where the bank's embedded features are kept between processes (embedding ~500 windows
        # costs minutes on a busy CPU; `schedmate diagnose` would pay it on every call); keyed by a
        # hash of the texts, the weights and the embedder, so a changed bank is re-embedded
        self.feature_cache = feature_cache
        self.examples = list(examples) if examples is not None else load_examples()
        self.context_weight = context_weight
        self.evidence_weight = evidence_weight
        self.origin_weight = origin_weight
        self.c = c
        self.min_confidence = min_confidence
        self.min_reason = min_reason
        self.folds = folds
        self.seed = seed
        self.temperature = 1.0
        self._model: Any = None  # a fitted scikit-learn classifier (no type stubs)
        self._classes: list[tuple[FailureReason, FailureCategory]] = []

    # -- features ----------------------------------------------------------------------------------

    def features(self, windows: Sequence[RootCauseWindow]) -> np.ndarray:
        """[embed(focus), wc * embed(context), we * embed(evidence), wo * sign(origin)] per
        window, each part's lines joined into one text (zeros for an empty part)."""
        focus = self.embedder.embed([w.focus for w in windows])
        parts = [focus]
        for weight, texts in ((self.context_weight, [" | ".join(w.context) for w in windows]),
                              (self.evidence_weight, [" | ".join(w.evidence) for w in windows])):  # fmt: skip
            block = np.zeros_like(focus)
            todo = [i for i, t in enumerate(texts) if t]
            if todo:
                block[todo] = self.embedder.embed([texts[i] for i in todo])
            parts.append(weight * block)
        # one signed column: +1 user code, -1 installed code, 0 unknown (no frame says nothing either way)
        origin = np.array([[_ORIGIN_SIGN[w.origin]] for w in windows], dtype=np.float64).reshape(len(windows), 1)
        parts.append(self.origin_weight * origin)
        return np.hstack(parts).astype(np.float64)

    def _training_rows(self) -> tuple[list[RootCauseWindow], list[str], list[int]]:
        """Each example as written, and as its line with only the lines before it (a log may end
        there, or its launcher lines may be missing); `groups` keeps both in one CV fold."""
        windows: list[RootCauseWindow] = []
        labels: list[str] = []  # `_label`: a reason, with the category the context gave it
        groups: list[int] = []
        for g, ex in enumerate(self.examples):
            full = window_of(ex)
            variants = [full]
            if ex.after:
                variants.append(window_of(Example(ex.reason, ex.line, ex.before, (), ex.context_category)))
            for w in dict.fromkeys(variants):
                windows.append(w)
                labels.append(_label(ex.reason, ex.category))
                groups.append(g)
        return windows, labels, groups

    # -- fitting -----------------------------------------------------------------------------------

    def _new_model(self) -> Any:  # scikit-learn has no type stubs
        from sklearn.linear_model import LogisticRegression

        return LogisticRegression(C=self.c, max_iter=2000, random_state=self.seed)

    def _bank_key(self, windows: Sequence[RootCauseWindow], *extra: object) -> str:
        return hashlib.sha256(json.dumps({
            "embedder": [getattr(self.embedder, "model_name", type(self.embedder).__name__), self.embedder.dim],
            "weights": [self.context_weight, self.evidence_weight, self.origin_weight],
            "windows": [[w.focus, list(w.context), list(w.evidence), w.origin] for w in windows],
            "extra": [repr(e) for e in extra],
        }, sort_keys=True).encode()).hexdigest()[:32]

    def _cache_save(self, path: Path, **arrays: np.ndarray) -> None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(f".{os.getpid()}.tmp")
            with open(tmp, "wb") as fh:
                np.savez(fh, **arrays)  # type: ignore[arg-type]  # numpy's stub takes **kwds for allow_pickle: bool
            os.replace(tmp, path)
        except OSError:
            pass  # a read-only cache folder costs time, not correctness

    def _bank_features(self, windows: Sequence[RootCauseWindow]) -> np.ndarray:
        """`features(windows)`, read from `feature_cache` when it holds this exact bank."""
        if self.feature_cache is None:
            return self.features(windows)
        path = Path(self.feature_cache) / f"learned-bank-{self._bank_key(windows)}.npz"
        try:
            with np.load(path, allow_pickle=False) as z:
                x = z["x"]
            if x.shape[0] == len(windows):
                return x
        except (OSError, ValueError, KeyError):
            pass  # absent or unreadable: embed again
        x = self.features(windows)
        self._cache_save(path, x=x)
        return x

    def fit(self) -> LearnedFailureClassifier:
        """Fit on the bank; the fitted weights are kept in `feature_cache` too (plain arrays, no
        pickles), keyed by the bank, the settings and scikit-learn's version."""
        import sklearn

        windows, labels, groups = self._training_rows()
        path = None
        if self.feature_cache is not None:
            key = self._bank_key(windows, labels, groups, self.c, self.folds, self.seed, sklearn.__version__)
            path = Path(self.feature_cache) / f"learned-model-{key}.npz"
            if self._load_fitted(path):
                return self
        x = self._bank_features(windows)
        y = np.array(labels)
        logits, _ = self._out_of_fold(x, y, np.array(groups))
        self.temperature = _fit_temperature(logits, y, self._oof_classes)
        model = self._new_model()
        model.fit(x, y)
        self._model = model
        self._classes = [_unlabel(c) for c in model.classes_]
        if path is not None:
            self._cache_save(path, coef=model.coef_, intercept=model.intercept_,
                             classes=np.array(model.classes_, dtype=str), temperature=np.array(self.temperature),
                             oof_classes=np.array(self._oof_classes, dtype=str))
        return self

    def _load_fitted(self, path: Path) -> bool:
        try:
            with np.load(path, allow_pickle=False) as z:
                coef, intercept, classes = z["coef"], z["intercept"], z["classes"]
                temperature, oof = float(z["temperature"]), [str(c) for c in z["oof_classes"]]
        except (OSError, ValueError, KeyError):
            return False
        model = self._new_model()
        model.coef_, model.intercept_ = coef, intercept
        model.classes_ = classes.astype(object)
        model.n_features_in_ = coef.shape[1]
        model.n_iter_ = np.zeros(1, dtype=np.int32)
        self._model, self.temperature, self._oof_classes = model, temperature, oof
        self._classes = [_unlabel(str(c)) for c in classes]
        return True

    def ensure_fitted(self) -> LearnedFailureClassifier:
        """`fit` unless already fitted."""
        return self if self._model is not None else self.fit()

    def _out_of_fold(self, x: np.ndarray, y: np.ndarray, groups: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Out-of-fold logits over all classes (grouped, stratified folds) and fold ids."""
        from sklearn.model_selection import StratifiedGroupKFold

        classes = sorted(set(y))
        self._oof_classes = classes
        logits = np.full((len(y), len(classes)), -30.0)
        fold_of = np.zeros(len(y), dtype=int)
        splitter = StratifiedGroupKFold(n_splits=self.folds, shuffle=True, random_state=self.seed)
        for k, (tr, te) in enumerate(splitter.split(x, y, groups)):
            model = self._new_model()
            model.fit(x[tr], y[tr])
            cols = [classes.index(c) for c in model.classes_]
            logits[np.ix_(te, cols)] = model.decision_function(x[te])
            fold_of[te] = k
        return logits, fold_of

    def cross_validate(self) -> dict[str, float]:
        """Grouped k-fold scores on the bank itself (what `fit` calibrates on): reason and
        category accuracy, and the expected calibration error of the category probability."""
        windows, labels, groups = self._training_rows()
        x = self._bank_features(windows)
        y = np.array(labels)
        logits, _ = self._out_of_fold(x, y, np.array(groups))
        t = _fit_temperature(logits, y, self._oof_classes)
        probs = _softmax(logits / t)
        classes = [_unlabel(c) for c in self._oof_classes]
        cat_names = list(FailureCategory)
        cat_p = np.stack([probs[:, [i for i, (_, k) in enumerate(classes) if k is c]].sum(1) for c in cat_names], 1)
        true_cat = np.array([cat_names.index(_unlabel(v)[1]) for v in y])
        pred_cat = cat_p.argmax(1)
        conf = cat_p.max(1)
        pred_reason = np.array([classes[i][0].value for i in probs.argmax(1)])
        y = np.array([_unlabel(v)[0].value for v in y])
        return {
            "rows": float(len(y)),
            "reason_accuracy": float((pred_reason == y).mean()),
            "category_accuracy": float((pred_cat == true_cat).mean()),
            "category_ece": _ece(conf, pred_cat == true_cat),
            "confident_share": float((conf >= self.min_confidence).mean()),
            "confident_category_accuracy": float((pred_cat == true_cat)[conf >= self.min_confidence].mean())
            if (conf >= self.min_confidence).any()
            else float("nan"),
            "temperature": float(t),
        }

    # -- prediction --------------------------------------------------------------------------------

    def with_thresholds(self, *, min_confidence: float | None = None, min_reason: float | None = None) -> LearnedFailureClassifier:
        """A copy sharing this one's fitted model, deciding with other thresholds."""
        self.ensure_fitted()
        other = copy.copy(self)
        other.min_confidence = self.min_confidence if min_confidence is None else min_confidence
        other.min_reason = self.min_reason if min_reason is None else min_reason
        return other

    def classify(self, lines: Sequence[str | bytes], focus: int) -> LearnedVerdict:
        """Classify the failure whose root-cause line is `lines[focus]` (a traceback header
        there is followed to its exception line)."""
        return self.predict(root_cause_window(lines, exception_focus(lines, focus)))

    def predict(self, window: RootCauseWindow) -> LearnedVerdict:
        return self.predict_many([window])[0]

    def predict_many(self, windows: Sequence[RootCauseWindow]) -> list[LearnedVerdict]:
        self.ensure_fitted()
        logits = self._model.decision_function(self.features(windows))
        probs = _softmax(np.atleast_2d(logits) / self.temperature)
        return [self._verdict(p, w) for p, w in zip(probs, windows, strict=True)]

    def _verdict(self, p: np.ndarray, window: RootCauseWindow) -> LearnedVerdict:
        by_cat = {c: float(sum(p[i] for i, (_, k) in enumerate(self._classes) if k is c)) for c in FailureCategory}
        category = max(by_cat, key=by_cat.__getitem__)
        order = np.argsort(-p)
        candidates = tuple(Candidate(*self._classes[int(i)], float(p[i])) for i in order[:5])
        best = next(c for c in candidates if c.category is category) if any(c.category is category for c in candidates) else None
        reason = best.reason if best is not None and best.probability >= self.min_reason else None
        if reason is not None:
            component = component_of(reason)
        else:
            component = Component.UNKNOWN if category is FailureCategory.INFRASTRUCTURE else Component.SOFTWARE
        return LearnedVerdict(
            category=category,
            probability=by_cat[category],
            reason=reason,
            reason_probability=best.probability if best is not None else 0.0,
            component=component,
            confident=by_cat[category] >= self.min_confidence,
            candidates=candidates,
            category_probabilities=by_cat,
            window=window,
        )


def _softmax(z: np.ndarray) -> np.ndarray:
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


def _fit_temperature(logits: np.ndarray, y: np.ndarray, classes: Sequence[str]) -> float:
    """The temperature minimising the out-of-fold negative log-likelihood (a 1-D grid search:
    one parameter, so it cannot overfit the bank the way per-class calibration would)."""
    idx = np.array([list(classes).index(v) for v in y])
    best_t, best_nll = 1.0, float("inf")
    for t in np.exp(np.linspace(np.log(0.2), np.log(5.0), 60)):
        p = _softmax(logits / t)[np.arange(len(y)), idx]
        nll = float(-np.log(np.clip(p, 1e-12, 1.0)).mean())
        if nll < best_nll:
            best_t, best_nll = float(t), nll
    return best_t


def _ece(conf: np.ndarray, correct: np.ndarray, bins: int = 10) -> float:
    edges = np.linspace(0.0, 1.0, bins + 1)
    total = 0.0
    for lo, hi in zip(edges[:-1], edges[1:], strict=True):
        mask = (conf > lo) & (conf <= hi)
        if mask.any():
            total += mask.mean() * abs(float(correct[mask].mean()) - float(conf[mask].mean()))
    return total


_SHARED: dict[tuple[int, str], LearnedFailureClassifier] = {}


def _default_feature_cache() -> Path | None:
    """`<SchedMate data dir>/cache`, or None when it cannot be created (then nothing is kept)."""
    from schedmate.config import data_dir

    try:
        return data_dir() / "cache"
    except OSError:
        return None


def shared_classifier(embedder: Embedder, bank: str | Path = DEFAULT_BANK) -> LearnedFailureClassifier:
    """One fitted classifier (default settings) per (embedder, bank) in this process: every
    handler built on the same embedder shares it, so the bank is embedded and fitted once."""
    key = (id(embedder), str(Path(bank).resolve()))
    clf = _SHARED.get(key)
    if clf is None or clf.embedder is not embedder:
        clf = LearnedFailureClassifier(embedder, load_examples(bank), feature_cache=_default_feature_cache())
        _SHARED[key] = clf
    return clf
