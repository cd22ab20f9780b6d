"""Memory stand-ins for the GPU-only kernels a config turns on, for the simulation tier (`axlint.simulate`).

Cut Cross-Entropy, Liger-Kernel and Axolotl's LoRA kernels launch Triton kernels, which fake tensors on a CPU cannot run. Each stand-in is
an autograd function that allocates, saves and returns the tensors the kernel's Python wrapper does; the kernel
launches themselves only write into tensors allocated before them, so leaving them out changes no byte:

- Cut Cross-Entropy (``cut_cross_entropy`` of axolotl-ai-cloud/ml-cross-entropy 5f0c7a7, the commit Axolotl
  0.18.0 installs): the causal LM's forward hands the last hidden states and the output embedding's weight to the
  kernel instead of computing logits (``transformers/llama.py`` ``cce_forward``; ``transformers/utils.py``
  ``apply_lce`` casts fp32 hidden states to a bf16 weight's dtype). The forward keeps the valid-token indices
  (int32, ``utils._build_flat_valids``), the per-token log-sum-exp and target logit (fp32,
  ``cce_lse_forward.py``, ``indexed_dot.py``) and, with ``filter_eps="auto"``, the vocabulary's mean logit (fp32),
  and saves its inputs; the backward allocates the gradient of the hidden states (their dtype) and, when the weight
  trains, of the weight (its dtype; ``cce_backward.py``, ``accum_*_fp32`` off).
- Liger fused linear cross-entropy (liger-kernel 0.8.0, Axolotl 0.18.0's pin; ``ops/fused_linear_cross_entropy.py``):
  the forward computes the gradients. It allocates the hidden states' gradient and, when the weight trains, a
  gradient buffer of the weight's dtype, and the per-token loss (fp32); then for each chunk of
  next_pow2(⌈T / ⌈V / h⌉⌉) tokens the chunk's logits (a matmul, under autocast in the half dtype), the chunk's rows
  of the hidden-state gradient (logits @ W) and, when the weight trains, ``mm(logits.T, x).float()`` added into the
  weight's buffer (0.6.2 to 0.8.2; before and from 0.8.5 an in-place ``addmm``, as
  ``TrainSetup.liger_flce_weight_grad_copies`` says). It saves the two buffers; the backward hands them on.
- Liger cross-entropy (``ops/cross_entropy.py``), installed as ``torch.nn.functional.cross_entropy``, which
  transformers 5's causal-LM loss calls on its fp32 copy of the logits: the kernel writes the gradient into that
  copy, which it saves and the backward hands on; the per-token loss is fp32.
- Liger RMSNorm (``ops/rms_norm.py``): the output in the input's dtype and an fp32 reciprocal RMS per row; saves the
  input, the weight and the RMS; the backward writes the input's gradient into the output's gradient (a new tensor
  for the Gemma families, whose patches pass ``in_place=False``) and sums an fp32 (SMs × h) partial weight
  gradient. It replaces every module of the model's RMSNorm class, as Liger's class-level patch does.
- Liger SwiGLU / GEGLU (``ops/swiglu.py``, ``ops/geglu.py``): the MLP's ``down_proj(act(gate_proj(x)) *
  up_proj(x))`` with one kernel that saves the gate and up projections and returns a new tensor of the gate's
  shape; the backward writes their gradients into them.
- Axolotl's fused LoRA MLP (Axolotl 0.18.0 ``kernels/lora.py`` ``LoRA_MLP`` through ``apply_lora_mlp_swiglu`` /
  ``_geglu``, on each decoder layer's ``mlp`` whose gate, up and down projections carry LoRA,
  ``TrainSetup.lora_kernels``): the dropout of the input, shared by gate and up, runs outside the function; the
  forward computes each projection as the base matmul with the adapter's product added in place, the activation
  and product in one new tensor, and saves the input, its dropped copy, the gate and up outputs and the adapter
  weights cast to the input's dtype; the backward allocates the down projection's input gradient (the activation
  backward then writes in place), the adapters' gradients and the input gradient (and the dropped copy's).
- XIELU CUDA (nickjbrowning/XIELU ``xielu_impl.cu`` ``XIELUAutograd``), when the run has the optional package
  (``TrainSetup.xielu_cuda``): the output a new tensor, only the input saved; the backward allocates its gradient.

Liger's RoPE and LayerNorm kernels are not stood in for (their memory is transformers' within a layer, which the
simulation runs). torch is imported inside functions only.
"""
from __future__ import annotations

