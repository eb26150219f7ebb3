"""ImageNet / ViT training loop (flax.linen + optax), data from tf.data / TFDS."""
import functools

from absl import logging
from flax.training import checkpoints, common_utils, train_state
import jax
import jax.numpy as jnp
import ml_collections
import optax

import input_pipeline
import models


def create_learning_rate_fn(config, base_learning_rate, steps_per_epoch):
    warmup_fn = optax.linear_schedule(0.0, base_learning_rate, config.warmup_epochs * steps_per_epoch)
    cosine_epochs = max(config.num_epochs - config.warmup_epochs, 1)
    cosine_fn = optax.cosine_decay_schedule(base_learning_rate, cosine_epochs * steps_per_epoch)
    return optax.join_schedules([warmup_fn, cosine_fn], [config.warmup_epochs * steps_per_epoch])


def create_model(config, num_classes):
    if config.model.startswith("ViT"):
        return models.VisionTransformer(num_classes=num_classes, **config.vit)
    return getattr(models, config.model)(num_classes=num_classes, dtype=jnp.bfloat16 if config.half_precision else jnp.float32)


def train_and_evaluate(config: ml_collections.ConfigDict, workdir: str):
    rng = jax.random.key(0)
    if config.batch_size % jax.device_count() > 0:
        raise ValueError("Batch size must be divisible by the number of devices")
    local_batch_size = config.batch_size // jax.process_count()

    dataset_builder = input_pipeline.builder(config.dataset)
    train_iter = input_pipeline.create_input_iter(dataset_builder, local_batch_size, config.image_size, train=True,
                                                  cache=config.cache)
    steps_per_epoch = dataset_builder.info.splits["train"].num_examples // config.batch_size

    if config.num_train_steps <= 0:
        num_steps = int(steps_per_epoch * config.num_epochs)
    else:
        num_steps = config.num_train_steps

    base_learning_rate = config.learning_rate * config.batch_size / 256.0
    learning_rate_fn = create_learning_rate_fn(config, base_learning_rate, steps_per_epoch)

    model = create_model(config, dataset_builder.info.features["label"].num_classes)
    if config.optimizer == "sgd":
        tx = optax.sgd(learning_rate=learning_rate_fn, momentum=config.momentum, nesterov=True)
    else:
        tx = optax.adamw(learning_rate=learning_rate_fn, weight_decay=config.weight_decay)
    state = create_train_state(rng, config, model, config.image_size, tx)
    state = checkpoints.restore_checkpoint(workdir, state)

    p_train_step = jax.pmap(functools.partial(train_step, learning_rate_fn=learning_rate_fn), axis_name="batch")
    for step, batch in zip(range(int(state.step), num_steps), train_iter):
        state, metrics = p_train_step(state, batch)
        if (step + 1) % steps_per_epoch == 0:
            checkpoints.save_checkpoint_multiprocess(workdir, jax.device_get(state), step, keep=3)
    return state
