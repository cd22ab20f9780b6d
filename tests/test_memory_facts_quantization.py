"""Which decoders a bitsandbytes 4/8-bit load leaves unquantized (``memory.facts.BNB_SKIPPED_LINEARS``), read from
the models transformers builds: transformers 5.5 and later convert modules of type ``nn.Linear`` exactly, so a family
whose layers use a subclass keeps them in 16 bits. One catalog model per decoder type, built on the meta device."""
from __future__ import annotations

import copy

import pytest

from axlint.architectures import Architecture
from axlint.architectures.resolve import load_catalog
from axlint.memory.facts import BNB_SKIPPED_LINEARS
from tests.catalog_models import meta_model

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")


def _one_per_decoder() -> dict[str, dict]:
    """A config.json per decoder model type of the catalog, the repository's own code left out (``auto_map``) and
    flat Qwen2-VL configs (which ``meta_model`` does not build) aside."""
    picked: dict[str, dict] = {}
    for entry in load_catalog():
        config = copy.deepcopy(dict(entry["config"]))
        if config.get("auto_map") or config.get("model_type") in ("qwen2_vl", "qwen2_5_vl"):
            continue
        decoder = Architecture.from_config(entry["id"], "catalog", config).decoder_type
        picked.setdefault(decoder, config)
    return picked


def _subclassed_linears(config: dict) -> set[str]:
    model = meta_model(config)
    layers = {name for name, module in model.named_modules() if isinstance(module, torch.nn.ModuleList)}
    return {type(m).__name__ for name, m in model.named_modules()
            if isinstance(m, torch.nn.Linear) and type(m) is not torch.nn.Linear
            and any(name.startswith(f"{root}.") for root in layers) and "router" not in type(m).__name__.lower()}


CONFIGS = _one_per_decoder()


@pytest.mark.parametrize("decoder", sorted(CONFIGS))
def test_the_decoders_bitsandbytes_leaves_unconverted_are_the_listed_ones(decoder: str) -> None:
    found = _subclassed_linears(CONFIGS[decoder])
    expected = {BNB_SKIPPED_LINEARS[decoder]} if decoder in BNB_SKIPPED_LINEARS else set()
    assert found == expected, decoder
