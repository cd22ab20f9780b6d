"""Checkpoints that are stored quantized: what their config.json ``quantization_config`` makes of the weights on the
GPU once Axolotl has loaded them, and the bytes of one quantized weight tensor.

How each method loads (transformers 5.24 ``quantizers/auto.py`` maps ``quant_method`` to a quantizer; Axolotl 0.18.0
adds its own loaders for what transformers does not know):

- ``modelopt`` with ``quant_algo: NVFP4`` (NVIDIA ModelOpt): transformers has no such quantizer and loads a bf16
  skeleton (``AutoHfQuantizer.supports_quant_method`` skips unknown methods). Axolotl's KernelsPlugin adapters
  (integrations/kernels/adapters/{qwen3_moe,gemma4,nvfp4_moe}.py, active with ``use_scattermoe`` / ``use_sonicmoe``;
  Gemma 4's with ``use_scattermoe`` only) register WeightConverters that fuse the routed experts' per-expert NVFP4
  tensors into one packed ``NVFP4Tensor`` per expert parameter (``nvfp4_moe_loading.fuse_nvfp4_experts``: uint8
  qdata [E, N, K/2], an E4M3 scale per 16 values [E, N, K/16], an fp32 per-tensor scale per expert) and dequantize
  every other NVFP4 Linear to bf16 (``nvfp4_weight_converter.nonrouted_dequant_converters``). Without an adapter the
  experts stay random bf16 placeholders: not a run axlint can size.
- ``fp8`` (transformers' FineGrainedFP8, e.g. MiniMax-M2): ``replace_with_fp8_linear`` (integrations/finegrained_fp8.py)
  swaps every plain ``nn.Linear`` for ``FP8Linear`` and every ``*.experts`` module for ``FP8Experts``: an
  ``float8_e4m3fn`` weight (1 byte) and an fp32 ``weight_scale_inv`` per ``weight_block_size`` block (128x128),
  except the modules ``modules_to_not_convert`` names (``should_convert_module``) and, when config.json lists none,
  the output embedding (``get_keys_to_not_convert``). ``dequantize`` loads it in bf16 instead, and so does
  ``validate_environment`` on a GPU below compute capability 8.9.
- ``fp8`` with ``quant_algo: MIXED_PRECISION`` and ``moe_quant_algo: NVFP4`` (nvidia/DeepSeek-V4-Flash-NVFP4:
  blockwise-FP8 non-expert Linears, NVFP4 group-16 routed experts): transformers' FineGrainedFP8 has no NVFP4 expert
  path; the KernelsPlugin's DeepSeek-V4 adapter (``use_dsv4_kernels`` with ``use_scattermoe``) swaps in its own
  quantizer (integrations/kernels/libs/scattermoe_lora/nvfp4_fp8_quantizer.py), which loads the experts as packed
  ``NVFP4Tensor`` and, with ``dsv4_fp8_nonexpert_mode: float8tensor`` (the default), wraps every plain FP8Linear's
  weight as a torchao ``Float8Tensor`` (1 byte + its 128x128 block scale cast to fp32), the grouped ``o_a_proj``
  dequantized to bf16; ``bf16`` dequantizes them all. The Linears DeepSeek-V4 lists in ``_keep_in_fp32_modules``
  (its compressors' and indexers' kv / gate projections and the indexer's weights_proj: bf16 in the checkpoint) and
  config.json's ``modules_to_not_convert`` stay in the load dtype, the output embedding too unless that list is
  given. Without the adapter, or for another model: not sized.
- ``bitnet`` (Falcon-E, BitNet b1.58): ``linear_class: autobitlinear`` Linears hold a full-precision weight that is
  ternarized in forward (integrations/bitnet.py ``AutoBitLinear``), so the weights take the load dtype; the packed
  ``bitlinear`` class is inference-only (``BitNetHfQuantizer.is_trainable`` is False).
- ``bitsandbytes``: a bnb 4/8-bit checkpoint, which Axolotl loads with a ``BitsAndBytesConfig`` of the same settings
  (0.18.0 loaders/model.py ``_set_quantization_config``): sized as a ``load_in_4bit`` / ``load_in_8bit`` load.
- any other method (GPTQ, AWQ, compressed-tensors, MXFP4, torchao, ...): not sized; the verdict is unknown.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any, Mapping

from axlint.memory import constants as C

NVFP4_GROUP = 16
"""Values per E4M3 block scale of NVFP4 (torchao ``NVFP4Tensor`` block_size 16)."""
FP8_DEFAULT_BLOCK = (128, 128)
"""transformers 5.24 ``FineGrainedFP8Config.weight_block_size`` default."""
DSV4_LOAD_DTYPE_LINEARS = ("self_attn.o_a_proj", "self_attn.compressor.kv_proj", "self_attn.compressor.gate_proj",
                           "self_attn.compressor.indexer.kv_proj", "self_attn.compressor.indexer.gate_proj",
                           "self_attn.compressor.indexer.scorer.weights_proj")
"""DeepSeek-V4 Linears an FP8 + NVFP4 checkpoint leaves in the load dtype under Axolotl: the grouped output
projection (its view + bmm forward is not Float8Tensor-safe, nvfp4_fp8_quantizer.py) and the model's
``_keep_in_fp32_modules`` (transformers 5.24 ``DeepseekV4PreTrainedModel``: shipped in bf16, skipped by the FP8
quantizer)."""


@dataclass(frozen=True)
class Prequantized:
    """What a quantized checkpoint's weights are on the GPU. ``experts`` / ``linears``: the format of the routed
    experts / of the decoder's other ``nn.Linear`` weights ("nvfp4", "fp8"; None: the load dtype); ``skip``: module
    patterns kept in the load dtype (``skip_glob``: fnmatch patterns, as ModelOpt writes its ``ignore`` list, else
    transformers' ``should_convert_module`` regexes); ``lm_head``: the output projection is converted too;
    ``unsized``: why axlint cannot size the checkpoint (then nothing else applies)."""

    method: str
    note: str
    experts: str | None = None
    linears: str | None = None
    block: tuple[int, int] | None = FP8_DEFAULT_BLOCK
    skip: tuple[str, ...] = ()
    skip_glob: bool = False
    lm_head: bool = False
    unsized: str | None = None
    bnb: str | None = None           # "nf4" | "int8": a bitsandbytes checkpoint, sized as that load
    bnb_double_quant: bool = False

    def keeps(self, path: str) -> bool:
        """Whether the module at ``path`` stays in the load dtype (a ``skip`` pattern matches it)."""
        if self.skip_glob:
            return any(fnmatchcase(path, p) for p in self.skip)
        return not should_convert(path, self.skip)


def should_convert(path: str, patterns: tuple[str, ...]) -> bool:
    """transformers 5.24 quantizers/quantizers_utils.py ``should_convert_module``: a pattern skips ``path`` when it
    matches from the start up to a module boundary (as a regex) or is a suffix of it."""
    boundary = r"(?:(?<=\.)|(?=\.|$))"
    for key in patterns:
        try:
            if re.match(rf"(?:{key}){boundary}", path) or path.endswith(key):
                return False
        except re.error:
            if path.endswith(key):
                return False
    return True


def nvfp4_tensor_bytes(d_out: int, d_in: int) -> float:
    """One NVFP4 matrix d_out x d_in: 4-bit values (d_out·d_in/2 bytes) + one E4M3 scale per 16 values along the
    input (d_out·ceil(d_in/16)) + an fp32 per-tensor scale (ModelOpt's ``weight_scale_2``) = 0.5625 B per value."""
    return d_out * d_in / 2 + d_out * -(-d_in // NVFP4_GROUP) + C.FP32


def fp8_tensor_bytes(d_out: int, d_in: int, block: tuple[int, int] | None) -> float:
    """One FP8 matrix d_out x d_in: 1 byte per value + an fp32 ``weight_scale_inv`` per block (ceil(d_out/b0) x
    ceil(d_in/b1) blocks of 128x128: 4/16384 B per value), or one per tensor without a block size."""
    if block is None:
        return d_out * d_in + C.FP32
    return d_out * d_in + C.FP32 * -(-d_out // block[0]) * -(-d_in // block[1])


def tensor_bytes(fmt: str | None, d_out: int, d_in: int, q: Prequantized, load_bytes: int) -> float:
    """The bytes of one d_out x d_in weight stored as ``fmt`` (None: the load dtype)."""
    if fmt == "nvfp4":
        return nvfp4_tensor_bytes(d_out, d_in)
    if fmt == "fp8":
        return fp8_tensor_bytes(d_out, d_in, q.block)
    return d_out * d_in * load_bytes


def quantization_config(raw_config: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """config.json's ``quantization_config`` (top level, or in a multimodal model's ``text_config``); None without."""
    found = raw_config.get("quantization_config")
    if not isinstance(found, Mapping):
        text = raw_config.get("text_config")
        found = text.get("quantization_config") if isinstance(text, Mapping) else None
    return found if isinstance(found, Mapping) and found else None


def read_prequantized(raw_config: Mapping[str, Any], model_type: str, *, moe: bool, expert_kernels: tuple[str, ...],
                      nonexpert_quantization: str | None, dequantize: bool,
                      dsv4_nonexpert_mode: str | None) -> Prequantized | None:
    """How the checkpoint whose config.json is ``raw_config`` sits on the GPU under Axolotl (module docstring);
    None for a checkpoint that is not quantized. ``dsv4_nonexpert_mode``: how the KernelsPlugin's DeepSeek-V4
    adapter stores FP8 non-expert Linears, None when it does not run (``RunFacts.dsv4_nonexpert_mode``)."""
    qc = quantization_config(raw_config)
    if qc is None:
        return None
    method = str(qc.get("quant_method") or "").lower()
    if method == "modelopt":
        return _modelopt(qc, model_type, moe, expert_kernels, nonexpert_quantization)
    if method == "fp8" and str(qc.get("quant_algo") or "").upper() == "MIXED_PRECISION":
        return _fp8_nvfp4_experts(qc, model_type, dsv4_nonexpert_mode, dequantize)
    if method in ("fp8", "mxfp8"):
        return _fp8(qc, method, dequantize)
    if method == "bitnet":
        return _bitnet(qc)
    if method == "bitsandbytes":
        return _bitsandbytes(qc)
    if method == "mxfp4" and (dequantize or qc.get("dequantize")):
        return Prequantized("mxfp4", "quant_method mxfp4 loaded with dequantize: the weights are in the load dtype")
    name = method or "without a quant_method"
    detail = f" ({qc['format']})" if method == "compressed-tensors" and qc.get("format") else ""
    return Prequantized(name, "", unsized=f"a checkpoint quantized with {name}{detail}, which axlint does not size")


def _modelopt(qc: Mapping[str, Any], model_type: str, moe: bool, kernels: tuple[str, ...],
              nonexpert: str | None) -> Prequantized:
    algo = str(qc.get("quant_algo") or "").upper()
    if algo != "NVFP4":
        return Prequantized("modelopt", "", unsized=f"a ModelOpt {algo or 'unknown'} checkpoint, which axlint does "
                                                    "not size (Axolotl 0.18 loads ModelOpt NVFP4 only)")
    gemma = model_type.startswith("gemma4")
    if not (("scattermoe" in kernels) if gemma else kernels):
        needs = "use_scattermoe" if gemma else "use_scattermoe or use_sonicmoe"
        return Prequantized("modelopt", "", unsized=f"a ModelOpt NVFP4 checkpoint without the KernelsPlugin's {needs}: "
                                                    "transformers 5.24 does not know quant_method modelopt and loads "
                                                    "its experts as uninitialised bf16 placeholders")
    if nonexpert and nonexpert.lower() not in ("none", "bf16"):
        return Prequantized("modelopt", "", unsized=f"a ModelOpt NVFP4 checkpoint whose non-expert Linears "
                                                    f"nonexpert_quantization: {nonexpert} re-quantizes, which axlint "
                                                    "does not size")
    ignore = tuple(str(p) for p in qc.get("ignore") or qc.get("exclude_modules") or ())
    note = ("ModelOpt NVFP4 checkpoint: routed experts kept packed on the GPU (4-bit values + an FP8 scale per 16 "
            "+ a per-tensor scale = 0.5625 B per weight); Axolotl's KernelsPlugin dequantizes every other NVFP4 "
            "Linear to the load dtype at load") if moe else \
        "ModelOpt NVFP4 checkpoint without routed experts: Axolotl dequantizes its NVFP4 Linears to the load dtype"
    return Prequantized("modelopt NVFP4", note, experts="nvfp4" if moe else None, skip=ignore, skip_glob=True)


def _fp8(qc: Mapping[str, Any], method: str, dequantize: bool) -> Prequantized:
    if dequantize or qc.get("dequantize"):
        return Prequantized(method, f"quant_method {method} loaded with dequantize: the weights are in the load dtype")
    if method == "mxfp8" or qc.get("scale_fmt") not in (None, "float"):
        return Prequantized(method, "", unsized=f"an {method} checkpoint with {qc.get('scale_fmt')} scales, which "
                                                "axlint does not size")
    block, skip, lm_head = _fp8_storage(qc)
    where = f"{block[0]}x{block[1]} block" if block else "tensor"
    note = (f"FP8 checkpoint (transformers FineGrainedFP8): Linears and routed experts kept in float8_e4m3fn with an "
            f"fp32 scale per {where}; assumes a GPU of compute capability >= 8.9 (H100, L40S, RTX 4090: on an A100 "
            "transformers dequantizes to bf16)")
    return Prequantized("fp8", note, experts="fp8", linears="fp8", block=block, skip=skip, lm_head=lm_head)


def _fp8_storage(qc: Mapping[str, Any]) -> tuple[tuple[int, int] | None, tuple[str, ...], bool]:
    """What FineGrainedFP8 reads of ``quantization_config``: the scale block (``weight_block_size``, 128x128 by
    default; None, one scale per tensor, for anything but a pair), the ``modules_to_not_convert`` patterns kept in the
    load dtype, and whether the output embedding is converted (only when that list is given: otherwise transformers
    keeps it, ``get_keys_to_not_convert``)."""
    raw_block = qc.get("weight_block_size", list(FP8_DEFAULT_BLOCK))
    block = (int(raw_block[0]), int(raw_block[1])) if isinstance(raw_block, list) and len(raw_block) == 2 else None
    skip = qc.get("modules_to_not_convert")
    return block, tuple(str(p) for p in skip or ()), skip is not None


def _fp8_nvfp4_experts(qc: Mapping[str, Any], model_type: str, mode: str | None, dequantize: bool) -> Prequantized:
    """An FP8 MIXED_PRECISION checkpoint with NVFP4 routed experts (module docstring)."""
    experts = str(qc.get("moe_quant_algo") or "unknown").upper()
    if model_type != "deepseek_v4" or experts != "NVFP4":
        return Prequantized("fp8", "", unsized=f"an FP8 MIXED_PRECISION checkpoint with {experts} experts of a "
                                               f"{model_type} model, which axlint does not size")
    if dequantize:
        return Prequantized("fp8", "", unsized="a DeepSeek-V4 FP8 + NVFP4 checkpoint loaded with dequantize, which "
                                               "axlint does not size")
    if mode is None:
        return Prequantized("fp8", "", unsized="a DeepSeek-V4 FP8 + NVFP4 checkpoint loaded without the "
                                               "KernelsPlugin's use_dsv4_kernels and use_scattermoe: transformers' "
                                               "FineGrainedFP8 quantizer has no NVFP4 expert path")
    if mode not in ("float8tensor", "bf16"):
        return Prequantized("fp8", "", unsized=f"a DeepSeek-V4 FP8 + NVFP4 checkpoint under dsv4_fp8_nonexpert_mode: "
                                               f"{mode}, which axlint does not size")
    block, skip, lm_head = _fp8_storage(qc)
    kept = "as Float8Tensor (1 B + an fp32 scale per block)" if mode == "float8tensor" else "dequantized to bf16"
    note = ("DeepSeek-V4 FP8 + NVFP4 checkpoint under the KernelsPlugin's DSV4 adapter: routed experts packed NVFP4 "
            f"(0.5625 B per weight), the other FP8 Linears {kept}, o_a_proj and the compressor / indexer projections "
            "in the load dtype")
    return Prequantized("fp8 + NVFP4", note, experts="nvfp4", linears="fp8" if mode == "float8tensor" else None,
                        block=block, skip=DSV4_LOAD_DTYPE_LINEARS + skip, lm_head=lm_head)


def _bitnet(qc: Mapping[str, Any]) -> Prequantized:
    if str(qc.get("linear_class", "bitlinear")) != "autobitlinear":
        return Prequantized("bitnet", "", unsized="a packed BitNet (bitlinear) checkpoint, which transformers cannot "
                                                  "train (BitNetHfQuantizer.is_trainable)")
    return Prequantized("bitnet", "BitNet checkpoint (autobitlinear): full-precision weights in the load dtype, "
                                  "ternarized in forward")


def _bitsandbytes(qc: Mapping[str, Any]) -> Prequantized:
    if qc.get("load_in_4bit"):
        double = qc.get("bnb_4bit_use_double_quant") is True
        return Prequantized("bitsandbytes", "bitsandbytes 4-bit checkpoint, sized as load_in_4bit", bnb="nf4",
                            bnb_double_quant=double)
    if qc.get("load_in_8bit"):
        return Prequantized("bitsandbytes", "bitsandbytes 8-bit checkpoint, sized as load_in_8bit", bnb="int8")
    return Prequantized("bitsandbytes", "", unsized="a bitsandbytes checkpoint that is neither 4- nor 8-bit")
