"""Run Axolotl itself on the example configs of published.yaml and read the GPU memory it logs: the reference that
the README figures and axlint's estimate are both compared with.

    python benchmarks/memory/axolotl_reference.py --out DIR [--only ROW_ID ...] [--steps 3] [--timeout S]
        [--deadline S] [--max-params B] [--scale-down]

`axlint validate` measures axlint's own training loop (the model Axolotl would load, PEFT's LoRA, random token
ids). Axolotl's run differs from it in ways that loop does not reproduce: its trainer, its data collator, its
auto-enabled LoRA kernels (Axolotl 0.18.0 ``utils/schemas/config.py`` ``check_auto_enable_lora_kernels`` turns
``lora_mlp_kernel``, ``lora_qkv_kernel``, ``lora_o_kernel`` and ``lora_embedding_kernel`` on for a LoRA or QLoRA run
on one GPU, under DDP or under FSDP2, unless 8-bit LoRA, remote code or an architecture that declares them
unsupported), its plugins. Where a README figure disagrees with both the estimate and `axlint validate`, this run
says which of the two is right.

For each published.yaml row with a ``config_file`` (an Axolotl example), in DIR/<row id>/:

  model/        the row's architecture as Axolotl loads it (axlint's catalog, ``Architecture.build_config``), with
                random weights saved in bf16, and a word-level tokenizer of ``vocab_size`` words that holds every
                token the config names (``special_tokens``, ``tokens``), so that Axolotl adds none and resizes
                nothing (``synthetic_vocabulary``);
  data.jsonl    texts of random words for Axolotl's ``completion`` type (``dataset_rows``): for a packed config,
                rows shorter than sequence_len, which multipack fills to micro_batch_size × sequence_len tokens; for
                an unpacked one, rows of sequence_len − 2 words (with BOS and EOS the longest that Axolotl keeps),
                the full-length case the estimate sizes;
  axolotl.yaml  the example with only what a run without network or the example's dataset needs changed
                (``reference_config``), and each change listed in the results;

then ``python -m axolotl.cli.train axolotl.yaml`` in a process of its own. Axolotl logs at every step
``memory/max_active``, ``memory/max_allocated`` and ``memory/device_reserved``: PyTorch's peak counters since the
previous log, which it then resets, so the first step's figures include the model load (Axolotl 0.18.0
``core/trainers/base.py`` ``log``, ``utils/bench.py`` ``gpu_memory_usage_all``); those are the figures the README
sentences "This config uses about X GiB VRAM" were read from. Results: DIR/axolotl-reference.json and .md, per row
the README figure, Axolotl's peaks (the maximum over the steps, and the first step's), and axlint's estimate of the
unchanged example on the GPU that ran.

``--scale-down`` checks the plumbing on a machine without a GPU: the architecture shrunk to two small layers
(``axlint.validate.scaling.scale_down``), and what needs CUDA (4/8-bit loads and optimizers, Cut Cross-Entropy and
Liger, FlashAttention, Axolotl's Triton LoRA kernels, bf16) turned off, each change listed. It measures no memory.

Axolotl and its dependencies must be importable by ``sys.executable`` (benchmarks/memory/README.md lists the wheels a
GPU machine without a package index needs); axlint is read from this checkout.
"""
from __future__ import annotations

import argparse
import ast
import copy
import datetime as dt
import importlib.util
import json
import os
import random
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any, Iterable, Mapping

import yaml

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
CORPUS = ROOT / "fixtures" / "axolotl"
GIB = 2**30

