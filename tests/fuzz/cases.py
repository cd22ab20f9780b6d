"""Seeded fuzz cases: hostile variants of the vendored corpus, built deterministically from (seed, index).

A case is a small folder of files (the config under test, and the DeepSpeed file or other files it points at) and
the name of the entry file. The same (seed, index) always gives the same bytes, so any failure can be replayed
and reduced. Four families of mutation, one or two per case:

* value: a key the checks read (or any key of the file) gets a value of the wrong type or an odd spelling:
  bools, nulls, lists, maps, NaN/inf, huge numbers, ``'2.5e'``, ``'4 # note'``, lone surrogates, long strings;
* structure: YAML 1.1 spellings, anchors and merge keys around the DeepSpeed block, tabs, CRLF, CR-only line
  breaks, one or two BOMs, unicode keys, deep nesting, truncation at a random offset, many typo'd keys;
* deepspeed: the ``deepspeed:`` path is missing, absolute, circular, too long, a folder, a training YAML, a binary
  file, a JSON with comments and trailing commas, or a JSON whose values are mutated;
* name: the entry's file name is unicode, has spaces, or holds bytes that are not UTF-8.
"""
from __future__ import annotations

import copy
import json
import math
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import yaml

from tests.corpus import CORPUS, corpus_files

YAML_SEEDS = tuple(CORPUS / p for p in corpus_files() if p.suffix != ".json")
DS_SEEDS = tuple(CORPUS / p for p in corpus_files() if p.suffix == ".json")

READ_KEYS = (
    "base_model", "base_model_config", "model_type", "sequence_len", "eval_sequence_len", "micro_batch_size",
    "eval_batch_size", "gradient_accumulation_steps", "batch_size", "num_epochs", "max_steps", "learning_rate",
    "adapter", "lora_r", "lora_alpha", "lora_target_modules", "lora_target_linear", "lora_modules_to_save",
    "unfrozen_parameters", "load_in_4bit", "load_in_8bit", "bf16", "fp16", "tf32", "gradient_checkpointing",
    "gradient_checkpointing_kwargs", "flash_attention", "sdp_attention", "attn_implementation", "sample_packing",
    "eval_sample_packing", "pad_to_sequence_len", "plugins", "liger_fused_linear_cross_entropy", "liger_rms_norm",
    "cut_cross_entropy", "deepspeed", "fsdp", "fsdp_config", "fsdp_version", "optimizer", "lr_scheduler",
    "weight_decay", "max_grad_norm", "special_tokens", "tokens", "datasets", "test_datasets", "val_set_size",
    "eval_strategy", "evals_per_epoch", "saves_per_epoch", "chat_template", "hardware", "world_size",
    "context_parallel_size", "tensor_parallel_size", "rl", "trl", "output_dir", "resume_from_checkpoint",
    "torch_compile", "activation_offloading", "dataset_prepared_path", "tokenizer_type", "overrides_of_model_config",
)
DS_KEYS = ("zero_optimization", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps",
           "train_batch_size", "bf16", "fp16", "optimizer", "scheduler", "gradient_clipping")
ZERO_KEYS = ("stage", "offload_optimizer", "offload_param", "reduce_bucket_size", "stage3_prefetch_bucket_size",
             "stage3_param_persistence_threshold", "stage3_max_live_parameters", "contiguous_gradients",
             "overlap_comm", "sub_group_size", "stage3_gather_16bit_weights_on_model_save")

HOSTILE: tuple[Any, ...] = (
    True, False, None, 0, -1, 1, 3, 10**30, -(10**30), 0.5, 1e309, -1e309, math.nan, "", " ", "auto", "none",
    "yes", "2.5e", "4 # note", "1e-4", "2e", "0x10", "3.0", "4.5", [], {}, [1, 2], ["a"], [None], {"a": 1},
    {"": None}, {"stage": "3"}, "q_proj", ".*", "[", "\ud83d", "é" * 3, "x" * 5000, "a/b" * 400, "\x00", "\t",
    "~", [[[]]], [{"path": "x"}], {"device": "cpu"}, "cpu", "nvme", "nan", "-inf",
)
"""Values of every type the loaders can produce, and the odd spellings people write."""

