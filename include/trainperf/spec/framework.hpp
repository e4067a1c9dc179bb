// Software profiles as data: which elementwise ops a framework fuses, how its
// optimizer runs, whether gradient sync overlaps backward, and the memory it holds
// beyond the model's own state. A user can define a profile of their own.
#pragma once

#include <array>
#include <string_view>
#include <utility>

#include "../core/catalog_lookup.hpp"
#include "../core/enum_set.hpp"
#include "../core/error.hpp"
#include "../core/units.hpp"
#include "attention_kernels.hpp"
#include "finetune.hpp"
#include "optimizer.hpp"
#include "precision.hpp"

namespace trainperf {

// What a framework holds on top of the model's own tensors (peak allocated). The
// framework profile owns these: cost/memory.hpp reads them from the profile, so every
// path (memory, fit, predict, plan) sees the same bytes.
struct memory_overheads {
    // Logits and loss: HF upcasts the logits to fp32 for the cross-entropy; besides
    // the logits themselves `loss_buffers` b·s·V buffers are live at the peak (the
    // log-softmax kept for backward and the gradient of the logits).
    bool fp32_logits = true;
    double loss_buffers = 2;
    // Dropout masks (1 B per element) are part of Korthikanti's 34·s·b·h; models
    // trained without dropout (LLaMA) keep none.
    bool dropout = true;
    // cuBLAS workspace: PyTorch defaults to 32 MiB on Hopper (":4096:8") and 8.125 MiB
    // before it (":4096:2:16:8"), CUDABlasHandlePool.cpp; the larger is the default.
    bytes workspace = mebibytes_of(32);
    // Temporary buffers of the backward pass not covered by the activation formula.
    bytes temporaries = bytes_of(0);
    // Gradient communication buckets when dp > 1 (bytes), plus a fraction of the
    // gradients duplicated into them (PyTorch DDP without gradient_as_bucket_view
    // copies every gradient into its buckets: 1.0).
    bytes gradient_buckets = bytes_of(0);
    double gradient_bucket_copy = 0.0;
    // Temporaries of the optimizer step, as a multiple of the local fp32 parameter
    // bytes (a per-tensor or foreach AdamW allocates intermediates; fused: ~0).
    double optimizer_temporaries = 0.0;
    // Caching-allocator overhead (reserved beyond allocated), a fraction of the peak.
    double fragmentation = 0.0;
    // Devices whose memory is shared with the CPU (Jetson): what the OS, the CPU side
    // of the training process and the desktop keep. An estimate, not a datasheet
    // number (Ubuntu + Python + PyTorch CPU side typically hold 1.5-3 GB).
    bytes host_reserve = gigabytes_of(2);
    // What the process cannot allocate on any device: the CUDA context (driver state,
    // kernel images of the libraries loaded) lives outside the framework's allocator.
    // ASSUMPTION: 500 MiB, the order PyTorch shows with CUDA 12 and lazy module loading
    // (it depends on the GPU, the driver and the libraries; measure it on yours).
    bytes cuda_context = mebibytes_of(500);
};

constexpr void validate(const memory_overheads& o) {
    // Every field finite: an infinite buffer would be a silent "does not fit".
    for (double v : {o.loss_buffers, o.workspace.value(), o.temporaries.value(), o.gradient_buckets.value(),
                     o.gradient_bucket_copy, o.optimizer_temporaries, o.host_reserve.value(), o.cuda_context.value()})
        require(v < 1e18, "memory_overheads", v, "must be finite (and below 1e18)");
    require(o.loss_buffers >= 0, "loss_buffers", o.loss_buffers, "must not be negative");
    require(o.workspace.value() >= 0, "workspace", o.workspace.value(), "must not be negative");
    require(o.temporaries.value() >= 0, "temporaries", o.temporaries.value(),
            "must not be negative");
    require(o.gradient_buckets.value() >= 0, "gradient_buckets", o.gradient_buckets.value(),
            "must not be negative");
    require(o.gradient_bucket_copy >= 0, "gradient_bucket_copy", o.gradient_bucket_copy,
            "must not be negative");
    require(o.optimizer_temporaries >= 0, "optimizer_temporaries", o.optimizer_temporaries,
            "must not be negative");
    require(o.fragmentation >= 0 && o.fragmentation < 1, "fragmentation", o.fragmentation,
            "must be in [0, 1)");
    require(o.host_reserve.value() >= 0, "host_reserve", o.host_reserve.value(),
            "must not be negative");
    require(o.cuda_context.value() >= 0, "cuda_context", o.cuda_context.value(), "must not be negative");
}

// What the host spends issuing work in eager mode (PyTorch runs every op from Python:
// the interpreter, the dispatcher, autograd's recording, the CUDA launch). Kernels are
// queued asynchronously, so a pass takes the larger of the GPU's time and the host's
// (cost/stage_pricer.hpp). Costs are in units of the host's bare op (host_spec::eager_op_time: one
// `y = x * 1.2` on a small CUDA tensor from Python, no autograd), so that one profile
// describes PyTorch and the system description its CPU.
struct eager_host_costs {
    // An op that launches a kernel, called from a module's Python with autograd
    // recording: 7 µs per op with requires_grad against 5 µs without on the same
    // CPU (PyTorch issue #41383, `y = 2*x`, 1M calls).
    double op = 1.4;
    // A matmul/addmm/bmm relative to an elementwise op (cuBLAS's handle, workspace and
    // heuristic on top of the dispatch). FITTED: the bare n = 128 fp16 matmul (its GPU
    // time a few % of it) over the bare elementwise op on the same host, RTX 3090 Ti
    // system (docs/validation.md, single GPU).
    double gemm = 2.4;
    // An op that launches nothing (view, permute, split, slicing): "x*x without grad
    // ≈ 2 µs ... approx half of it is python parsing overhead" against 5 µs for an op
    // with a launch (PyTorch issue #41383, maintainer's reply): ASSUMPTION 0.4.
    double view = 0.4;
    // One nn.Module call with the modeling code's Python around its ops (hook checks,
    // argument handling, HF's apply_chunking_to_forward). FITTED jointly with
    // backward_node on the BERT-large layer rows at batch 2, sequence 128 (forward;
    // forward+backward) of the RTX 3090 Ti, the ones its host bounds most clearly.
    double module = 2.76;
    // One autograd node in backward, its dispatch and bookkeeping (the engine is C++:
    // no Python). FITTED jointly with module (above).
    double backward_node = 3.90;
    // A kernel launched from the C++ backward: the CUDA launch without Python.
    // ASSUMPTION: half a bare op (the launch is 2-5 µs of a 5-20 µs op, Holistic Trace
    // Analysis docs, cuda_kernel_launch_stats.rst@0c2146a8).
    double backward_launch = 0.5;
    // A Python torch.autograd.Function's apply beyond the kernels its forward launches
    // (the context object, saving tensors, the Python forward's own code): 20.7 µs
    // median against 3.2 µs for calling the same function directly, 13 inputs and 2
    // outputs (PyTorch issue #189573): 17.4 µs, over issue #41383's 5 µs bare op. Also
    // charged for a call into a scripted (TorchScript) function from Python
    // (ASSUMPTION: the same Python-to-graph boundary).
    double function = 3.5;
    // Its backward: the engine takes the GIL, wraps the gradients and runs the Python
    // backward (its kernels counted apart). ASSUMPTION: the mirror of the forward's apply
    // (no separate measurement found).
    double function_backward = 3.5;
    // A torch.distributed collective called from Python (ProcessGroupNCCL: the work
    // object, its CUDA events, the stream waits and ncclAllReduce's own enqueue); the
    // Python autograd.Function around it, where the framework has one (Megatron's
    // mappings), is counted as a Function. ASSUMPTION: one op's worth, 1.4; PyTorch
    // issue #138773 profiled 89 µs of CPU per c10d all-reduce (torch 2.4, under the
    // profiler), which bounds it from above.
    double collective = 1.4;
    // One get or set of a generator's state from Python (torch.cuda.get_rng_state builds
    // a small CPU tensor; set_state copies one back; no kernel, no sync: PyTorch
    // aten/src/ATen/cuda/CUDAGeneratorImpl.cpp). ASSUMPTION: one bare op.
    double rng_state = 1.0;
    // A Transformer Engine module's own bookkeeping in forward beyond a module call, its
    // Function and its GEMM launch (prepare_forward/end_forward, the argument record,
    // quantizer and workspace set-up: TransformerEngine module/base.py@d0067d0d).
    // DERIVED: te.Linear's forward took 99.66 µs of CPU against 37.08 µs for
    // torch.nn.Linear on the same GB200 (BF16, hidden 2048, 8192 tokens; TransformerEngine
    // issue #2053), 2.69 torch Linears; a torch Linear here is module + op·gemm = 6.12
    // bare ops, so te.Linear is 16.45 = 2.76 (module) + 3.5 (function) + 3.36 (GEMM) +
    // 6.83.
    double library_module = 6.83;
    // Its backward beyond the Function's backward, the GEMM launches and the autograd
    // nodes. DERIVED: te.Linear BF16, 59.19 µs forward and 311.30 µs forward+backward on
    // GB200 (TransformerEngine PR #3523, before its changes): backward = 4.26 forwards =
    // 70.1 bare ops of the 16.45 above, less the engine's start of a one-module backward
    // (ASSUMPTION: one torch Linear, 6.12), the Function's backward (3.5), two GEMM
    // launches (1.0) and two nodes (7.8): 51.7.
    double library_module_backward = 51.7;

};

// What one layer of a framework's own implementation calls on the host per forward,
// besides the kernels the workload launches (counted from the ops): the framework's
// layer replaces the model's code (framework_profile::runs_model_code false). Counted in
// the framework's source (framework_profile comments). All zero: not described (the
// generic layer of workload/layer.hpp host_calls_per_layer is used).
struct layer_host_inventory {
    double modules = 0;           // nn.Module calls
    double views = 0;             // ops that launch nothing (view, transpose, split, no-op contiguous)
    double functions = 0;         // Python autograd.Functions, each with a Python backward
    double rotary_functions = 0;  // more of them when the model has rotary positions
    double scripted_calls = 0;    // scripted/compiled functions whose backward runs in C++
    double rng_forks = 0;         // RNG tracker forks (2 state gets and 2 sets each)
    double library_modules = 0;   // Transformer Engine modules (eager_host_costs::library_module)
    bool gradient_hooks = false;  // the data-parallel wrapper's Python hook per parameter in backward

