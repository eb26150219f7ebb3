"""Real progress formats beyond the five the first regexes knew, read by one key/value tokenizer
with unit-aware values, plus the few layouts a tokenizer cannot read (Keras bars, timm's
`Time: 0.41s, 621/s`, YOLO tables), and the test that tells evaluation lines from training.

Why a tokenizer and not one regex per framework: most trainers print `key: value` or
`key=value` pairs (mmengine/mmdet, detectron2, torchvision's MetricLogger, fairseq, Paddle,
torchtitan, NeMo, DETR/DeiT/MAE, plain loops); what differs is the *vocabulary* (`time`,
`batch_cost`, `train_step_timing in s`, `ms/batch`, `ups`, `wps`, `ips`, `tps`) and the units.
One tokenizer plus a vocabulary covers them and new trainers that reuse the words. No parsing
library fits better than `re` here: log lines are not a grammar (lark/pyparsing would need one
per layout), and the units are a dozen fixed strings (no need for pint).

Every value is read from the line and converted by code (ms → s, it/s → 1/x s, `ups` → 1/x s);
nothing is inferred. Formats (checked against the frameworks' printing code):

- mmengine `Epoch(train) [1][ 50/7330]  lr: ..  eta: ..  time: 0.4555  data_time: ..  loss: 1.6`
  (and mmcv 1.x `Epoch [1][50/7330]\\tlr: .., time: 0.456, ..`, `Iter(train) [ 50/80000]`)
- detectron2 `eta: 0:10:02  iter: 19  total_loss: 2.1  ..  time: 0.4012  data_time: ..  lr: ..`
- torchvision/DETR MetricLogger `Epoch: [0]  [ 100/5005]  eta: ..  loss: 6.9 (6.9)  time: 0.4  data: ..`
- fairseq `epoch 001:  100 / 1000 loss=9.8, .., wps=12345, ups=3.1, ..`, the JSON variant
  `{"epoch": 1, "loss": "9.8", .., "ups": "3.1"}` and the pipe variant `| loss 9.8 | .. | ups 3.1 |`
- timm `Train: 0 [ 100/5004 (  2%)]  Loss: 6.9 (6.9)  Time: 0.412s,  621.4/s  (0.420s, ..)`
- PyTorch examples `| epoch 1 |  200/ 2983 batches | lr 20.00 | ms/batch 45.12 | loss 7.63 |`,
  ImageNet `Epoch: [0][ 100/5005]\\tTime  0.412 ( 0.520)\\tData ..\\tLoss 6.9 (6.9)`
- Keras 2/3 `1000/1000 [====] - 52s 52ms/step - loss: 0.3 - val_loss: ..` (and `━━━` bars)
- PaddlePaddle `[Epoch 0, iter: 100] lr: .., loss: .., batch_cost: 0.4 s, ips: 120 samples/s`,
  PaddleNLP `global step 100, epoch: 0, batch: 99, loss: 0.5, speed: 3.5 step/s`
- torchtitan `step: 10  loss:  8.1  memory: ..  tps: 1,234  mfu: ..`; NeMo/Lightning
  `train_step_timing in s=0.512` / `reduced_train_loss: 2.3`; HF-style JSON dicts (axolotl,
  LLaMA-Factory `tokens_per_second_per_gpu`, `throughput`)
- and by vocabulary: Composer `Train throughput/batches_per_sec: 1.2`, T5X/CLU
  `timing/seconds_per_step=0.5`, MaxText `completed step: 100, seconds: 0.5, Tokens/s/device: ..`,
  ESPnet `..., forward_time=.., train_time=0.5`, TF Estimator `global_step/sec: 3.4`, llm.c
  `step 1/74: train loss 4.6 (125.48 ms, 32629 tok/s)`, torchtune `1|100|Loss: 1.23: 10%|..`,
  LitGPT `iter time: 512 ms`, Caffe `Iteration 100 (3.45 iter/s, ..), loss = 2.3`, DLRM `12.3 ms/it`

A bare duration (`time`, `seconds`, `latency`) is a step time only beside a step counter or a
rate; a duration named per step (`step_time`, `batch_cost`, `52ms/step`, `ups`) stands alone,
and replaces a bare one on the same line. Also read, whatever the trainer:

- keys without a separator in delimited segments (`Train loss 3.5, It/sec 1.6, Tokens/sec 75`),
  a unit after an aside (`0.72(0.65s r0.07)s/itr`), a unit named in the key (`speed(iter/s)`);
- a unit per step makes any key a step time (`speed: 0.71 s/itr`); an interval's time is divided
  by its steps (`28.9s/100 iters`, `time for 50 steps: 20.1s`, `time_per_100_steps`); a
  samples/s rate beside a batch size gives batch / rate (never when either is per device);
- durations since the start are never step times (`elapsed`, `total time`, `wall_time`,
  `train_runtime`); a bare `N/T` fraction is a step counter (the one with the largest T, not an
  epoch's, not a date).

Evaluation lines (`Epoch(val)`, `Test: [`, `[Eval]`, fairseq `valid on 'valid' subset`,
detectron2 `Inference done`, YOLO's `Class  Images  Instances` bar, a line headed `Validation`,
...) are never training progress: `is_eval_line` says so and the tracker skips them.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from functools import lru_cache

from schedmate.agents.tracker.extraction import GROUPED, NUM, TIME_SCALE_S, Extraction, TimeRule

# -- tokens ---------------------------------------------------------------------------------------

_TIME_UNIT = r"(?:ns|us|µs|μs|ms|msecs?|secs?|seconds?|mins?|s)"
_PER = r"(?:step|it|itr|iter|batch|sample)"  # what a `<time>/<per>` unit is per (`s/itr`: 3DMPPE-style loggers)
_RATE_UNIT = r"(?:[A-Za-z]+/s(?:ec)?(?:/gpu)?|/s)"
_UNIT = rf"(?P<unit>{_TIME_UNIT}/{_PER}|{_RATE_UNIT}|{_TIME_UNIT})(?![\w/])"
# `0.72(0.65s r0.07)s/itr`: an aside in parentheses (a breakdown, a running mean) may sit between
# a value and its unit; it is skipped only when a unit follows it.
_ASIDE = r"(?:\s?\([^()]{1,40}\))?"
_VALUE = rf"['\"]?(?P<val>{GROUPED}|{NUM})['\"]?(?![\d.]|:\d)(?:{_ASIDE}\s?{_UNIT})?"
_WORD = r"[A-Za-z][\w./@%()\-]*"
# `key: value` / `key=value` / `'key': value` / `"key": "value"`; a key may hold a few words
# (`lm loss`, `train_step_timing in s`, `elapsed time per iteration (ms)`).
# Found from the separator back (a scan from every word start would try every key length).
_SEP_VALUE = re.compile(rf"[:=]\s*{_VALUE}")
_KEY_BEFORE = re.compile(rf"(?<![\w.])['\"]?(?P<key>{_WORD}(?: (?:{_WORD}|\([a-z]\))){{0,4}})['\"]?\s*\Z")
# `key value` without a separator (fairseq pipes, nanoGPT, PyTorch examples): known keys only.
_SPACE_KEYS = (
    r"loss|total_loss|train_loss|time|step_time|batch_time|iter_time|ms/batch|s/batch|ms/step|ms/it"
    r"|wps|ups|tps|ips|step|iter|itr|iteration|num_updates|epoch|dt|took|duration"
    r"|batch(?=\s+\d*\.\d+\s*\(\s*\d*\.\d+\s*\))"  # `Batch 2.924 (3.850)`: current (average) seconds
)
_QUALIFIER = re.compile(r"(?<![\w.])(total|elapsed|wall|cumulative|run|eval|val|valid|test)[ _]\Z")
_SPACE_PAIR = re.compile(rf"(?<![\w./])(?P<key>{_SPACE_KEYS})\s+{_VALUE}")  # run on the lowercased line
# `Iter 46: Train loss 3.5, Learning Rate 2e-08, It/sec 1.636, Tokens/sec 75.3` (MLX, many plain
# loops): a delimited segment that is just `Some Key value[unit]` pairs its words with the value,
# whatever the words are (the vocabulary then decides what they mean). Segments are split by
# `,` `;` `|` a tab or two spaces; a segment with more after the value is not a pair.
_SEG_DELIM = r"[,;|\t]|\s{2,}"
_SEGMENT_PAIR = re.compile(
    rf"(?:^|{_SEG_DELIM})\s*(?P<key>{_WORD}(?: {_WORD}){{0,3}})\s+{_VALUE}\s*(?=$|{_SEG_DELIM})"
)
_PER_STEP = re.compile(rf"(?<![\w.])(?P<val>{NUM})\s?(?P<unit>{_TIME_UNIT})/(?P<per>step|it|itr|iter|batch|sample)\b")
_NAMED_BRACKET_COUNTER = re.compile(
    r"\b(?:step|iter\w*|batch)\s*:?\s*\[\s*(\d+)\s*/\s*(\d+)\s*\]"
    r"|\bepoch\w*\s*:?\s*\[\s*\d+\s*/\s*\d+\s*\]\s*\[\s*(\d+)\s*/\s*(\d+)\s*\]",  # `Epoch: [1/120][220/3368]`
    re.IGNORECASE,
)
_BRACKET_COUNTER = re.compile(r"\[\s*(\d+)\s*/\s*(\d+)\s*(?:\(|\]|batches)|(?<![\w/.])(\d+)\s*/\s*(\d+)\s+(?:batches|\[|\()")


# -- durations written as wall clocks -------------------------------------------------------------
# `1m 2s 3ms`, `2h 3m`, `1h2m3s`, `0:00:01.23` (h:mm:ss), `01:02.5` (mm:ss with a fraction), `1.5h`:
# one reader for every spelling of a duration, so any time key (or phrase) takes any of them.
_DUR_UNIT = r"(?:ms|msecs?|us|µs|μs|ns|h|hrs?|hours?|mins?|minutes?|m|secs?|seconds?|s)(?![A-Za-z])"
_DUR_PART = rf"\d+(?:\.\d+)?\s?{_DUR_UNIT}"
_COMPOUND = rf"{_DUR_PART}(?:[\s,]{{0,2}}{_DUR_PART})*"
_CLOCK = r"\d{1,3}:\d{2}:\d{2}(?:\.\d+)?|\d{1,2}:\d{2}\.\d+"
DURATION = rf"(?:{_CLOCK}|{_COMPOUND})"
_DUR_PART_RE = re.compile(rf"(\d+(?:\.\d+)?)\s?({_DUR_UNIT})")
_UNIT_ORDER = {"h": 0, "m": 1, "s": 2, "ms": 3, "us": 4, "ns": 5}


def _unit_rank(unit: str) -> int:
    u = unit.lower()
    if u.startswith("h"):
        return 0
    if u in ("m", "min", "mins", "minute", "minutes"):
        return 1
    if u.startswith("ms") or u.startswith("msec"):
        return 3
    if u in ("us", "µs", "μs"):
        return 4
    if u == "ns":
        return 5
    return 2


def parse_duration(text: str) -> tuple[float, bool] | None:
    """(seconds, written as a wall clock) of one duration: `1m 2s 3ms` (62.003, True),
    `0:00:01.23` (1.23, True), `1.5h` (5400, True), `250ms` (0.25, False); None when `text` is
    not one duration (units out of order: `2s 1m`; a repeated unit; anything left over)."""
    t = text.strip()
    if not t:
        return None
    if ":" in t:
        m = re.fullmatch(r"(?:(\d{1,3}):)?(\d{1,2}):(\d{2}(?:\.\d+)?)", t)
        if m is None:
            return None
        h, mi, sec = int(m.group(1) or 0), int(m.group(2)), float(m.group(3))
        if sec >= 60 or (m.group(1) and mi >= 60):
            return None
        return h * 3600 + mi * 60 + sec, True
    parts = _DUR_PART_RE.findall(t)
    if not parts or re.sub(rf"{_DUR_PART}|[\s,]", "", t):
        return None
    ranks = [_unit_rank(u) for _, u in parts]
    if any(b <= a for a, b in zip(ranks, ranks[1:])):
        return None
    total = 0.0
    for v, u in parts:
        r = _unit_rank(u)
        total += float(v) * (3600.0, 60.0, 1.0, 1e-3, 1e-6, 1e-9)[r]
    return total, len(parts) > 1 or ranks[0] <= 1


def clock_of_day(text: str) -> float | None:
    """Seconds since midnight of a time-of-day stamp the line carries without a year: a leading
    `[12:00:01]`/`12:00:01.123`, glog's `I1013 14:04:15.149240 10456 file.cc:163]` (Caffe,
    PaddlePaddle, TensorFlow's C++ side), or a `Time=07:29:40` field (torch_xla). None when absent."""
    got = clock_of_day_res(text)
    return got[0] if got is not None else None


