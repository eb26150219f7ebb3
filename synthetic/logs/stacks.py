"""Python stack frames of the five frameworks, and the traceback format CPython prints.

Frames are (file, line, function, source) tuples; `{site}` and `{wd}` are filled from the job.
Line numbers are those of recent releases (close enough: nobody reads them back).
"""

from __future__ import annotations

from schedmate.logspec import Framework

from .context import JobContext

Frame = tuple[str, int, str, str]

_ENTRY_TRAIN: dict[Framework, list[Frame]] = {
    Framework.MEGATRON: [
        ("{wd}/pretrain_gpt.py", 245, "<module>", "pretrain("),
        ("{wd}/megatron/training/training.py", 357, "pretrain", "iteration, num_floating_point_operations_so_far = train("),
        ("{wd}/megatron/training/training.py", 1297, "train", "train_step(forward_step_func,"),
        ("{wd}/megatron/training/training.py", 688, "train_step", "losses_reduced = forward_backward_func("),
        ("{wd}/megatron/core/pipeline_parallel/schedules.py", 452, "forward_backward_no_pipelining", "output_tensor, num_tokens = forward_step("),
        ("{wd}/megatron/core/pipeline_parallel/schedules.py", 275, "forward_step", "output_tensor, loss_func = forward_step_func(data_iterator, model)"),
        ("{wd}/pretrain_gpt.py", 186, "forward_step", "output_tensor = model(tokens, position_ids, attention_mask,"),
    ],
    Framework.DEEPSPEED: [
        ("{wd}/main.py", 398, "<module>", "main()"),
        ("{wd}/main.py", 366, "main", "outputs = model(**batch, use_cache=False)"),
        ("{site}/torch/nn/modules/module.py", 1553, "_wrapped_call_impl", "return self._call_impl(*args, **kwargs)"),
        ("{site}/torch/nn/modules/module.py", 1562, "_call_impl", "return forward_call(*args, **kwargs)"),
        ("{site}/deepspeed/utils/nvtx.py", 15, "wrapped_fn", "ret_val = func(*args, **kwargs)"),
        ("{site}/deepspeed/runtime/engine.py", 1846, "forward", "loss = self.module(*inputs, **kwargs)"),
    ],
    Framework.HF_TRAINER: [
        ("{wd}/run_clm.py", 656, "<module>", "main()"),
        ("{wd}/run_clm.py", 604, "main", "train_result = trainer.train(resume_from_checkpoint=checkpoint)"),
        ("{site}/transformers/trainer.py", 1938, "train", "return inner_training_loop("),
        ("{site}/transformers/trainer.py", 2279, "_inner_training_loop", "tr_loss_step = self.training_step(model, inputs)"),
        ("{site}/transformers/trainer.py", 3318, "training_step", "loss = self.compute_loss(model, inputs)"),
        ("{site}/transformers/trainer.py", 3363, "compute_loss", "outputs = model(**inputs)"),
    ],
    Framework.LIGHTNING: [
        ("{wd}/train.py", 88, "<module>", "trainer.fit(model, datamodule=dm)"),
        ("{site}/lightning/pytorch/trainer/trainer.py", 544, "fit", "call._call_and_handle_interrupt("),
        ("{site}/lightning/pytorch/trainer/call.py", 43, "_call_and_handle_interrupt", "return trainer.strategy.launcher.launch(trainer_fn, *args, trainer=trainer, **kwargs)"),
        ("{site}/lightning/pytorch/strategies/launchers/subprocess_script.py", 105, "launch", "return function(*args, **kwargs)"),
        ("{site}/lightning/pytorch/trainer/trainer.py", 580, "_fit_impl", "self._run(model, ckpt_path=ckpt_path)"),
        ("{site}/lightning/pytorch/trainer/trainer.py", 987, "_run", "results = self._run_stage()"),
        ("{site}/lightning/pytorch/trainer/trainer.py", 1033, "_run_stage", "self.fit_loop.run()"),
        ("{site}/lightning/pytorch/loops/fit_loop.py", 205, "run", "self.advance()"),
        ("{site}/lightning/pytorch/loops/fit_loop.py", 363, "advance", "self.epoch_loop.run(self._data_fetcher)"),
        ("{site}/lightning/pytorch/loops/training_epoch_loop.py", 140, "run", "self.advance(data_fetcher)"),
        ("{site}/lightning/pytorch/loops/training_epoch_loop.py", 250, "advance", "batch_output = self.automatic_optimization.run(trainer.optimizers[0], batch_idx, kwargs)"),
        ("{site}/lightning/pytorch/loops/optimization/automatic.py", 190, "run", "self._optimizer_step(batch_idx, closure)"),
        ("{site}/lightning/pytorch/loops/optimization/automatic.py", 268, "_optimizer_step", "call._call_lightning_module_hook("),
        ("{site}/lightning/pytorch/trainer/call.py", 167, "_call_lightning_module_hook", "output = fn(*args, **kwargs)"),
        ("{site}/lightning/pytorch/core/module.py", 1306, "optimizer_step", "optimizer.step(closure=optimizer_closure)"),
        ("{site}/lightning/pytorch/core/optimizer.py", 153, "step", "step_output = self._strategy.optimizer_step(self._optimizer, closure, **kwargs)"),
        ("{site}/lightning/pytorch/strategies/ddp.py", 270, "optimizer_step", "optimizer_output = super().optimizer_step(optimizer, closure, model, **kwargs)"),
        ("{site}/lightning/pytorch/plugins/precision/amp.py", 76, "optimizer_step", "closure_result = closure()"),
        ("{site}/lightning/pytorch/loops/optimization/automatic.py", 318, "_training_step", 'training_step_output = call._call_strategy_hook(trainer, "training_step", *kwargs.values())'),
        ("{site}/lightning/pytorch/trainer/call.py", 311, "_call_strategy_hook", "output = fn(*args, **kwargs)"),
        ("{site}/lightning/pytorch/strategies/strategy.py", 390, "training_step", "return self.lightning_module.training_step(*args, **kwargs)"),
        ("{wd}/train.py", 41, "training_step", "logits = self(x)"),
    ],
    Framework.PYTORCH: [
        ("{wd}/train.py", 301, "<module>", "logits, loss = model(X, Y)"),
    ],
}

