// A layout search as JSON (`trainperf plan --json`, docs/cli.md): the request, how
// much of the space was evaluated, and the fastest layouts that fit, each with its
// framework, its layout's fields and its predicted step; a search across frameworks
// (`--framework any`) also lists the frameworks searched and those left out, with why.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "../search/framework_search.hpp"
#include "../search/layout_search.hpp"
#include "../search/training_plan.hpp"
#include "report_json.hpp"

namespace trainperf {

// The layout's keys (to_json(parallel_layout)), the framework switches and the step's
// headline figures.
inline nlohmann::json to_json(const plan_candidate& c) {
    nlohmann::json j = to_json(c.layout);
    j["flash_attention"] = c.switches.flash_attention;
    j["tensor_parallel_overlap"] = c.switches.tensor_parallel_overlap;
    j["overlap_parameter_gather"] = c.switches.overlap_parameter_gather;
    j["rank_order"] = std::string(to_string(c.order));
    j["step_time_seconds"] = c.report.step_time.value();
    j["tokens_per_second"] = c.report.tokens_per_second;
    j["mfu"] = c.report.mfu;
    j["memory_per_gpu_bytes"] = c.report.memory.total().value();
    j["bottleneck"] = std::string(to_string(c.report.bottleneck));
    return j;
}

namespace plan_json_detail {
// The keys every plan document has: the request, the search's counts (plan_result and
// framework_plan_result alike) and `best`.
template <class Result>
nlohmann::json plan_document(const plan_request& request, const Result& result, nlohmann::json best) {
    const training_setup& s = request.base;
    return {{"gpu", std::string(s.cluster.gpu.name)},
            {"model", std::string(s.model.name)},
            {"gpus", request.gpus},
            {"global_batch", request.global_batch},
            {"candidates", result.candidates},
            {"evaluated", result.evaluated},
            {"pruned", result.pruned},
            {"fitting", result.fitting},
            {"borderline", result.borderline},
            {"only_borderline", result.only_borderline},
            {"folded", result.folded},
            {"wall_seconds", result.wall.value()},
            {"best", std::move(best)}};
}
}  // namespace plan_json_detail

// With `command`, each of the best layouts has its predict_command (report_json.hpp).
// "folded": whether `best` holds one layout per family (search/layout_ranking.hpp
// same_family), the fastest of each.
inline nlohmann::json to_json(const plan_request& request, const plan_result& result,
                              const command_of& command = {}) {
    nlohmann::json best = nlohmann::json::array();
    for (const plan_candidate& c : result.best) {
        best.push_back(to_json(c));
        best.back()["framework"] = std::string(request.base.framework.name);
        if (command) best.back()["predict_command"] = command(setup_of(request.base, c));
    }
    return plan_json_detail::plan_document(request, result, std::move(best));
}

// A search across frameworks (search/framework_search.hpp): the keys of a plan, each of
// the best with the framework it runs with, "frameworks_searched" (names) and
// "frameworks_skipped" (each a framework and the reason it was left out).
inline nlohmann::json to_json(const plan_request& request, const framework_plan_result& result,
                              const command_of& command = {}) {
    nlohmann::json best = nlohmann::json::array();
    for (std::size_t i = 0; i < result.best.size(); ++i) {
        best.push_back(to_json(result.best[i]));
        best.back()["framework"] = std::string(result.framework(i).name);
        if (command) best.back()["predict_command"] = command(setup_of(request, result, i));
    }
    nlohmann::json searched = nlohmann::json::array(), skipped = nlohmann::json::array();
    for (const framework_profile& fw : result.searched) searched.push_back(std::string(fw.name));
    for (const skipped_framework& s : result.skipped)
        skipped.push_back({{"framework", s.framework}, {"reason", s.reason}});
    nlohmann::json j = plan_json_detail::plan_document(request, result, std::move(best));
    j["frameworks_searched"] = searched;
    j["frameworks_skipped"] = skipped;
    return j;
}

// An end-to-end plan: the request, every GPU count tried with its fastest layout and
// whole run (train_* keys, report_json.hpp), and which counts are the cheapest and
// the fastest that meet the deadline (their gpus, or null).
// With `command`, each count's fastest layout has its predict_command (report_json.hpp).
inline nlohmann::json to_json(const training_plan_request& request, const training_plan& plan,
                              const command_of& command = {}) {
    nlohmann::json counts = nlohmann::json::array();
    for (const gpu_count_plan& c : plan.counts) {
        nlohmann::json j{{"gpus", c.gpus},
                         {"evaluated", c.evaluated},
                         {"reaches_global_batch", c.reaches_global_batch},
                         {"fits", c.best.has_value()}};
        if (c.best) {
            j["best"] = to_json(*c.best);
            j["best"]["framework"] = std::string(request.layouts.base.framework.name);
            if (command) j["predict_command"] = command(setup_of(request, c));
            j.update(to_json(*c.run));
            j["train_days"] = c.run->days();
            j["meets_deadline"] = c.meets_deadline;
        }
        counts.push_back(std::move(j));
    }
    const auto gpus_at = [&](const std::optional<std::size_t>& i) -> nlohmann::json {
        return i ? nlohmann::json(plan.counts[*i].gpus) : nlohmann::json(nullptr);
    };
    const training_setup& s = request.layouts.base;
    return {{"gpu", std::string(s.cluster.gpu.name)},
            {"model", std::string(s.model.name)},
            {"global_batch", request.layouts.global_batch},
            {"train_tokens", request.train_tokens},
            {"deadline_days", request.deadline_days},
            {"price_per_gpu_hour", request.price_per_gpu_hour},
            {"currency", request.price_per_gpu_hour > 0 ? nlohmann::json(request.currency) : nlohmann::json(nullptr)},
            {"gpus_per_node", request.gpus_per_node},
            {"max_gpus", request.max_gpus},
            {"energy_note", "GPU board power (TDP) for the whole run: an upper bound for the GPUs alone"},
            {"counts", counts},
            {"cheapest_gpus", gpus_at(plan.cheapest)},
            {"fastest_gpus", gpus_at(plan.fastest)},
            {"wall_seconds", plan.wall.value()}};
}

}  // namespace trainperf
