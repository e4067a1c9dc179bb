// Report tables (io/report_table.hpp) and their CSV (io/csv.hpp) and JSON
// (io/table_json.hpp): every figure reads back as the report's own.
#include <trainperf/spec/gpu_catalog.hpp>
#include <trainperf/io/csv.hpp>
#include <trainperf/io/table_json.hpp>
#include <trainperf/spec/model_catalog.hpp>
#include <trainperf/io/report_table.hpp>

#include <cmath>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "csv_reader.hpp"

using namespace trainperf;
using trainperf::testing::csv_rows;
using trainperf::testing::decimal;

namespace {
training_setup llama_setup(const parallel_layout& layout) {
    training_setup s;
    s.cluster = standard_cluster(h100_sxm::spec);
    s.model = llama2_7b::config;
    s.precision = recipe(precision_kind::bf16);
    s.seq = 4096;
    s.framework = deepspeed_profile;
    s.layout = layout;
    return s;
}

// The planner's search for llama2-7b on `gpus` H100s under a framework profile.
plan_request llama_plan(const framework_profile& fw, int gpus, long long global_batch, int max_micro_batch) {
    plan_request r;
    r.base = llama_setup({});
    r.base.framework = fw;
    r.gpus = gpus;
    r.global_batch = global_batch;
    r.max_micro_batch = max_micro_batch;
    return r;
}

// A grid of setups: some fit, some do not.
std::vector<training_setup> grid() {
    std::vector<training_setup> out;
    for (int b : {1, 2, 8})
        for (auto rc : {recompute_mode::none, recompute_mode::full})
            out.push_back(llama_setup({.dp = 8, .zero = 3, .micro_batch = b, .grad_accum = 2, .recompute = rc}));
    // Tensor and pipeline parallel: a framework that runs them.
    training_setup split = llama_setup({.dp = 2, .tp = 2, .pp = 2, .sp = true, .zero = 1, .micro_batch = 1,
                                        .grad_accum = 8, .recompute = recompute_mode::selective});
    split.framework = megatron_core_profile;
    out.push_back(split);
    return out;
}

double number(const std::string& field) {
    const auto v = decimal(field);
    REQUIRE(v.has_value());
    return *v;
}
}  // namespace

TEST_CASE("plain decimals never use an exponent and read back exactly", "[report_table]") {
    CHECK(plain_decimal(1.0876e11) == "108760000000");
    CHECK(plain_decimal(0.0) == "0");
    CHECK(plain_decimal(-0.0) == "0");
    CHECK(plain_decimal(2.5) == "2.5");
    for (double v : {1.0876e11, 1e-9, 3.0 / 7.0, -123456.789, 6.02e23, 1e-300, 79.1591796875}) {
        const std::string s = plain_decimal(v);
        INFO(s);
        CHECK(s.find_first_of("eE") == std::string::npos);
        CHECK(number(s) == v);
    }
    CHECK_THROWS_WITH(plain_decimal(std::nan("")), Catch::Contains("finite"));
}

TEST_CASE("CSV fields are quoted as RFC 4180 says, and read back", "[report_table]") {
    report_table t({"name", "value, with comma", "flag", "count", "empty"});
    t.add_row({std::string("a \"quoted\", name"), 1.5, true, 3LL, std::monostate{}});
    t.add_row({std::string("line\nbreak"), -2e-3, false, -4LL, std::monostate{}});
    const std::string csv = to_csv(t);
    CHECK(csv.find("\"value, with comma\"") != std::string::npos);
    CHECK(csv.find("\"a \"\"quoted\"\", name\"") != std::string::npos);
    CHECK(csv.find("\r\n") != std::string::npos);
    const auto rows = csv_rows(csv);
    REQUIRE(rows.size() == 2);
    CHECK(rows[0].at("name") == "a \"quoted\", name");
    CHECK(rows[0].at("value, with comma") == "1.5");
    CHECK(rows[0].at("flag") == "true");
    CHECK(rows[0].at("count") == "3");
    CHECK(rows[0].at("empty").empty());
    CHECK(rows[1].at("name") == "line\nbreak");
    CHECK(number(rows[1].at("value, with comma")) == -2e-3);
    CHECK_THROWS_WITH(t.add_row({1.0}), Catch::Contains("one cell per column"));
}

