"""Fast path of the Metric Tracker: per-framework regexes for progress lines, and line timestamps.

Each extractor reads one *normalised* line (ANSI, `\\r` redraws and rank prefixes already gone,
see `schedmate.embeddings.logtext.normalise_line`) and returns an `Extraction` or None. Every
value is read from the line itself, converted to SI units (seconds, per-second rates); nothing
is inferred. Formats (`logs.md` §2.4):

- **Megatron-LM** `iteration N/ T | ... elapsed time per iteration (ms): X | ... lm loss: Y |`
- **DeepSpeed** `... global_step=N, RunningAvgSamplesPerSec=R, CurrSamplesPerSec=C, ...`,
  `samples/sec=R`, and `step=N, skipped=.., lr=[..]` (a step marker only: no metric)
- **HF Trainer** dict lines `{'loss': .., 'grad_norm': .., 'epoch': ..}`, the final
  `{'train_runtime': .., 'train_samples_per_second': .., 'train_steps_per_second': .., ...}` and
  the end-of-run table lines `train_steps_per_second = 1.778` (run averages, warm-up included)
- **tqdm / Lightning** bars `N/T [elapsed<remaining, R it/s]` or `s/it`, Lightning's postfix
  `loss=L`; bars of data loading, downloads, evaluation are ignored (not training steps)
- **custom key-value** lines `step N loss L time T`, nanoGPT `iter N: loss L, time Tms`,
  `step N/T | loss=L | step_time=Tms`: needs a step counter plus a loss, a time or a rate.

- **other trainers** (`formats.py`): timm, Keras bars, and a `key: value` tokenizer with a
  step-time/loss/rate vocabulary (mmengine, detectron2, fairseq, Paddle, torchtitan, NeMo, ...)

All extractors are tried; the one reading the most fields wins (then one with a step time, then
the order above). Values that are not finite (nan/inf loss) or not positive (times, rates) are
dropped, never reported. A validation/evaluation/test line is never read (`formats.is_eval_line`).
"""

from __future__ import annotations

import math
import re
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta, timezone, tzinfo

from schedmate.agents.tracker.extraction import GROUPED, NUM, TIME_SCALE_S, Extraction, TimeRule
from schedmate.agents.tracker.formats import is_eval_line, keras, key_fields, layouts, read_fields, timm
from schedmate.embeddings.logtext import normalise_line, strip_ansi


def _num(text: str | None) -> float | None:
    if text is None:
        return None
    try:
        value = float(text.replace(",", ""))
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _pos(text: str | None) -> float | None:
    value = _num(text)
    return value if value is not None and value > 0 else None


def _int(text: str | None) -> int | None:
    value = _num(text)
    return int(value) if value is not None and value >= 0 and value == int(value) else None


def _clean(ex: Extraction) -> Extraction | None:
    """None unless something was read; drops non-finite losses (already None from `_num`)."""
    if ex.has_metric or ex.step is not None:
        return ex
    return None


# -- Megatron-LM ----------------------------------------------------------------------------------

_MEG_ITER = re.compile(r"\biteration\s+(\d+)\s*/\s*\d+\s*\|")
_MEG_TIME = re.compile(r"elapsed time per iteration \(ms\):\s*(" + NUM + ")")
_MEG_LM_LOSS = re.compile(r"\|\s*lm loss:\s*(" + NUM + ")")
_MEG_ANY_LOSS = re.compile(r"\|\s*(?:[a-z][\w ]{0,30}[ _])?loss:\s*(" + NUM + ")")  # `lm loss:`, GPT-NeoX `lm_loss:`
_MEG_TFLOPS = re.compile(r"throughput per GPU \(TFLOP/s/GPU\):\s*(" + NUM + ")")
_MEG_TOKENS = re.compile(r"\|\s*tokens per (?:second|sec)(?: per GPU)?:\s*(" + NUM + ")")


def megatron(text: str) -> Extraction | None:
    if "elapsed time per iteration" not in text:
        return None
    t = _MEG_TIME.search(text)
    if t is None:
        return None
    step = _MEG_ITER.search(text)
    loss = _MEG_LM_LOSS.search(text) or _MEG_ANY_LOSS.search(text)
    rate, unit = None, None
    if m := _MEG_TOKENS.search(text):
        rate, unit = _pos(m.group(1)), "tokens/s"
    elif m := _MEG_TFLOPS.search(text):
        rate, unit = _pos(m.group(1)), "TFLOP/s/GPU"
    ms = _pos(t.group(1))
    return _clean(
        Extraction(
            "megatron",
            step=_int(step.group(1)) if step else None,
            step_time_s=ms / 1000.0 if ms is not None else None,
            loss=_num(loss.group(1)) if loss else None,
            throughput=rate,
            throughput_unit=unit if rate is not None else None,
            time_rule="named_per_step" if ms is not None else None,
        )
    )


