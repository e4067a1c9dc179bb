#include <trainperf/workload/flops.hpp>
#include <trainperf/spec/framework.hpp>
#include <trainperf/spec/gpu_catalog.hpp>
#include <trainperf/spec/links.hpp>
#include <trainperf/spec/model_catalog.hpp>
#include <trainperf/spec/setup.hpp>
#include <trainperf/workload/step_ops.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

using namespace trainperf;

namespace {
template <class Ops>
double total_flops(const Ops& ops) {
    double f = 0;
    for (const auto& op : ops) f += gemm_flops(op.shape).value();
    return f;
}

// `n` ops pushed onto a list of four, the list copied, and the copy assigned over a
// list holding three other ops: the bytes of what the last list holds, plus 100 per op.
constexpr double copied_list_bytes(int n) {
    op_list<memory_op, 4> l;
    for (int i = 1; i <= n; ++i) l.push_back({"op", bytes_of(double(i))});
    const op_list<memory_op, 4> copy = l;
    op_list<memory_op, 4> longer;
    for (int i = 0; i < 3; ++i) longer.push_back({"other", bytes_of(1000.0)});
    longer = copy;
    double sum = 0;
    for (const memory_op& op : longer) sum += op.moved.value();
    return sum + 100.0 * double(longer.size());
}
static_assert(copied_list_bytes(2) == 203.0, "an op list at compile time");
static_assert(copied_list_bytes(0) == 0.0);
}  // namespace

TEST_CASE("an op list holds what was pushed, copies it and refuses more than its capacity", "[workload]") {
    volatile int two = 2, four = 4;  // evaluated at run time
    CHECK(copied_list_bytes(two) == 203.0);
    CHECK(copied_list_bytes(four) == 1.0 + 2.0 + 3.0 + 4.0 + 400.0);
    op_list<stage_op<gemm_op>, 2> full;
    full.push_back({{"a", {1, 2, 3, 1, dtype::fp16}, op_phase::forward}, 1, 0, step_part::forward});
    full.push_back({{"b", {4, 5, 6, 1, dtype::fp16}, op_phase::backward_data}, 2, 1, step_part::backward});
    const auto copy = full;
    REQUIRE(copy.size() == 2);
    CHECK((copy[1].op.name == "b" && copy[1].op.shape.n == 5 && copy[1].count == 2 && copy[1].recomputed == 1));
    CHECK_THROWS_WITH(full.push_back(copy[0]), Catch::Contains("op_list.size = 2"));
}

TEST_CASE("a layer's GEMM shapes follow Megatron's tensor-parallel split", "[workload]") {
    // gpt2-medium: h = 1024, a = 16, d = 64, f = 4096; b = 8, s = 1024, t = 2.
    const auto ops = layer_forward_gemms(gpt2_medium::config, {.micro_batch = 8, .seq = 1024, .tp = 2});
    REQUIRE(ops.size() == 6);  // qkv, scores, context, out, ffn_up, ffn_down
    const auto shape_of = [&](std::string_view name) {
        for (const auto& op : ops)
            if (op.name == name) return op.shape;
        FAIL("no GEMM named " << name);
        return gemm_shape{};
    };
    const auto qkv = shape_of("qkv");
    CHECK((qkv.m == 8192 && qkv.n == 1536 && qkv.k == 1024 && qkv.batch == 1));
    const auto scores = shape_of("attention_scores");
    CHECK((scores.m == 1024 && scores.n == 1024 && scores.k == 64 && scores.batch == 64));
    const auto context = shape_of("attention_context");
    CHECK((context.m == 1024 && context.n == 64 && context.k == 1024 && context.batch == 64));
    const auto out = shape_of("attention_out");
    CHECK((out.m == 8192 && out.n == 1024 && out.k == 512));
    const auto down = shape_of("ffn_down");
    CHECK((down.m == 8192 && down.n == 1024 && down.k == 2048));
}

TEST_CASE("GEMM FLOPs of a layer equal the exact per-op count", "[workload]") {
    for (const auto& m : {gpt2_medium::config, llama2_70b::config, bert_large::config}) {
        const int seq = 2048, b = 2;
        for (int tp : {1, 8}) {
            const auto ops = layer_forward_gemms(m, {.micro_batch = b, .seq = seq, .tp = tp});
            const double per_rank = total_flops(ops);
            const double exact = exact_forward_breakdown(m, seq).layer().value() * b;
            INFO(m.name << " tp " << tp);
            // GQA with fewer kv heads than tp replicates a kv head per rank.
            if (m.effective_kv_heads() >= tp) CHECK(per_rank * tp == Approx(exact));
            else CHECK(per_rank * tp > exact);
        }
    }
}

TEST_CASE("backward GEMMs are dgrad and wgrad with twice the forward FLOPs", "[workload]") {
    const auto all = layer_gemms(llama2_7b::config, 1, 4096, 1, dtype::bf16);
    const auto forward = layer_forward_gemms(llama2_7b::config, {.micro_batch = 1, .seq = 4096});
    REQUIRE(all.size() == 3 * forward.size());
    double fwd = 0, bwd = 0;
    for (const auto& op : all) (op.phase == op_phase::forward ? fwd : bwd) += gemm_flops(op.shape).value();
    CHECK(bwd == Approx(2 * fwd));
    const gemm_shape g{100, 200, 300};
    CHECK(dgrad_of(g).m == 100);
    CHECK(dgrad_of(g).n == 300);
    CHECK(dgrad_of(g).k == 200);
    CHECK(wgrad_of(g).m == 300);
    CHECK(wgrad_of(g).n == 200);
    CHECK(wgrad_of(g).k == 100);
}