DROPPED_KEYS = (
    # network, hub and trackers
    "hub_model_id", "hub_strategy", "hub_revision", "push_dataset_to_hub", "push_to_hub", "hf_use_auth_token",
    "wandb_project", "wandb_entity", "wandb_watch", "wandb_name", "wandb_run_id", "wandb_log_model",
    "mlflow_tracking_uri", "mlflow_experiment_name", "comet_api_key", "comet_project_name", "use_tensorboard",
    # the example's own data, tokenizer and checkpoints
    "test_datasets", "pretraining_dataset", "chat_template", "chat_template_jinja", "default_system_message",
    "tokenizer_config", "tokenizer_type", "tokenizer_use_fast", "tokenizer_legacy", "tokenizer_use_mistral_common",
    "base_model_config",
    "processor_type", "resume_from_checkpoint", "lora_model_dir", "auto_resume_from_checkpoints",
    # saving and evaluation
    "saves_per_epoch", "save_steps", "save_total_limit", "save_first_step", "save_only_model",
    "evals_per_epoch", "eval_steps", "eval_strategy", "eval_table_size", "eval_max_new_tokens", "do_bench_eval",
    "eval_causal_lm_metrics", "load_best_model_at_end", "metric_for_best_model", "greater_is_better",
)
"""Keys a reference run leaves out: they name the network, the example's dataset, tokenizer or checkpoints, or
saving and evaluation, none of which the training step's memory depends on."""

SPECIAL_DEFAULTS = {"bos_token": "<s>", "eos_token": "</s>", "pad_token": "<pad>", "unk_token": "<unk>"}

CUDA_ONLY_PLUGINS = ("cut_cross_entropy", "liger")
CPU_OPTIMIZERS = {"adamw_bnb_8bit": "adamw_torch", "paged_adamw_8bit": "adamw_torch",
                  "paged_adamw_32bit": "adamw_torch", "adamw_torch_fused": "adamw_torch", "adamw_8bit": "adamw_torch"}

MEMORY_KEYS = {"max_active_gib": "memory/max_active (GiB)", "max_allocated_gib": "memory/max_allocated (GiB)",
               "max_reserved_gib": "memory/device_reserved (GiB)"}


# ---------------------------------------------------------------------------------------------------- the config


def reference_config(raw: Mapping[str, Any], *, model_dir: Path, data_file: Path, work: Path, steps: int,
                     corpus: Path = CORPUS, scale_down: bool = False,
                     flash_attn: bool = True,
                     overrides: Mapping[str, Any] | None = None) -> tuple[dict[str, Any], list[str]]:
    """The example config `raw` as the reference run trains it, and one note per change.

    Changed: base_model (the local random-weight model), datasets (the synthetic ``completion`` set), the paths
    under `work`, ``max_steps`` = `steps` with ``logging_steps`` 1 (one memory log per step), no checkpoint
    (``save_strategy: "no"``) and no evaluation (``val_set_size`` 0); the keys of ``DROPPED_KEYS``; a DeepSpeed
    file named relative to Axolotl's repository is read from the vendored corpus. ``trust_remote_code`` is turned
    off: the model is built from transformers' own class. With `scale_down`, also what needs CUDA
    (``cpu_changes``); without the flash-attn package (`flash_attn` False), FlashAttention becomes sdpa
    (``sdpa_changes``). `overrides` (``--set``) are written last, each one listed."""
    cfg = copy.deepcopy(dict(raw))
    notes: list[str] = []
    dropped = [k for k in DROPPED_KEYS if cfg.get(k) is not None]
    for key in DROPPED_KEYS:
        cfg.pop(key, None)
    if dropped:
        notes.append("left out: " + ", ".join(dropped))
    if cfg.pop("trust_remote_code", None):
        notes.append("trust_remote_code off: the model is built from transformers' own class")
    cfg.update(base_model=str(model_dir), datasets=[{"path": str(data_file), "ds_type": "json", "type": "completion"}],
               dataset_prepared_path=str(work / "prepared"), output_dir=str(work / "out"), max_steps=steps,
               num_epochs=1, logging_steps=1, save_strategy="no", val_set_size=0)
    deepspeed = cfg.get("deepspeed")
    if isinstance(deepspeed, str) and not Path(deepspeed).is_absolute():
        local = corpus / deepspeed
        if not local.is_file():
            raise FileNotFoundError(f"deepspeed: {deepspeed} is not in {corpus}")
        cfg["deepspeed"] = str(local)
    if scale_down:
        notes += cpu_changes(cfg)
    elif not flash_attn:
        notes += sdpa_changes(cfg)
    for key, value in (overrides or {}).items():
        cfg[key] = value
        notes.append(f"{key}: {json.dumps(value)} (--set)")
    return cfg, notes