# -- DeepSpeed -----------------------------------------------------------------------------------

_DS_RATE = re.compile(r"\b(CurrSamplesPerSec|RunningAvgSamplesPerSec|SamplesPerSec)=(" + NUM + ")")
_DS_SAMPLES_SEC = re.compile(r"\bsamples/sec\s*[=:]\s*(" + NUM + ")")
_DS_GLOBAL_STEP = re.compile(r"\bglobal_step=(\d+)")
_DS_STEP_MARKER = re.compile(r"\[Rank \d+\] step=(\d+), skipped=\d+")
_DS_LOSS = re.compile(r"\bloss\s*[=:]\s*(" + NUM + ")")


def deepspeed(text: str) -> Extraction | None:
    rates = dict(_DS_RATE.findall(text))
    rate_text = rates.get("CurrSamplesPerSec") or rates.get("RunningAvgSamplesPerSec") or rates.get("SamplesPerSec")
    if rate_text is None and (m := _DS_SAMPLES_SEC.search(text)):
        rate_text = m.group(1)
    if rate_text is not None:
        step = _DS_GLOBAL_STEP.search(text) or re.search(r"\bstep[=:]\s*(\d+)", text)
        loss = _DS_LOSS.search(text)
        rate = _pos(rate_text)
        return _clean(
            Extraction(
                "deepspeed",
                step=_int(step.group(1)) if step else None,
                loss=_num(loss.group(1)) if loss else None,
                throughput=rate,
                throughput_unit="samples/s" if rate is not None else None,
            )
        )
    if m := _DS_STEP_MARKER.search(text):
        return Extraction("deepspeed", step=_int(m.group(1)))
    return None


# -- Hugging Face Trainer ------------------------------------------------------------------------

_HF_DICT = re.compile(r"""^\s*\{.*['"](?:loss|train_runtime|train_loss)['"]\s*:.*\}\s*$""")
_HF_PAIR = re.compile(r"""['"]([A-Za-z_]+)['"]\s*:\s*['"]?(""" + NUM + r""")['"]?""")


_HF_TABLE = re.compile(r"^\s*(train_loss|train_samples_per_second|train_steps_per_second)\s*=\s*(" + NUM + r")\s*$")


def hf_trainer(text: str) -> Extraction | None:
    if not _HF_DICT.match(text):
        m = _HF_TABLE.match(text)  # the `***** train metrics *****` table printed at the end
        if m is None:
            return None
        key, value = m.group(1), m.group(2)
        if key == "train_loss":
            return _clean(Extraction("hf_trainer", loss=_num(value)))
        if key == "train_samples_per_second":
            rate = _pos(value)
            return _clean(Extraction("hf_trainer", throughput=rate, throughput_unit="samples/s" if rate else None))
        rate = _pos(value)
        return _clean(Extraction("hf_trainer", step_time_s=1.0 / rate if rate else None, time_rule="inverse_rate" if rate else None))
    pairs = dict(_HF_PAIR.findall(text))
    loss = _num(pairs.get("loss")) if "loss" in pairs else _num(pairs.get("train_loss"))
    steps_per_s = _pos(pairs.get("train_steps_per_second"))
    samples_per_s = _pos(pairs.get("train_samples_per_second"))
    rate, unit = (samples_per_s, "samples/s") if samples_per_s is not None else (None, None)
    return _clean(
        Extraction(
            "hf_trainer",
            step=_int(pairs.get("step")) if "step" in pairs else None,
            step_time_s=1.0 / steps_per_s if steps_per_s else None,
            loss=loss,
            throughput=rate,
            throughput_unit=unit,
            time_rule="inverse_rate" if steps_per_s else None,
        )
    )


# -- tqdm bars (HF Trainer, Lightning, plain loops) ---------------------------------------------