TEST_CASE("fused profiles move fewer bytes than eager ones", "[workload]") {
    const layer_context c{.micro_batch = 4, .seq = 1024};
    const auto traffic = [&](const framework_profile& fw) {
        double b = 0;
        for (const auto& op : layer_forward_memory_ops(gpt2_medium::config, c, fw)) b += op.moved.value();
        return b;
    };
    CHECK(traffic(megatron_profile) < traffic(pytorch_eager_profile));
    framework_profile flash = megatron_profile;
    flash.flash_attention = true;
    CHECK(traffic(flash) < traffic(megatron_profile));
    // Megatron's fused softmax: one read and one write of b·(a/t)·s² 16-bit scores.
    for (const auto& op : layer_forward_memory_ops(gpt2_medium::config, c, megatron_profile))
        if (op.name == "scale_mask_softmax") CHECK(op.moved.value() == 2.0 * 4 * 16 * 1024.0 * 1024 * 2);
}

TEST_CASE("sequence parallelism splits the norms and dropouts over tp", "[workload]") {
    const auto norm_bytes = [](bool sp) {
        for (const auto& op : layer_forward_memory_ops(gpt3_175b::config,
                                                       {.micro_batch = 1, .seq = 2048, .tp = 8, .sp = sp},
                                                       megatron_profile))
            if (op.name == "layernorm") return op.moved.value();
        return 0.0;
    };
    CHECK(norm_bytes(false) == Approx(8 * norm_bytes(true)));
}

TEST_CASE("models without dropout keep no dropout ops", "[workload]") {
    for (const auto& op : layer_forward_memory_ops(llama2_7b::config, {.micro_batch = 1, .seq = 4096},
                                                   pytorch_eager_profile))
        CHECK(op.name.find("dropout") == std::string_view::npos);
}

TEST_CASE("a layer context that does not fit the model is rejected", "[workload]") {
    CHECK_THROWS_WITH(layer_forward_gemms(gpt2_medium::config, {.micro_batch = 1, .seq = 1024, .tp = 3}),
                      Catch::Contains("tp"));
    CHECK_THROWS_WITH(layer_forward_gemms(gpt2_medium::config, {.micro_batch = 0, .seq = 1024}),
                      Catch::Contains("batch"));
}

namespace {
template <class Ops>
const memory_op* find_op(const Ops& ops, std::string_view name) {
    for (const auto& op : ops)
        if (op.name == name) return &op;
    return nullptr;
}
}  // namespace

TEST_CASE("eager frameworks run the model's own code: activation and attention ops", "[workload]") {
    // gpt2-medium, b = 2, s = 512, fp16: ffn = 2 · 512 · 4096 elements, scores = 2 · 16 · 512².
    const auto& m = gpt2_medium::config;
    const layer_context c{.micro_batch = 2, .seq = 512, .tp = 1, .math = dtype::fp16, .activations = dtype::fp16,
                          .code = code_run(m, pytorch_eager_profile)};
    CHECK(c.code == model_code::gpt2);
    const auto ops = layer_forward_memory_ops(m, c, pytorch_eager_profile);
    const double ffn = 2.0 * 512 * 4096, scores = 2.0 * 16 * 512 * 512;
    // gelu_new: 8 kernels, 18 element accesses (2 per unary op, 3 per binary) of 2 B: 36 B.
    const auto* gelu = find_op(ops, "gelu_new");
    REQUIRE(gelu != nullptr);
    CHECK(gelu->launches == 8);
    CHECK(gelu->moved.value() == 18 * ffn * 2);
    // GPT-2's _attn: the scale built by torch.full, the mask value copied from the CPU,
    // torch.where with the causal mask: each a launch; where passes over the scores twice.
    CHECK(find_op(ops, "scale_fill") != nullptr);
    CHECK(find_op(ops, "mask_value_copy") != nullptr);
    CHECK(find_op(ops, "causal_mask_where")->moved.value() == 2 * scores * 2);
    // Megatron's own layer: one fused bias-GELU kernel whatever the model's code says.
    const auto fused = layer_forward_memory_ops(m, {.micro_batch = 2, .seq = 512, .tp = 1}, megatron_profile);
    CHECK(find_op(fused, "gelu_new") == nullptr);
    CHECK(find_op(fused, "bias_gelu") != nullptr);
}

TEST_CASE("BERT projects Q, K and V with three GEMMs, adds the padding mask when there is one", "[workload]") {
    const auto& m = bert_large::config;
    layer_context c{.micro_batch = 4, .seq = 128, .tp = 1, .math = dtype::fp16, .activations = dtype::fp16,
                    .code = model_code::bert};
    const auto gemms = layer_forward_gemms(m, c);
    REQUIRE(gemms.size() == 8);  // q, k, v, scores, context, out, ffn up, ffn down
    CHECK(gemms[0].name == "q");
    CHECK(gemms[0].shape.n == 1024);
    CHECK(gemms[0].block == layer_block::attention);
    CHECK(gemms[7].block == layer_block::mlp);
    CHECK(find_op(layer_forward_memory_ops(m, c, pytorch_eager_profile), "attention_mask") != nullptr);
    c.padding_mask = false;
    CHECK(find_op(layer_forward_memory_ops(m, c, pytorch_eager_profile), "attention_mask") == nullptr);
    // Parameter tensors (AccumulateGrad nodes): 6 weights (q, k, v, out, 2 FFN), their 6
    // biases, 2 LayerNorms of 2 tensors: 16. GPT-2's fused c_attn: 4 + 4 + 4 = 12.
    CHECK(layer_parameter_tensors(m, model_code::bert) == 16);
    CHECK(layer_parameter_tensors(gpt2_medium::config, model_code::gpt2) == 12);
}

