// Fused attention kernels (spec/attention_kernels.hpp, workload/ops.hpp attention_op,
// cost/kernel_model.hpp attention_time, workload/layer.hpp attention_core_ops): which kernel runs
// where, the efficiency model on hand-computed cases, the published FlashAttention
// figures it was fitted to, and the workload that uses it. Expected values are worked
// out by hand in the comments.
#include <catch2/catch.hpp>

#include <trainperf/spec/attention_kernels.hpp>
#include <trainperf/spec/gpu_catalog.hpp>
#include <trainperf/cost/kernel_model.hpp>
#include <trainperf/cost/memory.hpp>
#include <trainperf/spec/model_catalog.hpp>
#include <trainperf/cost/step.hpp>
#include <trainperf/spec/system.hpp>
#include <trainperf/workload/step_ops.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

using namespace trainperf;

namespace {

attention_op problem(double batch_heads, double seq, double head_dim, bool causal, op_phase phase,
                     attention_kernel kernel = attention_kernel::flash2) {
    return {.name = "flash_attention", .batch = batch_heads, .seq_q = seq, .seq_kv = seq, .head_dim = head_dim,
            .causal = causal, .math = dtype::fp16, .phase = phase, .kernel = kernel};
}

// The data rows of a benchmark file of tests/data (comment lines and the header, which is
// checked, left out), each split at its commas.
std::vector<std::vector<std::string>> benchmark_rows(const std::string& file, const std::string& header) {
    std::ifstream in(std::filesystem::path(TRAINPERF_TEST_DATA_DIR) / file);
    REQUIRE(in);
    std::vector<std::vector<std::string>> rows;
    std::string line;
    bool first = true;
    while (std::getline(in, line)) {
        if (line.empty() || line[0] == '#') continue;
        if (first) {
            CHECK(line == header);
            first = false;
            continue;
        }
        std::stringstream row(line);
        std::vector<std::string> cells;
        for (std::string cell; std::getline(row, cell, ',');) cells.push_back(cell);
        rows.push_back(cells);
    }
    return rows;
}

// Relative errors of one set of figures: their mean and the worst.
struct tally {
    double sum = 0, worst = 0;
    int n = 0;
    void add(double error) {
        sum += error;
        worst = std::max(worst, error);
        ++n;
    }
    double mean() const { return sum / n; }
};

}  // namespace

TEST_CASE("the kernel that runs depends on the software and the compute capability") {
    CHECK(attention_kernel_on(attention_kernel::flash3, 90) == attention_kernel::flash3);
    // Blackwell: no FlashAttention-3; cuDNN's Blackwell kernel, which Transformer Engine prefers.
    CHECK(attention_kernel_on(attention_kernel::flash3, 100) == attention_kernel::flash4);
    CHECK(attention_kernel_on(attention_kernel::flash3, 103) == attention_kernel::flash4);
    CHECK(attention_kernel_on(attention_kernel::flash4, 90) == attention_kernel::flash3);
    CHECK(attention_kernel_on(attention_kernel::flash4, 80) == attention_kernel::flash2);
    CHECK(attention_kernel_on(attention_kernel::flash2, 100) == attention_kernel::flash2);
    CHECK(attention_kernel_on(attention_kernel::flash3, 80) == attention_kernel::flash2);
    CHECK(attention_kernel_on(attention_kernel::flash2, 90) == attention_kernel::flash2);
    CHECK(attention_kernel_on(attention_kernel::flash2, 75) == attention_kernel::memory_efficient);
    CHECK(attention_kernel_on(attention_kernel::flash3, 70) == attention_kernel::memory_efficient);
    // FlashAttention-2 on Hopper does not use WGMMA: a smaller share of the peak.
    CHECK(attention_kernel_defaults(attention_kernel::flash2, 90).forward_efficiency <
          attention_kernel_defaults(attention_kernel::flash2, 80).forward_efficiency);
    CHECK(parse_enum<attention_kernel>("flash_kernel", "flash3") == attention_kernel::flash3);
    CHECK_THROWS_WITH(parse_enum<attention_kernel>("flash_kernel", "flash9"), Catch::Contains("flash_kernel"));
}

