"""Trace loaders and the synthetic generator, written as a specification.

Loader tests write small CSVs to tmp_path; tests on the real reference traces are marked
`shared_data` and skip when ../shared/data is absent. Synthetic-trace tests need no data.
"""

from __future__ import annotations

import pickle
import statistics
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from schedmate.config import shared_data_dir
from schedmate.schedulers.job import FinalStatus, JobSpec
from schedmate.schedulers.traces import (
    CALIBRATIONS,
    ArrivalModel,
    LoadedTrace,
    TraceFormatError,
    calibration_from_summary,
    detect_format,
    generate_trace,
    iter_formats,
    load_trace,
)

SHARED = shared_data_dir()


def needs_shared_data(test):
    """Mark a test that reads ../shared/data; it skips, saying why, when the folder is absent."""
    reason = "../shared/data is absent (set SCHEDMATE_SHARED_DATA to its path)"
    return pytest.mark.shared_data(pytest.mark.skipif(SHARED is None, reason=reason)(test))


def write(tmp_path: Path, name: str, *lines: str) -> Path:
    path = tmp_path / name
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


PHILLY_HEADER = "timestamp,duration,num_gpus,gpu_time,cluster"


# --- the error -----------------------------------------------------------------------------------


def test_error_message_names_file_line_column_expectation_and_value():
    err = TraceFormatError("/data/philly.csv", 17, "duration", "a non-negative number", "abc")
    assert str(err) == "philly.csv:17: column 'duration': expected a non-negative number, got 'abc'"
    assert (err.file, err.line, err.column) == ("/data/philly.csv", 17, "duration")


def test_error_survives_pickling():
    err = TraceFormatError("a.csv", 3, "x", "a number", "y")
    assert str(pickle.loads(pickle.dumps(err))) == str(err)


# --- Sia philly.csv ------------------------------------------------------------------------------


def test_philly_jobs_are_sorted_rebased_and_keep_their_line_as_id(tmp_path):
    path = write(
        tmp_path,
        "philly.csv",
        PHILLY_HEADER,
        "2017-10-09 07:01:55,66.0,1,66.0,11cb48",
        "2017-10-09 06:13:03,2951.0,2,5902.0,6214e9",
        "2017-10-09 06:13:03,0.0,4,0.0,6214e9",
    )
    trace = load_trace(path)
    assert trace.format == "philly" and trace.skipped == 0
    assert [j.job_id for j in trace.jobs] == ["philly-3", "philly-4", "philly-2"]
    assert [j.submit_time for j in trace.jobs] == [0.0, 0.0, 2932.0]
    assert trace.jobs[1].duration == 0.0  # duration 0 is legal and kept
    assert trace.jobs[0] == JobSpec("philly-3", 0.0, 2, 2951.0, vc="6214e9")
    assert trace.jobs[0].status is FinalStatus.COMPLETED  # the file has no states


def test_philly_truncated_empty_and_zero_gpu_rows_are_skipped_and_counted(tmp_path):
    path = write(
        tmp_path,
        "philly.csv",
        PHILLY_HEADER,
        "2017-10-09 07:01:55,66.0,1,66.0,11cb48",
        "2017-10-09 07:02:00,10.0",
        "2017-10-09 07:03:00,10.0,0,0.0,11cb48",
        "",
    )
    trace = load_trace(path)
    assert len(trace.jobs) == 1
    assert trace.skipped == 3
    assert trace.skipped_reasons == [
        "philly.csv:3: malformed row: 2 fields, the header has 5",
        "philly.csv:4: num_gpus is 0",
        "philly.csv:5: empty line",
    ]


@pytest.mark.parametrize(
    ("row", "message"),
    [
        (
            "2017-10-09 07:01:55,abc,1,66.0,11cb48",
            "philly.csv:3: column 'duration': expected a non-negative number, got 'abc'",
        ),
        (
            "2017-10-09 07:01:55,-5,1,66.0,11cb48",
            "philly.csv:3: column 'duration': expected a non-negative number, got '-5'",
        ),
        (
            "2017-10-09 07:01:55,5,1.5,66.0,11cb48",
            "philly.csv:3: column 'num_gpus': expected a non-negative whole number, got '1.5'",
        ),
        (
            "yesterday,5,1,66.0,11cb48",
            "philly.csv:3: column 'timestamp': expected a timestamp YYYY-MM-DD HH:MM:SS, "
            "got 'yesterday'",
        ),
    ],
)
def test_philly_a_wrong_value_is_an_error_with_its_place(tmp_path, row, message):
    path = write(tmp_path, "philly.csv", PHILLY_HEADER, "2017-10-09 07:01:55,1,1,1,a", row)
    with pytest.raises(TraceFormatError) as info:
        load_trace(path)
    assert str(info.value) == message