FLASH_ATTN_KEYS = ("flash_attention", "flash_attn_cross_entropy", "flash_attn_rms_norm", "flash_attn_fuse_mlp")
"""Config keys that import the flash-attn package."""


def sdpa_changes(cfg: dict[str, Any]) -> list[str]:
    """On a GPU machine without the flash-attn package, run FlashAttention's configs with PyTorch's sdpa (in
    place), and say so: ``flash_attention`` and flash-attn's fused options off, ``attn_implementation``
    ``flash_attention_2``/``_3`` -> ``sdpa``. A packed batch then takes PyTorch's own variable-length flash
    kernel, whose memory is FlashAttention's (no score matrix); an adapter run keeps its embeddings in bf16 with
    either (Axolotl 0.18.0 ``loaders/model.py`` ``_configure_embedding_dtypes``)."""
    flash = bool(cfg.get("flash_attention")) or str(cfg.get("attn_implementation", "")).startswith("flash_attention")
    notes = [f"{key} off (no flash-attn package)" for key in FLASH_ATTN_KEYS if cfg.pop(key, None)]
    if flash:
        notes.append(f"attn_implementation {cfg.get('attn_implementation') or 'flash_attention_2'} -> sdpa")
        cfg["attn_implementation"] = "sdpa"
    return notes


def cpu_changes(cfg: dict[str, Any]) -> list[str]:
    """Turn off in `cfg` (in place) what needs CUDA, and say what was changed: 4/8-bit loads and experts quantized on
    load (QLoRA becomes LoRA), bitsandbytes and fused optimizers, the Cut Cross-Entropy and Liger plugins,
    FlashAttention and sdpa (a packed batch goes to PyTorch's varlen flash kernel, CUDA only: eager instead),
    Axolotl's Triton LoRA kernels, bf16/fp16 (fp32 on the CPU)."""
    notes = []
    quantized = [key for key in ("load_in_4bit", "load_in_8bit", "quantize_moe_experts") if cfg.pop(key, None)]
    if quantized:
        notes.append(f"{', '.join(quantized)} off")
    if cfg.get("adapter") == "qlora":
        cfg["adapter"] = "lora"
        notes.append("adapter qlora -> lora")
    if (opt := cfg.get("optimizer")) in CPU_OPTIMIZERS:
        cfg["optimizer"] = CPU_OPTIMIZERS[opt]
        notes.append(f"optimizer {opt} -> {cfg['optimizer']}")
    plugins = [p for p in cfg.get("plugins") or [] if not any(name in p for name in CUDA_ONLY_PLUGINS)]
    if plugins != list(cfg.get("plugins") or []):
        notes.append("Cut Cross-Entropy and Liger plugins off")
        cfg["plugins"] = plugins
    for key in [k for k in cfg if k.startswith("liger_") or k == "cut_cross_entropy"]:
        cfg.pop(key)
    for key in (*FLASH_ATTN_KEYS, "xformers_attention", "torch_compile"):
        if cfg.pop(key, None):
            notes.append(f"{key} off")
    if cfg.get("attn_implementation", "eager") != "eager":  # packed sdpa takes PyTorch's varlen flash kernel
        notes.append(f"attn_implementation {cfg['attn_implementation']} -> eager")
        cfg["attn_implementation"] = "eager"
    from axlint.facts import LORA_KERNEL_FLAGS

    for key in LORA_KERNEL_FLAGS:
        cfg[key] = False
    notes.append("Axolotl's Triton LoRA kernels off")
    for key in ("bf16", "fp16", "tf32"):
        cfg.pop(key, None)
    cfg["fp32"] = True
    notes.append("fp32 instead of bf16/fp16")
    return notes


# ---------------------------------------------------------------------------------------------------- tokens


