// The step-time engine: blind validation against Megatron-LM's published iteration
// times (Korthikanti et al. 2022, Table 5) and sanity relations between predictions.
#include <trainperf/spec/gpu_catalog.hpp>
#include <trainperf/spec/model_catalog.hpp>
#include <trainperf/search/data_parallel_scaling.hpp>
#include <trainperf/cost/step.hpp>
#include <trainperf/cost/training_run.hpp>
#include <trainperf/calibrate/published_runs.hpp>

#include <catch2/catch.hpp>

#include <array>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

using namespace trainperf;

namespace {

std::vector<published_iteration> korthikanti_table5() {
    std::ifstream in(TRAINPERF_TEST_DATA_DIR "/korthikanti2022_table5.csv");
    REQUIRE(in.good());
    return read_published_iterations(in);
}

training_setup single_gpu(const gpu_spec& gpu, const transformer_config& model, precision_kind p,
                          int batch = 8, int seq = 1024) {
    training_setup s;
    s.cluster = standard_cluster(gpu);
    s.model = model;
    s.precision = recipe(p);
    s.layout = {.micro_batch = batch};
    s.seq = seq;
    s.framework = pytorch_eager_profile;
    return s;
}

}  // namespace

TEST_CASE("Korthikanti et al. 2022 Table 5 is reproduced blind", "[step][validation]") {
    const auto rows = korthikanti_table5();
    REQUIRE(rows.size() == 8);
    // One system description and one framework profile for every row.
    const auto summary = validate_against(rows, selene_dgx_a100(), megatron_profile);
    for (const auto& r : summary.rows) {
        INFO(r.published.model << " " << to_string(r.published.recompute) << ": published "
             << r.published.seconds_per_iteration << " s, predicted " << r.predicted.step_time.value()
             << " s, error " << 100 * r.relative_error << " %");
        CHECK(std::abs(r.relative_error) <= 0.06);  // the bound on the worst row
        CHECK(r.predicted.fits);                     // these runs did fit on 80 GB A100s
    }
    // Bound stated in docs/validation.md: mean |error| <= 3 %, max <= 6 % (Calculon:
    // 3.65 % / 8.87 % on the same rows).
    CHECK(summary.mean_abs_error <= 0.03);
    CHECK(summary.max_abs_error <= 0.06);
}

TEST_CASE("predicted MFU of the selective rows is close to Megatron's published MFU", "[step][validation]") {
    // Megatron-LM README (2022): MFU 41.5 / 51.4 / 56.0 / 56.3 % for 22B/175B/530B/1T
    // with selective recomputation and sequence parallelism.
    const std::map<std::string, double> published_mfu{
        {"megatron-22B", 0.415}, {"gpt3-175B", 0.514}, {"turing-530B", 0.560}, {"megatron-1T", 0.563}};
    const auto summary = validate_against(korthikanti_table5(), selene_dgx_a100(), megatron_profile);
    for (const auto& r : summary.rows) {
        if (r.published.recompute != recompute_mode::selective) continue;
        INFO(r.published.model << ": predicted MFU " << r.predicted.mfu);
        CHECK(r.predicted.mfu == Approx(published_mfu.at(r.published.model)).epsilon(0.06));
    }
}

TEST_CASE("math modes order as their peaks: fp32 slower than tf32 slower than bf16", "[step]") {
    const auto& gpu = a100_sxm_80gb::spec;
    const auto fp32 = predict(single_gpu(gpu, gpt2_medium::config, precision_kind::fp32));
    const auto tf32 = predict(single_gpu(gpu, gpt2_medium::config, precision_kind::tf32));
    const auto bf16 = predict(single_gpu(gpu, gpt2_medium::config, precision_kind::bf16));
    CHECK(fp32.step_time > tf32.step_time);
    CHECK(tf32.step_time > bf16.step_time);
    // fp32 math runs at 19.5 vs 156 TFLOP/s: far more than 2x apart.
    CHECK(fp32.step_time.value() > 3 * tf32.step_time.value());
}

TEST_CASE("a fused Adam is never slower than the per-tensor loop", "[step]") {
    for (const auto* model : {&gpt2_medium::config, &llama2_7b::config, &bert_large::config}) {
        auto s = single_gpu(h100_sxm::spec, *model, precision_kind::bf16, 1, 512);
        s.optimizer = optimizer_kind::adamw;
        const seconds loop = optimizer_step_time(s);
        s.optimizer = optimizer_kind::adamw_fused;
        const seconds fused = optimizer_step_time(s);
        CHECK(fused < loop);
    }
}

TEST_CASE("gradient accumulation lowers the per-sample communication and optimizer share", "[step]") {
    auto s = single_gpu(a100_sxm_80gb::spec, gpt2_medium::config, precision_kind::bf16, 8, 1024);
    s.layout.dp = 8;
    s.framework = megatron_profile;  // sync exposed after backward
    const auto one = predict(s);
    s.layout.grad_accum = 8;
    const auto eight = predict(s);
    const auto overhead_share = [](const step_report& r) {
        return r.fraction(r.time.communication) + r.fraction(r.time.optimizer);
    };
    CHECK(overhead_share(eight) < overhead_share(one));
    CHECK(eight.samples_per_second > one.samples_per_second);
    CHECK(eight.global_batch == 8 * one.global_batch);
}

TEST_CASE("PCIe without peer-to-peer is slower than NVLink for data parallelism", "[step]") {
    auto s = single_gpu(a100_sxm_80gb::spec, gpt2_medium::config, precision_kind::bf16, 8, 1024);
    s.layout.dp = 4;
    s.cluster.gpus_per_node = 4;
    s.framework = megatron_profile;
    s.cluster.intra_node = s.cluster.gpu.gpu_link;
    const auto nvlink = predict(s);
    s.cluster.intra_node = default_link(link_kind::pcie_no_p2p);
    const auto staged = predict(s);
    s.cluster.intra_node = default_link(link_kind::pcie);
    const auto pcie = predict(s);
    CHECK(nvlink.step_time < pcie.step_time);
    CHECK(pcie.step_time < staged.step_time);
    CHECK(staged.time.communication.value() > 4 * nvlink.time.communication.value());
}