def test_a_missing_column_names_the_column_and_the_header_expected(tmp_path):
    path = write(tmp_path, "philly.csv", "timestamp,duration,gpu_time,cluster", "x,1,1,a")
    with pytest.raises(TraceFormatError) as info:
        load_trace(path, "philly")
    err = info.value
    assert (err.line, err.column) == (1, "num_gpus")
    assert "expected a philly header with columns timestamp,duration,num_gpus,cluster" in str(err)


def test_limit_keeps_the_earliest_submitted_jobs(tmp_path):
    rows = [f"2017-10-09 07:{59 - i:02d}:00,{i},1,{i},vc" for i in range(10)]
    trace = load_trace(write(tmp_path, "philly.csv", PHILLY_HEADER, *rows), limit=3)
    assert [j.duration for j in trace.jobs] == [9.0, 8.0, 7.0]
    assert trace.jobs[0].submit_time == 0.0


# --- files that are not traces -------------------------------------------------------------------


def test_an_empty_file_is_a_clear_error(tmp_path):
    path = tmp_path / "empty.csv"
    path.write_bytes(b"")
    with pytest.raises(TraceFormatError, match=r"empty\.csv:1: expected a CSV header row.*empty"):
        load_trace(path)


def test_binary_garbage_is_a_format_error_not_a_decode_error(tmp_path):
    path = tmp_path / "garbage.csv"
    path.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)))
    with pytest.raises(TraceFormatError, match="NUL byte"):
        load_trace(path)


def test_invalid_utf8_is_a_format_error_with_its_line(tmp_path):
    path = tmp_path / "latin1.csv"
    path.write_bytes(PHILLY_HEADER.encode() + b"\n2017-10-09 07:01:55,1,1,1,caf\xe9\n")
    with pytest.raises(TraceFormatError) as info:
        load_trace(path)
    assert str(info.value) == "latin1.csv:2: expected UTF-8 CSV text, got 'byte 0xe9'"


def test_an_unknown_header_lists_the_known_formats(tmp_path):
    with pytest.raises(TraceFormatError) as info:
        load_trace(write(tmp_path, "x.csv", "a,b,c", "1,2,3"))
    assert "x.csv:1: expected the header of a known trace format" in str(info.value)
    assert all(name in str(info.value) for name in iter_formats())


def test_bad_arguments_are_value_errors(tmp_path):
    path = write(tmp_path, "philly.csv", PHILLY_HEADER)
    with pytest.raises(ValueError, match="unknown trace format"):
        load_trace(path, "nope")
    with pytest.raises(ValueError, match="limit"):
        load_trace(path, limit=-1)
    with pytest.raises(ValueError, match="app_durations"):
        load_trace(path, app_durations={"bert": 1.0})


def test_a_windows_export_with_bom_and_crlf_loads(tmp_path):
    path = tmp_path / "philly.csv"
    row = b"2017-10-09 07:01:55,1,1,1,a"
    path.write_bytes(b"\xef\xbb\xbf" + PHILLY_HEADER.encode() + b"\r\n" + row + b"\r\n")
    trace = load_trace(path)
    assert (trace.format, len(trace.jobs), trace.skipped) == ("philly", 1, 0)


def test_a_header_only_file_is_an_empty_trace(tmp_path):
    trace = load_trace(write(tmp_path, "philly.csv", PHILLY_HEADER))
    assert trace == LoadedTrace([], str(tmp_path / "philly.csv"), "philly", 0, [])


def test_duplicate_job_ids_are_an_error(tmp_path):
    path = write(
        tmp_path, "d.csv", "job_id,arrival_s,service_sec,gpu_count", "a,0,1,1", "b,1,1,1", "a,2,1,1"
    )
    with pytest.raises(TraceFormatError, match=r"d\.csv:4: column 'job_id': expected a unique"):
        load_trace(path)


# --- the other formats ---------------------------------------------------------------------------

