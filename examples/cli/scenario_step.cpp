// Default-scenario section: the gauntlet's last stage, the step-time engine on a 7B
// model over 8 H100s — which layouts fit, how fast each runs and what limits it, and
// the communication tax as r derived from the engine.
#include "cli.hpp"
#include "fit_report.hpp"
#include "training_flags.hpp"

#include <trainperf/cost/comm.hpp>
#include <trainperf/search/fit_advice.hpp>
#include <trainperf/spec/gpu_catalog.hpp>
#include <trainperf/spec/layout_text.hpp>
#include <trainperf/spec/model_catalog.hpp>
#include <trainperf/search/data_parallel_scaling.hpp>
#include <trainperf/cost/step.hpp>
#include <trainperf/spec/system.hpp>

#include <iomanip>
#include <ostream>
#include <string>
#include <vector>

namespace trainperf::cli {
namespace {

training_setup llama2_7b_on_h100(const framework_profile& fw) {
    training_setup s;
    s.cluster = standard_cluster(h100_sxm::spec);
    s.model = llama2_7b::config;
    s.precision = recipe(precision_kind::bf16);
    s.optimizer = optimizer_kind::adamw;
    s.seq = 4096;
    s.framework = fw;
    return s;
}

void print_step(std::ostream& out) {
    out << "== Part E: predicted training step, llama2-7b on 8 x h100-sxm (bf16 mixed, AdamW, seq 4096) ==\n\n";
    struct row {
        const framework_profile* fw;
        parallel_layout layout;
    };
    const row rows[] = {
        {&pytorch_eager_profile, {.dp = 8, .micro_batch = 1, .grad_accum = 8}},
        {&deepspeed_profile, {.dp = 8, .zero = 3, .micro_batch = 4, .grad_accum = 2, .recompute = recompute_mode::full}},
        {&megatron_profile,
         {.dp = 8, .zero = 1, .micro_batch = 1, .grad_accum = 8, .recompute = recompute_mode::selective}},
        {&deepspeed_profile,
         {.dp = 8, .zero = 3, .offload = offload_mode::optimizer, .micro_batch = 2, .grad_accum = 4,
          .recompute = recompute_mode::full}},
        {&megatron_profile,
         {.dp = 4, .tp = 2, .sp = true, .micro_batch = 1, .grad_accum = 16, .recompute = recompute_mode::selective}},
        {&megatron_profile,
         {.dp = 1, .tp = 8, .sp = true, .micro_batch = 8, .grad_accum = 8, .recompute = recompute_mode::selective}},
        {&megatron_profile,
         {.dp = 2, .pp = 4, .micro_batch = 1, .grad_accum = 32, .recompute = recompute_mode::selective}},
    };
    std::vector<training_setup> setups;
    std::vector<step_report> reports;
    for (const auto& r : rows) {
        training_setup s = llama2_7b_on_h100(*r.fw);
        s.layout = r.layout;
        setups.push_back(s);
        reports.push_back(predict(s));
    }
    out << "Layouts:\n";
    for (std::size_t i = 0; i < setups.size(); ++i)
        out << std::setw(3) << i + 1 << "  " << describe(setups[i].layout) << " (" << setups[i].framework.name << ")\n";
    out << '\n';
    // A layout that does not fit has no step: its time, throughput and MFU are not shown.
    table t({"#", "framework", "global batch", "step (ms)", "tokens/s", "MFU", "memory (GiB)", "fits", "bottleneck"});
    for (std::size_t i = 0; i < setups.size(); ++i) {
        const step_report& p = reports[i];
        const auto shown = [&p](std::string figure) { return p.fits ? figure : std::string("-"); };
        t.add_row({std::to_string(i + 1), std::string(setups[i].framework.name), std::to_string(p.global_batch),
                   shown(fixed(p.step_time.value() * 1e3, 0)), shown(fixed(p.tokens_per_second, 0)),
                   shown(fixed(100 * p.mfu, 1) + " %"), fixed(to_gib(p.memory.total()).value(), 1),
                   p.fits ? "yes" : "NO", p.fits ? std::string(to_string(p.bottleneck)) : "-"});
    }
    t.print(out);
    for (std::size_t i = 0; i < setups.size(); ++i) {
        if (reports[i].fits) continue;
        out << "\nLayout " << i + 1 << ": ";
        print_does_not_fit(out, advise_fit(setups[i]), setup_flags);
    }
    out << "\nDDP holds 16 B/param of state on every GPU (112 GB for 7B) and, without FlashAttention,\n"
        << "s x s attention probabilities per head (32 heads x 4096^2 x 2 B = 1.07 GB per layer at\n"
        << "batch 1), so on 80 GB cards it needs ZeRO, recompute or model parallelism.\n\n";

    // The communication tax: r derived from the engine for plain data parallelism.
    training_setup s = llama2_7b_on_h100(megatron_profile);
    s.layout = {.zero = 1, .micro_batch = 1, .grad_accum = 1, .recompute = recompute_mode::selective};
    const engine_scaling nvlink = data_parallel_scaling(s, 8);
    s.cluster.intra_node = resolve_link(s.cluster.gpu, link_kind::pcie);  // the H100's own PCIe host link
    const engine_scaling pcie = data_parallel_scaling(s, 8);
    out << "Communication tax of data parallelism (ZeRO-1, batch 1, no accumulation, sync after backward):\n"
        << "r derived from the engine at 8 GPUs: NVLink r = " << fixed(nvlink.r, 3) << ", PCIe ("
        << fixed(s.cluster.intra_node.per_direction.value() / 1e9, 1) << " GB/s per direction) r = "
        << fixed(pcie.r, 3) << "\n\n";
    table c({"GPUs", "NVLink engine", "NVLink N/(1+(N-1)r)", "PCIe engine", "PCIe N/(1+(N-1)r)"});
    for (std::size_t i = 0; i < nvlink.points.size(); ++i)
        c.add_row({std::to_string(nvlink.points[i].gpus), fixed(nvlink.points[i].engine_speedup, 2) + "x",
                   fixed(nvlink.points[i].formula_speedup, 2) + "x", fixed(pcie.points[i].engine_speedup, 2) + "x",
                   fixed(pcie.points[i].formula_speedup, 2) + "x"});
    c.print(out);
    out << "\nThe formula holds r fixed; in the engine a ring all-reduce moves 2(N-1)/N of the\n"
        << "gradients, so the sync share grows with N and the two curves meet only where r was fitted.\n\n";
}

const scenario_registration step_registration{50, print_step};

}  // namespace
}  // namespace trainperf::cli