    constexpr bool described() const {
        return modules > 0 || views > 0 || functions > 0 || rotary_functions > 0 || scripted_calls > 0 ||
               rng_forks > 0 || library_modules > 0 || gradient_hooks;
    }
};

// Host calls of one full-recompute checkpoint per layer (Megatron-LM
// megatron/mpu/random.py@28ba253f CheckpointFunction, lines 289-359; Megatron-Core's is the
// same): its Function and Python backward, 4 state gets and 4 sets of the CPU and CUDA
// generators and 2 of the RNG tracker's, and the re-entrant torch.autograd.backward
// that runs the layer's backward (ASSUMPTION: one Function backward's worth). The
// forward saves the CPU and CUDA states and copies the tracker's (3 calls); the
// backward makes the other 7. The recomputed forward is counted with the forward's calls.
inline constexpr double checkpoint_rng_calls_forward = 3;
inline constexpr double checkpoint_rng_calls_backward = 7;

constexpr void validate(const eager_host_costs& c) {
    for (const auto& [name, v] : {std::pair<const char*, double>{"framework.host.op", c.op},
                                  {"framework.host.gemm", c.gemm}, {"framework.host.view", c.view},
                                  {"framework.host.module", c.module},
                                  {"framework.host.backward_node", c.backward_node},
                                  {"framework.host.backward_launch", c.backward_launch},
                                  {"framework.host.function", c.function},
                                  {"framework.host.function_backward", c.function_backward},
                                  {"framework.host.collective", c.collective},
                                  {"framework.host.rng_state", c.rng_state},
                                  {"framework.host.library_module", c.library_module},
                                  {"framework.host.library_module_backward", c.library_module_backward}})
        require(v >= 0 && v <= 1000, name, v, "must be between 0 and 1000 bare ops");
}

constexpr void validate(const layer_host_inventory& l) {
    for (const auto& [name, v] : {std::pair<const char*, double>{"framework.layer_host.modules", l.modules},
                                  {"framework.layer_host.views", l.views},
                                  {"framework.layer_host.functions", l.functions},
                                  {"framework.layer_host.rotary_functions", l.rotary_functions},
                                  {"framework.layer_host.scripted_calls", l.scripted_calls},
                                  {"framework.layer_host.rng_forks", l.rng_forks},
                                  {"framework.layer_host.library_modules", l.library_modules}})
        require(v >= 0 && v <= 1000, name, v, "must be between 0 and 1000 calls per layer");
}

// The numeric constants below (traffic ratios, kernel counts, overlap share, per-step
// overhead, fragmentation) are ASSUMPTIONS, not measurements: only the megatron profile
// has been checked against published times (docs/validation.md); the others are
// priors that a measurement of the framework should replace.
struct framework_profile {
    std::string_view name = "custom";