def clock_of_day_res(text: str) -> tuple[float, float] | None:
    """(`clock_of_day`, seconds per unit of its last printed digit)."""
    m = _GLOG_STAMP.match(text) or _CLOCK_STAMP.search(text)
    if m is None:
        return None
    g = "" if m.group("h") is not None else "2"
    h, mi, raw = int(m.group("h" + g)), int(m.group("mi" + g)), m.group("s" + g).replace(",", ".")
    sec = float(raw)
    if h > 23 or mi > 59 or sec >= 60:
        return None
    frac = raw.partition(".")[2]
    return h * 3600 + mi * 60 + sec, 10.0 ** -len(frac) if frac else 1.0


_GLOG_STAMP = re.compile(r"^\s*[IWEF]\d{4} (?P<h>\d{2}):(?P<mi>\d{2}):(?P<s>\d{2}(?:\.\d+)?)\s+\d+ [\w.\-]+:\d+\]")


_CLOCK_STAMP = re.compile(
    r"^\s*\[?(?P<h>\d{2}):(?P<mi>\d{2}):(?P<s>\d{2}(?:[.,]\d+)?)\]?(?=\s)"
    r"|\b(?:time|timestamp|now|clock)\s*[=:]\s*(?P<h2>\d{2}):(?P<mi2>\d{2}):(?P<s2>\d{2})(?![\d.:])",
    re.IGNORECASE,
)


