// `trainperf plan`: the fastest layouts that fit, for a model on N GPUs and a global
// batch, found by predicting every valid layout.
#include "cli.hpp"
#include "training_flags.hpp"

#include <trainperf/planner.hpp>

#include <memory>
#include <ostream>

namespace trainperf::cli {
namespace {

struct plan_options {
    training_flags flags;
    long long global_batch = 0;
    int max_micro_batch = 64;
    std::size_t top = 10;
    bool offload = false, json = false;
};

std::string layout_text(const parallel_layout& l) {
    std::string s = "dp " + std::to_string(l.dp) + " tp " + std::to_string(l.tp) + " pp " + std::to_string(l.pp);
    if (l.interleave > 1) s += "x" + std::to_string(l.interleave);
    if (l.sp) s += " sp";
    if (l.zero > 0) s += " zero" + std::to_string(l.zero);
    if (l.offload == offload_mode::optimizer) s += " offload";
    return s;
}

void run(const plan_options& opt, std::ostream& out) {
    require(opt.top >= 1, "top", opt.top, "must be at least 1");
    plan_request request;
    request.base = opt.flags.build();
    request.gpus = request.base.layout.gpus();
    request.global_batch = opt.global_batch;
    request.max_micro_batch = opt.max_micro_batch;
    request.allow_offload = opt.offload;
    const plan_result result = plan(request, opt.top);
    const auto& s = request.base;
    if (opt.json) {
        auto best = nlohmann::json::array();
        for (const auto& c : result.best)
            best.push_back({{"dp", c.layout.dp}, {"tp", c.layout.tp}, {"pp", c.layout.pp},
                            {"interleave", c.layout.interleave}, {"sp", c.layout.sp}, {"zero", c.layout.zero},
                            {"offload", std::string(to_string(c.layout.offload))},
                            {"micro_batch", c.layout.micro_batch}, {"grad_accum", c.layout.grad_accum},
                            {"recompute", std::string(to_string(c.layout.recompute))},
                            {"step_time_seconds", c.report.step_time.value()},
                            {"tokens_per_second", c.report.tokens_per_second}, {"mfu", c.report.mfu},
                            {"memory_per_gpu_bytes", c.report.memory.total().value()},
                            {"bottleneck", std::string(to_string(c.report.bottleneck))}});
        print_json(out, {{"gpu", std::string(s.cluster.gpu.name)}, {"model", std::string(s.model.name)},
                         {"gpus", request.gpus}, {"global_batch", request.global_batch},
                         {"evaluated", result.evaluated}, {"fitting", result.fitting}, {"best", best}});
        return;
    }
    out << "trainperf plan: " << s.model.name << " on " << request.gpus << " x " << s.cluster.gpu.name << " ("
        << s.framework.name << ", " << s.precision.name << ", " << to_string(s.optimizer) << "), global batch "
        << request.global_batch << " x seq " << sequence_length(s) << "\n"
        << result.evaluated << " layouts predicted, " << result.fitting << " fit in memory\n\n";
    if (result.best.empty()) {
        out << "No layout fits. Try more GPUs, --offload, or a smaller global batch.\n";
        return;
    }
    table t({"#", "layout", "micro-batch x accum", "recompute", "step (ms)", "tokens/s", "MFU", "memory (GiB)",
             "bottleneck"});
    int rank = 1;
    for (const auto& c : result.best)
        t.add_row({std::to_string(rank++), layout_text(c.layout),
                   std::to_string(c.layout.micro_batch) + " x " + std::to_string(c.layout.grad_accum),
                   std::string(to_string(c.layout.recompute)), fixed(c.report.step_time.value() * 1e3, 1),
                   fixed(c.report.tokens_per_second, 0), fixed(100 * c.report.mfu, 1) + " %",
                   fixed(to_gib(c.report.memory.total()).value(), 1), std::string(to_string(c.report.bottleneck))});
    t.print(out);
}

const command_registration registration{32, [](CLI::App& app, std::ostream& out) {
    auto opt = std::make_shared<plan_options>();
    auto* sub = app.add_subcommand("plan", "Best layouts for a model on N GPUs (exhaustive search)");
    opt->flags.add_to(sub, true, flag_set::system_only);
    sub->add_option("--global-batch", opt->global_batch, "Samples per optimizer step")->required();
    sub->add_option("--max-micro-batch", opt->max_micro_batch, "Largest micro-batch tried (default 64)");
    sub->add_option("--top", opt->top, "How many layouts to show (default 10)");
    sub->add_flag("--offload", opt->offload, "Also try optimizer offload to the host");
    sub->add_flag("--json", opt->json, "Print one JSON object");
    sub->callback([opt, &out] { run(*opt, out); });
}};

}  // namespace
}  // namespace trainperf::cli
