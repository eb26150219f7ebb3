"""The policy object of a named arm: Sia's ILP round is its own class, every other arm is the
Suika loop (`ElasticPolicy`) with that arm's configuration."""

from __future__ import annotations

from .config import ElasticConfig, GrantRule
from .policy import ElasticPolicy
from .sia_round import SiaRound


def make_arm(config: ElasticConfig) -> ElasticPolicy:
    return SiaRound(config) if config.grant is GrantRule.SIA_ILP else ElasticPolicy(config)
