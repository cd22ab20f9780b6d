"""Generate axlint/schemas/axolotl/<version>.schema.json from the pydantic models of each Axolotl release.

Inputs: the Axolotl releases of VERSIONS (wheels; sdists before 0.17) from the package index, installed one after
the other with `--no-deps` into the throwaway venv of tools/schemagen.py together with the packages their config
modules import (pinned as the release's own requirements say, else at DEFAULT_PINS). tools/dump_pydantic_schema.py then prints, inside the venv,
`AxolotlInputConfig`'s JSON Schema, the argument models of the `axolotl.integrations` plugins and what
`validate_config` does with deprecated and removed keys. Outputs: one schema per release and
`axlint/schemas/axolotl/versions.json` (versions, build date of the release file, the DeepSpeed versions the
release allows, whether `validate_config` could be probed).

`python tools/gen_axolotl_schema.py` rewrites the files; `--check` exits 1 when a file on disk differs from what
would be written. Both need the package index (network); tests read the committed files only.
"""
from __future__ import annotations

import difflib
import re
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import schemagen  # noqa: E402

TARGET = schemagen.ROOT / "axlint" / "schemas" / "axolotl"
VERSIONS = ["0.12.2", "0.13.2", "0.14.0", "0.15.0", "0.16.1", "0.17.0", "0.18.0", "0.19.0"]
"""The newest patch release of each minor version from 0.12 on."""
DEFAULT_PINS = {
    "pydantic": "2.12.5", "transformers": "5.14.1", "accelerate": "1.13.0", "huggingface-hub": "1.17.0",
    "tokenizers": "0.22.2", "peft": "0.19.1", "typing-extensions": "4.15.0", "pyyaml": "6.0.3",
}
"""Versions of the imported packages a wheel does not pin exactly (the 0.18.0 pins)."""
UNPINNED = ["typing-inspection", "annotated-types", "addict", "pillow", "packaging", "numpy", "safetensors", "regex",
            "filelock", "fsspec", "tqdm", "psutil", "jinja2", "markupsafe", "sympy", "networkx", "mpmath", "httpx",
            "httpcore", "h11", "idna", "certifi", "anyio", "sniffio", "requests", "urllib3", "charset-normalizer"]
"""Pure-Python dependencies of the config modules whose version does not matter to the schema."""
FOLLOW_TRANSFORMERS = {"huggingface-hub", "tokenizers"}
"""Packages installed as the pinned transformers requires them when the release does not pin them exactly."""
PYDANTIC_CORE = {"2.12.5": "2.41.5", "2.11.7": "2.33.2", "2.11.9": "2.33.2", "2.10.6": "2.27.2"}
"""pydantic-core release each pydantic release requires."""
_DS_REQUIREMENT = re.compile(r"^deepspeed(?![-\w])\s*\(?([^;)]*)")


def download(version: str, folder: Path) -> Path:
    """Download axolotl `version` (no dependencies) into `folder`: a wheel, or for older releases the sdist."""
    subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "-d", str(folder),
                    f"axolotl=={version}"], check=True, stderr=subprocess.DEVNULL)
    return next(folder.glob(f"axolotl-{version}[-.]*"))


def _requirements(path: Path) -> tuple[list[str], str]:
    """(requirement lines, build date) of a wheel (METADATA) or an sdist (requirements.txt, PKG-INFO)."""
    if path.suffix == ".whl":
        with zipfile.ZipFile(path) as zf:
            info = next(i for i in zf.infolist() if i.filename.endswith(".dist-info/METADATA"))
            lines = [line.split(":", 1)[1].strip() for line in zf.read(info).decode().splitlines()
                     if line.startswith("Requires-Dist:")]
            return lines, datetime(*info.date_time).date().isoformat()
    with tarfile.open(path) as tf:
        member = next(m for m in tf.getmembers() if m.name.count("/") == 1 and m.name.endswith("/requirements.txt"))
        text = tf.extractfile(member).read().decode()
        lines = [line.split("#")[0].strip() for line in text.splitlines() if line.split("#")[0].strip()]
        return lines, datetime.fromtimestamp(member.mtime, tz=timezone.utc).date().isoformat()