SAMPLES = {
    "philly": (PHILLY_HEADER, "2017-10-09 07:01:55,66.0,1,66.0,11cb48"),
    "sia_workload": ("name,time,application,num_replicas,batch_size", "bert-0,10,bert,4,384"),
    "helios": (
        "job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,duration,"
        "queue",
        "1,uA,vcA,1,1,1,COMPLETED,2020-06-09 18:41:01,2020-06-09 18:41:01,2020-06-10 04:55:09,"
        "36848,0",
    ),
    "acme": (
        "job_id,user,node_num,gpu_num,cpu_num,type,state,submit_time,start_time,end_time,duration,"
        "queue,gpu_time",
        "5778432,u5907,1,8,128,Other,FAILED,2023-03-01 00:18:22+08:00,2023-03-01 00:18:54+08:00,"
        "2023-03-01 00:20:51+08:00,117,32,936.0",
    ),
    "derived": ("job_id,arrival_s,service_sec,gpu_count", "363167#0,0.0,172800.0,32"),
    "openb": (
        "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
        "deletion_time,scheduled_time",
        "openb-pod-0001,6000,12288,1,460,,LS,Running,427061,12902960,427061",
    ),
}


def test_every_format_has_a_sample_here():
    assert sorted(SAMPLES) == sorted(iter_formats())


@pytest.mark.parametrize("fmt", sorted(SAMPLES))
def test_the_format_is_detected_from_the_header(tmp_path, fmt):
    header, row = SAMPLES[fmt]
    assert detect_format(header.split(",")) == fmt
    trace = load_trace(write(tmp_path, f"{fmt}.csv", header, row))
    assert (trace.format, len(trace.jobs), trace.jobs[0].submit_time) == (fmt, 1, 0.0)


def test_sia_workload_without_durations_flags_them_unknown(tmp_path):
    header, row = SAMPLES["sia_workload"]
    job = load_trace(write(tmp_path, "w.csv", header, row)).jobs[0]
    assert (job.job_id, job.name, job.num_gpus, job.duration) == ("bert-0", "bert-0", 4, 0.0)
    assert job.attributes == {"application": "bert", "batch_size": 384, "duration_unknown": True}


def test_sia_workload_takes_durations_per_application(tmp_path):
    header, row = SAMPLES["sia_workload"]
    path = write(tmp_path, "w.csv", header, row, "cifar10-1,20,cifar10,2,128")
    trace = load_trace(path, app_durations={"bert": 3600.0, "cifar10": 600.0})
    assert [j.duration for j in trace.jobs] == [3600.0, 600.0]
    assert "duration_unknown" not in trace.jobs[0].attributes
    with pytest.raises(TraceFormatError, match=r"w\.csv:3: column 'application': .*got 'cifar10'"):
        load_trace(path, app_durations={"bert": 3600.0})


def test_helios_maps_states_and_skips_cpu_only_and_unfinished_jobs(tmp_path):
    header, _ = SAMPLES["helios"]
    times = "2020-06-09 18:41:0{0},2020-06-09 18:41:0{0},2020-06-09 18:45:00"
    rows = [
        f"{i},u{i},vc{i % 2},{gpus},4,1,{state},{times.format(i)},100,0"
        for i, (gpus, state) in enumerate(
            [(1, "COMPLETED"), (8, "FAILED"), (2, "CANCELLED"), (4, "TIMEOUT"),
             (16, "NODE_FAIL"), (0, "COMPLETED"), (1, "RUNNING")]
        )
    ]  # fmt: skip
    trace = load_trace(write(tmp_path, "cluster_log.csv", header, *rows))
    by_id = {j.job_id: j for j in trace.jobs}
    assert {k: v.status.value for k, v in by_id.items()} == {
        "0": "completed", "1": "failed", "2": "cancelled", "3": "failed", "4": "failed"
    }  # fmt: skip
    assert by_id["3"].attributes == {"state": "TIMEOUT", "cpu_num": 4, "node_num": 1}
    assert (by_id["1"].user, by_id["1"].vc, by_id["1"].num_gpus) == ("u1", "vc1", 8)
    assert trace.skipped == 2
    assert trace.skipped_reasons == [
        "cluster_log.csv:7: CPU-only job (gpu_num 0)",
        "cluster_log.csv:8: state RUNNING: the job had not ended",
    ]


