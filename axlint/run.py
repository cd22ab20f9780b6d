"""TrainingRun: the Axolotl config and the DeepSpeed config it references, loaded, located and resolved.

This is the one object every rule, the estimator, the solver, simulate and validate read. It finds and loads the
DeepSpeed file the way launch does (next to the YAML, then the working folder, then Axolotl's bundled
`deepspeed_configs/`), knows where every key is written, and resolves the run's facts once (`facts`, see
`axlint.facts` for the semantics and their upstream sources).
"""
from __future__ import annotations

import os
from dataclasses import dataclass, replace
from enum import Enum
from functools import cached_property, lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

from axlint.diagnostics import Span
from axlint.document import (
    BOM_IN_JSON,
    Document,
    DocumentError,
    KeyPath,
    load_document,
    starts_with_bom,
)
from axlint.facts import ZERO_ALIASES, RunFacts, resolve_facts
from axlint.mesh import implied_world
from axlint.hardware import default_hardware
from axlint.kind import ConfigKind, classify_data
from axlint.paths import expand_user, is_file
from axlint.schemas.validator import version_key

if TYPE_CHECKING:
    from axlint.memory.facts import MemoryFacts
    from axlint.schemas.validator import SchemaChoice, SchemaProblem

PACKAGE_DIR = Path(__file__).resolve().parent
STOCK_DEEPSPEED = PACKAGE_DIR / "data" / "deepspeed_stock"

@lru_cache(maxsize=None)
def axolotl_defaults(version: str | None = None) -> dict[str, Any]:
    """Defaults of every Axolotl key that declares one, read from the schema of Axolotl `version` (default: the
    release axlint checks against when nothing is asked for)."""
    from axlint.schemas.validator import load_schema

    schema = load_schema("axolotl", version)
    return {k: v["default"] for k, v in schema["properties"].items() if isinstance(v, dict) and v.get("default") is not None}


class DsSource(str, Enum):
    """Where the run's DeepSpeed config comes from."""

    FILE = "file"      # a JSON file of the user's (or the DeepSpeed file linted on its own)
    INLINE = "inline"  # a mapping under `deepspeed:` in the YAML
    STOCK = "stock"    # one of Axolotl's bundled `deepspeed_configs/`, which a fix must not edit


