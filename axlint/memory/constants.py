"""Every constant of the analytic memory model, with its source.

Tags as in shared/reference/memory-model.md: [SRC] read in a source, [INF] derived, [CAL] chosen to fit the
published measurements listed in tests/test_memory_calibration.py.
"""

GIB = 2**30

# ---- bytes per element ---------------------------------------------------------------------------------------
BF16 = 2
FP32 = 4
INT8 = 1
# NF4: 4 bits + one fp32 absmax per 64 values = 4.5 bit; double quant: 8-bit absmax + fp32 per 256 blocks
# = 4 + 8/64 + 32/(64*256) = 4.127 bit [SRC QLoRA paper, memory-model.md §1.1]
NF4_BYTES = 4.5 / 8
NF4_DOUBLE_QUANT_BYTES = (4 + 8 / 64 + 32 / (64 * 256)) / 8

# ---- activations, bytes per token per layer, as multiples of a width [INF memory-model.md §1.2] --------------
# HF LlamaRMSNorm upcasts: fp32 input 4h + normalised bf16 2h + output 2h = 8h; Gemma's (1 + w) fp32: 10h;
# Liger RMSNorm saves input + fp32 rstd (+ the output the next Linear keeps) = 4h; nn.LayerNorm in bf16 ≈ 4h.
NORM_BYTES = {"rmsnorm": 8, "gemma_rmsnorm": 10, "layernorm": 4, "nonparametric": 4, "liger": 4}
# With a frozen base (LoRA) a norm keeps its fp32 input and its output only: 6h (memory-model.md §1.2 LoRA).
NORM_BYTES_FROZEN = 6
# attention, per q-width unit hq / kv-width unit hkv (+ per head for fp32 log-sum-exp):
#   sdpa with repeat_kv: q_rot, repeated K, repeated V, output, transposed copy = 10·hq
#   flash_attention_2 / flex / sdpa-gqa kernels: q, k, v unrepeated + output = 4·hq + 4·hkv (+4·a lse)
ATTN_SDPA_Q = 10
ATTN_FLASH_Q = 4
ATTN_FLASH_KV = 4
ATTN_LSE_PER_HEAD = 4
# eager attention: fp32 softmax 4 + bf16 copy 2 bytes per (head × key position) per token: 6·a·s
EAGER_SCORES_BYTES = 6
QK_NORM_BYTES = 8  # per q/k width: HF RMSNorm pattern on q and k
# gated MLP keeps gate, act(gate), up, product = 8·I; Liger SwiGLU/GeGLU saves only gate, up (+ product) = 6·I;
# plain MLP keeps fc1 output + activation output = 4·I
MLP_GATED = 8
MLP_GATED_LIGER = 6
MLP_PLAIN = 4
# LoRA: frozen linears drop their saved inputs; with q,v-only adapters the MLP keeps 6·I and attention 8·hq
MLP_GATED_FROZEN = 6
ATTN_SDPA_Q_FROZEN = 8
# lora_dropout > 0: each adapted module keeps its dropped input (2 B) + mask (1 B) per input element
LORA_DROPOUT_BYTES = 3
# MoE router logits + softmax in fp32 per expert, and the gathered routed hidden copies (k·2h)
ROUTER_BYTES_PER_EXPERT = 8
MOE_GATHER_BYTES = 2
# gradient checkpointing keeps the bf16 input of every decoder layer: 2·h per token per layer [SRC Korthikanti]
CHECKPOINT_BYTES = 2

# ---- logits and loss, bytes per token per vocab entry (× V) unless noted [INF memory-model.md §1.3] ----------
LOGITS_HF = 14         # bf16 logits 2 + fp32 upcast 4 + log_softmax 4 + grads at backward start: 12–14 [INF];
                       # [CAL] 14: gpjt slope implies 11–12, Unsloth QLoRA fit 14–16, Liger e2e chart ≈ 20 (reserved)
LOGITS_BF16_CE = 6     # CE on bf16 logits without upcast (Liger benchmark slope 6.1·V)
LOGITS_LIGER_CE = 4    # Liger (non-fused) CE: bf16 logits + in-place bf16 grad
LOGITS_EVAL = 10       # no backward: bf16 logits + fp32 copy + log_softmax
CHUNKED_CE_CHUNKS = 8  # Axolotl chunked_cross_entropy default chunk count
# per token per hidden unit (× h):
FLCE_BYTES_PER_HIDDEN = 13  # Liger FLCE slope 0.054 MB/token at H=4096 [SRC Liger benchmark CSV]
CCE_BYTES_PER_HIDDEN = 4    # CCE: grad of the input 2h + recompute blocks [INF; CCE paper: loss memory ≈ 1 MB]

# ---- optimizer step ------------------------------------------------------------------------------------------
# torch foreach AdamW builds exp_avg_sq.sqrt() for all params: +1 state-sized temporary [INF memory-model.md §1.1]
FOREACH_TEMP_STATES = 1.0
# low-rank optimizers (GaLore / APOLLO / Q-GaLore): states of a rank-r projection, r=128..256 of h≈4096
LOW_RANK_STATE_FRACTION = 0.0625

# ---- DeepSpeed defaults (0.19.8 DeepSpeedZeroConfig) [SRC deepspeed.md §1.2, §4.2] ---------------------------
DS_REDUCE_BUCKET = 500_000_000
DS_ALLGATHER_BUCKET = 500_000_000
DS_PREFETCH_BUCKET = 50_000_000
DS_MAX_LIVE_PARAMETERS = 1_000_000_000
DS_PERSISTENCE_THRESHOLD = 100_000
DS_SUB_GROUP_SIZE = 1_000_000_000
# comm buffers: IPG bucket + reduce-scatter temp (×2), a third in flight with overlap_comm [INF deepspeed.md §4.3]
DS_BUCKET_COPIES = 2
DS_OVERLAP_EXTRA_COPIES = 1

# ---- overheads [SRC Stas Bekman ml-engineering; memory-model.md §1.5] ----------------------------------------
CUDA_CONTEXT_GIB = 1.0   # 0.5–1.0 GiB context on current torch (lazy loading) + cuBLAS/cuDNN workspaces, kernels
NCCL_GIB = 1.0           # 0.5–1.5 GiB per rank once torch.distributed + NCCL is up
# caching-allocator reserved/allocated − 1 near capacity: gpjt 1.14 near full, "typically 10–20 %" [CAL]
ALLOCATOR_SLACK = 0.15
ALLOCATOR_SLACK_EXPANDABLE = 0.05  # expandable_segments:True maps pages instead of splitting blocks [CAL]

# ---- solver --------------------------------------------------------------------------------------------------
SAFETY_MARGIN = 0.05          # fit within 95 % of the GPU
GC_STEP_TIME = 4 / 3          # recompute = one more forward: (fwd + bwd + fwd) / (fwd + bwd), bwd ≈ 2 fwd
ACT_OFFLOAD_STEP_TIME = 1.45  # offloaded checkpoints: GC + host transfers [INF]
OPTIMIZER_OFFLOAD_STEP_TIME = 1.6  # ZeRO-Offload CPU Adam step on the critical path [INF; axolotl PR #791 "2x"]
PARAM_OFFLOAD_STEP_TIME = 2.5
ZERO_STEP_TIME = {0: 1.0, 1: 1.0, 2: 1.02, 3: 1.15}  # more collectives per step [INF]
EAGER_TO_FLASH_STEP_TIME = 0.85
UTILISATION_HALF_TOKENS = 1024  # GPU utilisation ≈ T / (T + T½) tokens per micro batch [INF]
