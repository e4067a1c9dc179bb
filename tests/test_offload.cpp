// Optimizer offload as DeepSpeed ZeRO-Offload runs it (workload/step_ops.hpp
// offloaded_optimizer_workload, cost/step.hpp, cost/memory.hpp) and the host it runs on
// (spec/host.hpp, io/system_json.hpp). Expected values are worked out by hand in the comments.
#include <catch2/catch.hpp>

#include <trainperf/spec/gpu_catalog.hpp>
#include <trainperf/spec/host.hpp>
#include <trainperf/io/system_json.hpp>
#include <trainperf/cost/memory.hpp>
#include <trainperf/spec/model_catalog.hpp>
#include <trainperf/cost/step.hpp>
#include <trainperf/spec/system.hpp>
#include <trainperf/workload/step_ops.hpp>

#include <cmath>
#include <filesystem>
#include <functional>
#include <limits>
#include <string>

using namespace trainperf;

namespace {

// llama2-7b: 6,738,415,616 parameters; its largest tensor is the 32000 × 4096 embedding.
constexpr double P = 6738415616.0;

// llama2-7b in bf16 with AdamW under DeepSpeed (overlap_comm on), ZeRO-Offload, on
// A100 80GB: PCIe Gen4 x16 host link, 31.5 GB/s × 0.8 = 25.2 GB/s achievable, 10 µs.
training_setup offloaded(int dp = 1, int gpus_per_node = 1, int zero = 2, int grad_accum = 1) {
    training_setup s;
    s.cluster = build_cluster({.gpu = a100_sxm_80gb::spec, .gpus = dp, .gpus_per_node = gpus_per_node});
    s.model = llama2_7b::config;
    s.precision = recipe(precision_kind::bf16);
    s.optimizer = optimizer_kind::adamw;
    s.layout = {.dp = dp, .zero = zero, .offload = offload_mode::optimizer, .micro_batch = 1,
                .grad_accum = grad_accum};
    s.seq = 1024;
    s.framework = deepspeed_profile;
    return s;
}

constexpr double link_rate = 31.5e9 * 0.8;  // B/s
constexpr double latency = 10e-6;           // s

host_spec host(int cores, int lanes, double ghz, double dram_gb_per_s, double pageable = 0.25) {
    return {.cores = cores, .simd_lanes = lanes, .clock = megahertz(ghz * 1000), .memory_bandwidth = gb_per_second(dram_gb_per_s),
            .pageable_copy_efficiency = pageable};
}

std::string error_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const std::exception& e) {
        return e.what();
    }
    return {};
}

}  // namespace

TEST_CASE("the model's parameters and largest tensor used below", "[offload]") {
    const model_state state = model_state_of(optimizer_kind::adamw, llama2_7b::config);
    CHECK(state.parameters == P);
    CHECK(state.largest_tensor == 32000.0 * 4096);  // the embedding (and the untied head)
}

