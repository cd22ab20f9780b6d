"""What PEFT makes of a LoRA target list on a transformers 5 mixture-of-experts model.

transformers 5 stores the routed experts of most MoE families as two 3-D parameters (``experts.gate_up_proj``
[E, 2I, h], ``experts.down_proj`` [E, h, I]) where transformers 4 had one ``nn.Linear`` per expert and projection.
PEFT rewrites the old names before it matches anything (PEFT 0.19.1, Axolotl 0.18.0's pin,
``utils/transformers_weight_conversion.py`` ``convert_peft_config_for_transformers`` / ``_convert_peft_config_moe``;
the model types from transformers 5.14.1 ``conversion_mapping.py`` ``_MODEL_TO_CONVERSION_PATTERN``, plus mixtral,
which PEFT adds): for a model whose top-level ``model_type`` follows the Mixtral or the Qwen2-MoE pattern, every
``target_modules`` entry equal to (or ending in ``.`` +) an old expert name leaves ``target_modules`` and becomes a
``target_parameters`` entry: ``w1`` / ``w3`` or ``gate_proj`` / ``up_proj`` -> ``gate_up_proj`` (both halves of a
fused pair, with rank and alpha doubled by ``rank_pattern``; one half alone raises ValueError), ``w2`` /
``down_proj`` -> ``down_proj``, ``gate`` -> ``gate.weight`` (the router). A moved name no longer reaches the
``nn.Linear`` modules of the same name (a dense layer's or a shared expert's MLP). Axolotl's ``lora_target_linear``
hands PEFT the last name of every Linear (``find_all_linear_names``), so it is converted the same way.
Checked against the installed transformers and PEFT in tests/test_peft_targets.py.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

MIXTRAL, QWEN2_MOE = "mixtral", "qwen2_moe"

CONVERTED_MODEL_TYPES: dict[str, str] = {
    "mixtral": MIXTRAL, "minimax": MIXTRAL, "minimax_m2": MIXTRAL,
    **{t: QWEN2_MOE for t in ("afmoe", "cohere2_moe", "deepseek_v2", "deepseek_v3", "deepseek_v32", "dots1",
                              "ernie4_5_moe", "exaone_moe", "flex_olmo", "glm4_moe", "glm4_moe_lite", "glm4v_moe",
                              "glm_moe_dsa", "hunyuan_v1_moe", "longcat_flash", "mellum", "olmoe", "qwen3_moe",
                              "qwen3_next", "qwen3_omni_moe", "qwen3_omni_moe_thinker", "solar_open")},
}
"""``model_type`` -> the conversion pattern PEFT applies (qwen2_moe itself is not converted)."""

TARGET_MAP: dict[str, dict[str, str]] = {
    MIXTRAL: {"gate": "gate.weight", "w1": "gate_up_proj", "w3": "gate_up_proj", "w2": "down_proj"},
    QWEN2_MOE: {"gate": "gate.weight", "gate_proj": "gate_up_proj", "up_proj": "gate_up_proj",
                "down_proj": "down_proj"},
}
FUSED: dict[str, tuple[str, ...]] = {MIXTRAL: ("w1", "w3"), QWEN2_MOE: ("gate_proj", "up_proj")}
"""The old names fused into ``gate_up_proj``, all of which must be targeted together."""


@dataclass(frozen=True)
class PeftTargets:
    """The targets PEFT ends up with: ``modules`` (matched against module paths), ``parameters`` (3-D expert
    weights and the router weight, wrapped by ``ParamWrapper``), ``doubled``: the parameters whose rank PEFT doubles
    (a fused pair); ``moved``: the names the conversion took out of ``modules`` (``moved_to``: what each became);
    ``half_pair``: the ValueError PEFT raises when one half of a fused pair is targeted alone (None otherwise)."""

    modules: tuple[str, ...]
    parameters: tuple[str, ...]
    doubled: tuple[str, ...] = ()
    moved: tuple[str, ...] = ()
    half_pair: str | None = None
    moved_to: tuple[str, ...] = ()  # the parameter each ``moved`` entry became, in the same order


def _old_name(target: str, mapping: dict[str, str]) -> str | None:
    return next((old for old in mapping if target == old or target.endswith(f".{old}")), None)


def convert_targets(model_type: str, modules: Iterable[str], parameters: Iterable[str] = ()) -> PeftTargets:
    """PEFT's rewrite of a target list (module docstring) for a model of top-level ``model_type``."""
    modules, parameters = tuple(dict.fromkeys(modules)), tuple(parameters)
    pattern = CONVERTED_MODEL_TYPES.get(model_type)
    if pattern is None:
        return PeftTargets(modules, parameters)
    mapping = TARGET_MAP[pattern]
    moved = {t: old for t in modules if (old := _old_name(t, mapping)) is not None}
    new_parameters = tuple(dict.fromkeys([*parameters, *(mapping[old] for old in moved.values())]))
    fused = FUSED[pattern]
    present = sorted({old for old in moved.values() if old in fused})
    half = None
    if 0 < len(present) < len(fused):
        missing = ", ".join(sorted(set(fused) - set(present)))
        half = (f"Cannot convert PEFT target(s) {', '.join(present)} without also targeting {missing} because they "
                f"are fused into gate_up_proj.")
    return PeftTargets(tuple(t for t in modules if t not in moved), new_parameters,
                       ("gate_up_proj",) if len(present) == len(fused) else (), tuple(moved), half,
                       tuple(mapping[old] for old in moved.values()))