def test_helios_empty_duration_is_computed_or_the_never_started_job_skipped(tmp_path):
    header, _ = SAMPLES["helios"]
    rows = [
        "1,u,vc,1,1,1,COMPLETED,2020-06-09 18:00:00,2020-06-09 18:01:00,2020-06-09 18:11:00,,60",
        "2,u,vc,1,1,1,CANCELLED,2020-06-09 18:00:00,,,,",
    ]
    trace = load_trace(write(tmp_path, "cluster_log.csv", header, *rows))
    assert [(j.job_id, j.duration) for j in trace.jobs] == [("1", 600.0)]
    assert trace.skipped_reasons == [
        "cluster_log.csv:3: empty duration and start_time: the job never started"
    ]


def test_helios_rejects_an_unknown_state(tmp_path):
    header, row = SAMPLES["helios"]
    with pytest.raises(TraceFormatError, match=r":2: column 'state': expected a Slurm job state"):
        load_trace(write(tmp_path, "c.csv", header, row.replace("COMPLETED", "EXPLODED")))


def test_acme_reads_zoned_times_and_the_workload_type(tmp_path):
    header, row = SAMPLES["acme"]
    later = row.replace("5778432", "5778433").replace("00:18:22+08:00", "01:18:22+09:00")
    trace = load_trace(write(tmp_path, "trace_seren.csv", header, row, later))
    assert [j.submit_time for j in trace.jobs] == [0.0, 0.0]  # same instant, other zone
    job = trace.jobs[0]
    assert (job.status, job.duration, job.num_gpus, job.user, job.vc) == (
        FinalStatus.FAILED, 117.0, 8, "u5907", None
    )  # fmt: skip
    assert job.attributes == {"type": "Other", "cpu_num": 128, "node_num": 1}


def test_derived_traces_skip_zero_gpu_rows(tmp_path):
    header, row = SAMPLES["derived"]
    trace = load_trace(write(tmp_path, "helios_trace.csv", header, row, "x#1,5.0,10.0,0"))
    assert [j.job_id for j in trace.jobs] == ["363167#0"] and trace.skipped == 1


def test_openb_keeps_gpu_pods_that_ran(tmp_path):
    header, row = SAMPLES["openb"]
    rows = [
        row,  # fractional share of one GPU, still running at the end
        "openb-pod-4447,8200,33792,1,1000,A10|T4,LS,Failed,11724207,11725419,11724207",
        "openb-pod-0016,32000,65536,0,0,,LS,Running,8962274,12902960,8962277",  # CPU-only
        "openb-pod-0100,4000,8192,2,1000,,BE,Pending,500000,12902960,",  # never scheduled
    ]
    trace = load_trace(write(tmp_path, "openb.csv", header, *rows))
    first, failed = trace.jobs
    assert (first.submit_time, first.duration, first.num_gpus) == (0.0, 12902960 - 427061, 1)
    assert first.attributes["gpu_milli"] == 460 and first.status is FinalStatus.COMPLETED
    assert failed.status is FinalStatus.FAILED and failed.gpu_types == ("A10", "T4")
    assert failed.submit_time == 11724207 - 427061 and failed.duration == 11725419 - 11724207
    assert trace.skipped == 2


# --- the real traces -----------------------------------------------------------------------------


def sorted_and_rebased(trace: LoadedTrace) -> bool:
    keys = [(j.submit_time, j.job_id) for j in trace.jobs]
    return keys == sorted(keys) and keys[0][0] == 0.0


@needs_shared_data
def test_real_philly_trace():
    trace = load_trace(SHARED / "sia/traces/philly.csv")
    assert (trace.format, len(trace.jobs), trace.skipped) == ("philly", 82_247, 1)
    assert trace.skipped_reasons == ["philly.csv:82249: empty line"]
    assert sorted_and_rebased(trace)


@pytest.mark.parametrize(
    ("relative", "fmt", "jobs", "skipped"),
    [
        ("helios-venus-derived/helios_trace.csv", "derived", 125_303, 0),
        ("alibaba-pai-v2020-derived/alibaba_trace_sub.csv", "derived", 60_105, 0),
        # 8,152 pods: 1,088 CPU-only and 861 GPU pods never scheduled are skipped
        ("alibaba-gpu-v2023/openb_pod_list_default.csv", "openb", 6_203, 1_949),
        ("sia/workloads/newtrace/workload-1.csv", "sia_workload", 960, 0),
    ],
)
@needs_shared_data
def test_real_traces(relative, fmt, jobs, skipped):
    trace = load_trace(SHARED / relative)
    assert (trace.format, len(trace.jobs), trace.skipped) == (fmt, jobs, skipped)
    assert sorted_and_rebased(trace)