# (a bar cut at the terminal's width ends after its rate, with no `]`: still a bar)
_TQDM = re.compile(
    r"(?P<n>\d+)/(?P<total>\d+)\s*\[(?P<elapsed>[\d:]+)<(?P<remaining>[\d:?]+)(?:,\s*"
    r"(?:(?P<rate>" + NUM + r")\s*(?P<unit>[A-Za-z]+/s|s/[A-Za-z]+)|\?\s*[A-Za-z]+/s))?(?=[,\]]|\s*$)"
)
_TQDM_STEP_UNITS = {"it", "its", "batch", "batches", "step", "steps", "iter", "iters", "ba"}
_TQDM_SKIP_DESC = re.compile(
    r"load|download|map|tokeni[sz]|shard|eval|valid|test|predict|sanity|upload|extract|generat|filter|convert"
    r"|\bClass\s+Images",  # YOLO's validation bar
    re.IGNORECASE,
)
_NAMED_STEP_TIME = re.compile(r"(?:step_tim|iter_tim|batch_tim|time_per)", re.IGNORECASE)
_POSTFIX_LOSS = re.compile(r"(?:^|[\s,])(?:train_)?loss(?:_step)?[=:]\s*(" + NUM + ")")


def tqdm_bar(text: str) -> Extraction | None:
    # redraws pasted without their `\r` (a flattened copy) are one line: the newest is the last
    last = deque(_TQDM.finditer(text), maxlen=1)
    m = last[0] if last else None
    if m is None:
        return None
    if _TQDM_SKIP_DESC.search(text[: m.start()]):
        return None
    unit = m.group("unit") or ""
    per_step_time = unit.startswith("s/")
    thing = unit[2:] if per_step_time else unit[:-2]
    if unit and thing.lower() not in _TQDM_STEP_UNITS:
        return None
    rate = _pos(m.group("rate"))
    step_time = None
    rule: TimeRule | None = None
    if rate is not None:
        # `2.83s/it` is a time per step, `3.9it/s` a rate: never the one read as the other
        step_time = rate if per_step_time else 1.0 / rate
        rule = "per_step_unit" if per_step_time else "inverse_rate"
    postfix = text[m.end() :]
    # the postfix may name the step time itself (NeMo's `train_step_timing in s=0.51`): the
    # trainer's own timer beats the bar's rate, which also times data loading and logging
    named = read_fields(postfix)
    loss_m = _POSTFIX_LOSS.search(postfix)
    loss = _num(loss_m.group(1)) if loss_m else named.loss
    if loss is None:  # torchtune writes it in the description: `1|100|Loss: 1.2345: 10%|█| ..`
        loss = read_fields(text[: m.start()]).loss
    if named.step_time_s is not None and _NAMED_STEP_TIME.search(postfix):
        step_time, rule = named.step_time_s, named.time_rule
    framework = "lightning" if re.match(r"\s*Epoch \d+", text) else "tqdm"
    if "train_step_timing" in postfix or "reduced_train_loss" in postfix:
        framework = "nemo"
    return _clean(
        Extraction(
            framework,
            step=_int(m.group("n")),
            step_time_s=step_time,
            loss=loss,
            throughput=None if per_step_time or rate is None else rate,
            throughput_unit=None if per_step_time or rate is None else "it/s",
            total=_int(m.group("total")),
            time_rule=rule if step_time is not None else None,
        )
    )


def bar_in_redraws(raw: str | bytes, *, skip_last: bool = True, max_segments: int = 64) -> tuple[str, Extraction] | None:
    """The newest `\r` redraw of a physical line that is a training bar with a step time.

    `skip_last`: ignore the final segment (what `normalise_line` already returns). Looks at no
    more than `max_segments` segments, newest first.
    """
    data = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
    segments = data.split("\r")
    if skip_last:
        while segments and not strip_ansi(segments[-1]).strip():
            segments.pop()
        segments = segments[:-1]
    for seg in segments[::-1][:max_segments]:
        line = normalise_line(seg)
        text = line.text.strip()
        if not text or line.binary:
            continue
        ex = tqdm_bar(text)
        if ex is not None and ex.step_time_s is not None:
            return text, ex
    return None


# -- custom key-value lines ---------------------------------------------------------------------

