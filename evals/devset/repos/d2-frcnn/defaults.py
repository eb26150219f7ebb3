"""Project defaults, layered under the YAML files (yacs CfgNode).

Only keys we touch are listed here; the rest come from detectron2.config.get_cfg().
"""
from detectron2.config import get_cfg as _d2_get_cfg


def get_cfg():
    cfg = _d2_get_cfg()
    # detectron2 ships SOLVER.IMS_PER_BATCH=16 / BASE_LR=0.001 / NUM_WORKERS=4; we keep its
    # learning rate but read fewer workers on our shared nodes.
    cfg.DATALOADER.NUM_WORKERS = 6
    cfg.SOLVER.CHECKPOINT_PERIOD = 10000
    cfg.SOLVER.AMP.ENABLED = True
    cfg.TEST.EVAL_PERIOD = 0
    return cfg