def named_tokens(raw: Mapping[str, Any]) -> dict[str, str]:
    """The special tokens the tokenizer must already hold for Axolotl to add none: the config's ``special_tokens``
    (bos, eos, pad, unk; SPECIAL_DEFAULTS for the others) and each string of ``tokens``, as {role or the token: the
    token}."""
    special = raw.get("special_tokens") or {}
    out = {role: str(special.get(role) or default) for role, default in SPECIAL_DEFAULTS.items()}
    for token in raw.get("tokens") or []:
        out.setdefault(str(token), str(token))
    return out


def synthetic_vocabulary(vocab_size: int, named: Mapping[str, str], model_config: Mapping[str, Any]) -> dict[str, int]:
    """A word -> id vocabulary of exactly `vocab_size` entries: each named token at the id the model's config gives
    its role (``bos_token_id``, ``eos_token_id`` (the first of a list), ``pad_token_id``), the others at the top ids,
    every other id the word ``w<id>``."""
    if len(set(named.values())) > vocab_size:
        raise ValueError(f"{len(set(named.values()))} named tokens do not fit a vocabulary of {vocab_size}")
    ids: dict[str, int] = {}
    for role in ("bos", "eos", "pad"):
        value = model_config.get(f"{role}_token_id")
        value = value[0] if isinstance(value, list) and value else value
        token = named.get(f"{role}_token")
        if isinstance(value, int) and 0 <= value < vocab_size and token and token not in ids \
                and value not in ids.values():
            ids[token] = value
    top = vocab_size - 1
    for token in dict.fromkeys(named.values()):
        if token in ids:
            continue
        while top in ids.values():
            top -= 1
        ids[token] = top
        top -= 1
    taken = set(ids.values())
    return {**{f"w{i}": i for i in range(vocab_size) if i not in taken}, **ids}


