"""``Linear``: one ``nn.Linear`` (or a stack of expert weights) of a decoder layer, the unit every parameter count,
LoRA target and activation input is built from; ``VisionLinear``: one ``nn.Linear`` of a vision or audio tower or a
projector, at its module path."""
from __future__ import annotations

from typing import NamedTuple


class Linear(NamedTuple):
    """One ``nn.Linear`` of a decoder layer: ``count`` instances (experts) of ``d_in -> d_out``; ``router``: the
    MoE router when it is a weight inside a router module (transformers 5), not an ``nn.Linear`` (Llama 4's is one:
    ``Family.router_linear``). A named tuple: the estimate hashes and compares Linears as memo keys and adapter
    sets many thousand times, which a tuple does in C."""

    name: str
    d_in: int
    d_out: int
    bias: bool = False
    count: int = 1
    expert: bool = False
    router: bool = False

    @property
    def params(self) -> int:
        return self.count * (self.d_in * self.d_out + (self.d_out if self.bias else 0))


class VisionLinear(NamedTuple):
    """One ``nn.Linear`` of a tower (vision or audio) or projector at module path ``path`` (``d_in -> d_out``);
    ``subclass``: a subclass of ``nn.Linear`` (``nn.MultiheadAttention``'s ``out_proj``), which a bitsandbytes load
    does not replace (transformers 5.24 ``replace_with_bnb_linear`` converts ``type(module) is nn.Linear`` only)."""

    path: str
    d_in: int
    d_out: int
    bias: bool
    subclass: bool = False

    @property
    def name(self) -> str:
        return self.path.rsplit(".", 1)[-1]

    @property
    def params(self) -> int:
        return self.d_in * self.d_out + (self.d_out if self.bias else 0)