WALL = "wall"  # the unit of a duration written as a wall clock (`1m 2s 3ms`, `0:00:01.23`), in seconds
_SEP_DURATION = re.compile(rf"[:=]\s*['\"]?(?P<dur>{DURATION})['\"]?(?![\w:.])")
_TIME_WORDS = r"time|elapsed|duration|took|dt|step_time|iter_time|batch_time|wall|wall_time|interval"
_SPACE_DURATION = re.compile(rf"(?<![\w./])(?P<key>{_TIME_WORDS})\s+(?P<dur>{DURATION})(?![\w:.])", re.IGNORECASE)


def _duration_fields(text: str, out: dict[int, Field]) -> None:
    """`key: 1m 2s 3ms`, `time 0:00:01.23`: wall-clock durations (the plain `0.5 s` is read by
    the generic value pattern). A `time=07:29:40` with a two-digit hour and no fraction is a
    time of day, not a duration (`clock_of_day` reads it)."""
    if ":" not in text and "=" not in text and not re.search(r"\d\s?(?:h|m)\b", text):
        return
    for m in _SEP_DURATION.finditer(text):
        k = _KEY_BEFORE.search(text, max(0, m.start() - 80), m.start())
        if k is not None:
            _add_duration(out, k.group("key"), m.group("dur"), m.start("dur"))
    for m in _SPACE_DURATION.finditer(text):
        _add_duration(out, m.group("key"), m.group("dur"), m.start("dur"))


def _add_duration(out: dict[int, Field], key: str, dur: str, start: int) -> None:
    if start in out:
        return
    if re.fullmatch(r"\d{2}:\d{2}:\d{2}", dur) and _norm_key(key) in ("time", "timestamp", "now", "clock"):
        return  # a time of day
    parsed = parse_duration(dur)
    if parsed is None:
        return
    seconds, wall = parsed
    if not wall and not re.search(r"\d\s?(?:ms|msecs?|us|µs|μs|ns|secs?|seconds?|s)\s*\Z", dur.strip()):
        return
    if wall or len(_DUR_PART_RE.findall(dur)) > 1:
        out[start] = Field(_norm_key(key), key, seconds, WALL, start)


@dataclass(frozen=True, slots=True)
class Field:
    """One `key value` pair of a line: key normalised (lowercase, `_` for spaces and `/`)."""

    key: str
    raw_key: str
    value: float
    unit: str | None
    start: int


def _norm_key(key: str) -> str:
    k = key.strip().strip("'\"").lower()
    k = re.sub(r"\s*\(t\)\Z", "_time", k)  # OpenCLIP `Data (t): 0.084 Batch (t): 0.490`: (t) for time
    k = re.sub(r"[\s/]+", "_", k)
    return k


def fields(text: str) -> list[Field]:
    """Every `key value` pair in `text`, in line order (a position is read once)."""
    out: dict[int, Field] = {}
    _duration_fields(text, out)
    for m in _SEP_VALUE.finditer(text):
        k = _KEY_BEFORE.search(text, max(0, m.start() - 80), m.start())
        if k is not None and not k.group("key").endswith((".py", ".cc", ".cpp", ".h")):  # `file.py:143:`
            _add(out, k.group("key"), m)
    low = text.lower()  # same offsets; `µ` and friends keep their length
    if len(low) == len(text):
        for m in _SPACE_PAIR.finditer(low):
            key = text[m.start("key") : m.end("key")]
            if (q := _QUALIFIER.search(low, max(0, m.start("key") - 16), m.start("key"))) is not None:
                key = f"{q.group(1)} {key}"  # `total time 3400s` is not a `time`
            elif m.group("key") == "batch":
                key = "batch_time"  # only a `Batch 2.924 (3.850)` pair gets here (see `_SPACE_KEYS`)
            _add(out, key, m)
    if " " in text:
        for m in _SEGMENT_PAIR.finditer(text):
            _add(out, m.group("key"), m)
    return [out[k] for k in sorted(out)]


def _add(out: dict[int, Field], key: str, m: re.Match[str]) -> None:
    start = m.start("val")
    if start in out:
        return
    try:
        value = float(m.group("val").replace(",", ""))
    except ValueError:
        return
    if math.isfinite(value):
        unit = m.group("unit")
        if unit is None and (ku := _KEY_UNIT_PAREN.search(key)) is not None:
            unit = ku.group(1)  # `train_speed(iter/s)`, `step_time (ms)`: the key names the unit
        out[start] = Field(_norm_key(key), key, value, unit, start)


_KEY_UNIT_PAREN = re.compile(rf"\(\s*({_TIME_UNIT}/{_PER}|{_RATE_UNIT}|{_TIME_UNIT})\s*\)\s*\Z")
_STEP_RATE_UNIT = re.compile(r"(?:it|its|itr|iter|iters|iteration|iterations|step|steps|batch|batches)/s(?:ec)?")


# -- vocabulary -----------------------------------------------------------------------------------

_EVAL_PREFIX = re.compile(r"^(?:val|valid|validation|eval|evaluation|test|dev)(?:_|$)")
_LOSS_EXACT = (
    "loss", "total_loss", "train_loss", "training_loss", "lm_loss", "reduced_train_loss", "loss_total",
    "train_loss_step", "avg_loss", "train_lm_loss", "cost", "currentcost", "current_cost",
)  # fmt: skip
_STEP_TIME_KEYS = {
    "time", "step_time", "steptime", "iter_time", "iteration_time", "batch_time", "time_per_step",
    "time_per_iter", "time_per_iteration", "batch_cost", "avg_batch_cost", "train_step_timing",
    "train_step_timing_in_s", "elapsed_time_per_iteration", "elapsed_time_per_iteration_(ms)",
    "time_step", "time_iter", "sec_step", "s_step", "s_it", "sec_it", "ms_batch", "ms_step", "ms_it",
    "s_batch", "step_time_ms", "step_time_s", "step_time_(ms)", "step_time_(s)", "iter_time_(s)",
    "iter_time_(ms)", "time_(ms)", "time_(s)", "time_ms", "time_s", "dt", "step_duration",
    "train_step_time", "batch_time_s", "iteration_time_ms", "step_time_sec", "latency", "duration", "took",
}  # fmt: skip
_BARE_TIME_KEYS = ("time", "dt", "seconds", "latency", "duration", "took")  # durations of *something*: trusted beside a counter or a rate
_RATE_KEYS: dict[str, str] = {
    "ips": "samples/s", "wps": "tokens/s", "tps": "tokens/s", "tokens_per_sec": "tokens/s",
    "tokens_per_second": "tokens/s", "tokens_per_second_per_gpu": "tokens/s", "tok_s": "tokens/s",
    "tokens_s": "tokens/s", "samples_per_sec": "samples/s", "samples_per_second": "samples/s",
    "interval_samples_per_second": "samples/s", "samples_s": "samples/s", "img_s": "images/s",
    "images_s": "images/s", "imgs_s": "images/s", "throughput": "unknown/s", "speed": "unknown/s",
    "sentences_s": "sequences/s", "seq_s": "sequences/s",
}  # fmt: skip
_INVERSE_KEYS = {"ups", "steps_per_second", "train_steps_per_second", "interval_steps_per_second", "it_s", "steps_s"}
# Suffix forms (`Train throughput/batches_per_sec`, `timing/seconds_per_step`, `Tokens/s/device`)
_INVERSE_SUFFIX = re.compile(r"(?:batches|steps?|global_step|it|iters?)_(?:per_)?s(?:ec(?:ond)?)?$")
_STEP_TIME_SUFFIX = re.compile(r"(?:seconds|secs?|s)_per_(?:step|iter(?:ation)?|batch)$")
_RATE_SUFFIX: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"(?:^|_)(?:samples|examples)_(?:per_)?s(?:ec(?:ond)?)?(?:_|$)"), "samples/s"),
    (re.compile(r"(?:^|_)(?:tokens|tok|words)_(?:per_)?s(?:ec(?:ond)?)?(?:_|$)"), "tokens/s"),
    (re.compile(r"(?:^|_)(?:images|imgs|img)_(?:per_)?s(?:ec(?:ond)?)?(?:_|$)"), "images/s"),
)
# Composer `Train loss/train/total`, LitGPT `loss train:`, OpenNMT `xent`
_LOSS_SUFFIX = re.compile(r"^(?:train_)?loss_train(?:_total)?$|^xent$")
_STEP_KEYS = ("global_step", "num_updates", "iteration", "iter", "itr", "step", "steps", "current_steps", "it")
# Durations since the start of the run (or of the epoch), never a step's: `elapsed: 1234.5s`,
# `train_runtime`, `wall_time`, `total_time`, `time_elapsed` (Megatron's `elapsed time per
# iteration` is named per step and read as such first).
_CUMULATIVE_KEY = re.compile(
    r"(?:^|_)(?:elapsed|runtime|wall|wall_?clock|wall_?time|total_time|time_total|cumulative\w*|cum_time)"
    r"(?:_time)?(?:_\(?(?:ms|s|sec|h)\)?)?$|^(?:time_)?elapsed"
)