def dataset_rows(vocabulary: Mapping[str, int], *, sequence_len: int, packed: bool, tokens: int,
                 seed: int = 0) -> list[str]:
    """Texts of random plain words (one token each) holding at least `tokens` tokens: for a packed config rows of
    sequence_len/8 to sequence_len/2 words; unpacked, rows of sequence_len − 2 words, which with BOS and EOS fill
    sequence_len exactly."""
    words = [w for w in vocabulary if w.startswith("w")]
    rng = random.Random(seed)
    rows: list[str] = []
    total = 0
    while total < tokens:
        n = rng.randint(max(1, sequence_len // 8), max(1, sequence_len // 2)) if packed else sequence_len - 2
        rows.append(" ".join(rng.choice(words) for _ in range(n)))
        total += n
    return rows


def tokens_needed(raw: Mapping[str, Any], steps: int) -> int:
    """Tokens the data must hold for `steps` optimizer steps with room to spare: steps × accumulation × micro batch
    × sequence_len, twice over (multipack leaves packs partly empty, and drops the last)."""
    per_step = int(raw.get("gradient_accumulation_steps") or 1) * int(raw.get("micro_batch_size") or 1)
    return 2 * (steps + 1) * per_step * int(raw.get("sequence_len") or 2048)


# ---------------------------------------------------------------------------------------------------- Axolotl's log


_LOG_DICT = re.compile(r"\{[^{}]*'memory/max_allocated \(GiB\)'[^{}]*\}")


def memory_logs(text: str) -> list[dict[str, float]]:
    """Axolotl's per-step memory figures, in the order logged, from its console output (the dicts the trainer's
    ``log`` prints; the final summary line, which repeats the last step's figures after its reset, is left out)."""
    out = []
    for match in _LOG_DICT.finditer(text):
        try:
            entry = ast.literal_eval(match.group(0))
        except (ValueError, SyntaxError):
            continue
        if "train_runtime" in entry:
            continue
        out.append({name: float(entry[key]) for name, key in MEMORY_KEYS.items() if key in entry})
    return out


def peaks(logs: list[dict[str, float]]) -> dict[str, float | None]:
    """The maximum of each figure over the steps, and the first step's (which includes the model load)."""
    out: dict[str, float | None] = {}
    for name in MEMORY_KEYS:
        values = [entry[name] for entry in logs if name in entry]
        out[name] = max(values) if values else None
        out[f"first_step_{name}"] = values[0] if values else None
    return out


# ---------------------------------------------------------------------------------------------------- one row


def prepare(row: Mapping[str, Any], work: Path, *, steps: int, scale_down: bool, device: str,
            max_params: float, flash_attn: bool = True,
            overrides: Mapping[str, Any] | None = None) -> tuple[Path, list[str]]:
    """Write the model, tokenizer, data and config of one row under `work`; return the config's path and notes."""
    from axlint.document import load_document
    from axlint.run import build_run
    from axlint.validate.runner import model_job

    doc = load_document(ROOT / row["config_file"])
    raw, run = doc.data, build_run(doc)
    if run.arch is None:
        raise ValueError(f"{row['config_file']}: base_model does not resolve to a catalog model")
    arch = run.arch
    if not scale_down and arch.total_params > max_params * 1e9:
        raise ValueError(f"{arch.model_id} has {arch.total_params / 1e9:.1f} B parameters, over --max-params "
                         f"{max_params:g} B (its random bf16 weights are written to disk)")
    model_type, config, _ = model_job(arch, "cpu" if scale_down else "cuda")
    vocab_size = int(config.get("vocab_size") or (config.get("text_config") or {}).get("vocab_size")
                     or arch.vocab_size)
    work.mkdir(parents=True, exist_ok=True)
    model_dir, data_file = work / "model", work / "data.jsonl"
    hf, named = model_config(model_type, config), named_tokens(raw)
    vocabulary = synthetic_vocabulary(vocab_size, named, hf.to_dict())
    write_model(model_dir, hf, vocabulary, named, device)
    rows = dataset_rows(vocabulary, sequence_len=int(raw.get("sequence_len") or 2048),
                        packed=bool(raw.get("sample_packing")), tokens=tokens_needed(raw, steps))
    data_file.write_text("".join(json.dumps({"text": text}) + "\n" for text in rows), encoding="utf-8")
    cfg, notes = reference_config(raw, model_dir=model_dir, data_file=data_file, work=work, steps=steps,
                                  scale_down=scale_down, flash_attn=flash_attn, overrides=overrides)
    path = work / "axolotl.yaml"
    path.write_text(yaml.safe_dump(cfg, sort_keys=False), encoding="utf-8")
    return path, notes


def model_config(model_type: str, config: Mapping[str, Any]) -> Any:
    """transformers' config object of the model (``axlint.training.model.hf_config``), its defaults filled in."""
    from axlint.training.model import hf_config

    try:
        return hf_config(model_type, config)
    except ValueError:
        raise ValueError(f"transformers has no model class for model_type {model_type!r} (the model's own code is "
                         "remote code, which a reference run does not load)") from None


def write_model(model_dir: Path, cfg: Any, vocabulary: Mapping[str, int], named: Mapping[str, str],
                device: str) -> None:
    """The model's config and random weights (built on `device`, saved in bf16; fp32 on the CPU) and the tokenizer."""
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    from axlint.training.model import model_class

    dtype = torch.float32 if device == "cpu" else torch.bfloat16
    with torch.device(device):
        model = model_class(cfg.model_type).from_config(cfg, dtype=dtype)
    model.save_pretrained(model_dir)
    del model
    tokenizer = Tokenizer(models.WordLevel(vocab=dict(vocabulary), unk_token=named["unk_token"]))
    tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    extra = [t for role, t in named.items() if role not in SPECIAL_DEFAULTS]
    PreTrainedTokenizerFast(tokenizer_object=tokenizer, additional_special_tokens=extra,
                            **{role: named[role] for role in SPECIAL_DEFAULTS}).save_pretrained(model_dir)


def train(config: Path, timeout: float) -> dict[str, Any]:
    """``python -m axolotl.cli.train CONFIG`` in its own process session (a timeout stops its children too), with
    Axolotl's telemetry off and the hub offline."""
    env = {**os.environ, "AXOLOTL_DO_NOT_TRACK": "1", "DO_NOT_TRACK": "1", "HF_HUB_OFFLINE": "1",
           "PYTHONUNBUFFERED": "1"}
    start = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "axolotl.cli.train", str(config)], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env=env, start_new_session=True,
                            cwd=config.parent)
    try:
        output, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        output, _ = proc.communicate()
        return {"status": "timeout", "seconds": round(time.monotonic() - start), "log": log_excerpt(output)}
    logs = memory_logs(output)
    oom = "OutOfMemoryError" in output or "CUDA out of memory" in output
    status = "ok" if proc.returncode == 0 and logs else "oom" if oom else "error"
    return {"status": status, "seconds": round(time.monotonic() - start), "steps": logs, **peaks(logs),
            **({} if status == "ok" else {"log": log_excerpt(output)})}


