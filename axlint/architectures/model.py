"""Architecture: a decoder-only model described by its HF ``config.json`` numbers.

Everything the memory estimator needs is derived from a handful of fields. Parameter counts are built from an
explicit list of the Linear modules of one decoder layer (``linears``), so that the total, the per-layer split,
the LoRA targets and the largest module all come from one source of truth.

The layer layout of each family (which Linears, their names and biases, the norms, the module paths) is one row
of ``families.FAMILIES``; this module turns a row and config.json's sizes into Linears and parameter counts.
DeepSeek's MLA attention (``q_proj`` or ``q_a_proj``/``q_b_proj``, ``kv_a_proj_with_mqa``, ``kv_a_layernorm``,
``kv_b_proj``, ``o_proj``) and routed + shared experts (the first ``first_k_dense_replace`` layers dense) are
written out here, as config.json sizes them.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any, Callable, Mapping

from axlint.architectures import vision
from axlint.architectures.families import LEARNED_ACTIVATIONS, Family, family_of, flag
from axlint.architectures.linear import Linear
from axlint.architectures.mixers import LAYER_PLANS, MIXERS, LayerPlan, MixerShape


_DENSE_PLAN, _MOE_PLAN = LayerPlan(mlp="dense"), LayerPlan(mlp="moe")
"""The plans of a family without ``Family.layer_plan``: attention and a dense or MoE MLP (immutable, shared)."""


@dataclass(frozen=True)
class Architecture:
    """A resolved model architecture: ``config`` holds the config.json fields (text config for multimodal)."""

    model_id: str
    source: str  # "local" | "hf-cache" | "catalog" | "model-config" | "online"
    model_type: str
    config: Mapping[str, Any]
    extra_parameters: int = 0  # parameters outside the decoder (vision / audio tower + projector), frozen by default
    published_parameters: int | None = None
    raw_config: Mapping[str, Any] = field(default_factory=dict, compare=False)
    num_labels: int | None = None  # None: the causal LM's lm_head (vocab); n: a classification ``score`` head h×n
    score_bias: bool = False
    memos: dict[str, Any] = field(default_factory=dict, init=False, repr=False, compare=False)
    """Values that other modules derive from this architecture alone (module paths, parameter names, per-kind
    tables; keyed by name, then by their other arguments), computed once: the catalog builds one Architecture per
    model and every estimate of a run reads them. ``dataclasses.replace`` starts a variant with none."""

    def with_score_head(self, num_labels: int, bias: bool = False) -> "Architecture":
        """The same decoder under a classification head (transformers 5 ``modeling_layers.py``):
        ``GenericForSequenceClassification.score = nn.Linear(h, num_labels, bias=False)``,
        ``GenericForTokenClassification.score = nn.Linear(h, num_labels, bias=token_classification_bias)`` (default
        True). There is no lm_head, so nothing is tied to the embedding. Built once per (num_labels, bias)."""
        memo = self.memos.setdefault("score_heads", {})
        key = (num_labels, bias)
        if key not in memo:
            memo[key] = replace(self, num_labels=num_labels, score_bias=bias)
        return memo[key]

    @property
    def head_name(self) -> str:
        """The output projection's module name: ``score`` under a classification head, else the family's lm_head."""
        return "score" if self.num_labels else self.layout.lm_head_name

    @property
    def output_size(self) -> int:
        """Outputs per token of the head: the vocabulary, or the classification labels."""
        return self.num_labels or self.vocab_size

    @classmethod
    def from_config(cls, model_id: str, source: str, config: Mapping[str, Any],
                    published_parameters: int | None = None) -> "Architecture":
        """Build from a full config.json; a multimodal model's decoder config (its ``text_config``, or the top-level
        fields of a flat Qwen2-VL config: ``vision.decoder_config``) becomes the decoder config, with the family's
        ``config_aliases`` read as its config class reads them, and its vision tower and projector
        (``vision.Vision``) the ``extra_parameters``."""
        model_type = str(config.get("model_type", "llama"))
        decoder = vision.decoder_config(config)
        family = family_of(str(decoder.get("model_type", model_type)))
        for published, stored in family.config_aliases if family else ():
            if decoder.get(published) is not None:
                decoder[stored] = decoder[published]
        if vision.is_multimodal(config) and config.get("tie_word_embeddings") is not None:
            # transformers 5.24 ties the output of a multimodal model by its own config's flag (modeling_utils
            # ``tie_weights`` reads ``self.config``), not by its text_config's
            decoder["tie_word_embeddings"] = config["tie_word_embeddings"]
        decoder.setdefault("tie_word_embeddings", config.get("tie_word_embeddings", family and family.tied_default))
        tower = vision.vision_of(config, int(decoder.get("hidden_size") or 0))
        extra = tower.params if tower else 0
        return cls(model_id, source, model_type, decoder, extra, published_parameters, dict(config))

    @cached_property
    def multimodal(self) -> bool:
        """A decoder with a vision or audio tower beside it (``vision.is_multimodal``)."""
        return vision.is_multimodal(self.raw_config)

    @cached_property
    def hears_audio(self) -> bool:
        """Whether the tower beside the decoder is an audio encoder (``vision.hears_audio``: Voxtral)."""
        return vision.hears_audio(self.raw_config)

    @cached_property
    def decoder_path(self) -> str:
        """Where the decoder's modules sit (transformers 5): the family's root (``model``: ``model.layers.N``,
        ``model.embed_tokens``), inside a multimodal model its projector row's (``model.language_model``). Read once
        (every module path starts with it)."""
        if not self.multimodal:
            return self.layout.root
        row = vision.projector_of(self.raw_config)
        return row.decoder_path if row else "model.language_model"

    @cached_property
    def family(self) -> Family | None:
        """The layout row of the decoder's model type (``families.FAMILIES``); None when axlint has none, or when
        config.json lacks a value the row requires (``Family.requires``)."""
        row = family_of(self.decoder_type)
        if row and any(self.config.get(k) != v for k, v in row.requires):
            return None
        return row

    @cached_property
    def layout(self) -> Family:
        """The family row, or the llama layout for a decoder without one (whose verdict is unknown:
        ``unsized_decoder``)."""
        return self.family or Family()

    @property
    def unsized_decoder(self) -> str | None:
        """The model type of a decoder whose layer layout axlint does not know; None otherwise."""
        return None if self.family is not None else self.decoder_type

    @property
    def build_config(self) -> dict[str, Any]:
        """The config a model is built from: the decoder config, inside its multimodal config when it has one
        (so that a decoder cut to fewer layers is built that way, vision tower and all)."""
        if self.multimodal:
            return {**self.raw_config, "text_config": dict(self.config)}
        return dict(self.config)

    @cached_property
    def vision_part(self) -> vision.Vision | None:
        """The laid-out tower (vision or audio) and projector; None without one, or for one axlint cannot size."""
        return vision.vision_of(self.raw_config, self.hidden_size) if self.multimodal else None

    def vision_linears(self) -> tuple[vision.VisionLinear, ...]:
        """Every ``nn.Linear`` of the tower (vision or audio) and projector, at its module path; none without a sized
        one."""
        return self.vision_part.linears() if self.vision_part else ()

    @cached_property
    def unsized_vision(self) -> str | None:
        """The model type of a tower (or "<type> audio tower", "<type> projector") that axlint cannot size; None
        otherwise."""
        return vision.unsized_part(self.raw_config)

    @property
    def remote_modeling(self) -> bool:
        """Whether config.json maps the model class to the repository's own modelling code (``auto_map``), which
        transformers runs instead of its own under ``trust_remote_code`` (its module names may differ)."""
        auto_map = self.raw_config.get("auto_map")
        return isinstance(auto_map, Mapping) and any(k in auto_map for k in ("AutoModelForCausalLM", "AutoModel"))

    # ---- typed accessors -------------------------------------------------------------------------------
    def _get(self, *names: str, default: Any = None) -> Any:
        """The first of ``names`` set in config.json, then in the family's nested ``config_sections``."""
        sections = [self.config] + [s for k in self.layout.config_sections
                                    if isinstance(s := self.config.get(k), Mapping)]
        for section in sections:
            for n in names:
                if section.get(n) is not None:
                    return section[n]
        return default

    @cached_property
    def decoder_type(self) -> str:
        return str(self.config.get("model_type", self.model_type))

    @cached_property
    def hidden_size(self) -> int:
        return int(self._get("hidden_size", "n_embd", "d_model"))

    @cached_property
    def num_layers(self) -> int:
        """The layer count; without one, the length of the per-layer type list (NemotronHConfig derives
        num_hidden_layers from layers_block_type, and save_pretrained writes the list alone)."""
        count = self._get("num_hidden_layers", "n_layer", "num_layers", "n_layers")
        if count is None:
            count = len(self._get("layers_block_type", "hybrid_override_pattern", default=()))
        return int(count)

    @cached_property
    def num_heads(self) -> int:
        return int(self._get("num_attention_heads", "n_head", "n_heads"))

    @cached_property
    def num_kv_heads(self) -> int:
        legacy = self.layout.legacy_multi_query
        if legacy and not self.config.get(legacy[0]):
            return 1 if self.config.get(legacy[1], True) else self.num_heads
        return int(self._get("num_key_value_heads", "num_kv_heads", "kv_n_heads", default=self.num_heads))

    @cached_property
    def head_dim(self) -> int:
        return int(self._get("head_dim", default=self.hidden_size // self.num_heads))

    @cached_property
    def intermediate_size(self) -> int:
        """The MLP width; for a list of per-layer widths (Gemma 3n's MatFormer layers), the widest
        (``layer_intermediate_size`` reads each layer's)."""
        value = self._get("intermediate_size", "ffn_hidden_size", "n_inner", default=4 * self.hidden_size)
        return int(max(value)) if isinstance(value, list) else int(value)

    @cached_property
    def vocab_size(self) -> int:
        return int(self._get("vocab_size"))

    @cached_property
    def tie_word_embeddings(self) -> bool:
        return self.num_labels is None and bool(self.config.get("tie_word_embeddings", False))

    @cached_property
    def max_position_embeddings(self) -> int | None:
        v = self._get("max_position_embeddings", "n_positions", "max_seq_len")
        return int(v) if v is not None else None

    @cached_property
    def num_experts(self) -> int:
        switch = self.layout.moe_switch
        if switch and not self.config.get(switch):
            return 0
        return int(self._get("num_local_experts", "num_experts", "n_routed_experts", "moe_num_experts", default=0))

    @cached_property
    def experts_per_token(self) -> int:
        if not self.num_experts:
            return 0
        return int(self._get("num_experts_per_tok", "num_experts_per_token", "moe_topk", "moe_top_k", "top_k_experts",
                             default=0))

    @cached_property
    def moe_intermediate_size(self) -> int:
        return int(self._get("moe_intermediate_size", default=self.intermediate_size))

    @property
    def shared_expert_intermediate_size(self) -> int:
        """Width of the shared-expert MLP: DeepSeek ``n_shared_experts × moe_I`` (Kimi Linear / Trinity:
        ``num_shared_experts``); Qwen2-MoE its own field (a family's ``shared_width_key``); a family's
        ``shared_experts_default`` experts when config.json has neither (Llama 4: one)."""
        own = self.layout.shared_width_key or "shared_expert_intermediate_size"
        if self.config.get(own):
            return int(self.config[own])
        shared = self._get("n_shared_experts", "num_shared_experts", default=self.layout.shared_experts_default)
        return int(shared or 0) * self.moe_intermediate_size

    @cached_property
    def dense_intermediate_size(self) -> int:
        """Width of a dense layer's MLP: intermediate_size, or the family's ``dense_width_key`` (Llama 4's
        intermediate_size_mlp) when config.json sets it; with the family's ``ff_dim_adjust_key`` on (LFM2,
        models/lfm2 ``Lfm2MLP``): int(2I/3), times block_ffn_dim_multiplier (1.0) and rounded up to a multiple of
        block_multiple_of (256) when the multiplier is set; the family's ``mlp_width_divisor`` divides
        intermediate_size (Qwen (1): half of it)."""
        key, adjust = self.layout.dense_width_key, self.layout.ff_dim_adjust_key
        if key and self.config.get(key) is not None:
            return int(self.config[key])
        if not adjust or not self.config.get(adjust, True):
            return self.intermediate_size // self.layout.mlp_width_divisor
        width = int(2 * self.intermediate_size / 3)
        multiplier = self.config.get("block_ffn_dim_multiplier", 1.0)
        if multiplier is None:
            return width
        multiple = int(self.config.get("block_multiple_of") or 256)
        return multiple * -(-int(multiplier * width) // multiple)

    @property
    def first_dense_layers(self) -> int:
        return int(self._get("first_k_dense_replace", "num_dense_layers", default=0)) if self.num_experts else 0

    @cached_property
    def is_moe(self) -> bool:
        return self.num_experts > 0

    @property
    def is_mla(self) -> bool:
        return self.config.get("kv_lora_rank") is not None

    @property
    def norm_type(self) -> str:
        """"rmsnorm" | "gemma_rmsnorm" (1 + w, fp32) | "layernorm" (weight + bias) | "layernorm_nobias" |
        "nonparametric"; a "layernorm" whose family's ``norm_bias`` is off is "layernorm_nobias"."""
        if self.layout.norm == "layernorm" and not flag(self.layout.norm_bias, self.config):
            return "layernorm_nobias"
        return self.layout.norm

    @property
    def norm_names(self) -> tuple[str, ...]:
        """The norms of one layer (Falcon's new decoder architecture: ``ln_attn`` and ``ln_mlp``)."""
        extra = self.layout.extra_norm_key
        if extra and self.config.get(extra):
            return self.layout.extra_norm_names
        return self.layout.norm_names

    @property
    def norms_per_layer(self) -> int:
        return len(self.norm_names)

    def layer_norm_names(self, layer: int) -> tuple[str, ...]:
        """The norms of one layer: ``norm_names``, in a MoE layer the family's ``moe_norm_names`` (Gemma 4), and with
        per-layer inputs the norm after them."""
        per_layer = (self.layout.per_layer_norm_name,) if self.per_layer_input_size else ()
        return self.norm_names + (self.layout.moe_norm_names if self.is_moe_layer(layer) else ()) + per_layer

    # ---- Gemma 4's kv-shared layers and per-layer inputs (Family.kv_shared_key, per_layer_input) -------------
    @cached_property
    def first_kv_shared_layer(self) -> int:
        """The first layer that reuses an earlier layer's keys and values: L - num_kv_shared_layers (Gemma4TextConfig
        ``kv_sharing_modes``: "reuse" from there on); L without shared layers."""
        key = self.layout.kv_shared_key
        return self.num_layers - (int(self.config.get(key) or 0) if key else 0)

    def kv_shared(self, layer: int) -> bool:
        """Whether ``layer`` reuses an earlier layer's keys and values (no k_proj, v_proj or k_norm of its own)."""
        return layer >= self.first_kv_shared_layer

    def double_wide(self, layer: int) -> bool:
        """Whether ``layer``'s dense MLP is twice intermediate_size wide (a kv-shared layer of a model whose
        ``double_wide_key`` is on)."""
        key = self.layout.double_wide_key
        return bool(key and self.config.get(key)) and self.kv_shared(layer)

    def layer_intermediate_size(self, layer: int) -> int:
        """The width of ``layer``'s dense MLP: ``dense_intermediate_size`` (the layer's entry of a per-layer list),
        doubled where ``double_wide``."""
        widths = self.config.get("intermediate_size")
        width = int(widths[layer]) if isinstance(widths, list) and 0 <= layer < len(widths) else \
            self.dense_intermediate_size
        return width * (2 if self.double_wide(layer) else 1)

    @cached_property
    def per_layer_input_size(self) -> int:
        """p, the width of a layer's per-layer input (``Family.per_layer_input``); 0 without per-layer inputs."""
        spec = self.layout.per_layer_input
        if spec is None:
            return 0
        key, default, _ = spec
        return int(default if self.config.get(key) is None else self.config[key])

    @cached_property
    def per_layer_input_linears(self) -> tuple[Linear, ...]:
        """The per-layer input gate (h -> p) and projection (p -> h) of every layer, bias-free, at the layer itself;
        none without per-layer inputs."""
        p = self.per_layer_input_size
        if not p:
            return ()
        gate, projection = self.layout.per_layer_input_names
        return Linear(gate, self.hidden_size, p), Linear(projection, p, self.hidden_size)

    @property
    def per_layer_table_params(self) -> int:
        """The packed per-layer embedding table, vocab_size_per_layer_input x L·p (an ``nn.Embedding``); 0 without
        per-layer inputs."""
        if not self.per_layer_input_size:
            return 0
        vocab = int(self.config.get("vocab_size_per_layer_input") or self.layout.per_layer_input[2])
        return vocab * self.num_layers * self.per_layer_input_size

    @property
    def per_layer_embedding_params(self) -> int:
        """The per-layer inputs outside the layers: the table (``per_layer_table_params``), the projection h x L·p
        and its norm p (Gemma4TextModel); 0 without them."""
        p = self.per_layer_input_size
        return self.per_layer_table_params + (self.hidden_size * self.num_layers * p + p if p else 0)

    @cached_property
    def residual_streams(self) -> int:
        """n, the residual streams the layers carry (Gemma 3n's AltUp, DeepSeek-V4's mHC: ``Family.streams_key``, else
        the row's ``streams_default``); 1 for the others."""
        key = self.layout.streams_key
        return int(self.config.get(key) or self.layout.streams_default) if key else 1

    @property
    def stream_projection_params(self) -> int:
        """The stream projections at the decoder's root: per ``Family.stream_projection_names`` n - 1 Linears h x h,
        and a ``Family.stream_head_name`` head (n x n·h + n + 1, built whatever n is)."""
        n, h = self.residual_streams, self.hidden_size
        head = n * n * h + n + 1 if self.layout.stream_head_name else 0
        return len(self.layout.stream_projection_names) * (n - 1) * h * h + head

    # ---- per-layer attention (Family.layer_type_attention) ----------------------------------------------
    def attention_type(self, layer: int) -> str | None:
        """"full" or "sliding" from config.json's ``layer_types`` for a family whose full-attention layers are
        sized apart (Gemma 4); None for the others (every layer the same)."""
        if not self.layout.layer_type_attention:
            return None
        types = self.config.get("layer_types")
        if isinstance(types, list) and len(types) == self.num_layers:
            return "full" if types[layer] == "full_attention" else "sliding"
        # Gemma4TextConfig's default: every sixth layer full, and the last one full whatever the pattern
        return "full" if (layer + 1) % 6 == 0 or layer == self.num_layers - 1 else "sliding"

    def _layer_overrides(self, layer: int) -> Mapping[str, Any] | None:
        """A config.json written by transformers 5.24 (``save_pretrained``) holds the full-attention layers' sizes as
        ``per_layer_config`` ({layer index: {head_dim, num_key_value_heads}}, configuration_utils.py's heterogeneous
        configs) instead of the published global_head_dim / num_global_key_value_heads; None without one."""
        table = self.config.get("per_layer_config")
        if table is None or not isinstance(table, Mapping):
            return None
        row = table.get(str(layer), table.get(layer))  # type: ignore[call-overload]
        return row if isinstance(row, Mapping) else {}

    def layer_head_dim(self, layer: int) -> int:
        overrides = self._layer_overrides(layer)
        if overrides is not None:
            return int(overrides.get("head_dim") or self.head_dim)
        if self.attention_type(layer) == "full":
            return int(self.config.get("global_head_dim") or 512)
        return self.head_dim

    def layer_kv_heads(self, layer: int) -> int:
        overrides = self._layer_overrides(layer)
        if overrides is not None:
            return int(overrides.get("num_key_value_heads") or self.num_kv_heads)
        if self.keys_are_values(layer):
            return int(self.config.get("num_global_key_value_heads") or self.num_kv_heads)
        return self.num_kv_heads

    def keys_are_values(self, layer: int) -> bool:
        """A full-attention layer of a model with ``attention_k_eq_v``: no v_proj, the keys serve as values."""
        return self.attention_type(layer) == "full" and bool(self.config.get("attention_k_eq_v"))

    def layer_q_dim(self, layer: int) -> int:
        return self.num_heads * self.layer_head_dim(layer) if self.attention_type(layer) else self.q_dim

    def layer_kv_dim(self, layer: int) -> int:
        return self.layer_kv_heads(layer) * self.layer_head_dim(layer) if self.attention_type(layer) else self.kv_dim

    def layer_kind(self, layer: int) -> tuple[LayerPlan, tuple[MixerShape, ...], tuple[Any, ...], int]:
        """What sets a layer's parameters and activations apart from another's: its plan (mixers, MoE / dense / no
        MLP), the shapes of its other mixers, and its attention's sizes (what ``attention_linears`` is built from:
        attention type, keys as values, query and key widths; the head size; kv-shared), empty without attention;
        and its dense MLP's width (``layer_intermediate_size``; 0 without an MLP)."""
        plan = self.layer_plan(layer)
        width = self.layer_intermediate_size(layer) if plan.mlp else 0
        if not self.has_attention(layer):
            return plan, self.mixer_shapes(layer), (), width
        if self._uniform_attention is not None:
            return plan, self.mixer_shapes(layer), self._uniform_attention, width
        attention = (self.attention_type(layer), self.keys_are_values(layer), self.layer_q_dim(layer),
                     self.layer_kv_dim(layer), self.layer_head_dim(layer), self.kv_shared(layer))
        return plan, self.mixer_shapes(layer), attention, width

    @cached_property
    def _uniform_attention(self) -> tuple[Any, ...] | None:
        """``layer_kind``'s attention sizes when every attention layer has the same (no ``layer_type_attention``,
        no ``per_layer_config``, no kv-shared layers); None otherwise."""
        if (self.layout.layer_type_attention or isinstance(self.config.get("per_layer_config"), Mapping)
                or self.first_kv_shared_layer < self.num_layers):
            return None
        return None, False, self.q_dim, self.kv_dim, self.head_dim

    @cached_property
    def layer_kinds(self) -> tuple[int, ...]:
        """Each layer's kind (``layer_kind``) as an index into ``kind_layers``: layers of one kind have the same
        modules after their layer index, the same parameters and the same activations, so a per-layer figure is
        computed once per kind."""
        if self._uniform_layers:
            return (0,) * self.num_layers
        first: dict[tuple, int] = {}
        return tuple(first.setdefault(self.layer_kind(i), len(first)) for i in range(self.num_layers))

    @property
    def _uniform_layers(self) -> bool:
        """Whether every layer is of one kind without comparing them one by one: one plan and one set of other
        mixers for all layers, one MLP width (no per-layer ``intermediate_size`` list, no double-wide layers) and one
        attention (``_uniform_attention``). Most decoders are; ``layer_kinds`` then skips the per-layer keys."""
        plans, shapes, n = self.layer_plans, self._mixer_shapes, self.num_layers
        key = self.layout.double_wide_key
        return (n > 0 and plans.count(plans[0]) == n and shapes.count(shapes[0]) == n
                and not isinstance(self.config.get("intermediate_size"), list) and not (key and self.config.get(key))
                and (not plans[0].has_attention or self._uniform_attention is not None))

    @cached_property
    def kind_layers(self) -> tuple[tuple[int, ...], ...]:
        """The layers of each kind (``layer_kinds``), kinds in the order of their first layer."""
        out: list[list[int]] = []
        for layer, kind in enumerate(self.layer_kinds):
            if kind == len(out):
                out.append([])
            out[kind].append(layer)
        return tuple(map(tuple, out))

    @property
    def query_factor(self) -> int:
        """The query projection's width over the query's: 2 where it also makes the output gate
        (``Family.attention_gate`` without a ``gate_linear``), else 1."""
        return 2 if self.layout.attention_gate and not self.layout.gate_linear else 1

    def _gate_linears(self, q: int) -> tuple[Linear, ...]:
        """The attention's own output-gate Linear (``Family.gate_linear``: h -> the query width q, no bias)."""
        name = self.layout.gate_linear
        return (Linear(name, self.hidden_size, q),) if name else ()

    @property
    def gated_mlp(self) -> bool:
        return self.layout.mlp != "plain"

    @property
    def qk_norm(self) -> str | None:
        """None, "head" (norm over head_dim, Qwen3 / Gemma-3) or "full" (over all heads, OLMo-2); None where the
        family's ``qk_norm_when`` key is off in config.json (GLM-4-MoE's ``use_qk_norm``)."""
        return self.layout.qk_norm if flag(self.layout.qk_norm_when, self.config) else None

    @property
    def activation_param_names(self) -> tuple[str, ...]:
        """Scalar parameters of a dense MLP's activation (``families.LEARNED_ACTIVATIONS``: xIELU's alpha_p and
        alpha_n); none for a MoE model, whose expert activations axlint does not lay out."""
        return () if self.is_moe else LEARNED_ACTIVATIONS.get(str(self.config.get("hidden_act")), ())

    @property
    def q_dim(self) -> int:
        """Width of the query projection output (MLA: heads × (nope + rope) head dims)."""
        if self.is_mla:
            return self.num_heads * (int(self.config["qk_nope_head_dim"]) + int(self.config["qk_rope_head_dim"]))
        return self.num_heads * self.head_dim

    @property
    def kv_dim(self) -> int:
        """Width of K (and V) as stored by attention: MLA materialises full per-head K during training."""
        return self.q_dim if self.is_mla else self.num_kv_heads * self.head_dim

    # ---- parameter structure ---------------------------------------------------------------------------
    def layer_plan(self, layer: int) -> LayerPlan:
        """The token mixers and the MLP of ``layer`` (``layer_plans``; past the last layer, the attention + MLP layer
        of a family without a plan)."""
        return self.layer_plans[layer] if 0 <= layer < self.num_layers else self._default_plan(layer)

    @cached_property
    def layer_plans(self) -> tuple[LayerPlan, ...]:
        """Every layer's plan, computed once (the estimate asks per layer, many times): the family's
        ``mixers.LAYER_PLANS`` reader of config.json, else attention + an MLP, MoE where ``_moe_layer`` says."""
        reader = self.layout.layer_plan
        if reader:
            return LAYER_PLANS[reader](self.config, self.num_layers)
        return tuple(self._default_plan(i) for i in range(self.num_layers))

    def _default_plan(self, layer: int) -> LayerPlan:
        return _MOE_PLAN if self._moe_layer(layer) else _DENSE_PLAN

    def has_attention(self, layer: int) -> bool:
        """Whether ``layer`` runs the family's softmax attention."""
        return self.layer_plan(layer).has_attention

    def mixer_shapes(self, layer: int) -> tuple[MixerShape, ...]:
        """The mixers of ``layer`` other than the family's attention (``mixers.MIXERS``), in module order."""
        if 0 <= layer < self.num_layers:
            return self._mixer_shapes[layer]
        return tuple(MIXERS[m](self.config, layer) for m in self.layer_plan(layer).other_mixers)

    @cached_property
    def _mixer_shapes(self) -> tuple[tuple[MixerShape, ...], ...]:
        return tuple(tuple(MIXERS[m](self.config, i) for m in plan.other_mixers) if plan.other_mixers else ()
                     for i, plan in enumerate(self.layer_plans))

    @cached_property
    def mixer_kinds(self) -> tuple[str, ...]:
        """The ``mixers.MIXERS`` kinds that some layer runs, sorted."""
        return tuple(sorted({m for plan in self.layer_plans for m in plan.other_mixers}))

    def is_moe_layer(self, layer: int) -> bool:
        """Whether ``layer``'s MLP is a MoE block (``layer_plan``)."""
        return self.layer_plan(layer).mlp == "moe"

    def _moe_layer(self, layer: int) -> bool:
        """DeepSeek: ``layer >= first_k_dense_replace`` (Trinity: ``num_dense_layers``) ``and layer % moe_layer_freq ==
        0``; Qwen-MoE: ``layer not in mlp_only_layers and (layer + 1) % decoder_sparse_step == 0``; a
        ``mlp_layer_types`` list ("dense" / "sparse" per layer, GLM-4.7-Flash) decides alone, and so does a
        ``moe_layers`` list of MoE layer indices (Llama 4; without it every ``interleave_moe_layer_step``-th layer,
        counting from 1)."""
        if not self.is_moe:
            return False
        kinds = self.config.get("mlp_layer_types")
        if isinstance(kinds, list) and len(kinds) == self.num_layers:
            return kinds[layer] == "sparse"
        if isinstance(self.config.get("moe_layers"), list):
            return layer in self.config["moe_layers"]
        if self.config.get("interleave_moe_layer_step"):
            return (layer + 1) % int(self.config["interleave_moe_layer_step"]) == 0
        if layer < self.first_dense_layers or layer in (self.config.get("mlp_only_layers") or []):
            return False
        if self.config.get("moe_layer_freq"):
            return layer % int(self.config["moe_layer_freq"]) == 0
        return (layer + 1) % int(self.config.get("decoder_sparse_step") or 1) == 0

    def attention_linears(self, layer: int = 0) -> tuple[Linear, ...]:
        """The Linears of the family's attention in ``layer``; none in a layer without it (``layer_plan``)."""
        if not self.has_attention(layer):
            return ()
        if not self.layout.layer_type_attention and not self.kv_shared(layer):
            return self._attention_linears
        return self._typed_attention_linears(self.keys_are_values(layer), self.layer_q_dim(layer),
                                             self.layer_kv_dim(layer), self.kv_shared(layer))

    def _typed_attention_linears(self, k_eq_v: bool, q: int, kv: int, shared: bool) -> tuple[Linear, ...]:
        """q, k, v (none under ``k_eq_v``) and o; a kv-shared layer has no k or v projection."""
        h, names = self.hidden_size, self.layout.attention_names
        qkv_bias, o_bias = flag(self.layout.qkv_bias, self.config), flag(self.layout.o_bias, self.config)
        out = [Linear(names[0], h, q * self.query_factor, qkv_bias)]
        if not shared:
            out.append(Linear(names[1], h, kv, qkv_bias))
        if not shared and not k_eq_v:
            out.append(Linear(names[2], h, kv, qkv_bias))
        return tuple(out + [Linear(names[3], q, h, o_bias)]) + self._gate_linears(q)

    def mlp_linears(self, layer: int) -> tuple[Linear, ...]:
        """The MLP's Linears (the experts' and router's in a MoE layer); none in a layer without an MLP."""
        mlp = self.layer_plan(layer).mlp
        if mlp is None:
            return ()
        return self._mlp_variants[mlp == "moe", self.layer_intermediate_size(layer)]

    def mixer_linears(self, layer: int) -> tuple[Linear, ...]:
        """The Linears of the layer's other mixers (``mixer_shapes``), named relative to their mixer module."""
        return tuple(lin for shape in self.mixer_shapes(layer) for lin in shape.linears)

    @cached_property
    def _attention_linears(self) -> tuple[Linear, ...]:
        h, q, kv = self.hidden_size, self.q_dim, self.kv_dim
        if self.is_mla:
            c = self.config
            rank, rope, v = int(c["kv_lora_rank"]), int(c["qk_rope_head_dim"]), int(c["v_head_dim"])
            nope = int(c["qk_nope_head_dim"])
            # the row's qkv_bias is the bias of the two down-projections (q_a_proj, kv_a_proj_with_mqa), o_bias
            # o_proj's; q_proj, q_b_proj and kv_b_proj have none (models/deepseek_v3/modeling_deepseek_v3.py)
            a_bias, o_bias = flag(self.layout.qkv_bias, c), flag(self.layout.o_bias, c)
            q_rank = int(c.get("q_lora_rank") or 0)
            qs = ((Linear("q_a_proj", h, q_rank, a_bias), Linear("q_b_proj", q_rank, q)) if q_rank
                  else (Linear("q_proj", h, q),))
            return qs + (Linear("kv_a_proj_with_mqa", h, rank + rope, a_bias),
                         Linear("kv_b_proj", rank, self.num_heads * (nope + v)),
                         Linear("o_proj", self.num_heads * v, h, o_bias))
        f = self.layout
        qkv_bias, o_bias = flag(f.qkv_bias, self.config), flag(f.o_bias, self.config)
        if f.attention == "fused_qkv":
            return (Linear(f.attention_names[0], h, q + 2 * kv, qkv_bias), Linear(f.attention_names[1], q, h, o_bias))
        names = f.attention_names
        return (Linear(names[0], h, q * self.query_factor, qkv_bias), Linear(names[1], h, kv, qkv_bias),
                Linear(names[2], h, kv, qkv_bias), Linear(names[3], q, h, o_bias)) + self._gate_linears(q)

    @cached_property
    def _mlp_variants(self) -> dict[tuple[bool, int], tuple[Linear, ...]]:
        """The MLP Linears of a (MoE?, dense MLP width) layer, built once for each pair the layers have."""
        pairs = {(self.layer_plan(i).mlp == "moe", self.layer_intermediate_size(i)) for i in range(self.num_layers)}
        return {(moe, width): self._mlp(moe, width) if self.is_moe or not moe else () for moe, width in pairs}

    def _dense_mlp(self, i: int, prefix: str = "", bias: bool = False) -> tuple[Linear, ...]:
        """The family's dense MLP (``mlp``, ``mlp_names``) of width ``i``, its names under ``prefix``."""
        h, f, names = self.hidden_size, self.layout, [prefix + n for n in self.layout.mlp_names]
        if f.mlp == "plain":
            return (Linear(names[0], h, i, bias), Linear(names[1], i, h, bias))
        if f.mlp == "fused_gated":
            return (Linear(names[0], h, 2 * i, bias), Linear(names[1], i, h, bias))
        return (Linear(names[0], h, i, bias), Linear(names[1], h, i, bias), Linear(names[2], i, h, bias))

    def _mlp(self, moe: bool, width: int) -> tuple[Linear, ...]:
        """The Linears of a dense MLP ``width`` wide, or of a MoE block (beside a dense MLP of that width where the
        family keeps one)."""
        h, f = self.hidden_size, self.layout
        if not moe:
            return self._dense_mlp(width, bias=flag(f.mlp_bias, self.config))
        e, i = self.num_experts, self.moe_intermediate_size
        names = f.expert_names
        bias = f.expert_bias
        beside = self._mlp(False, width) if f.moe_beside_mlp else ()
        latent = int(self.config.get(f.moe_latent_key) or 0) if f.moe_latent_key else 0
        outer = latent or h  # the experts' input and output width
        out = [*beside, Linear(f.router_name, h, e, f.router_bias, router=not f.router_linear)]
        if latent:  # models/nemotron_h NemotronHMoE: fc1_latent_proj / fc2_latent_proj, biased by mlp_bias
            latent_bias = flag(f.mlp_bias, self.config)
            out += [Linear("fc1_latent_proj", h, latent, latent_bias),
                    Linear("fc2_latent_proj", latent, h, latent_bias)]
        if f.expert_mlp == "plain":
            out += [Linear(names[0], outer, i, bias, count=e, expert=True),
                    Linear(names[1], i, outer, bias, count=e, expert=True)]
        else:
            out += [Linear(names[0], outer, i, bias, count=e, expert=True),
                    Linear(names[1], outer, i, bias, count=e, expert=True),
                    Linear(names[2], i, outer, bias, count=e, expert=True)]
        si = self.shared_expert_intermediate_size
        if si and f.expert_mlp == "plain":
            out += self._dense_mlp(si, f"{f.shared_expert_name}.", flag(f.mlp_bias, self.config))
        elif si:
            shared = f.shared_expert_name
            out += [Linear(f"{shared}.gate_proj", h, si), Linear(f"{shared}.up_proj", h, si),
                    Linear(f"{shared}.down_proj", si, h)]
            if self.config.get("shared_expert_intermediate_size"):
                out.append(Linear("shared_expert_gate", h, 1))
        return tuple(out)

    def linears(self, layer: int) -> tuple[Linear, ...]:
        return (self.attention_linears(layer) + self.mixer_linears(layer) + self.mlp_linears(layer)
                + self.per_layer_input_linears)

    @property
    def norm_params(self) -> int:
        """Parameters of one norm: RMSNorm h, LayerNorm 2h (weight + bias), non-parametric 0."""
        return {"nonparametric": 0, "layernorm": 2 * self.hidden_size}.get(self.norm_type, self.hidden_size)

    @property
    def tensors_per_norm(self) -> int:
        """Weight and bias for a LayerNorm, a weight otherwise, none for a non-parametric norm."""
        return {"nonparametric": 0, "layernorm": 2}.get(self.norm_type, 1)

    def small_params_per_layer(self, layer: int = 0) -> tuple[int, ...]:
        """Sizes of the individual small tensors of one layer (norm weights, qk-norm, MLA kv norm, attention sinks,
        a learned activation's scalars, a router's scales, the other mixers' ``others``), for ZeRO-3 persistence;
        biases are inside ``Linear``."""
        sizes = [self.hidden_size] * (len(self.layer_norm_names(layer)) * self.tensors_per_norm)
        sizes += [n for shape in self.mixer_shapes(layer) for _, n in shape.others + shape.layer_others]
        if self.layer_plan(layer).mlp == "dense":
            sizes += [1] * len(self.activation_param_names)
        if self.layout.router_scales and self.is_moe_layer(layer):
            sizes += [self.hidden_size, self.num_experts]
        if self.layout.expert_score_bias and self.is_moe_layer(layer):
            sizes.append(self.num_experts)
        if not self.has_attention(layer):
            return tuple(sizes)
        if self.qk_norm == "head":  # a kv-shared layer has a q_norm only
            sizes += [self.layer_head_dim(layer)] * (1 if self.kv_shared(layer) else 2)
        elif self.qk_norm == "full":
            sizes += [self.q_dim, self.kv_dim]
        if self.is_mla:
            sizes.append(int(self.config["kv_lora_rank"]))  # kv_a_layernorm
            if self.config.get("q_lora_rank"):
                sizes.append(int(self.config["q_lora_rank"]))  # q_a_layernorm
        if self.layout.attention_sinks:
            sizes.append(self.num_heads)
        return tuple(sizes)

    def layer_params(self, layer: int) -> int:
        return sum(lin.params for lin in self.linears(layer)) + sum(self.small_params_per_layer(layer))

    # ---- multi-token-prediction layers (Family.mtp) ---------------------------------------------------------
    @cached_property
    def mtp_layers(self) -> int:
        """How many multi-token-prediction layers the family's code builds beside the decoder (config.json's
        ``Family.mtp.count_key``); 0 without."""
        mtp = self.layout.mtp
        return int(self.config.get(mtp.count_key) or 0) if mtp else 0

    @cached_property
    def mtp_linears(self) -> tuple[Linear, ...]:
        """The Linears of one multi-token-prediction layer: layer 0's, then the 2h -> h input projection."""
        mtp = self.layout.mtp
        if not mtp:
            return ()
        return self.linears(0) + (Linear(mtp.proj_name, 2 * self.hidden_size, self.hidden_size),)

    @property
    def mtp_params(self) -> int:
        """Parameters of the multi-token-prediction layers: each its Linears (``mtp_linears``), layer 0's small
        tensors and ``Family.mtp.norm_names`` more norms."""
        mtp = self.layout.mtp
        if not mtp or not self.mtp_layers:
            return 0
        norms = len(mtp.norm_names) * self.norm_params
        return self.mtp_layers * (sum(lin.params for lin in self.mtp_linears) + sum(self.small_params_per_layer(0))
                                  + norms)

    # ---- totals ----------------------------------------------------------------------------------------
    @property
    def embedding_params(self) -> int:
        """The input embedding: vocab_size rows, and the family's ``embed_extra_rows`` (Mllama's 8)."""
        return (self.vocab_size + self.layout.embed_extra_rows) * self.hidden_size

    @property
    def position_embedding_params(self) -> int:
        """A learned absolute position embedding (GPT-2's ``wpe``): max_position_embeddings x h; 0 without one."""
        if not self.layout.position_embed_name:
            return 0
        return int(self.max_position_embeddings or 0) * self.hidden_size

    @property
    def lm_head_params(self) -> int:
        """Untied output projection; Phi-2's and GPT-J's have a bias, which stays the output's own when the weight is
        tied to the embedding (then only the bias counts here). Under a classification head: the ``score`` Linear."""
        if self.num_labels:
            return self.num_labels * self.hidden_size + (self.num_labels if self.score_bias else 0)
        bias = self.vocab_size if flag(self.layout.lm_head_bias, self.config) else 0
        return bias if self.tie_word_embeddings else self.vocab_size * self.hidden_size + bias

    @property
    def final_norm_params(self) -> int:
        return self.norm_params

    @cached_property
    def layers_params(self) -> tuple[int, ...]:
        """Each layer's parameters, counted once per kind (``layer_kinds``)."""
        per_kind = [self.layer_params(layers[0]) for layers in self.kind_layers]
        return tuple(per_kind[kind] for kind in self.layer_kinds)

    def _sum_over_layers(self, per_layer: Callable[[int], int]) -> int:
        """Σ over the layers of an integer that depends on the layer's kind only (``layer_kinds``)."""
        return sum(per_layer(layers[0]) * len(layers) for layers in self.kind_layers)

    @cached_property
    def decoder_params(self) -> int:
        """Language model parameters: embedding (and learned positions, per-layer embeddings, stream projections) +
        lm_head + layers + final norm, and the multi-token-prediction layers the family's code builds beside them
        (``mtp_params``)."""
        return (self.embedding_params + self.position_embedding_params + self.per_layer_embedding_params
                + self.stream_projection_params + self.lm_head_params + sum(self.layers_params)
                + self.final_norm_params + self.mtp_params)

    @property
    def total_params(self) -> int:
        return self.decoder_params + self.extra_parameters

    @cached_property
    def active_params(self) -> int:
        """Parameters touched per token (MoE: top-k experts only)."""
        if not self.is_moe:
            return self.total_params
        inactive = self._sum_over_layers(lambda i: sum(lin.params * (lin.count - self.experts_per_token) // lin.count
                                                       for lin in self.mlp_linears(i) if lin.expert))
        return self.total_params - inactive

    @cached_property
    def largest_module_params(self) -> int:
        """Largest leaf module (DeepSpeed's ``largest_layer_params``): the embedding (or the per-layer embedding
        table), lm_head, one Linear, or a layer's routed experts (transformers >= 5 stores them as one fused
        ``experts`` module)."""
        layers = {0, self.num_layers - 1}
        linear = max(lin.d_in * lin.d_out for i in layers for lin in self.linears(i) if not lin.expert)
        experts = max(sum(lin.params for lin in self.mlp_linears(i) if lin.expert) for i in layers)
        return max(self.embedding_params, self.per_layer_table_params, self.lm_head_params, linear, experts)

    @cached_property
    def quantizable_params(self) -> int:
        """Weights of the decoder layers' ``nn.Linear`` modules, what bitsandbytes replaces when a model loads in 4 or
        8 bits (transformers 5.24 ``integrations/bitsandbytes.py`` ``replace_with_bnb_linear``: ``nn.Linear`` and
        Conv1D only; biases stay). Routed experts are 3-D parameters in transformers 5, not ``nn.Linear``:
        ``expert_params``. The multi-token-prediction layers' Linears (``mtp_linears``) are ``nn.Linear`` too. The
        per-layer input projection outside the layers (Gemma 4's small models, h x L·p) is left in the load dtype, as
        the prequantized layout reads the layers' modules only (an overestimate of h·L·p·1.5 bytes at 4 bits).
        Layers whose Linears are a subclass (``Family.linear_subclass``) are not converted
        (``unconverted_linear_params``)."""
        return 0 if self.layout.linear_subclass else self._layer_linear_weights

    @property
    def kbit_layer_norm(self) -> str | None:
        """The norm kind (``Family.norm``) whose output the layers' Linears read under a bitsandbytes 4/8-bit load;
        None where that load converts none of them (their class is a subclass, ``Family.linear_subclass``: Falcon's,
        whose ``quantizable_params`` is 0), so that no bitsandbytes layer passes the norm's dtype on
        (``facts.fp32_source``). Read from the family, not from the layers' sizes, since every check asks it."""
        return None if self.layout.linear_subclass else self.layout.norm

    @property
    def autocast_dtype_facts(self) -> tuple[str, object, str | None]:
        """What ``facts.fp32_source`` and the checks built on it read of the model, in their argument order: its
        type, its MLP activation (config.json ``hidden_act``) and ``kbit_layer_norm``."""
        return self.model_type, self.config.get("hidden_act"), self.kbit_layer_norm

    @cached_property
    def unconverted_linear_params(self) -> int:
        """Weights of the decoder layers' Linears that a bitsandbytes load leaves in the load dtype because their class
        is a subclass of ``nn.Linear`` (``Family.linear_subclass``: all of Falcon's); 0 for other models."""
        return self._layer_linear_weights if self.layout.linear_subclass else 0

    @cached_property
    def _layer_linear_weights(self) -> int:
        """Weights of the decoder layers' and multi-token-prediction layers' ``nn.Linear`` modules, experts aside."""
        mtp = self.mtp_layers * sum(lin.count * lin.d_in * lin.d_out for lin in self.mtp_linears if not lin.expert)
        return mtp + self._sum_over_layers(lambda i: sum(lin.count * lin.d_in * lin.d_out for lin in self.linears(i)
                                                         if not lin.expert))

    @cached_property
    def tower_linear_params(self) -> int:
        """Weights of the vision or audio tower's and projector's ``nn.Linear`` modules (``vision_linears``), which a
        bitsandbytes 4/8-bit load replaces as it does the decoder's: transformers 5.24 ``replace_with_bnb_linear``
        spares only ``get_keys_to_not_convert`` (tied and output embeddings, the last module) and the class's
        ``_keep_in_fp32_modules``, of which a tower's Linear is only the last module of a tied model
        (``vision.Vision.last_linear``), and it replaces exact ``nn.Linear`` modules only, not a pooling head's
        ``nn.MultiheadAttention`` output projection (``VisionLinear.subclass``); Axolotl names no skip modules for
        a tower (``loaders/model.py``, ``_set_quantization_config``). Checked against transformers' quantizer in
        tests/test_vision.py."""
        spared = self.vision_part.last_linear() if self.vision_part and self.tie_word_embeddings else None
        return sum(lin.d_in * lin.d_out for lin in self.vision_linears() if lin.path != spared and not lin.subclass)

    @cached_property
    def expert_params(self) -> int:
        """Weights of the routed experts, which a 4/8-bit load leaves in the load dtype unless Axolotl's
        ``quantize_moe_experts`` stores them quantized."""
        return self._sum_over_layers(lambda i: sum(lin.count * lin.d_in * lin.d_out for lin in self.linears(i)
                                                   if lin.expert))

