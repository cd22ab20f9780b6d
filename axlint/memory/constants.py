"""Every constant of the analytic memory model, with its source.

Tags: [SRC] read in a source (named next to it), [INF] derived from sources, [CAL] chosen to fit the
published measurements listed in tests/test_memory_calibration.py.
"""

GIB = 2**30

# ---- bytes per element ---------------------------------------------------------------------------------------
BF16 = 2
FP32 = 4
INT8 = 1
# NF4: 4 bits + one fp32 absmax per 64 values = 4.5 bit; double quant: 8-bit absmax + fp32 per 256 blocks
# = 4 + 8/64 + 32/(64*256) = 4.127 bit [SRC QLoRA paper, Dettmers et al. 2023]
NF4_PACKED_BYTES = 4 / 8  # the packed 4-bit values alone; the rest of NF4_BYTES is the quantization state
NF4_BYTES = 4.5 / 8
NF4_DOUBLE_QUANT_BYTES = (4 + 8 / 64 + 32 / (64 * 256)) / 8

# ---- activations: bytes per token per layer, as multiples of a width [SRC transformers 5.x modelling code, ---
# torch autograd saved tensors; checked op by op on fake tensors, tests/test_simulate_vs_analytic.py]
# A norm keeps, besides its output (which the consuming Linear keeps, see below):
#   HF RMSNorm: the fp32 upcast of its input 4 (pow/mul save it) + the bf16 normalised tensor 2 that
#   `weight * x` saves for the weight gradient (only when the weight trains); Gemma multiplies by (1 + w) in
#   fp32: normalised 4; Liger RMSNorm saves its input 2 (+ fp32 rstd per row); nn.LayerNorm its input 2;
#   Cohere's bias-free LayerNorm upcasts like RMSNorm and multiplies in fp32 like Gemma: 4 (+ 4).
NORM_INPUT_BYTES = {"rmsnorm": 4, "gemma_rmsnorm": 4, "layernorm": 2, "layernorm_nobias": 4, "nonparametric": 2,
                    "liger": 2}
