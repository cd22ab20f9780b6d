"""Shared by the catalog-coverage tests (tests/test_coverage_*.py): the model transformers builds from a catalog
entry's config.json on the meta device, the check that an entry is that model, and the LoRA adapter counts of PEFT and
of axlint for the same targets. (The coverage verdict of a corpus config is ``benchmarks.memory.coverage.classify``,
imported from there.)"""
from __future__ import annotations

from typing import Any, Mapping

from axlint.architectures import catalog_lookup, resolve_architecture
from axlint.architectures.vision import PROJECTOR_ALIASES, is_multimodal
from axlint.hardware import parse_hardware
from axlint.memory.params import trainable
from axlint.memory.setup import read_setup
from tests.resolved import facts


def one_config_per_model_type() -> dict[str, dict]:
    """One config.json of each model type in axlint's catalog (the first entry's), by type."""
    from axlint.architectures.resolve import load_catalog

    configs: dict[str, dict] = {}
    for entry in load_catalog():
        configs.setdefault(str(entry["config"].get("model_type")), entry["config"])
    return configs


def meta_model(config: Mapping[str, Any]) -> Any:
    """The model transformers 5.24 builds from a config.json dict on the meta device: a multimodal model (one with a
    ``text_config``, or a flat Qwen2-VL-style config) through ``AutoModelForMultimodalLM``, which maps the image and the audio models alike, else the
    causal LM. A published ``model_type`` transformers spells otherwise is read as its config class
    (``PROJECTOR_ALIASES``: LFM2-VL's "lfm2-vl"); ``auto_map`` is left out, so the repository's own code never runs.
    The values are deep-copied first: transformers rewrites nested ones in place (a ``rope_scaling`` dict gains
    ``rope_theta``), which would change the catalog's cached entry."""
    import copy

    import torch
    import transformers

    kind = config["model_type"]
    fields = {k: copy.deepcopy(v) for k, v in config.items() if k not in ("model_type", "auto_map")}
    auto = transformers.AutoModelForMultimodalLM if is_multimodal(config) else transformers.AutoModelForCausalLM
    with torch.device("meta"):
        return auto.from_config(transformers.AutoConfig.for_model(PROJECTOR_ALIASES.get(kind, kind), **fields))


def assert_counts_are_the_meta_model(model_id: str) -> None:
    """A catalog entry's count equals the numel sum of the model transformers builds from its config.json on the
    meta device, and where axlint lays the names out (a dense model of a known family) they are the model's."""
    from axlint.architectures import Architecture
    from axlint.memory.params import named_parameters, names_checked

    config = catalog_lookup(model_id)["config"]
    real = {name: p.numel() for name, p in meta_model(config).named_parameters()}
    arch = Architecture.from_config(model_id, "catalog", config)
    assert arch.total_params == sum(real.values())
    if names_checked(arch):
        assert dict(named_parameters(arch)) == real


def assert_entry_is_the_meta_model(model_id: str, total: int, tower: int, tower_roots: tuple[str, ...]) -> None:
    """A catalog entry resolves in full, its total and tower + projector parameters are ``total`` / ``tower``, the
    model transformers builds from its config.json has that total, the Linears axlint lays out below
    ``tower_roots`` are the model's, and the decoder sits where axlint says (its last attention layer's q_proj)."""
    import torch

    arch = resolve_architecture(model_id)
    assert arch.source == "catalog" and arch.unsized_vision is None and arch.unsized_decoder is None
    assert (arch.total_params, arch.extra_parameters) == (total, tower)
    model = meta_model(catalog_lookup(model_id)["config"])
    assert sum(p.numel() for p in model.parameters()) == total
    modules = dict(model.named_modules())
    real = {p for p, m in modules.items() if isinstance(m, torch.nn.Linear) and p.startswith(tower_roots)}
    assert real == {lin.path for lin in arch.vision_linears()}
    last = max(i for i in range(arch.num_layers) if arch.has_attention(i))
    assert f"{arch.decoder_path}.layers.{last}.self_attn.q_proj" in modules


def peft_adapter_params(model: Any, targets: Any) -> int:
    """The LoRA parameters PEFT adds to ``model`` at rank 4 for ``target_modules=targets`` (its name and regex matching
    over every module path of the model)."""
    import peft

    wrapped = peft.get_peft_model(model, peft.LoraConfig(r=4, target_modules=targets))
    return sum(p.numel() for name, p in wrapped.named_parameters() if "lora_" in name)


def axlint_adapter_params(arch: Any, lora: Mapping[str, Any]) -> int:
    """The adapter parameters axlint counts for ``arch`` under the Axolotl LoRA keys ``lora`` (rank 4, one H100)."""
    run = {"base_model": "t", "adapter": "lora", "lora_r": 4, **lora}
    return trainable(arch, read_setup(facts(run, None, arch, parse_hardware("1xH100")), arch)).adapter
