"""Interim home of ``Linear`` until the hybrid core lands (it moves here there); re-exported from model.py."""
from __future__ import annotations

from axlint.architectures.model import Linear

__all__ = ["Linear"]