NORM_WEIGHT_GRAD_BYTES = {"rmsnorm": 2, "gemma_rmsnorm": 4, "layernorm_nobias": 4}
# The input of a Linear is kept once (2 bytes per element) when its weight trains, when it is a bitsandbytes
# layer (MatMul4Bit/MatMul8bitLt keep A whenever the input needs a gradient) or when a LoRA adapter reads it.
LINEAR_INPUT_BYTES = 2
# attention, per q width hq / kv width hkv / head:
#   sdpa (no mask: `is_causal` + `enable_gqa`, transformers' use_gqa_in_sdpa) and flash_attention_2 keep q, k, v
#   unrepeated and the output, which is also the o_proj input (the (b, s, a, d) output layout makes
#   `transpose(1, 2).contiguous()` a no-op): 2hq + 2hkv + 2hkv + 2hq, + fp32 log-sum-exp 4 per head
ATTN_FLASH_Q = 4
ATTN_FLASH_KV = 4
ATTN_LSE_PER_HEAD = 4
#   eager: q, K and V repeated to all heads (repeat_kv) 6hq; the output copy goes to o_proj like any Linear input
ATTN_EAGER_Q = 6
#   eager scores: fp32 softmax output 4 + its bf16 cast 2 per (head × key position): 6·a·s
EAGER_SCORES_BYTES = 6
# gated MLP keeps the gate output (SiLU input), the activation output and the up output: 6·I (the product is
# the down_proj input); Liger SwiGLU/GeGLU saves gate and up only: 4·I; a plain MLP keeps the fc1 output 2·I
MLP_GATED = 6
MLP_GATED_LIGER = 4
# Axolotl's fused LoRA MLP (``LoRA_MLP``) saves its input, the gate and the up outputs and recomputes the activation
# and the product in backward: 4·I besides the input [Axolotl 0.18.0 kernels/lora.py ``LoRA_MLP.forward``
# ``ctx.save_for_backward``; measured by benchmarks/memory/lora_kernel_probe.py, tests/test_oracle_lora_kernel_memory.py]
MLP_GATED_LORA_KERNEL = 4
MLP_PLAIN = 2
# xIELU (transformers activations.XIELUActivation, Apertus): without the optional CUDA package its Python form runs,
# which keeps the up_proj output 2, alpha_p·x 2, expm1(min(x, eps)) 2 and the where() condition 1: 7·I; when the
# two alphas train (a full fine-tune) the negative branch (expm1(·) − x) 2 as well [measured: autograd's saved
# tensors of XIELUActivation._xielu_python, transformers 5.24.0; the same code in 5.14.1, Axolotl 0.18.0's pin]
MLP_PLAIN_XIELU = 7
MLP_XIELU_TRAINED_ALPHAS = 2
# QuickGELU (x · sigmoid(1.702 x), transformers activations.QuickGELUActivation: CLIP's and Qwen2-VL's towers) keeps
# the fc1 output for both factors and the sigmoid's output: 4·I
MLP_PLAIN_QUICK_GELU = 4
# Gemma 4's per-layer input (Gemma4TextDecoderLayer): the gelu keeps the gate output 2·p and the product with the
# per-layer input keeps the activation output 2·p (its other factor is a slice of the packed per-layer inputs,
# held once for all layers); the product is the projection's input, counted as a Linear input
PER_LAYER_INPUT_BYTES = 4
# MoE (transformers 5 grouped_mm experts, per token): fp32 router softmax 4·E; per routed choice int64 top-k index,
# sort permutation, gather index, inverse permutation (4 × 8) + fp32 top-k weight 4 + bf16 routing weight 2 = 38;
# per choice the gate|up output 4·I_moe, activation output 2·I_moe and the down output 2·h (kept by the routing
# weight product); trained experts also keep the gathered input 2·h and the product 2·I_moe
ROUTER_BYTES_PER_EXPERT = 4
ROUTING_BYTES_PER_CHOICE = 38
MOE_GATE_UP_BYTES = 4
MOE_ACT_BYTES = 2
MOE_DOWN_OUT_BYTES = 2
# LoRA: a dropout (p > 0) keeps a 1-byte mask per input element and hands lora_A a dropped 2-byte copy
LORA_DROPOUT_MASK_BYTES = 1
LORA_DROPPED_COPY_BYTES = 2
# DoRA (peft_use_dora), per output element of each adapted Linear per token: PEFT's ``DoraLinearLayer.forward``
# scales the base output and the adapter output (both half precision) by the trainable magnitude, which keeps both
# for its gradient, 4; Axolotl's fused LoRA kernels keep their sum ("combined", ``LoRA_MLP`` / ``LoRA_QKV`` /
# ``LoRA_O``), 2 [PEFT 0.19.1 tuners/lora/dora.py, Axolotl 0.18.0 kernels/lora.py; measured by
# benchmarks/memory/lora_kernel_probe.py, tests/test_oracle_lora_kernel_memory.py]
DORA_PEFT_OUTPUT_BYTES = 4
DORA_KERNEL_OUTPUT_BYTES = 2
# ... and in the backward of Axolotl's kernels, the peak of what they allocate grows by 2 per output element with
# DoRA (the output gradient scaled by the magnitude, the products for the magnitude's gradient) [measured alike]
DORA_KERNEL_BACKWARD_BYTES = 2
# backward of one layer, besides its saved tensors: the gradient of the layer output 2·h and, at the gated MLP's
# product backward, the gradients of the product, the activation output and the up output together 6·I
# (plain MLP: 4·I; per routed choice of a MoE layer 6·I_moe + 2·h)
BACKWARD_OUTPUT_GRAD_BYTES = 2
BACKWARD_MLP_GATED = 6
# Liger's SwiGLU / GeGLU backward writes the gate and up gradients into the saved gate and up tensors in place
# (``tl.store(a_ptr, da_row)``, ``tl.store(b_ptr, db_row)``): only the product's gradient 2·I is new
# [SRC linkedin/Liger-Kernel src/liger_kernel/ops/swiglu.py ``_swiglu_backward_kernel``, ops/geglu.py
# ``_geglu_tanh_backward_kernel``]
BACKWARD_MLP_GATED_LIGER = 2
# Axolotl's LoRA MLP backward: the down projection's input gradient 2·I is new; its SwiGLU / GeGLU backward writes
# the activation and the gate and up gradients over that gradient and the saved gate and up in place
# [Axolotl 0.18.0 kernels/lora.py ``LoRA_MLP.backward``, kernels/swiglu.py ``swiglu_backward``]
BACKWARD_MLP_GATED_LORA_KERNEL = 2
BACKWARD_MLP_PLAIN = 4
# The same MLP when CUDA's autocast runs ReLU² in fp32 and 4-bit layers pass fp32 on (``TrainSetup.mlp_fp32``): the
# down projection's input gradient in bf16 2 and its fp32 cast 4, pow's backward product 4 and its result 4, less
# what is freed before the peak: 13 per intermediate unit [measured: ``--simulate`` with CUDA's fp32 policy
# (``simulate._cuda_fp32_ops``), Arcee AFM-4.5B QLoRA at 2 × 2048 tokens, 0.33 GiB above 8 at every depth from
# 8 layers; full depth 6.98 GiB against 6.93 allocated on an H200]
BACKWARD_MLP_PLAIN_FP32 = 13
# xIELU's Python form: the down_proj input's gradient and its own backward's temporaries, 9·I (7·I when the alphas
# train) [fitted to the fake-tensor simulation of the model code, transformers 5.24: Apertus-8B cut to 4 layers,
# LoRA and full, with and without checkpointing, within 1.5 %; tests/test_simulate_vs_analytic.py. PyTorch's
# MemTracker over the activation alone on CPU tensors reads 11·I above what its forward left, its output still held]
BACKWARD_MLP_XIELU = 9
BACKWARD_MLP_XIELU_TRAINED_ALPHAS = 7
# gradient checkpointing keeps the bf16 input of every decoder layer: 2·h per token per layer [SRC Korthikanti]
CHECKPOINT_BYTES = 2

