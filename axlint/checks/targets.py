"""What a run trains, checked against the model's real module and parameter names: LoRA targets, modules to save,
rank and alpha keys and unfrozen parameter patterns that match nothing (MEM011) or do not compile (AX242, AX246),
and the targets PEFT rewrites on a MoE model (AX225, AX226)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Iterable, Iterator

from axlint.checks.locate import ax_hit
from axlint.lax import truthy
from axlint.rule import Hit, Rule, register_check
from axlint.run import TrainingRun

if TYPE_CHECKING:
    from axlint.architectures import Architecture
    from axlint.facts import Lora
    from axlint.memory.peft_targets import PeftTargets


def _where(run: TrainingRun, key: str, entry: str | int) -> Hit:
    """A hit on the list item that holds `entry` (on the key's value when it is a single string)."""
    doc = run.axolotl
    assert doc is not None
    node = doc.node((key,))
    index = next((i for i, item in enumerate(node.items) if item.value == entry), None) if node is not None else None
    path = (key, index) if index is not None else (key,)
    return Hit(doc, doc.span(path, "value"), {})


def model_names_known(run: TrainingRun) -> bool:
    """Whether axlint knows the names of the run's modules: a YAML config, a model of a family it lays out, and not
    one whose repository's own modelling code runs (``trust_remote_code`` with config.json's ``auto_map``), which
    names its modules itself, unless the family's row was read from that code (``Family.remote_code``)."""
    arch = run.arch
    if run.axolotl is None or arch is None or arch.family is None:
        return False
    return not (run.config.get("trust_remote_code") and arch.remote_modeling and not arch.layout.remote_code)


@register_check("mem_targets_match_nothing", args=("key", "entry", "model", "known", "effect"))
def targets_match_nothing(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    """Each `lora_target_modules` name that matches no module of the model (PEFT's list matching: equal, or a
    `.`-suffix of a module path; a string beside `lora_target_linear` is one, ``facts.Lora.target_modules``), a
    regular expression that matches no module path, each `peft_layers_to_transform` index no module path has (PEFT's
    reading, ``params.peft_layer_indexes``), each `lora_modules_to_save` name no path ends with, and each
    `unfrozen_parameters` pattern that matches no parameter name (Axolotl's `LayerNamePattern`; only for model types
    whose parameter names axlint writes out exactly). Nothing is checked
    when the run trusts remote code and config.json maps the model to the repository's own modelling code: that
    code, not transformers', names the modules (the Axolotl examples for LnL-AI/dbrx-base-converted-v2 target
    q_proj / k_proj / v_proj, where transformers' DBRX has one Wqkv), unless the family's row was read from that
    code (``Family.remote_code``)."""
    from axlint.memory.params import (
        names_checked,
        peft_layer_indexes,
        regex_matches_nothing,
        unmatched_layers_patterns,
        unmatched_lora_targets,
        unmatched_modules_to_save,
        unmatched_pattern_keys,
        unmatched_unfrozen,
    )

    arch, facts = run.arch, run.facts
    if not model_names_known(run):
        return
    layout = arch.layout
    layer, first = (f"{arch.decoder_path}.{layout.layer_path.format(layer=n)}" for n in ("N", 0))
    model = arch.model_id
    targets = facts.lora.target_modules
    if facts.adapter.value in ("lora", "qlora") and isinstance(targets, tuple) and targets:
        missing = unmatched_lora_targets(arch, targets)
        everything = len(missing) == len(targets) and not facts.lora.target_linear
        effect = ("no target is left: PEFT stops the launch with \"Target modules ... not found in the base model\""
                  if everything else "PEFT adapts the other targets and ignores this one without a word")
        if isinstance(run.raw.get("lora_target_modules"), str):  # a string beside lora_target_linear: one name
            effect = ("beside `lora_target_linear: true` Axolotl hands PEFT the string as one more module name, not "
                      "as a regular expression, so it selects nothing and every Linear layer gets an adapter; to "
                      "adapt only what the expression matches, set `lora_target_linear: false`")
        names = sorted({lin.name for layers in arch.kind_layers for lin in arch.linears(layers[0])})
        yield from _unmatched(run, "lora_target_modules", missing, model, effect, ", ".join(names))
    names_known = names_checked(arch)
    if (facts.adapter.value in ("lora", "qlora") and isinstance(targets, str) and not facts.lora.target_linear
            and names_known and regex_matches_nothing(arch, targets)):
        hit = _where(run, "lora_target_modules", targets)
        hit.args = {"key": "lora_target_modules", "entry": targets, "model": model,
                    "known": f"{first}.{layout.attention_module}.{layout.attention_names[0]}, "
                             f"{first}.{layout.mlp_module}.{layout.mlp_names[-1]}, ...",
                    "effect": "a string is a regular expression that PEFT matches against every full module path, and "
                              "no path matches it: PEFT stops the launch with \"Target modules ... not found in the "
                              "base model\""}
        yield hit
    indexes = facts.lora.layers_to_transform
    present = peft_layer_indexes(arch, facts.lora.layers_pattern) if indexes and names_known else None
    if facts.adapter.value in ("lora", "qlora") and present:
        missing = [i for i in indexes if i not in present]
        effect = ("no layer is left: PEFT stops the launch with \"Target modules ... not found in the base model\""
                  if len(missing) == len(indexes)
                  else "PEFT adapts the listed layers that exist and ignores this index without a word")
        yield from _unmatched(run, "peft_layers_to_transform", missing, model, effect,
                              f"indexes {min(present)} to {max(present)}")
    names = facts.lora.layers_pattern
    if facts.adapter.value in ("lora", "qlora") and indexes and names and names_known and isinstance(targets, tuple):
        dead = unmatched_layers_patterns(arch, facts.lora)
        effect = ("PEFT reads no layer index off any targeted module, adapts nothing and stops the launch with "
                  "\"Target modules ... not found in the base model\"" if len(dead) == len(names)
                  else "PEFT reads the layer indexes through the other names and ignores this one without a word")
        yield from _unmatched(run, "peft_layers_pattern", dead, model, effect, f"their index in `{layer}`")
    saved = facts.lora.modules_to_save
    if facts.adapter.value in ("lora", "qlora") and saved and names_known:
        invalid = {entry for setting, _, entry, _ in facts.lora.regex_refusals() if setting == "lora_modules_to_save"}
        yield from _unmatched(run, "lora_modules_to_save",
                              [e for e in unmatched_modules_to_save(arch, saved) if e not in invalid], model,
                              "PEFT copies only modules whose path ends with the name, finds none and says nothing: "
                              "the run trains without the copy the config asks for",
                              f"{layout.embed_name}, {layout.lm_head_name}, {layout.final_norm_name}, ...")
    if (facts.adapter.value in ("lora", "qlora") and names_known and not arch.num_experts
            and not facts.lora.target_parameters and not truthy(run.raw.get("lora_model_dir"))):
        for key, pairs, default in (("lora_rank_pattern", facts.lora.rank_pattern, "lora_r"),
                                    ("lora_alpha_pattern", facts.lora.alpha_pattern, "lora_alpha")):
            for entry in unmatched_pattern_keys(arch, facts.lora, tuple(k for k, _ in pairs)):
                hit = Hit(run.axolotl, run.axolotl.span((key, entry), "key"), {})
                hit.args = {"key": key, "entry": entry, "model": model,
                            "known": f"{_lora_path_example(arch, facts.lora)}, ... among the modules the LoRA "
                                     "adapts",
                            "effect": f"PEFT matches the key against the end of each adapted module's path, after a "
                                      f"dot, so this one sets nothing and the modules keep `{default}` without a "
                                      "word"}
                yield hit
    patterns = facts.unfrozen_parameters
    if patterns and not facts.adapter.value and names_known:
        missing = unmatched_unfrozen(arch, patterns)
        effect = ("nothing is left to train: the optimizer is built on an empty parameter list and torch raises "
                  "\"optimizer got an empty parameter list\"" if len(missing) == len(patterns)
                  else "the other patterns train, this one unfreezes nothing")
        yield from _unmatched(run, "unfrozen_parameters", missing, model, effect,
                              f"{arch.decoder_path}.{layout.embed_name}.weight, "
                              f"{layer}.{layout.attention_module}.{layout.attention_names[0]}.weight, ..., "
                              f"{layout.lm_head_name}.weight")


def _lora_path_example(arch: "Architecture", lora: "Lora") -> str:
    """The first module path PEFT adapts (``params.lora_paths``), for MEM011 on rank and alpha keys."""
    from axlint.memory.params import lora_paths

    return f"`{lora_paths(arch, lora)[0]}`"


def _unmatched(run: TrainingRun, key: str, entries: Iterable[str | int], model: str, effect: str,
               known: str) -> Iterator[Hit]:
    """MEM011's hit on each of `entries` of the list `key` that matches nothing in `model`."""
    for entry in entries:
        hit = _where(run, key, entry)
        hit.args = {"key": key, "entry": entry, "model": model, "known": known, "effect": effect}
        yield hit


def _converted(run: TrainingRun) -> "tuple[PeftTargets, tuple[str, ...]] | None":
    """What PEFT makes of the run's LoRA targets (``memory.setup.peft_targets``) and the explicit list, for a LoRA
    run on a model whose architecture axlint knows (``peft_targets`` leaves the targets as written where PEFT does);
    None otherwise."""
    from axlint.memory.setup import peft_targets

    arch, facts = run.arch, run.facts
    if run.axolotl is None or arch is None or arch.family is None or facts.adapter.value not in ("lora", "qlora"):
        return None
    written = facts.lora.target_modules
    return peft_targets(facts, arch), written if isinstance(written, tuple) else ()


@register_check("lora_half_fused_pair", args=("entry", "model", "error"))
def half_fused_pair(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    """One half of a fused gate/up pair in `lora_target_modules` of a model whose routed experts PEFT converts
    (``memory.peft_targets``): PEFT raises before any training, on the first such entry."""
    found = _converted(run)
    if found is None or not found[0].half_pair:
        return
    targets, written = found
    halves = [t for t, p in zip(targets.moved, targets.moved_to) if p == "gate_up_proj" and t in written]
    entry = halves[0] if halves else str(run.facts.lora.target_modules)  # a regex: on the string itself
    hit = _where(run, "lora_target_modules", entry)
    hit.args = {"entry": entry, "model": run.arch.model_id, "error": targets.half_pair}
    yield hit


@register_check("lora_targets_moved_to_experts", args=("key", "entry", "model_type", "parameter", "lost"))
def targets_moved_to_experts(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    """A target name that PEFT turns into LoRA on the routed experts (``memory.peft_targets``) while the model also
    has ``nn.Linear`` modules of that name (a dense layer's MLP, a shared expert): those get no adapter. On the
    entry of `lora_target_modules` (on a regular expression, which PEFT resolves to such names), or on
    `lora_target_linear` when Axolotl's list of Linear names brought it."""
    from axlint.memory.params import module_paths

    found = _converted(run)
    if found is None or found[0].half_pair:
        return
    targets, written = found
    arch = run.arch
    paths = module_paths(arch) if targets.moved else ()
    for entry, parameter in zip(targets.moved, targets.moved_to):
        if parameter == "gate.weight":
            continue  # the router: its weight is adapted either way
        lost = [p for p in paths if p == entry or p.endswith("." + entry)]
        if not lost:
            continue
        where = f"{lost[0]}" + (f" and {len(lost) - 1} more" if len(lost) > 1 else "")
        regex = run.facts.lora.target_modules if isinstance(run.facts.lora.target_modules, str) else None
        if entry in written or (regex and not run.facts.lora.target_linear):
            hit = _where(run, "lora_target_modules", entry if entry in written else regex)
            key = "lora_target_modules"
        else:
            hit = Hit(run.axolotl, run.axolotl.span(("lora_target_linear",), "key"), {})
            key = "lora_target_linear"
        hit.args = {"key": key, "entry": entry, "model_type": arch.model_type, "parameter": parameter, "lost": where}
        yield hit


_REFUSED = {
    "layer": "a whole layer",
    "container": "a module that holds other modules, not a Linear",
    "norm": "a norm, not a Linear",
    "experts": "the routed experts' module (3-D parameters, which `lora_target_parameters` reaches)",
}
"""What ``params.refused_lora_targets`` found, in words."""
_ADVICE = {
    "norm": "Name Linear layers only (PEFT wraps Linear, embedding and convolution layers); a norm trains through "
            "`lora_modules_to_save`",
    "experts": "Adapt the experts through `lora_target_parameters` (`experts.gate_up_proj`, `experts.down_proj`)",
}
"""What to write instead, where it does not depend on the module."""
_NOT_SUPPORTED = "ValueError: Target module ... is not supported"
_NO_TARGETS = "ValueError: No `target_modules` passed but also no `target_parameters` found"
_NONE_LEFT = "ValueError: No modules were targeted for adaptation"


_WRAPPING = "PEFT stops the launch while it wraps the model"
_FORWARD = ("the model loads and PEFT wraps the router like a Linear, then the run stops at its first forward pass, "
            "where the LoRA layer reads the router's tuple as a tensor")


@register_check("lora_setting_on_parameters", args=("key", "targets", "refused", "error", "advice"))
def setting_on_parameters(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    """`lora_fan_in_fan_out` or `peft_use_dora` beside LoRA on parameters: `lora_target_parameters`, or module targets
    PEFT turns into parameter targets on this model (``memory.peft_targets``, known only for a model axlint lays
    out). PEFT 0.19.1 wraps each targeted parameter in a ``ParamWrapper``, whose ``__init__`` refuses both
    (tuners/lora/layer.py), fan_in_fan_out first. PEFT wraps the modules before the parameters, and on the first
    ``nn.Linear`` it sets the config's fan_in_fan_out back to false with a warning (tuners/lora/layer.py
    ``dispatch_default``): fan_in_fan_out is refused only when no module target is left. On the value of each;
    not when `lora_model_dir` loads a saved adapter."""
    facts = run.facts
    lora = facts.lora
    if (run.axolotl is None or facts.adapter.value not in ("lora", "qlora") or not (lora.dora or lora.fan_in_fan_out)
            or truthy(run.raw.get("lora_model_dir"))):
        return
    if lora.target_parameters:
        modules = bool(lora.target_modules)
        targets = f"`lora_target_parameters` ({', '.join(lora.target_parameters)})"
        keep = "drop `lora_target_parameters` to adapt the Linear layers only"
    else:
        found = _converted(run)
        if found is None or not found[0].moved:
            return
        converted = found[0]
        modules = bool(converted.modules)
        names = ", ".join(f"`{t}`" for t in converted.moved)
        targets = (f"the LoRA targets {names}, which PEFT turns into LoRA on this {run.arch.model_type} model's routed "
                   f"experts' weights ({', '.join(dict.fromkeys(converted.moved_to))})")
        keep = f"leave {names} out of the targets to adapt the other Linear layers only"
    settings = [(key, refused, error) for key, on, refused, error in (
        ("lora_fan_in_fan_out", lora.fan_in_fan_out and not modules and not lora.target_linear,
         "weights stored (in, out)", "fan_in_fan_out"),
        ("peft_use_dora", lora.dora, "DoRA", "use_dora=True")) if on]
    for key, refused, error in settings:
        yield ax_hit(run, (key,), part="value", key=key, targets=targets, refused=refused, error=error,
                     advice=f"Drop `{key}`, or {keep}")


@register_check("trainable_tokens_peft_refuses", args=("name", "reached", "error", "advice"))
def trainable_tokens_peft_refuses(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    """A layer of `peft_trainable_token_indices` that PEFT refuses to wrap (``params.token_layer_refusal``): on the
    name in a mapping, on the key for a list. Not where `lora_model_dir` loads a saved adapter, nor where the
    repository's own code builds the model."""
    from axlint.memory.params import TOKEN_LAYER_ADDS, token_layer_refusal

    facts = run.facts
    if (not model_names_known(run) or facts.adapter.value not in ("lora", "qlora")
            or not facts.lora.trainable_tokens or truthy(run.raw.get("lora_model_dir"))):
        return
    resized = any(run.raw.get(key) for key in TOKEN_LAYER_ADDS)
    refusal = token_layer_refusal(run.arch, facts.lora, resized)
    if refusal is None:
        return
    name, reached, error = refusal
    layer = f"`{name}`" if name else "the input embedding (a list)"
    if error.startswith("IndexError"):
        advice = "Keep the indices below the layer's rows (new tokens go in `tokens`, which resizes the embeddings)"
    elif error.startswith("TypeError"):
        advice = f"Leave {layer} out of the LoRA targets, or drop it from `peft_trainable_token_indices`"
    else:
        layout = run.arch.layout
        advice = (f"Name the embedding (`{layout.embed_name}`) or the output projection (`{layout.lm_head_name}`), "
                  "or write the indices as a list for the input embedding")
    path = ("peft_trainable_token_indices", name) if name else ("peft_trainable_token_indices",)
    yield ax_hit(run, path, name=layer, reached=reached, error=error, advice=advice)


@register_check("lora_targets_peft_refuses", args=("problem", "stage", "error", "advice"))
def targets_peft_refuses(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    """The first refusal PEFT meets while it wraps the model, in its order: the settings read before any module
    (``_settings_refusal``), the modules the targets reach (``_module_refusal``), then the modules to save
    (``_saved_refusal``). PEFT stops on the first, so one finding at most."""
    for stage in (_settings_refusal, _module_refusal, _saved_refusal):
        hit = stage(run)
        if hit is not None:
            yield hit
            return


def _settings_refusal(run: TrainingRun) -> Hit | None:
    """What PEFT refuses whatever the model: a `lora_target_modules` string that is not a regular expression
    (``facts.Lora.regex_error``), on its value; a string beside `peft_layers_to_transform`, on the indexes; a
    `peft_layers_pattern` name that is no regular expression where PEFT reads it (``params.reaches_layers_pattern``),
    on the name; and a LoRA with no target at all and no `lora_model_dir` to load one from (Axolotl 0.18.0
    ``_build_peft_lora_config`` passes `lora_target_modules or []`), on `adapter`."""
    from axlint.facts import layer_index_expression
    from axlint.memory.params import reaches_layers_pattern

    arch, facts, lora = run.arch, run.facts, run.facts.lora
    if facts.adapter.value not in ("lora", "qlora"):
        return None
    if (error := lora.regex_error) is not None:
        hit = Hit(run.axolotl, run.axolotl.span(("lora_target_modules",), "value"), {})
        hit.args = {"problem": f"the `lora_target_modules` string `{lora.target_modules}` is not a valid Python "
                               "regular expression",
                    "stage": "PEFT, which matches a string against every module path with `re.fullmatch`, stops the "
                             "launch while it wraps the model",
                    "error": f"re.error: {error}",
                    "advice": "Fix the expression, or write the targets as a list of module names"}
        return hit
    if isinstance(lora.target_modules, str) and run.raw.get("peft_layers_to_transform") is not None:
        hit = Hit(run.axolotl, run.axolotl.span(("peft_layers_to_transform",), "value"), {})
        hit.args = {"problem": "`peft_layers_to_transform` beside a `lora_target_modules` string (a regular "
                               "expression)",
                    "stage": "PEFT refuses the pair when Axolotl builds the LoRA config, once the model is loaded",
                    "error": "ValueError: `layers_to_transform` cannot be used when `target_modules` is a str",
                    "advice": "Write the targets as a list of module names (e.g. `[q_proj, v_proj]`) to keep the "
                              "layer selection, or name the layers inside the expression and drop "
                              "`peft_layers_to_transform`"}
        return hit
    bad_pattern = lora.layers_pattern_error if lora.layers_to_transform else None
    if bad_pattern is not None and (bad_pattern[0] == 0 or model_names_known(run)
                                    and reaches_layers_pattern(arch, lora, bad_pattern[0])):
        position, error = bad_pattern
        name = lora.layers_pattern[position]
        hit = _where(run, "peft_layers_pattern", name)
        hit.args = {"problem": f"the `peft_layers_pattern` name `{name}` does not make a valid Python regular "
                               f"expression where PEFT puts it (`{layer_index_expression(name)}`)",
                    "stage": "PEFT, which reads each targeted module's layer index with it, stops the launch while it "
                             "wraps the model",
                    "error": f"re.error: {error}",
                    "advice": "Name the module list that holds the layers (`layers` for most decoders), or drop "
                              "`peft_layers_pattern` to let PEFT take the last `.<name>.<index>.` of each path"}
        return hit
    if (not lora.target_modules and not lora.target_linear and not lora.target_parameters
            and not truthy(run.raw.get("lora_model_dir"))):
        hit = Hit(run.axolotl, run.axolotl.span(("adapter",), "value"), {})
        hit.args = {"problem": f"`adapter: {facts.adapter.value}` with no target: none of `lora_target_modules`, "
                               "`lora_target_linear` or `lora_target_parameters` is set, and Axolotl hands PEFT an "
                               "empty list, so PEFT's per-model defaults do not apply",
                    "stage": _WRAPPING, "error": _NO_TARGETS,
                    "advice": "Set `lora_target_linear: true` to adapt every Linear layer, or list the layers in "
                              "`lora_target_modules` (e.g. `[q_proj, k_proj, v_proj, o_proj]`)"}
        return hit
    return None


def _module_refusal(run: TrainingRun) -> Hit | None:
    """A `lora_target_modules` entry, or a name `lora_target_linear` adds (Axolotl's ``find_all_linear_names``,
    ``params.linear_names``), that reaches a module PEFT cannot wrap or, on a Mamba-based model, one it refuses
    (``params.refused_lora_targets``), on the entry, or on `lora_target_linear` for the names it brought; and
    `lora_target_linear` on a model without an ``nn.Linear`` when nothing else is targeted. Not judged where the
    repository's own code builds the model."""
    from axlint.memory.params import linear_names, linear_path_named, linears_inside, refused_lora_targets

    arch, facts = run.arch, run.facts
    if not model_names_known(run) or facts.adapter.value not in ("lora", "qlora"):
        return None
    written = facts.lora.target_modules if isinstance(facts.lora.target_modules, tuple) else ()
    added = tuple(n for n in linear_names(arch) if n not in written) if facts.lora.target_linear else ()
    for target, path, what in refused_lora_targets(arch, (*written, *added)):
        stage = _WRAPPING
        if what == "mamba":
            error = (f"ValueError: [PEFT:PeftType.LORA] Module '{path.rsplit('.', 1)[-1]}' is incompatible with "
                     f"Mamba-based models (model_type='{arch.model_type}')")
            reached = f"`{path}`, which PEFT does not adapt in a {arch.model_type} model"
            advice = "Leave the Mamba mixers' `out_proj` and `conv1d` out of the targets"
        elif what == "router":
            stage, error = _FORWARD, "AttributeError: 'tuple' object has no attribute 'dtype'"
            reached = (f"`{path}`, this {arch.model_type} model's router: an `nn.Linear` subclass whose forward "
                       "returns a tuple")
            advice = f"Leave `{target}` out of the targets"
        else:
            error, reached, advice = _NOT_SUPPORTED, f"`{path}`, {_REFUSED[what]}", _ADVICE.get(what, "")
            if not advice:  # a layer or a container: the Linears inside it
                inside = linears_inside(arch, path)
                advice = "Name the Linear layers inside it" + (f" (`{'`, `'.join(inside)}`)" if inside else "")
        if target in written:
            hit = _where(run, "lora_target_modules", target)
            hit.args = {"problem": f"`lora_target_modules` entry `{target}` reaches {reached}", "stage": stage,
                        "error": error, "advice": advice}
        else:
            source = linear_path_named(arch, target)
            how = f": {reached}" if source == path else f" (from `{source}`), and `{target}` also reaches {reached}"
            hit = Hit(run.axolotl, run.axolotl.span(("lora_target_linear",), "value"), {})
            hit.args = {"problem": f"`lora_target_linear` hands PEFT the last name of every Linear, `{target}` among "
                                   f"them{how}",
                        "stage": stage, "error": error,
                        "advice": "Write the targets in `lora_target_modules` instead (a list of names, or a regular "
                                  "expression over the module paths) and set `lora_target_linear: false`"}
        return hit  # PEFT stops on the first
    if facts.lora.target_linear and not written and not facts.lora.target_parameters and not linear_names(arch):
        hit = Hit(run.axolotl, run.axolotl.span(("lora_target_linear",), "value"), {})
        hit.args = {"problem": f"`lora_target_linear` finds no `nn.Linear` in this {arch.model_type} model (its "
                               "layers are transformers' `Conv1D`) and nothing else is targeted",
                    "stage": _WRAPPING, "error": _NO_TARGETS,
                    "advice": "List the layers in `lora_target_modules` (e.g. `"
                              f"{', '.join(arch.layout.attention_names + arch.layout.mlp_names[:1])}`) and set "
                              "`lora_target_linear: false`"}
        return hit
    return None


def _saved_refusal(run: TrainingRun) -> Hit | None:
    """`lora_modules_to_save` that holds every module the targets reach (``params.saved_over_targets``), on that key;
    then an entry that ends the path of a Linear the LoRA adapts without being its whole name
    (``params.adapted_but_saved``), on the entry. Not judged where the repository's own code builds the model."""
    from axlint.memory.params import adapted_but_saved, saved_over_targets

    arch, facts = run.arch, run.facts
    if not model_names_known(run) or facts.adapter.value not in ("lora", "qlora"):
        return None
    saved = facts.lora.modules_to_save
    if not isinstance(run.raw.get("lora_modules_to_save"), list) or not saved or facts.lora.target_parameters:
        return None
    if saved_over_targets(arch, facts.lora.target_modules, facts.lora.target_linear, saved):
        hit = Hit(run.axolotl, run.axolotl.span(("lora_modules_to_save",), "value"), {})
        hit.args = {"problem": f"`lora_modules_to_save` ({', '.join(saved)}) holds every module the LoRA targets "
                               "reach, and PEFT copies a module it saves whole instead of adapting it",
                    "stage": _WRAPPING, "error": _NONE_LEFT,
                    "advice": "Keep the modules to train whole (embed_tokens, lm_head) out of the LoRA targets, or "
                              "the targets out of `lora_modules_to_save`"}
        return hit
    found = adapted_but_saved(arch, run.memory.estimate.setup) if run.memory is not None else None
    if found is not None:
        entry, path = found
        hit = _where(run, "lora_modules_to_save", entry)
        hit.args = {"problem": f"`lora_modules_to_save` entry `{entry}` ends the name of `{path}` without being all "
                               "of it, so PEFT still adapts that Linear",
                    "stage": "then it copies every module whose path ends with a name to save, reaches the LoRA layer "
                             "and stops the launch",
                    "error": f"TypeError: modules_to_save cannot be applied to modules of type "
                             f"<class '{_LORA_LAYER.get(facts.quantization.value, _LORA_LAYER[None])}'>",
                    "advice": f"Write whole module names in `lora_modules_to_save` (`{path.rsplit('.', 1)[-1]}` trains "
                              "that module whole instead of adapting it), or drop the entry"}
        return hit
    return None


_LORA_LAYER = {None: "peft.tuners.lora.layer.Linear", "nf4": "peft.tuners.lora.bnb.Linear4bit",
               "int8": "peft.tuners.lora.bnb.Linear8bitLt"}
"""The class of PEFT 0.19.1's LoRA layer on a Linear, by the base model's quantization (tuners/lora/layer.py,
tuners/lora/bnb.py)."""


@register_check("lora_pattern_peft_refuses", args=("what", "entry", "expression", "error", "advice"))
def pattern_peft_refuses(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    """Each `lora_modules_to_save` entry and each `lora_rank_pattern` / `lora_alpha_pattern` key that makes no regular
    expression where PEFT puts it (``facts.Lora.regex_refusals``), on the entry or key: an entry of the modules to
    save is matched against every module path, whatever the model; a pattern key is read for each adapted module
    that no key before it matches, so one that comes first always is, and a later one when the model's module
    paths are known and one the targets reach is left over (``params.reaches_pattern_key``). Not when
    `lora_model_dir` loads a saved adapter, whose own config PEFT reads instead."""
    from axlint.facts import pattern_key_expression, saved_expression
    from axlint.memory.params import reaches_pattern_key

    facts = run.facts
    lora = facts.lora
    if (run.axolotl is None or facts.adapter.value not in ("lora", "qlora") or truthy(run.raw.get("lora_model_dir"))
            or not (lora.target_modules or lora.target_linear or lora.target_parameters)):
        return
    for setting, position, entry, error in lora.regex_refusals():
        if setting == "lora_modules_to_save":
            hit = _where(run, setting, entry)
            what, expression = "`lora_modules_to_save` entry", saved_expression(entry)
            advice = ("Write the module's name as the model has it (`embed_tokens`, `lm_head`); a bracket or "
                      "parenthesis in it must be closed or escaped with a backslash")
        else:
            keys = tuple(k for k, _ in (lora.rank_pattern if setting == "lora_rank_pattern" else lora.alpha_pattern))
            if position and not (model_names_known(run) and reaches_pattern_key(run.arch, lora, keys, position)):
                continue
            hit = Hit(run.axolotl, run.axolotl.span((setting, entry), "key"), {})
            what, expression = f"`{setting}` key", pattern_key_expression(entry)
            advice = ("Write an expression that matches the end of the module paths it means (`q_proj`, "
                      "`layers\\.0\\.self_attn\\.q_proj`), with every bracket and parenthesis closed or escaped")
        hit.args = {"what": what, "entry": entry, "expression": expression, "error": error, "advice": advice}
        yield hit


@register_check("lora_target_saved_whole", args=("entry", "modules", "size"))
def target_saved_whole(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    """A `lora_modules_to_save` entry that takes Linears the LoRA targets reach out of the LoRA
    (``params.saved_targets``): PEFT trains a full copy of each instead of an adapter. On the entry; not when the
    entries take every target (AX239: PEFT then stops)."""
    from axlint.memory.params import saved_over_targets, saved_targets

    facts = run.facts
    if (not model_names_known(run) or facts.adapter.value not in ("lora", "qlora") or run.memory is None
            or not isinstance(run.raw.get("lora_modules_to_save"), list) or facts.lora.target_parameters):
        return
    arch, saved = run.arch, facts.lora.modules_to_save
    if not saved or saved_over_targets(arch, facts.lora.target_modules, facts.lora.target_linear, saved):
        return
    for entry, modules, params in saved_targets(arch, run.memory.estimate.setup):
        hit = _where(run, "lora_modules_to_save", entry)
        size = (f"{params / 1e9:.1f} B" if params >= 1e9 else f"{params / 1e6:.0f} M" if params >= 1e6
                else f"{params:,}")
        hit.args = {"entry": entry, "modules": f"{modules} Linear layer{'s' if modules != 1 else ''}",
                    "size": f"{size} parameters"}
        yield hit


@register_check("ax_unfrozen_pattern_invalid", args=("entry", "error"))
def unfrozen_pattern_invalid(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    """Each `unfrozen_parameters` pattern that Axolotl's ``LayerNamePattern`` cannot compile
    (``params.unfrozen_pattern_error``), at its list item; any model."""
    from axlint.memory.params import unfrozen_pattern_error

    if run.axolotl is None:
        return
    for entry in run.facts.unfrozen_parameters:
        error = unfrozen_pattern_error(entry)
        if error is not None:
            hit = _where(run, "unfrozen_parameters", entry)
            hit.args = {"entry": entry, "error": error}
            yield hit
