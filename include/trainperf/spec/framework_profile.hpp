// A framework profile, software described as data: which elementwise ops a framework
// fuses, how its optimizer runs, whether gradient sync overlaps backward, what its host
// calls cost, what its software can run, and the memory it holds beyond the model's own
// state. A user can define a profile of their own; spec/framework.hpp holds the catalog.
#pragma once

#include <array>
#include <string_view>
#include <utility>

#include "../core/enum_set.hpp"
#include "../core/error.hpp"
#include "../core/units.hpp"
#include "attention_kernels.hpp"
#include "finetune.hpp"
#include "hardware.hpp"
#include "moe_run.hpp"
#include "optimizer.hpp"
#include "parallel.hpp"
#include "precision.hpp"

namespace trainperf {

// How a context-parallel ring merges the partial attention outputs of its steps
// (workload/stage.hpp for_each_kv_ring_op):
//   - fused: Transformer Engine's AttnFuncWithCPAndKVP2P corrects the fp32 output with
//     each step's partial output and log-sum-exp in one fused kernel per step
//     (flash_attn_fwd_out_correction, flash_attn_fwd_softmax_lse_correction, jit-fused;
//     NVIDIA/TransformerEngine@d0067d0d transformer_engine/pytorch/attention/
//     dot_product_attention/context_parallel.py);
//   - eager: PyTorch's ring attention (torch.distributed.tensor.experimental
//     context_parallel, which torchtitan runs) merges in eager ops: per step the partial
//     output cast to fp32, out − sigmoid(lse_step − lse)·(out − out_step) as separate
//     kernels, and the log-sum-exp update (_SDPAMerger, pytorch/pytorch@09b101c5
//     torch/distributed/tensor/experimental/_context_parallel/_attention.py).
enum class kv_ring_merge { fused, eager };

template <>
struct enum_names<kv_ring_merge> {
    static constexpr std::array<enum_name<kv_ring_merge>, 2> table{
        {{kv_ring_merge::fused, "fused"}, {kv_ring_merge::eager, "eager"}}};
};

// The loss's code (workload/head.hpp counts its kernels, traffic and collectives):
//   - cross-entropy: torch.nn.functional.cross_entropy over the logits upcast to fp32,
//     as the Hugging Face Trainer's ForCausalLMLoss (transformers@0114da07
//     src/transformers/loss/loss_utils.py) and torchtitan's cross_entropy_loss
//     (pytorch/torchtitan@b0902b29 torchtitan/components/loss.py) call it: a log-softmax
//     and an NLL kernel; with tp > 1, DTensor's loss_parallel (torchtitan's default),
//     and with torch.compile the compiled loss;
//   - vocab-parallel: Megatron's VocabParallelCrossEntropy, unfused (Megatron-Core's
//     default, cross_entropy_loss_fusion off; megatron/core/tensor_parallel/
//     cross_entropy.py@d98e8a64, the same algorithm as Megatron-LM 2022's): one eager op
//     per step over the vocabulary shard, three all-reduces over tp;
//   - vocab-parallel-fused: the same algorithm in Megatron-Core's fused functions
//     (--cross-entropy-loss-fusion with its default native implementation,
//     megatron/core/fusions/fused_cross_entropy.py@d98e8a64, each compiled by
//     torch.compile, megatron/core/jit.py@d98e8a64): fewer passes, two all-reduces
//     over tp.
enum class loss_implementation { cross_entropy, vocab_parallel, vocab_parallel_fused };

template <>
struct enum_names<loss_implementation> {
    static constexpr std::array<enum_name<loss_implementation>, 3> table{
        {{loss_implementation::cross_entropy, "cross-entropy"},
         {loss_implementation::vocab_parallel, "vocab-parallel"},
         {loss_implementation::vocab_parallel_fused, "vocab-parallel-fused"}}};
};

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
    // Caching-allocator overhead (reserved beyond allocated), a fraction of the peak,
    // with plain segments (PyTorch's default).
    double fragmentation = 0.0;
    // PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True: the allocator's pools grow in pages
    // it can hand back, and its slack is their partly used pages instead of
    // `fragmentation` (cost/allocator_slack.hpp). "experimental, default: False" in
    // PyTorch (docs/source/notes/cuda.rst@68e217b9).
    bool expandable_segments = false;
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

