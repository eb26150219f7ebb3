"""Default Hyperparameter configuration (ResNet-50 on ImageNet, 1 host)."""
import ml_collections


def get_config():
    config = ml_collections.ConfigDict()

    # As defined in the `models` module.
    config.model = "ResNet50"
    # `name` argument of tensorflow_datasets.builder()
    config.dataset = "imagenet2012:5.*.*"
    config.image_size = 224

    config.optimizer = "sgd"
    config.learning_rate = 0.1   # per 256 examples; scaled by batch_size / 256 in train.py
    config.warmup_epochs = 5.0
    config.momentum = 0.9
    config.weight_decay = 1e-4
    config.batch_size = 128      # global, split over all devices

    config.num_epochs = 100.0
    config.log_every_steps = 100

    config.cache = False
    config.half_precision = False

    # If num_train_steps==-1 then the number of training steps is calculated from
    # num_epochs using the entire dataset. Similarly for steps_per_eval.
    config.num_train_steps = -1
    config.steps_per_eval = -1
    return config