@dataclass
class TrainingRun:
    """One resolved run. `ds_prefix` is where the DeepSpeed mapping starts inside `deepspeed` (for inline dicts)."""

    axolotl: Document | None
    deepspeed: Document | None = None
    ds_prefix: KeyPath = ()
    ds_source: DsSource | None = None
    ds_error: DocumentError | None = None
    ds_reference: str | None = None
    world_size: int = 1
    world_size_assumed: bool = True
    hardware: Any = None
    model_config_path: Path | None = None
    schemas: "SchemaChoice | None" = None
    """The bundled schema versions the run is checked against (None: `default_choice()`)."""
    ds_error_path: Path | None = None
    """The DeepSpeed file that was found and could not be read (its AX000 finding goes there)."""

    @property
    def raw(self) -> dict[str, Any]:
        return self.axolotl.data if self.axolotl is not None else {}

    def axolotl_from(self, release: str) -> bool | None:
        """Whether the Axolotl release the run is checked against (``schemas``) is `release` or later; None when no
        release was chosen."""
        version = self.schemas.axolotl if self.schemas is not None else None
        return None if version is None else version_key(version) >= version_key(release)

    @cached_property
    def config(self) -> dict[str, Any]:
        """The Axolotl config with defaults, and `gradient_accumulation_steps` derived from `batch_size`."""
        if self.axolotl is None:
            return {}
        version = self.schemas.axolotl if self.schemas is not None else None
        cfg = {**axolotl_defaults(version), **{k: v for k, v in self.raw.items() if v is not None}}
        gas = self.facts.gradient_accumulation_steps
        if gas.key == ("batch_size",):
            cfg["gradient_accumulation_steps"] = gas.value
        return cfg

    @property
    def ds_raw(self) -> dict[str, Any] | None:
        if self.deepspeed is None:
            return None
        node = self.deepspeed.node(self.ds_prefix)
        data = self.deepspeed.data
        for part in self.ds_prefix:
            data = data[part]
        return data if node is not None and isinstance(data, dict) else None

    @cached_property
    def arch(self) -> Any:
        """The model architecture (None when unknown); resolution never touches the network."""
        from axlint.architectures import resolve_architecture

        model = self.raw.get("base_model_config") or self.raw.get("base_model")
        if not isinstance(model, str) and self.model_config_path is None:
            return None
        search = [self.axolotl.path.parent] if self.axolotl is not None else []
        return resolve_architecture(str(model or ""), model_config=self.model_config_path, search_paths=search)

    @cached_property
    def facts(self) -> RunFacts:
        """Every fact of the run, resolved once with the real loaders' semantics (axlint.facts)."""
        hidden = getattr(self.arch, "hidden_size", None) if self.axolotl is not None else None
        bf16 = getattr(self.hardware, "bf16", True)
        return resolve_facts(self.raw, self.ds_raw, world_size=self.world_size, bf16_capable=bf16 is not False,
                             hidden_size=hidden)

    @cached_property
    def memory(self) -> "MemoryFacts | None":
        """The memory facts (estimate and solver) of an Axolotl run whose architecture resolves; None otherwise."""
        from axlint.memory.facts import compute_facts

        return compute_facts(self)

    @cached_property
    def schema_problems(self) -> "list[SchemaProblem]":
        """Every problem the bundled Axolotl / DeepSpeed schemas find in the run's files (the schema rules' input)."""
        from axlint.schemas.validator import run_problems

        return run_problems(self)

    @property
    def ds(self) -> Mapping[str, Any] | None:
        """The DeepSpeed config as the HF Trainer hands it to `deepspeed.initialize` ("auto" filled)."""
        return self.facts.ds

    @property
    def zero_stage(self) -> int | None:
        """The ZeRO stage DeepSpeed runs (0 without DeepSpeed; None when the written stage is unreadable)."""
        return self.facts.zero_stage.value

    @property
    def ds_editable(self) -> bool:
        """The DeepSpeed config is text of the user's that a fix may edit: a file of theirs or the inline mapping."""
        return self.deepspeed is not None and self.ds_source in (DsSource.FILE, DsSource.INLINE)

    @property
    def documents(self) -> list[Document]:
        """The files this run reads: the YAML, and the DeepSpeed JSON when it is a file of its own."""
        own_ds = self.deepspeed if self.ds_source is DsSource.FILE and self.deepspeed is not self.axolotl else None
        return [d for d in (self.axolotl, own_ds) if d is not None]

    # ------------------------------------------------------------------------------------------- locations

    def ax_span(self, path: KeyPath, part: str = "key") -> tuple[Document, Span]:
        assert self.axolotl is not None
        return self.axolotl, self.axolotl.span(path, part)

    def ds_span(self, path: KeyPath, part: str = "key") -> tuple[Document, Span]:
        """Where a DeepSpeed key is written: in the JSON file, or at the YAML's `deepspeed:` line."""
        path = tuple(path)
        if self.ds_editable:
            node_path = self.ds_prefix + _written_path(self.ds_raw or {}, path)
            return self.deepspeed, self.deepspeed.span(node_path, part)
        return self.ax_span(("deepspeed",), "value")


def _written_path(ds: dict[str, Any], path: KeyPath) -> KeyPath:
    """The path as spelled in the file: a rule asks for a `stage3_*` key, the file may use the short alias."""
    if len(path) == 2 and path[0] == "zero_optimization":
        zero = ds.get("zero_optimization")
        if isinstance(zero, dict) and path[1] not in zero:
            for short, long in ZERO_ALIASES.items():
                if long == path[1] and short in zero:
                    return ("zero_optimization", short)
    return path



# ---------------------------------------------------------------------------------------------------- loading


def stock_deepspeed_names() -> list[str]:
    return sorted(p.name for p in STOCK_DEEPSPEED.glob("*.json"))