TEST_CASE("CPU-Adam: compute-bound on few narrow cores, DRAM-bound on many", "[offload]") {
    const training_setup s = offloaded();
    const optimizer_work w = optimizer_workload(s);
    REQUIRE(w.offloaded);
    REQUIRE(w.host_step.size() == 3);
    const host_compute_op& adam = w.host_step[1];
    CHECK(adam.name == "cpu_adam");
    CHECK(adam.elements == P);
    CHECK(adam.simd_instructions == 10);
    // Reads g (4 B), p, m, v (4 B each) and writes p, m, v: 28 B per parameter.
    CHECK(adam.moved.value() == Approx(28 * P));

    // 1 core, AVX2 (8 lanes), 1 GHz, 100 GB/s: instructions P/8 × 10 at 1e9 per second =
    // 1.25e-9·P s; DRAM 28·P / 100e9 = 0.28e-9·P s. Compute-bound.
    CHECK(host_compute_time(adam, share_per_gpu(host(1, 8, 1.0, 100), 1)).value() == Approx(1.25e-9 * P));
    // 64 cores, AVX-512 (16 lanes), 2 GHz: P/16 × 10 / (64 × 2e9) = 0.0049e-9·P s, below
    // the DRAM's 0.28e-9·P s. DRAM-bound.
    CHECK(host_compute_time(adam, share_per_gpu(host(64, 16, 2.0, 100), 1)).value() == Approx(0.28e-9 * P));

    // The other two passes: unscale and clip (read and write the fp32 gradients, 8 B,
    // one instruction per register) and the cast of the fp32 weights to bf16 (read 4,
    // write 2 B, one instruction).
    CHECK(w.host_step[0].name == "unscale_and_clip_gradients");
    CHECK(w.host_step[0].moved.value() == Approx(8 * P));
    CHECK(w.host_step[2].name == "fp32_to_16bit_weights");
    CHECK(w.host_step[2].moved.value() == Approx(6 * P));
    // On 64 AVX-512 cores at 2 GHz and 100 GB/s all three are DRAM-bound:
    // (8 + 28 + 6)·P / 100e9 = 0.42e-9·P s; the step adds the copy back (below) and
    // DeepSpeed's per-step overhead (5 ms).
    training_setup big = s;
    big.cluster.host = host(64, 16, 2.0, 100, 0.25);
    CHECK(host_step_time(w, big).value() == Approx(0.42e-9 * P));
    const step_report r = predict(big);
    // Copy back: 2·P bytes from pageable memory at 0.25 × 25.2 GB/s.
    const double up = latency + 2 * P / (0.25 * link_rate);
    CHECK(r.offload.host_step.value() == Approx(0.42e-9 * P));
    CHECK(r.offload.weights_up.value() == Approx(up));
    CHECK(r.time.optimizer.value() == Approx(0.42e-9 * P + up + 5e-3));
}

TEST_CASE("gradients go to the host during every micro-batch's backward", "[offload]") {
    // ZeRO-2, one GPU, 4 micro-batches per step.
    training_setup s = offloaded(1, 1, 2, 4);
    const optimizer_work w = optimizer_workload(s);
    REQUIRE(w.gradient_copies.size() == 3);
    // Before the boundary the bf16 partition goes down (2 B/param); from the second
    // micro-batch on it comes back to be accumulated on the GPU (2 B/param); at the
    // boundary the fp32 gradients go down (4 B/param).
    CHECK(w.gradient_copies[0].op.size.value() == 2 * P);
    CHECK(w.gradient_copies[0].op.direction == transfer_direction::to_host);
    CHECK(w.gradient_copies[0].when == offload_point::all_but_last_micro_batch);
    CHECK(w.gradient_copies[1].op.size.value() == 2 * P);
    CHECK(w.gradient_copies[1].op.direction == transfer_direction::to_device);
    CHECK(w.gradient_copies[1].when == offload_point::all_but_first_micro_batch);
    CHECK(w.gradient_copies[2].op.size.value() == 4 * P);
    CHECK(w.gradient_copies[2].when == offload_point::last_micro_batch);
    for (const auto& c : w.gradient_copies) CHECK_FALSE(c.op.pageable);  // pinned buffers

    const offload_copies c = price_gradient_copies(w, s);
    const double half = latency + 2 * P / link_rate;  // 10 µs + 2P / 25.2 GB/s
    const double full = latency + 4 * P / link_rate;
    CHECK(c.all_but_last.value() == Approx(half));
    CHECK(c.all_but_first.value() == Approx(half));
    CHECK(c.last.value() == Approx(full));
    // Per step: 3 micro-batches copy down, 3 bring back, the last copies fp32:
    // 3·half + 3·half + full.
    const double per_step = 6 * half + full;
    CHECK(c.per_step(4).value() == Approx(per_step));

    // Not overlapped: all of it is exposed (one GPU: no other communication).
    s.layout.dp_overlap = dp_overlap_mode::off;
    const step_report off = predict(s);
    CHECK(off.offload.gradient_copies.value() == Approx(per_step));
    CHECK(off.time.communication.value() == Approx(per_step));

    // Overlapped: each micro-batch's copies hide behind 0.8 of its backward, except the
    // last bucket: 6,738,415,616 parameters fill 13 buckets of 5e8 and leave
    // 238,415,616 in the last, sent after backward.
    const double share = (P - 13 * 5e8) / P;
    CHECK(w.last_bucket_share == Approx(share));
    s.layout.dp_overlap = dp_overlap_mode::on;
    const step_report on = predict(s);
    const double hidden = 0.8 * (on.micro_batch.backward + on.micro_batch.recompute).value();
    const auto exposed = [&](double load) { return std::max(share * load, load - hidden); };
    // first: down; two middle: down and up; last: up and fp32 down.
    CHECK(on.time.communication.value() ==
          Approx(exposed(half) + 2 * exposed(2 * half) + exposed(half + full)));
    CHECK(on.time.communication < off.time.communication);

    // One micro-batch per step: only the fp32 copy.
    s.layout.grad_accum = 1;
    s.layout.dp_overlap = dp_overlap_mode::off;
    CHECK(predict(s).offload.gradient_copies.value() == Approx(full));

    // ZeRO-1 accumulates on the GPU and copies its partition once, in fp32, at the
    // boundary: with dp = 2 on one node, P/2 × 4 B.
    training_setup z1 = offloaded(2, 2, 1, 4);
    const optimizer_work w1 = optimizer_workload(z1);
    REQUIRE(w1.gradient_copies.size() == 1);
    CHECK(w1.gradient_copies[0].op.size.value() == 4 * P / 2);
    CHECK(price_gradient_copies(w1, z1).per_step(4).value() == Approx(latency + 2 * P / link_rate));
}

