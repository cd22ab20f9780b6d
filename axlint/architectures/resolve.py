"""Find the architecture of ``base_model``: explicit config.json, local folder, HF cache, catalog, (Hub)."""
from __future__ import annotations

import marshal
import os
import re
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable, Mapping

from axlint import datacache
from axlint.architectures.model import Architecture
from axlint.paths import expand_user, home, is_dir, is_file

CATALOG_PATH = Path(__file__).with_name("catalog.json")
HUB_URL = "https://huggingface.co/{repo}/resolve/main/config.json"
HUB_TIMEOUT_S = 10
# suffixes of quantized / converted mirrors that do not change the architecture
_MIRROR_SUFFIXES = ("-unsloth-bnb-4bit", "-bnb-4bit", "-bnb-8bit", "-4bit", "-8bit", "-gptq", "-awq", "-gguf", "-fp8")


def _read_json(path: Path) -> dict[str, Any] | None:
    """A config.json's mapping; None for anything else (not a regular file, unreadable, not JSON, over 1 MB)."""
    if not is_file(path):
        return None
    import json  # imported where JSON is read or written: its import compiles regexes, ~2 ms of a YAML check

    try:
        with path.open("rb") as fh:
            data = json.loads(fh.read(1_000_000))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


@lru_cache(maxsize=1)
def load_catalog() -> tuple[dict[str, Any], ...]:
    """The shipped catalog entries (``id``, ``aliases``, ``source``, ``config``, ``published_parameters``), all of
    them unpacked (a lookup unpacks only the one it finds: `catalog_match`)."""
    return tuple(_catalog_entry(i) for i in range(len(_catalog_index()[2])))


def _strip_mirror_suffix(name: str) -> str:
    for suffix in _MIRROR_SUFFIXES:
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


@lru_cache(maxsize=1)
def _catalog_index() -> tuple[dict[str, int], dict[str, int], tuple[bytes, ...]]:
    """Two lower-case indexes into the catalog, full ``org/name`` ids and bare names, and each entry marshalled on
    its own: a lookup unpacks the one entry it finds, not the whole catalog. Kept with the file's parse
    (`axlint.datacache`)."""
    full, bare, entries = datacache.load(CATALOG_PATH, "catalog-index", _index_catalog)
    return full, bare, tuple(entries)


def _index_catalog(raw: bytes) -> tuple[dict[str, int], dict[str, int], list[bytes]]:
    """The indexes of `_catalog_index` built from the catalog's JSON. A bare name that two different entries claim
    is dropped, so that it can never resolve to the wrong size."""
    models = datacache.parse_json(raw)["models"]
    full: dict[str, int] = {}
    bare: dict[str, int] = {}
    clash: set[str] = set()
    for i, entry in enumerate(models):
        for ident in (entry["id"], *entry["aliases"]):
            key = ident.lower()
            full[key] = i
            name = key.rsplit("/", 1)[-1]
            if bare.get(name, i) != i:
                clash.add(name)
            bare[name] = i
    for name in clash:
        del bare[name]
    return full, bare, [marshal.dumps(entry) for entry in models]


@lru_cache(maxsize=None)
def _catalog_entry(index: int) -> dict[str, Any]:
    """The catalog's entry number `index`, unpacked once."""
    return marshal.loads(_catalog_index()[2][index])


def catalog_match(model_id: str) -> tuple[dict[str, Any], str] | None:
    """The catalog entry of ``model_id`` and how it was found: case-insensitive on the full id, an alias, then on the
    bare name (any organisation: mirrors such as unsloth/, NousResearch/), with quantized-mirror suffixes
    (``-bnb-4bit``...) removed. ``how`` says which, in words for the user."""
    full, bare, _ = _catalog_index()
    key = model_id.strip().strip("/").lower()
    name = key.rsplit("/", 1)[-1]
    for candidate, stripped in ((key, False), (_strip_mirror_suffix(key), True)):
        if candidate in full:
            entry = _catalog_entry(full[candidate])
            if entry["id"].lower() == candidate:
                how = "its own entry" if not stripped else f"{entry['id']}, the name without its quantization suffix"
            else:
                how = f"{entry['id']}, listed as a mirror or variant of the same sizes"
            return entry, how
    for candidate in (name, _strip_mirror_suffix(name)):
        if candidate in bare:
            entry = _catalog_entry(bare[candidate])
            return entry, (f"{entry['id']}, matched by repository name only (another organisation's copy); pass "
                           "--model-config if its config.json differs")
    return None


def catalog_lookup(model_id: str) -> dict[str, Any] | None:
    """The catalog entry of ``model_id`` (``catalog_match``), or None."""
    found = catalog_match(model_id)
    return found[0] if found else None