@needs_shared_data
def test_every_sia_paper_workload_loads():
    for folder, jobs in (("saturn", 160), ("philly", 160), ("newtrace", 960)):
        for path in sorted((SHARED / "sia/workloads" / folder).glob("*.csv")):
            trace = load_trace(path)
            assert (trace.format, len(trace.jobs), trace.skipped) == ("sia_workload", jobs, 0)


# --- synthetic traces ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def seren_20k() -> LoadedTrace:
    return generate_trace(20_000, seed=11, profile="seren", cluster_gpus=1024)


def test_same_seed_same_trace_other_seed_other_trace():
    a, b, c = (generate_trace(500, seed) for seed in (1, 1, 2))
    assert a == b
    assert a.jobs != c.jobs


def test_synthetic_trace_is_sorted_rebased_and_well_formed(seren_20k):
    trace = seren_20k
    assert (trace.format, len(trace.jobs), trace.skipped) == ("synthetic", 20_000, 0)
    assert sorted_and_rebased(trace)
    assert all(j.user and j.vc and j.name and j.attributes == {} for j in trace.jobs)
    assert len({j.job_id for j in trace.jobs}) == 20_000


def test_synthetic_statistics_match_the_calibration(seren_20k):
    cal = CALIBRATIONS["seren"]
    durations = [j.duration for j in seren_20k.jobs]
    assert statistics.median(durations) == pytest.approx(cal.med_run_time, rel=0.1)
    assert statistics.fmean(durations) == pytest.approx(cal.avg_run_time, rel=0.15)
    gpus = [j.num_gpus for j in seren_20k.jobs]
    assert statistics.median(gpus) == cal.med_gpu_num
    assert statistics.fmean(gpus) == pytest.approx(cal.avg_gpu_num, rel=0.15)
    share = {s: sum(j.status is s for j in seren_20k.jobs) / 20_000 for s in FinalStatus}
    assert share[FinalStatus.COMPLETED] == pytest.approx(cal.complete_rate, abs=0.02)
    assert share[FinalStatus.FAILED] == pytest.approx(cal.fail_rate, abs=0.02)
    assert share[FinalStatus.CANCELLED] == pytest.approx(cal.cancel_rate, abs=0.02)


def test_failed_jobs_are_short_and_cancelled_jobs_hold_the_gpu_time(seren_20k):
    """Acme: failures are many short jobs; cancelled jobs hold most GPU time in Seren."""
    by = {s: [j for j in seren_20k.jobs if j.status is s] for s in FinalStatus}
    median = {s: statistics.median(j.duration for j in jobs) for s, jobs in by.items()}
    assert median[FinalStatus.FAILED] < median[FinalStatus.COMPLETED]
    gpu_time = {s: sum(j.gpu_time for j in jobs) for s, jobs in by.items()}
    assert max(gpu_time, key=gpu_time.get) is FinalStatus.CANCELLED
    assert all(j.work is not None and j.work >= j.duration for j in by[FinalStatus.FAILED])
    assert all(j.work is None for j in by[FinalStatus.COMPLETED] + by[FinalStatus.CANCELLED])


@pytest.mark.parametrize("profile", ["kalos", "philly", "helios"])
def test_other_profiles_match_their_rates(profile):
    cal = CALIBRATIONS[profile]
    trace = generate_trace(5_000, seed=3, profile=profile, cluster_gpus=cal.max_gpu)
    failed = sum(j.status is FinalStatus.FAILED for j in trace.jobs) / 5_000
    assert failed == pytest.approx(cal.fail_rate, abs=0.03)
    assert statistics.median(j.duration for j in trace.jobs) == pytest.approx(
        cal.med_run_time, rel=0.15
    )


@pytest.mark.parametrize(("load", "cluster_gpus"), [(0.5, 64), (0.9, 256), (1.5, 32)])
def test_load_sets_offered_gpu_time_to_load_times_capacity(load, cluster_gpus):
    trace = generate_trace(3_000, seed=5, cluster_gpus=cluster_gpus, load=load)
    offered = sum(j.gpu_time for j in trace.jobs)
    capacity = cluster_gpus * trace.jobs[-1].submit_time
    assert offered / capacity == pytest.approx(load, rel=1e-6)


def test_max_gpus_caps_the_gpu_count():
    trace = generate_trace(3_000, seed=2, cluster_gpus=64, max_gpus=8)
    assert max(j.num_gpus for j in trace.jobs) <= 8
    assert {j.num_gpus for j in trace.jobs} <= {1, 2, 4, 8}