def release_facts(path: Path) -> tuple[list[str], list[str], str | None, str]:
    """(pins for the imported packages, packages to install as transformers requires them, DeepSpeed requirement,
    build date) from the release's requirements."""
    requires, built = _requirements(path)
    pins = dict(DEFAULT_PINS)
    exact = {}
    deepspeed = None
    for requirement in requires:
        name, _, rest = requirement.partition("==")
        key = name.strip().lower().replace("_", "-")
        if key in pins and rest:
            exact[key] = rest.split(";")[0].strip()
        match = _DS_REQUIREMENT.match(requirement)
        if match:
            deepspeed = match.group(1).strip() or None
    pins.update(exact)
    follow = sorted(FOLLOW_TRANSFORMERS - set(exact))
    pinned = [f"{k}=={v}" for k, v in pins.items() if k not in follow]
    pinned.append(f"pydantic-core=={PYDANTIC_CORE[pins['pydantic']]}")
    return pinned + UNPINNED, follow, deepspeed, built


def _mentioned(key: str, probe: dict, properties: dict) -> list[str]:
    """Config keys named by the error or warnings that talk about `key`, in order of appearance."""
    texts = [t for t in [probe.get("error") or "", *probe.get("warnings", [])] if key in t]
    words = re.findall(r"[a-z][a-z0-9_]*", " ".join(texts))
    return [w for w in dict.fromkeys(words) if w in properties and w != key]


def deprecation(probe: dict, prop: dict | None, properties: dict, version: str) -> dict | None:
    """The `x-axlint-deprecated` annotation for a probed key, or None when Axolotl takes it without a word.

    Keys that were not probed (validate_config did not import) but are flagged deprecated by pydantic or declared
    among the deprecated parameters get a plain "marked deprecated" note. Refused (validation raises): replacement
    only when the message names a key close to the old one. Moved (the value lands in another key): that key.
    Warned: the key the warning names, when it names one.
    """
    key = probe["key"]
    mentioned = _mentioned(key, probe, properties)
    # A true/false probe value that turns up in another key may be a flag derived from it (sdp_attention: true
    # also sets attn_decontaminates_packing: true): without the warning naming that key, it is no rename.
    derived = isinstance(probe.get("value"), bool)
    moved = [k for k in mentioned if k in probe.get("changed", [])] or (
        probe.get("changed", []) if len(probe.get("changed", [])) == 1 and not probe.get("kept") and not derived
        else [])
    if probe.get("error"):
        close = difflib.get_close_matches(key, mentioned, n=1, cutoff=0.6)
        falsy = probe.get("falsy_refused", True)
        return {"replacement": close[0] if close else None,
                "note": f"Axolotl {version} refuses to start when it is set" + ("" if falsy else " to a true value"),
                "refused": True, "refused_when_empty": falsy}
    if moved:
        warned = " with a warning" if probe.get("warnings") else ""
        return {"replacement": moved[0], "note": f"Axolotl {version} moves the value to `{moved[0]}`{warned}"}
    if probe.get("warnings"):
        return {"replacement": mentioned[0] if len(mentioned) == 1 else None,
                "note": f"Axolotl {version} warns when it is set"}
    if prop is not None and (prop.get("deprecated") or prop.get("x-owner")):
        pointed = _pointed_to(key, prop.get("x-deprecated-message", ""), properties)
        return {"replacement": None, "note": f"marked deprecated in Axolotl {version}"
                + (f", which points to `{pointed}` instead" if pointed else "")}
    return None


def _pointed_to(key: str, message: str, properties: dict) -> str | None:
    """The config key (or `parent.child` path) that a field's deprecation message names in backquotes, other than
    the field itself; None when it names none of them. Only named: the value may not carry over as it is (`fsdp`'s
    list of words is not an `fsdp_config` mapping), so it is no rename."""
    for name in re.findall(r"`([a-z][a-z0-9_.]*)`", message):
        if name != key and name.split(".", 1)[0] in properties:
            return name
    return None


