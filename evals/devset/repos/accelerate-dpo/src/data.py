"""Turns {prompt, chosen, rejected} rows (chat-format messages) into token ids."""


def build_pairs(tokenizer, max_length, max_prompt_length):
    def fn(row):
        prompt = tokenizer.apply_chat_template(row["chosen"][:-1], tokenize=False, add_generation_prompt=True)
        chosen = row["chosen"][-1]["content"] if isinstance(row["chosen"], list) else row["chosen"]
        rejected = row["rejected"][-1]["content"] if isinstance(row["rejected"], list) else row["rejected"]
        p = tokenizer(prompt, truncation=True, max_length=max_prompt_length)["input_ids"]
        c = tokenizer(chosen, add_special_tokens=False)["input_ids"][: max_length - len(p)]
        r = tokenizer(rejected, add_special_tokens=False)["input_ids"][: max_length - len(p)]
        return {"prompt_ids": p, "chosen_ids": c, "rejected_ids": r}
    return fn