TEST_CASE("full recompute costs about one extra forward", "[step]") {
    auto s = single_gpu(a100_sxm_80gb::spec, gpt_neo_1_3b::config, precision_kind::bf16, 4, 2048);
    const auto none = predict(s);
    s.layout.recompute = recompute_mode::full;
    const auto full = predict(s);
    const auto& mb = none.micro_batch;
    // Recompute repeats the layers' forward (not the logits): a bit under one forward.
    CHECK(full.micro_batch.recompute.value() == Approx(mb.forward.value()).epsilon(0.15));
    CHECK(full.micro_batch.recompute < mb.forward);
    CHECK(full.step_time.value() == Approx((none.step_time + mb.forward).value()).epsilon(0.05));
    CHECK(full.memory.activations < none.memory.activations);
    // Backward is about twice the forward (dgrad + wgrad).
    CHECK(mb.backward.value() / mb.forward.value() == Approx(2.0).epsilon(0.2));
}

TEST_CASE("report arithmetic is consistent", "[step]") {
    auto s = single_gpu(h100_sxm::spec, llama2_7b::config, precision_kind::bf16, 1, 4096);
    s.layout = {.dp = 8, .zero = 3, .micro_batch = 1, .grad_accum = 4, .recompute = recompute_mode::full};
    s.framework = deepspeed_profile;
    const auto r = predict(s);
    const auto& t = r.time;
    CHECK(r.step_time.value() == Approx(t.total().value()));
    CHECK(r.fraction(t.forward_backward) + r.fraction(t.communication) + r.fraction(t.optimizer) +
              r.fraction(t.bubble) + r.fraction(t.data) == Approx(1.0));
    CHECK(r.global_batch == 32);
    CHECK(r.tokens_per_second == Approx(r.samples_per_second * 4096));
    CHECK(r.mfu > 0.0);
    CHECK(r.mfu < r.hfu);        // full recompute: the hardware does more than the model needs
    CHECK(r.hfu < 1.0);
    CHECK(r.memory.total() < r.memory_capacity);  // ZeRO-3 over 8 GPUs fits 7B on 80 GB
}

TEST_CASE("bad setups are rejected with the field named", "[step]") {
    auto s = single_gpu(v100_sxm2_32gb::spec, gpt2_medium::config, precision_kind::bf16);
    CHECK_THROWS_WITH(predict(s), Catch::Contains("bf16"));
    s = single_gpu(h100_sxm::spec, gpt2_medium::config, precision_kind::bf16);
    s.layout.tp = 3;
    CHECK_THROWS_WITH(predict(s), Catch::Contains("tp"));
    s.layout.tp = 1;
    s.layout.pp = 48;
    CHECK_THROWS_WITH(predict(s), Catch::Contains("pp"));
    s.layout.pp = 1;
    s.layout.micro_batch = 0;
    CHECK_THROWS_WITH(predict(s), Catch::Contains("batch"));
    s.layout.micro_batch = 1;
    s = single_gpu(jetson_orin_nx_16gb::spec, gpt2::config, precision_kind::bf16, 1, 512);
    s.layout.offload = offload_mode::optimizer;
    CHECK_THROWS_WITH(predict(s), Catch::Contains("offload"));
    s = single_gpu(h100_sxm::spec, gpt2_medium::config, precision_kind::bf16);
    s.layout.tp = 16;
    s.cluster.gpus_per_node = 8;
    CHECK_THROWS_AS(predict(s), trainperf::invalid_argument);
}

// The GEMMs of a setup that passes validation are priced unchecked (workload/ops.hpp
// checked_shape), so validation rejects every setup whose GEMMs would leave a size out
// of range, naming the setup's field; a GEMM from anywhere else is still checked.
TEST_CASE("setups whose GEMMs would be out of range are rejected before pricing, naming the field", "[step]") {
    transformer_config tiny{.name = "tiny", .layers = 2, .hidden = 64, .heads = 8, .ffn_hidden = 256, .vocab = 512,
                            .max_seq = 128};
    auto s = single_gpu(h100_sxm::spec, tiny, precision_kind::bf16, 1, 128);
    s.framework.tensor_parallel = true;  // pytorch-eager's kernels, tensor parallel
    s.cluster.gpus_per_node = 8;
    s.layout.tp = 8;
    s.layout.dp = 1;
    REQUIRE_NOTHROW(predict(s));
    const auto rejected = [&](training_setup bad, std::string_view field, std::string_view why) {
        CHECK_THROWS_WITH(validate(bad), Catch::StartsWith(std::string(field)) && Catch::Contains(std::string(why)));
        CHECK_THROWS_WITH(predict(bad), Catch::StartsWith(std::string(field)));
        CHECK_THROWS_WITH(price_micro_batch(bad), Catch::StartsWith(std::string(field)));
    };
    training_setup narrow_ffn = s;
    narrow_ffn.model.ffn_hidden = 4;  // half a column of the FFN per rank
    rejected(narrow_ffn, "tp", "ffn_hidden");
    training_setup small_vocab = s;
    small_vocab.model.vocab = 4;  // half a column of the output layer per rank
    rejected(small_vocab, "tp", "vocabulary");
    training_setup huge_batch = s;
    huge_batch.seq = 1;
    huge_batch.layout.tp = 1;
    huge_batch.layout.micro_batch = 1 << 30;  // 2^30 × 8 heads: 2^33 attention GEMMs
    rejected(huge_batch, "batch", "2^31");
    training_setup lora_kv = s;
    lora_kv.model.hidden = 32;   // heads of 4: K and V of one head are 4 wide, under one column per rank
    lora_kv.model.kv_heads = 1;
    lora_kv.finetune = {.mode = finetune_mode::lora, .rank = 8, .targets = unsigned(lora_target::k)};
    rejected(lora_kv, "tp", "adapted projection");
    training_setup wide_heads = s;
    wide_heads.model.attention_head_dim = 8192;
    wide_heads.framework = megatron_core_profile;  // a fused attention kernel
    rejected(wide_heads, "attention_head_dim", "fused attention");

    // Ops a program lists itself are checked where they are priced.
    stage_workload w = micro_batch_workload(s);
    REQUIRE_FALSE(w.gemms.empty());
    w.gemms.begin()->op.shape.n = 0.5;
    CHECK_THROWS_WITH(price_micro_batch(w, s), Catch::StartsWith("gemm.n"));
}