TYPO_KEYS = ("micro_batch_sise", "sequnce_len", "gradient_acumulation_steps", "learnig_rate", "lora_rr",
             "num_epoch", "optimzer", "flash_atention", "sample_pakcing", "bf61")


@dataclass
class Case:
    """One fuzz case: files to write under a fresh folder (relative name -> bytes) and the entry to check."""

    seed: int
    index: int
    source: str
    entry: str
    files: dict[str, bytes] = field(default_factory=dict)
    mutations: list[str] = field(default_factory=list)
    links: dict[str, str] = field(default_factory=dict)
    """Symbolic links to create: name -> target (relative or absolute)."""

    @property
    def label(self) -> str:
        return f"seed={self.seed} index={self.index} {self.source} [{', '.join(self.mutations)}]"

    def write(self, folder: Path) -> Path:
        """Write the files into `folder` and return the entry's path (a name holding surrogate escapes is written
        as the bytes they stand for, the way Python maps undecodable file names)."""
        for name, data in self.files.items():
            path = folder / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        for name, target in self.links.items():
            (folder / name).symlink_to(target)
        return folder / self.entry


def _hostile(rng: random.Random) -> Any:
    """A fresh copy of a hostile value (the constants are never shared into a case, so no case can alter them)."""
    return copy.deepcopy(rng.choice(HOSTILE))