TEST_CASE("LLaMA's RMSNorm and rotary embedding run as PyTorch ops in eager mode", "[workload]") {
    const auto& m = llama2_7b::config;  // h = 4096, 32 heads
    const layer_context c{.micro_batch = 1, .seq = 256, .tp = 1, .math = dtype::bf16, .activations = dtype::bf16,
                          .code = model_code::llama};
    const auto ops = layer_forward_memory_ops(m, c, pytorch_eager_profile);
    const double hidden = 256.0 * 4096;
    // to(fp32) 2+4, pow 8, mean 4, × rsqrt 8, to(bf16) 4+2, × weight 4: 36 bytes per element.
    const auto* norm = find_op(ops, "rmsnorm");
    REQUIRE(norm != nullptr);
    CHECK(norm->launches == 8);
    CHECK(norm->moved.value() == hidden * 36);
    // Rotary on q and k (no GQA in LLaMA 2 7B): 10 kernels, 10 accesses of 2 B per element.
    CHECK(find_op(ops, "rotary")->moved.value() == 10 * (hidden + hidden) * 2);
    CHECK(find_op(ops, "repeat_kv") == nullptr);
}

TEST_CASE("a framework's own layer applies RoPE and the query-key norms on the GPU too", "[workload]") {
    const auto& m = llama3_8b::config;  // h = 4096, 32 heads, 8 kv heads of 128
    const layer_context c{.micro_batch = 1, .seq = 4096, .tp = 2, .math = dtype::bf16, .activations = dtype::bf16};
    // This rank's queries and keys: 4096 tokens × (4096 + 1024) / 2.
    const double query_key = 4096.0 * 5120 / 2, keys = 4096.0 * 1024 / 2, queries = 4096.0 * 4096 / 2;
    // Megatron-Core: Transformer Engine's fused RoPE, one kernel per tensor reading and
    // writing it (2 + 2 B); its backward rotates the gradient back, the same bytes.
    // The op `name` of `ops`, its bytes and launches as expected.
    const auto expect = [](const layer_memory_list& ops, std::string_view name, double moved, double launches) {
        const auto* op = find_op(ops, name);
        REQUIRE(op != nullptr);
        CHECK(op->moved.value() == moved);
        CHECK(op->launches == launches);
        return *op;
    };
    const auto core = layer_forward_memory_ops(m, c, megatron_core_profile);
    const memory_op rope = expect(core, "rotary", query_key * 4, 2);
    CHECK(backward_of(rope, megatron_core_profile).moved == rope.moved);
    CHECK(find_op(core, "qk_norm") == nullptr);  // Llama 3 has no query-key norms
    // Without the fusion (Megatron-Core's unfused code; the megatron profile runs it too):
    // neg over half (1), cat (2), × cos (2), × sin (2), + (3), cat (2): 12 accesses of
    // 2 B per element, 6 kernels per tensor and 6 on the frequencies; backward at the
    // elementwise ratio.
    const auto eager = layer_forward_memory_ops(m, c, megatron_profile);
    const memory_op unfused = expect(eager, "rotary", query_key * 24, 24);
    CHECK(backward_of(unfused, megatron_profile).moved.value() == query_key * 36);
    // Query-key norms (Qwen3's per head): one Transformer Engine norm kernel each, reading
    // and writing every element, after the copy of the strided key (the grouped query was
    // copied by its reshape); the copy's gradient is a view: no backward.
    transformer_config normed = m;
    normed.qk_norm = qk_norm_kind::per_head;
    const auto normed_core = layer_forward_memory_ops(normed, c, megatron_core_profile);
    expect(normed_core, "qk_norm", query_key * 4, 2);
    const memory_op copy = expect(normed_core, "qk_norm_input_copy", keys * 4, 1);
    const memory_op copy_back = backward_of(copy, megatron_core_profile);
    CHECK(copy_back.moved.value() == 0);
    CHECK(copy_back.launches == 0);
    // Without grouping (Llama 2 7B's 32 kv heads) the query is a view too: both copied.
    transformer_config mha = llama2_7b::config;
    mha.qk_norm = qk_norm_kind::per_head;
    expect(layer_forward_memory_ops(mha, c, megatron_core_profile), "qk_norm_input_copy", 2 * queries * 4, 2);
    // The model's code (the Hugging Face Trainer): its RMSNorm, 8 kernels each, 36 B per
    // element in bf16, and its 5-kernel RoPE.
    layer_context hf = c;
    hf.code = model_code::llama;
    const auto normed_hf = layer_forward_memory_ops(normed, hf, pytorch_eager_profile);
    expect(normed_hf, "qk_rmsnorm", query_key * 36, 16);
    expect(normed_hf, "rotary", query_key * 20, 10);
    // Compiled (torchtitan --compile on): RoPE one kernel over q and k, a rotation whose
    // backward moves the same; with the query-key norms in the chain, the elementwise ratio.
    framework_profile compiled = torchtitan_profile;
    compiled.compiled = true;
    const memory_op chain = expect(layer_forward_memory_ops(m, hf, compiled), "compiled_rotary", query_key * 4, 1);
    CHECK(backward_of(chain, compiled).moved == chain.moved);
    const auto titan_normed = layer_forward_memory_ops(normed, hf, compiled);
    CHECK(backward_of(*find_op(titan_normed, "compiled_rotary"), compiled).moved.value() == query_key * 6);
    // Learned positions: no RoPE; latent attention applies it in its own assembly.
    transformer_config learned = m;
    learned.positions = position_kind::learned;
    const auto unrotated = layer_forward_memory_ops(learned, c, megatron_core_profile);
    CHECK(find_op(unrotated, "rotary") == nullptr);
    const layer_context one{.micro_batch = 1, .seq = 4096, .tp = 1, .math = dtype::bf16, .activations = dtype::bf16};
    const auto latent = layer_forward_memory_ops(deepseek_v3::config, one, megatron_core_profile);
    CHECK(find_op(latent, "rotary") == nullptr);
    CHECK(find_op(latent, "mla_rope_assemble") != nullptr);
}