TEST_CASE("the communication fraction r is derived from the engine", "[step][scaling]") {
    auto s = single_gpu(a100_sxm_80gb::spec, gpt2_medium::config, precision_kind::bf16, 8, 1024);
    s.framework = megatron_profile;  // gradient sync exposed after backward
    s.cluster.gpus_per_node = 8;
    const auto scaling = data_parallel_scaling(s, 8);
    REQUIRE(scaling.points.size() == 8);
    CHECK(scaling.r > 0.0);
    CHECK(scaling.r < 1.0);
    // By construction the formula meets the engine at 8 replicas ...
    CHECK(scaling.points.back().formula_speedup == Approx(scaling.points.back().engine_speedup));
    // ... and the engine's speedup never falls as replicas are added.
    for (std::size_t i = 1; i < scaling.points.size(); ++i)
        CHECK(scaling.points[i].engine_speedup >= scaling.points[i - 1].engine_speedup);
    CHECK_FALSE(scaling.above_linear);
    CHECK(scaling.one_replica_fits);
    // A slower link means a larger r.
    s.cluster.intra_node = default_link(link_kind::pcie_no_p2p);
    CHECK(data_parallel_scaling(s, 8).r > scaling.r);
}

TEST_CASE("ZeRO's sharded optimizer step can scale above the replica count; r is then 0", "[step][scaling]") {
    // llama2-7b, ZeRO-3 under FSDP with overlapped sync over NVLink: one replica runs
    // AdamW over all 6.7e9 parameters (and does not fit), eight run an eighth each, so each
    // replica's step is shorter at eight than at one.
    training_setup s;
    s.cluster = standard_cluster(h100_sxm::spec, 8);
    s.model = llama2_7b::config;
    s.framework = pytorch_eager_profile;
    s.layout = {.zero = 3, .micro_batch = 1};
    const auto scaling = data_parallel_scaling(s, 8);
    CHECK(scaling.points.back().engine_speedup > 8.0);
    CHECK(scaling.above_linear);
    CHECK(scaling.r == 0.0);
    CHECK(scaling.points.back().formula_speedup == 8.0);
    CHECK_FALSE(scaling.one_replica_fits);
}

TEST_CASE("ZeRO stages trade memory for communication", "[step][zero]") {
    auto s = single_gpu(a100_sxm_80gb::spec, gpt_neo_1_3b::config, precision_kind::bf16, 4, 2048);
    s.framework = megatron_profile;  // nothing overlapped: the communication is all visible
    s.framework.zero_stages = 0b1111;  // every stage (Megatron-LM 2022 has 0 and 1)
    s.layout.dp = 8;
    s.layout.grad_accum = 4;
    std::array<step_report, 4> r;
    for (int zero = 0; zero <= 3; ++zero) {
        s.layout.zero = zero;
        r[std::size_t(zero)] = predict(s);
    }
    // Memory falls with every stage ...
    CHECK(r[1].memory.optimizer_state < r[0].memory.optimizer_state);
    CHECK(r[2].memory.gradients < r[1].memory.gradients);
    CHECK(r[3].memory.weights < r[2].memory.weights);
    // ... ZeRO-1 moves what an all-reduce moves; ZeRO-2 reduce-scatters every
    // micro-batch; ZeRO-3 also gathers weights twice per micro-batch.
    CHECK(r[1].data_parallel_sync.value() == Approx(r[0].data_parallel_sync.value()).epsilon(0.3));
    CHECK(r[2].data_parallel_sync > r[1].data_parallel_sync);
    CHECK(r[3].data_parallel_sync > r[2].data_parallel_sync);
    // ZeRO-2 with 4 micro-batches: 4 reduce-scatters of fp32 gradients (4 x 1/2 of
    // the all-reduce) plus one all-gather of bf16 weights (1/2 x 2/4 B of it):
    // 2 + 0.25 = 2.25 all-reduces (latency terms aside).
    CHECK(r[2].data_parallel_sync.value() / r[0].data_parallel_sync.value() == Approx(2.25).epsilon(0.02));
}

TEST_CASE("the input pipeline stalls a step only beyond what prefetching hides", "[step][input]") {
    auto s = single_gpu(h100_sxm::spec, gpt2_medium::config, precision_kind::bf16, 8, 1024);
    const auto base = predict(s);
    CHECK(base.time.data.value() == 0.0);
    // Loading shorter than the step: hidden by prefetching, added without it.
    s.data_loading = 0.5 * base.step_time;
    CHECK(predict(s).step_time.value() == Approx(base.step_time.value()));
    s.prefetch = false;
    CHECK(predict(s).step_time.value() == Approx(1.5 * base.step_time.value()));
    // Loading longer than the step: the step waits for the data.
    s.prefetch = true;
    s.data_loading = 3.0 * base.step_time;
    const auto starved = predict(s);
    CHECK(starved.step_time.value() == Approx(3.0 * base.step_time.value()));
    CHECK(starved.bottleneck == bottleneck_kind::data);
    s.data_loading = seconds_of(-1.0);
    CHECK_THROWS_WITH(predict(s), Catch::Contains("data_loading"));
}

TEST_CASE("a training run is tokens over throughput, GPU-hours and energy at TDP", "[step][run]") {
    auto s = single_gpu(h100_sxm::spec, gpt2_medium::config, precision_kind::bf16, 8, 1024);
    s.layout.dp = 8;
    const auto step = predict(s);
    const auto run = estimate_training_run(step, h100_sxm::spec, 1e10, 2.0);
    const double hours = 1e10 / step.tokens_per_second / 3600.0;
    CHECK(run.time.value() == Approx(hours * 3600.0));
    CHECK(run.gpu_hours == Approx(8 * hours));
    // 8 GPUs x 700 W for the whole run.
    CHECK(run.energy.value() / joules_per_kwh == Approx(8 * 0.7 * hours));
    CHECK(run.cost == Approx(2.0 * 8 * hours));
    CHECK_THROWS_WITH(estimate_training_run(step, h100_sxm::spec, 0.0), Catch::Contains("train_tokens"));
    CHECK_THROWS_WITH(estimate_training_run(step, h100_sxm::spec, 1e9, -1.0), Catch::Contains("price_per_gpu_hour"));
}

