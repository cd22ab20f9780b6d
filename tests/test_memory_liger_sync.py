"""The shipped Liger model list must equal liger-kernel's MODEL_TYPE_TO_APPLY_LIGER_FN (parsed, not imported)."""
import ast
import importlib.metadata
import importlib.util
from pathlib import Path

from axlint.memory.liger_models import LIGER_KERNEL_VERSION, LIGER_MODEL_TYPES


def _installed_table() -> set[str]:
    spec = importlib.util.find_spec("liger_kernel")
    assert spec is not None and spec.submodule_search_locations, "liger-kernel is a test dependency"
    path = Path(next(iter(spec.submodule_search_locations))) / "transformers" / "monkey_patch.py"
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "MODEL_TYPE_TO_APPLY_LIGER_FN"
                                                for t in node.targets):
            return {key.value for key in node.value.keys}
    raise AssertionError("MODEL_TYPE_TO_APPLY_LIGER_FN not found in " + str(path))


def test_liger_model_types_in_sync_with_installed_liger_kernel():
    installed = _installed_table()
    assert LIGER_MODEL_TYPES == installed, (
        f"liger-kernel {importlib.metadata.version('liger-kernel')} (shipped list is from {LIGER_KERNEL_VERSION}): "
        f"missing {sorted(installed - LIGER_MODEL_TYPES)}, extra {sorted(LIGER_MODEL_TYPES - installed)}")
