"""Prompts for the post-training spot checks (run by `tune run generate --config ...`)."""

SPOT_CHECKS = [
    "Give three tips for staying healthy.",
    "Translate 'where is the train station' into French.",
    "Write a haiku about gradient descent.",
]