TEST_CASE("MFU is PaLM's model FLOPs for any architecture, and HFU is never below it", "[step][mfu]") {
    // PaLM appendix B: 6·N + 12·L·h·s per token. For a GPT layer (f = 4h) it is the
    // seed formula's 3 × forward up to the biases and norms in N.
    const transformer_config& gpt = gpt3_175b::config;
    CHECK(palm_training_flops_per_sample(gpt, 2048).value() ==
          Approx(training_flops_per_sample(gpt, 2048).value()).epsilon(1e-3));
    // A LLaMA-like FFN of 11008 (SwiGLU, three matrices): N counts it as it is.
    transformer_config custom = llama2_7b::config;
    custom.name = "custom";
    const double n = matmul_parameters(custom);
    CHECK(n == Approx(parameter_count(custom) - double(custom.vocab) * custom.hidden).epsilon(1e-3));
    // Random models and layouts: HFU >= MFU, equal without recompute.
    std::uint32_t state = 12345;
    const auto next = [&state](int lo, int hi) {
        state = state * 1664525u + 1013904223u;
        return lo + int((state >> 8) % std::uint32_t(hi - lo + 1));
    };
    for (int i = 0; i < 200; ++i) {
        transformer_config m;
        m.name = "random";
        m.heads = 1 << next(2, 6);
        m.hidden = m.heads * 64 * next(1, 3);
        m.kv_heads = next(0, 1) ? m.heads : m.heads / 4;
        m.layers = next(2, 48);
        m.ffn_hidden = next(2, 5) * m.hidden + 64 * next(0, 8);
        m.vocab = 1000 * next(8, 64);
        m.max_seq = 4096;
        m.ffn = next(0, 1) ? ffn_kind::swiglu : ffn_kind::gelu;
        m.positions = position_kind::rotary;
        m.tied_embeddings = next(0, 1) == 1;
        training_setup s = single_gpu(h100_sxm::spec, m, precision_kind::bf16, next(1, 8), 256 * next(1, 8));
        s.layout.recompute = std::array{recompute_mode::none, recompute_mode::selective, recompute_mode::full}[next(0, 2)];
        s.layout.tp = 1 << next(0, 2);
        s.layout.dp = next(1, 4);
        s.cluster.gpus_per_node = 8;
        s.framework = megatron_profile;
        const auto r = predict(s);
        INFO("model " << i << ", recompute " << to_string(s.layout.recompute));
        CHECK(r.hfu >= r.mfu);
        if (s.layout.recompute == recompute_mode::none) CHECK(r.hfu == Approx(r.mfu));
        CHECK(r.mfu > 0);
        CHECK(r.mfu == Approx(r.model_flops_per_gpu / s.cluster.gpu.peak_for(dtype::bf16)));
    }
}

TEST_CASE("the op lists price to what the streamed ops price to", "[step][workload]") {
    for (auto rc : {recompute_mode::none, recompute_mode::selective, recompute_mode::full}) {
        training_setup s = single_gpu(a100_sxm_80gb::spec, gpt3_175b::config, precision_kind::fp16, 1, 2048);
        s.cluster = selene_dgx_a100();
        s.framework = megatron_profile;
        s.layout = {.dp = 2, .tp = 8, .pp = 8, .interleave = 3, .sp = rc != recompute_mode::full, .micro_batch = 1,
                    .grad_accum = 8, .recompute = rc};
        const stage_workload w = micro_batch_workload(s);
        const micro_batch_times listed = price_micro_batch(w, s);
        const micro_batch_times streamed = price_micro_batch(s);
        INFO(to_string(rc));
        CHECK(listed.forward.value() == Approx(streamed.forward.value()).epsilon(1e-12));
        CHECK(listed.backward.value() == Approx(streamed.backward.value()).epsilon(1e-12));
        CHECK(listed.recompute.value() == Approx(streamed.recompute.value()).epsilon(1e-12));
        CHECK(listed.tensor_parallel_comm.value() == Approx(streamed.tensor_parallel_comm.value()).epsilon(1e-12));
        CHECK(listed.pipeline_comm.value() == Approx(streamed.pipeline_comm.value()).epsilon(1e-12));
        // 12 layer GEMMs per layer forward and backward... per stage: 6 forward, 12 backward, 3 logits.
        CHECK(w.gemms.size() == 21);
        // The layers' tensor-parallel collectives (an all-reduce, or an all-gather and a
        // reduce-scatter), the pipeline send, and the last stage's head: the loss's
        // all-reduces and the head input's all-gather (forward and again backward, one op)
        // and reduce-scatter, or its gradient's all-reduce.
        CHECK(w.collectives.size() == (rc == recompute_mode::full ? 2u + 2u : 3u + 3u));
    }
}

TEST_CASE("the stage pricer prices each GEMM as the kernel model does, repeated shapes and a full table included",
          "[step]") {
    // The pricer remembers the shapes it has priced (32 slots, probed from a hash of the
    // shape, m and n in either order): a wrong hit, or a full table answering with a
    // stale slot, would change the sum. Every third shape has a twin of the same sizes in
    // tf32, which must not be taken for it, and every fourth its transpose (the same
    // price, test_kernel_model) and a shape with k and m swapped (not the same).
    const auto& gpu = a100_sxm_80gb::spec;
    const kernel_params k = default_kernel_params(gpu);
    const kernel_cost_model kernels(gpu, k);
    std::mt19937_64 rng(20261204);
    for (const int distinct : {1, 5, 31, 32, 33, 80}) {
        std::vector<gemm_shape> shapes;
        while (int(shapes.size()) < distinct) {
            gemm_shape g{double(16 + rng() % 4096), double(16 + rng() % 4096), double(16 + rng() % 8192),
                         double(1 + rng() % 4), dtype::bf16};
            shapes.push_back(g);
            if (shapes.size() % 3 == 0 && int(shapes.size()) < distinct) {
                g.math = dtype::tf32;
                shapes.push_back(g);
            }
            if (shapes.size() % 4 == 0 && int(shapes.size()) + 1 < distinct) {
                shapes.push_back({g.n, g.m, g.k, g.batch, g.math});
                shapes.push_back({g.k, g.n, g.m, g.batch, g.math});
            }
        }
        stage_pricer pricer(gpu, k, nullptr);
        double expected = 0;
        for (int i = 0; i < 4 * distinct; ++i) {
            const gemm_shape& g = shapes[std::size_t(rng() % shapes.size())];
            pricer(stage_op<gemm_op>{{"gemm", g}, 1, 0, step_part::forward});
            expected += kernels.gemm_time(g).value();
        }
        INFO(distinct << " distinct shapes");
        CHECK(pricer.result().gpu_forward.value() == expected);
    }
}

