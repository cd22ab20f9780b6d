"""Model architectures: the catalog of config.json numbers and how ``base_model`` is resolved to one."""
from axlint.architectures import cross_attention, dsa, dsv4, ssm  # noqa: F401  (register mixers and their layer plans)
from axlint.architectures.model import Architecture, Linear
from axlint.architectures.resolve import catalog_lookup, load_catalog, resolve_architecture

__all__ = ["Architecture", "Linear", "catalog_lookup", "load_catalog", "resolve_architecture"]