def log_excerpt(output: str, size: int = 4000) -> str:
    """The end of a failed run's output, without the dispatcher's listing of registered kernels that a PyTorch
    operator error prints."""
    return "\n".join(line for line in output.splitlines() if " registered at " not in line)[-size:]


def estimate(row: Mapping[str, Any], memory_gib: float | None) -> dict[str, Any]:
    """axlint's estimate of the unchanged example on one GPU of `memory_gib` (the README row's hardware when None)."""
    from benchmarks.memory import published

    hardware = f"1x{memory_gib:.1f}GiB" if memory_gib else row["hardware"]
    e = published.estimate_row({**row, "hardware": hardware})
    return {"hardware": hardware, "peak_allocated_gib": round(e.peak_allocated / GIB, 2),
            "peak_reserved_gib": round(e.peak_reserved / GIB, 2), "peak_device_gib": round(e.peak_device / GIB, 2)}


def environment() -> dict[str, Any]:
    """The GPU (name, memory) and the versions of the packages that shape the run."""
    from importlib.metadata import PackageNotFoundError, version

    import torch

    out: dict[str, Any] = {"gpu": None, "memory_gib": None, "versions": {}}
    if torch.cuda.is_available():
        props = torch.cuda.get_device_properties(0)
        out.update(gpu=props.name, memory_gib=round(props.total_memory / GIB, 1))
    for name in ("axolotl", "torch", "transformers", "peft", "accelerate", "bitsandbytes", "cut-cross-entropy",
                 "liger-kernel", "deepspeed"):
        try:
            out["versions"][name] = version(name)
        except PackageNotFoundError:
            continue
    return out


# ---------------------------------------------------------------------------------------------------- results


