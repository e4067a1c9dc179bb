// The catalog of framework profiles (spec/framework_profile.hpp): the Hugging Face
// Trainer on PyTorch eager, Megatron-LM, DeepSpeed, Megatron-Core and torchtitan, each
// with the software version it describes and the sources of its figures.
#pragma once

#include <array>
#include <string_view>

#include "../core/catalog_lookup.hpp"
#include "../core/units.hpp"
#include "framework_profile.hpp"

namespace trainperf {

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
    .fp32_sharded_parameters = true,  // FSDP MixedPrecision
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
    .loss = loss_implementation::vocab_parallel,  // megatron/mpu/cross_entropy.py@28ba253f
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
    // One rank order: tensor, then data-parallel groups of consecutive blocks, pipeline
    // stages outermost (megatron/mpu/initialize.py@28ba253f initialize_model_parallel).
    .rank_orders = {rank_order::tp_dp_pp},
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

// Megatron-DeepSpeed as it ran in 2021: Megatron-LM's model code and tensor parallelism
// under the DeepSpeed engine's ZeRO (microsoft/Megatron-DeepSpeed@e5eda7e2, 2021-06:
// pretrain_gpt.py builds GPTModel inside deepspeed.zero.Init over the data-parallel group
// when --zero-stage 3), with DeepSpeed v0.5.0 (microsoft/DeepSpeed@f2843244, 2021-08).
// Megatron-LM 2022's fused kernels, loss and layer (the megatron profile's), and what that
// DeepSpeed does differently from v0.12.6 (the deepspeed profile's):
//   - ZeRO-3 moves every tensor on its own: one all_gather per parameter in each
//     submodule's fetch, a torch.cuda.synchronize() before each and after the fetch
//     (partition_parameters.py _allgather_param, stage3.py fetch_sub_module and
//     _synchronize_communication), one reduce_scatter per parameter's gradient
//     (_reduce_scatter_gradients). Its "async" gathers did not overlap compute, as the
//     commit that removed those synchronizes says (microsoft/DeepSpeed@c0eeb69d, first in
//     v0.5.5: "the async version is not async at all, because each all_gather calls
//     torch.cuda.synchronize()"), and the next fetch's synchronize waits for the
//     reduce-scatters' stream too. So nothing overlaps: data-parallel sync exposed,
//     whatever overlap_comm says (spec/setup.hpp overlaps_data_parallel_sync).
//     ASSUMPTION: the prefetch of the next submodules' parameters (from the second step,
//     stage3.py prefetch_next_sub_modules), whose last gather can overlap the current
//     submodule's compute, left out;
//   - recompute: none or full (--checkpoint-activations; selective recompute came with
//     Megatron-LM 2022); no sequence or context parallelism (Megatron-LM of 2021), no
//     bf16 (DeepSpeed v0.5's precision modes are fp32 and fp16), no pipeline: DeepSpeed's
//     PipelineEngine refuses ZeRO-2 and 3 ("ZeRO-2 and ZeRO-3 are incompatible with
//     pipeline parallelism", deepspeed/runtime/pipe/engine.py@f2843244); a pipeline with
//     ZeRO 0 or 1 is the megatron profile's business;
//   - ZeRO-Offload of the optimizer (cpu_offload, DeepSpeedCPUAdam).
// ASSUMPTIONs: the megatron profile's host inventory and per-step overhead, the deepspeed
// profile's buckets (reduce_bucket_size 5e8) and allocator slack; ZeRO-3's gathered
// parameters held as FSDP holds them (the unit in use and the next), although
// stage3_max_reuse_distance (1e9 elements) keeps a submodule gathered until its backward
// when it is used again within that distance; biases and norms below the persistence
// threshold (1e5 elements: h < 25,000 at tp 1) and one gather for the embeddings.
inline constexpr framework_profile megatron_deepspeed_profile = [] {
    framework_profile p = megatron_profile;
    p.name = "megatron-deepspeed";
    p.software = "Megatron-DeepSpeed (2021; microsoft/Megatron-DeepSpeed@e5eda7e2) with DeepSpeed v0.5.0";
    p.zero_stages = 0b1111;
    p.zero3_per_tensor_collectives = true;
    p.overlap_data_parallel_sync = false;
    p.sequence_parallel = false;
    p.context_parallel = false;
    p.pipeline_parallel = false;
    p.interleaved_pipeline = false;
    p.optimizer_offload = true;
    p.host_optimizers = {optimizer_kind::adamw, optimizer_kind::adamw_fused};
    p.precisions = {precision_kind::fp32, precision_kind::fp16};
    p.recompute_modes = {recompute_mode::none, recompute_mode::full};
    p.memory.gradient_buckets = deepspeed_profile.memory.gradient_buckets;
    p.memory.fragmentation = deepspeed_profile.memory.fragmentation;
    return p;
}();

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
    // apply_rope_fusion: False in TransformerConfig (transformer_config.py@d98e8a64), True
    // as Megatron-LM trains (--no-rope-fusion turns it off, megatron/training/
    // arguments.py@d98e8a64) and in Megatron Bridge's Llama models (src/megatron/bridge/
    // models/llama/llama_bridge.py@067f987d).
    .fused_rope = true,
    // --cross-entropy-loss-fusion (native), as its recipes run: off in ModelParallelConfig
    // (model_parallel_config.py@d98e8a64), but passed by Megatron-LM's Llama 3 8B examples
    // (examples/llama/train_llama3_8b_h100_fp8.sh, examples/megatron_fsdp/
    // train_llama3_8b_fsdp_h100_fp8.sh@d98e8a64) and on by default in Megatron Bridge's
    // GPTModelProvider (NVIDIA-NeMo/Megatron-Bridge@067f987d src/megatron/bridge/models/
    // gpt_provider.py). Its Transformer Engine implementation is refused by Megatron-LM's
    // argument checks (megatron/training/arguments.py@d98e8a64) and not modelled.
    .loss = loss_implementation::vocab_parallel_fused,
    .fused_optimizer = true,
    .overlap_data_parallel_sync = true,
    .overlappable_backward_fraction = 0.8,
    .fp32_gradient_accumulation = true,
    .overlap_parameter_gather = true,
    .tensor_parallel_overlap = true,
    .fp8_weight_cache = true,
    // As its FP8 recipes run: Megatron-LM's own Llama 3 8B FP8 example passes
    // --fp8-param-gather (examples/llama/train_llama3_8b_h100_fp8.sh@d98e8a64), and so do
    // Megatron Bridge's delayed, per-tensor current and MXFP8 recipes (fp8_param_gather =
    // True; NVIDIA-NeMo/Megatron-Bridge@d9f7643b src/megatron/bridge/training/
    // mixed_precision.py; its 128x128-block recipe sets it False).
    .fp8_primary_weights = true,
    // NVIDIA/Megatron-LM@d98e8a64: tensor, sequence, context and pipeline parallelism
    // (megatron/core/model_parallel_config.py), virtual stages
    // (--num-layers-per-virtual-pipeline-stage), the distributed optimizer, Megatron-FSDP
    // and FSDP2, and --optimizer-cpu-offload (megatron/core/optimizer/__init__.py builds a
    // HybridDeviceOptimizer with CPUAdam; megatron/core/optimizer/cpu_offloading/README.md:
    // "Gradient copy from GPU to CPU, CPU optimizer step, and subsequent parameter copy
    // from CPU to GPU").
    .software = "Megatron-Core with Transformer Engine (NVIDIA/Megatron-LM@d98e8a64)",
    .uneven_pipeline_split = true,
    // --pipeline-model-parallel-layout (megatron/core/transformer/pipeline_parallel_layer_layout.py),
    // --recompute-granularity selective --recompute-modules (transformer_config.py@d98e8a64).
    .custom_pipeline_layout = true,
    .fine_grained_recompute = true,
    .zero_stages = 0b1111,
    .hybrid_sharding = true,
    // tp-cp-ep-dp-pp, or tp-cp-ep-pp-dp with --use-tp-pp-dp-mapping
    // (megatron/training/initialize.py@d98e8a64, parallel_state.initialize_model_parallel).
    .rank_orders = enum_set<rank_order>::all(),
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
    // --fp8-recipe delayed|tensorwise|mxfp8|blockwise (tensorwise: current scaling) and
    // --fp4-format e2m1 with --fp4-recipe nvfp4 (transformer_config.py@d98e8a64).
    .fp8_scalings = enum_set<fp8_scaling>::all(),
    // --moe-token-dispatcher-type alltoall|allgather, and flex with the DeepEP or HybridEP
    // backend (megatron/core/transformer/moe/token_dispatcher.py@d98e8a64; the ncclep
    // backend is not modelled).
    .moe_dispatchers = {moe_dispatcher::alltoall, moe_dispatcher::allgather, moe_dispatcher::deepep,
                        moe_dispatcher::hybridep},
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

// torchtitan (pytorch/torchtitan@b0902b29, 2025-07-01) on PyTorch: the model's own
// PyTorch code (torchtitan/models/llama3/model/model.py: nn.RMSNorm, RoPE through
// complex multiplication, repeat_kv, F.scaled_dot_product_attention, SwiGLU as
// w2(silu(w1(x)) · w3(x)); the same ops and module calls as the Hugging Face LLaMA code
// this engine already follows, so runs_model_code), laid out by torchtitan's
// parallelize_llama (torchtitan/models/llama3/infra/parallelize.py):
//   - FSDP2 fully_shard per TransformerBlock with MixedPrecisionPolicy(param bfloat16,
//     reduce float32) (config_manager.py mixed_precision_param / mixed_precision_reduce):
//     the sharded fp32 parameters are the master copy, the gradients reduced and kept
//     sharded in fp32 (fp32_gradient_accumulation), ZeRO-3; without sharding,
//     replicate() (DDP, ZeRO 0) with torch.autocast (bf16-amp); HSDP (hybrid_sharding);
//     reshard_after_forward "default": on without pipeline stages, off with them
//     (keeps_gathered_with_pipeline);
//   - tensor parallelism through DTensor with sequence parallelism for the norms
//     (apply_tp), context parallelism (context_parallel, ring attention), pipeline
//     parallelism with 1F1B, interleaved 1F1B and others (pipeline_parallel_schedule),
//     uneven splits (pipeline_parallel_split_points);
//   - activation checkpointing: full (checkpoint_wrapper, preserve_rng_state=False) or
//     the op-level selective policy (recompute_mode::op_selective), the default of its
//     Llama 3 recipes (train_configs/llama3_8b.toml: mode "selective",
//     selective_ac_option "op"), and no Megatron-style selective recompute;
//   - torch.compile per TransformerBlock (--training.compile, off by default);
//   - the optimizers Adam and AdamW with implementation "fused" by default
//     (components/optimizer.py, config_manager.py); clip_grad_norm_ every step
//     (train.py; max_norm 1.0), PyTorch's scaling every gradient;
//   - Float8 training through torchao (Float8Linear, tensorwise or rowwise dynamic
//     scaling: --fp8-scaling current); the loss upcasts the logits to fp32
//     (components/loss.py cross_entropy_loss).
// Not modelled: async tensor parallelism (symmetric-memory micro-pipelining, with
// compile only), the zero-bubble schedules of torch.distributed.pipelining (not ZB-H1),
// FSDP2's CPU offload (parameters and gradients on the host: another mechanism than
// the optimizer offload priced here), DTensor's and FSDP2's own Python per op and per
// block. ASSUMPTIONs as for the other profiles: overlappable share 0.8, 5 ms per step.
inline constexpr framework_profile torchtitan_profile{
    .name = "torchtitan",
    .fused_softmax = false,
    .fused_bias_gelu = false,
    .fused_bias_dropout_add = false,
    .flash_attention = true,
    // SDPA's flash backend (torchtitan's op-level policy saves
    // _scaled_dot_product_flash_attention's and the efficient kernel's outputs).
    .flash_kernel = attention_kernel::flash2,
    .runs_model_code = true,
    .head_layout_copies = false,  // q, k, v transposed as views into SDPA
    .fused_optimizer = true,
    .scales_gradients_every_step = true,
    .overlap_data_parallel_sync = true,
    .overlappable_backward_fraction = 0.8,
    .fp32_gradient_accumulation = true,
    .software = "torchtitan on PyTorch (FSDP2, DTensor; pytorch/torchtitan@b0902b29)",
    .ring_merge = kv_ring_merge::eager,  // PyTorch's ring attention (context_parallel)
    .optimizer_offload = false,
    .uneven_pipeline_split = true,
    .recompute_modes = {recompute_mode::none, recompute_mode::full, recompute_mode::op_selective},
    .layer_compile = true,
    .zero_stages = 0b1001,  // replicate() (DDP) and FSDP2 fully_shard
    .hybrid_sharding = true,
    // One device mesh, ["pp", "dp_replicate", "dp_shard", "cp", "tp"] (tp fastest;
    // torchtitan/distributed/parallel_dims.py@b0902b29).
    .rank_orders = {rank_order::tp_dp_pp},
    .optimizers = {optimizer_kind::adamw, optimizer_kind::adamw_fused},
    // fp32 (mixed_precision_param float32), bf16 under FSDP2 (fp32 master shards, bf16
    // compute), bf16-amp without sharding (torch.autocast), Float8 Linears (fp8).
    .precisions = {precision_kind::fp32, precision_kind::bf16, precision_kind::bf16_amp, precision_kind::fp8},
    .finetune_modes = {finetune_mode::full},
    .host_optimizers = {},
    // torchao's dynamic scaling only: Float8 recipe "tensorwise" (current scaling; its
    // "rowwise" recipes are not modelled) and MX "mxfp8" (torchtitan/config_manager.py
    // and torchtitan/components/quantization/mx.py@b0902b29); no delayed scaling, no
    // NVFP4 training.
    .fp8_scalings = {fp8_scaling::current, fp8_scaling::mxfp8},
    .per_step_overhead = milliseconds_of(5.0),
    .checkpoint_rng_state = false,
    .keeps_gathered_with_pipeline = true,
    .fp32_sharded_parameters = true,
    .memory = {
        .fp32_logits = true,   // cross_entropy over pred.float()
        .loss_buffers = 2.0,
        .workspace = mebibytes_of(32.0),
        .fragmentation = 0.05,  // ASSUMPTION, as the Trainer's (with plain segments)
        // torchtitan's launcher sets PYTORCH_CUDA_ALLOC_CONF="expandable_segments:True"
        // (run_train.sh@b0902b29).
        .expandable_segments = true,
    },
};

inline constexpr std::array framework_profiles{pytorch_eager_profile, megatron_profile, deepspeed_profile,
                                               megatron_core_profile, torchtitan_profile, megatron_deepspeed_profile};

constexpr const framework_profile& lookup_framework(std::string_view name) {
    return find_by_name(framework_profiles, "framework", name);
}

}  // namespace trainperf
