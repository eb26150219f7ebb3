"""ImageNet-style input pipeline on tf.data (AUTOTUNE; no DataLoader / worker processes)."""
import jax
import tensorflow as tf
import tensorflow_datasets as tfds


def builder(name):
    return tfds.builder(name)


def create_input_iter(dataset_builder, batch_size, image_size, train, cache=False):
    split = "train" if train else "validation"
    ds = dataset_builder.as_dataset(split=tfds.split_for_jax_process(split))
    if cache:
        ds = ds.cache()
    ds = ds.shuffle(16 * batch_size).repeat()
    ds = ds.map(lambda d: (tf.image.resize(d["image"], (image_size, image_size)), d["label"]),
                num_parallel_calls=tf.data.experimental.AUTOTUNE)
    ds = ds.batch(batch_size, drop_remainder=True).prefetch(10)
    local = jax.local_device_count()
    return map(lambda b: jax.tree_util.tree_map(lambda x: x._numpy().reshape((local, -1) + x.shape[1:]), b), ds)