def build_run(doc: Document, *, kind: ConfigKind | None = None, world_size: int | None = None, hardware: Any = None,
              model_config_path: Path | None = None, texts: Mapping[Path, str] | None = None,
              host_memory_gib: float | None = None) -> TrainingRun:
    """A TrainingRun from a parsed document: an Axolotl config (its DeepSpeed file loaded) or a DeepSpeed config.

    `kind` is what the content says the document is (axlint.kind); without it, a JSON file or a mapping that
    classifies as DeepSpeed is taken for DeepSpeed and anything else for Axolotl."""
    if kind is None or kind is ConfigKind.OTHER:
        kind = ConfigKind.DEEPSPEED if doc.format == "json" or classify_data(doc.data).kind is ConfigKind.DEEPSPEED \
            else ConfigKind.AXOLOTL
    if kind is ConfigKind.DEEPSPEED:
        run = TrainingRun(axolotl=None, deepspeed=doc, ds_source=DsSource.FILE)
    else:
        run = TrainingRun(axolotl=doc, model_config_path=model_config_path)
        _attach_deepspeed(run, texts or {})
    distributed = run.deepspeed is not None or run.ds_error is not None or bool(run.raw.get("fsdp_config") or run.raw.get("fsdp"))
    if hardware is not None:
        run.hardware, run.world_size, run.world_size_assumed = hardware, hardware.count, bool(getattr(hardware, "assumed", False))
    elif world_size is not None:
        run.hardware = replace(default_hardware(distributed), count=world_size)
        run.world_size, run.world_size_assumed = world_size, False
    else:  # nothing told us: 1 GPU, 8 with DeepSpeed/FSDP, 80 GB cards (never the local GPUs: see hardware.py),
        # as many as the parallel sizes need
        assumed = default_hardware(distributed)
        run.hardware = replace(assumed, count=implied_world(run.raw, assumed.count))
        run.world_size = run.hardware.count
    if host_memory_gib is not None:
        run.hardware = replace(run.hardware, host_memory_gib=host_memory_gib)
    return run


def _attach_deepspeed(run: TrainingRun, texts: Mapping[Path, str]) -> None:
    """Load the `deepspeed:` reference; `texts` (by absolute path) overrides what is on disk, for the fixer."""
    ref = run.raw.get("deepspeed")
    if isinstance(ref, dict):
        run.deepspeed, run.ds_prefix, run.ds_source = run.axolotl, ("deepspeed",), DsSource.INLINE
        return
    if not isinstance(ref, str) or not ref.strip():
        return
    run.ds_reference = ref
    assert run.axolotl is not None
    ref_path = expand_user(ref)
    candidates = [ref_path] if ref_path.is_absolute() else [run.axolotl.path.parent / ref_path, Path.cwd() / ref_path]
    for cand in candidates:
        text = texts.get(Path(os.path.abspath(cand)))
        if text is None and not is_file(cand) and os.path.lexists(cand):
            run.ds_error = DocumentError(f"{cand}: not a regular file (a folder, device or FIFO); DeepSpeed needs a "
                                         "JSON file")
            return
        if text is not None or is_file(cand):
            try:
                if starts_with_bom(cand):
                    raise DocumentError(BOM_IN_JSON)
                run.deepspeed, run.ds_source = load_document(cand, text, json_only=True), DsSource.FILE
            except DocumentError as exc:
                how = "" if cand.suffix.lower() == ".json" else " (launch reads the DeepSpeed file with json.load)"
                run.ds_error = DocumentError(f"{cand}: {exc.message}{how}", exc.span)
                run.ds_error_path = cand
            return
    if ref_path.name in stock_deepspeed_names():
        text = (STOCK_DEEPSPEED / ref_path.name).read_text(encoding="utf-8")
        run.deepspeed, run.ds_source = load_document(Path(ref_path.name), text), DsSource.STOCK
        return
    run.ds_error = DocumentError(f"DeepSpeed config {ref!r} not found (looked next to the YAML and in the current folder)")