TEST_CASE("the framework's own layer: the split of the QKV output, its regrouping and its gradients' concat",
          "[workload]") {
    const layer_context c{.micro_batch = 1, .seq = 4096, .tp = 2, .math = dtype::bf16, .activations = dtype::bf16};
    const double queries = 4096.0 * 4096 / 2, keys = 4096.0 * 1024 / 2;  // Llama 3 8B on this rank
    // The op `name` of `ops` and what its backward moves, or a failed check.
    const auto backward_bytes = [](const layer_memory_list& ops, std::string_view name) {
        const auto* op = find_op(ops, name);
        REQUIRE(op != nullptr);
        return backward_of(*op, megatron_core_profile).moved.value();
    };
    const auto ops = layer_forward_memory_ops(llama3_8b::config, c, megatron_core_profile);
    // Grouped-query attention with 4 kv groups on the rank: the query's reshape copies it
    // (2 + 2 B per element), and its gradient reshapes back as a view.
    const auto* regroup = find_op(ops, "query_regroup_copy");
    REQUIRE(regroup != nullptr);
    CHECK(regroup->moved.value() == queries * 4);
    CHECK(backward_bytes(ops, "query_regroup_copy") == 0);
    // RoPE replaced q and k: the fused attention copies v, still a view, into a tensor.
    CHECK(find_op(ops, "attention_input_copy")->moved.value() == keys * 4);
    CHECK(backward_bytes(ops, "attention_input_copy") == 0);
    // The split runs no kernel; its backward copies the q, k and v gradients into one
    // (2 + 2 B per element of q, k and v).
    const auto* concat = find_op(ops, "qkv_gradient_concat");
    REQUIRE(concat != nullptr);
    CHECK_FALSE(has_forward_kernel(*concat));
    CHECK(backward_bytes(ops, "qkv_gradient_concat") == (queries + 2 * keys) * 4);
    CHECK(backward_of(*concat, megatron_core_profile).launches == 1);
    // One kv group per rank (tp 8 = 8 kv heads): the reshape is a view; 128 kv elements
    // per token on each rank.
    layer_context one_group = c;
    one_group.tp = 8;
    const auto wide = layer_forward_memory_ops(llama3_8b::config, one_group, megatron_core_profile);
    CHECK(find_op(wide, "query_regroup_copy") == nullptr);
    CHECK(backward_bytes(wide, "qkv_gradient_concat") == 4096.0 * (512 + 2 * 128) * 4);
    // In a step: backward only, once per layer.
    training_setup s;
    s.cluster = standard_cluster(h100_sxm::spec, 2);
    s.model = llama3_8b::config;
    s.precision = recipe(precision_kind::bf16);
    s.layout = {.tp = 2, .sp = true};
    s.seq = 4096;
    s.framework = megatron_core_profile;
    int forward = 0, backward = 0;
    for (const auto& op : micro_batch_workload(s).memory)
        if (op.op.name == "qkv_gradient_concat") (op.part == step_part::forward ? forward : backward) += 1;
    CHECK(forward == 0);
    CHECK(backward == 1);
    // GPT-3 under Megatron-Core (learned positions, every head its own kv, fused
    // attention): q, k and v stay views of one buffer and come back in one; nothing copied.
    const auto plain = layer_forward_memory_ops(gpt3_175b::config, c, megatron_core_profile);
    for (std::string_view name : {"query_regroup_copy", "attention_input_copy", "qkv_gradient_concat"})
        CHECK(find_op(plain, name) == nullptr);
    // With context parallelism (cp 2: 2048 tokens a rank) the fused attention makes all
    // three contiguous, and its ring returns dq apart.
    layer_context ring = c;
    ring.cp = 2;
    const double third = 2048.0 * 12288 / 2;  // q, k or v elements on the rank
    const auto split = layer_forward_memory_ops(gpt3_175b::config, ring, megatron_core_profile);
    CHECK(find_op(split, "attention_input_copy")->moved.value() == 3 * third * 4);
    CHECK(backward_bytes(split, "qkv_gradient_concat") == 3 * third * 4);
    // Megatron-LM 2022's unfused core returns them apart: torch.split's backward copies.
    const auto legacy = layer_forward_memory_ops(gpt3_175b::config, c, megatron_profile);
    CHECK(backward_bytes(legacy, "qkv_gradient_concat") == 4096.0 * 3 * 12288 / 2 * 4);
}

TEST_CASE("the workload lists the host's calls per layer", "[workload]") {
    training_setup s;
    s.model = bert_large::config;
    s.framework = pytorch_eager_profile;
    s.precision = recipe(precision_kind::fp16);
    s.cluster.gpu = rtx_3090_ti::spec;
    s.layout.micro_batch = 2;
    s.seq = 128;
    const stage_workload w = micro_batch_workload(s);
    REQUIRE(w.host.size() == 3);
    // BERT: 9 views and 18 module calls per layer forward, 24 layers.
    CHECK(w.host[0].op.call == host_call::view);
    CHECK(w.host[0].op.count == 9);
    CHECK(w.host[0].count == 24);
    CHECK(w.host[1].op.count == 18);
    // Backward nodes: the layer's forward launches (8 GEMMs + the memory ops' kernels),
    // its views and its 16 parameter tensors.
    double launches = 8;
    for (const auto& op : layer_forward_memory_ops(s.model, {.micro_batch = 2, .seq = 128, .tp = 1,
                                                             .math = dtype::fp16, .activations = dtype::fp16,
                                                             .code = model_code::bert},
                                                   pytorch_eager_profile))
        launches += op.launches;
    CHECK(w.host[2].op.count == launches + 9 + 16);
}


namespace {
// The forward memory op of a layer named `name`, or nothing.
std::optional<memory_op> find_copy(const layer_memory_list& ops, std::string_view name) {
    for (const auto& op : ops)
        if (op.name == name) return op;
    return std::nullopt;
}

training_setup on_3090_ti(precision_kind p, recompute_mode rc = recompute_mode::none) {
    training_setup s;
    s.cluster = standard_cluster(rtx_3090_ti::spec);
    s.model = gpt2::config;
    s.precision = recipe(p);
    s.layout = {.micro_batch = 2, .recompute = rc};
    s.seq = 128;
    s.framework = pytorch_eager_profile;
    return s;
}
}  // namespace