import contextlib
import functools
from types import MethodType
from typing import Any, Iterator

from axlint.training.model import unwrapped

STOOD_IN_LORA_KERNELS = ("mlp",)
"""Axolotl's fused LoRA kernels (``TrainSetup.lora_kernels``) the simulation stands in for; PEFT's layers run in
place of the QKV and O kernels (``simulate.simulated_setup``)."""
RMS_NORM_SMS = 132
"""Rows of Liger RMSNorm's fp32 partial weight gradient: the GPU's SM count (an H100 SXM's 132)."""
NOT_IN_PLACE_NORM_TYPES = frozenset({"gemma2", "gemma3", "gemma3_text", "gemma4", "gemma4_text"})
"""Model types whose Liger RMSNorm patch passes ``in_place=False`` (liger-kernel 0.8.0 ``monkey_patch.py``)."""


def next_power_of_two(n: int) -> int:
    """The smallest power of two ≥ n (``triton.next_power_of_2``)."""
    return 1 << max(0, (n - 1).bit_length())


def flce_chunk_tokens(tokens: int, vocab: int, hidden: int) -> int:
    """Tokens per Liger FLCE chunk: next_pow2(⌈T / ⌈V / h⌉⌉), so that a chunk's logits are about T·h elements."""
    inc_factor = -(-vocab // hidden)
    return next_power_of_two(-(-tokens // inc_factor))


@functools.lru_cache(maxsize=None)
def _functions() -> dict[str, Any]:
    """The autograd functions, built once torch is imported."""
    import torch

    class CutCrossEntropy(torch.autograd.Function):
        @staticmethod
        def forward(ctx: Any, e: Any, c: Any, targets: Any) -> Any:
            tokens = e.shape[0]
            valids = targets.new_empty(tokens, dtype=torch.int32)
            lse = e.new_empty(tokens, dtype=torch.float32)
            neg_dot = e.new_empty(tokens, dtype=torch.float32)
            logit_avg = e.new_empty(c.shape[0], dtype=torch.float32)
            nll = neg_dot.add_(lse)
            ctx.save_for_backward(e, c, lse, targets, valids, logit_avg)
            return nll.mean()

        @staticmethod
        def backward(ctx: Any, grad: Any) -> Any:
            e, c, *_ = ctx.saved_tensors
            de = torch.empty_like(e) if ctx.needs_input_grad[0] else None
            dc = torch.empty_like(c) if ctx.needs_input_grad[1] else None
            return de, dc, None

    class FusedLinearCrossEntropy(torch.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: Any, weight: Any, targets: Any, weight_grad_copies: bool) -> Any:
            tokens, hidden = x.shape
            chunk = flce_chunk_tokens(tokens, weight.shape[0], hidden)
            grad_input = torch.zeros_like(x)
            trains = x.requires_grad and weight.requires_grad
            grad_weight = torch.zeros_like(weight) if trains else None
            loss_1d = x.new_zeros(tokens, dtype=torch.float32)
            for start in range(0, tokens, chunk):
                x_chunk = x[start:start + chunk]
                logits = (x_chunk @ weight.t()).contiguous()
                grad_input[start:start + chunk] = logits @ weight
                if grad_weight is not None and weight_grad_copies:
                    grad_weight += torch.mm(logits.t(), x_chunk).float()
                elif grad_weight is not None:
                    grad_weight.addmm_(logits.t(), x_chunk.to(logits.dtype))
            ctx.save_for_backward(grad_input, grad_weight)
            return loss_1d.sum()

        @staticmethod
        def backward(ctx: Any, grad: Any) -> Any:
            grad_input, grad_weight = ctx.saved_tensors
            return grad_input, grad_weight, None, None

    class CrossEntropy(torch.autograd.Function):
        @staticmethod
        def forward(ctx: Any, logits: Any, targets: Any) -> Any:
            loss_1d = logits.new_zeros(logits.shape[0], dtype=torch.float32)
            ctx.save_for_backward(logits.detach())
            return loss_1d.sum()

        @staticmethod
        def backward(ctx: Any, grad: Any) -> Any:
            (grad_logits,) = ctx.saved_tensors
            return grad_logits, None

    class RMSNorm(torch.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: Any, weight: Any, in_place: bool) -> Any:
            rstd = x.new_empty(x.shape[:-1], dtype=torch.float32)
            ctx.save_for_backward(x, weight, rstd)
            ctx.in_place = in_place
            return torch.empty_like(x)

        @staticmethod
        def backward(ctx: Any, grad: Any) -> Any:
            x, weight, _ = ctx.saved_tensors
            dx = grad if ctx.in_place else torch.zeros_like(grad)
            dw = None
            if ctx.needs_input_grad[1]:
                dw = grad.new_empty((RMS_NORM_SMS, x.shape[-1]), dtype=torch.float32).sum(0).to(weight.dtype)
            return dx, dw, None

    class SavesInput(torch.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: Any) -> Any:
            ctx.save_for_backward(x)
            return torch.empty_like(x)

        @staticmethod
        def backward(ctx: Any, grad: Any) -> Any:
            return torch.empty_like(grad)

    class GatedActivation(torch.autograd.Function):
        @staticmethod
        def forward(ctx: Any, gate: Any, up: Any) -> Any:
            gate, up = gate.contiguous(), up.contiguous()
            ctx.save_for_backward(gate, up)
            return torch.empty_like(gate)

        @staticmethod
        def backward(ctx: Any, grad: Any) -> Any:
            gate, up = ctx.saved_tensors
            return gate, up

    class LoraMLP(torch.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: Any, x_drop: Any, mlp: Any, *adapters: Any) -> Any:
            dtype = x.dtype
            x_lora = x if x_drop is None else x_drop
            gate = _lora_linear(mlp.gate_proj, x, x_lora, adapters[0:2], dtype)
            up = _lora_linear(mlp.up_proj, x, x_lora, adapters[2:4], dtype)
            hidden = torch.empty_like(gate)  # one Triton kernel writes act(gate) * up
            out = _lora_linear(mlp.down_proj, hidden, hidden, adapters[4:6], dtype)
            ctx.save_for_backward(x, x_lora, gate, up, *(w.to(dtype) for w in adapters))
            ctx.has_dropout = x_drop is not None
            return out

        @staticmethod
        def backward(ctx: Any, grad: Any) -> Any:
            x, x_lora, gate, up, *adapters = ctx.saved_tensors
            grad_down = torch.empty_like(gate)  # the activation backward then writes over it, gate and up
            grads = [torch.empty_like(w) for w in adapters]
            dx = torch.empty_like(x)
            dx_drop = torch.empty_like(x_lora) if ctx.has_dropout else None
            del grad_down
            return (dx, dx_drop, None, *grads)

    return {"cce": CutCrossEntropy, "liger_flce": FusedLinearCrossEntropy, "liger_ce": CrossEntropy,
            "rms_norm": RMSNorm, "gated": GatedActivation, "xielu": SavesInput, "lora_mlp": LoraMLP}


def _lora_linear(proj: Any, x: Any, x_lora: Any, adapter: tuple[Any, Any], dtype: Any) -> Any:
    """Axolotl's ``matmul_lora``: the base projection of `x`, then the adapter's product of `x_lora` added in place
    (``out.addmm_(X_lora @ A, B)``); the adapter weights cast to the input's dtype."""
    import torch

    a, b = (w.to(dtype) for w in adapter)
    out = torch.nn.functional.linear(x, proj.base_layer.weight.to(dtype), proj.base_layer.bias)
    flat = out.view(-1, out.shape[-1])
    flat.addmm_(x_lora.reshape(-1, x_lora.shape[-1]) @ a.t(), b.t(), alpha=_scaling(proj))
    return out


def _scaling(proj: Any) -> float:
    return float(proj.scaling[proj.active_adapters[0]])


def _lora_adapters(proj: Any) -> tuple[Any, Any]:
    """The active adapter's lora_A and lora_B weights of a PEFT LoRA ``Linear``."""
    name = proj.active_adapters[0]
    return proj.lora_A[name].weight, proj.lora_B[name].weight


def _lora_mlp_forward(self: Any, x: Any) -> Any:
    """``apply_lora_mlp_swiglu`` / ``_geglu``: the shared dropout of gate and up outside the function, then
    ``LoRA_MLP``."""
    import torch

    dropout = self.gate_proj.lora_dropout[self.gate_proj.active_adapters[0]]
    x_drop = dropout(x) if self.training and not isinstance(dropout, torch.nn.Identity) else None
    adapters = (*_lora_adapters(self.gate_proj), *_lora_adapters(self.up_proj), *_lora_adapters(self.down_proj))
    return _functions()["lora_mlp"].apply(x, x_drop, self, *adapters)


def _lora_mlps(lm: Any) -> list[Any]:
    """The dense MLPs Axolotl's LoRA MLP kernel patches: each decoder layer's ``mlp`` with gate_proj, up_proj and
    down_proj that all carry a LoRA adapter (Axolotl 0.18.0 monkeypatch/lora_kernels.py ``find_mlp_in_layer``)."""
    decoder = lm.get_decoder() if hasattr(lm, "get_decoder") else None
    out = []
    for layer in getattr(decoder, "layers", ()):
        mlp = getattr(layer, "mlp", None)
        if mlp is not None and all(hasattr(getattr(mlp, name, None), "lora_A")
                                   for name in ("gate_proj", "up_proj", "down_proj")):
            out.append(mlp)
    return out


def _fused_loss_forward(kernel: str, weight_grad_copies: bool) -> Any:
    """A causal LM ``forward`` that hands the last hidden states and the output embedding's weight to the fused
    loss ``kernel`` ("cce" or "liger_flce") instead of computing logits, as the plugins' patched forwards do."""
    import torch
    from transformers.modeling_outputs import CausalLMOutputWithPast

    function = _functions()[kernel]

    def forward(self: Any, input_ids: Any = None, labels: Any = None, **kwargs: Any) -> Any:
        kwargs = {key: value for key, value in kwargs.items() if value is not None}
        outputs = getattr(self, self.base_model_prefix)(input_ids=input_ids, **kwargs)
        hidden = outputs[0]
        weight = self.get_output_embeddings().weight
        if kernel == "cce" and weight.dtype == torch.bfloat16 and hidden.dtype == torch.float32:
            hidden = hidden.to(weight.dtype)
        shifted = torch.nn.functional.pad(labels, (0, 1), value=-100)[..., 1:].contiguous()
        hidden = hidden.contiguous().view(-1, hidden.shape[-1])
        extra = (weight_grad_copies,) if kernel == "liger_flce" else ()
        return CausalLMOutputWithPast(loss=function.apply(hidden, weight, shifted.view(-1), *extra))

    return forward


def _liger_cross_entropy() -> Any:
    """``torch.nn.functional.cross_entropy`` as Liger's ``liger_cross_entropy`` replaces it."""
    function = _functions()["liger_ce"]

    def cross_entropy(input: Any, target: Any, *args: Any, **kwargs: Any) -> Any:
        return function.apply(input, target)

    return cross_entropy


def _norm_forward(in_place: bool) -> Any:
    function = _functions()["rms_norm"]

    def forward(self: Any, hidden_states: Any) -> Any:
        return function.apply(hidden_states, self.weight, in_place)

    return forward


def _gated_mlp_forward(self: Any, x: Any) -> Any:
    gated = _functions()["gated"]
    return self.down_proj(gated.apply(self.gate_proj(x), self.up_proj(x)))


def _xielu_cuda_forward(self: Any, x: Any) -> Any:
    return _functions()["xielu"].apply(x)


def _rms_norm_class(lm: Any) -> type | None:
    """The model's RMSNorm class: that of its text decoder's final norm, when its name says RMSNorm."""
    decoder = lm.get_decoder() if hasattr(lm, "get_decoder") else None
    norm = getattr(decoder, "norm", None)
    return type(norm) if norm is not None and type(norm).__name__.endswith("RMSNorm") else None


def _gated_mlps(lm: Any) -> list[Any]:
    """The MLP modules with gate_proj, up_proj and down_proj (Llama's form, which Liger's SwiGLU/GEGLU MLPs keep)."""
    return [m for m in lm.modules() if type(m).__name__.endswith("MLP")
            and all(hasattr(m, name) for name in ("gate_proj", "up_proj", "down_proj"))]


@contextlib.contextmanager
def kernel_standins(model: Any, model_type: str, setup: Any) -> Iterator[list[str]]:
    """Install the stand-ins for the kernels the run's ``TrainSetup`` uses (``loss``; Liger's RMSNorm and gated-MLP
    patches, ``liger_rms_norm`` / ``liger_glu``; ``liger_flce_weight_grad_copies``: FLCE adds the lm_head gradient
    through a product and its fp32 copy, else in place; ``xielu_cuda``) on ``model``, yield notes on what was stood
    in for, and remove them."""
    from unittest import mock

    import torch

    lm = unwrapped(model)
    loss = str(getattr(setup.loss, "value", setup.loss))
    rms_norm, glu = setup.liger_rms_norm, setup.liger_glu
    notes: list[str] = []
    with contextlib.ExitStack() as stack:
        if loss in ("cce", "liger_flce"):
            stack.enter_context(mock.patch.object(lm, "forward", MethodType(_fused_loss_forward(loss, setup.liger_flce_weight_grad_copies), lm)))
            name = "Cut Cross-Entropy" if loss == "cce" else "Liger fused linear cross-entropy"
            notes.append(f"{name}: its CUDA kernels replaced by a stand-in that allocates what they allocate "
                         "(no logits tensor)")
        elif loss == "liger_ce":
            stack.enter_context(mock.patch.object(torch.nn.functional, "cross_entropy", _liger_cross_entropy()))
            notes.append("Liger cross-entropy: its CUDA kernel replaced by a stand-in that allocates what it "
                         "allocates (the gradient written into the fp32 logits)")
        elif loss == "chunked":
            notes.append("Axolotl's chunked cross-entropy is not simulated: transformers' loss ran")
        norm_class = _rms_norm_class(lm) if rms_norm else None
        if norm_class is not None:
            forward = _norm_forward(in_place=model_type not in NOT_IN_PLACE_NORM_TYPES)
            for module in lm.modules():
                if type(module) is norm_class:
                    stack.enter_context(mock.patch.object(module, "forward", MethodType(forward, module)))
            notes.append(f"Liger RMSNorm: every {norm_class.__name__} replaced by a stand-in that allocates what "
                         "its CUDA kernel allocates")
        elif rms_norm:
            notes.append("Liger RMSNorm: no RMSNorm class found in the decoder; transformers' norm ran")
        lora_mlps = _lora_mlps(lm) if "mlp" in setup.lora_kernels else []  # Axolotl's patch replaces Liger's
        mlps = [m for m in _gated_mlps(lm) if not any(m is lora for lora in lora_mlps)] if glu else []
        for module in mlps:
            stack.enter_context(mock.patch.object(module, "forward", MethodType(_gated_mlp_forward, module)))
        if mlps:
            notes.append(f"Liger gated MLP: the activation of {len(mlps)} MLP modules replaced by a stand-in that "
                         "allocates what its CUDA kernel allocates")
        elif glu and not lora_mlps:
            notes.append("Liger gated MLP: no gate_proj/up_proj/down_proj MLP found; transformers' MLP ran")
        for module in lora_mlps:
            stack.enter_context(mock.patch.object(module, "forward", MethodType(_lora_mlp_forward, module)))
        if lora_mlps:
            notes.append(f"Axolotl's LoRA MLP kernel: {len(lora_mlps)} MLP modules replaced by a stand-in that keeps "
                         "and allocates what its autograd function does (its Triton activation writes in place)")
        activations = [m for m in lm.modules() if type(m).__name__ == "XIELUActivation"] if setup.xielu_cuda else []
        for module in activations:
            stack.enter_context(mock.patch.object(module, "forward", MethodType(_xielu_cuda_forward, module)))
        if activations:
            notes.append("XIELU CUDA: the xIELU activations replaced by a stand-in that allocates what its kernel "
                         "allocates")
        yield notes