_KV_STEP = re.compile(r"\b(?:global[_ ]step|step|iter(?:ation)?|it|batch)s?\b\s*[:=#\[]?\s*(\d+)\b(?!\.\d)", re.IGNORECASE)
# (`CurrentCost=2.59`: PaddlePaddle v1's TrainerInternal, the batch's own cost; `AvgCost` is a running mean)
_KV_LOSS = re.compile(r"(?<![\w/])((?:\w+[_ ])?loss|(?:Current)?Cost)\b\s*[:=]?\s*(" + NUM + r")(?![\d:])", re.IGNORECASE)
_EVAL_WORDS = re.compile(r"^(?:val|valid|validation|eval|evaluation|test|dev)[_ ]", re.IGNORECASE)
_KV_TIME = re.compile(
    r"\b(?:step[_ ]?time|iter(?:ation)?[_ ]?time|batch[_ ]?time|time[_ ]?per[_ ](?:step|iter(?:ation)?)"
    r"|time/(?:step|iter)|(?<!total )(?<!total_)(?<!wall )(?<!wall_)(?<!elapsed )(?<!elapsed_)time|dt)"
    r"(?:[_ ]?\(?(?P<kunit>ms|s|sec|secs)\)?)?(?![A-Za-z])\s*[:=]?\s*(?P<v>" + NUM + r")(?![\d:])"
    r"\s*(?P<unit>ns|us|µs|μs|ms|msecs?|s|secs?|seconds?|mins?|minutes?)?(?![A-Za-z])",
    re.IGNORECASE,
)
_KV_PER_STEP = re.compile(r"(?P<v>" + NUM + r")\s*(?P<unit>ms|s|sec|secs)\s*/\s*(?:step|it|iter|batch)\b", re.IGNORECASE)
_KV_RATE = re.compile(
    r"(?P<v>" + GROUPED + "|" + NUM + r")\s*(?P<unit>samples/s(?:ec)?|tokens/s(?:ec)?|tok/s|seqs?/s|images?/s|img/s|it/s|steps?/s)\b"
    r"(?!\s*[=:])",
    re.IGNORECASE,
)
_KV_RATE_KEY = re.compile(
    r"\b(?P<key>samples_per_sec(?:ond)?|tokens_per_sec(?:ond)?|tok/s|tokens/s(?:ec)?|samples/s(?:ec)?|tps|throughput)"
    r"\s*[:=]\s*(?P<v>" + GROUPED + "|" + NUM + r")(?![\d,])",
    re.IGNORECASE,
)


def _rate_unit(unit: str) -> str:
    unit = unit.lower()
    if unit.startswith(("tok", "tps")):
        return "tokens/s"
    if unit.startswith("sample"):
        return "samples/s"
    if unit.startswith("seq"):
        return "sequences/s"
    if unit.startswith(("img", "image")):
        return "images/s"
    if unit.startswith("step"):
        return "steps/s"
    if unit == "throughput":
        return "unknown/s"
    return unit.replace("/sec", "/s")


def key_value(text: str) -> Extraction | None:
    if _TQDM.search(text):
        return None  # a progress bar: `tqdm_bar` decides (it knows which bars are training)
    step_m = _KV_STEP.search(text)
    loss = None
    for m in _KV_LOSS.finditer(text):
        if not _EVAL_WORDS.match(m.group(1)):
            loss = _num(m.group(2))
            break
    step_time = None
    rule: TimeRule | None = None
    if per := _KV_PER_STEP.search(text):
        v = _pos(per.group("v"))
        step_time = v * TIME_SCALE_S[per.group("unit").lower()] if v is not None else None
        rule = "per_step_unit"
    else:
        for m in _KV_TIME.finditer(text):
            v = _pos(m.group("v"))
            if v is not None:
                unit = (m.group("kunit") or m.group("unit") or "s").lower()  # unitless: seconds
                step_time = v * TIME_SCALE_S[unit]
                named = re.match(r"(?:step|iter|batch|time[_ ]?per|time/)", m.group(0), re.IGNORECASE)
                rule = "named_per_step" if named else "bare_time"
                break
    rate, rate_unit = None, None
    if kv := _KV_RATE.search(text):
        rate, rate_unit = _pos(kv.group("v")), _rate_unit(kv.group("unit"))
    elif kv := _KV_RATE_KEY.search(text):
        rate, rate_unit = _pos(kv.group("v")), _rate_unit(kv.group("key"))
    if step_m is None and not (step_time is not None and _KV_PER_STEP.search(text)):
        return None  # without a step counter, only an explicit per-step time is trusted
    ex = Extraction(
        "key_value",
        step=_int(step_m.group(1)) if step_m else None,
        step_time_s=step_time,
        loss=loss,
        throughput=rate,
        throughput_unit=rate_unit if rate is not None else None,
        time_rule=rule if step_time is not None else None,
    )
    return ex if ex.has_metric else None


