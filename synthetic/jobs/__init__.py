"""Job corpus generator: training projects per workload family, their truth and their outcomes.

Public API (see the modules for details):
- `schedmate.workload.WorkloadMetadata` (the core's label type) and, in `aliases`, the generator's own
  name vocabulary (alias tables and table-based normalisers: for generating and scoring only);
- `workloads.FAMILIES` / `sample_config` / `WorkloadConfig` (what a job is);
- `codegen.render_repo` / `write_repo` (its repository);
- `history.simulate_outcome` / `expected_perf` (how it ran);
- `generator.generate_job`, `generate_job_corpus`, `load_manifest` (corpora on disk);
- `mapping.assign_workloads` / `attach_workloads` (trace jobs -> workloads by GPU request).
"""

from schedmate.workload import WorkloadMetadata, normalize_iteration_type

from .aliases import normalize_dataset, normalize_model_name, normalize_task_type, same_name
from .codegen import Repo, render_repo, write_repo
from .generator import (
    CorpusJob,
    GeneratedJob,
    JobCorpusManifest,
    generate_job,
    generate_job_corpus,
    iter_corpus_jobs,
    load_manifest,
)
from .history import Outcome, UserProfile, expected_perf, simulate_outcome
from .mapping import WorkloadAssignment, assign_workload, assign_workloads, attach_workloads, size_class
from .workloads import FAMILIES, FAMILY_KEYS, WorkloadConfig, WorkloadFamily, get_family, sample_config

__all__ = [
    "FAMILIES", "FAMILY_KEYS", "GeneratedJob", "JobCorpusManifest", "CorpusJob", "Outcome", "Repo", "UserProfile",
    "WorkloadAssignment", "WorkloadConfig", "WorkloadFamily", "WorkloadMetadata", "assign_workload",
    "assign_workloads", "attach_workloads", "expected_perf", "generate_job", "generate_job_corpus", "get_family",
    "iter_corpus_jobs", "load_manifest", "normalize_dataset", "normalize_iteration_type", "normalize_model_name",
    "normalize_task_type", "render_repo", "same_name", "sample_config", "simulate_outcome", "size_class", "write_repo",
]