TEST_CASE("the stage pricer prices each collective as collective_time does, repeated ones and a full table included",
          "[step][comm]") {
    // The pricer remembers the collectives it has priced (16 slots, probed from a hash of
    // the buffer, group size and kind): a wrong hit, or a full table answering with a
    // stale slot, would change the sum. Twins differ from a collective in one field the
    // price reads (kind, buffer, spread over nodes, an all-to-all's network share), and a
    // renamed copy in another pass is the same collective.
    const cluster_spec cluster = standard_cluster(h100_sxm::spec, 64);
    const kernel_params k = default_kernel_params(cluster.gpu);
    std::mt19937_64 rng(20261207);
    const std::array<collective, 3> kinds{collective::all_reduce, collective::all_gather, collective::reduce_scatter};
    for (const int distinct : {1, 5, 16, 17, 40}) {
        std::vector<collective_op> ops;
        bool shares_differ = false;
        while (int(ops.size()) < distinct) {
            const int size = 2 << (rng() % 4);  // 2 to 16 ranks, on up to 4 nodes of 8
            collective_op c{"c", kinds[rng() % 3], bytes_of(double(1 + rng() % (64 << 20))), {size, std::min(size, 8)}};
            if (ops.size() % 5 == 4) {
                // An all-to-all, and its twin that sends another share over the network
                // (DeepEP's node forwarding).
                c.kind = collective::all_to_all;
                c.group = {16, 8};  // two nodes: the share crosses the network
                c.network_share = 0.25;
                ops.push_back(c);
                c.network_share = 0.5;
            }
            ops.push_back(c);
            if (int(ops.size()) + 3 < distinct && ops.size() % 3 == 0) {
                collective_op twin = c;
                twin.kind = c.kind == collective::all_reduce ? collective::all_gather : collective::all_reduce;
                ops.push_back(twin);
                twin = c;
                twin.size = c.size + bytes_of(1.0);
                ops.push_back(twin);
                twin = c;
                twin.group.per_node = std::max(1, c.group.per_node / 2);
                if (twin.group.per_node != c.group.per_node) ops.push_back(twin);
            }
        }
        stage_pricer pricer(cluster.gpu, k, &cluster);
        double expected = 0;
        for (int i = 0; i < 4 * distinct; ++i) {
            collective_op c = ops[std::size_t(rng() % ops.size())];
            if (i % 2) {
                c.name = "renamed";
                c.phase = op_phase::backward;
            }
            pricer(stage_op<collective_op>{c, 2, 1, step_part::tensor_parallel});
            expected += 3 * collective_time(c, cluster).value();
        }
        for (const collective_op& c : ops)
            if (c.kind == collective::all_to_all && c.network_share == 0.5) {
                collective_op quarter = c;
                quarter.network_share = 0.25;
                shares_differ |= collective_time(c, cluster) != collective_time(quarter, cluster);
            }
        if (distinct >= 16) CHECK(shares_differ);  // the twins' prices tell them apart
        INFO(distinct << " distinct collectives");
        CHECK(pricer.result().tensor_parallel_comm.value() == Approx(expected).epsilon(1e-12));
    }
}

TEST_CASE("a pass takes the larger of the GPU's time and the host's issue time", "[step]") {
    // Host costs in bare ops (spec/framework.hpp defaults): a forward GEMM 1.4 · 2.4, a forward
    // kernel 1.4, a module call 2.76, a backward launch 0.5, an autograd node 3.9.
    const eager_host_costs c{};
    const auto& gpu = rtx_3090_ti::spec;
    stage_pricer pricer(gpu, default_kernel_params(gpu), nullptr, c, microseconds_of(5.0));
    const gemm_op tiny{"tiny", {64, 64, 64, 1, dtype::fp16}};
    pricer(stage_op<gemm_op>{tiny, 1, 0, step_part::forward});
    pricer(stage_op<gemm_op>{{"tiny", dgrad_of(tiny.shape), op_phase::backward_data}, 2, 0, step_part::backward});
    pricer(stage_op<memory_op>{{"gelu_new", bytes_of(1024), op_phase::forward, op_region::other, 8}, 1, 0,
                               step_part::forward});
    pricer(stage_op<host_op>{{"modules", host_call::module, 2}, 1, 0, step_part::forward});
    pricer(stage_op<host_op>{{"nodes", host_call::backward_node, 10, op_phase::backward}, 1, 0, step_part::backward});
    const micro_batch_times t = pricer.result();
    // Forward: (1.4 · 2.4 + 8 · 1.4 + 2 · 2.76) · 5 µs = 100.4 µs; backward: (2 · 0.5 + 10 · 3.9) · 5 µs = 200 µs.
    CHECK(t.host_forward.value() == Approx(100.4e-6));
    CHECK(t.host_backward.value() == Approx(200e-6));
    // Kernels this small take the GPU a few µs: the host bounds both passes.
    CHECK(t.gpu_forward < t.host_forward);
    CHECK(t.forward == t.host_forward);
    CHECK(t.backward == t.host_backward);
    CHECK(t.host_bound());
}