def test_arrivals_follow_the_day_and_come_in_bursts():
    trace = generate_trace(8_000, seed=4, profile="philly", cluster_gpus=128)
    submit = np.array([j.submit_time for j in trace.jobs])
    hour = (submit // 3600 % 24).astype(int)
    by_hour = np.bincount(hour, minlength=24)
    assert by_hour[12:17].sum() > 1.5 * by_hour[0:5].sum()  # peak 14:00 vs trough 02:00
    per_hour = np.bincount((submit // 3600).astype(int))
    assert per_hour.var() > 3 * per_hour.mean()  # far more dispersed than a Poisson process
    flat = generate_trace(
        2_000, seed=4, arrivals=ArrivalModel(diurnal_amplitude=0.0, burst_factor=1.0)
    )
    assert flat.jobs[-1].submit_time > 0


def test_users_are_skewed_and_each_user_has_one_vc():
    jobs = generate_trace(5_000, seed=9).jobs
    counts = [n for _, n in Counter(j.user for j in jobs).most_common()]
    assert counts[0] > 5 * counts[len(counts) // 2]  # Zipf-like: a few users submit most jobs
    assert all(len({j.vc for j in jobs if j.user == u}) == 1 for u in {"u000", "u001"})


def test_generator_arguments_are_checked():
    assert generate_trace(0, seed=1).jobs == []
    for kwargs in ({"profile": "nope"}, {"load": 0}, {"max_gpus": 128}, {"cluster_gpus": 0}):
        with pytest.raises(ValueError):
            generate_trace(10, seed=1, **kwargs)


def test_calibration_from_summary_reads_a_row(tmp_path):
    columns = "id,avg_run_time_gpu,med_run_time_gpu,max_run_time_gpu,avg_gpu_num,med_gpu_num,"
    columns += "max_gpu,complete_rate_gpu,cancel_rate_gpu,fail_rate_gpu,complete_rate_gpu_time,"
    columns += "cancel_rate_gpu_time,fail_rate_gpu_time"
    path = write(tmp_path, "summary.csv", columns, "Mini,100,10,1000,2,1,8,.5,.2,.3,.4,.4,.2")
    cal = calibration_from_summary(path, "mini")
    assert (cal.cluster, cal.med_run_time, cal.max_gpu, cal.fail_rate) == ("Mini", 10.0, 8, 0.3)
    trace = generate_trace(200, seed=1, profile=cal, cluster_gpus=8)
    assert trace.source == "synthetic:mini:seed=1"
    with pytest.raises(ValueError, match="no row"):
        calibration_from_summary(path, "seren")


@needs_shared_data
@pytest.mark.parametrize("name", sorted(CALIBRATIONS))
def test_embedded_calibration_equals_the_published_summary(name):
    from_file = calibration_from_summary(SHARED / "acme/cluster_summary.csv", name)
    assert from_file == CALIBRATIONS[name]


def test_acme_mixture_pools_seren_and_kalos_and_matches_their_pooled_statistics():
    """`acme` = Seren + Kalos by GPU-job count: size shares, median run time and state rates of
    the pooled clusters; the fit report puts target next to achieved."""
    from schedmate.schedulers.traces.synthetic import fit_report, mixture_targets

    trace = generate_trace(20_000, seed=7, profile="acme", cluster_gpus=1024)
    clusters = Counter(j.attributes["cluster"] for j in trace.jobs)
    assert clusters["Kalos"] / len(trace) == pytest.approx(19_907 / (663_813 + 19_907), abs=0.005)
    report = fit_report(trace, "acme")
    target, achieved = report["target"], report["achieved"]
    for size in ("gpus_1_1", "gpus_2_8", "gpus_9_64"):
        assert achieved[size] == pytest.approx(target[size], abs=0.015)
    assert achieved["med_run_time"] == pytest.approx(target["med_run_time"], rel=0.05)
    assert achieved["fail_rate"] == pytest.approx(target["fail_rate"], abs=0.015)
    assert mixture_targets("acme")["avg_gpu_num"] == pytest.approx((663_813 * 5.68 + 19_907 * 26.77) / 683_720)
    assert trace.source.startswith("synthetic:acme:")
    # a single profile draws exactly what it drew before mixtures existed (no cluster attribute)
    assert "cluster" not in generate_trace(50, seed=1, profile="seren").jobs[0].attributes