TEST_CASE("a step table's CSV round-trips every figure of predict()", "[report_table]") {
    report_table t = step_table();
    std::vector<step_report> reports;
    for (const auto& s : grid()) {
        reports.push_back(predict(s));
        add_step(t, s, reports.back());
    }
    const auto rows = csv_rows(to_csv(t));
    REQUIRE(rows.size() == reports.size());
    bool some_fit = false, some_do_not = false;
    const auto setups = grid();
    for (std::size_t i = 0; i < rows.size(); ++i) {
        const auto& row = rows[i];
        const step_report& r = reports[i];
        const parallel_layout& l = setups[i].layout;
        INFO("row " << i);
        CHECK(row.at("gpu") == "h100-sxm");
        CHECK(row.at("model") == "llama2-7b");
        CHECK(number(row.at("gpus")) == l.gpus());
        CHECK(number(row.at("micro_batch")) == l.micro_batch);
        CHECK(number(row.at("global_batch")) == double(r.global_batch));
        CHECK(row.at("recompute") == to_string(l.recompute));
        CHECK(row.at("fits") == (r.fits ? "true" : "false"));
        CHECK(row.at("bottleneck") == to_string(r.bottleneck));
        // Memory is there whether it fits or not, in GiB.
        CHECK(number(row.at("memory_GiB")) == to_gib(r.memory.total()).value());
        CHECK(number(row.at("memory_capacity_GiB")) == to_gib(r.memory_capacity).value());
        CHECK(number(row.at("memory_activations_GiB")) == to_gib(r.memory.activations).value());
        if (r.fits) {
            some_fit = true;
            CHECK(number(row.at("step_time_ms")) == r.step_time.value() * 1e3);
            CHECK(number(row.at("communication_ms")) == r.time.communication.value() * 1e3);
            CHECK(number(row.at("data_parallel_sync_ms")) == r.data_parallel_sync.value() * 1e3);
            CHECK(number(row.at("tokens_per_s")) == r.tokens_per_second);
            CHECK(number(row.at("samples_per_s")) == r.samples_per_second);
            CHECK(number(row.at("model_tflops_per_gpu")) == r.model_flops_per_gpu.value() / 1e12);
            CHECK(number(row.at("mfu_percent")) == 100 * r.mfu);
            // The parts of the step add up to it.
            double parts = 0;
            for (const char* c : {"forward_backward_ms", "communication_ms", "optimizer_ms", "bubble_ms", "data_ms"})
                parts += number(row.at(c));
            CHECK(parts == Approx(number(row.at("step_time_ms"))).epsilon(1e-12));
        } else {
            some_do_not = true;
            for (const char* c : {"step_time_ms", "tokens_per_s", "samples_per_s", "mfu_percent", "model_tflops_per_gpu"})
                CHECK(row.at(c).empty());
            CHECK(row.at("bottleneck") == "memory");
        }
    }
    CHECK(some_fit);
    CHECK(some_do_not);
}

TEST_CASE("a table's JSON has one object per row, null where the CSV is empty", "[report_table]") {
    report_table t = step_table();
    for (const auto& s : grid()) add_step(t, s, predict(s));
    const nlohmann::json j = to_json(t);
    REQUIRE(j.size() == t.rows().size());
    for (std::size_t i = 0; i < t.rows().size(); ++i) {
        CHECK(j[i].size() == t.columns().size());
        if (j[i]["fits"] == true) CHECK(j[i]["tokens_per_s"].is_number());
        else CHECK(j[i]["tokens_per_s"].is_null());
        CHECK(j[i]["memory_GiB"].get<double>() == std::get<double>(t.at(i, "memory_GiB")));
    }
}

TEST_CASE("the components at the peak add up to the total", "[report_table][memory]") {
    report_table t = memory_table();
    for (const auto& s : grid()) {
        const memory_report m = memory_of(s);
        double sum = 0;
        for (const auto& [name, value] : components_at_peak(m.breakdown)) sum += value.value();
        CHECK(sum == Approx(m.breakdown.total().value()).epsilon(1e-12));
        add_memory(t, s, m);
    }
    // The optimizer step peaks when its temporaries outweigh the activations: a
    // profile whose optimizer allocates two fp32 copies of the parameters at once (the
    // catalog's profiles step tensor by tensor), a small model at a short sequence.
    training_setup small = llama_setup({.micro_batch = 1});
    small.model = gpt2::config;
    small.seq = 16;
    small.framework = pytorch_eager_profile;
    small.framework.memory.optimizer_temporaries = 2.0;
    const memory_report m = memory_of(small);
    CHECK(m.breakdown.peak_phase() == memory_phase::optimizer_step);
    double sum = 0;
    for (const auto& [name, value] : components_at_peak(m.breakdown)) sum += value.value();
    CHECK(sum == Approx(m.breakdown.total().value()).epsilon(1e-12));
    CHECK(std::get<double>(t.at(0, "memory_GiB")) == to_gib(memory_of(grid()[0]).breakdown.total()).value());
}