TEST_CASE("the framework's Python calls cost their bare ops; graphed layers launch nothing", "[step]") {
    const eager_host_costs c{};
    const auto& gpu = a100_sxm_80gb::spec;
    const gemm_op tiny{"tiny", {64, 64, 64, 1, dtype::bf16}};
    const auto feed = [&](stage_pricer& pricer) {
        pricer.section(stage_section::layer);
        pricer(stage_op<gemm_op>{tiny, 1, 0, step_part::forward});
        pricer(stage_op<host_op>{{"functions", host_call::function, 2}, 1, 0, step_part::forward});
        pricer(stage_op<host_op>{{"te", host_call::library_module, 1}, 1, 0, step_part::forward});
        pricer(stage_op<host_op>{{"forks", host_call::rng_state, 4}, 1, 0, step_part::forward});
        pricer(stage_op<host_op>{{"tp", host_call::collective, 2}, 1, 0, step_part::forward});
        pricer(stage_op<host_op>{{"back", host_call::function_backward, 2, op_phase::backward}, 1, 0,
                                 step_part::backward});
        pricer(stage_op<host_op>{{"te", host_call::library_module_backward, 1, op_phase::backward}, 1, 0,
                                 step_part::backward});
        pricer(stage_op<host_op>{{"hooks", host_call::gradient_hook, 3, op_phase::backward}, 1, 0,
                                 step_part::backward});
        pricer(stage_op<host_op>{{"replay", host_call::graph_launch, 1, op_phase::backward}, 1, 0,
                                 step_part::backward});
    };
    stage_pricer eager(gpu, default_kernel_params(gpu), nullptr, c, microseconds_of(5.0));
    feed(eager);
    const micro_batch_times t = eager.result();
    // Forward: GEMM 1.4 · 2.4 + 2 Functions · 3.5 + TE 6.83 + 4 states · 1 + 2 collectives · 1.4
    // = 23.99 bare ops; backward: 2 · 3.5 + 51.7 + 3 hooks · 1.4 + 1 launch · 1.4 = 64.3.
    CHECK(t.host_forward.value() == Approx(23.99 * 5e-6));
    CHECK(t.host_backward.value() == Approx(64.3 * 5e-6));
    // Graphed: the GEMM's launch is in the graph; the calls the workload lists stay.
    stage_pricer graphed(gpu, default_kernel_params(gpu), nullptr, c, microseconds_of(5.0));
    graphed.graph_layers();
    feed(graphed);
    CHECK(graphed.result().host_forward.value() == Approx((23.99 - 3.36) * 5e-6));
    CHECK(graphed.result().gpu_forward == t.gpu_forward);
}

TEST_CASE("tensor-parallel collectives run in the GPU's idle time when the host bounds a pass", "[step]") {
    const auto& gpu = a100_sxm_80gb::spec;
    const cluster_spec cluster = standard_cluster(gpu, 8);
    const collective_op all_reduce{"ar", collective::all_reduce, megabytes_of(4.0), {8, 8}};
    const seconds one = collective_time(all_reduce, cluster);
    const auto priced = [&](double host_functions) {
        stage_pricer pricer(gpu, default_kernel_params(gpu), &cluster, eager_host_costs{}, microseconds_of(5.0));
        pricer(stage_op<gemm_op>{{"tiny", {64, 64, 64, 1, dtype::bf16}}, 1, 0, step_part::forward});
        pricer(stage_op<host_op>{{"f", host_call::function, host_functions}, 1, 0, step_part::forward});
        pricer(stage_op<collective_op>{all_reduce, 2, 0, step_part::tensor_parallel});
        return pricer.result();
    };
    // A host with little to issue: the two all-reduces are exposed after the pass, less
    // the GPU's short wait for the host's few µs.
    const micro_batch_times fast = priced(0);
    const seconds slack = fast.host_forward - fast.gpu_forward;
    CHECK(fast.tensor_parallel_comm.value() == Approx((2.0 * one - slack).value()));
    // A host 1000 Functions long (17.5 ms) covers them: the pass takes the host's time.
    const micro_batch_times slow = priced(1000);
    CHECK(slow.forward == slow.host_forward);
    CHECK(slow.tensor_parallel_comm.value() == 0);
    CHECK(slow.tensor_parallel_hidden.value() == Approx(2 * one.value()));
}

TEST_CASE("CUDA graphs refuse what cannot be captured, by name", "[step]") {
    training_setup s;
    s.model = llama2_7b::config;
    s.framework = megatron_core_profile;
    s.framework.cuda_graphs = true;
    s.cluster = standard_cluster(h100_sxm::spec, 8);
    s.seq = 4096;
    CHECK_NOTHROW(validate(s));
    s.layout.recompute = recompute_mode::full;
    CHECK_THROWS_WITH(validate(s), Catch::Contains("cuda_graphs = on: cannot be used with full recompute"));
    s.layout.recompute = recompute_mode::selective;
    s.layout.zero = 3;
    CHECK_THROWS_WITH(validate(s), Catch::Contains("cuda_graphs = on: cannot be used with ZeRO-3"));
    // Graphed, the host's share of a small model's step falls to a few calls per layer.
    s.layout.zero = 1;
    s.model.layers = 4;
    s.model.hidden = 1024;
    s.model.heads = 8;
    s.model.kv_heads = 8;
    s.model.ffn_hidden = 2816;
    s.seq = 1024;
    const step_report graphed = predict(s);
    s.framework.cuda_graphs = false;
    const step_report eager = predict(s);
    CHECK(graphed.micro_batch.host_compute() < eager.micro_batch.host_compute() / 10.0);
    CHECK(eager.micro_batch.host_bound());
    CHECK_FALSE(graphed.micro_batch.host_bound());
}

TEST_CASE("small batches of a small model are host-bound in eager mode, large ones are not", "[step]") {
    training_setup s;
    s.cluster.gpu = rtx_3090_ti::spec;
    s.model = bert_large::config;
    s.framework = pytorch_eager_profile;
    s.precision = recipe(precision_kind::fp16);
    s.optimizer = optimizer_kind::adamw_fused;
    s.seq = 128;
    s.layout.micro_batch = 1;
    const step_report small = predict(s);
    CHECK(small.micro_batch.host_bound());
    CHECK(small.bottleneck == bottleneck_kind::host);
    s.layout.micro_batch = 64;
    const step_report large = predict(s);
    CHECK_FALSE(large.micro_batch.host_bound());
    CHECK(large.bottleneck != bottleneck_kind::host);
    // A slower host (a bare op of 10 µs; the V100 system of the micro-benchmarks has 11)
    // stretches the host-bound step in proportion.
    s.layout.micro_batch = 1;
    s.cluster.host.eager_op_time = microseconds_of(10.0);
    const step_report slow = predict(s);
    CHECK(slow.micro_batch.host_forward.value() == Approx(2 * small.micro_batch.host_forward.value()));
}