def _time_scale(f: Field) -> float | None:
    """Seconds per unit of a duration field: the value's unit, else the key's, else seconds."""
    unit = (f.unit or "").lower()
    if unit == WALL:
        return 1.0
    if unit in TIME_SCALE_S:
        return TIME_SCALE_S[unit]
    if unit and unit not in TIME_SCALE_S:
        per = re.fullmatch(rf"({_TIME_UNIT})/(?:step|it|itr|iter|batch)", unit)
        return TIME_SCALE_S[per.group(1)] if per else None
    k = f.key
    if re.search(r"(?:^|_|\()ms(?:$|_|\))", k):
        return 1e-3
    return 1.0


def _rate_unit(f: Field) -> str | None:
    """The unit of a throughput field, or None when it is not one."""
    unit = f.unit or ""
    if unit and re.fullmatch(_RATE_UNIT, unit):
        u = unit.lower().replace("/sec", "/s").replace("/gpu", "")
        if u == "/s":
            return _RATE_KEYS.get(f.key, "samples/s")
        if u.startswith(("tok", "word", "wps")):
            return "tokens/s"
        if u.startswith(("sample", "ex", "seq")):
            return "samples/s" if u.startswith(("sample", "ex")) else "sequences/s"
        if u.startswith(("img", "image")):
            return "images/s"
        if u.startswith(("it", "step", "batch")):
            return "it/s"
        return u
    return _key_rate_unit(f.key)


@lru_cache(maxsize=4096)
def _key_rate_unit(key: str) -> str | None:
    """The throughput unit a key names (`wps`, `samples_per_sec`, `Tokens/s/device`), or None."""
    stripped = re.sub(r"^(?:train_|training_)", "", key)
    known = _RATE_KEYS.get(stripped) or _RATE_KEYS.get(key)
    if known is None:
        known = next((u for pattern, u in _RATE_SUFFIX if pattern.search(key)), None)
    return known


def _is_eval_key(key: str) -> bool:
    return _EVAL_PREFIX.match(key) is not None


@dataclass(frozen=True, slots=True)
class Reading:
    """What the vocabulary makes of a line's fields."""

    step: int | None = None
    step_time_s: float | None = None
    loss: float | None = None
    throughput: float | None = None
    throughput_unit: str | None = None
    total: int | None = None
    explicit_time: bool = False  # the step time is named per step (`step_time`, `52ms/step`), not a bare `time`
    time_rule: TimeRule | None = None  # which rule read the step time (`extraction.TimeRule`)
    interval_s: float | None = None  # one logging interval's wall time, its steps not stated
    clock_s: float | None = None  # a clock since the start (`wall=1118`): its slope over the steps, when nothing else


