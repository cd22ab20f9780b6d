"""Values as pydantic's lax mode reads them, which is how Axolotl and DeepSpeed read a config.

Axolotl validates its YAML with pydantic 2 models (`AxolotlInputConfig`), DeepSpeed its JSON with pydantic 2
models (`DeepSpeedZeroConfig`, ...). Neither uses strict mode, so a quoted number or a YAML 1.1 word is coerced,
not refused. The rules below are pydantic 2.12's conversion table for Python input in lax mode, checked against
pydantic 2.12.5 (the version Axolotl 0.18.0 pins):

- int: an int; a bool (True -> 1); a float without a fractional part; a string holding an integer, surrounding
  spaces allowed, or a float-looking string without a fractional part ("4.0"). "1e3" and 4.5 are refused.
- bool: a bool; the ints 0 and 1; the strings 0/1, t/f, true/false, y/n, yes/no, on/off in any case. Anything
  else (2, "auto") is refused.
- float: an int or float; a bool; a string a Python float() reads ("2e-5", " 3 ").

Each reader returns None for a value pydantic would refuse; the schema rules report those.
"""
from __future__ import annotations

from typing import Any

_TRUE_WORDS = frozenset({"1", "t", "true", "y", "yes", "on"})
_FALSE_WORDS = frozenset({"0", "f", "false", "n", "no", "off"})


def lax_float(value: Any) -> float | None:
    """A float as pydantic's lax mode reads one, or None when it would refuse the value."""
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value.strip())
        except ValueError:
            return None
    return None


def lax_int(value: Any) -> int | None:
    """An int as pydantic's lax mode reads one, or None when it would refuse the value."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        text = value.strip()
        try:
            return int(text)
        except ValueError:
            pass
        value = lax_float(text) if text.replace(".", "", 1).lstrip("-").isdigit() else None
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


def lax_bool(value: Any) -> bool | None:
    """A bool as pydantic's lax mode reads one, or None when it would refuse the value."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        word = value.strip().lower()
        if word in _TRUE_WORDS:
            return True
        if word in _FALSE_WORDS:
            return False
    return None


def truthy(value: Any) -> bool:
    """Python truthiness: how Axolotl's `mode="before"` validators and its loaders read a flag (`if cfg.x:`)
    before, or instead of, pydantic's coercion. A quoted "false" is truthy here."""
    return bool(value)


def as_number(value: Any) -> float | None:
    """A number for comparison (the condition language's greater_than / less_than): an int, a float, or a string
    float() reads, as a float; None for a bool, which is a switch there, not the number 1, and for anything else."""
    return None if isinstance(value, bool) else lax_float(value)


def is_int(value: Any) -> bool:
    """An int that is not a bool (YAML's `true` is an int to Python, never a count to a reader)."""
    return isinstance(value, int) and not isinstance(value, bool)