TEST_CASE("FLOPs and bytes of the fused kernel follow the FlashAttention benchmarks' count") {
    // 256 problems (16 samples x 16 heads), s = 1024, d = 128:
    // forward 4*256*1024^2*128 = 137438953472; causal half; backward 2.5x.
    const auto forward = problem(256, 1024, 128, false, op_phase::forward);
    CHECK(attention_flops(forward).value() == 137438953472.0);
    CHECK(attention_flops(problem(256, 1024, 128, true, op_phase::forward)).value() == 68719476736.0);
    CHECK(attention_flops(problem(256, 1024, 128, false, op_phase::backward)).value() == 343597383680.0);
    // Bytes forward: Q, K, V read, O written, 256*1024*128*2 B = 67108864 each, and the
    // fp32 log-sum-exp 256*1024*4 = 1048576: 4*67108864 + 1048576 = 269484032.
    CHECK(attention_bytes(forward).value() == 269484032.0);
    // Backward: 8 tensors (Q, K, V, O, dO read; dQ, dK, dV written) and 3 row vectors.
    CHECK(attention_bytes(problem(256, 1024, 128, false, op_phase::backward)).value() ==
          8 * 67108864.0 + 3 * 1048576.0);
    CHECK_THROWS_WITH(validate(problem(256, 1024, 128, false, op_phase::backward_data)),
                      Catch::Contains("attention.phase"));
    CHECK_THROWS_WITH(validate(problem(0, 1024, 128, false, op_phase::forward)), Catch::Contains("attention.batch"));
}

TEST_CASE("the efficiency model on A100, FlashAttention-2, by hand") {
    const gpu_spec& a100 = a100_sxm_80gb::spec;  // 108 SMs, 312 TFLOP/s fp16, 4 us per kernel (Ampere prior)
    const kernel_params k = default_kernel_params(a100);
    REQUIRE(a100.sm_count == 108);
    REQUIRE(k.launch_overhead.value() == Approx(4e-6));
    // Thread blocks 256 * 1024/128 = 2048 in ceil(2048/108) = 19 waves: occupancy 2048/2052.
    // Forward, no mask: 0.841 * 128/(128+19) * 1024/(1024+196) * 2048/2052 = 0.613453;
    // 137438953472 / (312e12 * 0.613453) + 4 us = 722.08 us.
    CHECK(attention_time(a100, problem(256, 1024, 128, false, op_phase::forward), k).value() ==
          Approx(722.08e-6).epsilon(1e-4));
    // Causal: half the FLOPs, g = 1024/(1024 + 128 + 2*196) = 0.663212: efficiency
    // 0.484723; 68719476736 / (312e12 * 0.484723) + 4 us = 458.39 us.
    CHECK(attention_time(a100, problem(256, 1024, 128, true, op_phase::forward), k).value() ==
          Approx(458.39e-6).epsilon(1e-4));
    // Backward: 2.5x the FLOPs at 0.704: efficiency 0.513521; 343597383680 /
    // (312e12 * 0.513521) + 4 us = 2148.56 us.
    CHECK(attention_time(a100, problem(256, 1024, 128, false, op_phase::backward), k).value() ==
          Approx(2148.56e-6).epsilon(1e-4));
    // Few problems leave SMs idle: 4 problems of 1024 queries = 32 blocks on 108 SMs,
    // occupancy 32/108, so the same work per problem takes 108/32 x longer than at full
    // occupancy, less the launch.
    const double few = attention_time(a100, problem(4, 1024, 128, false, op_phase::forward), k).value() - 4e-6;
    const double full_rate_per_problem = (722.08e-6 - 4e-6) * (2048.0 / 2052.0) / 256;
    CHECK(few == Approx(4 * full_rate_per_problem * 108 / 32).epsilon(1e-3));
}

TEST_CASE("the model against the published FlashAttention figures it was fitted to") {
    std::map<std::string, tally> by_set;
    for (const auto& cells : benchmark_rows("flash_attention_benchmarks.csv", "gpu,kernel,pass,causal,head_dim,seq,tflops")) {
        REQUIRE(cells.size() == 7);
        const std::string &gpu = cells[0], &kernel = cells[1], &pass = cells[2], &causal = cells[3],
                          &head_dim = cells[4], &seq = cells[5], &tflops = cells[6];
        const gpu_spec& g = lookup_gpu(gpu);
        const kernel_params k = default_kernel_params(g);
        const double d = std::stod(head_dim), s = std::stod(seq);
        // The figures' setting: hidden 2048, 16384 tokens per batch.
        const double batch_heads = (16384 / s) * (2048 / d);
        const bool masked = causal == "1";
        const auto kind = parse_enum<attention_kernel>("kernel", kernel);
        const auto forward = problem(batch_heads, s, d, masked, op_phase::forward, kind);
        const auto backward = problem(batch_heads, s, d, masked, op_phase::backward, kind);
        double time = attention_time(g, forward, k).value();
        double work = attention_flops(forward).value();
        if (pass == "forward+backward") {
            time += attention_time(g, backward, k).value();
            work += attention_flops(backward).value();
        }
        const double error = std::abs(work / time / 1e12 / std::stod(tflops) - 1);
        by_set[gpu + ' ' + kernel + ' ' + pass].add(error);
    }
    REQUIRE(by_set.size() == 4);
    for (const auto& [name, t] : by_set) {
        INFO(name << ": mean " << t.mean() << ", max " << t.worst << " over " << t.n);
        // As the engine prices them (launch and memory roofline included): A100
        // FlashAttention-2 fwd+bwd 1.7 % mean, 3.4 % max; H100 FlashAttention-2 fwd+bwd
        // 3.3 % / 7.4 %, forward 5.7 % / 17 %; FlashAttention-3 forward 5.8 % / 16 %
        // (512 tokens, causal). Bands: the mean within 10 %, every point within 20 %.
        CHECK(t.mean() < 0.10);
        CHECK(t.worst < 0.20);
    }
    const tally& a100 = by_set["a100-sxm-80gb flash2 forward+backward"];
    CHECK(a100.mean() < 0.032);
}