def read_fields(text: str, fs: list[Field] | None = None) -> Reading:
    """Step, step time, loss and throughput named by the line's keys (see the module docstring)."""
    fs = fields(text) if fs is None else fs
    loss = loss_any = None
    step_time = inverse = None
    explicit = False
    rule: TimeRule | None = None
    interval = None
    rate = rate_unit = None
    rate_key = ""
    batch = None
    batch_key = ""
    step = None
    clock = None
    for f in fs:
        kind, k = _key_kind(f.key)
        unit = (f.unit or "").lower()
        unit = "it/s" if _STEP_RATE_UNIT.fullmatch(unit) else unit
        if kind == "eval":
            continue
        if kind == "loss":
            loss = f.value if loss is None else loss
            continue
        if kind == "loss_any":
            loss_any = f.value if loss_any is None else loss_any
            continue
        if clock is None and f.value > 0 and _CLOCK_KEY.fullmatch(f.key) and (scale := _time_scale(f)) is not None:
            clock = f.value * scale  # (`train_wall` is not: fairseq resets it every interval in newer releases)
            continue
        if (n := _PER_N_KEY.fullmatch(k)) and f.value > 0 and not explicit and (scale := _time_scale(f)) is not None:
            step_time, explicit = f.value * scale / int(n.group(1)), True  # `time_per_100_steps: 12.3`
            rule = "interval"
            continue
        if kind == "interval":
            # `interval_time: 1m 2s 3ms`, `time_since_last_log: 45.1s`: a logging interval's time
            if interval is None and f.value > 0 and (scale := _time_scale(f)) is not None:
                interval = f.value * scale
            continue
        per_step_unit = _PER_STEP_UNIT.fullmatch(unit) is not None
        if per_step_unit or (kind == "time" and not (k == "seconds" and f.unit is not None)):
            # A unit per step (`0.71 s/itr`, `52ms/step`) makes any key a step time; a time named
            # per step replaces a bare `time` read earlier (modded-nanogpt's cumulative
            # `train_time:250140ms` before its `step_avg:43.50ms`).
            named = per_step_unit or k not in _BARE_TIME_KEYS
            if not named and unit == WALL:
                # `time: 1m 2s 3ms` under a bare key: a logging interval's wall time (per step when
                # the lines are one step apart; the tracker divides by the steps between lines)
                if interval is None and f.value > 0:
                    interval = f.value
                continue
            if (step_time is None or (named and not explicit)) and f.value > 0 and (scale := _time_scale(f)) is not None:
                step_time = f.value * scale
                explicit = named
                rule = "per_step_unit" if per_step_unit else ("named_per_step" if named else "bare_time")
            continue
        if f.value > 0 and (kind == "inverse" or unit in _IT_UNITS):
            if (unit in _IT_UNITS or not unit) and inverse is None:
                inverse = 1.0 / f.value
            if kind == "inverse":
                continue
        if rate is None and f.value > 0 and (r_unit := _rate_unit(f)) is not None and r_unit != "it/s":
            rate, rate_unit, rate_key = f.value, r_unit, f.key + unit
            continue
        if batch is None and _BATCH_KEY.fullmatch(k) and f.value >= 1 and f.value == int(f.value):
            batch, batch_key = int(f.value), f.key
            continue
        if step is None and kind == "step" and f.value >= 0 and f.value == int(f.value):
            step = int(f.value)
    keys = {f.key for f in fs}
    if "forward_time" in keys and "train_time" in keys:  # ESPnet: `iter_time` is the data iterator's
        step_time = next(f.value for f in fs if f.key == "train_time")
        explicit, rule = True, "named_per_step"
    total = None
    has_bracket = "[" in text or "batches" in text or "(" in text
    if step is None and has_bracket and (m := _NAMED_BRACKET_COUNTER.search(text) or _BRACKET_COUNTER.search(text)):
        step, total = (int(m.group(1)), int(m.group(2))) if m.group(1) is not None else (int(m.group(3)), int(m.group(4)))
    if step is None and "/" in text and (bare_counter := _fraction_counter(text)) is not None:
        step, total = bare_counter
    if step is None and "|" in text and (lead := _LEADING_STEP.match(text)) is not None:
        step = int(lead.group(1))
    per_unit = "/s" in text or "/it" in text or "/b" in text  # `/step`, `/sample`, `/iter`, `/batch`
    if step_time is None and per_unit and (m := _PER_STEP.search(text)) and m.group("per") != "sample":
        v = float(m.group("val"))
        step_time = v * TIME_SCALE_S[m.group("unit").lower()] if v > 0 else None
        explicit = step_time is not None
        rule = "per_step_unit" if explicit else rule
    if step_time is None and inverse is not None:
        step_time, explicit, rule = inverse, True, "inverse_rate"
    if step_time is None and step is not None:
        # llm.c `step 1/74: train loss 4.67 (125.48 ms, 32629 tok/s)`: one unnamed duration
        bare = _BARE_DURATION.findall(text)
        if len(bare) == 1 and float(bare[0][0]) > 0:
            step_time = float(bare[0][0]) * TIME_SCALE_S[bare[0][1].lower()]
            rule = "unnamed_duration"
        elif not bare and interval is None and (pd := paren_duration(text)) is not None:
            # `step 400 | loss 2.3417 (0.52s)`: a duration in parentheses after the loss. Written
            # as a wall clock (`1m 2s 3ms`, `0:01:02`) it is the interval's since the last line
            # (the tracker divides it by the steps between lines); a plain `0.52s` is the step's.
            if pd[1]:
                interval = pd[0]
            else:
                step_time, rule = pd[0], "unnamed_duration"
    if step_time is None and "/s" in text and (m := _BARE_STEP_RATE.search(text)) and float(m.group(1)) > 0:
        step_time, explicit, rule = 1.0 / float(m.group(1)), True, "inverse_rate"
    if (step_time is None or rule == "bare_time") and (iv := interval_steps(text)) is not None:
        # `28.99s/100 iters`, `time for the last 50 updates: 1m 2s 3ms`, `100 iters took 51.2 s`,
        # `12.3s per 100 iterations`: an interval's time over its stated number of steps
        step_time, explicit, rule, interval = iv[0] / iv[1], True, "interval", None
    if rate is None and "/s" in text and (m := _BARE_RATE.search(text)):
        bare_unit = _rate_unit(Field("", "", float(m.group(1).replace(",", "")), m.group(2), m.start()))
        if bare_unit not in (None, "it/s"):
            rate, rate_unit = float(m.group(1).replace(",", "")), bare_unit
    if step_time is None and batch is not None and rate is not None and rate_unit in _PER_SAMPLE_UNITS:
        # `batch_size: 32 ... samples/s: 64`: the line states both, so a step takes batch / rate
        # (not when either is per device or per micro-batch: the two may count different GPUs)
        if not _PER_DEVICE.search(rate_key + " " + batch_key):
            step_time, rule = batch / rate, "batch_over_rate"
    if clock is None and step is not None and "sec" in text and (m := _ONMT_CLOCK.search(text)):
        clock = float(m.group(1))  # OpenNMT-py `Step 50/5000; ...; 84/336 tok/s;    890 sec`: since the start
    if step_time is not None:
        interval = None
    return Reading(step, step_time, loss if loss is not None else loss_any, rate, rate_unit, total, explicit,
                   rule if step_time is not None else None, interval, clock)  # fmt: skip


_BARE_DURATION = re.compile(rf"[(,|]\s*({NUM})\s?(ms|s|sec|secs)(?=\s*[,|])")  # listed beside other figures
# llama2.c / nanoGPT forks `650 | loss 5.3185 | lr 4.98e-05 | 9852.73ms | mfu 0.19%`: a row led by its step
_LEADING_STEP = re.compile(r"\s*(\d+)\s+\|\s")
_BARE_STEP_RATE = re.compile(rf"(?<![\w./])({NUM})\s?(?:it|its|iter|iters|step|steps|batch|batches)/s(?:ec)?\b")
# `36,389 tokens/s`, OpenNMT's `3595 src tok/s; 3669 tgt tok/s` and `5118/265 tok/s` (source/target
# pair sharing one unit: the first, the source side, is read)
_BARE_RATE = re.compile(
    rf"(?<![\w./])({GROUPED}|{NUM})(?:/{NUM})?\s?(?:(?:src|source|tgt|target|input|output|train)\s)?"
    rf"((?:samples|tokens|tok|images|img|imgs|examples|sequences|seqs)/s(?:ec)?)\b"
)


_IT_UNITS = ("it/s", "step/s", "steps/s")
# A bare `N/T` with N <= T (`| epoch 011  3000 / 8223 loss=..`, OpenNMT `Epoch  1, 13400/37527;`):
# not a date (`02/18 12:00`), not a rate (`5118/265 tok/s`), not an epoch's (`Epoch 0/7`).
_FRACTION = re.compile(r"(?<![\w/.:])(\d+)\s?/\s?(\d+)(?![\w/.:]|\s?[A-Za-z]+/s)(?P<clock>\s+\d\d?:\d\d)?")
_EPOCH_BEFORE = re.compile(r"(?:epoch|pass|ep)\s*\[?\s*\Z", re.IGNORECASE)


def _fraction_counter(text: str) -> tuple[int, int] | None:
    """The step counter among the line's bare `N/T` fractions: the one with the largest T (a
    run has more steps than epochs), skipping those headed by `epoch`."""
    best: tuple[int, int] | None = None
    for m in _FRACTION.finditer(text):
        n, t = int(m.group(1)), int(m.group(2))
        if m.group("clock") and t <= 31:
            continue  # `02/18 12:00:01`: a date
        if 0 <= n <= t and t > 0 and not _EPOCH_BEFORE.search(text, max(0, m.start() - 8), m.start()):
            best = (n, t) if best is None or t > best[1] else best
    return best