def write_results(results: list[dict[str, Any]], env: Mapping[str, Any], out: Path, how: Mapping[str, Any]) -> Path:
    """DIR/axolotl-reference.json and .md."""
    date = dt.date.today().isoformat()
    payload = {"date": date, "environment": dict(env), "how": dict(how), "results": results}
    (out / "axolotl-reference.json").write_text(json.dumps(payload, indent=1) + "\n", encoding="utf-8")
    lines = [f"# Axolotl's own memory logs — {env.get('gpu') or 'cpu'}, {date}", "",
             f"Each row: the example config trained by Axolotl for {how['steps']} steps (axolotl_reference.py); "
             "Axolotl's peak allocated and reserved over the steps (the first step includes the model load), the "
             "README's figure and axlint's estimate of the unchanged example on this GPU.", "",
             "| row | status | README (metric) | Axolotl allocated | Axolotl reserved | first step reserved "
             "| est. allocated | est. reserved | changes |", "|---|---|---|---|---|---|---|---|---|"]

    def cell(value: Any) -> str:
        return "-" if value is None else str(value)

    for r in results:
        a, e = r.get("axolotl") or {}, r.get("estimate") or {}
        lines.append(f"| {r['id']} | {a.get('status', r.get('status'))} | {cell(r.get('readme_gib'))} "
                     f"({r.get('readme_metric')}) | {cell(a.get('max_allocated_gib'))} | "
                     f"{cell(a.get('max_reserved_gib'))} | {cell(a.get('first_step_max_reserved_gib'))} | "
                     f"{cell(e.get('peak_allocated_gib'))} | {cell(e.get('peak_reserved_gib'))} | "
                     f"{'; '.join(r.get('notes', []))} |")
    versions = ", ".join(f"{k} {v}" for k, v in env.get("versions", {}).items())
    lines += ["", f"{env.get('gpu') or 'No GPU'}; {versions}."]
    path = out / "axolotl-reference.md"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def selected_rows(only: Iterable[str] | None, example_paths: Iterable[str] = ()) -> list[dict[str, Any]]:
    """published.yaml's rows with an Axolotl example config (``config_file``), or the ones named in `only`, then a
    row without a README figure for each corpus example of `example_paths` (``--example``)."""
    from benchmarks.memory.published import load_rows

    extra = [{"id": Path(path).stem, "config_file": path} for path in example_paths]
    missing = [r["config_file"] for r in extra if not (ROOT / r["config_file"]).is_file()]
    if missing:
        raise SystemExit(f"no such example: {', '.join(missing)}")
    if extra and not only:
        return extra
    examples = [r for r in load_rows() if r.get("config_file")]
    if not only:
        return examples
    by_id = {r["id"]: r for r in examples}
    missing = [name for name in only if name not in by_id]
    if missing:
        raise SystemExit(f"not a published.yaml row with a config_file: {', '.join(missing)}")
    return [by_id[name] for name in only] + extra


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True, help="work folder; the results are written there")
    ap.add_argument("--only", nargs="*", help="published.yaml row ids (default: every row with a config_file)")
    ap.add_argument("--example", nargs="*", default=[], metavar="PATH",
                    help="also run these corpus examples (paths from the repository root), with no README figure")
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--timeout", type=float, default=900, help="seconds for one row's Axolotl run")
    ap.add_argument("--deadline", type=float, default=None, help="start no row after this many seconds")
    ap.add_argument("--max-params", type=float, default=10, help="skip models over this many billion parameters")
    ap.add_argument("--scale-down", action="store_true", help="a plumbing check on the CPU (no memory measured)")
    ap.add_argument("--set", nargs="*", type=override, default=[], metavar="KEY=VALUE",
                    help="write KEY (a YAML value) into every row's config, e.g. lora_qkv_kernel=false")
    args = ap.parse_args(argv)
    args.set = dict(args.set)
    start = time.monotonic()
    device = "cpu" if args.scale_down else "cuda"
    env = environment()
    flash_attn = importlib.util.find_spec("flash_attn") is not None
    args.out.mkdir(parents=True, exist_ok=True)
    results: list[dict[str, Any]] = []
    how = {"steps": args.steps, "scale_down": args.scale_down, "set": args.set}
    for row in selected_rows(args.only, args.example):
        result: dict[str, Any] = {"id": row["id"], "config_file": row["config_file"],
                                  "readme_gib": row.get("measured_gib"), "readme_metric": row.get("metric")}
        if args.deadline is not None and time.monotonic() - start > args.deadline:
            result["status"] = "not run (deadline)"
        else:
            try:
                config, result["notes"] = prepare(row, args.out / row["id"], steps=args.steps,
                                                  scale_down=args.scale_down, device=device,
                                                  max_params=args.max_params, flash_attn=flash_attn,
                                                  overrides=args.set)
            except (ValueError, FileNotFoundError) as exc:
                result["status"] = "not run: " + textwrap.shorten(str(exc), 300)
            else:
                result["axolotl"] = train(config, args.timeout)
                result["status"] = result["axolotl"]["status"]
                if not args.scale_down:
                    result["estimate"] = estimate(row, env.get("memory_gib"))
                _remove_weights(args.out / row["id"] / "model")
        results.append(result)
        write_results(results, env, args.out, how)
        print(f"{row['id']}: {result['status']}", flush=True)
    return 0 if all(r["status"] == "ok" for r in results) else 1


def override(text: str) -> tuple[str, Any]:
    """``KEY=VALUE`` -> (KEY, VALUE read as YAML)."""
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"{text!r} is not KEY=VALUE")
    return key, yaml.safe_load(value)


def _remove_weights(model_dir: Path) -> None:
    """Delete a row's random weights once trained (an 8B model is 16 GB of disk)."""
    for path in model_dir.glob("*.safetensors"):
        path.unlink()


if __name__ == "__main__":
    sys.exit(main())
