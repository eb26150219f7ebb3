def prepare_train_features(examples, tokenizer, data_args):
    """Tokenize question/context pairs with a sliding window and map answers to token positions."""
    pad_on_right = tokenizer.padding_side == "right"
    examples["question"] = [q.lstrip() for q in examples["question"]]
    tokenized = tokenizer(
        examples["question" if pad_on_right else "context"],
        examples["context" if pad_on_right else "question"],
        truncation="only_second" if pad_on_right else "only_first",
        max_length=data_args.max_seq_length,
        stride=data_args.doc_stride,
        return_overflowing_tokens=True,
        return_offsets_mapping=True,
        padding="max_length" if data_args.pad_to_max_length else False,
    )
    sample_mapping = tokenized.pop("overflow_to_sample_mapping")
    offset_mapping = tokenized.pop("offset_mapping")
    tokenized["start_positions"], tokenized["end_positions"] = [], []
    for i, offsets in enumerate(offset_mapping):
        input_ids = tokenized["input_ids"][i]
        cls_index = input_ids.index(tokenizer.cls_token_id)
        sequence_ids = tokenized.sequence_ids(i)
        answers = examples["answers"][sample_mapping[i]]
        if len(answers["answer_start"]) == 0:
            tokenized["start_positions"].append(cls_index)
            tokenized["end_positions"].append(cls_index)
            continue
        start_char = answers["answer_start"][0]
        end_char = start_char + len(answers["text"][0])
        ts = 0
        while sequence_ids[ts] != (1 if pad_on_right else 0):
            ts += 1
        te = len(input_ids) - 1
        while sequence_ids[te] != (1 if pad_on_right else 0):
            te -= 1
        if not (offsets[ts][0] <= start_char and offsets[te][1] >= end_char):
            tokenized["start_positions"].append(cls_index)
            tokenized["end_positions"].append(cls_index)
        else:
            while ts < len(offsets) and offsets[ts][0] <= start_char:
                ts += 1
            tokenized["start_positions"].append(ts - 1)
            while offsets[te][1] >= end_char:
                te -= 1
            tokenized["end_positions"].append(te + 1)
    return tokenized
