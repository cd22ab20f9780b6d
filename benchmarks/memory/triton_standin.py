"""A stand-in for Triton, so that Axolotl's kernel modules import where Triton is not installed (the oracle venv of
tests/oracle leaves out that GPU compiler, about 1 GB): any attribute of ``triton`` or ``triton.language`` is a
decorator or factory that hands its function back (``triton.jit``, ``triton.autotune(...)``, ``tl.constexpr``).

Nothing that uses it may launch a Triton kernel: the oracle's probes and judges call Axolotl's Python around its
kernels (source rewrites, autograd functions whose Triton calls they replace with PyTorch functions). Install it
after transformers and PEFT have imported, since they look for the real package.
"""
from __future__ import annotations

import sys
import types
from typing import Any, Callable


class _Module(types.ModuleType):
    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return _passthrough


def _passthrough(*args: Any, **kwargs: Any) -> Any:
    """``@jit`` hands the function back; ``@autotune(...)`` / ``constexpr(...)`` hand back a decorator that does."""
    if len(args) == 1 and callable(args[0]) and not kwargs:
        return args[0]
    return _identity


def _identity(fn: Callable) -> Callable:
    return fn


def install() -> None:
    """Put the stand-in in ``sys.modules`` unless a real Triton imports, after transformers and PEFT."""
    import peft  # noqa: F401  (they probe for the real package when imported)
    from transformers import AutoConfig, AutoModel, GenerationMixin  # noqa: F401

    try:
        import triton  # noqa: F401
        return
    except ImportError:
        pass
    triton, language = _Module("triton"), _Module("triton.language")
    triton.language = language
    sys.modules["triton"], sys.modules["triton.language"] = triton, language
