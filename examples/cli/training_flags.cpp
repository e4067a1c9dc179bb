#include "training_flags.hpp"

#include "parse_units.hpp"

#include <trainperf/core/limits.hpp>
#include <trainperf/spec/gpu_catalog.hpp>
#include <trainperf/io/description_file.hpp>
#include <trainperf/io/framework_json.hpp>
#include <trainperf/io/gpu_json.hpp>
#include <trainperf/io/json.hpp>
#include <trainperf/io/system_json.hpp>
#include <trainperf/spec/layout_text.hpp>
#include <trainperf/spec/model_catalog.hpp>
#include <trainperf/spec/system.hpp>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <optional>
#include <tuple>

namespace trainperf::cli {

namespace {
// A value as one shell word: quoted unless it is made of characters no shell treats
// specially.
std::string shell_word(std::string_view s) {
    const bool plain = !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || std::string_view("_-./:=+,@%").find(c) != std::string_view::npos;
    });
    if (plain) return std::string(s);
    std::string q = "'";
    for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return q + "'";
}

// The shortest text that reads back as the same double.
std::string exact(double v) {
    char buf[32];
    const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
    return ec == std::errc{} ? std::string(buf, end) : std::to_string(v);
}
}  // namespace

void training_flags::add_to(CLI::App* sub, bool require_model, flag_set set) {
    auto* g = sub->add_option("--gpu", gpu, "GPU name (trainperf gpus); or --gpu-file");
    auto* gf = sub->add_option("--gpu-file", gpu_file,
                               "GPU description file (trainperf gpus --json NAME prints one; docs/extending.md)");
    g->excludes(gf);
    model.add_to(sub, require_model);
    if (set == flag_set::all)
        sub->add_option("--batch,--micro-batch", batch, "Micro-batch per model replica (default 1)");
    sub->add_option("--seq", seq, "Sequence length (default: the model's training length, train_seq, else its max_seq)")
        ->check(CLI::Range(1, limits::max_sequence));
    sub->add_option("--gpus", gpus, "Total GPUs (default tp x cp x pp); dp = gpus / (tp x cp x pp)")
        ->check(CLI::Range(1, max_gpus));
    auto* per_node = sub->add_option("--gpus-per-node", gpus_per_node,
                                     "GPUs per node (default min(gpus, the GPU's system's node): 8, or 4 for a "
                                     "GB200/GB300 NVL72 tray)")
                         ->check(CLI::Range(1, limits::max_gpus_per_node));
    auto* domain = sub->add_option("--nvlink-domain", nvlink_domain,
                                   "GPUs of one NVLink domain, whole nodes (0: the node; default: the GPU's "
                                   "system's, 72 for an NVL72 rack): groups inside it use NVLink across nodes")
                       ->check(CLI::Range(0, limits::max_gpus_per_node));
    if (set != flag_set::system_only) {
        sub->add_option("--tp", tp,
                        "Tensor-parallel size (across NVLink domains it crosses the network: priced, not refused)");
        sub->add_option("--cp", cp,
                        "Context-parallel size: the sequence split over cp ranks, K and V passed around a ring "
                        "(Megatron-Core + Transformer Engine; seq divisible by 2 x cp; default 1)");
        sub->add_option("--pp", pp, "Pipeline stages");
        sub->add_option("--interleave", interleave, "Virtual pipeline stages per rank (default 1)");
        sub->add_option("--schedule", schedule,
                        enum_name_list<pipeline_schedule>() + ": the pipeline schedule (default 1f1b; zb-h1: "
                                                              "zero bubble, Qi et al. 2024)");
        sub->add_option("--first-stage-layers", first_stage_layers,
                        "Layers on the first pipeline stage (default 0: an even split)");
        sub->add_option("--last-stage-layers", last_stage_layers,
                        "Layers on the last pipeline stage (default 0: an even split)");
        sub->add_option("--pipeline-layout", pipeline_layout,
                        "The layers of each virtual pipeline stage, as Megatron-Core's "
                        "--pipeline-model-parallel-layout: stages split by |, E embedding, t layer, m MTP module, "
                        "L loss, x*n and (...)*n repeat, e.g. \"Et|(tt|)*30mL\" (pp x interleave stages; quote it)");
        sub->add_flag("--sp", sp, "Sequence parallelism (with --tp)");
        sub->add_option("--zero", zero, "ZeRO stage 0|1|2|3");
        sub->add_option("--shard-group", shard_group,
                        "Data-parallel ranks that shard ZeRO's state, replicated across the others (hybrid "
                        "sharding, FSDP HSDP; default 0: all of them)");
        sub->add_option("--ep", ep,
                        "Expert-parallel size: an MoE model's routed experts split over ep ranks of the tp x cp x dp "
                        "ranks of a stage (default 1)");
        sub->add_option("--etp", etp, "Expert-tensor-parallel size: each expert's FFN split over etp ranks (default 0: tp)");
        sub->add_option("--offload", offload, enum_name_list<offload_mode>() + " (default none)");
        sub->add_option("--grad-accum", grad_accum, "Micro-batches per step per replica (default 1)");
        sub->add_option("--recompute", recompute, enum_name_list<recompute_mode>() + " (default none)");
        sub->add_option("--recompute-modules", recompute_modules,
                        "With --recompute selective, the submodules recomputed, a list of " +
                            enum_name_list<recompute_module>(", ") +
                            " (Megatron-Core --recompute-modules; default core-attn)");
        sub->add_option("--dp-overlap", dp_overlap,
                        enum_name_list<dp_overlap_mode>() +
                            ": data-parallel sync overlaps backward as the framework does it, or always, or never "
                            "(default framework)");
    }
    // How an MoE model runs, whatever its layout (plan takes them too).
    sub->add_option("--moe-dispatcher", moe_dispatcher,
                    enum_name_list<trainperf::moe_dispatcher>() +
                        ": how an MoE layer's tokens reach their experts' ranks (Megatron-Core "
                        "--moe-token-dispatcher-type; deepep, hybridep: flex with that backend; default "
                        "alltoall)");
    sub->add_option("--moe-imbalance", moe_imbalance,
                    "The busiest expert's tokens over the mean, 1 = balanced (default 1.2, an assumption: "
                    "docs/engine.md)");
    sub->add_flag("--moe-a2a-overlap", moe_a2a_overlap,
                  "An MoE model's dispatch and combine hidden behind another micro-batch's compute "
                  "(Megatron-Core --overlap-moe-expert-parallel-comm --delay-wgrad-compute; ep > 1, no full "
                  "recompute)");
    sub->add_flag("--moe-shared-expert-overlap", moe_shared_expert_overlap,
                  "An MoE model's shared experts on a side stream beside the token dispatch and combine "
                  "(Megatron-Core --moe-shared-expert-overlap; shared experts, alltoall/deepep/hybridep, not with "
                  "--moe-a2a-overlap)");
    sub->add_option("--moe-capacity-factor", moe_capacity_factor,
                    "Tokens an expert takes at most over its balanced share, beyond them dropped (default 0: "
                    "dropless)");
    sub->add_option("--precision", precision,
                    enum_name_list<precision_kind>() +
                        ", mxfp8 (fp8 with MXFP8 block scaling), nvfp4 (Transformer Engine's NVFP4 Linears: E2M1 "
                        "values, E4M3 scales per 16; Blackwell) (default bf16)");
    sub->add_option("--fp8-scaling", scaling,
                    enum_name_list<fp8_scaling>() +
                        ": with --precision fp8, Transformer Engine's delayed scaling (scales from an amax history, "
                        "one read per cast), current scaling (an amax pass before each cast), mxfp8 (an E8M0 scale "
                        "per 32 values; Blackwell) or blockwise (fp32 scales per 1x128 and 128x128 blocks, as "
                        "DeepSeek-V3); nvfp4 is --precision nvfp4's own (default delayed; --precision mxfp8 is fp8 "
                        "with mxfp8)")
        ->check([](const std::string& v) { return v.empty() ? std::string("must not be empty") : std::string(); });
    sub->add_option("--optimizer", optimizer, enum_name_list<optimizer_kind>() + " (default adamw)");
    sub->add_option("--finetune", finetune,
                    enum_name_list<finetune_mode>() +
                        ": train every parameter, or LoRA adapters on a frozen 16-bit base, or on a 4-bit NF4 "
                        "base (QLoRA) (default full)");
    sub->add_option("--lora-rank", lora_rank, "LoRA rank r (default 16; with --finetune lora|qlora)");
    sub->add_option("--lora-targets", lora_targets,
                    "Projections with adapters: a comma-separated list of q,k,v,o,gate,up,down, or all-linear "
                    "(default q,v; with --finetune lora|qlora)");
    auto* fw =
        sub->add_option("--framework", framework, catalog_names(framework_profiles) + " (default pytorch-eager)");
    fw->excludes(sub->add_option("--framework-file", framework_file,
                                 "Framework profile file (trainperf frameworks --json NAME prints one)"));
    auto* grads = sub->add_option(
        "--grad-reduce-dtype", grad_reduce_dtype,
        "fp32|bf16|fp16: the format gradients are accumulated and reduced in: fp32 main gradients (Megatron-LM's "
        "default with --bf16, DeepSpeed), or the recipe's 16-bit format (Megatron-LM --grad-reduce-in-bf16, "
        "DistributedDataParallelConfig(grad_reduce_in_fp32=False)) (default: the framework profile's)");
    grads->excludes(sub->add_flag("--fp32-grads", fp32_grads, "The same as --grad-reduce-dtype fp32"));
    sub->add_option("--flash-attention", flash_attention,
                    "on|off: the attention core as one fused kernel without the s x s tensor (FlashAttention, "
                    "PyTorch SDPA), whatever the framework profile does (default: the profile's)");
    sub->add_option("--tp-comm-overlap", tp_comm_overlap,
                    "on|off: tensor-parallel communication overlapped with chunked GEMMs (Transformer Engine "
                    "userbuffers; with --sp) (default: the profile's)");
    sub->add_option("--overlap-param-gather", overlap_param_gather,
                    "on|off: the sharded optimizer's parameter all-gather during the next forward (default: the "
                    "profile's)");
    sub->add_option("--reshard-after-forward", reshard_after_forward,
                    "on|off: ZeRO-3 frees each unit's gathered weights after its forward and gathers them again for "
                    "backward (FSDP FULL_SHARD), or keeps them until backward (SHARD_GRAD_OP) (default: the "
                    "profile's)");
    sub->add_option("--cuda-graphs", cuda_graphs,
                    "on|off: each layer's forward and backward replayed from CUDA graphs, one launch per pass "
                    "instead of every kernel from Python (Megatron-Core --cuda-graph-impl; not with full recompute, "
                    "optimizer offload or ZeRO-3) (default: the profile's)");
    sub->add_option("--compile", compile,
                    "on|off: each layer compiled with torch.compile (Inductor): its elementwise chains fused into "
                    "one kernel each, one compiled call per pass (frameworks that compile their layers: "
                    "torchtitan --training.compile) (default: the profile's)");
    sub->add_option("--fp8-params", fp8_params,
                    "on|off: with --precision fp8, the Linear weights held in FP8 as the parameters, no 16-bit copy, "
                    "and all-gathered in FP8 by the sharded optimizer (Megatron-Core --fp8-param-gather; ZeRO 1 to "
                    "3; frameworks that cache FP8 weights) (default: the profile's)");
    sub->add_option("--expandable-segments", expandable_segments,
                    "on|off: PyTorch's caching allocator with expandable segments "
                    "(PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True): its slack is the partly used pages of its "
                    "pools instead of the profile's fragmentation share (default: the profile's)");
    auto* link_opt = sub->add_option("--link", link, "GPU-GPU link inside a node: " + enum_name_list<link_kind>() +
                                                          " (default: the GPU's)");
    auto* link_bw = sub->add_option("--link-bandwidth", link_bandwidth,
                                    "Measured link bandwidth per direction, e.g. 52.8GB/s");
    auto* inter_bw = sub->add_option(
        "--inter-node-bandwidth", inter_node_bandwidth,
        "Line rate per GPU, per direction, e.g. 50GB/s (default: the adapter sold with the GPU, 25GB/s HDR for A100, "
        "50GB/s NDR for H100/H200/B200/GB200, 100GB/s for B300/GB300)");
    sub->add_option("--rank-order", rank_order,
                    enum_name_list<trainperf::rank_order>() +
                        ": how the job numbers its ranks, fastest first (default tp-dp-pp, as Megatron-Core)");
    auto* sockets = sub->add_option("--sockets-per-node", sockets_per_node,
                                    "CPU sockets the node's cards are split over (PCIe machines; default 1)");
    auto* adapters = sub->add_option("--adapters-per-node", adapters_per_node,
                                     "Network adapters per node, shared by its GPUs (default 0: one per GPU)");
    auto* system = sub->add_option("--system-file", system_file,
                                   "System description file: GPUs per node, links inside and between nodes, "
                                   "adapters, sockets, each node's host (docs/extending.md); replaces the flags it "
                                   "describes");
    for (CLI::Option* o : {per_node, domain, link_opt, link_bw, inter_bw, sockets, adapters}) system->excludes(o);
    sub->add_option("--calibration", calibration, "Kernel-model parameters from `calibration` JSON");
    // The library's range for per-step extra times (validate(training_setup) checks them).
    const CLI::Range step_ms(limits::step_time.lo * 1e3, limits::step_time.hi * 1e3);
    sub->add_option("--data-ms", data_ms, "Loading one step's batch from storage, ms per step (default 0)")
        ->check(step_ms);
    sub->add_option("--pcie-ms", pcie_ms, "Copying it host to device, ms per step (default 0)")->check(step_ms);
    sub->add_flag("--no-prefetch", no_prefetch, "Load and copy before each step instead of overlapping it");
}