    // --- which elementwise kernels exist (workload/layer.hpp turns these into ops) ---
    bool fused_softmax = false;       // scale + mask + softmax in one kernel (Megatron)
    bool fused_bias_gelu = false;     // bias + GELU in one kernel (Megatron)
    bool fused_bias_dropout_add = false;  // bias + dropout + residual add in one kernel
    bool flash_attention = false;     // attention core in one kernel, no s² tensor in memory
    // The fused attention kernel the software runs where the GPU has it
    // (spec/attention_kernels.hpp): PyTorch's SDPA runs FlashAttention-2 everywhere;
    // Transformer Engine runs a Hopper-native one (FlashAttention-3 or cuDNN) on Hopper.
    attention_kernel flash_kernel = attention_kernel::flash2;
    // Runs the model's own (Hugging Face) code op by op: its activation, attention and
    // norm as PyTorch launches them (model_code, activation_kind); otherwise the
    // framework's own layer (unfused ops are one kernel each).
    bool runs_model_code = false;
    bool head_layout_copies = false;  // split/merge-heads permute + contiguous copies (HF eager)
    double backward_traffic_ratio = 1.5;  // bytes of an elementwise backward / its forward
                                          // (reads output grad and saved input, writes input grad)

    // --- optimizer ---
    bool fused_optimizer = false;     // one multi-tensor kernel over all parameters
    // Every step scales every gradient in place before the update, whether or not the
    // norm exceeds the clip: PyTorch's clip_grad_norm_ multiplies by the clamped
    // coefficient "to avoid a `if clip_coef < 1:` conditional which can require a CPU <=>
    // device synchronization" (torch/nn/utils/clip_grad.py), which the Hugging Face
    // Trainer calls every step (max_grad_norm defaults to 1.0, transformers
    // src/transformers/training_args.py@00349ae8); DeepSpeed's unscale_and_clip_grads
    // multiplies by the combined loss and clip scale (deepspeed/runtime/zero/
    // stage_1_and_2.py). Megatron scales only when the norm exceeds the clip (clip_coeff
    // < 1.0 on a host-side norm, megatron/core/optimizer/clip_grads.py@d98e8a64).
    bool scales_gradients_every_step = false;
    double unfused_optimizer_passes = 2.5;  // extra traffic of a per-op optimizer loop vs fused
    int unfused_kernels_per_tensor = 8;     // Adam as separate mul_/add_/addcmul_/sqrt/div kernels

