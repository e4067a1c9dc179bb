#include "training_flags.hpp"

#include "parse_units.hpp"

#include <trainperf/comm.hpp>
#include <trainperf/hardware/catalog.hpp>
#include <trainperf/io/json.hpp>
#include <trainperf/models/catalog.hpp>

#include <algorithm>

namespace trainperf::cli {

namespace {
link_kind parse_link_kind(const std::string& s) {
    for (link_kind k : {link_kind::nvlink, link_kind::nvlink_bridge, link_kind::pcie,
                        link_kind::pcie_no_p2p, link_kind::infiniband})
        if (to_string(k) == s) return k;
    throw usage_error("--link = " + s + ": unknown; expected nvlink, nvlink-bridge, pcie, pcie-no-p2p or infiniband");
}
}  // namespace

void training_flags::add_to(CLI::App* sub, bool require_model, flag_set set) {
    auto* g = sub->add_option("--gpu", gpu, "GPU name (trainperf gpus)");
    auto* m = sub->add_option("--model", model, "Model name (trainperf models), or 'custom' with the sizes below");
    if (require_model) {
        g->required();
        m->required();
    }
    custom_model_options = {
        sub->add_option("--layers", layers, "custom model: transformer layers"),
        sub->add_option("--hidden", hidden, "custom model: hidden size"),
        sub->add_option("--heads", heads, "custom model: attention heads"),
        sub->add_option("--kv-heads", kv_heads, "custom model: key/value heads (GQA; default = heads)"),
        sub->add_option("--ffn-hidden", ffn_hidden, "custom model: FFN inner size"),
        sub->add_option("--vocab", vocab, "custom model: vocabulary size"),
    };
    if (set == flag_set::all) sub->add_option("--batch", batch, "Micro-batch per model replica (default 1)");
    sub->add_option("--seq", seq, "Sequence length (default: the model's max_seq)");
    sub->add_option("--gpus", gpus, "Total GPUs (default tp x pp); dp = gpus / (tp x pp)");
    sub->add_option("--gpus-per-node", gpus_per_node, "GPUs per node (default min(gpus, 8))");
    if (set != flag_set::system_only) {
        sub->add_option("--tp", tp, "Tensor-parallel size (inside a node)");
        sub->add_option("--pp", pp, "Pipeline stages");
        sub->add_option("--interleave", interleave, "Virtual pipeline stages per rank (default 1)");
        sub->add_flag("--sp", sp, "Sequence parallelism (with --tp)");
        sub->add_option("--zero", zero, "ZeRO stage 0|1|2|3");
        sub->add_option("--offload", offload, "none|optimizer");
        sub->add_option("--grad-accum", grad_accum, "Micro-batches per step per replica (default 1)");
        sub->add_option("--recompute", recompute, "none|selective|full");
    }
    sub->add_option("--precision", precision, "fp32|tf32|bf16|fp16|bf16-pure|fp8 (default bf16)");
    sub->add_option("--optimizer", optimizer, "sgd|sgd-momentum|adamw|adamw-fused|adafactor|lion|adam8bit");
    sub->add_option("--framework", framework, "pytorch-eager|megatron|deepspeed (default pytorch-eager)");
    sub->add_option("--link", link, "GPU-GPU link inside a node: nvlink|nvlink-bridge|pcie|pcie-no-p2p|infiniband");
    sub->add_option("--link-bandwidth", link_bandwidth, "Measured link bandwidth per direction, e.g. 52.8GB/s");
    sub->add_option("--inter-node-bandwidth", inter_node_bandwidth, "Per GPU, per direction (default 25GB/s)");
    sub->add_option("--calibration", calibration, "Kernel-model parameters from `calibration` JSON");
    sub->add_option("--data-ms", data_ms, "Loading one step's batch from storage, ms per step (default 0)");
    sub->add_option("--pcie-ms", pcie_ms, "Copying it host to device, ms per step (default 0)");
    sub->add_flag("--no-prefetch", no_prefetch, "Load and copy before each step instead of overlapping it");
}

training_setup training_flags::build() const {
    training_setup s;
    const gpu_spec& g = lookup_gpu(gpu);
    const bool custom = model == "custom";
    const bool custom_sizes = std::any_of(custom_model_options.begin(), custom_model_options.end(),
                                          [](const CLI::Option* o) { return o->count() > 0; });
    if (custom) {
        for (auto* o : custom_model_options)
            if (o->count() == 0 && o->get_name() != "--kv-heads")
                throw usage_error(o->get_name() + ": required with --model custom");
        require(seq > 0, "seq", seq, "is required with --model custom");
        s.model = {.name = "custom", .layers = layers, .hidden = hidden, .heads = heads,
                   .kv_heads = kv_heads, .ffn_hidden = ffn_hidden, .vocab = vocab, .max_seq = seq};
    } else {
        if (custom_sizes) throw usage_error("--layers/--hidden/...: only with --model custom");
        s.model = lookup_model(model);
    }
    validate(s.model);
    require(batch >= 1, "batch", batch, "must be at least 1");
    require(tp >= 1, "tp", tp, "must be at least 1");
    require(pp >= 1, "pp", pp, "must be at least 1");
    const int total = gpus == 0 ? tp * pp : gpus;
    require(total >= 1, "gpus", total, "must be at least 1");
    if (total % (tp * pp) != 0)
        throw usage_error("--gpus = " + std::to_string(total) + ": must be a multiple of tp x pp = " +
                          std::to_string(tp * pp));
    s.layout = {.dp = total / (tp * pp), .tp = tp, .pp = pp, .interleave = interleave, .sp = sp,
                .zero = zero, .offload = parse_offload(offload), .micro_batch = batch,
                .grad_accum = grad_accum, .recompute = parse_recompute(recompute)};
    validate(s.layout, s.model);
    s.seq = seq;
    if (s.seq == 0) require(s.model.max_seq > 0, "seq", seq, "is required: the model has no max_seq");
    s.precision = parse_precision(precision);
    check_supported(g, s.precision);
    s.optimizer = parse_optimizer(optimizer);
    s.framework = lookup_framework(framework);

    // The system: nodes of gpus_per_node joined by the GPU's link (or the named one),
    // InfiniBand between nodes.
    s.cluster.gpu = g;
    s.cluster.gpus_per_node = gpus_per_node > 0 ? gpus_per_node : std::min(total, 8);
    require(s.cluster.gpus_per_node >= 1, "gpus_per_node", s.cluster.gpus_per_node, "must be at least 1");
    link_spec intra = g.gpu_link;
    if (!link.empty()) {
        const link_kind k = parse_link_kind(link);
        if (k != g.gpu_link.kind) intra = default_link(k);
    }
    if (!link_bandwidth.empty()) intra = with_bandwidth(intra, parse_byte_rate("--link-bandwidth", link_bandwidth));
    if (intra.kind == link_kind::none && total > 1)
        throw usage_error("--gpu " + std::string(g.name) + " has no GPU-GPU link; name one with --link");
    s.cluster.intra_node = intra;
    s.cluster.inter_node = with_bandwidth(default_link(link_kind::infiniband),
                                          parse_byte_rate("--inter-node-bandwidth", inter_node_bandwidth));
    s.cluster.inter_node.efficiency = default_link(link_kind::infiniband).efficiency;
    require(data_ms >= 0 && data_ms < 1e12, "data_ms", data_ms, "must be finite and not negative");
    require(pcie_ms >= 0 && pcie_ms < 1e12, "pcie_ms", pcie_ms, "must be finite and not negative");
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

}  // namespace trainperf::cli