TEST_CASE("the last bucket's share of the gradients", "[offload]") {
    CHECK(last_bucket_share(4e8) == 1.0);           // one partly filled bucket
    CHECK(last_bucket_share(1e9) == 0.5);           // two full buckets of 5e8
    CHECK(last_bucket_share(1.2e9) == Approx(0.2 / 1.2));  // 5e8 + 5e8 + 2e8
}

TEST_CASE("the updated weights come back after the CPU step", "[offload]") {
    training_setup s = offloaded();
    s.cluster.host.pageable_copy_efficiency = 0.25;
    const optimizer_work w = optimizer_workload(s);
    // bf16: cast on the CPU into pageable memory, 2 B/param up at 0.25 × 25.2 GB/s.
    CHECK(w.weights_up.size.value() == 2 * P);
    CHECK(w.weights_up.direction == transfer_direction::to_device);
    CHECK(w.weights_up.pageable);
    CHECK(host_transfer_time(w.weights_up, s.cluster.gpu, s.cluster.host).value() ==
          Approx(latency + 2 * P / (0.25 * link_rate)));
    // The default host: 1/12 of the pinned rate (DeepSpeed #5301's 6x for twice the bytes).
    CHECK(host_transfer_time(w.weights_up, s.cluster.gpu, host_spec{}).value() ==
          Approx(latency + 2 * P / (link_rate / 12)));

    // fp32 weights: no cast, 4 B/param straight from the pinned fp32 partition.
    s.precision = recipe(precision_kind::fp32);
    const optimizer_work f = optimizer_workload(s);
    CHECK(f.host_step.size() == 2);
    CHECK(f.weights_up.size.value() == 4 * P);
    CHECK_FALSE(f.weights_up.pageable);
    CHECK(host_transfer_time(f.weights_up, s.cluster.gpu, s.cluster.host).value() ==
          Approx(latency + 4 * P / link_rate));
}