    // --- layers compiled with torch.compile (Inductor), framework_profile::compiled ---
    // Calling a compiled region from Python: the guard check, the AOTAutograd Function
    // (CompiledFunction) and the generated wrapper's own code. DERIVED: 44.3 µs for a
    // compiled one-kernel graph end to end, of which 6.8 µs is the kernel's own launch
    // (CachingAutotuner.run), on GB200 (meta-pytorch/tritonbench PR #1017); 37.5 µs over
    // Grace's ~6 µs bare op (derived for library_module above): 6.25.
    double compiled_graph = 6.25;
    // A kernel launched by the generated wrapper (Triton's launcher, or an extern cuBLAS
    // or attention call), no dispatcher and no autograd: 6.8 µs (no arguments) to 9.1 µs
    // (19 arguments) per Triton kernel on the same GB200 (PR #1017), over the ~6 µs bare
    // op: 1.3 (ASSUMPTION: extern kernels alike).
    double compiled_launch = 1.3;
    // One op dispatched through a Python TorchDispatchMode: op-level selective
    // checkpointing (torch.utils.checkpoint create_selective_checkpoint_contexts) runs
    // its policy, a Python function, on every op of the forward and of the recompute.
    // ASSUMPTION: one bare op (a Python call with the op's arguments wrapped).
    double dispatch_mode = 1.0;
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
                                  {"framework.host.library_module_backward", c.library_module_backward},
                                  {"framework.host.compiled_graph", c.compiled_graph},
                                  {"framework.host.compiled_launch", c.compiled_launch},
                                  {"framework.host.dispatch_mode", c.dispatch_mode}})
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
    // The framework's own layer applies rotary positions with one fused kernel per tensor
    // (Transformer Engine's fused RoPE); otherwise as PyTorch ops (workload/layer.hpp).
    bool fused_rope = false;
    double backward_traffic_ratio = 1.5;  // bytes of an elementwise backward / its forward
                                          // (reads output grad and saved input, writes input grad)
    loss_implementation loss = loss_implementation::cross_entropy;  // the loss's code (above)

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
    // ZeRO-3's collectives per layer: one all-gather (and one reduce-scatter) of the
    // layer's parameters in one buffer (FSDP's flat parameter; DeepSpeed's coalesced
    // all-gather from v0.6, microsoft/DeepSpeed@4912e0ad), or one for each tensor
    // (DeepSpeed v0.3 to v0.5: fetch_sub_module gathers a submodule's parameters with one
    // torch.distributed.all_gather each, deepspeed/runtime/zero/partition_parameters.py
    // @f2843244 _all_gather and _allgather_param, and every parameter's gradient
    // reduce-scatters on its own, _reduce_scatter_gradients). Norm weights and biases stay
    // whole on every rank (param_persistence_threshold, 1e5 elements, deepspeed/runtime/
    // zero/constants.py@f2843244): only the projections' weights are gathered. Such a
    // ZeRO-3 overlaps nothing (spec/setup.hpp overlaps_data_parallel_sync).
    bool zero3_per_tensor_collectives = false;
    // Tensor-parallel communication overlapped with the GEMMs it feeds or drains, the
    // GEMMs split into chunks (Transformer Engine's userbuffers, Megatron-Core
    // --tp-comm-overlap; needs sequence parallelism). cost/stage_pricer.hpp prices it.
    bool tensor_parallel_overlap = false;
    // fp8 (Transformer Engine): each Linear's quantized weight cast once per step, at the
    // step's first micro-batch, and reused by the others and by recompute. TE caches it
    // when told which micro-batch is first ("during FP8 training, it allows caching of
    // the FP8 versions of the weights", is_first_microbatch, transformer_engine/pytorch/
    // module/linear.py@d0067d0d); Megatron-Core tells it (set_is_first_microbatch,
    // megatron/core/pipeline_parallel/schedules.py and extensions/transformer_engine.py
    // @d98e8a64). Off: cast in every forward (workload/fp8.hpp).
    bool fp8_weight_cache = false;
    // fp8: the Linear weights held in FP8 as the parameters themselves, no 16-bit copy,
    // and all-gathered in FP8 by the distributed optimizer (spec/precision.hpp
    // fp8_primary_weight_bytes_per_parameter; Megatron-Core --fp8-param-gather, which
    // needs sharded parameters' optimizer, ZeRO 1 to 3 here; spec/setup.hpp
    // fp8_primary_weights says where it applies).
    bool fp8_primary_weights = false;
    // --- what the software can run: validate(training_setup) refuses a layout that asks
    // for anything else (spec/setup.hpp require_framework_runs), and the planner and the
    // advice search only these. A profile says which software and version it describes.
    std::string_view software = "a custom framework profile";
    bool tensor_parallel = true;       // Megatron-style tensor parallelism (tp > 1)
    bool sequence_parallel = true;     // Megatron-style sequence parallelism (sp, with tp > 1)
    bool context_parallel = true;      // the sequence split over ranks, K and V passed around a ring (cp > 1)
    kv_ring_merge ring_merge = kv_ring_merge::fused;  // how the ring's partial outputs are merged
    bool pipeline_parallel = true;     // pipeline stages (pp > 1), 1F1B
    bool interleaved_pipeline = true;  // virtual pipeline stages (interleave > 1)
    bool optimizer_offload = true;     // the optimizer step on the host, its state in host memory
    // Pipeline options: layers per first and last stage set apart from an even split
    // (Megatron-Core --decoder-first-pipeline-num-layers and
    // --decoder-last-pipeline-num-layers), and the zero-bubble schedule zb-h1
    // (spec/parallel.hpp pipeline_schedule).
    bool uneven_pipeline_split = false;
    bool zero_bubble_schedule = false;
    // A custom pipeline layout (spec/pipeline_layout.hpp; Megatron-Core
    // --pipeline-model-parallel-layout).
    bool custom_pipeline_layout = false;
    // The recompute modes it offers (spec/parallel.hpp recompute_mode): Megatron's
    // selective recompute and full recompute, or torchtitan's op-level checkpointing.
    enum_set<recompute_mode> recompute_modes = {recompute_mode::none, recompute_mode::selective,
                                                recompute_mode::full};
    // Selective recompute of the submodules a list names (spec/recompute_modules.hpp;
    // Megatron-Core --recompute-modules), beyond the attention core.
    bool fine_grained_recompute = false;
    // It can compile each layer with torch.compile (framework_profile::compiled).
    bool layer_compile = false;
    // The ZeRO stages the software offers (bit z: stage z; stage 0, plain data
    // parallelism, always), and whether it shards them over part of the data-parallel
    // ranks, replicating across (spec/parallel.hpp shard_group).
    unsigned zero_stages = 0b1111;
    bool hybrid_sharding = false;
    // How it can number its ranks (spec/hardware.hpp rank_order), which decides the
    // groups an NVLink domain holds; it matters with both pipeline and data parallelism.
    enum_set<rank_order> rank_orders = enum_set<rank_order>::all();
    // What it trains with: the optimizers (spec/optimizer.hpp), the number recipes
    // (spec/precision.hpp) and the fine-tuning modes (spec/finetune.hpp) the software
    // runs, and of those optimizers the ones it runs on the host with optimizer offload.
    enum_set<optimizer_kind> optimizers = enum_set<optimizer_kind>::all();
    enum_set<precision_kind> precisions = enum_set<precision_kind>::all();
    enum_set<finetune_mode> finetune_modes = enum_set<finetune_mode>::all();
    enum_set<optimizer_kind> host_optimizers = enum_set<optimizer_kind>::all();
    // How it scales its quantized Linears under the fp8 kind (spec/precision.hpp
    // fp8_scaling: delayed, current, mxfp8, blockwise; nvfp4 for --precision nvfp4).
    enum_set<fp8_scaling> fp8_scalings = enum_set<fp8_scaling>::all();
    // The token dispatchers it runs MoE layers with (spec/moe_run.hpp); none: it trains
    // no mixture-of-experts model with expert parallelism here.
    enum_set<moe_dispatcher> moe_dispatchers = {};
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
    // Each layer compiled with torch.compile (Inductor): its chains of elementwise ops
    // and reductions between two GEMMs or attention calls run as one generated kernel
    // each (workload/layer.hpp), the layer's forward and backward are one compiled
    // region each, called from Python once per pass, whose wrapper launches the kernels
    // without the dispatcher or autograd (workload/stage.hpp, cost/stage_pricer.hpp).
    // torchtitan compiles each TransformerBlock with fullgraph=True
    // (torchtitan@b0902b29 torchtitan/models/llama3/infra/parallelize.py apply_compile).
    bool compiled = false;
    // A checkpointed layer saves and restores the generators' states around its
    // recompute (torch.utils.checkpoint preserve_rng_state; Megatron's
    // CheckpointFunction); torchtitan wraps its blocks with preserve_rng_state=False.
    bool checkpoint_rng_state = true;
    // With pipeline stages, ZeRO-3 keeps each layer's gathered parameters from its forward
    // to its backward whatever reshard_after_forward says: torchtitan's default policy
    // ("For PP, do not reshard after forward to avoid per-microbatch all-gathers",
    // torchtitan@b0902b29 parallelize.py apply_fsdp); an explicit
    // --reshard-after-forward overrides it.
    bool keeps_gathered_with_pipeline = false;
    // ZeRO-3 shards the parameters themselves, kept in fp32, and gathers 16-bit copies
    // for compute: PyTorch FSDP's MixedPrecision and FSDP2's MixedPrecisionPolicy cast
    // to param_dtype only the unsharded copy, and the optimizer steps the fp32 shard
    // ("The optimizer step uses the sharded parameter in the original dtype",
    // MixedPrecisionPolicy; "FSDP does not require any extra memory to keep a
    // high-precision copy of the parameters for the optimizer step", MixedPrecision in
    // pytorch/pytorch@0aafd810 torch/distributed/fsdp/api.py). The fp32 master of a mixed recipe is then the only
    // sharded copy: no 16-bit shard beside it (cost/memory.hpp). DeepSpeed keeps both
    // (16-bit partitions and the optimizer's fp32 partition).
    bool fp32_sharded_parameters = false;

    // --- memory held beyond the model state and activations ---
    memory_overheads memory{};
};