TEST_CASE("a GPU that holds a clock above its boost clock can exceed 100 % HFU, up to their ratio", "[step]") {
    // The RTX 3090 Ti's datasheet peaks are at its 1.86 GHz boost clock; it holds about
    // 2 GHz under load, so a large model's GEMMs run above the datasheet peak.
    training_setup s;
    s.cluster = standard_cluster(rtx_3090_ti::spec, 1);
    s.model = megatron_1t::config;
    s.seq = 2048;
    s.precision = recipe(precision_kind::fp16_pure);
    s.framework = megatron_core_profile;
    s.framework.precisions.insert(precision_kind::fp16_pure);  // the clock is tested, not the software
    s.layout.micro_batch = 5;
    s.layout.recompute = recompute_mode::full;
    s.layout.dp_overlap = dp_overlap_mode::off;
    const step_report r = predict(s);
    CHECK(r.hfu_ceiling == Approx(2000.0 / 1860));
    CHECK(r.hfu > 1.0);
    CHECK(r.hfu <= r.hfu_ceiling);
    CHECK(postcondition_violation(r).empty());

    // A GPU run at its boost clock keeps the ceiling at 1.
    s.cluster = standard_cluster(a100_sxm_80gb::spec, 1);
    s.model = gpt2_xl::config;
    s.seq = 1024;
    s.layout.micro_batch = 1;
    CHECK(predict(s).hfu_ceiling == 1.0);
}

TEST_CASE("autocast and .half() recipes predict finite reports on an RTX 3090 Ti", "[step][amp]") {
    const gpu_spec& gpu = rtx_3090_ti::spec;
    for (const transformer_config* model :
         {&gpt2::config, &gpt2_medium::config, &bert_base::config, &bert_large::config}) {
        const int seq = model->max_seq;  // 1024 for GPT-2, 512 for BERT
        const auto run = [&](precision_kind p) {
            const step_report r = predict(single_gpu(gpu, *model, p, 4, seq));
            INFO(model->name << " " << to_string(p));
            CHECK(postcondition_violation(r).empty());
            CHECK(std::isfinite(r.step_time.value()));
            CHECK(r.step_time.value() > 0);
            CHECK(std::isfinite(r.memory.total().value()));
            CHECK(r.mfu > 0);
            CHECK(r.mfu <= 1);
            return r;
        };
        const step_report fp16_amp = run(precision_kind::fp16_amp);
        const step_report bf16_amp = run(precision_kind::bf16_amp);
        const step_report pure = run(precision_kind::fp16_pure);
        const step_report megatron = run(precision_kind::fp16);
        INFO(model->name);
        // The same GEMMs at the same 16-bit rate: autocast adds casts, fp32 elementwise
        // traffic and the GradScaler's pass, so it is slower than 16-bit weights with a
        // master copy; .half() drops the master traffic and is never slower (as fast where
        // the per-tensor optimizer loop is bound by the host's launches, not its bytes).
        CHECK(fp16_amp.step_time > megatron.step_time);
        CHECK(pure.step_time <= megatron.step_time);
        // bf16-amp differs from fp16-amp only by the GradScaler's pass (same peak here).
        CHECK(bf16_amp.step_time < fp16_amp.step_time);
        // Memory: the same 16 B/param of static state as Megatron's fp16 (no fp32 main
        // grads in the eager profile), plus the 16-bit copies and fp32 activations.
        CHECK(fp16_amp.memory.static_state() == megatron.memory.static_state());
        CHECK(fp16_amp.memory.weight_copies.value() > 0);
        CHECK(fp16_amp.memory.activations > megatron.memory.activations);
        CHECK(pure.memory.total() < megatron.memory.total());
        CHECK(pure.memory.activations == megatron.memory.activations);
    }
    // bf16-amp needs bf16 tensor cores.
    CHECK_THROWS_WITH(predict(single_gpu(v100_sxm2_32gb::spec, gpt2::config, precision_kind::bf16_amp, 4, 1024)),
                      "precision = bf16-amp: not supported by v100-sxm2-32gb (no bf16 tensor cores)");
    CHECK_NOTHROW(predict(single_gpu(v100_sxm2_32gb::spec, gpt2::config, precision_kind::fp16_amp, 4, 1024)));
}