    // --- communication and schedule ---
    bool overlap_data_parallel_sync = false;  // bucketed all-reduce during backward (DDP)
    double overlappable_backward_fraction = 0.0;  // share of backward time that can hide sync
    bool fp32_gradient_accumulation = false;  // Megatron/DeepSpeed keep a fp32 main_grad
    // The sharded optimizer's parameter all-gather (ZeRO-1/2, Megatron's distributed
    // optimizer) runs bucket by bucket during the next forward instead of after the
    // optimizer step (Megatron-Core --overlap-param-gather).
    bool overlap_parameter_gather = false;
    // ZeRO-3 frees a unit's gathered parameters after its forward and gathers them again
    // for its backward (FSDP FULL_SHARD; FSDP2 fully_shard's reshard_after_forward=True,
    // torch/distributed/fsdp/_fully_shard/_fully_shard.py@0257dd1c). Off: they stay
    // gathered until the unit's backward, which needs no second all-gather (FSDP
    // SHARD_GRAD_OP; torchtitan's default with pipeline parallelism, "to avoid
    // per-microbatch all-gathers", torchtitan/distributed/fsdp.py@b5bcd76c).
    bool reshard_after_forward = true;
    // Tensor-parallel communication overlapped with the GEMMs it feeds or drains, the
    // GEMMs split into chunks (Transformer Engine's userbuffers, Megatron-Core
    // --tp-comm-overlap; needs sequence parallelism). cost/stage_pricer.hpp prices it.
    bool tensor_parallel_overlap = false;
    // --- what the software can run: validate(training_setup) refuses a layout that asks
    // for anything else (spec/setup.hpp require_framework_runs), and the planner and the
    // advice search only these. A profile says which software and version it describes.
    std::string_view software = "a custom framework profile";
    bool tensor_parallel = true;       // Megatron-style tensor parallelism (tp > 1)
    bool sequence_parallel = true;     // Megatron-style sequence parallelism (sp, with tp > 1)
    bool context_parallel = true;      // the sequence split over ranks, K and V passed around a ring (cp > 1)
    bool pipeline_parallel = true;     // pipeline stages (pp > 1), 1F1B
    bool interleaved_pipeline = true;  // virtual pipeline stages (interleave > 1)
    bool optimizer_offload = true;     // the optimizer step on the host, its state in host memory
    // Pipeline options: layers per first and last stage set apart from an even split
    // (Megatron-Core --decoder-first-pipeline-num-layers and
    // --decoder-last-pipeline-num-layers), and the zero-bubble schedule zb-h1
    // (spec/parallel.hpp pipeline_schedule).
    bool uneven_pipeline_split = false;
    bool zero_bubble_schedule = false;
    // The ZeRO stages the software offers (bit z: stage z; stage 0, plain data
    // parallelism, always), and whether it shards them over part of the data-parallel
    // ranks, replicating across (spec/parallel.hpp shard_group).
    unsigned zero_stages = 0b1111;
    bool hybrid_sharding = false;
    // What it trains with: the optimizers (spec/optimizer.hpp), the number recipes
    // (spec/precision.hpp) and the fine-tuning modes (spec/finetune.hpp) the software
    // runs, and of those optimizers the ones it runs on the host with optimizer offload.
    enum_set<optimizer_kind> optimizers = enum_set<optimizer_kind>::all();
    enum_set<precision_kind> precisions = enum_set<precision_kind>::all();
    enum_set<finetune_mode> finetune_modes = enum_set<finetune_mode>::all();
    enum_set<optimizer_kind> host_optimizers = enum_set<optimizer_kind>::all();
    seconds per_step_overhead = seconds_of(0.0);  // host-side work per optimizer step
    eager_host_costs host{};  // issuing ops from Python (every profile here is PyTorch eager)
    // What the framework's own layer calls on the host (when it does not run the model's
    // code); not described: the generic layer's calls.
    layer_host_inventory layer_host{};
    // Each layer's forward and backward captured in CUDA graphs and replayed, one launch
    // per pass instead of every kernel from Python (Megatron-Core --cuda-graph-impl
    // local|transformer_engine, megatron/core/transformer/cuda_graphs.py@d98e8a64: one
    // replay Function per layer, its static inputs copied in). Megatron-Core refuses it
    // with full recompute ("full recompute is only supported with full iteration CUDA
    // graph", transformer_config.py@d98e8a64) and with CPU offloading; ZeRO-3's
    // per-layer gathers are not captured either (spec/setup.hpp refuses those).
    bool cuda_graphs = false;