_STEP_WORDS = r"(?:steps?|its|iters?|iterations?|batch(?:es)?)"
_PER_N_STEPS = re.compile(
    rf"(?<![\w.])(?P<val>{NUM})\s?(?P<unit>{_TIME_UNIT})\s?/\s?(?P<n>\d+)\s?{_STEP_WORDS}\b"
    rf"|\b(?:time|took)\s+(?:for|per|of)\s+(?:the\s+)?(?:last\s+)?(?P<n2>\d+)\s+{_STEP_WORDS}\s*[:=]?\s*(?P<val2>{NUM})"
    rf"\s?(?P<unit2>{_TIME_UNIT})?(?![\w/])"
    rf"|\b(?P<n3>\d+)\s+{_STEP_WORDS}\s+(?:took|in)\s+(?P<val3>{NUM})\s?(?P<unit3>{_TIME_UNIT})(?![\w/])",
    re.IGNORECASE,
)
_DUR_OR_NUM = rf"(?P<dur>{DURATION}|{NUM})"
_STEP_NOUNS = r"(?:steps?|its|iters?|iterations?|batch(?:es)?|updates?|optimi[sz]er steps?)"
_LAST = r"(?:the\s+)?(?:last\s+|past\s+|previous\s+|prev\s+)?"
# Phrases that give an interval's time and its length in steps, whatever the duration's spelling.
_INTERVAL_PHRASES = tuple(
    re.compile(p, re.IGNORECASE)
    for p in (
        # `28.99s/100 iters`, `1m 2s / 50 steps`
        rf"(?<![\w.])(?P<dur>{DURATION})\s?/\s?(?P<n>\d+)\s?{_STEP_NOUNS}\b",
        # `time for the last 100 updates: 1m 2s 3ms`, `time per 50 iterations = 20.1`, `took for 10 steps 3.2s`
        rf"\b(?:time|took|elapsed|duration|wall(?:\s?time)?)\s+(?:for|per|of|over|in)\s+{_LAST}(?P<n>\d+)\s+{_STEP_NOUNS}"
        rf"\s*[:=]?\s*{_DUR_OR_NUM}(?![\w/:.])",
        # `100 iters took 51.2 s`, `50 steps in 0:00:20.5`
        rf"\b(?P<n>\d+)\s+{_STEP_NOUNS}\s+(?:took|in|done in|completed in)\s+(?P<dur>{DURATION})(?![\w/:.])",
        # `12.3s per 100 iterations`, `1m 2s for the last 100 updates`, `4.2 s every 50 steps`
        rf"(?<![\w.])(?P<dur>{DURATION})\s+(?:per|for|every|over|in)\s+{_LAST}(?P<n>\d+)\s+{_STEP_NOUNS}\b",
        # `[100 iters: 45.1s]`, `(last 50 steps: 1m 2s)`
        rf"\b(?:last\s+)?(?P<n>\d+)\s+{_STEP_NOUNS}\s*[:=]\s*(?P<dur>{DURATION})(?![\w/:.])",
    )
)


def interval_steps(text: str) -> tuple[float, int] | None:
    """(seconds, steps) of an interval the line names with its length: `28.9s/100 iters`, `time
    for the last 100 updates: 1m 2s 3ms`, `100 iters took 51.2 s`, `12.3s per 100 iterations`.
    A number without a unit is seconds only after a `time ... N steps:` phrase."""
    low = text.lower()
    if not any(w in low for w in ("step", "it", "batch", "update")):
        return None
    for rx in _INTERVAL_PHRASES:
        m = rx.search(text)
        if m is None:
            continue
        n = int(m.group("n"))
        dur = m.group("dur")
        parsed = parse_duration(dur)
        if parsed is None:
            try:
                parsed = (float(dur), False)  # a bare number after `time for N steps:`: seconds
            except ValueError:
                continue
        if n > 0 and parsed[0] > 0:
            return parsed[0], n
    return None


_PAREN_DURATION = re.compile(
    rf"\b\w*loss\w*\s*[:=]?\s*{NUM}\s*\(\s*(?P<dur>{DURATION})\s*\)", re.IGNORECASE
)


def paren_duration(text: str) -> tuple[float, bool] | None:
    """A duration in parentheses right after the loss (`loss 2.3417 (0.52s)`, `loss: 2.31
    (1m 2s 3ms)`): (seconds, written as a wall clock)."""
    if "(" not in text:
        return None
    m = _PAREN_DURATION.search(text)
    if m is None:
        return None
    parsed = parse_duration(m.group("dur"))
    return parsed if parsed is not None and parsed[0] > 0 else None


_PER_N_KEY = re.compile(
    r"(?:time|secs?|seconds|s|ms)_(?:per|for)_(\d+)_(?:steps|iters|iterations|batches)(?:_\(?(?:ms|s|sec)\)?)?"
)
# OpenNMT-py's report line (`onmt/utils/statistics.py`: `"Step %s; acc: ..; %3.0f/%3.0f tok/s; %6.0f sec"`,
# the seconds since training started): the trailing unnamed `N sec` after a `Step N/T;` head
_ONMT_CLOCK = re.compile(rf"\bStep\s+\d+\s*/\s*\d+;.*;\s*({NUM})\s*sec\s*$")
# A clock since the start of the run, named so (fairseq `wall=1118`, `elapsed: 1:02:03`, `time_elapsed`)
_CLOCK_KEY = re.compile(r"(?:wall|wall_?clock|wall_?time|elapsed|elapsed_time|time_elapsed|total_time|time_total)(?:_\(?(?:ms|s|sec)\)?)?")
_BATCH_KEY = re.compile(r"(?:global_|total_|effective_)?(?:batch_size|bs)")
_PER_SAMPLE_UNITS = ("samples/s", "sequences/s", "images/s")
_PER_DEVICE = re.compile(r"gpu|device|rank|micro|per_dev|local", re.IGNORECASE)
_PER_STEP_UNIT = re.compile(rf"{_TIME_UNIT}/(?:step|it|itr|iter|batch)")


@lru_cache(maxsize=4096)
def _key_kind(key: str) -> tuple[str, str]:
    """(kind, key without a `train_` prefix) of a normalised key: eval, loss, loss_any, time,
    inverse (a steps-per-second rate), step or other. Pure, so cached: keys repeat every line."""
    if _is_eval_key(key):
        return "eval", key
    k = key if key in _STEP_TIME_KEYS else re.sub(r"^train(?:ing)?_(?!loss)", "", key)  # fairseq `train_ups`
    if k in _LOSS_EXACT or re.fullmatch(r"train_?(?:lm_)?loss", k) or _LOSS_SUFFIX.match(key):
        return "loss", k
    if k.endswith("loss") and not k.startswith("loss_"):
        return "loss_any", k
    if _INTERVAL_KEY.search(k):
        return "interval", k  # a logging interval's wall time (`interval_time`, `time_since_last_log`)
    if _per_step_key(k) or (k in _STEP_TIME_KEYS and k != "time"):
        return "time", k  # named per step (before the cumulative test: `elapsed_time_per_iteration`)
    if _CUMULATIVE_KEY.search(k):
        return "other", k
    if k in _STEP_TIME_KEYS or _STEP_TIME_SUFFIX.search(k) or k == "seconds":
        return "time", k
    if k in _INVERSE_KEYS or _INVERSE_SUFFIX.search(k):
        return "inverse", k
    if k in _STEP_KEYS or (re.search(r"(?:^|_)(?:step|iter|iteration)$", k) and not k.startswith(("optim", "lr"))):
        return "step", k
    return "other", k


