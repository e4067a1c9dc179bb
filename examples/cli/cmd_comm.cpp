// `trainperf comm`: the time of one collective over a link (α–β model, comm.hpp).
#include "cli.hpp"
#include "parse_units.hpp"

#include <trainperf/comm.hpp>
#include <trainperf/hardware/catalog.hpp>

#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <string>

namespace trainperf::cli {
namespace {

const std::map<std::string, collective> collectives{
    {"all-reduce", collective::all_reduce},
    {"reduce-scatter", collective::reduce_scatter},
    {"all-gather", collective::all_gather},
    {"p2p", collective::p2p},
};
const std::map<std::string, collective_algorithm> algorithms{
    {"ring", collective_algorithm::ring},
    {"tree", collective_algorithm::tree},
};
const std::map<std::string, link_kind> link_kinds{
    {"nvlink", link_kind::nvlink},
    {"nvlink-bridge", link_kind::nvlink_bridge},
    {"pcie", link_kind::pcie},
    {"pcie-no-p2p", link_kind::pcie_no_p2p},
    {"infiniband", link_kind::infiniband},
};

struct comm_options {
    std::string collective = "all-reduce";
    std::string algorithm = "ring";
    std::string bytes;
    int gpus = 0;
    std::string link;
    std::string gpu;
    std::string link_bandwidth;
    int gpus_per_node = 0;
    std::string inter_node_bandwidth;
    bool json = false;
};

struct resolved_link {
    link_spec link;
    std::string source;   // where the figures come from, printed with them
};

// The link between GPUs: the named GPU's own link when --link matches it (or is not
// given), its PCIe host link for pcie / pcie-no-p2p, otherwise the default for the
// kind; then the user's measured bandwidth if given.
resolved_link resolve_link(const comm_options& o) {
    resolved_link r;
    const gpu_spec* gpu = o.gpu.empty() ? nullptr : &lookup_gpu(o.gpu);
    if (o.link.empty()) {
        if (!gpu) throw usage_error("comm: give --link (nvlink, nvlink-bridge, pcie, pcie-no-p2p, "
                                    "infiniband) or --gpu");
        if (gpu->gpu_link.kind == link_kind::none)
            throw usage_error("--gpu = " + o.gpu + ": has no GPU-to-GPU link; name one with --link");
        r = {gpu->gpu_link, std::string(gpu->name) + " " + std::string(to_string(gpu->gpu_link.kind))};
    } else {
        const link_kind kind = link_kinds.at(o.link);
        if (gpu && gpu->gpu_link.kind == kind)
            r = {gpu->gpu_link, std::string(gpu->name) + " " + o.link};
        else if (gpu && kind == link_kind::pcie && gpu->host_link.kind == link_kind::pcie)
            r = {gpu->host_link, std::string(gpu->name) + " PCIe host link, peer-to-peer"};
        else if (gpu && kind == link_kind::pcie_no_p2p && gpu->host_link.kind == link_kind::pcie)
            r = {staged_through_host(gpu->host_link),
                 std::string(gpu->name) + " PCIe host link, staged through host memory"};
        else
            r = {default_link(kind), "default for " + o.link};
    }
    if (!o.link_bandwidth.empty()) {
        r.link = with_bandwidth(r.link, parse_byte_rate("--link-bandwidth", o.link_bandwidth));
        r.source += ", measured bandwidth (--link-bandwidth)";
    }
    return r;
}

nlohmann::json link_json(const link_spec& l, const std::string& source) {
    return {{"kind", std::string(to_string(l.kind))},
            {"per_direction_bytes_per_second", l.per_direction.value()},
            {"latency_seconds", l.latency.value()},
            {"efficiency", l.efficiency},
            {"source", source}};
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
    const collective c = collectives.at(o.collective);
    const collective_algorithm algorithm = algorithms.at(o.algorithm);
    const bytes size = parse_bytes("--bytes", o.bytes);
    if (o.gpus < 1) throw usage_error("--gpus = " + std::to_string(o.gpus) + ": must be at least 1");
    if (c == collective::p2p && o.gpus != 2)
        throw usage_error("--gpus = " + std::to_string(o.gpus) + ": p2p is between 2 GPUs");
    if (algorithm == collective_algorithm::tree && c != collective::all_reduce)
        throw usage_error("--algorithm = tree: only all-reduce has a tree algorithm");
    if (!o.inter_node_bandwidth.empty() && o.gpus_per_node == 0)
        throw usage_error("--inter-node-bandwidth needs --gpus-per-node");

    const resolved_link intra = resolve_link(o);
    const bool multi_node = o.gpus_per_node > 0 && o.gpus > o.gpus_per_node;

    seconds time = seconds_of(0.0);
    std::optional<seconds> flat;
    cluster_spec cluster;
    std::string inter_source;
    if (multi_node) {
        if (c != collective::all_reduce)
            throw usage_error("--collective = " + o.collective +
                              ": across nodes only all-reduce is modelled");
        if (algorithm != collective_algorithm::ring)
            throw usage_error("--algorithm = tree: across nodes the hierarchical all-reduce is used");
        cluster.gpus_per_node = o.gpus_per_node;
        cluster.intra_node = intra.link;
        cluster.inter_node = default_link(link_kind::infiniband);
        inter_source = "default for infiniband";
        if (!o.inter_node_bandwidth.empty()) {
            cluster.inter_node = with_bandwidth(
                cluster.inter_node, parse_byte_rate("--inter-node-bandwidth", o.inter_node_bandwidth));
            inter_source += ", measured bandwidth (--inter-node-bandwidth)";
        }
        time = hierarchical_all_reduce_time(size, cluster, o.gpus);
        flat = flat_ring_all_reduce_time(size, cluster, o.gpus);
    } else {
        time = collective_time(c, size, o.gpus, intra.link, algorithm);
    }

    const double algbw = time.value() > 0 ? size.value() / time.value() : 0.0;
    const double busbw = algbw * bus_bandwidth_factor(c, o.gpus);
    const std::string algorithm_name =
        multi_node ? "hierarchical"
                   : (c == collective::all_reduce ? std::string(to_string(algorithm)) : "ring");

    if (o.json) {
        nlohmann::json j{{"collective", o.collective},
                         {"algorithm", c == collective::p2p ? "p2p" : algorithm_name},
                         {"bytes", size.value()},
                         {"gpus", o.gpus},
                         {"link", link_json(intra.link, intra.source)},
                         {"time_seconds", time.value()},
                         {"algorithm_bandwidth_bytes_per_second", algbw},
                         {"bus_bandwidth_bytes_per_second", busbw}};
        if (multi_node) {
            j["gpus_per_node"] = o.gpus_per_node;
            j["nodes"] = o.gpus / o.gpus_per_node;
            j["inter_node_link"] = link_json(cluster.inter_node, inter_source);
            j["flat_ring_time_seconds"] = flat->value();
        }
        print_json(out, j);
        return;
    }
    out << o.collective << (c == collective::p2p ? "" : " (" + algorithm_name + ")") << " of "
        << size_text(size) << " on " << o.gpus << " GPUs\n"
        << "  link:                " << intra.source << '\n'
        << "                       " << describe(intra.link) << '\n';
    if (multi_node)
        out << "  nodes:               " << o.gpus / o.gpus_per_node << " x " << o.gpus_per_node
            << " GPUs\n"
            << "  inter-node link:     " << inter_source << '\n'
            << "                       " << describe(cluster.inter_node) << '\n';
    out << "  time:                " << time_text(time) << '\n'
        << "  algorithm bandwidth: " << fixed(algbw / 1e9, 2) << " GB/s (bytes / time)\n"
        << "  bus bandwidth:       " << fixed(busbw / 1e9, 2)
        << " GB/s (nccl-tests convention: per-GPU link traffic rate)\n";
    if (flat)
        out << "  flat ring instead:   " << time_text(*flat) << " (one ring over all "
            << o.gpus << " GPUs, every step at the slowest link)\n";
}

const command_registration reg{41, [](CLI::App& app, std::ostream& out) {
    auto opt = std::make_shared<comm_options>();
    auto* sub = app.add_subcommand("comm", "Time of one collective over a GPU link (alpha-beta model)");
    sub->add_option("--collective", opt->collective, "all-reduce | reduce-scatter | all-gather | p2p")
        ->check(CLI::IsMember(collectives))
        ->capture_default_str();
    sub->add_option("--algorithm", opt->algorithm, "all-reduce algorithm: ring | tree")
        ->check(CLI::IsMember(algorithms))
        ->capture_default_str();
    sub->add_option("--bytes", opt->bytes, "buffer size with a unit, e.g. 1.4GB, 512MiB")->required();
    sub->add_option("--gpus", opt->gpus, "number of GPUs taking part")->required();
    sub->add_option("--link", opt->link,
                    "nvlink | nvlink-bridge | pcie | pcie-no-p2p | infiniband (default: the GPU's)")
        ->check(CLI::IsMember(link_kinds));
    sub->add_option("--gpu", opt->gpu, "take link figures from this catalog GPU, e.g. h100-sxm");
    sub->add_option("--link-bandwidth", opt->link_bandwidth,
                    "measured bandwidth PER DIRECTION, e.g. 52.8GB/s from p2pBandwidthLatencyTest "
                    "(replaces the datasheet figure and its efficiency)");
    sub->add_option("--gpus-per-node", opt->gpus_per_node,
                    "GPUs per node; with more GPUs, all-reduce is hierarchical across nodes")
        ->check(CLI::Range(1, 1 << 20));
    sub->add_option("--inter-node-bandwidth", opt->inter_node_bandwidth,
                    "inter-node bandwidth per GPU PER DIRECTION, e.g. 25GB/s (default: "
                    "InfiniBand HDR)");
    sub->add_flag("--json", opt->json, "print one JSON object");
    sub->callback([opt, &out] { run(*opt, out); });
}};

}  // namespace
}  // namespace trainperf::cli
