"""Two disjoint pools of error texts: `dev` and `heldout`.

Every failure reason has several message templates (a builder's `variant` in `failures.py`: the
real error text a cluster prints for that reason, e.g. `xid48` or `heartbeat`); each template
belongs to exactly one pool, and so does each decoy (an error-looking benign line) and each
warning wrapper of a root cause printed at WARNING level (`hard.py`). A failed log draws all of
them from its spec's pool (`LogSpec.pool`, recorded in the labels).

Why: the agents' rule and keyword tables are written by people who read generated logs. If they
only ever read the `dev` pool, the `heldout` pool measures whether the tables generalise to
texts their authors never saw; the eval reports the two pools separately. Rules written from the
held-out pool would make its figures meaningless.
"""

from __future__ import annotations

from schedmate.logspec import Pool
from schedmate.taxonomy import FailureReason

R = FailureReason

# (dev templates, held-out templates) per reason; every variant a builder can return is listed once.
TEMPLATES: dict[FailureReason, tuple[frozenset[str], frozenset[str]]] = {
    reason: (frozenset(dev), frozenset(held))
    for reason, dev, held in [
        (R.NVLINK_ERROR, {"xid74", "python"}, {"nccl"}),
        (R.CUDA_ERROR, {"illegal", "xid79"}, {"launch", "cublas"}),
        (R.NODE_FAILURE, {"srun"}, {"slurmstepd"}),
        (R.ECC_ERROR, {"xid48", "python"}, {"xid94", "xid95"}),
        (R.NETWORK_ERROR, {"ib_completion"}, {"ib_system"}),
        (R.CONNECTION_ERROR, {"hub", "gloo"}, {"store"}),
        (R.S3_STORAGE_ERROR, {"timeout", "eio"}, {"slowdown", "enospc"}),
        (R.NCCL_TIMEOUT_ERROR, {"watchdog"}, {"heartbeat", "aborted"}),
        (R.NCCL_REMOTE_ERROR, {"watchdog"}, {"python"}),
        (R.DATALOADER_KILLED, {"killed", "exited"}, {"bus"}),
        (R.ATTRIBUTE_ERROR, {"'DistributedDataParallel", "'NoneType' object has no"}, {"module 'torch.distribute"}),
        (R.OUT_OF_MEMORY_ERROR, {"new", "cuda"}, {"old"}),
        (R.RUNTIME_ERROR, {"Expected all tensors to be", "mat1 and mat2 shapes canno"},
         {"Function 'LogSoftmaxBackwa", "Expected to have finished "}),
        (R.ASSERTION_ERROR, {"cuda", "deepspeed"}, {"block"}),
        (R.VALUE_ERROR, {"Expected input batch_siz", "too many values to unpac"}, {"Attempting to unscale FP"}),
        (R.ZERO_DIVISION_ERROR, {"int"}, {"float"}),
        (R.MODEL_LOADING_ERROR, {"state_dict", "safetensors"}, {"pickle"}),
        (R.DATASET_LOADING_ERROR, {"no_files"}, {"arrow"}),
        (R.FILE_NOT_FOUND_ERROR, {"tokenizer.model", "ds_config_zero3.json"}, {"latest_checkpointed_iteration.txt", "train.bin"}),
        (R.TYPE_ERROR, {"forward() got an unexpec", "'NoneType' object is not"},
         {"LlamaForCausalLM.__init_", "unsupported operand type"}),
        (R.OS_ERROR, {"nofile"}, {"libcudart"}),
        (R.KEY_ERROR, {"'input_ids'", "'model_state_dict'"}, {"'LOCAL_RANK'"}),
        (R.IMPORT_ERROR, {"ModuleNotFoundError"}, {"ImportError"}),
        (R.INDEX_ERROR, {"list"}, {"embedding"}),
        (R.NAME_ERROR, {"args"}, {"local_rank"}),
        (R.SYNTAX_ERROR, {"SyntaxError"}, {"IndentationError"}),
        (R.PERMISSION_ERROR, {"ckpt"}, {"tensorboard"}),
        (R.CALLED_PROCESS_ERROR, {"git"}, {"ninja"}),
        (R.ARGUMENT_ERROR, {"argparse_exit"}, {"conflict"}),
    ]
}


def template_pool(reason: FailureReason, variant: str) -> Pool:
    """The pool of one template; KeyError for a template the table does not list."""
    dev, held = TEMPLATES[FailureReason(reason)]
    if variant in dev:
        return Pool.DEV
    if variant in held:
        return Pool.HELDOUT
    raise KeyError(f"{reason}: template {variant!r} is in no pool")


def templates(reason: FailureReason, pool: Pool) -> frozenset[str]:
    dev, held = TEMPLATES[FailureReason(reason)]
    return dev if Pool(pool) is Pool.DEV else held
