"""Backbones from keras.applications with a fresh classification head."""
import tensorflow as tf

_BACKBONES = {
    "resnet50": tf.keras.applications.ResNet50,
    "efficientnetb0": tf.keras.applications.EfficientNetB0,
    "efficientnetb3": tf.keras.applications.EfficientNetB3,
    "mobilenetv3large": tf.keras.applications.MobileNetV3Large,
}


def build(name, num_classes, size, pretrained):
    if not pretrained and num_classes == 1000:
        # full keras model incl. its own 1000-way top
        return _BACKBONES[name](weights=None, input_shape=(size, size, 3), classes=1000)
    base = _BACKBONES[name](include_top=False, weights="imagenet" if pretrained else None,
                            input_shape=(size, size, 3), pooling="avg")
    x = tf.keras.layers.Dropout(0.2)(base.output)
    out = tf.keras.layers.Dense(num_classes, dtype="float32")(x)
    return tf.keras.Model(base.input, out, name=f"{name}_{num_classes}")
