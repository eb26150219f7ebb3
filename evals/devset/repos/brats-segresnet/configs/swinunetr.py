from configs.base import Config

cfg = Config(
    model="SwinUNETR",
    roi_size=(96, 96, 96),
    batch_size=2,
    lr=2e-4,
    max_epochs=800,
    num_workers=12,
    extra={"feature_size": 48, "use_checkpoint": True},
)