TEST_CASE("autocast adds its casts to a layer's memory ops with their bytes", "[workload][amp]") {
    // gpt2: h = 768, 12 heads, f = 3072; b = 2, s = 128, t = 1: 256 tokens, so
    // b·s·h = 196608, b·s·f = 786432, b·a·s² = 2·12·128² = 393216 elements.
    const layer_context amp{.micro_batch = 2, .seq = 128, .math = dtype::fp16, .activations = dtype::fp16,
                            .autocast = true};
    const auto ops = layer_forward_memory_ops(gpt2::config, amp, pytorch_eager_profile);
    const auto bytes_of_op = [&](std::string_view name) {
        const auto op = find_copy(ops, name);
        REQUIRE(op.has_value());
        return op->moved.value();
    };
    // Weights: QKV 768·2304 + 2304 = 1771776, out 768² + 768 = 590592, FFN 768·3072 +
    // 3072 + 3072·768 + 768 = 4722432: 7084800 parameters read as fp32 (4 B) and written
    // as fp16 (2 B): 6 · 7084800 = 42508800 B, one kernel per tensor (4 matrices with
    // the fused QKV projection, and their 4 biases).
    CHECK(bytes_of_op("autocast_weight_cast") == 42508800.0);
    CHECK(find_copy(ops, "autocast_weight_cast")->launches == 8);
    // fp32 → fp16 activation casts, 4 + 2 = 6 B per element:
    CHECK(bytes_of_op("autocast_cast_qkv_input") == 6 * 196608.0);        // first norm's output
    CHECK(bytes_of_op("autocast_cast_ffn_input") == 6 * 196608.0);        // second norm's output
    CHECK(bytes_of_op("autocast_cast_probabilities") == 6 * 393216.0);    // softmax output
    CHECK(find_copy(ops, "autocast_cast_probabilities")->region == op_region::attention_core);
    CHECK(bytes_of_op("autocast_cast_gelu_input") == 6 * 786432.0);       // fp16 → fp32 into pow
    CHECK(bytes_of_op("autocast_cast_ffn_down_input") == 6 * 786432.0);   // fp32 GELU output
    // fp32 ops move twice the bytes: layernorm reads and writes fp32, 8 B per element
    // (4 B in fp16); softmax reads fp16 and writes fp32, 6 B (4 B); the residual add
    // reads the fp16 branch and the fp32 stream and writes fp32, 2 + 4 + 4 = 10 B (6 B).
    CHECK(bytes_of_op("layernorm") == 8 * 196608.0);
    CHECK(bytes_of_op("softmax") == 6 * 393216.0);
    CHECK(bytes_of_op("residual_add_attention") == 10 * 196608.0);
    // gelu_new, 8 kernels: 0.5·x in fp16 (2 + 2 B); from pow on fp32 (4 + 4 B per unary
    // op; x + … and the product read the fp16 x too, 2 + 4 + 4 B): 4·2 + 14·4 = 64 B.
    CHECK(find_copy(ops, "gelu_new")->launches == 8);
    CHECK(bytes_of_op("gelu_new") == 786432.0 * 64);
    // A cast's backward casts the gradient back: the same bytes (an elementwise
    // backward moves 1.5× its forward).
    for (const auto& op : backward_of(ops, pytorch_eager_profile)) {
        const auto forward = find_copy(ops, op.name);
        if (op.cast) CHECK(op.moved == forward->moved);
    }
    CHECK(backward_of(*find_copy(ops, "autocast_weight_cast"), pytorch_eager_profile).moved.value() == 42508800.0);

    // The same layer in fp16 without autocast (Megatron-style or .half()) has no casts.
    const layer_context half{.micro_batch = 2, .seq = 128, .math = dtype::fp16, .activations = dtype::fp16};
    const auto plain = layer_forward_memory_ops(gpt2::config, half, pytorch_eager_profile);
    for (const auto& op : plain) {
        CHECK_FALSE(op.cast);
        CHECK(op.name.find("autocast") == std::string_view::npos);
    }
    CHECK(find_copy(plain, "layernorm")->moved.value() == 4 * 196608.0);
    CHECK(find_copy(plain, "residual_add_attention")->moved.value() == 6 * 196608.0);
}

TEST_CASE("the stage under autocast: weight casts per forward, head casts, fp32 embedding", "[workload][amp]") {
    for (recompute_mode rc : {recompute_mode::none, recompute_mode::full}) {
        const stage_workload w = micro_batch_workload(on_3090_ti(precision_kind::fp16_amp, rc));
        INFO(to_string(rc));
        int weight_casts = 0;
        for (const auto& op : w.memory) {
            if (op.op.name == "autocast_weight_cast" && op.part == step_part::forward) {
                ++weight_casts;
                CHECK(op.count == 12);  // every layer, once per micro-batch's forward
                // Full recompute runs each layer's forward again in a new autocast region.
                CHECK(op.recomputed == (rc == recompute_mode::full ? 12 : 0));
            }
            // The tied head: 50257·768 parameters, 6 B each = 231584256 B, forward and back.
            if (op.op.name == "autocast_weight_cast_head") CHECK(op.op.moved.value() == 231584256.0);
            // The final norm's fp32 output cast for the head: 256·768 elements · 6 B.
            if (op.op.name == "autocast_cast_head_input") CHECK(op.op.moved.value() == 1179648.0);
            // Embedding lookups stay fp32: 3 passes · 256·768 · 4 B.
            if (op.op.name == "embedding") CHECK(op.op.moved.value() == 3 * 196608.0 * 4);
        }
        CHECK(weight_casts == 1);
    }
    // Without autocast the embedding moves 16-bit values and there are no casts.
    for (const auto& op : micro_batch_workload(on_3090_ti(precision_kind::fp16)).memory) {
        CHECK_FALSE(op.op.cast);
        if (op.op.name == "embedding") CHECK(op.op.moved.value() == 3 * 196608.0 * 2);
    }
}

