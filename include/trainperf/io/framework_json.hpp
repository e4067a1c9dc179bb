// A framework profile as a JSON description (schema "trainperf.framework.v2"; v2
// replaced v1's gelu_kernels by runs_model_code, the model's own activation and
// attention code, and added the host costs of eager execution): every
// field of framework_profile and its memory_overheads, times and sizes in base units
// (seconds, bytes). `trainperf frameworks --json NAME` prints it, `--framework-file`
// reads it. Every field is required; unknown fields, wrong types and values out of range
// are errors naming the field.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <utility>

#include <nlohmann/json.hpp>

#include "../core/units.hpp"
#include "../spec/framework.hpp"
#include "description_file.hpp"

namespace trainperf::io {

inline constexpr std::string_view framework_schema = "trainperf.framework.v2";

// The ZeRO stages a profile offers (framework_profile::zero_stages) as a list.
inline nlohmann::json zero_stage_list(unsigned stages) {
    nlohmann::json list = nlohmann::json::array();
    for (int z = 0; z <= 3; ++z)
        if (stages & (1u << z)) list.push_back(z);
    return list;
}

inline nlohmann::json framework_to_json(const framework_profile& f) {
    const memory_overheads& o = f.memory;
    return {{"schema", std::string(framework_schema)},
            {"name", std::string(f.name)},
            {"fused_softmax", f.fused_softmax},
            {"fused_bias_gelu", f.fused_bias_gelu},
            {"fused_bias_dropout_add", f.fused_bias_dropout_add},
            {"flash_attention", f.flash_attention},
            {"flash_kernel", std::string(to_string(f.flash_kernel))},
            {"runs_model_code", f.runs_model_code},
            {"head_layout_copies", f.head_layout_copies},
            {"fused_rope", f.fused_rope},
            {"backward_traffic_ratio", f.backward_traffic_ratio},
            {"loss", std::string(to_string(f.loss))},
            {"fused_optimizer", f.fused_optimizer},
            {"scales_gradients_every_step", f.scales_gradients_every_step},
            {"unfused_optimizer_passes", f.unfused_optimizer_passes},
            {"unfused_kernels_per_tensor", f.unfused_kernels_per_tensor},
            {"overlap_data_parallel_sync", f.overlap_data_parallel_sync},
            {"overlappable_backward_fraction", f.overlappable_backward_fraction},
            {"fp32_gradient_accumulation", f.fp32_gradient_accumulation},
            {"overlap_parameter_gather", f.overlap_parameter_gather},
            {"reshard_after_forward", f.reshard_after_forward},
            {"zero3_per_tensor_collectives", f.zero3_per_tensor_collectives},
            {"tensor_parallel_overlap", f.tensor_parallel_overlap},
            {"fp8_weight_cache", f.fp8_weight_cache},
            {"fp8_primary_weights", f.fp8_primary_weights},
            {"software", std::string(f.software)},
            {"tensor_parallel", f.tensor_parallel},
            {"sequence_parallel", f.sequence_parallel},
            {"context_parallel", f.context_parallel},
            {"pipeline_parallel", f.pipeline_parallel},
            {"interleaved_pipeline", f.interleaved_pipeline},
            {"optimizer_offload", f.optimizer_offload},
            {"uneven_pipeline_split", f.uneven_pipeline_split},
            {"zero_bubble_schedule", f.zero_bubble_schedule},
            {"custom_pipeline_layout", f.custom_pipeline_layout},
            {"fine_grained_recompute", f.fine_grained_recompute},
            {"zero_stages", zero_stage_list(f.zero_stages)},
            {"hybrid_sharding", f.hybrid_sharding},
            {"optimizers", name_list(f.optimizers)},
            {"precisions", name_list(f.precisions)},
            {"finetune_modes", name_list(f.finetune_modes)},
            {"host_optimizers", name_list(f.host_optimizers)},
            {"fp8_scalings", name_list(f.fp8_scalings)},
            {"rank_orders", name_list(f.rank_orders)},
            {"moe_dispatchers", name_list(f.moe_dispatchers)},
            {"per_step_overhead_seconds", f.per_step_overhead.value()},
            {"host_costs_in_bare_ops",
             {{"op", f.host.op},
              {"gemm", f.host.gemm},
              {"view", f.host.view},
              {"module", f.host.module},
              {"backward_node", f.host.backward_node},
              {"backward_launch", f.host.backward_launch},
              {"function", f.host.function},
              {"function_backward", f.host.function_backward},
              {"collective", f.host.collective},
              {"rng_state", f.host.rng_state},
              {"library_module", f.host.library_module},
              {"library_module_backward", f.host.library_module_backward},
              {"compiled_graph", f.host.compiled_graph},
              {"compiled_launch", f.host.compiled_launch},
              {"dispatch_mode", f.host.dispatch_mode}}},
            {"layer_host_calls",
             {{"modules", f.layer_host.modules},
              {"views", f.layer_host.views},
              {"functions", f.layer_host.functions},
              {"rotary_functions", f.layer_host.rotary_functions},
              {"scripted_calls", f.layer_host.scripted_calls},
              {"rng_forks", f.layer_host.rng_forks},
              {"library_modules", f.layer_host.library_modules},
              {"gradient_hooks", f.layer_host.gradient_hooks}}},
            {"cuda_graphs", f.cuda_graphs},
            {"recompute_modes", name_list(f.recompute_modes)},
            {"layer_compile", f.layer_compile},
            {"compiled", f.compiled},
            {"checkpoint_rng_state", f.checkpoint_rng_state},
            {"keeps_gathered_with_pipeline", f.keeps_gathered_with_pipeline},
            {"fp32_sharded_parameters", f.fp32_sharded_parameters},
            {"ring_merge", std::string(to_string(f.ring_merge))},
            {"memory",
             {{"fp32_logits", o.fp32_logits},
              {"loss_buffers", o.loss_buffers},
              {"dropout", o.dropout},
              {"workspace_bytes", o.workspace.value()},
              {"temporaries_bytes", o.temporaries.value()},
              {"gradient_buckets_bytes", o.gradient_buckets.value()},
              {"gradient_bucket_copy", o.gradient_bucket_copy},
              {"optimizer_temporaries", o.optimizer_temporaries},
              {"fragmentation", o.fragmentation},
              {"expandable_segments", o.expandable_segments},
              {"host_reserve_bytes", o.host_reserve.value()},
              {"cuda_context_bytes", o.cuda_context.value()}}}};
}

inline framework_profile framework_from_json(const nlohmann::json& j) {
    require_nesting(j, "", max_description_depth);
    namespace dd = description_detail;
    dd::only_keys(j, "",
                  {"schema", "name", "fused_softmax", "fused_bias_gelu", "fused_bias_dropout_add", "flash_attention",
                   "runs_model_code", "head_layout_copies", "backward_traffic_ratio", "fused_optimizer",
                   "unfused_optimizer_passes", "unfused_kernels_per_tensor", "overlap_data_parallel_sync",
                   "overlappable_backward_fraction", "fp32_gradient_accumulation", "per_step_overhead_seconds",
                   "host_costs_in_bare_ops", "memory", "flash_kernel", "overlap_parameter_gather",
                   "tensor_parallel_overlap", "uneven_pipeline_split", "zero_bubble_schedule", "custom_pipeline_layout", "fine_grained_recompute", "zero_stages",
                   "hybrid_sharding", "reshard_after_forward", "layer_host_calls", "cuda_graphs",
                   "scales_gradients_every_step", "software", "tensor_parallel", "sequence_parallel",
                   "context_parallel", "pipeline_parallel", "interleaved_pipeline", "optimizer_offload",
                   "optimizers", "precisions", "finetune_modes", "host_optimizers", "fp8_scalings", "rank_orders", "moe_dispatchers", "recompute_modes",
                   "layer_compile", "compiled", "checkpoint_rng_state", "keeps_gathered_with_pipeline",
                   "fp32_sharded_parameters", "ring_merge", "loss", "fp8_weight_cache",
                   "fp8_primary_weights", "fused_rope", "zero3_per_tensor_collectives"});
    dd::schema(j, framework_schema);
    framework_profile f;
    f.name = keep_text(dd::name_text(j, "", "name"));
    f.fused_softmax = dd::boolean(j, "", "fused_softmax");
    f.fused_bias_gelu = dd::boolean(j, "", "fused_bias_gelu");
    f.fused_bias_dropout_add = dd::boolean(j, "", "fused_bias_dropout_add");
    f.flash_attention = dd::boolean(j, "", "flash_attention");
    // Optional (added within v2; absent: FlashAttention-2, no overlap, the pipeline split
    // evenly and run 1F1B or interleaved only, ZeRO 0-3 over every data-parallel rank,
    // ZeRO-3 resharding after forward).
    if (j.contains("flash_kernel"))
        f.flash_kernel = dd::enum_value<attention_kernel>(j, "", "flash_kernel");
    if (j.contains("overlap_parameter_gather"))
        f.overlap_parameter_gather = dd::boolean(j, "", "overlap_parameter_gather");
    if (j.contains("tensor_parallel_overlap")) f.tensor_parallel_overlap = dd::boolean(j, "", "tensor_parallel_overlap");
    if (j.contains("uneven_pipeline_split")) f.uneven_pipeline_split = dd::boolean(j, "", "uneven_pipeline_split");
    if (j.contains("zero_bubble_schedule")) f.zero_bubble_schedule = dd::boolean(j, "", "zero_bubble_schedule");
    if (j.contains("custom_pipeline_layout"))
        f.custom_pipeline_layout = dd::boolean(j, "", "custom_pipeline_layout");
    if (j.contains("fine_grained_recompute"))
        f.fine_grained_recompute = dd::boolean(j, "", "fine_grained_recompute");
    if (j.contains("hybrid_sharding")) f.hybrid_sharding = dd::boolean(j, "", "hybrid_sharding");
    if (j.contains("reshard_after_forward")) f.reshard_after_forward = dd::boolean(j, "", "reshard_after_forward");
    if (j.contains("cuda_graphs")) f.cuda_graphs = dd::boolean(j, "", "cuda_graphs");
    // Optional too (absent: Megatron's recompute modes, no torch.compile, the generators'
    // states saved around a checkpoint, reshard_after_forward with pipeline stages too,
    // a 16-bit ZeRO-3 shard beside the fp32 master, the context-parallel ring's merges
    // fused, the loss PyTorch's cross-entropy, fp8 weights cast in every forward and
    // kept beside 16-bit ones, RoPE as PyTorch ops, ZeRO-3 moving each layer's parameters
    // in one collective).
    if (j.contains("ring_merge")) f.ring_merge = dd::enum_value<kv_ring_merge>(j, "", "ring_merge");
    if (j.contains("loss")) f.loss = dd::enum_value<loss_implementation>(j, "", "loss");
    if (j.contains("recompute_modes"))
        f.recompute_modes = dd::enum_list<recompute_mode>(j, "", "recompute_modes", false);
    for (const auto& [key, field] : {std::pair<std::string_view, bool*>{"layer_compile", &f.layer_compile},
                                     {"compiled", &f.compiled},
                                     {"checkpoint_rng_state", &f.checkpoint_rng_state},
                                     {"keeps_gathered_with_pipeline", &f.keeps_gathered_with_pipeline},
                                     {"fp32_sharded_parameters", &f.fp32_sharded_parameters},
                                     {"fp8_weight_cache", &f.fp8_weight_cache},
                                     {"fp8_primary_weights", &f.fp8_primary_weights},
                                     {"fused_rope", &f.fused_rope},
                                     {"zero3_per_tensor_collectives", &f.zero3_per_tensor_collectives}})
        if (j.contains(std::string(key))) *field = dd::boolean(j, "", key);
    if (j.contains("scales_gradients_every_step"))
        f.scales_gradients_every_step = dd::boolean(j, "", "scales_gradients_every_step");
    // What the software runs (optional; absent: everything the engine models, as a
    // profile that does not say is taken to describe software that runs it).
    if (j.contains("software")) f.software = keep_text(dd::text(j, "", "software", 200));
    for (const auto& [key, field] : {std::pair<std::string_view, bool*>{"tensor_parallel", &f.tensor_parallel},
                                     {"sequence_parallel", &f.sequence_parallel},
                                     {"context_parallel", &f.context_parallel},
                                     {"pipeline_parallel", &f.pipeline_parallel},
                                     {"interleaved_pipeline", &f.interleaved_pipeline},
                                     {"optimizer_offload", &f.optimizer_offload}})
        if (j.contains(std::string(key))) *field = dd::boolean(j, "", key);
    // Optional too (absent: every optimizer, recipe, fine-tuning mode, scaling and rank
    // order, on the host too; no MoE dispatcher).
    if (j.contains("optimizers")) f.optimizers = dd::enum_list<optimizer_kind>(j, "", "optimizers", false);
    if (j.contains("precisions")) f.precisions = dd::enum_list<precision_kind>(j, "", "precisions", false);
    if (j.contains("finetune_modes")) f.finetune_modes = dd::enum_list<finetune_mode>(j, "", "finetune_modes", false);
    if (j.contains("host_optimizers"))
        f.host_optimizers = dd::enum_list<optimizer_kind>(j, "", "host_optimizers", true);
    if (j.contains("fp8_scalings")) f.fp8_scalings = dd::enum_list<fp8_scaling>(j, "", "fp8_scalings", false);
    if (j.contains("rank_orders")) f.rank_orders = dd::enum_list<rank_order>(j, "", "rank_orders", false);
    if (j.contains("moe_dispatchers"))
        f.moe_dispatchers = dd::enum_list<moe_dispatcher>(j, "", "moe_dispatchers", true);
    // Optional too (absent: the generic layer's calls, as before they were counted).
    if (j.contains("layer_host_calls")) {
        const auto& c = dd::field(j, "", "layer_host_calls");
        const std::string_view cctx = "layer_host_calls";
        dd::only_keys(c, cctx,
                      {"modules", "views", "functions", "rotary_functions", "scripted_calls", "rng_forks",
                       "library_modules", "gradient_hooks"});
        layer_host_inventory& inv = f.layer_host;
        inv.modules = dd::number(c, cctx, "modules", 0, 1000, "(calls per layer)");
        inv.views = dd::number(c, cctx, "views", 0, 1000, "(calls per layer)");
        inv.functions = dd::number(c, cctx, "functions", 0, 1000, "(calls per layer)");
        inv.rotary_functions = dd::number(c, cctx, "rotary_functions", 0, 1000, "(calls per layer)");
        inv.scripted_calls = dd::number(c, cctx, "scripted_calls", 0, 1000, "(calls per layer)");
        inv.rng_forks = dd::number(c, cctx, "rng_forks", 0, 1000, "(forks per layer)");
        inv.library_modules = dd::number(c, cctx, "library_modules", 0, 1000, "(modules per layer)");
        inv.gradient_hooks = dd::boolean(c, cctx, "gradient_hooks");
    }
    if (j.contains("zero_stages")) {
        const auto& list = dd::field(j, "", "zero_stages");
        if (!list.is_array() || list.empty() || list.size() > 4)
            detail::fail("zero_stages", list.dump(), "must be a list of the ZeRO stages offered, e.g. [0, 1, 3]");
        f.zero_stages = 0;
        for (const auto& z : list) {
            if (!z.is_number_integer() || z.get<long long>() < 0 || z.get<long long>() > 3)
                detail::fail("zero_stages", z.dump(), "must be 0, 1, 2 or 3");
            f.zero_stages |= 1u << z.get<int>();
        }
    }
    f.runs_model_code = dd::boolean(j, "", "runs_model_code");
    f.head_layout_copies = dd::boolean(j, "", "head_layout_copies");
    f.backward_traffic_ratio = dd::number(j, "", "backward_traffic_ratio", 0, 16, "(ratio)");
    f.fused_optimizer = dd::boolean(j, "", "fused_optimizer");
    f.unfused_optimizer_passes = dd::number(j, "", "unfused_optimizer_passes", 1, 16, "(passes)");
    f.unfused_kernels_per_tensor = dd::integer(j, "", "unfused_kernels_per_tensor", 1, 64);
    f.overlap_data_parallel_sync = dd::boolean(j, "", "overlap_data_parallel_sync");
    f.overlappable_backward_fraction = dd::number(j, "", "overlappable_backward_fraction", 0, 1, "(a fraction)");
    f.fp32_gradient_accumulation = dd::boolean(j, "", "fp32_gradient_accumulation");
    f.per_step_overhead = seconds_of(dd::number(j, "", "per_step_overhead_seconds", 0, 3600, "s"));
    const auto& h = dd::field(j, "", "host_costs_in_bare_ops");
    const std::string_view hctx = "host_costs_in_bare_ops";
    dd::only_keys(h, hctx,
                  {"op", "gemm", "view", "module", "backward_node", "backward_launch", "function",
                   "function_backward", "collective", "rng_state", "library_module", "library_module_backward",
                   "compiled_graph", "compiled_launch", "dispatch_mode"});
    f.host.op = dd::number(h, hctx, "op", 0, 1000, "(bare ops)");
    f.host.gemm = dd::number(h, hctx, "gemm", 0, 1000, "(x an op)");
    f.host.view = dd::number(h, hctx, "view", 0, 1000, "(bare ops)");
    f.host.module = dd::number(h, hctx, "module", 0, 1000, "(bare ops)");
    f.host.backward_node = dd::number(h, hctx, "backward_node", 0, 1000, "(bare ops)");
    f.host.backward_launch = dd::number(h, hctx, "backward_launch", 0, 1000, "(bare ops)");
    // Optional (added within v2; absent: the defaults of spec/framework.hpp eager_host_costs).
    for (const auto& [key, value] : {std::pair<const char*, double*>{"function", &f.host.function},
                                     {"function_backward", &f.host.function_backward},
                                     {"collective", &f.host.collective},
                                     {"rng_state", &f.host.rng_state},
                                     {"library_module", &f.host.library_module},
                                     {"library_module_backward", &f.host.library_module_backward},
                                     {"compiled_graph", &f.host.compiled_graph},
                                     {"compiled_launch", &f.host.compiled_launch},
                                     {"dispatch_mode", &f.host.dispatch_mode}})
        if (h.contains(key)) *value = dd::number(h, hctx, key, 0, 1000, "(bare ops)");

    const auto& m = dd::field(j, "", "memory");
    const std::string_view ctx = "memory";
    dd::only_keys(m, ctx,
                  {"fp32_logits", "loss_buffers", "dropout", "workspace_bytes", "temporaries_bytes",
                   "gradient_buckets_bytes", "gradient_bucket_copy", "optimizer_temporaries", "fragmentation",
                   "expandable_segments", "host_reserve_bytes", "cuda_context_bytes"});
    constexpr double max_bytes = 1e13;  // 10 TB: more than any device holds
    memory_overheads& o = f.memory;
    o.fp32_logits = dd::boolean(m, ctx, "fp32_logits");
    o.loss_buffers = dd::number(m, ctx, "loss_buffers", 0, 64, "(logit-sized buffers)");
    o.dropout = dd::boolean(m, ctx, "dropout");
    o.workspace = bytes_of(dd::number(m, ctx, "workspace_bytes", 0, max_bytes, "bytes"));
    o.temporaries = bytes_of(dd::number(m, ctx, "temporaries_bytes", 0, max_bytes, "bytes"));
    o.gradient_buckets = bytes_of(dd::number(m, ctx, "gradient_buckets_bytes", 0, max_bytes, "bytes"));
    o.gradient_bucket_copy = dd::number(m, ctx, "gradient_bucket_copy", 0, 4, "(copies of the gradients)");
    o.optimizer_temporaries = dd::number(m, ctx, "optimizer_temporaries", 0, 16, "(x local fp32 parameter bytes)");
    o.fragmentation = dd::number(m, ctx, "fragmentation", 0, 0.99, "(a fraction of the peak)");
    if (m.contains("expandable_segments")) o.expandable_segments = dd::boolean(m, ctx, "expandable_segments");
    o.host_reserve = bytes_of(dd::number(m, ctx, "host_reserve_bytes", 0, max_bytes, "bytes"));
    o.cuda_context = bytes_of(dd::number(m, ctx, "cuda_context_bytes", 0, max_bytes, "bytes"));
    validate(f);
    return f;
}

// `trainperf --framework-file PATH`: the profile the file describes; errors name the file.
inline framework_profile load_framework_file(const std::filesystem::path& path) {
    const auto j = read_description_file(path);
    return with_file_context(path, [&] { return framework_from_json(j); });
}

inline void save_framework_file(const std::filesystem::path& path, const framework_profile& f) {
    write_description_file(path, framework_to_json(f));
}

}  // namespace trainperf::io
