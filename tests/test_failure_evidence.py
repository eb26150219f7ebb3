"""Spec for category by evidence (`agents.failure.evidence.decide`, logs.md §2.1b), rule by rule.

Every log here is written for the test from the real formats the rules read (PyTorch, TensorFlow,
XLA/JAX, transformers/huggingface_hub, datasets, Ray, torch.multiprocessing), never pasted from the
dev set. `decide(lines, block, root, reason)` is called on the located failure directly, so no model
is loaded.
"""

from __future__ import annotations

import pytest

from schedmate.agents.failure.evidence import decide
from schedmate.taxonomy import Component, FailureCategory, FailureReason

INFRA, F, S = FailureCategory.INFRASTRUCTURE, FailureCategory.FRAMEWORK, FailureCategory.SCRIPT
R = FailureReason
LIB = "/opt/venv/lib/python3.11/site-packages"


def _tb(frames: list[tuple[str, str]], last: str) -> list[str]:
    out = ["Traceback (most recent call last):"]
    for path, code in frames:
        out += [f'  File "{path}", line 42, in fn', f"    {code}"]
    return [*out, last]


def _decide(lines: list[str], reason: FailureReason | None, root: int | None = None):
    root = len(lines) - 1 if root is None else root
    return decide(lines, 0, root, reason)


# --- device memory in TensorFlow and XLA: the owner's batch or model ---------------------------------
@pytest.mark.parametrize("line", [
    "2023-01-02 11:00:00.1: W tensorflow/core/framework/op_kernel.cc:1830] OP_REQUIRES failed at conv_ops.cc:684 : "
    "RESOURCE_EXHAUSTED: OOM when allocating tensor with shape[64,128,112,112] and type float on /job:localhost/replica:0/task:0/device:GPU:0",
    "tensorflow.python.framework.errors_impl.ResourceExhaustedError: failed to allocate memory [Op:AddV2]",
    "jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate 1073741824 bytes.",
    "2023-01-02 11:00:00.1: W tensorflow/tsl/framework/bfc_allocator.cc:485] Allocator (GPU_0_bfc) ran out of memory trying to allocate 2.00GiB (rounded to 2147483648)",
])  # fmt: skip
def test_tensorflow_and_xla_device_ooms_are_the_owners_batch(line: str) -> None:
    ev = _decide(["epoch 3 step 120 loss 0.42", line], R.RUNTIME_ERROR)
    assert ev is not None and (ev.category, ev.reason, ev.rule) == (S, R.OUT_OF_MEMORY_ERROR, "cuda-oom-on-device")


# --- shapes and DDP: the owner's model or data, whatever library raised it ----------------------------
@pytest.mark.parametrize("last", [
    "RuntimeError: mat1 and mat2 shapes cannot be multiplied (32x512 and 768x10)",
    "ValueError: Expected input batch_size (64) to match target batch_size (32).",
    "RuntimeError: The size of tensor a (197) must match the size of tensor b (257) at non-singleton dimension 1",
    "RuntimeError: Given groups=1, weight of size [64, 3, 7, 7], expected input[8, 1, 224, 224] to have 3 channels, but got 1 channels instead",
    "RuntimeError: shape '[16, -1, 12, 64]' is invalid for input of size 12345",
])  # fmt: skip
def test_a_shape_mismatch_raised_in_a_library_is_the_owners(last: str) -> None:
    lines = _tb([("/home/u/proj/train.py", "out = model(x)"), (f"{LIB}/torch/nn/functional.py", "return torch._C._nn.linear(x, w)")], last)
    ev = _decide(lines, R.RUNTIME_ERROR)
    assert ev is not None and ev.category is S and ev.rule == "shape-mismatch"


def test_ddp_parameters_without_gradient_are_the_owners_model() -> None:
    lines = ["RuntimeError: Expected to have finished reduction in the prior iteration before starting a new one. "
             "This error indicates that your module has parameters that were not used in producing loss."]  # fmt: skip
    ev = _decide(lines, R.RUNTIME_ERROR)
    assert ev is not None and (ev.category, ev.rule) == (S, "ddp-unused-parameters")