def build(raw: dict) -> dict:
    """The reduced schema of one release from the dumper's output."""
    version = raw["version"]
    config = raw["config"]
    defs = config.get("$defs", {})
    properties = schemagen.reduce_schema(config, defs)["properties"]
    for prop, values in ((k, v["x-downstream-enum"]) for k, v in config["properties"].items()
                         if "x-downstream-enum" in v):
        branches = properties[prop].get("anyOf", [properties[prop]])
        nullable = any("null" in ([b["type"]] if isinstance(b.get("type"), str) else b.get("type", []))
                       for b in branches)
        properties[prop] = {**{k: v for k, v in properties[prop].items() if k not in ("type", "anyOf", "enum")},
                            "anyOf": [{"enum": values}, *[b for b in branches if "$ref" in b],
                                      *([{"type": "null"}] if nullable else [])]}
    if raw["datasets_by_rl"]:
        properties["datasets"]["x-axlint-items-by"] = {
            "key": "rl", "cases": {value: f"#/$defs/{model}" for value, model in raw["datasets_by_rl"].items()}}
    adapters = raw.get("adapters") or {}
    if adapters.get("builtin") is not None and "adapter" in properties:
        properties["adapter"]["x-axlint-adapters"] = {"builtin": adapters["builtin"],
                                                      "plugins": adapters.get("plugins", {})}
    for plugin in raw["plugins"]:
        args = plugin["schema"]
        plugin_defs = args.get("$defs", {})
        for name, schema in plugin_defs.items():
            defs.setdefault(name, schema)
        for key, prop in schemagen.reduce_schema(args, plugin_defs).get("properties", {}).items():
            properties.setdefault(key, {**prop, "x-axlint-plugin": plugin["plugin"]})
    probed = {p["key"] for p in raw["probes"]}
    unprobed = [{"key": k} for k, v in config["properties"].items()
                if k not in probed and (v.get("deprecated") or v.get("x-owner"))]
    for probe in raw["probes"] + unprobed:
        note = deprecation(probe, config["properties"].get(probe["key"]), properties, version)
        if note is not None:
            properties[probe["key"]] = {**properties.get(probe["key"], {}), "x-axlint-deprecated": note}
    reduced_defs = {name: schemagen.reduce_schema(schema, defs) for name, schema in sorted(defs.items())}
    for found in raw["prefixed"]:
        target = _model_def(config["properties"][found["parent"]], reduced_defs)
        prop = dict(target["properties"][found["field"]])
        if found["warnings"]:
            prop["x-axlint-deprecated"] = {"replacement": found["field"],
                                           "note": f"Axolotl {version} strips the prefix with a warning"}
        target["properties"].setdefault(found["key"], prop)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": f"https://axlint.invalid/schemas/axolotl/{version}.schema.json",
        "title": f"Axolotl {version} training config",
        "description": (f"AxolotlInputConfig of Axolotl {version} and its plugins' arguments (extra keys: "
                        f"{raw['extra']}). Generated by tools/gen_axolotl_schema.py; do not edit."),
        "type": "object",
        "additionalProperties": False,
        "x-axlint-extra": "ignore" if raw["extra"] == "ignore" else "forbid",
        "properties": properties,
        "$defs": reduced_defs,
    }


def _model_def(prop: dict, defs: dict) -> dict:
    ref = next(b["$ref"] for b in prop.get("anyOf", [prop]) if "$ref" in b)
    return defs[ref.rsplit("/", 1)[-1]]


def generate(version: str, folder: Path) -> tuple[dict, dict[str, Any]]:
    """(schema, index entry) of one release."""
    path = download(version, folder)
    pins, follow, deepspeed, built = release_facts(path)
    python = schemagen.install(pins)
    schemagen.install(schemagen.requirements_of(python, "transformers", set(follow)))
    schemagen.install_file(python, path)
    raw = schemagen.dump(python, "axolotl")
    entry = {"version": version, "file": f"{version}.schema.json", "built": built,
             "extra_keys": raw["extra"], "deepspeed_requirement": deepspeed,
             "probed": raw["probe_error"] is None}
    return build(raw), entry


def main(argv: list[str]) -> int:
    """Write (or with --check compare) every release's schema and the index; 1 when --check finds a difference."""
    check = "--check" in argv
    with tempfile.TemporaryDirectory() as folder:
        return schemagen.write_releases(TARGET, "axolotl", (generate(v, Path(folder)) for v in VERSIONS), check)

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