TEST_CASE("more host cores make the step faster until DRAM bandwidth binds", "[offload]") {
    // AVX2 (8 lanes) at 2 GHz, 100 GB/s. Per parameter and core count c:
    //   clip: max(1/(8·2e9·c), 8/1e11)      = 8e-11 s for any c ≥ 1
    //   Adam: max(10/(8·2e9·c), 28/1e11)    = 6.25e-10/c s until c ≥ 2.23, then 2.8e-10 s
    //   cast: max(1/(8·2e9·c), 6/1e11)      = 6.25e-11 s at c = 1, 6e-11 s from c = 2
    // c = 1: 8e-11 + 6.25e-10 + 6.25e-11 = 7.675e-10; c = 2: 8e-11 + 3.125e-10 + 6e-11 =
    // 4.525e-10; c ≥ 4: 8e-11 + 2.8e-10 + 6e-11 = 4.2e-10 (per parameter).
    training_setup s = offloaded();
    const optimizer_work w = optimizer_workload(s);
    const auto step_at = [&](int cores) {
        s.cluster.host = host(cores, 8, 2.0, 100);
        return host_step_time(w, s).value();
    };
    CHECK(step_at(1) == Approx(7.675e-10 * P));
    CHECK(step_at(2) == Approx(4.525e-10 * P));
    CHECK(step_at(4) == Approx(4.2e-10 * P));
    CHECK(step_at(64) == Approx(4.2e-10 * P));
    double previous = std::numeric_limits<double>::infinity();
    for (int cores = 1; cores <= 256; cores *= 2) {
        s.cluster.host = host(cores, 8, 2.0, 100);
        const double t = predict(s).time.optimizer.value();
        INFO(cores << " cores");
        CHECK(t <= previous);
        previous = t;
    }
    // DRAM bound: twice the bandwidth halves the CPU's part.
    s.cluster.host = host(64, 8, 2.0, 200);
    CHECK(host_step_time(w, s).value() == Approx(2.1e-10 * P));
}

TEST_CASE("the GPUs of a node share its host", "[offload]") {
    // Two data-parallel GPUs, ZeRO-2: each updates P/2 parameters. 32 cores, AVX-512,
    // 2 GHz, 150 GB/s: the passes are DRAM-bound (Adam with 16 cores: P/2/16 × 10 /
    // (16 × 2e9) ≪ 28·(P/2) / 75e9).
    training_setup two_nodes = offloaded(2, 1, 2, 1);
    training_setup one_node = offloaded(2, 2, 2, 1);
    for (training_setup* t : {&two_nodes, &one_node}) t->cluster.host = host(32, 16, 2.0, 150);
    CHECK(gpus_sharing_a_host(two_nodes) == 1);
    CHECK(gpus_sharing_a_host(one_node) == 2);
    const host_share shared = host_share_of(one_node);
    CHECK(shared.cores == 16);
    CHECK(shared.memory_bandwidth.value() == 75e9);
    const optimizer_work w = optimizer_workload(one_node);
    CHECK(w.host_step[1].elements == P / 2);
    // Own host: 42 B × P/2 / 150 GB/s = 1.4e-10·P s; shared: 42 × P/2 / 75 GB/s = 2.8e-10·P s.
    CHECK(host_step_time(optimizer_workload(two_nodes), two_nodes).value() == Approx(1.4e-10 * P));
    CHECK(host_step_time(w, one_node).value() == Approx(2.8e-10 * P));
    CHECK(predict(one_node).offload.host_step.value() == Approx(2.8e-10 * P));

    // A job of one GPU on a node described with eight has the host to itself.
    training_setup alone = offloaded();
    alone.cluster.gpus_per_node = 8;
    CHECK(gpus_sharing_a_host(alone) == 1);
    CHECK(host_share_of(alone).cores == alone.cluster.host.cores);
}