# ---- logits and loss, bytes per token per vocab entry (× V) unless noted [INF transformers 5 loss/loss_utils.py] ----------
LOGITS_HF = 12         # at the start of backward: fp32 log_softmax output 4 (saved) + nll_loss grad 4 + log_softmax
                       # grad 4; the bf16 logits 2 and the fp32 upcast 4 are freed by then (the forward peaks at
                       # 2 + 4 + 4 = 10) [SRC transformers 5 loss_utils.ForCausalLMLoss: logits.float() then
                       # cross_entropy; checked on fake tensors]
LOGITS_HF_UNREUSED = 2  # reserved, not allocated: the freed bf16 logits block cannot hold the later fp32 4·T·V
                        # gradient requests and stays cached unused at the loss peak [INF from the allocation order
                        # + CUDACachingAllocator best-fit; overhead.loss_unreused_bytes]
LOGITS_LIGER_CE = 6    # Liger (non-fused) CE: transformers 5's causal-LM loss upcasts the bf16 logits 2 to fp32 4
                       # and calls torch's cross_entropy, which Liger replaces: its kernel writes the gradient into
                       # that fp32 copy and saves it; the backward's bf16 gradient 2 reuses the freed logits' room
                       # [SRC transformers 5 loss_utils.ForCausalLMLoss; liger-kernel 0.8.0 monkey_patch.py
                       # ``nn.functional.cross_entropy = liger_cross_entropy``, ops/cross_entropy.py; checked on fake
                       # tensors, tests/test_simulate.py]
LOGITS_EVAL = 10       # no backward: bf16 logits + fp32 copy + log_softmax
# per token per hidden unit (× h):
FLCE_BYTES_PER_HIDDEN = 13  # Liger FLCE slope 0.054 MB/token at H=4096 [SRC Liger benchmark CSV]
CCE_BYTES_PER_HIDDEN = 4    # CCE: grad of the input 2h + recompute blocks [INF; CCE paper: loss memory ≈ 1 MB]

