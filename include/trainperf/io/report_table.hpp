// Predictions as a table: named columns, each name carrying its unit (step_time_ms,
// memory_GiB, tokens_per_s), one row per prediction. A step's row holds the setup it
// was made for (GPU, model, recipe, link, every layout field) and every figure of its
// report: step time and its breakdown, the per-micro-batch times, the full data-
// parallel sync before overlap, throughput, FLOP rates, MFU/HFU, memory and its
// breakdown, fits and the bottleneck. A layout that does not fit cannot run: its row
// keeps its memory but leaves every time, throughput and FLOP figure empty. Tables of
// plans (search/layout_search.hpp) and of data-parallel scaling (search/data_parallel_scaling.hpp) come the same
// way, and so do end-to-end plans (search/training_plan.hpp). io/csv.hpp writes a table as CSV, io/table_json.hpp as JSON; the CLI prints the
// same tables, so a program gets the CLI's CSV by building the rows itself.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "../core/enum_names.hpp"
#include "../core/error.hpp"
#include "../core/units.hpp"
#include "../cost/memory.hpp"
#include "../cost/scaling.hpp"
#include "../cost/step.hpp"
#include "../cost/training_run.hpp"
#include "../search/data_parallel_scaling.hpp"
#include "../search/layout_search.hpp"
#include "../search/training_plan.hpp"
#include "../spec/setup.hpp"

namespace trainperf {

// One cell: empty (no figure: e.g. the step time of a layout that does not fit), a
// name, a whole number, a real number or a yes/no.
using table_cell = std::variant<std::monostate, std::string, long long, double, bool>;

class report_table {
public:
    report_table() = default;
    explicit report_table(std::vector<std::string> columns) : columns_(std::move(columns)) {}

    const std::vector<std::string>& columns() const { return columns_; }
    const std::vector<std::vector<table_cell>>& rows() const { return rows_; }

    void add_row(std::vector<table_cell> row) {
        require(row.size() == columns_.size(), "row", row.size(),
                "must have one cell per column (" + std::to_string(columns_.size()) + ")");
        rows_.push_back(std::move(row));
    }

    // The index of a column, or columns().size() when the table has none of that name.
    std::size_t column(std::string_view name) const {
        for (std::size_t i = 0; i < columns_.size(); ++i)
            if (columns_[i] == name) return i;
        return columns_.size();
    }