// The setup the flags describe, parsed but not yet checked as a whole (build makes a
// checked_setup of it; build_without_model checks what a bare parameter count needs).
training_setup training_flags::assemble() const {
    if (across_frameworks())
        throw usage_error("--framework = any: only `trainperf plan` and `trainperf fit` search every framework; "
                          "name one of " + catalog_names(framework_profiles, ", "));
    return assemble_with(framework_file.empty() ? lookup_framework(framework) : io::load_framework_file(framework_file));
}

void training_flags::apply_framework_flags(training_setup& s) const {
    if (fp32_grads) s.framework.fp32_gradient_accumulation = true;
    if (!grad_reduce_dtype.empty()) set_gradient_format(s, parse_enum<dtype>("grad-reduce-dtype", grad_reduce_dtype));
    for (const auto& [name, value, field] :
         {std::tuple<std::string_view, const std::string&, bool&>{"flash-attention", flash_attention,
                                                                   s.framework.flash_attention},
          std::tuple<std::string_view, const std::string&, bool&>{"tp-comm-overlap", tp_comm_overlap,
                                                                   s.framework.tensor_parallel_overlap},
          std::tuple<std::string_view, const std::string&, bool&>{"overlap-param-gather", overlap_param_gather,
                                                                   s.framework.overlap_parameter_gather},
          std::tuple<std::string_view, const std::string&, bool&>{"reshard-after-forward", reshard_after_forward,
                                                                   s.framework.reshard_after_forward},
          std::tuple<std::string_view, const std::string&, bool&>{"cuda-graphs", cuda_graphs,
                                                                   s.framework.cuda_graphs},
          std::tuple<std::string_view, const std::string&, bool&>{"compile", compile, s.framework.compiled},
          std::tuple<std::string_view, const std::string&, bool&>{"fp8-params", fp8_params,
                                                                   s.framework.fp8_primary_weights},
          std::tuple<std::string_view, const std::string&, bool&>{"expandable-segments", expandable_segments,
                                                                   s.framework.memory.expandable_segments}}) {
        if (value.empty()) continue;
        require(value == "on" || value == "off", name, value, "must be on or off");
        field = value == "on";
    }
    // An explicit --reshard-after-forward holds with pipeline stages too.
    if (!reshard_after_forward.empty()) s.framework.keeps_gathered_with_pipeline = false;
}