# ---- optimizer step ------------------------------------------------------------------------------------------
# torch foreach AdamW builds exp_avg_sq.sqrt() for all params: +1 state-sized temporary [INF torch.optim.AdamW foreach path, torch/optim/adam.py]
FOREACH_TEMP_STATES = 1.0
# low-rank optimizers (GaLore / APOLLO / Q-GaLore): states of a rank-r projection, r=128..256 of h≈4096
LOW_RANK_STATE_FRACTION = 0.0625

# ---- DeepSpeed buffers (the bucket defaults are in axlint.facts, with the config they are read from) --------
# ZeRO-3 comm buffers: the IPG bucket + the torch.cat copy reduce_scatter_coalesced makes of it (×2), a third in
# flight with overlap_comm [SRC runtime/zero/stage3.py `__avg_scatter_grads`, runtime/comm/coalesced_collectives.py]
DS_BUCKET_COPIES = 2
DS_OVERLAP_EXTRA_COPIES = 1
# ZeRO-1/2: one IPG bucket reduced in place, a second with overlap_comm [SRC DeepSpeed 0.19.8
# runtime/zero/stage_1_and_2.py `setup_buckets`, `average_tensor`]
DS_ZERO12_BUCKET_COPIES = 1

# ---- overheads [SRC Stas Bekman ml-engineering] ----------------------------------------
# CUDA context + cuBLAS/cuDNN workspaces and kernels (lazy loading), outside PyTorch's allocator: 0.74 GiB per
# process measured by NVML after the training steps of all 13 runs without DeepSpeed of
# benchmarks/memory/results-NVIDIA_H200-2026-11-26.md (torch 2.11, CUDA 13, driver 580); 0.5–1.0 GiB elsewhere
CUDA_CONTEXT_GIB = 0.75
NCCL_GIB = 1.0           # 0.5–1.5 GiB per rank once torch.distributed + NCCL is up
# DeepSpeed starts an NCCL process group on one GPU too: the 6 DeepSpeed runs of
# benchmarks/memory/results-NVIDIA_H200-2026-11-26.md held 1.29 GiB outside PyTorch's allocator, the others 0.74
NCCL_SINGLE_GIB = 0.55
# caching-allocator reserved/allocated − 1: the mean over the 35 runs of our own GPU tables (H200: 20 runs, median
# 7.8 %, mean 10.3 %; H100: 15 runs, median 9.3 %, mean 9.6 %; range 1.6-25.4 %,
# benchmarks/memory/results-*-2026-11-26.json), which also fits the calibration set best (published.py) [CAL]
ALLOCATOR_SLACK = 0.10
ALLOCATOR_SLACK_EXPANDABLE = 0.05  # expandable_segments:True maps pages instead of splitting blocks [CAL]
# What must stay resident when an allocation fails: the caching allocator first frees every cached block it can and
# retries (c10/cuda/CUDACachingAllocator.cpp, release_cached_blocks before raising), so only the allocated bytes and
# the free pieces of segments still in use remain; that fragmentation is taken as the slack left when segments are
# mapped page by page (expandable segments), the same 5 %.
RESIDENT_FRAGMENTATION = ALLOCATOR_SLACK_EXPANDABLE

# ---- solver --------------------------------------------------------------------------------------------------
SAFETY_MARGIN = 0.05          # fit within 95 % of the GPU
GC_STEP_TIME = 4 / 3          # recompute = one more forward: (fwd + bwd + fwd) / (fwd + bwd), bwd ≈ 2 fwd
ACT_OFFLOAD_STEP_TIME = 1.45  # offloaded checkpoints: GC + host transfers [INF]
OPTIMIZER_OFFLOAD_STEP_TIME = 1.6  # ZeRO-Offload CPU Adam step on the critical path [INF; axolotl PR #791 "2x"]
PARAM_OFFLOAD_STEP_TIME = 2.5
GPUS_PER_NODE = 8  # ranks that share one host's RAM (and its offloaded states) in a multi-GPU run
ZERO_STEP_TIME = {0: 1.0, 1: 1.0, 2: 1.02, 3: 1.15}  # more collectives per step [INF]
EAGER_TO_FLASH_STEP_TIME = 0.85
UTILISATION_HALF_TOKENS = 1024  # GPU utilisation ≈ T / (T + T½) tokens per micro batch [INF]
