# Fine-tune the ImageNet Swin-T on iNaturalist 2018 (8,142 species)
_base_ = ['./swin-tiny_16xb64_in1k.py']

load_from = 'https://download.openmmlab.com/mmclassification/v0/swin-transformer/swin_tiny_224_b16x64_300e_imagenet_20210616_090925-66df6be6.pth'

model = dict(head=dict(num_classes=8142))
data_preprocessor = dict(num_classes=8142)

train_dataloader = dict(
    batch_size=32,
    num_workers=8,
    dataset=dict(type='CustomDataset', data_root='data/inat2018', ann_file='meta/train.txt', data_prefix='train'),
)
val_dataloader = dict(
    dataset=dict(type='CustomDataset', data_root='data/inat2018', ann_file='meta/val.txt', data_prefix='val'),
)
test_dataloader = val_dataloader

optim_wrapper = dict(optimizer=dict(lr=1e-4 * 256 / 512))
train_cfg = dict(max_epochs=100)
param_scheduler = [
    dict(type='LinearLR', start_factor=1e-3, by_epoch=True, end=5, convert_to_iter_based=True),
    dict(type='CosineAnnealingLR', eta_min=1e-6, by_epoch=True, begin=5),
]
auto_scale_lr = dict(base_batch_size=256)
