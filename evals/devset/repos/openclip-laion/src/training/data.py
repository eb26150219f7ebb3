import math

import webdataset as wds
from open_clip import get_tokenizer


def get_wds_loader(args, preprocess, world_size):
    """One 'epoch' = train_num_samples samples (webdataset resamples shards; epochs are virtual)."""
    assert args.train_num_samples, "webdataset needs --train-num-samples"
    tokenizer = get_tokenizer(args.model)
    pipeline = wds.DataPipeline(
        wds.ResampledShards(args.train_data),
        wds.tarfile_to_samples(handler=wds.warn_and_continue),
        wds.shuffle(1000),
        wds.decode("pilrgb", handler=wds.warn_and_continue),
        wds.rename(image="jpg;png;jpeg;webp", text="txt"),
        wds.map_dict(image=preprocess, text=lambda t: tokenizer(t)[0]),
        wds.to_tuple("image", "text"),
        wds.batched(args.batch_size, partial=False),
    )
    global_batch = args.batch_size * world_size
    num_batches = math.ceil(args.train_num_samples / global_batch)
    num_worker_batches = math.ceil(num_batches / max(1, args.workers))
    pipeline = pipeline.with_epoch(num_worker_batches)
    loader = wds.WebLoader(pipeline, batch_size=None, shuffle=False, num_workers=args.workers,
                           persistent_workers=args.workers > 0)
    return loader, num_worker_batches * max(1, args.workers)