_HOME_VARIABLES = ("HOME", "USERPROFILE", "HOMEDRIVE", "HOMEPATH")
"""What ``Path.home()`` reads (``os.path.expanduser``; without them, the user's passwd entry)."""


def hf_cache_dirs() -> list[Path]:
    """HF hub cache folders, in the order huggingface_hub uses: HF_HUB_CACHE, HF_HOME/hub, ~/.cache/huggingface/hub."""
    env = os.environ
    return list(_hf_cache_dirs(env.get("HF_HUB_CACHE"), env.get("HF_HOME"), tuple(map(env.get, _HOME_VARIABLES))))


@lru_cache(maxsize=8)
def _hf_cache_dirs(hub_cache: str | None, hf_home: str | None, home_env: tuple[str | None, ...]) -> tuple[Path, ...]:
    """``hf_cache_dirs`` for these values of HF_HUB_CACHE, HF_HOME and the home folder's variables (``home_env``):
    built once per environment, not once per config."""
    dirs = []
    if hub_cache:
        dirs.append(Path(hub_cache))
    if hf_home:
        dirs.append(Path(hf_home) / "hub")
    if (folder := home()) is not None:
        dirs.append(folder / ".cache" / "huggingface" / "hub")
    return tuple(dirs)


def _cached_config(model_id: str, roots: Iterable[Path]) -> Path | None:
    """``models--org--name/snapshots/<rev>/config.json``; the ref in ``refs/main`` wins, else the newest."""
    if "/" not in model_id:
        return None
    folder = "models--" + model_id.strip("/").replace("/", "--")
    for root in roots:
        repo = root / folder
        if not is_dir(repo):
            continue
        ref = repo / "refs" / "main"
        try:
            revision = ref.read_text(encoding="utf-8", errors="replace").strip() if is_file(ref) else ""
        except OSError:
            revision = ""
        if revision and is_file(candidate := repo / "snapshots" / revision / "config.json"):
            return candidate
        found = sorted(repo.glob("snapshots/*/config.json"), key=lambda p: p.stat().st_mtime, reverse=True)
        if found:
            return found[0]
    return None


def _fetch_hub_config(model_id: str) -> dict[str, Any] | None:
    """GET config.json from the Hub (only when the user asked for online resolution); HF_TOKEN if set."""
    import json
    import urllib.request  # only for --online: http.client/ssl cost ~25 ms at start-up

    if not re.fullmatch(r"[\w.-]+/[\w.-]+", model_id):
        return None
    request = urllib.request.Request(HUB_URL.format(repo=model_id), headers={"User-Agent": "axlint"})
    if os.environ.get("HF_TOKEN"):
        request.add_header("Authorization", f"Bearer {os.environ['HF_TOKEN']}")
    try:
        with urllib.request.urlopen(request, timeout=HUB_TIMEOUT_S) as response:  # noqa: S310 (https only)
            data = json.loads(response.read(1_000_000))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


@lru_cache(maxsize=256)
def _from_catalog(model_id: str) -> Architecture | None:
    """The catalog's Architecture of ``model_id``, built once per id (it is immutable, and its per-layer figures
    are cached on it)."""
    entry = catalog_lookup(model_id)
    if entry is None:
        return None
    return Architecture.from_config(model_id, "catalog", entry["config"], entry.get("published_parameters"))


def resolve_architecture(model_id: str, *, model_config: Path | str | None = None,
                         search_paths: Iterable[Path | str] = (), online: bool = False) -> Architecture | None:
    """Resolve ``model_id`` to an Architecture, first hit wins:

    1. ``model_config`` (an explicit config.json path, or a folder holding one) — source "model-config";
    2. ``model_id`` is a local folder with config.json — "local";
    3. the local HF cache (``search_paths`` first, then HF_HUB_CACHE, HF_HOME/hub, ~/.cache/huggingface/hub) —
       "hf-cache";
    4. the shipped catalog — "catalog";
    5. the Hub, only when ``online`` — "online".
    Returns None when nothing matches. Never touches the network unless ``online`` is true.
    """
    if model_config is not None:
        path = Path(model_config)
        data = _read_json(path / "config.json" if is_dir(path) else path)
        if data is not None:
            return Architecture.from_config(model_id, "model-config", data)
    local = expand_user(model_id)
    if is_dir(local) and (data := _read_json(local / "config.json")) is not None:
        return Architecture.from_config(model_id, "local", data)
    cached = _cached_config(model_id, [*map(Path, search_paths), *hf_cache_dirs()])
    if cached is not None and (data := _read_json(cached)) is not None:
        return Architecture.from_config(model_id, "hf-cache", data)
    if (arch := _from_catalog(model_id)) is not None:
        return arch
    if online and (data := _fetch_hub_config(model_id)) is not None:
        return Architecture.from_config(model_id, "online", data)
    return None