TEST_CASE("a GeForce card's standard system has a desktop's host", "[offload]") {
    // Two RTX 3090 Ti share a Ryzen 9 5950X (spec/gpu_catalog.hpp): 8 cores, AVX2 and
    // 19.2 GB/s each; the CPU step is what the same host described by hand gives, and
    // slower than on the server default (32 cores, AVX-512, 150 GB/s).
    training_setup s = offloaded(2, 2, 2, 1);
    s.cluster = build_cluster({.gpu = rtx_3090_ti::spec, .gpus = 2, .gpus_per_node = 2});
    s.model = gpt_neo_1_3b::config;
    const host_share h = host_share_of(s);
    CHECK(h.cores == 8);
    CHECK(h.simd_lanes == 8);
    CHECK(h.memory_bandwidth.value() == Approx(0.75 * 51.2e9 / 2));
    const optimizer_work w = optimizer_workload(s);
    training_setup by_hand = s;
    by_hand.cluster.host = host(16, 8, 3.4, 0.75 * 51.2, host_spec{}.pageable_copy_efficiency);
    CHECK(host_step_time(w, s).value() == Approx(host_step_time(w, by_hand).value()).epsilon(1e-12));
    training_setup server = s;
    server.cluster.host = host_spec{};
    CHECK(host_step_time(w, s) > 2.0 * host_step_time(w, server));
    // A data-centre card keeps the server default.
    CHECK(build_cluster({.gpu = a100_sxm_80gb::spec, .gpus = 2}).host.cores == host_spec{}.cores);
    CHECK(build_cluster({.gpu = rtx_4090::spec, .gpus = 2}).host.clock.value() == 4.5e9);
}

TEST_CASE("what offload keeps on the GPU and on the host", "[offload][memory]") {
    // ZeRO-2, one GPU, 4 micro-batches, overlap_comm (DeepSpeed's profile).
    const training_setup s = offloaded(1, 1, 2, 4);
    const memory_breakdown m = memory_of(s).breakdown;
    CHECK(m.weights.value() == 2 * P);    // bf16 weights stay
    CHECK(m.gradients.value() == 0);      // no gradient partition on the GPU
    CHECK(m.master_weights.value() == 0);
    CHECK(m.optimizer_state.value() == 0);
    // Two buckets of 5e8 bf16 elements and the 131,072,000-element buffer (the largest
    // tensor) the accumulated gradients come back into: (2 × 5e8 + 131072000) × 2 B.
    CHECK(m.buffers.value() == (2 * 5e8 + 131072000.0) * 2);
    // Host: fp32 weights 4 + fp32 gradients 4 + bf16 accumulated gradients 2 + Adam's
    // m and v 8 = 18 B per parameter.
    CHECK(m.offloaded_to_host.value() == Approx(18 * P));

    // One micro-batch: no accumulated gradients on the host, 16 B/param; the GPU's
    // buffers are allocated with the optimizer and stay.
    training_setup one = s;
    one.layout.grad_accum = 1;
    const memory_breakdown m1 = memory_of(one).breakdown;
    CHECK(m1.buffers.value() == (2 * 5e8 + 131072000.0) * 2);
    CHECK(m1.offloaded_to_host.value() == Approx(16 * P));
    // Without overlap_comm one bucket: (5e8 + 131072000) × 2 B.
    one.layout.dp_overlap = dp_overlap_mode::off;
    CHECK(memory_of(one).breakdown.buffers.value() == (5e8 + 131072000.0) * 2);

    // ZeRO-1 over 4 GPUs: the gradients stay on the GPU (fp32 under DeepSpeed's
    // profile), the host holds 16 B for each of the P/4 parameters the GPU updates.
    const memory_breakdown z1 = memory_of(offloaded(4, 4, 1, 1)).breakdown;
    CHECK(z1.gradients.value() == 4 * P);
    CHECK(z1.offloaded_to_host.value() == Approx(16 * P / 4));
}

