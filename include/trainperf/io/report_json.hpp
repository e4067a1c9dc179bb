// A prediction as JSON: the setup it was made for and the step report, with the keys
// `trainperf predict --json` documents (docs/cli.md), a whole training run estimated
// from it, and what would make a setup that does not fit fit. Quantities are in base
// units (seconds, bytes); time_breakdown holds fractions of the step.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "../cost/fit_margin.hpp"
#include "../cost/memory.hpp"
#include "../cost/step.hpp"
#include "../cost/training_run.hpp"
#include "../search/fit_advice.hpp"
#include "../spec/links.hpp"
#include "catalog_json.hpp"
#include "description_file.hpp"
#include "system_json.hpp"

namespace trainperf {

inline nlohmann::json to_json(const memory_breakdown& m) {
    nlohmann::json j = nlohmann::json::object();
    for (const auto& [name, value] : components(m)) j[std::string(name)] = value.value();
    return j;
}

inline nlohmann::json to_json(const parallel_layout& l) {
    return {{"gpus", l.gpus()},       {"dp", l.dp},
            {"tp", l.tp},             {"cp", l.cp},             {"pp", l.pp},
            {"ep", l.ep},             {"etp", l.expert_tp()},
            {"interleave", l.interleave}, {"schedule", std::string(to_string(l.schedule))},
            {"first_stage_layers", l.first_stage_layers}, {"last_stage_layers", l.last_stage_layers},
            {"pipeline_layout", l.pipeline_layout.empty() ? nlohmann::json(nullptr)
                                                          : nlohmann::json(std::string(l.pipeline_layout))},
            {"sp", l.sp},
            {"zero", l.zero},         {"shard_group", l.shard_group},
            {"offload", std::string(to_string(l.offload))},
            {"micro_batch", l.micro_batch}, {"grad_accum", l.grad_accum},
            {"recompute", std::string(to_string(l.recompute))},
            {"recompute_modules", io::name_list(recomputed_modules(l))},  // empty without selective
            {"dp_overlap", std::string(to_string(l.dp_overlap))}};
}

// With optimizer offload: where its time goes and what it holds on the host.
inline nlohmann::json offload_json(const step_report& r) {
    return {{"gradient_copies_seconds", r.offload.gradient_copies.value()},
            {"host_step_seconds", r.offload.host_step.value()},
            {"weights_up_seconds", r.offload.weights_up.value()},
            {"host_memory_per_gpu_bytes", r.memory.offloaded_to_host.value()}};
}

inline nlohmann::json to_json(const training_setup& s, const step_report& r) {
    const auto& t = r.time;
    const fit_margin margin = margin_of(memory_report{r.memory, r.memory_capacity, r.fits}, s.framework.memory);
    nlohmann::json j = {{"gpu", std::string(s.cluster.gpu.name)},
            {"model", std::string(s.model.name)},
            {"framework", std::string(s.framework.name)},
            {"precision", std::string(s.precision.name)},
            {"optimizer", std::string(to_string(s.optimizer))},
            {"layout", to_json(s.layout)},
            {"gpus_per_node", s.cluster.gpus_per_node},
            {"nvlink_domain", gpus_per_domain(s.cluster)},
            {"intra_node_link", to_json(intra_node_link(s.cluster))},
            {"inter_node_link", to_json(s.cluster.inter_node)},
            {"host", io::host_to_json(s.cluster.host)},
            {"global_batch", r.global_batch},
            {"seq", r.seq},
            {"step_time_seconds", r.step_time.value()},
            {"samples_per_second", r.samples_per_second},
            {"tokens_per_second", r.tokens_per_second},
            {"tflops_per_gpu", r.model_flops_per_gpu.value() / 1e12},
            {"hardware_tflops_per_gpu", r.hardware_flops_per_gpu.value() / 1e12},
            {"mfu", r.mfu},
            {"hfu", r.hfu},
            {"hfu_ceiling", r.hfu_ceiling},
            {"memory_per_gpu_bytes", r.memory.total().value()},
            {"memory_capacity_bytes", r.memory_capacity.value()},
            {"memory_peak_phase", std::string(to_string(r.memory.peak_phase()))},
            {"memory_breakdown", to_json(r.memory)},
            {"fits", r.fits},
            {"memory_margin_bytes", margin.margin.value()},
            {"memory_verdict_decided_by", std::string(to_string(margin.decided_by))},
            {"time_breakdown", {{"forward_backward", r.fraction(t.forward_backward)},
                                {"communication", r.fraction(t.communication)},
                                {"optimizer", r.fraction(t.optimizer)},
                                {"bubble", r.fraction(t.bubble)},
                                {"data", r.fraction(t.data)}}},
            {"data_parallel_sync_seconds", r.data_parallel_sync.value()},
            {"bottleneck", std::string(to_string(r.bottleneck))}};
    if (s.layout.offload == offload_mode::optimizer) j["offload"] = offload_json(r);
    if (has_moe(s.model)) {
        // The token dispatch and combine of the MoE layers, per step on the pacing stage
        // (exposed: what the EP overlap and the shared experts do not hide; hidden: what
        // the shared experts hide).
        j["moe"] = {{"dispatcher", std::string(to_string(s.moe.dispatcher))},
                    {"imbalance", s.moe.imbalance},
                    {"capacity_factor", s.moe.capacity_factor},
                    {"a2a_overlap", s.moe.a2a_overlap},
                    {"shared_expert_overlap", s.moe.shared_expert_overlap},
                    {"dispatch_seconds", r.moe_dispatch.value()},
                    {"dispatch_share", r.fraction(r.moe_dispatch)},
                    {"dispatch_hidden_seconds", r.moe_dispatch_hidden.value()}};
    }
    if (r.low_precision) {
        // mfu/hfu above are against the FP8 or FP4 peak (the recipe's math).
        j["fp8_scaling"] = std::string(to_string(s.precision.scaling));
        j["fp8_primary_weights"] = fp8_primary_weights(s);
        j["mfu_bf16_peak"] = r.mfu_bf16_peak;
        j["hfu_bf16_peak"] = r.hfu_bf16_peak;
    }
    return j;
}

// A whole run: keys prefixed train_ so they sit beside a step report's.
inline nlohmann::json to_json(const training_run& run) {
    return {{"train_tokens", run.tokens},
            {"train_time_seconds", run.time.value()},
            {"train_gpu_hours", run.gpu_hours},
            {"train_energy_kwh", run.energy.value() / joules_per_kwh},
            {"train_cost", run.cost > 0 ? nlohmann::json(run.cost) : nlohmann::json(nullptr)},  // null: no price
            {"train_cost_currency", run.currency.empty() ? nlohmann::json(nullptr) : nlohmann::json(run.currency)}};
}

// The command that reproduces a setup, written beside each setup a document suggests as
// "predict_command" (the CLI passes its `trainperf predict` line; empty: no such key).
using command_of = std::function<std::string(const training_setup&)>;

namespace report_json_detail {
// One suggested change: its kind, layout and what it predicts.
inline nlohmann::json option_json(const fit_option& o, const command_of& command) {
    nlohmann::json j{{"change", std::string(to_string(o.change))},
                     {"layout", to_json(o.setup.layout)},
                     {"memory_per_gpu_bytes", o.report.memory.total().value()},
                     {"step_time_seconds", o.report.step_time.value()},
                     {"tokens_per_second", o.report.tokens_per_second},
                     {"global_batch", o.report.global_batch},
                     {"seq", o.report.seq},
                     {"optimizer", std::string(to_string(o.setup.optimizer))},
                     {"finetune", std::string(to_string(o.setup.finetune.mode))},
                     {"memory_margin_bytes", o.margin.margin.value()},
                     {"memory_verdict_decided_by", std::string(to_string(o.margin.decided_by))}};
    if (command) j["predict_command"] = command(o.setup);
    return j;
}
}  // namespace report_json_detail

// How far over the memory a setup is, and each change that makes it fit.
inline nlohmann::json to_json(const fit_advice& a, const command_of& command = {}) {
    nlohmann::json options = nlohmann::json::array();
    for (const fit_option& o : a.options) options.push_back(report_json_detail::option_json(o, command));
    return {{"memory_excess_bytes", a.excess().value()}, {"ways_to_fit", options}};
}

// What would make a setup that fits faster: its largest cost other than compute, and
// each faster layout with its gain in tokens/s per GPU (a fraction: 0.25 = 25 % more).
inline nlohmann::json to_json(const speed_advice& a, const command_of& command = {}) {
    nlohmann::json options = nlohmann::json::array();
    for (const fit_option& o : a.options) {
        options.push_back(report_json_detail::option_json(o, command));
        options.back()["tokens_per_second_per_gpu_gain"] = o.gain;
    }
    return {{"largest_cost", std::string(to_string(a.largest))},
            {"largest_cost_share", a.largest_share},
            {"dominated", a.dominated()},
            {"ways_to_speed_up", options}};
}

// `trainperf predict --json`: the setup and its step, the whole run where one was
// estimated, and the advice (ways to speed up a setup that fits, ways to fit one that
// does not), each suggested setup with its predict_command when `command` is given.
template <class Advice>
nlohmann::json predict_to_json(const training_setup& s, const step_report& r, const std::optional<training_run>& run,
                               const Advice& advice, const command_of& command = {}) {
    nlohmann::json j = to_json(s, r);
    if (run) j.update(to_json(*run));
    j.update(to_json(advice, command));
    return j;
}

}  // namespace trainperf
