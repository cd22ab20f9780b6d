"""The resolved facts of a config dict for tests that call the estimator, the solver or simulate directly."""
from __future__ import annotations

from typing import Any, Mapping

from axlint.facts import RunFacts, resolve_facts


def facts(config: Mapping[str, Any], ds: Mapping[str, Any] | None = None, arch: Any = None, hw: Any = None) -> RunFacts:
    """`config` and `ds` as written, resolved on `hw` (count, bf16) with `arch`'s hidden size for "auto" buckets."""
    return resolve_facts(config, ds, world_size=getattr(hw, "count", 1) or 1,
                         bf16_capable=getattr(hw, "bf16", True) is not False,
                         hidden_size=getattr(arch, "hidden_size", None))
