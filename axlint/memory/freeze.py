"""Axolotl's ``freeze_mm_modules``: which multimodal parameters it freezes.

Axolotl 0.18.0 ``utils/freeze.py`` (``freeze_mm_modules``, called in ``train.py`` after the adapters are added) sets
requires_grad False on every parameter one of whose dotted path components is in ``_MM_MODULE_PREFIXES``: the
vision and audio towers, the projectors named ``multi_modal_projector`` or ``embed_vision`` / ``embed_audio``, and
the LoRA adapters inside them. A module whose path carries none of those names keeps training: SmolVLM's and
Idefics3's ``connector``, PaddleOCR-VL's ``projector`` (shown by tests/test_oracle_ddp.py).
"""
from __future__ import annotations

MM_PREFIXES = frozenset({"vision_tower", "vision_model", "vision_encoder", "embed_vision", "multi_modal_projector",
                         "visual", "audio_tower", "audio_model", "embed_audio"})
"""Axolotl 0.18.0 ``utils/freeze.py`` ``_MM_MODULE_PREFIXES``."""


def mm_frozen(path: str) -> bool:
    """Whether ``freeze_mm_modules`` freezes the parameters under module ``path``."""
    return not MM_PREFIXES.isdisjoint(path.split("."))
