"""`--simulate` runs on the configs people write (tests/simulate_corpus.py): 30 corpus configs of models up to 8B
(full fine-tunes, LoRA, QLoRA, LoRA on an 8-bit base, DeepSpeed ZeRO-3, FSDP, a vision model's text, one MoE, Cut
Cross-Entropy, Liger kernels), the decoder cut to its first 4 layers on both sides so that each takes seconds.
Each must simulate within the time budget, build exactly the parameters the estimate counts (trainable ones
included), and land its peak within 10 % of the analytic one, except the configs listed in KNOWN_GAPS, whose
differences are open accuracy work. `benchmarks/memory/simulate_corpus.py` runs the same configs at full depth."""
from __future__ import annotations

import functools

import pytest

from tests.simulate_corpus import CONFIGS, Comparison, compare

LAYERS = 4
SECONDS = 30.0
"""The budget of one simulation with 4 layers on a 2-core CPU (the slowest measured: 3.2 s)."""
TOLERANCE = 0.10
KNOWN_GAPS: set[str] = set()
"""Configs whose simulated and analytic peaks are more than 10 % apart today; a config that comes within 10 % must
leave this list, so that it always says what is open."""


@functools.cache
def comparison(config: str) -> Comparison:
    return compare(config, LAYERS)


def test_at_least_twenty_configs_of_every_kind():
    assert len(CONFIGS) >= 20 and KNOWN_GAPS <= set(CONFIGS)


@pytest.mark.parametrize("config", CONFIGS)
def test_simulates_within_budget_with_the_parameters_the_estimate_counts(config: str) -> None:
    found = comparison(config)
    assert found.layers == LAYERS
    assert found.seconds <= SECONDS, f"{config}: {found.seconds:.1f} s"
    assert found.simulated_parameters == found.analytic_parameters, config
    assert found.simulated_trainable == found.analytic_trainable, config


@pytest.mark.parametrize("config", CONFIGS)
def test_peak_within_ten_percent_of_simulated_or_a_known_gap(config: str) -> None:
    found = comparison(config)
    within = abs(found.error) <= TOLERANCE
    assert within != (config in KNOWN_GAPS), f"{config}: estimate {found.error:+.1%} against the simulation"
