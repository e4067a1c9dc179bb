// `trainperf gpus`, `trainperf models` and `trainperf frameworks`: the catalogs as tables
// or JSON (one entry's JSON is its description file, docs/extending.md).
#include "cli.hpp"

#include <trainperf/spec/framework.hpp>
#include <trainperf/spec/gpu_catalog.hpp>
#include <trainperf/io/catalog_json.hpp>
#include <trainperf/io/framework_json.hpp>
#include <trainperf/io/gpu_json.hpp>
#include <trainperf/io/model_json.hpp>
#include <trainperf/spec/model_catalog.hpp>

#include <array>
#include <memory>
#include <ostream>
#include <span>
#include <string>
#include <type_traits>

namespace trainperf::cli {
namespace {

std::string str(std::string_view s) { return std::string(s); }

// "-" where the GPU has no such math mode.
std::string tflops_cell(const gpu_spec& g, dtype t) {
    if (!g.supports(t)) return "-";
    const double tflops = g.peak_for(t).value() / 1e12;
    return fixed(tflops, tflops < 10 ? 2 : 1);
}

void print_gpus(std::ostream& out, std::span<const gpu_spec> gpu_catalog) {
    out << "GPU catalog (datasheet figures; sources in docs/catalogs.md)\n\n";
    table spec({"gpu", "full name", "arch", "SMs", "boost MHz", "L2 MiB", "memory GB (datasheet)",
                "memory GiB (device)", "bandwidth GB/s", "TDP W"});
    for (const gpu_spec& g : gpu_catalog)
        spec.add_row({str(g.name), str(g.full_name), str(to_string(g.architecture)),
                      std::to_string(g.sm_count), fixed(g.boost_clock.value() / 1e6, 0),
                      fixed(g.l2_cache.value() / 1048576.0, 0),
                      fixed(to_gb(g.memory_capacity).value(), 0),
                      fixed(to_gib(g.device_memory()).value(), 1),
                      fixed(g.memory_bandwidth.value() / 1e9, 1), fixed(g.tdp_watts, 0)});
    spec.print(out);

    out << "\nDense peak math rates (tensor cores for tf32 and below, fp32 accumulate;"
           " FP4 = NVFP4; '-' = not supported)\n\n";
    table peaks({"gpu", "FP32 TFLOP/s", "TF32 TFLOP/s", "FP16 TFLOP/s", "BF16 TFLOP/s",
                 "FP8 TFLOP/s", "FP4 TFLOP/s", "INT8 TOP/s"});
    for (const gpu_spec& g : gpu_catalog)
        peaks.add_row({str(g.name), tflops_cell(g, dtype::fp32), tflops_cell(g, dtype::tf32),
                       tflops_cell(g, dtype::fp16), tflops_cell(g, dtype::bf16),
                       tflops_cell(g, dtype::fp8), tflops_cell(g, dtype::fp4), tflops_cell(g, dtype::int8)});
    peaks.print(out);

    out << "\nLinks (per direction = each way; total = both ways, as datasheets quote;"
           " latency and efficiency are assumptions)\n\n";
    table links({"gpu", "GPU link", "per-direction GB/s", "total GB/s", "latency us",
                 "efficiency", "host link", "host per-direction GB/s"});
    for (const gpu_spec& g : gpu_catalog) {
        const bool has_link = g.gpu_link.kind != link_kind::none;
        links.add_row({str(g.name), str(to_string(g.gpu_link.kind)),
                       has_link ? fixed(g.gpu_link.per_direction.value() / 1e9, 2) : "-",
                       has_link ? fixed(g.gpu_link.total().value() / 1e9, 1) : "-",
                       has_link ? fixed(g.gpu_link.latency.value() * 1e6, 1) : "-",
                       has_link ? fixed(g.gpu_link.efficiency, 2) : "-",
                       g.memory_shared_with_host ? "shared DRAM" : str(to_string(g.host_link.kind)),
                       fixed(g.host_link.per_direction.value() / 1e9, 2)});
    }
    links.print(out);

    out << "\nThe system each is sold in: the defaults of --gpus-per-node, --nvlink-domain, "
           "--inter-node-bandwidth and the host\n\n";
    table systems({"gpu", "GPUs per node", "NVLink domain", "adapter Gb/s per GPU", "host cores per node"});
    for (const gpu_spec& g : gpu_catalog) {
        const link_spec adapter = default_inter_node_link(g);
        const host_spec host = g.system.host.value_or(host_spec{});
        systems.add_row({str(g.name), std::to_string(standard_gpus_per_node(g)),
                         g.system.nvlink_domain > 0 ? std::to_string(g.system.nvlink_domain) : "node",
                         fixed(adapter.per_direction.value() * 8 / 1e9, 0),
                         std::to_string(host.cores) + (g.system.host ? "" : " (assumed)")});
    }
    systems.print(out);
}

// 124.4 M, 6.74 B, 405.9 B
std::string params_cell(double p) {
    if (p < 1e9) return fixed(p / 1e6, 1) + " M";
    return fixed(p / 1e9, p < 1e11 ? 2 : 1) + " B";
}

void print_models(std::ostream& out, std::span<const transformer_config> model_catalog) {
    out << "Model catalog (published configs; sources in docs/catalogs.md)\n\n";
    table t({"model", "layers", "hidden", "heads", "kv heads", "ffn", "vocab", "train seq", "max seq",
             "ffn kind", "positions", "norm", "embeddings", "experts", "parameters", "active"});
    for (const transformer_config& m : model_catalog)
        t.add_row({str(m.name), std::to_string(m.layers), std::to_string(m.hidden),
                   std::to_string(m.heads), std::to_string(m.effective_kv_heads()),
                   std::to_string(has_moe(m) ? m.moe.expert_ffn_hidden : m.ffn_hidden), std::to_string(m.vocab),
                   std::to_string(training_length(m)), std::to_string(m.max_seq), str(to_string(m.ffn)), str(to_string(m.positions)),
                   str(to_string(m.norm)),
                   m.tied_embeddings ? "tied" : "untied",
                   has_moe(m) ? std::to_string(m.moe.experts_per_token) + " of " + std::to_string(m.moe.experts) : "-",
                   params_cell(parameter_count(m)), params_cell(active_parameter_count(m))});
    t.print(out);
    out << "\ntrain seq: the sequence of the model's main pre-training, every command's default --seq; max seq:\n"
           "the longest context it takes (tokens); ffn: each expert's width in a mixture of experts; experts: per\n"
           "token, of the routed ones; active: the parameters one token uses; M = 1e6, B = 1e9.\n";
}

std::string on_off(bool b) { return b ? "yes" : "no"; }

void print_frameworks(std::ostream& out, std::span<const framework_profile> profiles) {
    out << "Framework profiles (ASSUMPTIONS unless measured: docs/engine.md; every field with "
           "trainperf frameworks --json NAME)\n\n";
    table t({"framework", "fused softmax", "fused bias-GELU", "fused bias-dropout-add", "flash attention",
             "fused optimizer", "overlapped DP sync", "fp32 grads", "step overhead ms", "fragmentation %",
             "expandable segments"});
    for (const framework_profile& f : profiles)
        t.add_row({str(f.name), on_off(f.fused_softmax), on_off(f.fused_bias_gelu), on_off(f.fused_bias_dropout_add),
                   on_off(f.flash_attention), on_off(f.fused_optimizer), on_off(f.overlap_data_parallel_sync),
                   on_off(f.fp32_gradient_accumulation), fixed(f.per_step_overhead.value() * 1e3, 1),
                   fixed(100 * f.memory.fragmentation, 1), on_off(f.memory.expandable_segments)});
    t.print(out);
    // What each software runs: a layout asking for more is refused (docs/engine.md).
    out << "\nWhat each runs (a layout asking for more is refused):\n\n";
    table runs({"framework", "tp", "sp", "cp", "pp", "interleave", "uneven stages", "rank orders", "ZeRO stages",
                "hybrid shard", "optimizer on host", "recompute", "compile", "software"});
    for (const framework_profile& f : profiles) {
        std::string zero;
        for (int z = 0; z <= 3; ++z)
            if (f.zero_stages & (1u << z)) zero += (zero.empty() ? "" : ",") + std::to_string(z);
        runs.add_row({str(f.name), on_off(f.tensor_parallel), on_off(f.sequence_parallel), on_off(f.context_parallel),
                      on_off(f.pipeline_parallel), on_off(f.interleaved_pipeline), on_off(f.uneven_pipeline_split),
                      f.pipeline_parallel ? names_of(f.rank_orders, " ") : "-", zero,
                      on_off(f.hybrid_sharding), on_off(f.optimizer_offload),
                      names_of(f.recompute_modes, " ") + (f.fine_grained_recompute ? " (+ modules)" : ""),
                      on_off(f.layer_compile), str(f.software)});
    }
    runs.print(out);
    out << "\nWhat each trains with (a setup asking for anything else is refused):\n\n";
    const auto listed = [](const auto& set) {
        using set_type = std::remove_cvref_t<decltype(set)>;
        return set == set_type::all() ? std::string("all") : set.empty() ? std::string("-") : names_of(set, " ");
    };
    table trains({"framework", "optimizers", "precisions", "fp8 scalings", "fine-tuning", "optimizers on host"});
    for (const framework_profile& f : profiles)
        trains.add_row({str(f.name), listed(f.optimizers), listed(f.precisions),
                        f.precisions.contains(precision_kind::fp8) ? listed(f.fp8_scalings) : "-",
                        listed(f.finetune_modes), f.optimizer_offload ? listed(f.host_optimizers) : "-"});
    trains.print(out);
}

// `trainperf NAME [ENTRY]`: the catalog (or one entry) as a table; with --json the
// whole catalog as {"NAME": [entries]}, or one entry exactly as its description file.
template <class Entry, std::size_t N>
void add_catalog_command(CLI::App& app, std::ostream& out, const std::string& name, const std::string& help,
                         const std::array<Entry, N>& catalog, void (*print)(std::ostream&, std::span<const Entry>),
                         nlohmann::json (*describe)(const Entry&), const char* field) {
    struct options {
        bool json = false;
        std::string entry;
    };
    auto opt = std::make_shared<options>();
    auto* sub = app.add_subcommand(name, help);
    sub->add_flag("--json", opt->json,
                  "Print JSON: {\"" + name + "\": [...]}, or with an entry name exactly its description file");
    sub->add_option("entry", opt->entry, "Show only this entry (" + catalog_names(catalog, ", ") + ")");
    sub->callback([opt, &out, name, &catalog, print, describe, field] {
        if (!opt->entry.empty()) {
            const Entry& e = find_by_name(catalog, field, opt->entry);
            if (opt->json) return print_json(out, describe(e));
            return print(out, std::span<const Entry>(&e, 1));
        }
        if (!opt->json) return print(out, catalog);
        print_json(out, catalog_to_json(name, catalog, describe));
    });
}

const command_registration gpus_registration{10, [](CLI::App& app, std::ostream& out) {
    add_catalog_command(app, out, "gpus", "List the GPU catalog (datasheet figures)", gpu_catalog, print_gpus,
                        io::gpu_to_json, "gpu");
}};

const command_registration models_registration{11, [](CLI::App& app, std::ostream& out) {
    add_catalog_command(app, out, "models", "List the model catalog (published configs)", model_catalog, print_models,
                        io::model_to_json, "model");
}};

const command_registration frameworks_registration{12, [](CLI::App& app, std::ostream& out) {
    add_catalog_command(app, out, "frameworks", "List the framework profiles", framework_profiles,
                        print_frameworks, io::framework_to_json, "framework");
}};

}  // namespace
}  // namespace trainperf::cli