TEST_CASE("host_spec validation names the field", "[offload][system]") {
    CHECK_NOTHROW(validate(host_spec{}));
    CHECK_THAT(error_of([] { validate(host_spec{.cores = 0}); }), Catch::StartsWith("host.cores = 0"));
    CHECK_THAT(error_of([] { validate(host_spec{.simd_lanes = 128}); }), Catch::StartsWith("host.simd_lanes = 128"));
    CHECK_THAT(error_of([] { validate(host_spec{.clock = hertz::from_value(0.0)}); }),
               Catch::StartsWith("host.clock_hz = 0"));
    CHECK_THAT(error_of([] { validate(host_spec{.clock = hertz::from_value(std::nan(""))}); }),
               Catch::StartsWith("host.clock_hz = nan"));
    CHECK_THAT(error_of([] { validate(host_spec{.memory_bandwidth = gb_per_second(0.5)}); }),
               Catch::StartsWith("host.memory_bandwidth_bytes_per_second = 5e+08"));
    CHECK_THAT(error_of([] { validate(host_spec{.pageable_copy_efficiency = 0}); }),
               Catch::StartsWith("host.pageable_copy_efficiency = 0"));
    CHECK_THAT(error_of([] { share_per_gpu(host_spec{}, 0); }), Catch::StartsWith("gpus_on_node = 0"));
    // A setup with a bad host is refused before anything is priced.
    training_setup s = offloaded();
    s.cluster.host.cores = -4;
    CHECK_THAT(error_of([&] { predict(s); }), Catch::Contains("host.cores = -4"));
    CHECK_THAT(error_of([] { build_cluster({.gpu = h100_sxm::spec, .gpus = 1, .host = host_spec{.simd_lanes = 0}}); }),
               Catch::Contains("host.simd_lanes = 0"));
}

TEST_CASE("a system file carries its host", "[offload][system][descriptions]") {
    const system_description d{.name = "box",
                               .gpus_per_node = 2,
                               .intra_node_kind = link_kind::pcie,
                               .host = host(64, 8, 2.45, 204.8, 0.5)};
    const nlohmann::json j = io::system_to_json(d);
    CHECK(j["host"]["cores"] == 64);
    CHECK(j["host"]["simd_lanes"] == 8);
    CHECK(j["host"]["clock_hertz"].get<double>() == 2.45e9);
    CHECK(j["host"]["memory_bandwidth_bytes_per_second"].get<double>() == Approx(204.8e9));
    CHECK(j["host"]["pageable_copy_efficiency"].get<double>() == 0.5);
    const auto path = std::filesystem::temp_directory_path() / "trainperf-test-offload-box.system.json";
    io::save_system_file(path, d);
    const system_description back = io::load_system_file(path);
    std::filesystem::remove(path);
    CHECK(io::system_to_json(back) == j);
    CHECK(back.host.cores == 64);
    CHECK(back.host.clock == d.host.clock);
    CHECK(back.host.memory_bandwidth == d.host.memory_bandwidth);
    const cluster_spec c = build_cluster(a100_sxm_80gb::spec, back, 2);
    CHECK(c.host.cores == 64);
    CHECK(c.host.simd_lanes == 8);

    // Written before hosts were described: the default host.
    nlohmann::json old = j;
    old.erase("host");
    CHECK(io::system_from_json(old).host.cores == host_spec{}.cores);
    // A host given must be complete and in range, and errors name the field.
    const auto error_with = [&](const std::function<void(nlohmann::json&)>& change) {
        nlohmann::json bad = j;
        change(bad);
        return error_of([&] { io::system_from_json(bad); });
    };
    CHECK_THAT(error_with([](nlohmann::json& b) { b["host"]["cores"] = 0; }),
               Catch::Contains("host.cores = 0: must be an integer in [1, 65536]"));
    CHECK_THAT(error_with([](nlohmann::json& b) { b["host"].erase("clock_hertz"); }),
               Catch::Contains("host.clock_hertz = (missing): required"));
    CHECK_THAT(error_with([](nlohmann::json& b) { b["host"]["threads"] = 128; }),
               Catch::Contains("host.threads = 128: unknown field"));
    CHECK_THAT(error_with([](nlohmann::json& b) { b["host"]["pageable_copy_efficiency"] = 2; }),
               Catch::Contains("host.pageable_copy_efficiency = 2"));
    CHECK_THAT(error_with([](nlohmann::json& b) { b["host"] = 32; }), Catch::Contains("host = 32: must be a JSON object"));
}
