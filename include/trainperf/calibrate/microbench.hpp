// Single-GPU eager micro-benchmarks predicted by the engine: one matmul, one
// elementwise op, one module, one block or one whole layer called from Python, the way
// a micro-benchmark notebook times them (torch.utils.benchmark: the statement run
// back to back, so the GPU's queue and the host's issue overlap). The ops come from
// the workload (workload/) and are priced by the step's own pricer (cost/stage_pricer.hpp):
// each pass takes the larger of the GPU's time and the host's.
#pragma once

#include <algorithm>
#include <array>
#include <string_view>

#include "../core/dtype.hpp"
#include "../core/enum_names.hpp"
#include "../core/error.hpp"
#include "../core/units.hpp"
#include "../cost/kernel_model.hpp"
#include "../cost/step.hpp"
#include "../spec/framework.hpp"
#include "../spec/hardware.hpp"
#include "../spec/kernel_params.hpp"
#include "../spec/model.hpp"
#include "../workload/ops.hpp"
#include "../workload/step_ops.hpp"

namespace trainperf {

// What a micro-benchmark times.
enum class bench_kind {
    matmul,                  // a @ b on square n×n tensors
    elementwise,             // a * 1.2 over n fp32 elements
    linear,                  // the FFN's first nn.Linear (h -> ffn) on X[b, s, h]
    linear_activation,       // the same and its activation (BertIntermediate)
    mlp_block,               // the MLP block: both FFN GEMMs, activation, dropout, residual, norm
    attention_block,         // the attention block: projections, core, output, dropout, residual, norm
    layer_forward,           // one layer(X)
    layer_forward_backward,  // layer(X)[0].sum().backward()
};

template <>
struct enum_names<bench_kind> {
    static constexpr std::array<enum_name<bench_kind>, 8> table{{{bench_kind::matmul, "matmul"},
                                                                {bench_kind::elementwise, "elementwise"},
                                                                {bench_kind::linear, "linear"},
                                                                {bench_kind::linear_activation, "linear-activation"},
                                                                {bench_kind::mlp_block, "mlp-block"},
                                                                {bench_kind::attention_block, "attention-block"},
                                                                {bench_kind::layer_forward, "layer-forward"},
                                                                {bench_kind::layer_forward_backward,
                                                                 "layer-forward-backward"}}};
};

struct bench_case {
    bench_kind kind = bench_kind::matmul;
    dtype storage = dtype::fp16;  // the tensors' dtype (fp16 after .half(), or fp32)
    double n = 0;                 // matmul size, or elementwise elements
    int batch = 0, seq = 0;       // module and layer benchmarks: X[batch, seq, hidden]
    transformer_config model{};
};

// The system a benchmark runs on: one GPU, its kernel parameters, the host's bare op,
// the framework profile (its host costs and the code it runs), and whether fp32
// matmuls run on TF32 tensor cores (NVIDIA's PyTorch containers turn that on with
// TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1; upstream PyTorch 1.12+ leaves it off).
struct bench_system {
    gpu_spec gpu{};
    kernel_params kernels{};
    seconds eager_op_time = microseconds_of(5.0);
    framework_profile framework = pytorch_eager_profile;
    bool fp32_matmul_on_tf32 = false;
};

// The work a benchmark reports its rate over, in the notebook's conventions: 2n³ for
// a matmul, bytes read and written (8n) for the elementwise op, 8bsh² for the Linear,
// 16bsh² for the MLP block, 8bsh² + 4bhs² for the attention block and 24bsh² + 4bhs²
// for a layer forward (three times that with backward; no causal halving).
inline double bench_work(const bench_case& c) {
    const double b = c.batch, s = c.seq, h = c.model.hidden;
    switch (c.kind) {
        case bench_kind::matmul: return 2 * c.n * c.n * c.n;
        case bench_kind::elementwise: return 8 * c.n;
        case bench_kind::linear:
        case bench_kind::linear_activation: return 8 * b * s * h * h;
        case bench_kind::mlp_block: return 16 * b * s * h * h;
        case bench_kind::attention_block: return 8 * b * s * h * h + 4 * b * h * s * s;
        case bench_kind::layer_forward: return 24 * b * s * h * h + 4 * b * h * s * s;
        case bench_kind::layer_forward_backward: return 3 * (24 * b * s * h * h + 4 * b * h * s * s);
    }
    return 0;
}

struct bench_prediction {
    seconds time = seconds_of(0.0);   // the larger of the two, per pass
    seconds gpu = seconds_of(0.0);
    seconds host = seconds_of(0.0);
};

namespace bench_detail {

inline void validate(const bench_case& c) {
    if (c.kind == bench_kind::matmul || c.kind == bench_kind::elementwise) {
        require(c.n >= 1 && c.n <= 1e9, "n", c.n, "must be between 1 and 10^9");
        return;
    }
    trainperf::validate(c.model);
    require(c.batch >= 1 && c.batch <= 1 << 20, "batch", c.batch, "must be between 1 and 2^20");
    require(c.seq >= 1 && c.seq <= 1 << 20, "seq", c.seq, "must be between 1 and 2^20");
}

// Whether an op of a layer belongs to what the benchmark calls.
inline bool selected(bench_kind k, layer_block block, std::string_view name) {
    switch (k) {
        case bench_kind::linear: return name == "ffn_up";
        case bench_kind::linear_activation:  // the activation op as the workload names it
            return name == "ffn_up" || name == "gelu" || name == "gelu_new";
        case bench_kind::mlp_block: return block == layer_block::mlp;
        case bench_kind::attention_block: return block == layer_block::attention;
        default: return true;
    }
}

}  // namespace bench_detail

// One benchmark statement, repeated: its GPU time, the host's time to issue it, and
// the larger of the two.
inline bench_prediction predict_bench(const bench_case& c, const bench_system& sys) {
    bench_detail::validate(c);
    const auto& fw = sys.framework;
    stage_pricer pricer(sys.gpu, sys.kernels, nullptr, fw.host, sys.eager_op_time);
    // A bare statement from the benchmark's Python: no module, no autograd. Its host
    // cost is one bare op, a GEMM's `gemm` times that.
    eager_host_costs bare = fw.host;
    bare.op = 1.0;
    if (c.kind == bench_kind::matmul) {
        dtype math = c.storage;
        if (math == dtype::fp32 && sys.fp32_matmul_on_tf32 && sys.gpu.supports(dtype::tf32)) math = dtype::tf32;
        stage_pricer bare_pricer(sys.gpu, sys.kernels, nullptr, bare, sys.eager_op_time);
        bare_pricer(stage_op<gemm_op>{{"matmul", {c.n, c.n, c.n, 1, math}}, 1, 0, step_part::forward});
        const auto t = bare_pricer.result();
        return {t.forward, t.gpu_forward, t.host_forward};
    }
    if (c.kind == bench_kind::elementwise) {
        stage_pricer bare_pricer(sys.gpu, sys.kernels, nullptr, bare, sys.eager_op_time);
        bare_pricer(stage_op<memory_op>{{"scale", bytes_of(8 * c.n)}, 1, 0, step_part::forward});
        const auto t = bare_pricer.result();
        return {t.forward, t.gpu_forward, t.host_forward};
    }

    const auto& m = c.model;
    const model_code code = code_run(m, fw);
    // X[b, s, h] is the call's input: no padding mask, no gradient of its own.
    const layer_context ctx{.micro_batch = c.batch, .seq = c.seq, .tp = 1, .sp = false, .math = c.storage,
                            .activations = c.storage, .code = code, .padding_mask = false};
    const bool backward = c.kind == bench_kind::layer_forward_backward;
    const auto wanted = [&](layer_block block, std::string_view name) {
        return bench_detail::selected(c.kind, block, name);
    };
    const auto forward = layer_forward_gemms(m, ctx);
    double launches = 0;
    for (const auto& g : forward)
        if (runs_as_gemm(g, fw) && wanted(g.block, g.name)) {
            pricer(stage_op<gemm_op>{g, 1, 0, step_part::forward});
            launches += 1;
        }
    if (backward)
        for (const auto& g : backward_gemms_of(forward)) {
            if (!runs_as_gemm(g, fw)) continue;
            // Post-norm code (BERT) projects X itself first: X needs no gradient, so
            // autograd skips the data gradient of Q, K and V.
            const bool input_gradient = g.phase == op_phase::backward_data && code == model_code::bert &&
                                        (g.name == "q" || g.name == "k" || g.name == "v");
            if (!input_gradient) pricer(stage_op<gemm_op>{g, 1, 0, step_part::backward});
        }
    if (fw.flash_attention && wanted(layer_block::attention, "flash_attention")) {
        const fused_attention_ops core = attention_core_ops(m, ctx, fw);
        pricer(stage_op<attention_op>{core.forward, 1, 0, step_part::forward});
        launches += 1;
        if (backward) pricer(stage_op<attention_op>{core.backward, 1, 0, step_part::backward});
    }
    for_each_layer_forward_memory_op(m, ctx, fw, [&](const memory_op& op) {
        if (!wanted(op.block, op.name)) return;
        if (has_forward_kernel(op)) {
            pricer(stage_op<memory_op>{op, 1, 0, step_part::forward});
            launches += op.launches;
        }
        if (backward) pricer(stage_op<memory_op>{backward_of(op, fw), 1, 0, step_part::backward});
    });

    // Module calls and views of what is called.
    const layer_host_calls per_block = host_calls_per_layer(code);
    host_calls calls{};
    switch (c.kind) {
        case bench_kind::linear: calls = {0, 1}; break;                 // the Linear
        case bench_kind::linear_activation: calls = {0, 3}; break;      // the block, its Linear, the activation
        case bench_kind::mlp_block: calls = per_block.mlp; break;
        case bench_kind::attention_block: calls = per_block.attention; break;
        default: calls = per_block.total(); break;
    }
    pricer(stage_op<host_op>{{"views", host_call::view, calls.views}, 1, 0, step_part::forward});
    pricer(stage_op<host_op>{{"modules", host_call::module, calls.modules}, 1, 0, step_part::forward});
    if (backward) {
        const double tokens = double(c.batch) * c.seq;
        const double a = size_of(c.storage);
        const double tensors = layer_parameter_tensors(m, code);
        // `[0].sum()` and its backward (an expand of the ones): one pass over X each.
        pricer(stage_op<memory_op>{{"sum", bytes_of(tokens * m.hidden * a)}, 1, 0, step_part::forward});
        pricer(stage_op<memory_op>{{"sum", bytes_of(tokens * m.hidden * a), op_phase::backward}, 1, 0,
                                   step_part::backward});
        // The benchmark never zeroes the gradients: every backward adds into them, one
        // kernel per parameter tensor reading both and writing one.
        pricer(stage_op<memory_op>{{"accumulate_grad", bytes_of(3 * layer_parameters(m) * a), op_phase::backward,
                                    op_region::other, tensors},
                                   1, 0, step_part::backward});
        pricer(stage_op<host_op>{{"autograd_nodes", host_call::backward_node, launches + 1 + calls.views + tensors,
                                  op_phase::backward},
                                 1, 0, step_part::backward});
    }
    const auto t = pricer.result();
    return {t.forward + t.backward, t.gpu_forward + t.gpu_backward, t.host_forward + t.host_backward};
}

}  // namespace trainperf