Extractor = Callable[[str], "Extraction | None"]
DEFAULT_EXTRACTORS: tuple[tuple[str, Extractor], ...] = (
    ("megatron", megatron),
    ("deepspeed", deepspeed),
    ("hf_trainer", hf_trainer),
    ("tqdm", tqdm_bar),
    ("timm", timm),
    ("keras", keras),
    ("layouts", layouts),  # Marian, Darknet, BigDL, YOLACT
    ("key_value", key_value),  # before `fields`: on a tie the older, narrower reader names the line
    ("fields", key_fields),
)


def _fields(ex: Extraction) -> int:
    return sum(v is not None for v in (ex.step, ex.step_time_s or ex.interval_s, ex.loss, ex.throughput))


def _rank(ex: Extraction) -> tuple[bool, int, bool]:
    """More fields first; on a tie, the reading with a step time (what a scheduler needs)."""
    return ex.has_metric, _fields(ex), ex.step_time_s is not None


def regex_extract(text: str, extractors: Sequence[tuple[str, Extractor]] = DEFAULT_EXTRACTORS) -> Extraction | None:
    """The extraction with a metric that reads the most fields (then one with a step time,
    then the earlier extractor);
    else a step-only marker if one matched; else None (always None on an evaluation line)."""
    best: Extraction | None = None
    text = strip_timestamp(text)
    if is_eval_line(text):
        return None  # validation/evaluation/test: its timings are not the training step's
    for _, fn in extractors:
        ex = fn(text)
        if ex is None:
            continue
        if best is None or _rank(ex) > _rank(best):
            best = ex
            if _fields(best) == 4:
                break  # nothing reads more (and later extractors are the slow generic ones)
    if best is not None and best.step_time_s is not None and best.time_rule is None:
        best = replace(best, time_rule="framework")
    return best


# -- timestamps ----------------------------------------------------------------------------------

_TS = re.compile(
    r"^\s*(?:\[[^\]\d][^\]]{0,39}\]\s*)?[\[(]?(?P<y>\d{4})[-/](?P<mo>\d{2})[-/](?P<d>\d{2})[T ](?P<h>\d{2}):(?P<mi>\d{2}):(?P<s>\d{2})"
    r"(?:[.,](?P<frac>\d{1,9}))?\s*(?P<tz>Z|UTC|[+-]\d{2}:?\d{2})?[\])]?[\s:|-]*"
)


def parse_timestamp(text: str, tz: tzinfo | None = None) -> float | None:
    """POSIX seconds of a full date-time at the start of `text` (after an optional `[` and an
    optional short `[tag]` such as `[titan]` or `[INFO|trainer.py:3478]`), or None.

    Accepts `2024-05-01 12:00:01,123`, ISO `2024-05-01T12:00:01.123Z`/`+02:00`, `2024/05/01 ...`.
    A time without a zone is read in `tz` (None = this machine's local zone). Time-only stamps
    (`[12:00:01]`) carry no date and are not used.
    """
    m = _TS.match(text)
    if m is None:
        return None
    frac = m.group("frac") or "0"
    try:
        naive = datetime(
            int(m.group("y")), int(m.group("mo")), int(m.group("d")),
            int(m.group("h")), int(m.group("mi")), int(m.group("s")),
            int(frac.ljust(6, "0")[:6]),
        )  # fmt: skip
    except ValueError:
        return None
    zone = m.group("tz")
    if zone in ("Z", "UTC"):
        stamp = naive.replace(tzinfo=UTC)
    elif zone:
        sign = 1 if zone[0] == "+" else -1
        digits = zone[1:].replace(":", "")
        stamp = naive.replace(tzinfo=timezone(sign * timedelta(hours=int(digits[:2]), minutes=int(digits[2:]))))
    elif tz is not None:
        stamp = naive.replace(tzinfo=tz)
    else:
        stamp = naive.astimezone()  # local zone
    return stamp.timestamp()


def timestamp_resolution(text: str) -> float | None:
    """Seconds per unit of the last printed digit of the line's stamp (1.0, 0.001, ...), or None."""
    m = _TS.match(text)
    if m is None:
        return None
    return 10.0 ** -len(m.group("frac")) if m.group("frac") else 1.0


def strip_timestamp(text: str) -> str:
    """The line without a leading full date-time stamp (its digits would confuse extractors)."""
    m = _TS.match(text)
    return text[m.end() :] if m else text


__all__ = [
    "DEFAULT_EXTRACTORS",
    "Extraction",
    "NUM",
    "TIME_SCALE_S",
    "deepspeed",
    "hf_trainer",
    "key_value",
    "megatron",
    "parse_timestamp",
    "regex_extract",
    "strip_timestamp",
    "timestamp_resolution",
    "tqdm_bar",
]
