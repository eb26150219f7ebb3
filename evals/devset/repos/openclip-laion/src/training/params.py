import argparse


def get_default_params(model_name):
    # Params from paper (https://arxiv.org/pdf/2103.00020.pdf)
    model_name = model_name.lower()
    if "vit" in model_name:
        return {"lr": 5.0e-4, "beta1": 0.9, "beta2": 0.98, "eps": 1.0e-6}
    else:
        return {"lr": 5.0e-4, "beta1": 0.9, "beta2": 0.999, "eps": 1.0e-8}


def parse_args(args):
    parser = argparse.ArgumentParser()
    parser.add_argument("--train-data", type=str, default=None,
                        help="Path to file(s) with training data. When using webdataset, brace notation for shards.")
    parser.add_argument("--train-num-samples", type=int, default=None,
                        help="Number of samples in dataset. Required for webdataset if not available in info file.")
    parser.add_argument("--dataset-type", choices=["webdataset", "csv", "synthetic", "auto"], default="auto")
    parser.add_argument("--workers", type=int, default=4, help="Number of dataloader workers per GPU.")
    parser.add_argument("--batch-size", type=int, default=64, help="Batch size per GPU.")
    parser.add_argument("--epochs", type=int, default=32, help="Number of epochs to train for.")
    parser.add_argument("--epochs-cooldown", type=int, default=None)
    parser.add_argument("--lr", type=float, default=None, help="Learning rate.")
    parser.add_argument("--beta1", type=float, default=None)
    parser.add_argument("--beta2", type=float, default=None)
    parser.add_argument("--eps", type=float, default=None)
    parser.add_argument("--wd", type=float, default=0.2, help="Weight decay.")
    parser.add_argument("--warmup", type=int, default=10000, help="Number of steps to warmup for.")
    parser.add_argument("--accum-freq", type=int, default=1, help="Update the model every --acum-freq steps.")
    parser.add_argument("--model", type=str, default="RN50", help="Name of the vision backbone to use.")
    parser.add_argument("--pretrained", default="", type=str)
    parser.add_argument("--precision", choices=["amp", "amp_bf16", "fp32"], default="amp")
    parser.add_argument("--grad-checkpointing", default=False, action="store_true")
    parser.add_argument("--local-loss", default=False, action="store_true")
    parser.add_argument("--gather-with-grad", default=False, action="store_true")
    parser.add_argument("--grad-clip-norm", type=float, default=None, help="Gradient clip.")
    parser.add_argument("--save-frequency", type=int, default=1)
    parser.add_argument("--report-to", default="", type=str)
    parser.add_argument("--name", default=None, type=str)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--dist-url", default="env://", type=str)
    parser.add_argument("--imagenet-val", type=str, default=None)
    args = parser.parse_args(args)

    default_params = get_default_params(args.model)
    for name, val in default_params.items():
        if getattr(args, name) is None:
            setattr(args, name, val)
    return args