TEST_CASE("the model against NVIDIA's published Blackwell attention figures it was fitted to") {
    std::map<std::string, tally> by_set;
    for (const auto& f :
         benchmark_rows("blackwell_attention_benchmarks.csv", "gpu,kernel,pass,causal,head_dim,seq,batch_heads,tflops")) {
        REQUIRE(f.size() == 8);
        const gpu_spec& g = lookup_gpu(f[0]);
        const auto kind = parse_enum<attention_kernel>("kernel", f[1]);
        // The kernel that runs is the one named (software that prefers it, on this GPU).
        CHECK(attention_kernel_on(kind, g.compute_capability) == kind);
        const auto op = problem(std::stod(f[6]), std::stod(f[5]), std::stod(f[4]), f[3] == "1",
                                f[2] == "forward" ? op_phase::forward : op_phase::backward, kind);
        const double rate = attention_flops(op).value() / attention_time(g, op, default_kernel_params(g)).value();
        const double error = std::abs(rate / 1e12 / std::stod(f[7]) - 1);
        by_set[f[0] + ' ' + f[1] + ' ' + f[2]].add(error);
    }
    REQUIRE(by_set.size() == 6);
    for (const auto& [name, t] : by_set) {
        INFO(name << ": mean " << t.mean() << ", max " << t.worst << " over " << t.n);
        // Fitted (spec/attention_kernels.hpp): cuDNN on GB200 3.9 % mean, 11 % max; GB300
        // 3.3 % / 10 %; FlashAttention-2 on B200 1.0 % / 2.1 %, as the fit computes them.
        CHECK(t.mean() < 0.06);
        CHECK(t.worst < 0.15);
    }
    // FlashAttention-2 on B200 runs at about a quarter of cuDNN's Blackwell kernel's rate.
    const auto causal_16k = [](attention_kernel k) { return problem(128, 16384, 128, true, op_phase::forward, k); };
    const gpu_spec& b200_gpu = lookup_gpu("b200");
    CHECK(attention_time(b200_gpu, causal_16k(attention_kernel::flash2), default_kernel_params(b200_gpu)) >
          3.0 * attention_time(b200_gpu, causal_16k(attention_kernel::flash4), default_kernel_params(b200_gpu)));
}

TEST_CASE("with FlashAttention the stage runs one fused kernel instead of the attention-core GEMMs") {
    training_setup s;
    s.cluster = build_cluster({.gpu = h100_sxm::spec, .gpus = 1, .gpus_per_node = 1});
    s.model = lookup_model("llama3-8b");
    s.precision = recipe(precision_kind::bf16);
    s.layout = {.micro_batch = 2, .recompute = recompute_mode::selective};
    s.seq = 4096;
    s.framework = megatron_profile;
    s.framework.flash_attention = true;
    s.framework.flash_kernel = attention_kernel::flash3;
    const stage_workload w = micro_batch_workload(s);
    for (const auto& g : w.gemms) CHECK(g.op.region != op_region::attention_core);
    for (const auto& m : w.memory) CHECK(m.op.region != op_region::attention_core);
    REQUIRE(w.attention.size() == 2);
    const auto& forward = w.attention[0];
    // b*a/t = 2*32 problems of 4096 queries and keys, head size 128, causal; 32 layers,
    // each recomputed once under selective recompute.
    CHECK(forward.op.batch == 64);
    CHECK(forward.op.seq_q == 4096);
    CHECK(forward.op.head_dim == 128);
    CHECK(forward.op.causal);
    CHECK(forward.count == 32);
    CHECK(forward.recomputed == 32);
    CHECK(w.attention[1].op.phase == op_phase::backward);
    CHECK(w.attention[1].recomputed == 0);

    // FlashAttention-3 on Hopper is faster than FlashAttention-2 there, and both beat
    // the unfused core (cuBLAS GEMMs and a fused softmax over s^2).
    const double fa3 = price_micro_batch(s).compute().value();
    s.framework.flash_kernel = attention_kernel::flash2;
    const double fa2 = price_micro_batch(s).compute().value();
    s.framework.flash_attention = false;
    const double unfused = price_micro_batch(s).compute().value();
    CHECK(fa3 < fa2);
    CHECK(fa2 < unfused);
}