    const table_cell& at(std::size_t row, std::string_view name) const {
        const std::size_t c = column(name);
        require(c < columns_.size(), "column", std::string(name), "is not a column of the table");
        require(row < rows_.size(), "row", row, "is beyond the table's rows");
        return rows_[row][c];
    }

private:
    std::vector<std::string> columns_;
    std::vector<std::vector<table_cell>> rows_;
};

namespace report_table_detail {
inline constexpr double ms_per_second = 1e3;
inline constexpr double tera = 1e12;
inline constexpr double giga = 1e9;

inline table_cell ms(seconds t) { return t.value() * ms_per_second; }
inline table_cell gib(bytes b) { return to_gib(b).value(); }
inline table_cell text(std::string_view s) { return std::string(s); }
inline table_cell whole(long long n) { return n; }

// The configuration columns of a setup: its layout (the pipeline's stage split as the
// layers its first and last stages hold, and the custom pipeline layout's text, empty
// without one; shard_group 0 is all dp × cp ranks) and the
// framework's switches a layout can turn.
inline std::vector<std::string> setup_columns() {
    return {"gpu",       "model",         "framework",   "precision",     "optimizer",
            "seq",       "gpus",          "gpus_per_node", "nvlink_domain", "intra_node_link", "intra_node_link_GBps",
            "inter_node_link_GBps", "dp", "tp",          "cp",            "pp",            "ep", "etp", "interleave",
            "first_stage_layers", "last_stage_layers", "pipeline_layout", "schedule",
            "sp",        "zero",          "shard_group", "offload",       "micro_batch",   "grad_accum",
            "global_batch", "recompute", "recompute_modules", "dp_overlap",  "flash_attention", "tp_comm_overlap",
            "overlap_param_gather", "reshard_after_forward", "cuda_graphs", "compile", "grad_reduce_dtype", "fp8_scaling",
            "fp8_params", "expandable_segments", "finetune", "lora_rank", "lora_targets", "rank_order",
            "sockets_per_node",
            "adapters_per_node", "data_loading_ms", "host_to_device_ms", "prefetch",
            "moe_dispatcher", "moe_imbalance", "moe_capacity_factor", "moe_a2a_overlap", "moe_shared_expert_overlap"};
}

inline std::vector<table_cell> setup_cells(const training_setup& s) {
    const parallel_layout& l = s.layout;
    const cluster_spec& c = s.cluster;
    const pipeline_split split = pipeline_split_of(s.model, l);
    return {text(c.gpu.name),
            text(s.model.name),
            text(s.framework.name),
            text(s.precision.name),
            text(to_string(s.optimizer)),
            whole(sequence_length(s)),
            whole(l.gpus()),
            whole(c.gpus_per_node),
            whole(gpus_per_domain(c)),
            text(to_string(c.intra_node.kind)),
            c.intra_node.per_direction.value() / giga,
            c.inter_node.per_direction.value() / giga,
            whole(l.dp),
            whole(l.tp),
            whole(l.cp),
            whole(l.pp),
            whole(l.ep),
            whole(l.expert_tp()),
            whole(l.interleave),
            whole(split.first),
            whole(split.last),
            text(l.pipeline_layout),
            text(to_string(l.schedule)),
            l.sp,
            whole(l.zero),
            whole(l.shard_group),
            text(to_string(l.offload)),
            whole(l.micro_batch),
            whole(l.grad_accum),
            whole(l.global_batch()),
            text(to_string(l.recompute)),
            text(names_of(recomputed_modules(l), "+")),
            text(to_string(l.dp_overlap)),
            s.framework.flash_attention,
            s.framework.tensor_parallel_overlap,
            s.framework.overlap_parameter_gather,
            reshards_after_forward(s.framework, l),
            s.framework.cuda_graphs,
            s.framework.compiled,
            text(to_string(stored_precision(s).gradients)),
            quantized_linears(s.precision) ? text(to_string(s.precision.scaling)) : table_cell{},
            quantized_linears(s.precision) ? table_cell{fp8_primary_weights(s)} : table_cell{},
            s.framework.memory.expandable_segments,
            text(to_string(s.finetune.mode)),
            s.finetune.freezes_base() ? whole(s.finetune.rank) : table_cell{},
            s.finetune.freezes_base() ? text(lora_targets_text(s.finetune.targets)) : table_cell{},
            text(to_string(c.order)),
            whole(c.sockets_per_node),
            whole(c.adapters_per_node),
            ms(s.data_loading),
            ms(s.host_to_device),
            s.prefetch,
            // An MoE model's routing (empty for a dense one).
            has_moe(s.model) ? text(to_string(s.moe.dispatcher)) : table_cell{},
            has_moe(s.model) ? table_cell(s.moe.imbalance) : table_cell{},
            has_moe(s.model) ? table_cell(s.moe.capacity_factor) : table_cell{},
            has_moe(s.model) ? table_cell(s.moe.a2a_overlap) : table_cell{},
            has_moe(s.model) ? table_cell(s.moe.shared_expert_overlap) : table_cell{}};
}

// The figures of a step report that only a layout that runs has.
inline std::vector<std::string> step_figure_columns() {
    return {"step_time_ms",          "forward_backward_ms",       "communication_ms",
            "optimizer_ms",          "bubble_ms",                 "data_ms",
            "data_parallel_sync_ms", "micro_batch_forward_ms",    "micro_batch_backward_ms",
            "micro_batch_recompute_ms", "micro_batch_tp_comm_ms", "micro_batch_pp_comm_ms",
            "micro_batch_cp_comm_ms", "micro_batch_ep_comm_ms",
            "samples_per_s",         "tokens_per_s",              "tokens_per_s_per_gpu",
            "model_tflops_per_gpu",  "hardware_tflops_per_gpu",   "mfu_percent",
            "hfu_percent",           "mfu_bf16_peak_percent",     "hfu_bf16_peak_percent"};
}

inline std::vector<table_cell> step_figure_cells(const step_report& r) {
    if (!r.fits) return std::vector<table_cell>(step_figure_columns().size());
    const step_time_breakdown& t = r.time;
    const micro_batch_times& m = r.micro_batch;
    return {ms(r.step_time),
            ms(t.forward_backward),
            ms(t.communication),
            ms(t.optimizer),
            ms(t.bubble),
            ms(t.data),
            ms(r.data_parallel_sync),
            ms(m.forward),
            ms(m.backward),
            ms(m.recompute),
            ms(m.tensor_parallel_comm),
            ms(m.pipeline_comm),
            ms(m.context_parallel_comm),
            ms(m.expert_parallel_comm),
            r.samples_per_second,
            r.tokens_per_second,
            r.tokens_per_second_per_gpu(),
            r.model_flops_per_gpu.value() / tera,
            r.hardware_flops_per_gpu.value() / tera,
            100 * r.mfu,
            100 * r.hfu,
            // fp8 and nvfp4 only: the same rates against the dense bf16 peak (empty otherwise).
            r.low_precision ? table_cell(100 * r.mfu_bf16_peak) : table_cell{},
            r.low_precision ? table_cell(100 * r.hfu_bf16_peak) : table_cell{}};
}

// Memory per GPU: the total, what the device can use, the phase that peaks, the
// pipeline stage reported, each component, and what went to host memory.
inline std::vector<std::string> memory_columns() {
    std::vector<std::string> names{"memory_GiB", "memory_capacity_GiB", "memory_peak_phase", "memory_stage"};
    for (const auto& [name, value] : components(memory_breakdown{})) names.push_back("memory_" + std::string(name) + "_GiB");
    names.emplace_back("memory_offloaded_to_host_GiB");
    return names;
}

inline std::vector<table_cell> memory_cells(const memory_breakdown& m, bytes capacity) {
    std::vector<table_cell> cells{gib(m.total()), gib(capacity), text(to_string(m.peak_phase())), whole(m.stage)};
    for (const auto& [name, value] : components(m)) cells.push_back(gib(value));
    cells.push_back(gib(m.offloaded_to_host));
    return cells;
}

template <class T>
void append(std::vector<T>& to, std::vector<T> from) {
    to.insert(to.end(), std::make_move_iterator(from.begin()), std::make_move_iterator(from.end()));
}
}  // namespace report_table_detail

// The columns of a step row: the setup, fits and the bottleneck, the step's figures,
// its memory.
inline std::vector<std::string> step_columns() {
    namespace d = report_table_detail;
    std::vector<std::string> c = d::setup_columns();
    c.emplace_back("fits");
    c.emplace_back("bottleneck");
    d::append(c, d::step_figure_columns());
    d::append(c, d::memory_columns());
    return c;
}

// One prediction as a row of step_columns(); `r` is predict(s).
inline std::vector<table_cell> step_row(const training_setup& s, const step_report& r) {
    namespace d = report_table_detail;
    std::vector<table_cell> row = d::setup_cells(s);
    row.emplace_back(r.fits);
    row.push_back(d::text(to_string(r.bottleneck)));
    d::append(row, d::step_figure_cells(r));
    d::append(row, d::memory_cells(r.memory, r.memory_capacity));
    return row;
}

// An empty table of step rows.
inline report_table step_table() { return report_table(step_columns()); }

// Appends predict(s) (the caller's, to avoid predicting twice) as a row.
inline void add_step(report_table& t, const training_setup& s, const step_report& r) { t.add_row(step_row(s, r)); }

// Memory rows (memory_of, no step): the setup, fits, the memory columns of a step
// row, and each component as it stands at the peak (components_at_peak: they add up
// to memory_GiB), named memory_at_peak_<component>_GiB.
inline std::vector<std::string> memory_table_columns() {
    namespace d = report_table_detail;
    std::vector<std::string> c = d::setup_columns();
    c.emplace_back("fits");
    d::append(c, d::memory_columns());
    for (const auto& [name, value] : components_at_peak(memory_breakdown{}))
        c.push_back("memory_at_peak_" + std::string(name) + "_GiB");
    return c;
}

inline report_table memory_table() { return report_table(memory_table_columns()); }

// Appends memory_of(s) (the caller's) as a row.
inline void add_memory(report_table& t, const training_setup& s, const memory_report& m) {
    namespace d = report_table_detail;
    std::vector<table_cell> row = d::setup_cells(s);
    row.emplace_back(m.fits);
    d::append(row, d::memory_cells(m.breakdown, m.capacity));
    for (const auto& [name, value] : components_at_peak(m.breakdown)) row.push_back(d::gib(value));
    t.add_row(std::move(row));
}

// The layouts a search kept, fastest first: their rank (1 = fastest) and step row,
// each layout on the request's system.
inline report_table plan_table(const plan_request& request, const plan_result& result) {
    std::vector<std::string> columns{"rank"};
    report_table_detail::append(columns, step_columns());
    report_table t(std::move(columns));
    long long rank = 1;
    for (const plan_candidate& c : result.best) {
        std::vector<table_cell> row{rank++};
        report_table_detail::append(row, step_row(setup_of(request.base, c), c.report));
        t.add_row(std::move(row));
    }
    return t;
}

// An end-to-end plan (search/training_plan.hpp): per GPU count tried, whether it meets the
// deadline and is the cheapest or the fastest that does, the whole run (days,
// GPU-hours, energy at board power in kWh, cost — empty without a price), then the step row of its fastest
// layout. A count where no layout fits keeps only its system and GPU count.
inline report_table training_plan_table(const training_plan_request& request, const training_plan& plan) {
    std::vector<std::string> columns{"meets_deadline", "cheapest", "fastest", "train_days", "train_gpu_hours",
                                     "train_energy_kWh", "train_cost", "train_cost_currency"};
    report_table_detail::append(columns, step_columns());
    report_table t(columns);
    for (std::size_t i = 0; i < plan.counts.size(); ++i) {
        const gpu_count_plan& c = plan.counts[i];
        std::vector<table_cell> row(columns.size());
        if (c.best) {
            const training_run& run = *c.run;
            row = {c.meets_deadline, plan.cheapest == i, plan.fastest == i, plan.days(i), run.gpu_hours,
                   run.energy.value() / joules_per_kwh};
            row.push_back(run.cost > 0 ? table_cell(run.cost) : table_cell(std::monostate{}));
            row.push_back(run.currency.empty() ? table_cell(std::monostate{}) : table_cell(run.currency));
            report_table_detail::append(row, step_row(setup_of(request, c), c.best->report));
        } else {
            const training_setup& s = request.layouts.base;
            const auto set = [&](std::string_view name, table_cell v) { row[t.column(name)] = std::move(v); };
            set("meets_deadline", false);
            set("cheapest", false);
            set("fastest", false);
            set("gpu", std::string(s.cluster.gpu.name));
            set("model", std::string(s.model.name));
            set("framework", std::string(s.framework.name));
            set("precision", std::string(s.precision.name));
            set("optimizer", std::string(to_string(s.optimizer)));
            set("seq", static_cast<long long>(sequence_length(s)));
            set("gpus", static_cast<long long>(c.gpus));
            set("fits", false);
        }
        t.add_row(std::move(row));
    }
    return t;
}

// The engine's data-parallel scaling beside the formula N/(1+(N−1)r) with the r
// derived from it (the same r in every row).
inline report_table scaling_table(const engine_scaling& e) {
    report_table t({"replicas", "gpus", "engine_speedup_x", "formula_speedup_x", "engine_efficiency_percent",
                    "formula_efficiency_percent", "r"});
    for (const engine_scaling_point& p : e.points)
        t.add_row({static_cast<long long>(p.replicas), static_cast<long long>(p.gpus), p.engine_speedup,
                   p.formula_speedup, 100 * p.engine_speedup / p.replicas, 100 * p.formula_speedup / p.replicas,
                   e.r});
    return t;
}

// The formula's curve 1…n for a given r.
inline report_table scaling_table(int n, double r) {
    report_table t({"gpus", "speedup_x", "efficiency_percent", "wasted_gpus", "r"});
    for (const scaling_point& p : scaling_curve(n, r))
        t.add_row({static_cast<long long>(p.gpus), p.speedup, 100 * p.efficiency, p.wasted_gpus, r});
    return t;
}

}  // namespace trainperf