_INTERVAL_KEY = re.compile(
    r"^(?:(?:log_?)?interval|window|period)_(?:time|duration|wall_?time|elapsed)"
    r"|^(?:time|elapsed|duration|wall_?time)_(?:since_last(?:_log)?|(?:of|for|per)_(?:the_)?(?:last_)?(?:log_)?interval)"
    r"|^(?:time|elapsed)_since_last"
)


def _per_step_key(key: str) -> bool:
    """`time_per_step_ms`, `iter_time_(s)`, `step_time_s` ...: a duration named per step."""
    return _PER_STEP_KEY.fullmatch(key) is not None


_KEY_UNIT = r"(?:_\(?(?:ms|s|sec)\)?|\((?:ms|s|sec)\))?"
# `step_time`, `iter_time_(ms)`, `time/batch` (char-rnn), `time_per_iter`, modded-nanogpt's
# `step_avg` and `avg_step_time`: a duration per step, or a running mean of one.
_PER_STEP_KEY = re.compile(
    rf"(?:avg_|mean_)?(?:step|iter|itr|iteration|batch|b|it)_?(?:time|duration)(?:_avg|_mean)?{_KEY_UNIT}"
    rf"|(?:step|iter|itr|iteration|batch)_(?:avg|mean){_KEY_UNIT}"
    rf"|time_(?:per_)?(?:step|it|itr|iter|iteration|batch){_KEY_UNIT}"
)


# -- training vs evaluation ----------------------------------------------------------------------

_EVAL_MARKERS = re.compile(
    r"\b(?:Epoch|Iter)\s*\((?:val|test)\)"  # mmengine
    r"|\bvalid on '"  # fairseq
    r"|\|\s*(?:valid|test)\s*\|"  # fairseq `| valid |`
    r"|\bInference done\b"  # detectron2
    r"|\bSaving dict for global step\b"  # TF Estimator's evaluation results
    r"|\[(?i:eval|val|valid|validation|test|testing)\]"  # Paddle `[Eval]`, `[eval]`
    r"|\b(?:Validation|Test|Testing|Predicting) DataLoader\b|\bValidation sanity check\b"  # Lightning
    r"|\bClass\s+Images\s+(?:Instances|Labels)\b"  # YOLO
    r"|(?:^|[\s\]|:-])(?:Test|Eval|Val|Valid|Validation)\s*:\s*\[",  # torchvision/ImageNet `Test: [`
)
_HEAD_TOKEN = re.compile(
    r"\s*(?:\[[^\]]{0,60}\]|\(\w+\)|\d{1,2}/\d{1,2}\s+\d\d:\d\d:\d\d|\d\d:\d\d:\d\d(?:[.,]\d+)?"
    r"|(?:INFO|DEBUG|WARNING|I|W|END)\b|[\w.]+\s+-(?=\s)|[\w.]+\s*[|:](?=\s)|[-|:])"
)
_EVAL_WORDS = ("val", "test", "eval", "predict")  # a head word (within the line's first 160 characters)
_MARKER_HINTS = (
    "(val", "(test", "valid on", "| valid", "| test", "inference done", "saving dict", "[eval", "[val", "[test", "dataloader",
    "sanity check", "class ", "test:", "eval:", "val:", "valid:", "validation:",
)  # fmt: skip
_EVAL_HEAD = re.compile(
    r"\s*(?:val|valid|validation|validating|eval|evaluation|evaluating|test|testing|predict\w*)\b(?![_-])",
    re.IGNORECASE,
)


def is_eval_line(text: str) -> bool:
    """A validation/evaluation/test line (its timings are not the training step time): a
    structural marker anywhere, or an evaluation word heading the line after its log prefix
    (stamp, `[tags]`, `name - INFO -`, `| INFO | name |`)."""
    low = text.lower()
    if any(w in low for w in _MARKER_HINTS) and _EVAL_MARKERS.search(text):
        return True
    if not any(w in low[:160] for w in _EVAL_WORDS):
        return False  # the common case, decided by substring tests (microseconds)
    pos = 0
    for _ in range(12):
        if _EVAL_HEAD.match(text, pos):
            return True
        m = _HEAD_TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            return False
        pos = m.end()
    return False


# -- framework recognisers -------------------------------------------------------------------------

# (literal gate, pattern): the pattern runs only on lines holding the literal (regexes are slow)
_FRAMEWORK_HINTS: tuple[tuple[str, tuple[str, ...], re.Pattern[str]], ...] = (
    ("mmengine", ("(train)", "Epoch [", "Iter ["), re.compile(r"\b(?:Epoch|Iter)\s*\(train\)|\b(?:Epoch|Iter) \[\d+\]\[?\d")),
    ("detectron2", ("d2.", "iter: "), re.compile(r"\bd2\.|\beta: \S+\s+iter: \d+")),
    ("metric_logger", ("Epoch: [",), re.compile(r"\bEpoch: \[\d+\]")),
    ("fairseq", ("num_updates", "train_inner", "wps", "ups", "| epoch "),
     re.compile(r"\b(?:num_updates|train_inner|(?:train_)?wps|(?:train_)?ups)\b|\| epoch \d{3}")),
    ("timm", ("Train: ",), re.compile(r"\bTrain: \d+ \[")),
    ("paddle", ("batch_cost", "reader_cost", "ips", "[Train]"), re.compile(r"\b(?:batch_cost|reader_cost|ips)\b|\[Train\]")),
    ("torchtitan", ("tps:",), re.compile(r"\bstep:\s*\d+\s+loss:.*\btps:")),
    ("nemo", ("train_step_timing", "reduced_train_loss"), re.compile(r"train_step_timing|reduced_train_loss")),
    ("nanogpt", ("iter ",), re.compile(r"^iter \d+: loss ")),
)


def _framework(text: str) -> str:
    for name, gates, pattern in _FRAMEWORK_HINTS:
        if any(g in text for g in gates) and pattern.search(text):
            return name
    return "fields"


# Every key/unit the vocabulary reads contains one of these (substring tests cost microseconds).
_METRIC_HINTS = (
    "loss", "time", "cost", "/s", "ups", "wps", "tps", "ips", "timing", "latency", "second", "ms", "xent", "speed",
    "throughput", "per_s", "sec", "/it", "/step", "/batch",
)  # fmt: skip
_TRAIN_LOSS_KEY = re.compile(r"^\s*(?:Train loss/|train/loss\b|train_loss\s*[:=])", re.IGNORECASE)