TEST_CASE("optimizer traffic per parameter under autocast and pure fp16", "[workload][amp]") {
    const auto per_param = [](precision_kind p, const framework_profile& fw) {
        training_setup s = on_3090_ti(p);
        s.framework = fw;
        return optimizer_bytes_per_parameter(s, model_state_of(s));
    };
    // Without the Trainer's every-step clip scale (a Megatron-style step):
    // fp16-amp, AdamW on the fp32 parameters (8 B of fp32 moments): the update reads the
    // fp32 gradient 4, reads and writes the parameter 2·4 and the moments 2·8 = 28; the
    // clip reads the gradients 4; the GradScaler's unscale reads and writes them 2·4 = 8;
    // no master, no copy back: 40 B.
    framework_profile no_scale = pytorch_eager_profile;
    no_scale.scales_gradients_every_step = false;
    CHECK(per_param(precision_kind::fp16_amp, no_scale) == 40.0);
    // bf16-amp: no GradScaler: 32 B.
    CHECK(per_param(precision_kind::bf16_amp, no_scale) == 32.0);
    // Megatron-style fp16, unchanged: update 2 + 2·4 + 2·8 = 26; clip 2, master read 4
    // and 16-bit copy written 2: 34 B.
    CHECK(per_param(precision_kind::fp16, no_scale) == 34.0);
    // .half(): fp16 gradients, parameters and moments (4 B): update 2 + 2·2 + 2·4 = 14;
    // clip 2: 16 B.
    CHECK(per_param(precision_kind::fp16_pure, no_scale) == 16.0);
    // The Hugging Face Trainer's clip_grad_norm_ multiplies every gradient every step:
    // one more read and write of each, 2·4 B of fp32 gradients under autocast, 2·2 B of
    // fp16 ones.
    CHECK(per_param(precision_kind::fp16_amp, pytorch_eager_profile) == 48.0);
    CHECK(per_param(precision_kind::bf16_amp, pytorch_eager_profile) == 40.0);
    CHECK(per_param(precision_kind::fp16_pure, pytorch_eager_profile) == 20.0);
}

namespace {
// The count of one kind of host call per layer in a pass (0 when absent).
// The host ops of the layers (not the head's, the loss's or the embedding's collectives).
bool of_layers(const stage_op<host_op>& h) {
    return h.op.name != "head_collective_calls" && h.op.name != "embedding_collective_calls";
}

double host_calls_of(const stage_workload& w, host_call call, step_part part) {
    double n = 0;
    for (const auto& h : w.host)
        if (of_layers(h) && h.op.call == call && h.part == part) n += h.op.count;
    return n;
}
}  // namespace

TEST_CASE("a framework's own layer issues its counted Python calls: Functions, forks, hooks, collectives",
          "[workload]") {
    training_setup s;
    s.model = gpt3_175b::config;
    s.model.layers = 24;
    s.model.hidden = 2048;
    s.model.heads = 16;
    s.model.kv_heads = 16;
    s.model.ffn_hidden = 8192;
    s.framework = megatron_profile;
    s.cluster = standard_cluster(a100_sxm_80gb::spec, 8);
    s.layout.tp = 8;
    s.seq = 2048;
    const auto fwd = step_part::forward, bwd = step_part::backward;
    stage_workload w = micro_batch_workload(s);
    // Megatron-LM@28ba253f: 12 module calls and 30 views per layer, 10 Functions and 3
    // scripted calls in forward, 10 Python backwards, one fork (2 gets, 2 sets).
    CHECK(host_calls_of(w, host_call::module, fwd) == 12);
    CHECK(host_calls_of(w, host_call::view, fwd) == 30);
    CHECK(host_calls_of(w, host_call::function, fwd) == 13);
    CHECK(host_calls_of(w, host_call::function_backward, bwd) == 10);
    CHECK(host_calls_of(w, host_call::rng_state, fwd) == 4);
    CHECK(host_calls_of(w, host_call::library_module, fwd) == 0);
    // A hook per parameter tensor: 4 weights, 4 biases, 2 norms' weight and bias.
    CHECK(host_calls_of(w, host_call::gradient_hook, bwd) == 12);
    // Tensor parallelism: 2 all-reduces called from Python each way.
    CHECK(host_calls_of(w, host_call::collective, fwd) == 2);
    CHECK(host_calls_of(w, host_call::collective, bwd) == 2);
    for (const auto& h : w.host)
        if (of_layers(h)) CHECK(h.count == 24);
    CHECK(host_calls_of(w, host_call::graph_launch, fwd) == 0);

    // Sequence parallelism: 2 all-gathers and 2 reduce-scatters forward, 4 and 2 backward.
    // Full recompute: the forward's calls again, and the checkpoint's Function, its two
    // backwards (its own and the re-entrant one) and 10 generator-state calls.
    s.layout.sp = true;
    s.layout.recompute = recompute_mode::full;
    w = micro_batch_workload(s);
    CHECK(host_calls_of(w, host_call::collective, fwd) == 4);
    CHECK(host_calls_of(w, host_call::collective, bwd) == 6);
    CHECK(host_calls_of(w, host_call::function, fwd) == 13 + 1);
    CHECK(host_calls_of(w, host_call::function_backward, bwd) == 10 + 2);
    CHECK(host_calls_of(w, host_call::rng_state, fwd) == 4 + 3);
    CHECK(host_calls_of(w, host_call::rng_state, bwd) == 7);
    for (const auto& h : w.host) {
        INFO(h.op.name);
        if (!of_layers(h)) continue;
        const bool repeated = h.part == fwd && h.op.name != "checkpoint" && h.op.name != "checkpoint_rng_states";
        CHECK(h.recomputed == (repeated ? 24.0 : 0.0));
    }

    // Megatron-Core with Transformer Engine on a rotary model: 8 + 2 Functions, 5 TE
    // modules, each with its backward; no fork.
    s.model = llama2_7b::config;
    s.framework = megatron_core_profile;
    s.layout.recompute = recompute_mode::none;
    w = micro_batch_workload(s);
    CHECK(host_calls_of(w, host_call::module, fwd) == 14);
    CHECK(host_calls_of(w, host_call::function, fwd) == 10);
    CHECK(host_calls_of(w, host_call::function_backward, bwd) == 10);
    CHECK(host_calls_of(w, host_call::library_module, fwd) == 5);
    CHECK(host_calls_of(w, host_call::library_module_backward, bwd) == 5);
    CHECK(host_calls_of(w, host_call::rng_state, fwd) == 0);

    // CUDA graphs: a replay Function, an input copy and a launch per layer and pass, and
    // nothing else of the layer's.
    s.framework.cuda_graphs = true;
    w = micro_batch_workload(s);
    REQUIRE(std::count_if(w.host.begin(), w.host.end(), of_layers) == 4);
    CHECK(host_calls_of(w, host_call::function, fwd) == 1);
    CHECK(host_calls_of(w, host_call::graph_launch, fwd) == 2);
    CHECK(host_calls_of(w, host_call::function_backward, bwd) == 1);
    CHECK(host_calls_of(w, host_call::graph_launch, bwd) == 2);

    // The model's own code (HF under pytorch-eager) has none of the framework's calls.
    s.framework = pytorch_eager_profile;
    s.layout = {};
    w = micro_batch_workload(s);
    CHECK(host_calls_of(w, host_call::function, fwd) == 0);
    CHECK(host_calls_of(w, host_call::gradient_hook, bwd) == 0);
}