training_setup training_flags::assemble_with(const framework_profile& fw) const {
    training_setup s;
    if (gpu.empty() && gpu_file.empty()) throw usage_error("--gpu or --gpu-file: required");
    const gpu_spec g = gpu_file.empty() ? lookup_gpu(gpu) : io::load_gpu_file(gpu_file);
    const int total = gpus == 0 ? model_parallel_size(tp, pp, cp) : gpus;
    s.layout = {.dp = data_parallel_size(total, tp, pp, cp), .tp = tp, .cp = cp, .pp = pp, .interleave = interleave, .sp = sp,
                .zero = zero, .offload = parse_offload(offload), .micro_batch = batch,
                .grad_accum = grad_accum, .recompute = parse_recompute(recompute),
                .dp_overlap = parse_enum<dp_overlap_mode>("dp_overlap", dp_overlap),
                .schedule = parse_enum<pipeline_schedule>("schedule", schedule),
                .first_stage_layers = first_stage_layers, .last_stage_layers = last_stage_layers,
                .shard_group = shard_group, .ep = ep, .etp = etp,
                .pipeline_layout = pipeline_layout.empty() ? std::string_view{} : io::keep_text(pipeline_layout),
                .recompute_modules =
                    recompute_modules.empty() ? recompute_module_set{} : parse_recompute_modules(recompute_modules)};
    s.moe = {.dispatcher = parse_moe_dispatcher(moe_dispatcher), .capacity_factor = moe_capacity_factor,
             .imbalance = moe_imbalance, .a2a_overlap = moe_a2a_overlap,
             .shared_expert_overlap = moe_shared_expert_overlap};
    s.precision = parse_precision(precision);
    if (!scaling.empty()) {
        const fp8_scaling asked = parse_enum<fp8_scaling>("fp8-scaling", scaling);
        require(!name_fixes_scaling(s.precision) || asked == s.precision.scaling, "fp8-scaling", scaling,
                "--precision " + std::string(s.precision.name) + " has its own scaling (" +
                    std::string(to_string(s.precision.scaling)) + "); give one of them");
        s.precision.scaling = asked;
    }
    require(quantized_linears(s.precision) || s.precision.scaling == fp8_scaling::delayed, "fp8-scaling", scaling,
            "applies to --precision fp8, mxfp8 and nvfp4 only");
    s.optimizer = parse_optimizer(optimizer);
    // Adam is priced as AdamW (the same two fp32 moments and the same passes per step;
    // AdamW only decouples the weight decay): said, not silent.
    std::string spelled = optimizer;
    for (char& c : spelled) c = char(std::tolower(static_cast<unsigned char>(c)));
    if (spelled == "adam")
        notice("--optimizer " + optimizer + " is priced as adamw (the same two fp32 moments and passes per step)");
    s.finetune = {.mode = parse_enum<finetune_mode>("finetune", finetune), .rank = lora_rank,
                  .targets = parse_lora_targets(lora_targets)};
    s.framework = fw;
    apply_framework_flags(s);
    const auto order = parse_enum<trainperf::rank_order>("rank_order", rank_order);
    if (!system_file.empty())
        s.cluster = build_cluster(g, io::load_system_file(system_file), total, order);
    else
        s.cluster = build_cluster(
        {.gpu = g,
         .gpus = total,
         .gpus_per_node = gpus_per_node,
         .nvlink_domain = nvlink_domain,
         .link = link,
         .link_bandwidth = link_bandwidth.empty() ? std::nullopt
                                                  : std::optional(parse_byte_rate("--link-bandwidth", link_bandwidth)),
         .inter_node_line_rate = inter_node_bandwidth.empty()
                                     ? std::nullopt
                                     : std::optional(parse_byte_rate("--inter-node-bandwidth", inter_node_bandwidth)),
         .adapters_per_node = adapters_per_node,
         .order = order,
         .sockets_per_node = sockets_per_node});
    s.data_loading = milliseconds_of(data_ms);
    s.host_to_device = milliseconds_of(pcie_ms);
    s.prefetch = !no_prefetch;
    if (!calibration.empty()) {
        const calibration_file c = load_calibration(calibration);
        if (c.gpu != g.name)
            throw usage_error("--calibration = " + calibration + ": fitted on " + c.gpu + ", not on " +
                              std::string(g.name));
        s.kernels = c.params;
    }
    return s;
}