_ENTRY_INIT: dict[Framework, list[Frame]] = {
    Framework.MEGATRON: [
        ("{wd}/pretrain_gpt.py", 245, "<module>", "pretrain("),
        ("{wd}/megatron/training/training.py", 280, "pretrain", "model, optimizer, opt_param_scheduler = setup_model_and_optimizer("),
        ("{wd}/megatron/training/training.py", 603, "setup_model_and_optimizer", "args.iteration, args.num_floating_point_operations_so_far = load_checkpoint("),
    ],
    Framework.DEEPSPEED: [
        ("{wd}/main.py", 398, "<module>", "main()"),
        ("{wd}/main.py", 292, "main", "model, optimizer, _, lr_scheduler = deepspeed.initialize("),
        ("{site}/deepspeed/__init__.py", 181, "initialize", "engine = DeepSpeedEngine(args=args,"),
        ("{site}/deepspeed/runtime/engine.py", 262, "__init__", "self._configure_with_arguments(args, mpu)"),
    ],
    Framework.HF_TRAINER: [
        ("{wd}/run_clm.py", 656, "<module>", "main()"),
        ("{wd}/run_clm.py", 430, "main", "model = AutoModelForCausalLM.from_pretrained("),
        ("{site}/transformers/models/auto/auto_factory.py", 564, "from_pretrained", "return model_class.from_pretrained("),
        ("{site}/transformers/modeling_utils.py", 3941, "from_pretrained", ") = cls._load_pretrained_model("),
    ],
    Framework.LIGHTNING: [
        ("{wd}/train.py", 80, "<module>", "dm = build_datamodule(cfg)"),
        ("{wd}/data.py", 57, "build_datamodule", "return TokenDataModule(cfg.data)"),
    ],
    Framework.PYTORCH: [
        ("{wd}/train.py", 152, "<module>", "model = init_model(model_args)"),
    ],
}

FORWARD: list[Frame] = [
    ("{site}/torch/nn/modules/module.py", 1553, "_wrapped_call_impl", "return self._call_impl(*args, **kwargs)"),
    ("{site}/torch/nn/modules/module.py", 1562, "_call_impl", "return forward_call(*args, **kwargs)"),
    ("{site}/torch/nn/parallel/distributed.py", 1636, "forward", "else self._run_ddp_forward(*inputs, **kwargs)"),
    ("{site}/torch/nn/parallel/distributed.py", 1454, "_run_ddp_forward", "return self.module(*inputs, **kwargs)  # type: ignore[index]"),
    ("{site}/torch/nn/modules/module.py", 1553, "_wrapped_call_impl", "return self._call_impl(*args, **kwargs)"),
    ("{site}/torch/nn/modules/module.py", 1562, "_call_impl", "return forward_call(*args, **kwargs)"),
    ("{site}/transformers/models/llama/modeling_llama.py", 1189, "forward", "outputs = self.model("),
    ("{site}/transformers/models/llama/modeling_llama.py", 1001, "forward", "layer_outputs = decoder_layer("),
    ("{site}/transformers/models/llama/modeling_llama.py", 750, "forward", "hidden_states = self.mlp(hidden_states)"),
    ("{site}/transformers/models/llama/modeling_llama.py", 309, "forward", "down_proj = self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))"),
]

