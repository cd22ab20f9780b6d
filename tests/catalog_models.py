"""Shared by the catalog-coverage tests (tests/test_coverage_*.py): the model transformers builds from a catalog
entry's config.json on the meta device, and the check that an entry is that model. (The coverage verdict of a corpus
config is ``benchmarks.memory.coverage.classify``, imported from there.)"""
from __future__ import annotations

from typing import Any, Mapping


def meta_model(config: Mapping[str, Any]) -> Any:
    """The model transformers 5.24 builds from a config.json dict on the meta device: a multimodal model (one with a
    ``text_config``) through ``AutoModelForMultimodalLM``, which maps the image and the audio models alike, else the
    causal LM. A published ``model_type`` transformers spells otherwise is read as its config class
    (``PROJECTOR_ALIASES``: LFM2-VL's "lfm2-vl"); ``auto_map`` is left out, so the repository's own code never runs."""
    import torch
    import transformers

    from axlint.architectures.vision import PROJECTOR_ALIASES

    kind = config["model_type"]
    fields = {k: v for k, v in config.items() if k not in ("model_type", "auto_map")}
    auto = transformers.AutoModelForMultimodalLM if "text_config" in config else transformers.AutoModelForCausalLM
    with torch.device("meta"):
        return auto.from_config(transformers.AutoConfig.for_model(PROJECTOR_ALIASES.get(kind, kind), **fields))


def assert_entry_is_the_meta_model(model_id: str, total: int, tower: int, tower_roots: tuple[str, ...]) -> None:
    """A catalog entry resolves in full, its total and tower + projector parameters are ``total`` / ``tower``, the
    model transformers builds from its config.json has that total, the Linears axlint lays out below
    ``tower_roots`` are the model's, and the decoder sits where axlint says."""
    import torch

    from axlint.architectures import catalog_lookup, resolve_architecture

    arch = resolve_architecture(model_id)
    assert arch.source == "catalog" and arch.unsized_vision is None and arch.unsized_decoder is None
    assert (arch.total_params, arch.extra_parameters) == (total, tower)
    model = meta_model(catalog_lookup(model_id)["config"])
    assert sum(p.numel() for p in model.parameters()) == total
    modules = dict(model.named_modules())
    real = {p for p, m in modules.items() if isinstance(m, torch.nn.Linear) and p.startswith(tower_roots)}
    assert real == {lin.path for lin in arch.vision_linears()}
    assert f"{arch.decoder_path}.layers.{arch.num_layers - 1}.self_attn.q_proj" in modules
