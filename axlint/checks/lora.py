"""Checks of the LoRA keys (pack `lora`): LoRA keys without an adapter, embedding copies in
`lora_modules_to_save`, and the embedding modules Axolotl requires when new tokens are added."""
from __future__ import annotations

from typing import Iterator

from axlint.checks.locate import ax_hit
from axlint.facts import DEFAULT_EMBEDDING_LAYERS, EMBEDDING_LAYERS, embedding_layers
from axlint.rule import Hit, Rule, register_check
from axlint.run import TrainingRun

LORA_KEYS = ("lora_r", "lora_alpha", "lora_target_modules", "lora_target_linear", "lora_modules_to_save")
EMBEDDING_MODULES = frozenset({"embed_tokens", "lm_head", "wte", "embed_in", "embed_out", "word_embeddings",
                               "tok_embeddings", "output"})


@register_check("ax_lora_keys_without_adapter", args=("keys",))
def check_lora_keys_without_adapter(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    """LoRA keys in a config without `adapter`: Axolotl runs a full fine-tune and ignores them."""
    if run.axolotl is None or run.facts.adapter.value:
        return
    written = [k for k in LORA_KEYS if run.raw.get(k) not in (None, False, [], "")]
    if written:
        yield ax_hit(run, (written[0],), keys=", ".join(f"`{k}`" for k in written))


@register_check("ax_modules_to_save_embeddings", args=("module", "size"))
def check_modules_to_save_embeddings(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    """`lora_modules_to_save` with the embedding or LM head: full trainable copies with optimizer state."""
    modules = run.config.get("lora_modules_to_save")
    if run.axolotl is None or not run.facts.adapter.value or not isinstance(modules, list):
        return
    if run.raw.get("tokens"):
        return  # new tokens: Axolotl requires the embedding modules here (AX132)
    arch = run.arch
    params = arch.vocab_size * arch.hidden_size if arch is not None else None
    size = (f"{params / 1e6:.0f}M parameters, ≈{params * 16 / 2**30:.1f} GiB of fp32 weights, gradients and "
            f"AdamW state" if params else "vocab × hidden parameters at ≈16 bytes each with AdamW")
    for index, name in enumerate(modules):
        if isinstance(name, str) and name.rsplit(".", 1)[-1] in EMBEDDING_MODULES:
            yield ax_hit(run, ("lora_modules_to_save", index), part="value", module=name, size=size)


@register_check("ax_new_tokens_embedding_modules", args=("required", "missing"))
def check_new_tokens_embedding_modules(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    """New `tokens` with an adapter: Axolotl refuses to load the model unless `lora_modules_to_save` names the
    model's input and output embedding modules, exactly (Axolotl 0.18.0 `loaders/utils.py`,
    `check_model_config`)."""
    if run.axolotl is None or not run.raw.get("adapter") or not run.raw.get("tokens"):
        return
    modules = run.raw.get("lora_modules_to_save")
    # Axolotl tests `name in lora_modules_to_save`: list membership, or a substring of a string value
    listed = modules if isinstance(modules, str) else [m for m in modules if isinstance(m, str)] \
        if isinstance(modules, list) else []
    required = embedding_layers(getattr(run.arch, "model_type", None))
    missing = [m for m in required if m not in listed]
    if not missing:
        return
    if run.arch is None and any(m in listed and m not in DEFAULT_EMBEDDING_LAYERS
                                for names in EMBEDDING_LAYERS.values() for m in names):
        return  # an unknown model whose author named another family's modules: the model type decides
    where = ("lora_modules_to_save",) if "lora_modules_to_save" in run.raw else ("tokens",)
    yield ax_hit(run, where, required=", ".join(f"`{m}`" for m in required),
                 missing=", ".join(f"`{m}`" for m in missing))