training_setup training_flags::build_without_model() const {
    training_setup s = assemble();
    validate(s.layout);
    validate(s.finetune);
    check_supported(s.cluster.gpu, s.precision);
    return s;
}

training_setup training_flags::assemble_with_model() const {
    const transformer_config m = model.build(seq);
    training_setup s = assemble();
    s.model = m;
    s.seq = seq;  // 0 without a training length or max_seq is refused by validate (spec/setup.hpp)
    return s;
}

checked_setup training_flags::build() const {
    checked_setup checked(assemble_with_model());
    if (seq == 0) model.default_seq(checked->model);  // a file's default said (its value is the setup's)
    return checked;
}

training_setup training_flags::build_for_search() const {
    training_setup s = assemble_with_model();
    if (seq == 0) model.default_seq(s.model);
    return s;
}

setup_across_frameworks training_flags::build_across() const {
    setup_across_frameworks out;
    out.base = assemble_with(framework_profiles.front());
    out.base.model = model.build(seq);
    out.base.seq = seq;
    if (seq == 0) model.default_seq(out.base.model);
    for (const framework_profile& fw : framework_profiles) {
        training_setup s = out.base;
        s.framework = fw;
        apply_framework_flags(s);
        out.frameworks.push_back(s.framework);
    }
    return out;
}