def key_fields(text: str) -> Extraction | None:
    """Any `key: value` progress line whose keys name a step time, rate or loss, with a step
    counter or a per-step time (a loss alone with no counter is not progress)."""
    if "%|" in text or re.search(r"\d+/\d+\s*\[[\d:]+<", text):
        return None  # a tqdm bar: `tqdm_bar` reads it (with its postfix)
    low = text.lower()
    if not any(h in low for h in _METRIC_HINTS):
        return None  # no metric word or unit at all (most noise lines): skip the tokenizer
    r = read_fields(text)  # (`regex_extract` has already refused evaluation lines)
    if r.step_time_s is None and r.loss is None and r.throughput is None and r.interval_s is None:
        return None
    if r.step is None and not (r.step_time_s is not None and (r.explicit_time or r.throughput is not None)):
        if not (r.loss is not None and _TRAIN_LOSS_KEY.search(text)):
            return None  # no counter: only a time named per step is trusted (prose says "time 3 s")
    return Extraction(_framework(text), r.step, r.step_time_s, r.loss, r.throughput, r.throughput_unit, r.total,
                      r.time_rule, r.interval_s if r.step is not None else None,
                      r.clock_s if r.step is not None else None)  # fmt: skip


_KERAS = re.compile(
    r"^\s*(?P<n>\d+)/(?P<total>\d+)\s*(?:\[[=>.]*\]|[━─\s]+)?\s*-?\s*(?:ETA: \S+|\d+(?:\.\d+)?(?:ms|s|us|m)\b)?"
)


def keras(text: str) -> Extraction | None:
    """Keras `N/T [====] - 52s 52ms/step - loss: 0.3 - val_loss: ..` (Keras 3: `━━━` bars)."""
    m = _KERAS.match(text)
    if m is None or ("[" not in text[: m.end()] and "━" not in text and "ms/step" not in text and "/step" not in text):
        return None
    if not re.search(r"\s-\s\w+: ", text) and "/step" not in text:
        return None
    st = None
    rate = None
    if (p := _PER_STEP.search(text)) is not None:
        v = float(p.group("val")) * TIME_SCALE_S[p.group("unit").lower()]
        if v > 0:
            if p.group("per") == "sample":
                rate = 1.0 / v
            else:
                st = v
    loss = None
    for f in fields(text):
        if f.key == "loss":
            loss = f.value
            break
    if st is None and loss is None and rate is None:
        return None
    return Extraction("keras", int(m.group("n")), st, loss, rate, "samples/s" if rate else None, int(m.group("total")),
                      "per_step_unit" if st is not None else None)  # fmt: skip


# Marian (`src/training/scheduler.h`): `Ep. 1 : Up. 400 : Sen. 51200 : Cost 192.55 : Time 33.76s :
# 9576.24 words/s`; the Time is the wall time since the previous display (`--disp-freq` updates):
# an interval, divided by the updates between two lines by the tracker
_MARIAN = re.compile(
    rf"\bEp\.\s*\d+\s*:\s*Up\.\s*(?P<n>\d+)\s*:.*?\bCost\s+(?P<loss>{NUM})\s*:\s*Time\s+(?P<t>{NUM})s"
    rf"(?:\s*:\s*(?P<rate>{NUM})\s+words/s)?"
)
# Darknet (`detector.c`): `957: 0.660188, 0.689227 avg loss, 0.000839 rate, 3.315456 seconds, 61248 images`:
# the batch's loss, the running mean, the learning rate, that iteration's seconds
_DARKNET = re.compile(
    rf"^\s*(?P<n>\d+):\s*(?P<loss>{NUM}),\s*{NUM}\s+avg(?: loss)?,\s*{NUM}\s+rate,\s*(?P<t>{NUM})\s+seconds,\s*\d+\s+images"
)
# BigDL DistriOptimizer: `[Iteration 17445][Wall Clock 26295.0s] Trained 3072 records in 1.4747 seconds.
# Throughput is 2083.1 records/second. Loss is 2.74.`: one line per iteration, its own time
_BIGDL = re.compile(
    rf"\[Iteration (?P<n>\d+)\].*?\bTrained \d+ records in (?P<t>{NUM}) seconds\."
    rf"(?:\s*Throughput is (?P<rate>{NUM}) records/second\.)?(?:\s*Loss is (?P<loss>{NUM})\.?)?"
)
# YOLACT (`train.py`): `[  0]     110 || B: 6.134 | C: 4.497 | .. | T: 16.399 || ETA: .. || timer: 0.288`:
# T is the total loss, timer the moving mean of the iteration time in seconds
_YOLACT = re.compile(rf"^\s*\[\s*\d+\]\s+(?P<n>\d+)\s+\|\|.*?\bT:\s*(?P<loss>{NUM})\s*\|\|.*?\btimer:\s*(?P<t>{NUM})")


def layouts(text: str) -> Extraction | None:
    """Marian, Darknet, BigDL and YOLACT lines: fixed layouts whose values carry no `key: value`
    vocabulary the tokenizer could read (an unnamed `3.3 seconds`, `Time 33.76s` between ` : `)."""
    if "Up." in text and (m := _MARIAN.search(text)):
        t, rate = float(m.group("t")), m.group("rate")
        return Extraction("marian", int(m.group("n")), None, float(m.group("loss")),
                          float(rate) if rate else None, "tokens/s" if rate else None,
                          interval_s=t if t > 0 else None)  # fmt: skip
    if "avg" in text and "seconds" in text and (m := _DARKNET.match(text)):
        t = float(m.group("t"))
        return Extraction("darknet", int(m.group("n")), t if t > 0 else None, float(m.group("loss")),
                          time_rule="framework" if t > 0 else None)  # fmt: skip
    if "Trained" in text and (m := _BIGDL.search(text)):
        t, rate, loss = float(m.group("t")), m.group("rate"), m.group("loss")
        return Extraction("bigdl", int(m.group("n")), t if t > 0 else None, float(loss) if loss else None,
                          float(rate) if rate else None, "samples/s" if rate else None,
                          time_rule="framework" if t > 0 else None)  # fmt: skip
    if "timer:" in text and (m := _YOLACT.match(text)):
        t = float(m.group("t"))
        return Extraction("yolact", int(m.group("n")), t if t > 0 else None, float(m.group("loss")),
                          time_rule="framework" if t > 0 else None)  # fmt: skip
    return None


_TIMM = re.compile(
    rf"\bTrain: (?P<epoch>\d+) \[\s*(?P<n>\d+)/(?P<total>\d+).*?\bLoss:\s*(?P<loss>{NUM})"
    rf".*?\bTime:\s*(?P<time>{NUM})s?,\s*(?P<rate>{NUM})/s"
)


def timm(text: str) -> Extraction | None:
    """timm `Train: 0 [ 100/5004 (  2%)]  Loss: 6.9 (6.9)  Time: 0.412s,  621.4/s  (..)`: the
    current (not the running-mean) time and samples/s."""
    m = _TIMM.search(text)
    if m is None:
        return None
    t, r = float(m.group("time")), float(m.group("rate"))
    return Extraction(
        "timm", int(m.group("n")), t if t > 0 else None, float(m.group("loss")),
        r if r > 0 else None, "samples/s" if r > 0 else None, int(m.group("total")),
        "bare_time" if t > 0 else None,
    )  # fmt: skip


__all__ = ["Field", "Reading", "fields", "is_eval_line", "keras", "key_fields", "layouts", "read_fields", "timm"]
