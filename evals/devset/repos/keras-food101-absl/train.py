"""Image classification with tf.keras + tf.distribute, configured with absl flags.

    python train.py --flagfile=configs/effnetb0_food101.cfg [--flag=value ...]

Flags given after --flagfile override the file (absl parses left to right).
"""
import os

from absl import app, flags, logging
import tensorflow as tf

from trainer import data, models

FLAGS = flags.FLAGS

flags.DEFINE_string("model", "resnet50", "Backbone: resnet50 | efficientnetb0 | efficientnetb3 | mobilenetv3large.")
flags.DEFINE_string("dataset", "imagenet2012", "TFDS dataset name.")
flags.DEFINE_string("data_dir", "/datasets/tfds", "TFDS data dir.")
flags.DEFINE_string("model_dir", "/tmp/keras_cls", "Checkpoints and TensorBoard logs.")
flags.DEFINE_integer("epochs", 30, "Number of training epochs.")
flags.DEFINE_integer("batch_size_per_replica", 64, "Per-replica batch size.")
flags.DEFINE_float("base_lr", 0.1, "Learning rate for a global batch of 256.")
flags.DEFINE_bool("scale_lr", True, "Scale base_lr linearly with the global batch size.")
flags.DEFINE_bool("pretrained", True, "Start from ImageNet weights (keras.applications).")
flags.DEFINE_integer("image_size", 224, "Input resolution.")
flags.DEFINE_integer("workers", 8, "Passed to model.fit.")
flags.DEFINE_bool("mixed_precision", True, "Use mixed_float16.")


def main(argv):
    del argv
    if FLAGS.mixed_precision:
        tf.keras.mixed_precision.set_global_policy("mixed_float16")

    strategy = tf.distribute.MirroredStrategy()  # all visible GPUs
    n_replicas = strategy.num_replicas_in_sync
    global_batch = FLAGS.batch_size_per_replica * n_replicas
    lr = FLAGS.base_lr * global_batch / 256 if FLAGS.scale_lr else FLAGS.base_lr
    logging.info("replicas=%d global_batch=%d lr=%g", n_replicas, global_batch, lr)

    train_ds, val_ds, info = data.load(FLAGS.dataset, FLAGS.data_dir, global_batch, FLAGS.image_size)
    num_classes = info.features["label"].num_classes
    steps_per_epoch = info.splits["train"].num_examples // global_batch

    with strategy.scope():
        model = models.build(FLAGS.model, num_classes, FLAGS.image_size, FLAGS.pretrained)
        schedule = tf.keras.optimizers.schedules.CosineDecay(lr, decay_steps=steps_per_epoch * FLAGS.epochs)
        model.compile(
            optimizer=tf.keras.optimizers.SGD(schedule, momentum=0.9, nesterov=True),
            loss=tf.keras.losses.SparseCategoricalCrossentropy(label_smoothing=0.1),
            metrics=["accuracy"],
        )

    callbacks = [
        tf.keras.callbacks.ModelCheckpoint(os.path.join(FLAGS.model_dir, "ckpt-{epoch:03d}"), save_weights_only=True),
        tf.keras.callbacks.TensorBoard(FLAGS.model_dir),
        # tf.keras.callbacks.EarlyStopping(patience=5),  # disabled: cosine schedule needs the full run
    ]
    model.fit(
        train_ds,
        validation_data=val_ds,
        epochs=FLAGS.epochs,
        callbacks=callbacks,
        workers=FLAGS.workers,
        use_multiprocessing=False,
    )


if __name__ == "__main__":
    app.run(main)