def _load_yaml(data: bytes) -> Any:
    try:
        return yaml.safe_load(data.decode("utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError, RecursionError):
        return None


def _dump_yaml(data: Any) -> bytes:
    text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=120)
    return text.encode("utf-8", "surrogatepass")


def _paths(data: Any, prefix: tuple = ()) -> list[tuple]:
    """Every key path in a loaded tree (maps and lists), depth-first."""
    out: list[tuple] = []
    if isinstance(data, dict):
        for key, value in data.items():
            out.append(prefix + (key,))
            out += _paths(value, prefix + (key,))
    elif isinstance(data, list):
        for i, value in enumerate(data[:8]):
            out.append(prefix + (i,))
            out += _paths(value, prefix + (i,))
    return out


def _set(data: Any, path: tuple, value: Any) -> None:
    for part in path[:-1]:
        data = data[part]
    data[path[-1]] = value


# ------------------------------------------------------------------------------------------------ mutations
Mutation = Callable[[random.Random, Case], str]


def value_of_read_key(rng: random.Random, case: Case) -> str:
    """A key the checks read gets a hostile value (set even when the file did not have it)."""
    data = _load_yaml(case.files[case.entry])
    if not isinstance(data, dict):
        return "value:skipped"
    key, value = rng.choice(READ_KEYS), _hostile(rng)
    data[key] = value
    case.files[case.entry] = _dump_yaml(data)
    return f"value:{key}={value!r:.30}"


def value_anywhere(rng: random.Random, case: Case) -> str:
    """Any key or list item of the file gets a hostile value."""
    data = _load_yaml(case.files[case.entry])
    paths = _paths(data)
    if not paths:
        return "value:skipped"
    path, value = rng.choice(paths), _hostile(rng)
    _set(data, path, value)
    case.files[case.entry] = _dump_yaml(data)
    return f"value:{'.'.join(map(str, path))}={value!r:.30}"


def inline_deepspeed(rng: random.Random, case: Case) -> str:
    """The DeepSpeed block written inline, with hostile values in it, sometimes through an anchor and merge key."""
    ds = json.loads(rng.choice(DS_SEEDS).read_text(encoding="utf-8"))
    zero = ds.setdefault("zero_optimization", {})
    if isinstance(zero, dict) and rng.random() < 0.7:
        zero[rng.choice(ZERO_KEYS)] = _hostile(rng)
    if rng.random() < 0.5:
        ds[rng.choice(DS_KEYS)] = _hostile(rng)
    data = _load_yaml(case.files[case.entry])
    if not isinstance(data, dict):
        return "inline-ds:skipped"
    data.pop("deepspeed", None)
    text = _dump_yaml(data).decode("utf-8", "surrogatepass")
    block = json.dumps(ds, ensure_ascii=False)
    if rng.random() < 0.5:
        text = f"ds_base: &ds {block}\n" + text + "deepspeed:\n  <<: *ds\n  train_micro_batch_size_per_gpu: auto\n"
        case.files[case.entry] = text.encode("utf-8", "surrogatepass")
        return "inline-ds:merge-key"
    case.files[case.entry] = (text + f"deepspeed: {block}\n").encode("utf-8", "surrogatepass")
    return "inline-ds:flow"


def deepspeed_path(rng: random.Random, case: Case) -> str:
    """`deepspeed:` names something hostile."""
    data = _load_yaml(case.files[case.entry])
    if not isinstance(data, dict):
        return "ds-path:skipped"
    kind = rng.choice(("missing", "absolute", "circular", "too-long", "folder", "yaml", "binary", "commented-json",
                       "mutated-json", "dev-null", "symlink-loop", "empty", "nested-long"))
    ds_seed = rng.choice(DS_SEEDS).read_bytes()
    target = "ds.json"
    if kind == "missing":
        target = "nowhere/ds.json"
    elif kind == "absolute":
        target = "/nonexistent"
    elif kind == "circular":
        target = case.entry
    elif kind == "too-long":
        target = "d" * 5000 + ".json"
    elif kind == "nested-long":
        target = "/".join(["deep"] * 900 + ["ds.json"])
    elif kind == "folder":
        target = "folder"
        case.files["folder/readme.txt"] = b"x"
    elif kind == "yaml":
        target = "other.yml"
        case.files[target] = YAML_SEEDS[0].read_bytes()
    elif kind == "binary":
        case.files[target] = bytes(rng.randrange(256) for _ in range(300))
    elif kind == "commented-json":
        text = ds_seed.decode("utf-8").replace("{", "{ // opening\n", 1).replace("}", ",}", 1)
        case.files[target] = text.encode("utf-8")
    elif kind == "mutated-json":
        ds = json.loads(ds_seed)
        paths = _paths(ds)
        if paths:
            _set(ds, rng.choice(paths), _hostile(rng))
        case.files[target] = json.dumps(ds, indent=rng.choice((None, 2, 4)), ensure_ascii=False).encode(
            "utf-8", "surrogatepass")
    elif kind == "dev-null":
        target = "/dev/null"
    elif kind == "symlink-loop":
        case.links["loop.json"] = "loop.json"
        target = "loop.json"
    elif kind == "empty":
        case.files[target] = b""
    data["deepspeed"] = target
    case.files[case.entry] = _dump_yaml(data)
    return f"ds-path:{kind}"


def text_layout(rng: random.Random, case: Case) -> str:
    """Line breaks, BOMs and tabs: CRLF, CR-only, one or two BOMs, a tab indent."""
    raw = case.files[case.entry]
    kind = rng.choice(("crlf", "cr", "bom", "double-bom", "tab", "mixed-eol"))
    if kind == "crlf":
        raw = raw.replace(b"\n", b"\r\n")
    elif kind == "cr":
        raw = raw.replace(b"\n", b"\r")
    elif kind == "bom":
        raw = b"\xef\xbb\xbf" + raw
    elif kind == "double-bom":
        raw = b"\xef\xbb\xbf\xef\xbb\xbf" + raw
    elif kind == "tab":
        lines = raw.split(b"\n")
        i = rng.randrange(len(lines))
        lines[i] = b"\t" + lines[i]
        raw = b"\n".join(lines)
    else:
        lines = raw.split(b"\n")
        raw = b"".join(line + rng.choice((b"\n", b"\r\n")) for line in lines)
    case.files[case.entry] = raw
    return f"layout:{kind}"


def yaml11(rng: random.Random, case: Case) -> str:
    """YAML 1.1 scalars written in place of a value: yes/no/on/off, 1e3, 0o17, 1_000, sexagesimal, dates."""
    lines = case.files[case.entry].split(b"\n")
    keyed = [i for i, line in enumerate(lines) if b": " in line and not line.lstrip().startswith(b"#")]
    if not keyed:
        return "yaml11:skipped"
    i = rng.choice(keyed)
    word = rng.choice((b"yes", b"No", b"on", b"OFF", b"1e3", b"0o17", b"0x1F", b"1_000", b"1:30", b"2024-01-01",
                       b".inf", b"-.Inf", b".NaN", b"~", b"y", b"n", b"!!binary aGk=", b"!!set {a}", b"!!omap [a: 1]",
                       b"&x 1", b"*x"))
    lines[i] = lines[i].split(b": ", 1)[0] + b": " + word
    case.files[case.entry] = b"\n".join(lines)
    return f"yaml11:{word.decode()}"


def structure(rng: random.Random, case: Case) -> str:
    """Truncation, deep nesting, unicode keys, duplicated keys, many typo'd keys."""
    raw = case.files[case.entry]
    kind = rng.choice(("truncate", "deep", "unicode-key", "duplicate", "typos", "merge-top", "null-doc",
                       "multi-doc", "scalar-doc", "list-doc"))
    if kind == "truncate":
        raw = raw[: rng.randrange(len(raw) + 1)]
    elif kind == "deep":
        depth = rng.choice((50, 150, 199, 201, 400))
        raw += b"nested: " + b"[" * depth + b"1" + b"]" * depth + b"\n"
    elif kind == "unicode-key":
        raw += "ключ_😀: 1\n\ud83d_key: 2\n".encode("utf-8", "surrogatepass")
    elif kind == "duplicate":
        lines = [line for line in raw.split(b"\n") if line and not line.startswith((b" ", b"#", b"-"))]
        if lines:
            raw += b"\n" + rng.choice(lines) + b"\n"
    elif kind == "typos":
        count = rng.choice((1, 3, 20, 120))
        raw += b"\n" + b"".join(f"{rng.choice(TYPO_KEYS)}_{i}: {i}\n".encode() for i in range(count))
    elif kind == "merge-top":
        raw = b"defaults: &d\n  micro_batch_size: 2\n  sequence_len: 4096\n<<: *d\n" + raw
    elif kind == "null-doc":
        raw = b"~\n"
    elif kind == "multi-doc":
        raw += b"\n---\nbase_model: x\n"
    elif kind == "scalar-doc":
        raw = b"just a string\n"
    else:
        raw = b"- base_model: x\n- sequence_len: 2\n"
    case.files[case.entry] = raw
    return f"structure:{kind}"


def file_name(rng: random.Random, case: Case) -> str:
    """The entry's file name: unicode, spaces, or bytes that are not UTF-8 (a surrogate escape in Python)."""
    name = rng.choice(("конфиг 😀.yml", "with space.yaml", "bad-\udcff\udcfe.yml", "x" * 200 + ".yml",
                       "-dash.yml", "--select.yml"))
    case.files[name] = case.files.pop(case.entry)
    case.entry = name
    return f"name:{name[:20]!r}"


MUTATIONS: tuple[tuple[Mutation, int], ...] = (
    (value_of_read_key, 6), (value_anywhere, 4), (inline_deepspeed, 2), (deepspeed_path, 3), (text_layout, 2),
    (yaml11, 2), (structure, 3), (file_name, 1),
)
"""Each mutation and its weight."""


def make_case(seed: int, index: int) -> Case:
    """The case number `index` of the campaign `seed`: a corpus YAML with one to three mutations."""
    rng = random.Random(f"{seed}:{index}")
    source = rng.choice(YAML_SEEDS)
    case = Case(seed, index, str(source.relative_to(CORPUS)), "config.yml", {"config.yml": source.read_bytes()})
    functions = [m for m, _ in MUTATIONS]
    weights = [w for _, w in MUTATIONS]
    for mutation in rng.choices(functions, weights, k=rng.choice((1, 1, 2, 3))):
        if mutation is file_name and case.entry != "config.yml":
            continue
        try:
            case.mutations.append(mutation(rng, case))
        except RecursionError:  # a tree nested too deeply for PyYAML's dumper: the text stays as it was
            case.mutations.append(f"{mutation.__name__}:skipped")
    return case
