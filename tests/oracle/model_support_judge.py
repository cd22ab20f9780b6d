"""Run inside the oracle venv: Axolotl 0.18.0's model support registry and the plugins that enforce it.

Reads one JSON object per line on stdin and writes one per line on stdout:

* {"id": "registry"}: {"unsupported": {model type: {capability: reason}}}, every capability a registered model
  support descriptor declares ``Unsupported`` (``axolotl.model_support``);
* {"id": "liger_flags"}: {"flags": the Liger plugin's ``LIGER_FLAGS``, any of which makes it check the support};
* {"id": ..., "plugin": "cut_cross_entropy" | "liger", "model_type": ...}: what the plugin's ``pre_model_load``
  raises for a config of that model type with the plugin's feature on ({"error": ""} when it goes on past the
  model support check). The Cut Cross Entropy plugin checks the support before it looks for its package; the Liger
  plugin checks it first too, so neither needs its kernels installed to answer.
"""
from __future__ import annotations

from judge import _first_line, serve  # the sibling judge: same environment


def registry() -> dict:
    from axolotl.model_support import registry as model_support
    from axolotl.model_support.base import Unsupported

    model_support.get_model_support("llama")  # loads the built-in descriptors
    out: dict[str, dict[str, str]] = {}
    for model_type, support in model_support._REGISTRY.items():  # the registry has no public listing
        caps = {name: cap.reason or "" for name, cap in support.capabilities.items() if isinstance(cap, Unsupported)}
        if caps:
            out[model_type] = caps
    return {"unsupported": out}


def plugin_check(plugin: str, model_type: str) -> dict:
    from axolotl.utils.dict import DictDefault

    if plugin == "cut_cross_entropy":
        from axolotl.integrations.cut_cross_entropy import CutCrossEntropyPlugin as Plugin

        cfg = DictDefault({"cut_cross_entropy": True, "model_config_type": model_type})
    else:
        from axolotl.integrations.liger.plugin import LigerPlugin as Plugin

        cfg = DictDefault({"liger_rms_norm": True, "model_config_type": model_type})
    try:
        Plugin().pre_model_load(cfg)
    except ValueError as exc:  # the model support check's refusal is the answer
        return {"error": _first_line(f"ValueError: {exc}")}
    except Exception:  # past the support check: the plugin's own requirements (its package) decide the rest
        return {"error": ""}
    return {"error": ""}


def liger_flags() -> dict:
    from axolotl.integrations.liger.plugin import LIGER_FLAGS

    return {"flags": list(LIGER_FLAGS)}


def main() -> None:
    def answer(item: dict) -> dict:
        if item["id"] == "registry":
            return registry()
        if item["id"] == "liger_flags":
            return liger_flags()
        return plugin_check(item["plugin"], item["model_type"])

    serve(answer)


if __name__ == "__main__":
    main()
