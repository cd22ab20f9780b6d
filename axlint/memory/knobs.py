"""The names of what the solver turns (`Knob`), of the memory savers it may drop (`Saver`), and of each change it
proposes (`Step`): one name per concept, from the solver to the rules that ask for one knob's fix and to the
wording in `axlint.report.memory_text`. A light module, so that the rules can name a knob without importing the
solver."""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any


class Knob(str, Enum):
    """What the solver may turn to make a run fit."""

    GRADIENT_CHECKPOINTING = "gradient_checkpointing"
    LOSS = "loss"
    ATTENTION = "attention"
    MICRO_BATCH = "micro_batch"
    ZERO = "zero"
    EVAL_BATCH = "eval_batch"
    EXPERTS = "experts"
    LOADING = "loading"


class Saver(str, Enum):
    """A memory saver that costs speed, which ``relax`` may drop from a run that fits without it."""

    GRADIENT_CHECKPOINTING = "gradient_checkpointing"
    ZERO3 = "zero3"
    OFFLOAD = "offload"


class Change(str, Enum):
    """One kind of change the solver proposes."""

    CHECKPOINTING_ON = "checkpointing_on"
    CHECKPOINTING_OFF = "checkpointing_off"
    LIGER_FLCE = "liger_flce"
    CUT_CROSS_ENTROPY = "cut_cross_entropy"
    FLASH_ATTENTION = "flash_attention"
    QUANTIZE_EXPERTS = "quantize_experts"
    MICRO_BATCH = "micro_batch"              # old / new: (micro_batch_size, gradient_accumulation_steps)
    EVAL_BATCH = "eval_batch"                # old / new: eval_batch_size
    ZERO_STAGE = "zero_stage"                # old / new: the ZeRO stage
    OFFLOAD_OPTIMIZER = "offload_optimizer"
    OFFLOAD_ALL = "offload_all"
    STOP_OFFLOAD = "stop_offload"
    STOCK_ZERO3 = "stock_zero3"              # new: the stock DeepSpeed file
    STOCK_ZERO3_OFFLOAD = "stock_zero3_offload"  # new: the stock DeepSpeed file
    SHARDED_QUANT_LOAD = "sharded_quant_load"
    SKIP_MOVE_TO_DEVICE = "skip_move_to_device"


@dataclass(frozen=True)
class Step:
    """One change of a suggestion, as data: what changes, from what, to what."""

    change: Change
    old: Any = None
    new: Any = None
