// Default-scenario sections about memory: Part A (the memory budget of a 7B model)
// and Part C (the mixed-precision trap, GPT-2 1.5B).
#include "cli.hpp"

#include <trainperf/spec/gpu_catalog.hpp>
#include <trainperf/cost/memory.hpp>
#include <trainperf/spec/model_catalog.hpp>

#include <ostream>
#include <string>

namespace trainperf::cli {
namespace {

std::string gb(bytes b) { return fixed(to_gb(b).value(), 1); }
std::string gib(bytes b) { return fixed(to_gib(b).value(), 1); }

// Part A: static state of 7e9 parameters per optimizer and precision.
void print_budget(std::ostream& out) {
    constexpr double params = 7e9;
    const gpu_spec& h100 = h100_sxm::spec;
    const gpu_spec& a100 = a100_sxm_80gb::spec;
    out << "== Part A: memory budget of a 7B model (7e9 parameters) ==\n\n"
        << "Static state only (weights + gradients + fp32 master + optimizer state), before any\n"
        << "activation; 'fits' compares it with what a process can allocate on the GPU (the\n"
        << "device's memory as its driver reports it, less the CUDA context), so 'yes' is\n"
        << "necessary, not sufficient.\n\n";
    const bytes h100_usable = usable_memory(h100, pytorch_eager_profile),
                a100_usable = usable_memory(a100, pytorch_eager_profile);
    table t({"optimizer", "precision", "B/param", "GB", "GiB",
             std::string(h100.name) + " (" + gib(h100_usable) + " GiB usable)",
             std::string(a100.name) + " (" + gib(a100_usable) + " GiB usable)"});
    for (optimizer_kind k : {optimizer_kind::sgd, optimizer_kind::sgd_momentum, optimizer_kind::adamw,
                             optimizer_kind::adafactor, optimizer_kind::lion, optimizer_kind::adam8bit}) {
        for (precision_kind pk : {precision_kind::fp32, precision_kind::bf16}) {
            const precision_recipe r = recipe(pk);
            const bytes b = static_state_bytes(params, r, k);
            t.add_row({std::string(to_string(k)), pk == precision_kind::fp32 ? "fp32" : "bf16 mixed",
                       fixed(b.value() / params, 2), gb(b), gib(b),
                       b <= h100_usable ? "fits" : "does not fit",
                       b <= a100_usable ? "fits" : "does not fit"});
        }
    }
    t.print(out);
    out << "\nfp32 + AdamW: 4 (weights) + 4 (gradients) + 4 + 4 (Adam m, v) = 16 B/param ->\n"
        << "7e9 x 16 = 1.12e11 B = 112 GB = 104.3 GiB. Mixed bf16 + AdamW: 2 + 2 + 4 (fp32 master)\n"
        << "+ 8 = 16 B/param: the same, mixed precision does not shrink static state. Adafactor\n"
        << "keeps only a factored second moment (rows + cols per matrix, no first moment; here\n"
        << "approximated for a bare parameter count); adam8bit: 2 x 1 B + fp32 scales per 2048.\n\n";
}

// Part C: the mixed-precision trap on GPT-2 1.5B.
void print_trap(std::ostream& out) {
    const transformer_config& m = gpt2_xl::config;
    const gpu_spec& g = h100_sxm::spec;
    constexpr int batch = 5, seq = 1024;  // fp32 does not fit, bf16 mixed just does
    const parallel_layout p{.micro_batch = batch};
    const precision_kind kinds[] = {precision_kind::fp32, precision_kind::bf16,
                                    precision_kind::bf16_pure};
    memory_breakdown mb[3];
    int max_batch[3];
    for (int i = 0; i < 3; ++i) {
        // One GPU under plain PyTorch (memory_of: the path predict and plan take).
        const checked_setup s(training_setup{.cluster = standard_cluster(g, 1),
                                             .model = m,
                                             .precision = recipe(kinds[i]),
                                             .optimizer = optimizer_kind::adamw,
                                             .layout = p,
                                             .seq = seq,
                                             .framework = pytorch_eager_profile});
        mb[i] = memory_of(s).breakdown;
        max_batch[i] = max_micro_batch(s);
    }
    out << "== Part C: the mixed-precision trap: " << m.name << " ("
        << fixed(parameter_count(m) / 1e9, 2) << " B parameters), AdamW, batch " << batch
        << " x seq " << seq << ", one " << g.name << " ==\n\n";
    table t({"component (GB)", "fp32", "bf16 mixed", "bf16 pure"});
    auto row = [&](const std::string& name, bytes memory_breakdown::*field) {
        t.add_row({name, gb(mb[0].*field), gb(mb[1].*field), gb(mb[2].*field)});
    };
    row("weights", &memory_breakdown::weights);
    row("gradients", &memory_breakdown::gradients);
    row("fp32 master weights", &memory_breakdown::master_weights);
    row("optimizer state", &memory_breakdown::optimizer_state);
    row("activations", &memory_breakdown::activations);
    row("logits and loss", &memory_breakdown::logits);
    t.add_row({"static state", gb(mb[0].static_state()), gb(mb[1].static_state()),
               gb(mb[2].static_state())});
    t.add_row({"total (GB)", gb(mb[0].total()), gb(mb[1].total()), gb(mb[2].total())});
    t.add_row({"total (GiB)", gib(mb[0].total()), gib(mb[1].total()), gib(mb[2].total())});
    t.add_row({"saving vs fp32", "1.00x", fixed(mb[0].total().value() / mb[1].total().value(), 2) + "x",
               fixed(mb[0].total().value() / mb[2].total().value(), 2) + "x"});
    t.add_row({"largest batch on " + std::string(g.name), std::to_string(max_batch[0]),
               std::to_string(max_batch[1]), std::to_string(max_batch[2])});
    t.print(out);
    out << "\nMixed precision saves " << fixed(mb[0].total().value() / mb[1].total().value(), 2)
        << "x, not 2x: the 16-bit weights and gradients\n"
        << "(2 + 2 B) come with an fp32 master copy (4 B) and fp32 Adam state (8 B), so static\n"
        << "state stays at 16 B/param; only the activations shrink (dropout masks are 1 B either\n"
        << "way) and the loss still runs on fp32 logits. Pure bf16 (no master, 2-byte Adam state)\n"
        << "halves static state too, at the cost of update precision (updates smaller than\n"
        << "2^-8 of a weight vanish in bf16's 8-bit mantissa).\n\n";
}

const scenario_registration budget_registration{10, print_budget};
const scenario_registration trap_registration{30, print_trap};

}  // namespace
}  // namespace trainperf::cli
