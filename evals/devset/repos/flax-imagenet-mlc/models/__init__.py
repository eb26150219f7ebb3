from models.resnet import ResNet18, ResNet50, ResNet101  # noqa: F401
from models.vit import VisionTransformer  # noqa: F401