namespace {
// The flags of setup_flags, each part given: the GPU, the model, the framework and the
// nodes as flags, and the --grad-reduce-dtype flag where one is needed (or empty).
std::string setup_text(const training_setup& s, const std::string& gpu, const std::string& model,
                       const std::string& framework, const std::string& grads, const std::string& nodes,
                       const std::string& switches) {
    const std::string finetune =
        s.finetune.freezes_base()
            ? " --finetune " + std::string(to_string(s.finetune.mode)) + " --lora-rank " +
                  std::to_string(s.finetune.rank) + " --lora-targets " + lora_targets_text(s.finetune.targets)
            : "";
    // The scaling where it is not the named recipe's own (fp8's delayed, mxfp8's, nvfp4's).
    const std::string scaling =
        scaling_beyond_name(s.precision) ? " --fp8-scaling " + std::string(to_string(s.precision.scaling)) : "";
    return gpu + " " + model + " --seq " + std::to_string(sequence_length(s)) + " --precision " +
           std::string(s.precision.name) + scaling + " --optimizer " + std::string(to_string(s.optimizer)) + finetune + " " +
           framework + grads + switches + " " + nodes;
}

// The on/off flags (--flash-attention, --tp-comm-overlap, --overlap-param-gather,
// --reshard-after-forward, --cuda-graphs, --compile, --fp8-params, --expandable-segments) where
// the setup's framework differs from `base`, every one of them without a base. An
// explicit --reshard-after-forward also overrides the profile's pipeline default
// (keeps_gathered_with_pipeline), so it is printed where that differs too, and not
// without a base where the profile keeps it.
std::string framework_switches(const framework_profile& fw, const framework_profile* base) {
    std::string t;
    const bool reshard_differs = base ? fw.reshard_after_forward != base->reshard_after_forward ||
                                            fw.keeps_gathered_with_pipeline != base->keeps_gathered_with_pipeline
                                      : !fw.keeps_gathered_with_pipeline;
    for (const auto& [flag, on, was] :
         {std::tuple<std::string_view, bool, bool>{"--flash-attention", fw.flash_attention,
                                                    base && base->flash_attention},
          std::tuple<std::string_view, bool, bool>{"--tp-comm-overlap", fw.tensor_parallel_overlap,
                                                    base && base->tensor_parallel_overlap},
          std::tuple<std::string_view, bool, bool>{"--overlap-param-gather", fw.overlap_parameter_gather,
                                                    base && base->overlap_parameter_gather},
          std::tuple<std::string_view, bool, bool>{"--cuda-graphs", fw.cuda_graphs, base && base->cuda_graphs},
          std::tuple<std::string_view, bool, bool>{"--compile", fw.compiled, base && base->compiled},
          std::tuple<std::string_view, bool, bool>{"--fp8-params", fw.fp8_primary_weights,
                                                    base && base->fp8_primary_weights},
          std::tuple<std::string_view, bool, bool>{"--expandable-segments", fw.memory.expandable_segments,
                                                    base && base->memory.expandable_segments}})
        if (!base || on != was) t += " " + std::string(flag) + (on ? " on" : " off");
    if (reshard_differs) t += std::string(" --reshard-after-forward ") + (fw.reshard_after_forward ? "on" : "off");
    return t;
}

// The catalog profile of the setup's framework's name (a profile from a file that is
// not in the catalog has none: its switches are printed as they are).
const framework_profile* catalog_framework(const framework_profile& fw) {
    for (const auto& p : framework_profiles)
        if (p.name == fw.name) return &p;
    return nullptr;
}

// --grad-reduce-dtype where the setup's gradient format differs from `base`'s (every
// time without a base): fp32 main gradients, or the recipe's own format.
// An NVLink domain beyond the node, said: the same cluster whatever node size is printed.
std::string nvlink_domain_flag(const cluster_spec& c) {
    return c.nvlink_domain > c.gpus_per_node ? " --nvlink-domain " + std::to_string(c.nvlink_domain) : "";
}

std::string gradient_format_flag(const training_setup& s, const framework_profile* base) {
    if (base && base->fp32_gradient_accumulation == s.framework.fp32_gradient_accumulation) return "";
    return " --grad-reduce-dtype " + std::string(to_string(stored_precision(s).gradients));
}
}  // namespace