    // --- memory held beyond the model state and activations ---
    memory_overheads memory{};
};

// A profile's numbers must describe a real framework: counts bounded (the workload
// has one op per kernel), shares in [0, 1], times and ratios finite.
constexpr void validate(const framework_profile& fw) {
    validate(fw.memory);
    validate(fw.host);
    validate(fw.layer_host);
    require(fw.backward_traffic_ratio > 0 && fw.backward_traffic_ratio <= 16, "framework.backward_traffic_ratio",
            fw.backward_traffic_ratio, "must be in (0, 16]");
    require((fw.zero_stages & 1u) != 0 && fw.zero_stages <= 0b1111u, "framework.zero_stages", fw.zero_stages,
            "must offer stage 0 and no stage above 3");
    require(fw.unfused_optimizer_passes >= 1 && fw.unfused_optimizer_passes <= 16,
            "framework.unfused_optimizer_passes", fw.unfused_optimizer_passes, "must be in [1, 16]");
    require(fw.unfused_kernels_per_tensor >= 1 && fw.unfused_kernels_per_tensor <= 64,
            "framework.unfused_kernels_per_tensor", fw.unfused_kernels_per_tensor, "must be between 1 and 64");
    require(fw.overlappable_backward_fraction >= 0 && fw.overlappable_backward_fraction <= 1,
            "framework.overlappable_backward_fraction", fw.overlappable_backward_fraction, "must be in [0, 1]");
    require(!fw.optimizers.empty(), "framework.optimizers", "[]", "must name at least one optimizer");
    require(!fw.precisions.empty(), "framework.precisions", "[]", "must name at least one precision recipe");
    require(!fw.finetune_modes.empty(), "framework.finetune_modes", "[]", "must name at least one fine-tuning mode");
    require(fw.per_step_overhead.value() >= 0 && fw.per_step_overhead.value() <= 3600,
            "framework.per_step_overhead_s", fw.per_step_overhead.value(), "must be in [0, 3600] s");
}

// HF Transformers Trainer on PyTorch eager: unfused elementwise ops, attention
// probabilities materialised over s², per-tensor optimizer unless adamw-fused, DDP
// overlaps the all-reduce with backward in 25 MB buckets. What it runs
// (huggingface/transformers@00349ae8 src/transformers/training_args.py, `fsdp`:
// "full_shard", "shard_grad_op", "hybrid_shard", "hybrid_shard_zero2", "offload"): data
// parallelism (DDP), FSDP's ZeRO-2 (shard_grad_op) and ZeRO-3 (full_shard), hybrid
// sharding; no ZeRO-1, no pipeline stages, no Megatron-style tensor or sequence
// parallelism. Tensor and context parallelism through Accelerate's ParallelismConfig
// (DTensor; huggingface/accelerate@0422db7e src/accelerate/parallelism_config.py) and
// FSDP's CPU offload (parameters and gradients on the host, the optimizer step there:
// pytorch/pytorch@0aafd810 torch/distributed/fsdp/api.py CPUOffload) are other
// mechanisms than the ones this engine prices, and are not offered.
inline constexpr framework_profile pytorch_eager_profile{
    .name = "pytorch-eager",
    .fused_softmax = false,
    .fused_bias_gelu = false,
    .fused_bias_dropout_add = false,
    .flash_attention = false,
    .runs_model_code = true,
    .head_layout_copies = true,
    .fused_optimizer = false,
    .scales_gradients_every_step = true,
    .overlap_data_parallel_sync = true,
    .overlappable_backward_fraction = 0.8,
    .fp32_gradient_accumulation = false,
    .software = "the Hugging Face Trainer on PyTorch (DDP, FSDP; transformers@00349ae8)",
    .tensor_parallel = false,
    .sequence_parallel = false,
    .context_parallel = false,
    .pipeline_parallel = false,
    .interleaved_pipeline = false,
    .optimizer_offload = false,
    .zero_stages = 0b1101,  // DDP; FSDP SHARD_GRAD_OP (ZeRO-2) and FULL_SHARD (ZeRO-3)
    // FSDP's HYBRID_SHARD (FSDP2: a 2-D device mesh, replicate x shard).
    .hybrid_sharding = true,
    // The Trainer's optimizers (TrainingArguments.optim, OptimizerNames in
    // transformers@00349ae8 src/transformers/training_args.py: sgd, adamw_torch,
    // adamw_torch_fused, adafactor, lion_32bit, adamw_bnb_8bit), and any torch optimizer
    // handed to it (Trainer(optimizers=(optimizer, scheduler))): SGD with momentum so.
    .optimizers = enum_set<optimizer_kind>::all(),
    // Every recipe but Transformer Engine's fp8 (the model's own code has no FP8 Linears):
    // --tf32; --bf16 / --fp16, which are autocast under DDP (bf16-amp, fp16-amp) and
    // FSDP's MixedPrecision under FSDP (fp32 sharded parameters as the master, 16-bit
    // compute copies: the bf16 and fp16 recipes); a model loaded in 16 bits (bf16-pure,
    // fp16-pure). ASSUMPTION: the bf16 and fp16 recipes are allowed with DDP (ZeRO 0) too,
    // where the Trainer's own flag is autocast: they stand for a 16-bit model with fp32
    // master weights kept by the optimizer (e.g. a torch optimizer over fp32 copies handed
    // to the Trainer); a DDP run of `--bf16` is bf16-amp (docs/engine.md).
    .precisions = {precision_kind::fp32, precision_kind::tf32, precision_kind::bf16, precision_kind::fp16,
                   precision_kind::bf16_pure, precision_kind::fp16_amp, precision_kind::bf16_amp,
                   precision_kind::fp16_pure},
    // LoRA through PEFT (huggingface/peft LoraConfig), QLoRA with bitsandbytes' 4-bit NF4
    // base (Dettmers et al. 2023, "QLoRA: Efficient Finetuning of Quantized LLMs").
    .finetune_modes = enum_set<finetune_mode>::all(),
    .host_optimizers = {},  // no optimizer offload (above)
    .per_step_overhead = milliseconds_of(2.0),
    .memory = {
        // HF's loss upcasts the logits to fp32; the log-softmax and the logits'
        // gradient are live at the peak besides them.
        .fp32_logits = true,
        .loss_buffers = 2.0,
        // PyTorch's cuBLAS workspace (32 MiB on Hopper, CUDABlasHandlePool.cpp).
        .workspace = mebibytes_of(32.0),
        // DDP: 25 MB buckets (bucket_cap_mb) holding a copy of every gradient, since the
        // Trainer leaves gradient_as_bucket_view off.
        .gradient_buckets = megabytes_of(25.0),
        .gradient_bucket_copy = 1.0,
        .optimizer_temporaries = 0.0,  // the per-tensor loop allocates one tensor at a time
        .fragmentation = 0.05,
    },
};

// Megatron-LM (2022): fused bias-GELU, bias-dropout-add, scaled masked softmax and
// layernorm, fused Adam (Apex), fp32 main grads, data-parallel all-reduce after
// backward (not overlapped); plain data parallelism or the distributed optimizer
// (--use-distributed-optimizer: ZeRO stage 1 here), no ZeRO 2 or 3.
inline constexpr framework_profile megatron_profile{
    .name = "megatron",
    .fused_softmax = true,
    .fused_bias_gelu = true,
    .fused_bias_dropout_add = true,
    .flash_attention = false,
    .runs_model_code = false,
    .head_layout_copies = false,
    .fused_optimizer = true,
    .overlap_data_parallel_sync = false,
    // Used only when a layout turns overlap on (Megatron's --overlap-grad-reduce): the
    // same ASSUMPTION as the DDP profiles.
    .overlappable_backward_fraction = 0.8,
    .fp32_gradient_accumulation = true,
    // NVIDIA/Megatron-LM@28ba253f megatron/arguments.py: --tensor-model-parallel-size,
    // --sequence-parallel, --pipeline-model-parallel-size,
    // --num-layers-per-virtual-pipeline-stage, --use-distributed-optimizer; no context
    // parallelism, no optimizer offload (its only CPU flag is --use-cpu-initialization).
    .software = "Megatron-LM (2022; NVIDIA/Megatron-LM@28ba253f)",
    .context_parallel = false,
    .optimizer_offload = false,
    .zero_stages = 0b0011,
    // --optimizer adam|sgd with --sgd-momentum (megatron/arguments.py@28ba253f): apex's
    // FusedAdam, in AdamW mode by default, and FusedSGD (megatron/optimizer/__init__.py).
    .optimizers = {optimizer_kind::sgd, optimizer_kind::sgd_momentum, optimizer_kind::adamw,
                   optimizer_kind::adamw_fused},
    // fp32, or --fp16 / --bf16: 16-bit parameters with fp32 main parameters
    // (Float16OptimizerWithFloat16Params, megatron/optimizer/optimizer.py@28ba253f); no
    // autocast, no pure 16-bit training, no FP8 (Transformer Engine came later), no TF32
    // switch (PyTorch's matmul default has been fp32 since 1.12).
    .precisions = {precision_kind::fp32, precision_kind::bf16, precision_kind::fp16},
    .finetune_modes = {finetune_mode::full},  // pre-training: no adapters
    .host_optimizers = {},
    .per_step_overhead = milliseconds_of(5.0),
    // Counted in Megatron-LM@28ba253f (2022-09), GPT layer, tensor parallel > 1
    // (megatron/model/transformer.py, megatron/mpu/layers.py, mappings.py, random.py,
    // megatron/model/fused_layer_norm.py, fused_softmax.py, fused_bias_gelu.py):
    //   - 12 module calls: the layer, 2 norms, attention, QKV, core attention, softmax,
    //     dropout, dense, MLP, fc1, fc2;
    //   - 10 Functions: FusedLayerNormAffineFunction ×2,
    //     LinearWithGradAccumulationAndAsyncCommunication ×4,
    //     ScaledUpperTriangMaskedSoftmax, _ReduceFromModelParallelRegion ×2, GeLUFunction;
    //   - 3 scripted calls: bias_dropout_add_fused_train ×2, bias_gelu;
    //   - ~30 views (24 view/transpose/split/permute/slice/expand/t() and 6 no-op
    //     .contiguous() in fused_layer_norm.py);
    //   - 1 RNG tracker fork around the attention dropout;
    //   - DistributedDataParallel's Python hook per parameter (megatron/model/
    //     distributed.py, main_grad.add_ where the fused wgrad left a .grad).
    .layer_host = {.modules = 12, .views = 30, .functions = 10, .scripted_calls = 3, .rng_forks = 1,
                   .gradient_hooks = true},
    .memory = {
        .fp32_logits = true,       // vocab-parallel cross entropy works in fp32
        .loss_buffers = 1.0,       // it overwrites the logits with the softmax in place
        .workspace = mebibytes_of(32.0),
        .gradient_buckets = bytes_of(0.0),  // grads live in one contiguous fp32 buffer
        .gradient_bucket_copy = 0.0,
        .optimizer_temporaries = 0.0,
        .fragmentation = 0.05,
    },
};

// DeepSpeed ZeRO's gradient bucket: reduce_bucket_size (and allgather_bucket_size)
// default to 5e8 elements (DeepSpeed deepspeed/runtime/zero/config.py@v0.9.5). Stage 1
// and 2 allocate a bucket of that many elements in the parameters' dtype in every
// backward, a second one with overlap_comm ("double buffers to avoid data access
// conflict", deepspeed/runtime/zero/stage_1_and_2.py@v0.12.6); optimizer offload
// forces contiguous_gradients, which allocates them.
inline constexpr double deepspeed_reduce_bucket_elements = 5e8;

// HF model code under the DeepSpeed engine: ZeRO stages, optimizer offload to the
// CPU, fused Adam on the GPU, communication overlapped with backward. What it runs:
// ZeRO stages 0-3 (microsoft/DeepSpeed@c00388a2 = v0.12.6,
// deepspeed/runtime/zero/config.py ZeroStageEnum) and the optimizer on the CPU
// ("Optimizer computation is offload to CPU", deepspeed/runtime/zero/offload_config.py
// @c00388a2); the Hugging Face Trainer's DeepSpeed integration builds ZeRO
// configurations only (huggingface/transformers@02348331
// src/transformers/integrations/deepspeed.py): no DeepSpeed pipeline engine (whose
// TrainSchedule is 1F1B without virtual stages anyway, deepspeed/runtime/pipe/schedule.py
// @c00388a2), no tensor, sequence or context parallelism (DeepSpeed-Ulysses,
// deepspeed/sequence/layer.py@c00388a2, splits heads by all-to-all, not this engine's
// ring). No hybrid sharding: ZeRO++'s secondary partition (zero_hpz_partition_size) is a
// second copy of the ZeRO-3 weights, not sharding of the optimizer state, and MiCS
// (mics_shard_size) needs the model built under MiCS_Init (deepspeed/runtime/zero/
// mics.py@c00388a2), which the Trainer's integration does not call (ASSUMPTION, from
// the integration file above).
inline constexpr framework_profile deepspeed_profile{
    .name = "deepspeed",
    .fused_softmax = false,
    .fused_bias_gelu = false,
    .fused_bias_dropout_add = false,
    .flash_attention = false,
    .runs_model_code = true,
    .head_layout_copies = true,
    .fused_optimizer = true,
    .scales_gradients_every_step = true,
    .overlap_data_parallel_sync = true,
    .overlappable_backward_fraction = 0.8,
    .fp32_gradient_accumulation = true,
    .software = "the Hugging Face Trainer with DeepSpeed ZeRO (DeepSpeed v0.12.6)",
    .tensor_parallel = false,
    .sequence_parallel = false,
    .context_parallel = false,
    .pipeline_parallel = false,
    .interleaved_pipeline = false,
    // Without a DeepSpeed optimizer in its configuration the Trainer hands DeepSpeed its
    // own (trainer.create_optimizer(), "zero_allow_untested_optimizer";
    // huggingface/transformers@02348331 src/transformers/integrations/deepspeed.py,
    // deepspeed_optim_sched), so every Trainer optimizer. On the host with ZeRO-Offload:
    // DeepSpeed's own CPU optimizers, DeepSpeedCPUAdam (Adam, AdamW) and DeepSpeedCPULion
    // from the configuration's optimizer (and CPU Adagrad, not modelled); a client
    // optimizer other than DeepSpeedCPUAdam is refused ("You are using ZeRO-Offload with a
    // client provided optimizer ...") unless zero_force_ds_cpu_optimizer is set false
    // (microsoft/DeepSpeed@c00388a2 deepspeed/runtime/engine.py).
    .optimizers = enum_set<optimizer_kind>::all(),
    // fp32, --tf32, and DeepSpeed's fp16 and bf16 modes, which keep fp32 master weights in
    // the optimizer (FP16_Optimizer, BF16_Optimizer, ZeRO's fp32 partitions;
    // deepspeed/runtime/@c00388a2); no autocast, no pure 16-bit, no FP8.
    .precisions = {precision_kind::fp32, precision_kind::tf32, precision_kind::bf16, precision_kind::fp16},
    // PEFT's LoRA and QLoRA under DeepSpeed (the Trainer builds the engine around the PEFT
    // model; ASSUMPTION for QLoRA below ZeRO-3, which PEFT documents with ZeRO-3).
    .finetune_modes = enum_set<finetune_mode>::all(),
    .host_optimizers = {optimizer_kind::adamw, optimizer_kind::adamw_fused, optimizer_kind::lion},
    .per_step_overhead = milliseconds_of(5.0),
    .memory = {
        .fp32_logits = true,
        .loss_buffers = 2.0,
        .workspace = mebibytes_of(32.0),
        // ZeRO's reduce bucket (reduce_bucket_size = 5e8 elements, fp16 by default).
        .gradient_buckets = bytes_of(deepspeed_reduce_bucket_elements * 2.0),
        .gradient_bucket_copy = 0.0,
        .optimizer_temporaries = 0.0,
        .fragmentation = 0.08,
    },
};

// Megatron-Core (2024-2025) with Transformer Engine (NVIDIA Megatron-LM
// megatron/core@d98e8a64, TransformerEngine@d0067d0d): the 2022 profile's fused
// kernels, and
//   - fused attention: Transformer Engine's DotProductAttention, a Hopper-native
//     kernel (cuDNN or FlashAttention-3) on Hopper, FlashAttention-2 elsewhere;
//   - the distributed optimizer (--use-distributed-optimizer): fp32 main weights and
//     Adam's state sharded over the data-parallel ranks, gradients reduce-scattered and
//     parameters all-gathered; in this engine's terms ZeRO stage 1 with fp32 main
//     gradients, 6 + 12/d bytes per parameter for bf16 (Megatron-LM
//     docs/user-guide/features/dist_optimizer.md) — the layout's zero = 1;
//   - --overlap-grad-reduce: each gradient bucket's reduce-scatter (or all-reduce)
//     starts when the bucket is ready, during backward (megatron/core/distributed/
//     param_and_grad_buffer.py);
//   - --overlap-param-gather: the parameter all-gather bucket by bucket during the
//     next forward;
//   - --tp-comm-overlap (with sequence parallelism): tensor-parallel all-gathers and
//     reduce-scatters overlapped with chunked GEMMs (cost/stage_pricer.hpp);
//   - --decoder-first-pipeline-num-layers / --decoder-last-pipeline-num-layers: fewer
//     (or more) layers on the first and last pipeline stages. Its schedules are 1F1B and
//     interleaved 1F1B (megatron/core/pipeline_parallel/schedules.py): no zero-bubble one;
//   - ZeRO stages: none, the distributed optimizer (1), and with Megatron-FSDP
//     (--use-megatron-fsdp) --data-parallel-sharding-strategy optim_grads (2) or
//     optim_grads_params (3), or PyTorch FSDP2 (--use-torch-fsdp2; ZeRO-2 with
//     --torch-fsdp2-no-reshard-after-forward) (megatron/training/arguments.py@d98e8a64).
//     The distributed optimizer sharded within instances and replicated across them
//     (--num-distributed-optimizer-instances): hybrid sharding.
// ASSUMPTIONs as for megatron: overlappable share 0.8, 5 ms per step on the host.
inline constexpr framework_profile megatron_core_profile{
    .name = "megatron-core",
    .fused_softmax = true,
    .fused_bias_gelu = true,
    .fused_bias_dropout_add = true,
    .flash_attention = true,
    .flash_kernel = attention_kernel::flash3,
    .runs_model_code = false,
    .head_layout_copies = false,
    .fused_optimizer = true,
    .overlap_data_parallel_sync = true,
    .overlappable_backward_fraction = 0.8,
    .fp32_gradient_accumulation = true,
    .overlap_parameter_gather = true,
    .tensor_parallel_overlap = true,
    // NVIDIA/Megatron-LM@d98e8a64: tensor, sequence, context and pipeline parallelism
    // (megatron/core/model_parallel_config.py), virtual stages
    // (--num-layers-per-virtual-pipeline-stage), the distributed optimizer, Megatron-FSDP
    // and FSDP2, and --optimizer-cpu-offload (megatron/core/optimizer/__init__.py builds a
    // HybridDeviceOptimizer with CPUAdam; megatron/core/optimizer/cpu_offloading/README.md:
    // "Gradient copy from GPU to CPU, CPU optimizer step, and subsequent parameter copy
    // from CPU to GPU").
    .software = "Megatron-Core with Transformer Engine (NVIDIA/Megatron-LM@d98e8a64)",
    .uneven_pipeline_split = true,
    .zero_stages = 0b1111,
    .hybrid_sharding = true,
    // --optimizer adam|sgd|lion (and Muon, SOAP: not modelled) with --sgd-momentum
    // (megatron/training/arguments.py@d98e8a64); on the host with --optimizer-cpu-offload
    // only Adam and SGD (CPUAdam or CPUSGD, megatron/core/optimizer/__init__.py@d98e8a64).
    .optimizers = {optimizer_kind::sgd, optimizer_kind::sgd_momentum, optimizer_kind::adamw,
                   optimizer_kind::adamw_fused, optimizer_kind::lion},
    // fp32, --fp16 / --bf16 with fp32 main parameters, --fp8-format with Transformer Engine;
    // no autocast and no pure 16-bit recipe.
    .precisions = {precision_kind::fp32, precision_kind::bf16, precision_kind::fp16, precision_kind::fp8},
    .finetune_modes = {finetune_mode::full},  // no adapters in Megatron-Core itself
    .host_optimizers = {optimizer_kind::sgd, optimizer_kind::sgd_momentum, optimizer_kind::adamw,
                        optimizer_kind::adamw_fused},
    .per_step_overhead = milliseconds_of(5.0),
    // Counted in Megatron-Core@d98e8a64 with TransformerEngine@d0067d0d (TESpecProvider:
    // megatron/core/transformer/transformer_layer.py, attention.py, mlp.py,
    // megatron/core/extensions/transformer_engine.py):
    //   - 14 module calls (the layer, attention, TELayerNormColumnParallelLinear QKV,
    //     TEDotProductAttention and its FusedAttention, TERowParallelLinear, MLP, fc1,
    //     fc2, and 5 Identity modules standing in for the norms fused into the Linears and the
    //     absent cross-attention);
    //   - 8 Functions: _LayerNormLinear ×2, FusedAttnFunc, _Linear ×2, the activation
    //     (SwiGLUFunction or GeLUFunction), and the two bias-dropout-adds, torch.compile'd
    //     and so AOTAutograd Functions; 2 more (FusedRoPEFunc on Q and K) with rotary
    //     positions;
    //   - 5 Transformer Engine modules (the four Linears and the attention);
    //   - the DDP's Python hook per parameter (distributed_data_parallel.py);
    //   - views: ASSUMPTION 10, as the generic layer (not counted).
    .layer_host = {.modules = 14, .views = 10, .functions = 8, .rotary_functions = 2, .library_modules = 5,
                   .gradient_hooks = true},
    .memory = megatron_profile.memory,
};

inline constexpr std::array framework_profiles{pytorch_eager_profile, megatron_profile,
                                               deepspeed_profile, megatron_core_profile};

constexpr const framework_profile& lookup_framework(std::string_view name) {
    return find_by_name(framework_profiles, "framework", name);
}

}  // namespace trainperf