# --- exceptions of the job's own code --------------------------------------------------------------
def test_a_division_by_zero_in_the_jobs_code_is_the_owners_and_in_a_library_keeps_the_prior() -> None:
    own = _tb([("/home/u/proj/train.py", "main()"), ("/home/u/proj/train.py", "steps = n_items // batch_size; x = 1 / steps")],
              "ZeroDivisionError: integer division or modulo by zero")  # fmt: skip
    ev = _decide(own, R.ZERO_DIVISION_ERROR)
    assert ev is not None and (ev.category, ev.rule) == (S, "exception-in-job-code")
    lib = _tb([("/home/u/proj/train.py", "trainer.fit()"), (f"{LIB}/sometrainer/loop.py", "frac = step / steps_per_epoch")],
              "ZeroDivisionError: division by zero")  # fmt: skip
    ev = _decide(lib, R.ZERO_DIVISION_ERROR)
    assert ev is not None and ev.category is F and ev.rule == "acme-prior"


def test_a_value_error_naming_a_command_line_option_is_the_owners_arguments() -> None:
    lines = _tb([("/srv/run.py", "args = parser.parse()"), (f"{LIB}/somelib/args.py", "raise ValueError(msg)")],
                "ValueError: --save_every must be a multiple of --eval_every (got 300 and 1000)")  # fmt: skip
    ev = _decide(lines, R.VALUE_ERROR)
    assert ev is not None and (ev.category, ev.rule) == (S, "argument-check")


def test_a_value_error_inside_a_library_without_more_keeps_the_prior() -> None:
    lines = _tb([("/srv/run.py", "model.wrap()"), (f"{LIB}/torch/distributed/fsdp/x.py", "raise ValueError(msg)")],
                "ValueError: cannot wrap a module twice")  # fmt: skip
    ev = _decide(lines, R.VALUE_ERROR)
    assert ev is not None and ev.category is F


# --- storage, hubs, shared memory, nodes: the operator's --------------------------------------------
def test_a_checkpoint_archive_cut_short_is_storage() -> None:
    lines = _tb([("/srv/train.py", "state = torch.load(ckpt)"), (f"{LIB}/torch/serialization.py", "return _open_zipfile_reader(f)")],
                "RuntimeError: PytorchStreamReader failed reading zip archive: failed finding central directory")  # fmt: skip
    ev = _decide(lines, R.MODEL_LOADING_ERROR)
    assert ev is not None and (ev.category, ev.component, ev.reason) == (INFRA, Component.STORAGE, R.MODEL_LOADING_ERROR)


def test_an_unreachable_model_hub_is_the_network_and_a_model_load() -> None:
    lines = ["OSError: We couldn't connect to 'https://huggingface.co' to load this file, couldn't find it in the cached files "
             "and it looks like org/some-model is not the path to a directory containing a file named config.json."]  # fmt: skip
    ev = _decide(lines, R.OS_ERROR)
    assert ev is not None and (ev.category, ev.component, ev.reason) == (INFRA, Component.NETWORK, R.MODEL_LOADING_ERROR)


def test_an_unreachable_dataset_host_is_a_dataset_load() -> None:
    lines = _tb([("/srv/prep.py", 'ds = load_dataset("squad")'), (f"{LIB}/datasets/load.py", "path = cached_path(url)")],
                "ConnectionError: Couldn't reach https://example.org/datasets/squad/squad.py")  # fmt: skip
    ev = _decide(lines, R.CONNECTION_ERROR)
    assert ev is not None and (ev.category, ev.reason) == (INFRA, R.DATASET_LOADING_ERROR)


def test_a_tensor_that_cannot_go_to_shared_memory_is_a_full_shm() -> None:
    lines = _tb([("/usr/lib/python3.10/multiprocessing/queues.py", "obj = _ForkingPickler.dumps(obj)"),
                 (f"{LIB}/torch/multiprocessing/reductions.py", "fd, size = storage._share_fd_cpu_()")],
                "RuntimeError: unable to write to file </torch_4242_1234567890_0>: No space left on device (28)")  # fmt: skip
    ev = _decide(lines, R.RUNTIME_ERROR)
    assert ev is not None and (ev.category, ev.component, ev.reason) == (INFRA, Component.MEMORY, R.DATALOADER_KILLED)


def test_a_ray_actor_whose_node_died_is_a_node_failure() -> None:
    lines = ["ray.exceptions.RayActorError: The actor died unexpectedly before finishing this task.",
             "\tclass_name: Worker", "The actor is dead because its node has died. Node Id: 0123abcd"]  # fmt: skip
    ev = _decide(lines, None, root=0)
    assert ev is not None and ev.category is INFRA and ev.rule == "peer-lost"


def test_a_requirement_quoted_in_backticks_is_a_version_mismatch() -> None:
    lines = ["ImportError: Using the `Trainer` requires `somepkg>=1.2.0`: Please run `pip install somepkg -U`"]
    ev = _decide(lines, R.IMPORT_ERROR)
    assert ev is not None and (ev.category, ev.rule) == (F, "version-mismatch")