TEST_CASE("a framework runs only what its software can, and the message says who can", "[step][framework]") {
    training_setup s = single_gpu(h100_sxm::spec, llama2_7b::config, precision_kind::bf16, 1, 2048);
    s.cluster.gpus_per_node = 8;
    const auto refused = [&](parallel_layout l, const framework_profile& fw) {
        training_setup t = s;
        t.layout = l;
        t.framework = fw;
        try {
            validate(t);
        } catch (const trainperf::invalid_argument& e) {
            return std::string(e.what());
        }
        return std::string();
    };
    // The Hugging Face Trainer: data parallel, FSDP's ZeRO-2 and ZeRO-3, hybrid sharding.
    CHECK(refused({.dp = 8, .zero = 3}, pytorch_eager_profile).empty());
    CHECK(refused({.dp = 8, .zero = 2, .shard_group = 4}, pytorch_eager_profile).empty());
    CHECK_THAT(refused({.dp = 4, .tp = 2}, pytorch_eager_profile),
               Catch::StartsWith("tp = 2: framework pytorch-eager (the Hugging Face Trainer") &&
                   Catch::Contains("has no tensor parallelism; megatron, megatron-core, torchtitan, "
                                  "megatron-deepspeed offer it"));
    CHECK_THAT(refused({.dp = 8, .zero = 1}, pytorch_eager_profile), Catch::StartsWith("zero = 1") &&
                                                                         Catch::Contains("has no ZeRO stage 1"));
    CHECK_THAT(refused({.dp = 4, .pp = 2}, pytorch_eager_profile), Catch::StartsWith("pp = 2"));
    CHECK_THAT(refused({.dp = 8, .zero = 1, .offload = offload_mode::optimizer}, pytorch_eager_profile),
               Catch::StartsWith("zero = 1"));
    CHECK_THAT(refused({.dp = 8, .zero = 2, .offload = offload_mode::optimizer}, pytorch_eager_profile),
               Catch::StartsWith("offload = optimizer") &&
                   Catch::Contains("deepspeed, megatron-core, megatron-deepspeed offer it"));
    // DeepSpeed under the Trainer: every ZeRO stage and the optimizer on the host, no model parallelism.
    CHECK(refused({.dp = 8, .zero = 3, .offload = offload_mode::optimizer}, deepspeed_profile).empty());
    CHECK_THAT(refused({.dp = 4, .pp = 2}, deepspeed_profile), Catch::StartsWith("pp = 2: framework deepspeed"));
    CHECK_THAT(refused({.dp = 4, .tp = 2, .sp = true}, deepspeed_profile), Catch::StartsWith("tp = 2"));
    // Megatron-LM 2022: tp, sp, pp, interleaving, the distributed optimizer; no cp, ZeRO-2/3 or offload.
    CHECK(refused({.dp = 1, .tp = 2, .pp = 4, .interleave = 2, .sp = true, .grad_accum = 4}, megatron_profile).empty());
    CHECK_THAT(refused({.dp = 4, .cp = 2}, megatron_profile),
               Catch::StartsWith("cp = 2") && Catch::Contains("megatron-core, torchtitan offer it"));
    CHECK_THAT(refused({.dp = 8, .zero = 3}, megatron_profile), Catch::StartsWith("zero = 3"));
    CHECK_THAT(refused({.dp = 2, .pp = 4, .first_stage_layers = 5}, megatron_profile),
               Catch::StartsWith("first_stage_layers = 5") && Catch::Contains("evenly"));
    // Megatron-Core: all of those and uneven splits; no zero-bubble schedule in any catalog profile.
    CHECK(refused({.dp = 2, .tp = 2, .cp = 2, .sp = true, .zero = 3}, megatron_core_profile).empty());
    CHECK(refused({.dp = 2, .pp = 4, .first_stage_layers = 5}, megatron_core_profile).empty());
    CHECK_THAT(refused({.dp = 2, .pp = 4, .schedule = pipeline_schedule::zero_bubble_h1}, megatron_core_profile),
               Catch::StartsWith("schedule = zb-h1") && Catch::EndsWith("has no zero-bubble schedule"));
    // Sequence parallelism without tp changes nothing, and is no framework's business.
    CHECK(refused({.dp = 8, .sp = true, .zero = 3}, pytorch_eager_profile).empty());
    // What no framework runs is refused as such first (LoRA with optimizer offload).
    training_setup lora = s;
    lora.finetune = {.mode = finetune_mode::lora};
    lora.framework = pytorch_eager_profile;
    lora.layout = {.dp = 8, .zero = 2, .offload = offload_mode::optimizer};
    CHECK_THROWS_WITH(validate(lora), Catch::Contains("is not modelled with lora or qlora"));
    // A profile of one's own runs what it says.
    framework_profile own = pytorch_eager_profile;
    own.tensor_parallel = true;
    CHECK(refused({.dp = 4, .tp = 2}, own).empty());
}

TEST_CASE("a setup is checked once: only a check makes a checked setup, and it predicts what the setup does",
          "[step][checked]") {
    static_assert(!std::is_convertible_v<training_setup, checked_setup>, "a checked_setup is made explicitly");
    static_assert(std::is_convertible_v<const training_setup&, checked_view>, "predict(setup) checks it");
    static_assert(std::is_convertible_v<const checked_setup&, checked_view>, "a checked setup is a view");
    training_setup s;
    s.model = llama2_7b::config;
    s.framework = megatron_core_profile;
    s.cluster = standard_cluster(h100_sxm::spec, 8);
    s.seq = 4096;
    s.layout = {.dp = 2, .tp = 4, .sp = true, .zero = 1, .micro_batch = 2, .grad_accum = 4};
    const checked_setup checked(s);
    const step_report by_setup = predict(s), by_checked = predict(checked);
    CHECK(by_checked.step_time.value() == by_setup.step_time.value());
    CHECK(by_checked.memory.total().value() == by_setup.memory.total().value());
    CHECK(memory_of(checked).breakdown.total().value() == memory_of(s).breakdown.total().value());
    CHECK(max_micro_batch(checked) == max_micro_batch(s));

    // with_layout checks the new layout against the rest of the setup, and predicts what
    // the setup with that layout predicts.
    parallel_layout other = s.layout;
    other.tp = 2;
    other.dp = 4;
    training_setup t = s;
    t.layout = other;
    CHECK(predict(checked.with_layout(other)).step_time.value() == predict(t).step_time.value());
    other.tp = 3;  // 32 heads
    CHECK_THROWS_WITH(checked.with_layout(other), Catch::Contains("tp = 3: must divide the number of attention heads"));
    other.tp = 16;  // 8 GPUs per node: tensor parallelism across two, priced, not refused
    other.dp = 1;
    CHECK_NOTHROW(checked.with_layout(other));
    other = s.layout;
    other.offload = offload_mode::optimizer;  // Megatron-Core offloads, but not with CUDA graphs
    s.framework.cuda_graphs = true;
    CHECK_THROWS_WITH(checked_setup(s).with_layout(other), Catch::Contains("cuda_graphs = on"));

    // A bad setup is refused by name wherever it enters, the op lists included (they
    // used to take it unchecked).
    s.framework.cuda_graphs = false;
    s.layout.tp = 0;
    CHECK_THROWS_WITH(checked_setup(s), Catch::Contains("tp = 0"));
    CHECK_THROWS_WITH(micro_batch_workload(s), Catch::Contains("tp = 0"));
    CHECK_THROWS_WITH(step_workload(s), Catch::Contains("tp = 0"));
    CHECK_THROWS_WITH(flop_counts_of(s), Catch::Contains("tp = 0"));
    s.layout.tp = 4;
    s.seq = -1;
    CHECK_THROWS_WITH(model_state_of(s), Catch::Contains("seq = -1"));
}