TEST_CASE("plan and scaling tables hold the search's and the sweep's figures", "[report_table]") {
    const plan_request request = llama_plan(megatron_profile, 8, 16, 2);
    const plan_result result = plan(request, 3);
    const report_table t = plan_table(request, result);
    REQUIRE(t.rows().size() == result.best.size());
    for (std::size_t i = 0; i < t.rows().size(); ++i) {
        CHECK(std::get<long long>(t.at(i, "rank")) == static_cast<long long>(i + 1));
        CHECK(std::get<double>(t.at(i, "step_time_ms")) == result.best[i].report.step_time.value() * 1e3);
        CHECK(std::get<long long>(t.at(i, "dp")) == result.best[i].layout.dp);
    }
    training_setup s = llama_setup({.zero = 1, .micro_batch = 1, .recompute = recompute_mode::selective});
    const engine_scaling e = data_parallel_scaling(s, 4);
    const report_table sc = scaling_table(e);
    REQUIRE(sc.rows().size() == 4);
    CHECK(std::get<double>(sc.at(3, "engine_speedup_x")) == e.points[3].engine_speedup);
    CHECK(std::get<double>(sc.at(3, "formula_speedup_x")) == Approx(speedup(4, e.r)));
    CHECK(std::get<double>(sc.at(3, "r")) == e.r);
    const report_table f = scaling_table(8, 0.15);
    CHECK(std::get<double>(f.at(7, "speedup_x")) == Approx(3.902).epsilon(1e-3));
}

TEST_CASE("a plan's rows carry each candidate's stage split, schedule, shard group and switches",
          "[report_table]") {
    // Megatron-Core offers uneven splits, hybrid shard groups and three switches: the
    // rows must tell the candidates apart by them.
    const plan_request request = llama_plan(megatron_core_profile, 16, 32, 1);
    const plan_result result = plan(request, 4000);
    const report_table t = plan_table(request, result);
    REQUIRE(t.rows().size() == result.best.size());
    bool uneven = false, sharded = false, switched = false;
    for (std::size_t i = 0; i < t.rows().size(); ++i) {
        const plan_candidate& c = result.best[i];
        const pipeline_split split = pipeline_split_of(request.base.model, c.layout);
        CHECK(std::get<long long>(t.at(i, "first_stage_layers")) == split.first);
        CHECK(std::get<long long>(t.at(i, "last_stage_layers")) == split.last);
        CHECK(std::get<std::string>(t.at(i, "schedule")) == to_string(c.layout.schedule));
        CHECK(std::get<long long>(t.at(i, "shard_group")) == c.layout.shard_group);
        CHECK(std::get<bool>(t.at(i, "flash_attention")) == c.switches.flash_attention);
        CHECK(std::get<bool>(t.at(i, "tp_comm_overlap")) == c.switches.tensor_parallel_overlap);
        CHECK(std::get<bool>(t.at(i, "overlap_param_gather")) == c.switches.overlap_parameter_gather);
        uneven = uneven || split.first != split.last;
        sharded = sharded || c.layout.shard_group > 0;
        switched = switched || c.switches != switches_of(request.base.framework);
    }
    CHECK(uneven);
    CHECK(sharded);
    CHECK(switched);
}

TEST_CASE("an end-to-end plan's table: one row per GPU count, its run and its step", "[report_table]") {
    training_plan_request request;
    request.layouts.base = llama_setup({});
    request.layouts.base.framework = megatron_profile;
    request.layouts.global_batch = 64;
    request.layouts.max_micro_batch = 2;
    request.train_tokens = 1e11;
    request.deadline_days = 30;
    request.price_per_gpu_hour = 3;
    request.max_gpus = 32;
    const training_plan p = plan_training(request);
    const auto rows = csv_rows(to_csv(training_plan_table(request, p)));
    REQUIRE(rows.size() == p.counts.size());
    REQUIRE(p.cheapest.has_value());
    for (std::size_t i = 0; i < rows.size(); ++i) {
        const gpu_count_plan& c = p.counts[i];
        INFO(c.gpus << " GPUs");
        CHECK(number(rows[i].at("gpus")) == c.gpus);
        CHECK(rows[i].at("cheapest") == (p.cheapest == i ? "true" : "false"));
        CHECK(rows[i].at("fastest") == (p.fastest == i ? "true" : "false"));
        if (!c.best) {
            CHECK(rows[i].at("fits") == "false");
            CHECK(rows[i].at("train_days").empty());
            CHECK(rows[i].at("model") == "llama2-7b");
            continue;
        }
        CHECK(number(rows[i].at("train_days")) == p.days(i));
        CHECK(number(rows[i].at("train_cost")) == c.run->cost);
        CHECK(number(rows[i].at("train_energy_kWh")) == c.run->energy.value() / joules_per_kwh);
        CHECK(number(rows[i].at("step_time_ms")) == c.best->report.step_time.value() * 1e3);
        CHECK(number(rows[i].at("dp")) == c.best->layout.dp);
        CHECK(rows[i].at("meets_deadline") == (c.meets_deadline ? "true" : "false"));
    }
}