BACKWARD: list[Frame] = [
    ("{site}/torch/_tensor.py", 521, "backward", "torch.autograd.backward("),
    ("{site}/torch/autograd/__init__.py", 289, "backward", "_engine_run_backward("),
    ("{site}/torch/autograd/graph.py", 769, "_engine_run_backward", "return Variable._execution_engine.run_backward(  # Calls into the C++ engine to run the backward pass"),
]

DATALOADER: list[Frame] = [
    ("{site}/torch/utils/data/dataloader.py", 630, "__next__", "data = self._next_data()"),
    ("{site}/torch/utils/data/dataloader.py", 1327, "_next_data", "idx, data = self._get_data()"),
    ("{site}/torch/utils/data/dataloader.py", 1293, "_get_data", "success, data = self._try_get_data()"),
    ("{site}/torch/utils/data/dataloader.py", 1131, "_try_get_data", "data = self._data_queue.get(timeout=timeout)"),
    ("/usr/lib/python3.10/multiprocessing/queues.py", 113, "get", "if not self._poll(timeout):"),
    ("/usr/lib/python3.10/multiprocessing/connection.py", 257, "poll", "return self._poll(timeout)"),
    ("/usr/lib/python3.10/multiprocessing/connection.py", 424, "_poll", "r = wait([self], timeout)"),
    ("/usr/lib/python3.10/multiprocessing/connection.py", 931, "wait", "ready = selector.select(timeout)"),
    ("/usr/lib/python3.10/selectors.py", 416, "select", "fd_event_list = self._selector.poll(timeout)"),
    ("{site}/torch/utils/data/_utils/signal_handling.py", 67, "handler", "_error_if_any_worker_fails()"),
]

TORCHRUN: list[Frame] = [
    ("/usr/local/bin/torchrun", 8, "<module>", "sys.exit(main())"),
    ("{site}/torch/distributed/elastic/multiprocessing/errors/__init__.py", 348, "wrapper", "return f(*args, **kwargs)"),
    ("{site}/torch/distributed/run.py", 901, "main", "run(args)"),
    ("{site}/torch/distributed/run.py", 892, "run", "elastic_launch("),
    ("{site}/torch/distributed/launcher/api.py", 133, "__call__", "return launch_agent(self._config, self._entrypoint, list(args))"),
    ("{site}/torch/distributed/launcher/api.py", 264, "launch_agent", "raise ChildFailedError("),
]

ACCELERATE: list[Frame] = [
    ("/usr/local/bin/accelerate", 8, "<module>", "sys.exit(main())"),
    ("{site}/accelerate/commands/accelerate_cli.py", 48, "main", "args.func(args)"),
    ("{site}/accelerate/commands/launch.py", 1097, "launch_command", "multi_gpu_launcher(args)"),
    ("{site}/accelerate/commands/launch.py", 734, "multi_gpu_launcher", "distrib_run.run(args)"),
]


def entry_frames(ctx: JobContext, phase: str) -> list[Frame]:
    table = _ENTRY_INIT if phase == "init" else _ENTRY_TRAIN
    return list(table[ctx.framework])


def format_traceback(ctx: JobContext, frames: list[Frame], exc: list[str], *, header: bool = True) -> list[str]:
    """CPython's traceback text (3.11 adds `^^^^` under the failing expression of the last frame)."""
    out = ["Traceback (most recent call last):"] if header else []
    for i, (file, line, func, code) in enumerate(frames):
        out.append(f'  File "{file.format(site=ctx.site, wd=ctx.workdir)}", line {line}, in {func}')
        if not code:  # Cython frames have no source line
            continue
        out.append(f"    {code}")
        if ctx.py311 and i == len(frames) - 1 and not code.endswith("("):
            out.append("    " + "^" * min(len(code), 60))
    out.extend(exc)
    return out


CHAINED = ["", "The above exception was the direct cause of the following exception:", ""]
DURING = ["", "During handling of the above exception, another exception occurred:", ""]
