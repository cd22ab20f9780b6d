"""`axlint validate`: a short real training run that measures per-rank memory (torch, deepspeed imported lazily)."""
from axlint.validate.extras import MissingExtraError, require_validate_extras
from axlint.validate.report import ValidationReport
from axlint.validate.runner import ValidationError, run_validation

__all__ = ["MissingExtraError", "ValidationError", "ValidationReport", "require_validate_extras", "run_validation"]
