// `trainperf comm`: the time of one collective (cost/comm.hpp): NCCL's model of its algorithm
// and protocol on NVLink systems (cost/nccl_model.hpp), the α–β model elsewhere.
#include "cli.hpp"
#include "parse_units.hpp"

#include <trainperf/core/limits.hpp>
#include <trainperf/cost/comm.hpp>
#include <trainperf/core/enum_names.hpp>
#include <trainperf/spec/gpu_catalog.hpp>
#include <trainperf/io/comm_json.hpp>
#include <trainperf/io/gpu_json.hpp>
#include <trainperf/io/system_json.hpp>
#include <trainperf/spec/system.hpp>

#include <memory>
#include <optional>
#include <ostream>
#include <string>

namespace trainperf::cli {
namespace {

struct comm_options {
    std::string collective = "all-reduce";
    std::string algorithm = "auto";
    std::string bytes;
    int gpus = 0;
    std::string link;
    std::string gpu, gpu_file, system_file;
    std::string link_bandwidth;
    int gpus_per_node = 0;
    int nvlink_domain = -1;  // -1: the GPU's standard system's
    std::string inter_node_bandwidth;
    bool json = false;
};

// Where the intra-node link's figures come from (spec/system.hpp's rule), for the output.
std::string link_source_text(const gpu_spec& gpu, link_kind kind, bool measured) {
    const std::string gpu_name(gpu.name), kind_name(to_string(kind));
    std::string s;
    switch (link_source_of(gpu, kind)) {
        case link_source::gpu_link: s = gpu_name + " " + kind_name; break;
        case link_source::host_pcie: s = gpu_name + " PCIe host link, peer-to-peer"; break;
        case link_source::host_pcie_staged: s = gpu_name + " PCIe host link, staged through host memory"; break;
        case link_source::kind_default: s = "default for " + kind_name; break;
    }
    return measured ? s + ", measured bandwidth (--link-bandwidth)" : s;
}

std::string describe(const link_spec& l) {
    return fixed(l.per_direction.value() / 1e9, 2) + " GB/s per direction (" +
           fixed(l.total().value() / 1e9, 2) + " GB/s total) x efficiency " +
           fixed(l.efficiency, 2) + " = " + fixed(l.achievable().value() / 1e9, 2) +
           " GB/s achievable; latency " + fixed(l.latency.value() * 1e6, 1) + " us per step";
}

std::string size_text(bytes b) {
    if (b.value() < 1e9)
        return fixed(b.value() / 1e6, 3) + " MB (" + fixed(b.value() / 1048576.0, 3) + " MiB)";
    return fixed(to_gb(b).value(), 3) + " GB (" + fixed(to_gib(b).value(), 3) + " GiB)";
}

std::string time_text(seconds t) {
    return t.value() < 1e-3 ? fixed(t.value() * 1e6, 1) + " us" : fixed(t.value() * 1e3, 3) + " ms";
}

void run(const comm_options& o, std::ostream& out) {
    const collective c = parse_enum<collective>("collective", o.collective);
    const collective_algorithm algorithm = parse_enum<collective_algorithm>("algorithm", o.algorithm);
    const bytes size = parse_bytes("--bytes", o.bytes);
    if (!o.inter_node_bandwidth.empty() && o.gpus_per_node == 0)
        throw usage_error("--inter-node-bandwidth needs --gpus-per-node");
    if (o.link.empty() && o.gpu.empty() && o.gpu_file.empty() && o.system_file.empty())
        throw usage_error("comm: give --link (" + enum_name_list<link_kind>(", ") +
                          "), --gpu, --gpu-file or --system-file");

    // The same system description as predict's (spec/system.hpp); without --gpus-per-node
    // all GPUs share one node, except on a GPU sold in racks whose NVLink spans nodes
    // (GB200/GB300 NVL72): there the rack's trays and domain.
    const gpu_spec gpu = !o.gpu_file.empty() ? io::load_gpu_file(o.gpu_file)
                         : o.gpu.empty()     ? gpu_spec{}
                                             : lookup_gpu(o.gpu);
    const std::optional<system_description> system =
        o.system_file.empty() ? std::nullopt : std::optional(io::load_system_file(o.system_file));
    const cluster_spec cluster = system ? build_cluster(gpu, *system, o.gpus) : build_cluster(
        {.gpu = gpu,
         .gpus = o.gpus,
         .gpus_per_node = o.gpus_per_node > 0 || gpu.system.nvlink_domain > 0 ? o.gpus_per_node : o.gpus,
         .nvlink_domain = o.nvlink_domain,
         .link = o.link,
         .link_bandwidth = o.link_bandwidth.empty()
                               ? std::nullopt
                               : std::optional(parse_byte_rate("--link-bandwidth", o.link_bandwidth)),
         .inter_node_line_rate =
             o.inter_node_bandwidth.empty()
                 ? std::nullopt
                 : std::optional(parse_byte_rate("--inter-node-bandwidth", o.inter_node_bandwidth))});
    const link_spec& intra = cluster.intra_node;
    const std::string intra_source =
        system && !system->intra_node_kind
            ? "system " + std::string(system->name) + " (--system-file)"
            : link_source_text(gpu,
                               system            ? *system->intra_node_kind
                               : o.link.empty() ? gpu.gpu_link.kind
                                                : parse_enum<link_kind>("link", o.link),
                               !o.link_bandwidth.empty());
    const collective_estimate e = estimate_collective(c, size, o.gpus, cluster, algorithm);
    std::string inter_source;
    if (e.across_nodes()) {
        inter_source = system           ? "system " + std::string(system->name) + " (--system-file)"
                       : gpu.name.empty() ? "default for infiniband (HDR)"
                                          : "the adapter of " + std::string(gpu.name) + " systems";
        if (!o.inter_node_bandwidth.empty()) inter_source += ", line rate from --inter-node-bandwidth";
    }
    if (o.json) return print_json(out, to_json(e, cluster, intra_source, inter_source));
    out << to_string(c) << (c == collective::p2p ? "" : " (" + std::string(e.algorithm) + ")") << " of "
        << size_text(size) << " on " << gpus_text(o.gpus) << "\n"
        << "  link:                " << intra_source << '\n'
        << "                       " << describe(intra) << '\n';
    if (e.ring_link.kind != intra.kind)
        out << "  ring waits on:       " << describe(e.ring_link)
            << " (an NVLink bridge joins two cards; the ring crosses PCIe between pairs)\n";
    const int domain = gpus_per_domain(cluster);
    if (e.across_nodes())
        out << (domain > cluster.gpus_per_node ? "  NVLink domains:      " : "  nodes:               ") << e.nodes
            << " x " << gpus_text(domain) << "\n"
            << "  inter-node link:     " << inter_source << '\n'
            << "                       " << describe(cluster.inter_node) << '\n';
    if (e.nccl)
        out << "  model:               NCCL's tuner (algorithm x protocol, the fastest"
            << (algorithm == collective_algorithm::automatic ? "" : " of the algorithm asked for") << ")\n"
            << "  picked:              " << to_string(e.nccl->algorithm) << " / " << to_string(e.nccl->protocol)
            << ", " << e.nccl->channels << " channels\n"
            << "  latency term:        " << time_text(e.nccl->latency) << '\n'
            << "  bandwidth term:      " << fixed(e.nccl->bandwidth.value() / 1e9, 2)
            << " GB/s (NCCL's algorithm bandwidth: time = latency + bytes / it)\n";
    else
        out << "  model:               alpha-beta (NCCL's model covers NVIDIA GPUs on NVLink nodes)\n";
    out << "  time:                " << time_text(e.time) << '\n'
        << "  algorithm bandwidth: " << fixed(e.algorithm_bandwidth().value() / 1e9, 2) << " GB/s (bytes / time)\n"
        << "  bus bandwidth:       " << fixed(e.bus_bandwidth().value() / 1e9, 2)
        << " GB/s (nccl-tests convention: per-GPU link traffic rate)\n";
    if (e.flat_ring)
        out << "  flat ring instead:   " << time_text(*e.flat_ring) << " (one ring over all "
            << o.gpus << " GPUs, every step at the slowest link)\n";
}

const command_registration comm_registration{41, [](CLI::App& app, std::ostream& out) {
    auto opt = std::make_shared<comm_options>();
    auto* sub = app.add_subcommand("comm", "Time of one collective: NCCL's algorithm and protocol model on NVLink systems, alpha-beta elsewhere");
    sub->add_option("--collective", opt->collective, enum_name_list<collective>())->capture_default_str();
    sub->add_option("--algorithm", opt->algorithm, "algorithm: " + enum_name_list<collective_algorithm>() +
                    " (auto: NCCL's pick; ring, tree: that algorithm, NCCL's protocol; tree: all-reduce only)")
        ->capture_default_str();
    sub->add_option("--bytes", opt->bytes, "buffer size with a unit, e.g. 1.4GB, 512MiB")->required();
    sub->add_option("--gpus", opt->gpus, "number of GPUs taking part")
        ->required()
        ->check(CLI::Range(1, max_gpus));
    auto* link = sub->add_option("--link", opt->link, enum_name_list<link_kind>() + " (default: the GPU's)");
    auto* gpu = sub->add_option("--gpu", opt->gpu, "take link figures from this catalog GPU, e.g. h100-sxm");
    gpu->excludes(sub->add_option("--gpu-file", opt->gpu_file, "... or from this GPU description file"));
    auto* system = sub->add_option("--system-file", opt->system_file,
                                   "System description file: nodes and their links (replaces --link, "
                                   "--link-bandwidth, --gpus-per-node, --inter-node-bandwidth)");
    auto* link_bw = sub->add_option("--link-bandwidth", opt->link_bandwidth,
                    "measured bandwidth PER DIRECTION, e.g. 52.8GB/s from p2pBandwidthLatencyTest "
                    "(replaces the datasheet figure and its efficiency)");
    auto* per_node = sub->add_option("--gpus-per-node", opt->gpus_per_node,
                                     "GPUs per node; with more GPUs, all-reduce is hierarchical across nodes")
                         ->check(CLI::Range(1, limits::max_gpus_per_node));
    auto* domain = sub->add_option("--nvlink-domain", opt->nvlink_domain,
                                   "GPUs of one NVLink domain, whole nodes (0: the node; default: the GPU's "
                                   "system's, 72 for GB200/GB300 NVL72)")
                       ->check(CLI::Range(0, limits::max_gpus_per_node));
    auto* inter_bw = sub->add_option("--inter-node-bandwidth", opt->inter_node_bandwidth,
                    "inter-node line rate per GPU PER DIRECTION, e.g. 50GB/s (default: "
                    "one adapter per GPU as sold with the GPU: 25GB/s HDR for A100, 50GB/s NDR for H100/H200/B200, "
                    "100GB/s for B300/GB300; its efficiency applies)");
    for (CLI::Option* o : {link, link_bw, per_node, domain, inter_bw}) system->excludes(o);
    sub->add_flag("--json", opt->json, "print one JSON object");
    sub->callback([opt, &out] { run(*opt, out); });
}};

}  // namespace
}  // namespace trainperf::cli