namespace {
// Llama 3 8B (V = 128256, h = 4096, rotary) on 8 H100, bf16, b = 1, s = 4096: 4096
// tokens, 4096·128256/t logit elements per rank.
training_setup llama3_8b_on_h100(const framework_profile& fw, int tp, bool sp) {
    training_setup s;
    s.model = llama3_8b::config;
    s.cluster = standard_cluster(h100_sxm::spec, 8);
    s.precision = recipe(precision_kind::bf16);
    s.framework = fw;
    s.layout = {.tp = tp, .sp = sp};
    s.seq = 4096;
    return s;
}

// The stage's loss op of one pass: its bytes and launches.
std::pair<double, double> loss_op(const stage_workload& w, step_part part) {
    for (const auto& op : w.memory)
        if (op.op.name == "loss" && op.part == part) return {op.op.moved.value(), op.op.launches};
    return {-1, -1};
}

// The tensor-parallel collectives of the head, the loss and the embedding: name → (kind, bytes, count).
std::vector<std::tuple<std::string, collective, double, double>> head_collectives(const stage_workload& w) {
    std::vector<std::tuple<std::string, collective, double, double>> out;
    for (const auto& c : w.collectives) {
        const std::string name(c.op.name);
        if (name.rfind("head_", 0) == 0 || name.rfind("loss_", 0) == 0 || name.rfind("embedding_", 0) == 0) {
            CHECK(c.part == step_part::tensor_parallel);
            out.emplace_back(name, c.op.kind, c.op.size.value(), c.count);
        }
    }
    return out;
}
}  // namespace