std::string setup_flags(const training_setup& s) {
    return setup_text(s, "--gpu " + std::string(s.cluster.gpu.name), model_text(s.model),
                      "--framework " + std::string(s.framework.name),
                      gradient_format_flag(s, &lookup_framework(s.framework.name)),
                      "--gpus-per-node " + std::to_string(s.cluster.gpus_per_node) + nvlink_domain_flag(s.cluster),
                      framework_switches(s.framework, catalog_framework(s.framework)));
}

std::string training_flags::run_text(const training_setup& s) const {
    // The description files given stand where setup_flags would name the catalog entry.
    const std::string gpu_flag =
        gpu_file.empty() ? "--gpu " + std::string(s.cluster.gpu.name) : "--gpu-file " + shell_word(gpu_file);
    const std::string model_flag = model.file.empty() ? model_text(s.model) : "--model-file " + shell_word(model.file);
    const std::string framework_flag = framework_file.empty() ? "--framework " + std::string(s.framework.name)
                                                              : "--framework-file " + shell_word(framework_file);
    // From a file, the format is printed when a flag set it (the file's own is kept).
    const bool grads_given = fp32_grads || !grad_reduce_dtype.empty();
    const std::string grads_flag =
        framework_file.empty() ? gradient_format_flag(s, &lookup_framework(s.framework.name))
                               : (grads_given ? gradient_format_flag(s, nullptr) : std::string());
    const std::string nodes_flag = system_file.empty() ? "--gpus-per-node " + std::to_string(s.cluster.gpus_per_node)
                                                       : "--system-file " + shell_word(system_file);
    // A changed switch (a flag, advice that turns FlashAttention on, a plan's choice) is
    // printed; from a file, every one.
    const std::string switches =
        framework_switches(s.framework, framework_file.empty() ? catalog_framework(s.framework) : nullptr);
    std::string t = setup_text(s, gpu_flag, model_flag, framework_flag, grads_flag, nodes_flag, switches);
    if (!link.empty()) t += " --link " + shell_word(link);
    if (!link_bandwidth.empty()) t += " --link-bandwidth " + shell_word(link_bandwidth);
    if (!inter_node_bandwidth.empty()) t += " --inter-node-bandwidth " + shell_word(inter_node_bandwidth);
    if (nvlink_domain >= 0) t += " --nvlink-domain " + std::to_string(nvlink_domain);
    if (adapters_per_node > 0) t += " --adapters-per-node " + std::to_string(adapters_per_node);
    if (sockets_per_node > 1) t += " --sockets-per-node " + std::to_string(sockets_per_node);
    if (s.cluster.order != trainperf::rank_order::tp_dp_pp)
        t += " --rank-order " + std::string(to_string(s.cluster.order));
    if (!calibration.empty()) t += " --calibration " + shell_word(calibration);
    if (data_ms > 0) t += " --data-ms " + exact(data_ms);
    if (pcie_ms > 0) t += " --pcie-ms " + exact(pcie_ms);
    if (no_prefetch) t += " --no-prefetch";
    if (has_moe(s.model)) {
        if (s.moe.dispatcher != trainperf::moe_dispatcher::alltoall)
            t += " --moe-dispatcher " + std::string(to_string(s.moe.dispatcher));
        if (s.moe.imbalance != default_moe_imbalance) t += " --moe-imbalance " + exact(s.moe.imbalance);
        if (s.moe.capacity_factor > 0) t += " --moe-capacity-factor " + exact(s.moe.capacity_factor);
        if (s.moe.a2a_overlap) t += " --moe-a2a-overlap";
        if (s.moe.shared_expert_overlap) t += " --moe-shared-expert-overlap";
    }
    return t;
}

std::string predict_command(const std::string& run, const parallel_layout& layout) {
    return "trainperf predict " + run + " " + to_string(layout);
}

std::function<std::string(const training_setup&)> predict_command_of(const training_flags& flags) {
    return [&flags](const training_setup& s) { return predict_command(flags.run_text(s), s.layout); };
}

}  // namespace trainperf::cli