// Whether ZeRO-3 frees a layer's gathered parameters after its forward under this
// layout: the profile's reshard_after_forward, unless its pipeline default keeps them.
constexpr bool reshards_after_forward(const framework_profile& fw, const parallel_layout& l) {
    return fw.reshard_after_forward && !(l.pp > 1 && fw.keeps_gathered_with_pipeline);
}

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
    require(!fw.fp8_scalings.empty(), "framework.fp8_scalings", "[]", "must name at least one scaling");
    require(!fw.rank_orders.empty(), "framework.rank_orders", "[]", "must name at least one rank order");
    require(!fw.recompute_modes.empty(), "framework.recompute_modes", "[]", "must name at least one recompute mode");
    require(!fw.compiled || fw.layer_compile, "framework.compiled", "true",
            "needs a framework that compiles its layers (layer_compile)");
    require(!(fw.compiled && fw.cuda_graphs), "framework.compiled", "true",
            "and cuda_graphs cannot both be on (Megatron-Core's graphs capture eager layers)");
    require(!fw.fp8_primary_weights || fw.fp8_weight_cache, "framework.fp8_primary_weights", "true",
            "needs fp8_weight_cache (FP8 primary weights are made once a step, as a cached cast is)");
    require(fw.per_step_overhead.value() >= 0 && fw.per_step_overhead.value() <= 3600,
            "framework.per_step_overhead_s", fw.per_step_overhead.value(), "must be in [0, 3600] s");
}

}  // namespace trainperf