TEST_CASE("the loss's kernels as each framework's code runs them, with their bytes and launches", "[workload]") {
    const double tokens = 4096, vocab = 128256;
    // Megatron-Core's unfused VocabParallelCrossEntropy: the bf16 logits upcast (2 + 4 B),
    // then 8 fp32 passes (max; −= max; exp; sum; /= sum); backward the softmax scaled in
    // place (4 + 4 B) and cast back to bf16 (4 + 2 B). 5 + 12 per-token kernels and the
    // upcast forward, 7 and the cast backward.
    training_setup core = llama3_8b_on_h100(megatron_core_profile, 1, false);
    core.framework.loss = loss_implementation::vocab_parallel;
    stage_workload w = micro_batch_workload(core);
    CHECK(loss_op(w, step_part::forward) == std::pair{tokens * vocab * (6 + 32), 18.0});
    CHECK(loss_op(w, step_part::backward) == std::pair{tokens * vocab * (8 + 6), 8.0});
    CHECK(head_collectives(w).empty());  // one rank holds the vocabulary

    // Its fused form (the profile's, --cross-entropy-loss-fusion): the upcast stored with
    // the max (2 + 4 B), −= max and exp with their sum (4 + 4 B), /= sum (4 + 4 B); 3
    // kernels over the logits and 2 per-token ones. Backward the softmax scaled in place
    // and cast to bf16 in one kernel (4 + 4 + 2 B) after the targets' update: 2 kernels.
    w = micro_batch_workload(llama3_8b_on_h100(megatron_core_profile, 1, false));
    CHECK(loss_op(w, step_part::forward) == std::pair{tokens * vocab * (6 + 16), 5.0});
    CHECK(loss_op(w, step_part::backward) == std::pair{tokens * vocab * 10, 2.0});
    // fp32 logits: the max reads them (4 B), no copy; the bf16 gradient is cast back to
    // fp32 by autograd (2 + 4 B, one more kernel).
    core.framework.loss = loss_implementation::vocab_parallel_fused;
    core.precision = recipe(precision_kind::fp32);
    w = micro_batch_workload(core);
    CHECK(loss_op(w, step_part::forward) == std::pair{tokens * vocab * 20, 5.0});
    CHECK(loss_op(w, step_part::backward) == std::pair{tokens * vocab * 16, 3.0});
    // With tp 2: the max all-reduced alone, the target's logit and the sum of exponentials
    // in one: 2 all-reduces of 1.5 fp32 values per token on average.
    const auto fused_tp = head_collectives(micro_batch_workload(llama3_8b_on_h100(megatron_core_profile, 2, true)));
    REQUIRE_FALSE(fused_tp.empty());
    CHECK(fused_tp[0] == std::tuple{std::string("loss_all_reduce"), collective::all_reduce, tokens * 6, 2.0});

    // PyTorch's cross_entropy (the Hugging Face Trainer): the upcast, log_softmax's 3 reads
    // and a write, nll_loss; backward nll's zero fill, log_softmax's backward (3 reads,
    // a write) and the cast back.
    training_setup hf = llama3_8b_on_h100(pytorch_eager_profile, 1, false);
    w = micro_batch_workload(hf);
    CHECK(loss_op(w, step_part::forward) == std::pair{tokens * vocab * (6 + 16), 3.0});
    CHECK(loss_op(w, step_part::backward) == std::pair{tokens * vocab * (4 + 16 + 6), 4.0});
    // fp32 logits need no upcast, nor a cast back.
    hf.precision = recipe(precision_kind::fp32);
    w = micro_batch_workload(hf);
    CHECK(loss_op(w, step_part::forward) == std::pair{tokens * vocab * 16, 2.0});
    CHECK(loss_op(w, step_part::backward) == std::pair{tokens * vocab * 20, 3.0});

    // torchtitan with tp 2: DTensor's loss_parallel over the vocabulary shard (8 fp32
    // passes each way), three all-reduces of one fp32 value per token; compiled, the
    // 16-bit row read twice forward, once and the gradient written backward.
    training_setup titan = llama3_8b_on_h100(torchtitan_profile, 2, true);
    w = micro_batch_workload(titan);
    const double shard = tokens * vocab / 2;
    CHECK(loss_op(w, step_part::forward) == std::pair{shard * (6 + 32), 21.0});
    CHECK(loss_op(w, step_part::backward) == std::pair{shard * (32 + 6), 16.0});
    titan.framework.compiled = true;
    w = micro_batch_workload(titan);
    CHECK(loss_op(w, step_part::forward) == std::pair{shard * 4, 2.0});
    CHECK(loss_op(w, step_part::backward) == std::pair{shard * 4, 1.0});
    const auto c = head_collectives(w);
    REQUIRE(c.size() == 5);  // and the head's and the embedding's (the next test)
    CHECK(c[0] == std::tuple{std::string("loss_all_reduce"), collective::all_reduce, tokens * 4, 3.0});
}

TEST_CASE("the head's input and the embedding's output cross the tensor-parallel ranks", "[workload]") {
    const double tokens = 4096, hidden = 4096;
    using entry = std::tuple<std::string, collective, double, double>;
    // Sequence parallelism, rotary positions (Megatron-Core reduce-scatters the
    // embedding): the head's input gathered, gathered again in backward for the weight
    // gradient, and its gradient reduce-scattered; the embedding's output reduce-scattered
    // and its gradient gathered, b·s·h bf16 each; the unfused loss's three all-reduces.
    // pp = 1: the stage holds both ends.
    training_setup with_sp = llama3_8b_on_h100(megatron_core_profile, 4, true);
    with_sp.framework.loss = loss_implementation::vocab_parallel;
    const stage_workload sp = micro_batch_workload(with_sp);
    const double activation = tokens * hidden * 2;
    const std::vector<entry> expected{
        {"loss_all_reduce", collective::all_reduce, tokens * 4, 3.0},
        {"head_input_all_gather", collective::all_gather, activation, 2.0},
        {"head_input_gradient_reduce_scatter", collective::reduce_scatter, activation, 1.0},
        {"embedding_reduce_scatter", collective::reduce_scatter, activation, 1.0},
        {"embedding_gradient_all_gather", collective::all_gather, activation, 1.0}};
    CHECK(head_collectives(sp) == expected);
    // A frozen head (adapters) computes no weight gradient: gathered once.
    training_setup frozen = with_sp;
    frozen.finetune = {.mode = finetune_mode::lora};
    frozen.framework.finetune_modes = enum_set<finetune_mode>::all();  // a profile that trains adapters
    std::vector<entry> once = expected;
    std::get<3>(once[1]) = 1.0;
    once.pop_back();  // nor the embedding's, whose gradient gather is for its weights
    CHECK(head_collectives(micro_batch_workload(frozen)) == once);
    // One Python call each: 3 + 1 + 1 forward, 2 + 1 backward.
    double calls_forward = 0, calls_backward = 0;
    for (const auto& h : sp.host)
        if (!of_layers(h)) (h.part == step_part::forward ? calls_forward : calls_backward) += h.op.count;
    CHECK(calls_forward == 5);
    CHECK(calls_backward == 3);

    // Learned positions (VocabParallelEmbedding's all-reduce, then the scatter to the
    // sequence-parallel region, whose backward gathers), and no sequence parallelism
    // (the head's gradient all-reduced; nothing gathered).
    training_setup learned = with_sp;
    learned.model.positions = position_kind::learned;
    std::vector<entry> all_reduced = expected;
    all_reduced[3] = {"embedding_all_reduce", collective::all_reduce, activation, 1.0};
    CHECK(head_collectives(micro_batch_workload(learned)) == all_reduced);
    training_setup without_sp = llama3_8b_on_h100(megatron_core_profile, 4, false);
    without_sp.framework.loss = loss_implementation::vocab_parallel;
    const stage_workload no_sp = micro_batch_workload(without_sp);
    CHECK(head_collectives(no_sp) ==
          std::vector<entry>{{"loss_all_reduce", collective::all_reduce, tokens * 4, 3.0},
                             {"head_input_gradient_all_reduce", collective::all_reduce, activation, 1.0},
                             {"embedding_all_reduce", collective::all_reduce, activation, 1.0}});
}
