"""tf.data input pipelines over TFDS; parallelism is AUTOTUNE, there is no worker pool."""
import tensorflow as tf
import tensorflow_datasets as tfds

AUTOTUNE = tf.data.AUTOTUNE

# TFDS names -> split names (food101 has no "test")
_SPLITS = {
    "imagenet2012": ("train", "validation"),
    "food101": ("train", "validation"),
    "oxford_flowers102": ("train+validation", "test"),
    "cifar100": ("train", "test"),
}


def _preprocess(image, label, size, training):
    image = tf.image.convert_image_dtype(image, tf.float32)
    if training:
        image = tf.image.random_flip_left_right(image)
        image = tf.image.resize_with_crop_or_pad(image, size + 32, size + 32)
        image = tf.image.random_crop(image, (size, size, 3))
    else:
        image = tf.image.resize(image, (size, size))
    return image * 255.0, label


def load(name, data_dir, global_batch, size):
    train_split, val_split = _SPLITS[name]
    (train, val), info = tfds.load(name, split=[train_split, val_split], data_dir=data_dir,
                                   as_supervised=True, with_info=True)
    train = (train.shuffle(16 * global_batch)
             .map(lambda x, y: _preprocess(x, y, size, True), num_parallel_calls=AUTOTUNE)
             .batch(global_batch, drop_remainder=True).prefetch(AUTOTUNE))
    val = (val.map(lambda x, y: _preprocess(x, y, size, False), num_parallel_calls=AUTOTUNE)
           .batch(global_batch).prefetch(AUTOTUNE))
    return train, val, info
