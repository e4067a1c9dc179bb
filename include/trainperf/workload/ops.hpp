// The operations a training step is made of, as data: GEMMs, memory-bound kernels,
// collectives over groups of ranks, and transfers and work on the host. The workload
// (workload/) produces them; the cost models (cost/kernel_model.hpp, cost/comm.hpp) price
// them; the schedule (cost/step.hpp) orders them. Nothing here knows how long an op takes.
#pragma once

#include <array>
#include <cstddef>
#include <new>
#include <string_view>
#include <type_traits>

#include "../core/attributes.hpp"
#include "../core/dtype.hpp"
#include "../core/enum_names.hpp"
#include "../core/error.hpp"
#include "../core/limits.hpp"
#include "../core/units.hpp"
#include "../spec/attention_kernels.hpp"

namespace trainperf {

// ---- GEMMs -------------------------------------------------------------------------

// One (strided-batched) GEMM: batch × [m×k]·[k×n] → [m×n].
struct gemm_shape {
    double m = 0, n = 0, k = 0;
    double batch = 1;
    dtype math = dtype::bf16;     // tensor-core mode; storage is fp32 for tf32/fp32
};

constexpr flops gemm_flops(const gemm_shape& g) { return flops_of(2.0 * g.m * g.n * g.k * g.batch); }

// Each operand read once and the output written once (a quantized operand's scales,
// 1/32 to 1/16 B per value, left out). An FP8 or FP4 GEMM returns its output in 16 bits (NVIDIA Transformer Engine, docs/features/low_precision_training,
// @d0067d0d: activations, dgrad and wgrad come back in high precision).
constexpr bytes gemm_bytes(const gemm_shape& g) {
    const double out = quantized_format(g.math) ? size_of(dtype::bf16) : size_of(g.math);
    return bytes_of(((g.m * g.k + g.k * g.n) * size_of(g.math) + g.m * g.n * out) * g.batch);
}

// Each size between 1 and 2^31 (limits::max_op_size).
constexpr void validate(const gemm_shape& g) {
    constexpr double max_size = limits::max_op_size;
    require(g.m >= 1 && g.m <= max_size, "gemm.m", g.m, "must be between 1 and 2^31");
    require(g.n >= 1 && g.n <= max_size, "gemm.n", g.n, "must be between 1 and 2^31");
    require(g.k >= 1 && g.k <= max_size, "gemm.k", g.k, "must be between 1 and 2^31");
    require(g.batch >= 1 && g.batch <= max_size, "gemm.batch", g.batch, "must be between 1 and 2^31");
}

// Says that a shape passes validate already: a GEMM of a validated setup's workload
// (workload/stage.hpp for_each_stage_op after validate(training_setup), whose checks bound
// every size the workload derives; tests/test_properties.cpp holds every GEMM of random
// valid setups to validate). The cost models price such a shape without checking it
// again; shapes from anywhere else are checked where they are priced.
struct checked_shape_t {
    explicit constexpr checked_shape_t() = default;
};
inline constexpr checked_shape_t checked_shape{};

// dgrad and wgrad of C[m×n] = A[m×k]·B[k×n]: dA = dC·Bᵀ is m×k over n; dB = Aᵀ·dC is k×n over m.
constexpr gemm_shape dgrad_of(const gemm_shape& g) { return {g.m, g.k, g.n, g.batch, g.math}; }
constexpr gemm_shape wgrad_of(const gemm_shape& g) { return {g.k, g.n, g.m, g.batch, g.math}; }

// ---- Where an op sits --------------------------------------------------------------

enum class op_phase { forward, backward_data, backward_weight, backward };

template <>
struct enum_names<op_phase> {
    static constexpr std::array<enum_name<op_phase>, 4> table{{{op_phase::forward, "forward"},
                                                               {op_phase::backward_data, "dgrad"},
                                                               {op_phase::backward_weight, "wgrad"},
                                                               {op_phase::backward, "backward"}}};
};

// Where an op sits in the layer; selective recompute repeats the attention core.
enum class op_region { attention_core, other };

template <>
struct enum_names<op_region> {
    static constexpr std::array<enum_name<op_region>, 2> table{
        {{op_region::attention_core, "attention-core"}, {op_region::other, "other"}}};
};

// Which block of a layer an op belongs to (the attention block: its norm, the
// projections, the core, the residual; the MLP block likewise); other: embedding,
// head, loss, optimizer.
enum class layer_block { attention, mlp, other };

template <>
struct enum_names<layer_block> {
    static constexpr std::array<enum_name<layer_block>, 3> table{
        {{layer_block::attention, "attention"}, {layer_block::mlp, "mlp"}, {layer_block::other, "other"}}};
};

struct gemm_op {
    std::string_view name;
    gemm_shape shape;
    op_phase phase = op_phase::forward;
    op_region region = op_region::other;
    layer_block block = layer_block::other;
};

// The attention core as one fused kernel (spec/attention_kernels.hpp): `batch` problems
// (micro-batch × heads on this rank) of seq_q queries against seq_kv keys of head size
// head_dim, the s_q × s_kv scores never written to memory. Forward, or backward (which
// recomputes the scores from the saved log-sum-exp).
struct attention_op {
    std::string_view name;
    double batch = 1, seq_q = 1, seq_kv = 1, head_dim = 64;
    bool causal = false;
    dtype math = dtype::bf16;
    op_phase phase = op_phase::forward;   // forward or backward
    attention_kernel kernel = attention_kernel::flash2;  // what the software prefers
    layer_block block = layer_block::attention;
};

// FLOPs as the FlashAttention benchmarks count them: 4·batch·s_q·s_kv·d forward,
// halved under a causal mask, backward 2.5 × forward.
constexpr flops attention_flops(const attention_op& a) {
    const double forward = 4.0 * a.batch * a.seq_q * a.seq_kv * a.head_dim * (a.causal ? 0.5 : 1.0);
    return flops_of(a.phase == op_phase::forward ? forward : 2.5 * forward);
}

// HBM traffic: forward reads Q, K, V and writes O and the fp32 log-sum-exp; backward
// reads Q, K, V, O, dO and the log-sum-exp, writes dQ, dK, dV, and reads and writes
// the fp32 row sums of dO∘O (its preprocessing kernel).
constexpr bytes attention_bytes(const attention_op& a) {
    const double e = size_of(a.math), f32 = size_of(dtype::fp32);
    const double q = a.batch * a.seq_q * a.head_dim * e, kv = a.batch * a.seq_kv * a.head_dim * e;
    const double rows = a.batch * a.seq_q * f32;
    if (a.phase == op_phase::forward) return bytes_of(2 * q + 2 * kv + rows);
    return bytes_of(4 * q + 4 * kv + 3 * rows);
}

constexpr void validate(const attention_op& a) {
    constexpr double max_size = limits::max_op_size;
    require(a.batch >= 1 && a.batch <= max_size, "attention.batch", a.batch, "must be between 1 and 2^31");
    require(a.seq_q >= 1 && a.seq_q <= max_size, "attention.seq_q", a.seq_q, "must be between 1 and 2^31");
    require(a.seq_kv >= 1 && a.seq_kv <= max_size, "attention.seq_kv", a.seq_kv, "must be between 1 and 2^31");
    require(a.head_dim >= 1 && a.head_dim <= limits::max_attention_head_dim, "attention.head_dim", a.head_dim,
            "must be between 1 and 4096");
    require(a.phase == op_phase::forward || a.phase == op_phase::backward, "attention.phase", to_string(a.phase),
            "must be forward or backward");
}

// A memory-bound kernel (elementwise, normalisation, softmax, optimizer update):
// `moved` bytes read plus written over `launches` kernel launches. A cast converts a
// tensor to another format (autocast); its backward converts the gradient back,
// moving the same bytes. `backward` says what a layer op's backward moves
// (workload/layer.hpp backward_of): the framework's elementwise ratio of its bytes, the
// same bytes (a cast; a rotation, whose backward rotates the gradient back), nothing (a
// copy into a contiguous layout: its gradient passes through as a view), or only a
// backward (a split into views runs no kernel, its backward copies the gradients into
// one tensor: `moved` and `launches` are the backward's; has_forward_kernel).
enum class op_backward : unsigned char { elementwise, mirrored, none, only };

struct memory_op {
    std::string_view name;
    bytes moved = bytes_of(0.0);
    op_phase phase = op_phase::forward;
    op_region region = op_region::other;
    double launches = 1;
    layer_block block = layer_block::other;
    bool cast = false;
    op_backward backward = op_backward::elementwise;
};

// Whether a layer's memory op runs a kernel in forward (every one but a backward-only op).
constexpr bool has_forward_kernel(const memory_op& op) { return op.backward != op_backward::only; }

// ---- Collectives -------------------------------------------------------------------

// all_to_all: every rank sends a part of its buffer to every other (NCCL's send/recv to
// each peer in one group call; MoE token dispatch).
enum class collective { all_reduce, reduce_scatter, all_gather, p2p, all_to_all };

template <>
struct enum_names<collective> {
    static constexpr std::array<enum_name<collective>, 5> table{{{collective::all_reduce, "all-reduce"},
                                                                 {collective::reduce_scatter, "reduce-scatter"},
                                                                 {collective::all_gather, "all-gather"},
                                                                 {collective::p2p, "p2p"},
                                                                 {collective::all_to_all, "all-to-all"}}};
};

// How the ranks of a communication group sit on the nodes: `size` ranks, of which
// `per_node` share each node the group spans. per_node == size: the group stays in
// one node (intra-node link); per_node == 1: every member is in its own node, so all
// traffic crosses the inter-node network. A node here is an NVLink domain (an NVL72
// rack spans 18 trays): what the intra-node link joins.
struct rank_group {
    int size = 1;
    int per_node = 1;

    constexpr int nodes() const { return (size + per_node - 1) / per_node; }
    constexpr bool inside_one_node() const { return per_node >= size; }
};

constexpr void validate(const rank_group& g) {
    require(g.size >= 1, "group.size", g.size, "must be at least 1");
    require(g.per_node >= 1 && g.per_node <= g.size, "group.per_node", g.per_node,
            "must be between 1 and the group size");
}

// One collective over a group; `size` is the full buffer (an all-gather's gathered
// buffer, a reduce-scatter's input, what each rank of an all-to-all sends in all, its
// own part included), as nccl-tests counts it. `phase`: the pass it runs
// in, where an overlap rule needs it (context parallelism's KV ring, cost/step.hpp).
struct collective_op {
    std::string_view name;
    collective kind = collective::all_reduce;
    bytes size = bytes_of(0.0);
    rank_group group{};
    op_phase phase = op_phase::forward;
    // An all-to-all that sends each destination node one copy over the network and
    // forwards the copies inside it over NVLink (DeepEP's normal kernels): the share of
    // `size` that crosses the network. < 0: a plain all-to-all, 1/n of the buffer to
    // every peer.
    double network_share = -1;
    // The SMs its kernels hold (0: NCCL's, one per channel: cost/comm_sms.hpp).
    int sms = 0;
};

enum class transfer_direction { to_host, to_device };

template <>
struct enum_names<transfer_direction> {
    static constexpr std::array<enum_name<transfer_direction>, 2> table{
        {{transfer_direction::to_host, "to-host"}, {transfer_direction::to_device, "to-device"}}};
};

// A copy between a GPU and its host over the GPU's host link (PCIe, C2C), to or from
// page-locked (pinned) host memory, or from pageable memory, which the driver stages
// through a pinned buffer of its own (slower: spec/host.hpp pageable_copy_efficiency).
struct host_transfer_op {
    std::string_view name;
    bytes size = bytes_of(0.0);
    transfer_direction direction = transfer_direction::to_host;
    bool pageable = false;
};

// Work on the host CPU (an offloaded optimizer step): a SIMD loop over `elements`
// fp32 values that issues `simd_instructions` vector instructions per register of
// values (spec/host.hpp simd_lanes of them) and moves `moved` bytes to and from DRAM.
struct host_compute_op {
    std::string_view name;
    double elements = 0;
    double simd_instructions = 0;
    bytes moved = bytes_of(0.0);
};

// ---- Host-side issue work (eager mode) --------------------------------------------

// What the host does to issue a step's GPU work in eager mode (Python, PyTorch's
// dispatcher, autograd): every kernel a GPU op launches is a call too (counted from
// the GPU ops); these are the calls that launch nothing of their own.
enum class host_call {
    view,            // an op from Python that launches no kernel (view, permute, split, slicing)
    module,          // one nn.Module call with the model's Python around its ops
    backward_node,   // one node the autograd engine runs in backward (its kernels counted apart)
    function,        // a Python torch.autograd.Function's apply (or a scripted/compiled function call)
    function_backward,  // that Function's backward, Python run by the autograd engine
    collective,      // a torch.distributed collective called from Python (the NCCL launch included)
    rng_state,       // one get or set of a generator's state (RNG tracker forks, checkpoints)
    library_module,  // a fused-library module's own bookkeeping in forward (Transformer Engine)
    library_module_backward,  // and in its backward
    gradient_hook,   // a Python hook the data-parallel wrapper runs per parameter gradient
    graph_launch,    // one replay of a captured CUDA graph (cudaGraphLaunch), or its input copy
    compiled_graph,  // one call of a torch.compile'd region (guards, its Function, the wrapper)
    dispatch_mode,   // one op through a Python TorchDispatchMode (op-level checkpointing's policy)
};

template <>
struct enum_names<host_call> {
    static constexpr std::array<enum_name<host_call>, 13> table{
        {{host_call::view, "view"},
         {host_call::module, "module"},
         {host_call::backward_node, "backward-node"},
         {host_call::function, "function"},
         {host_call::function_backward, "function-backward"},
         {host_call::collective, "collective"},
         {host_call::rng_state, "rng-state"},
         {host_call::library_module, "library-module"},
         {host_call::library_module_backward, "library-module-backward"},
         {host_call::gradient_hook, "gradient-hook"},
         {host_call::graph_launch, "graph-launch"},
         {host_call::compiled_graph, "compiled-graph"},
         {host_call::dispatch_mode, "dispatch-mode"}}};
};

struct host_op {
    std::string_view name;
    host_call call = host_call::view;
    double count = 0;
    op_phase phase = op_phase::forward;
};

// ---- Op lists ----------------------------------------------------------------------

// A fixed-capacity list: workloads are built without heap allocation, so the
// planner can build and price millions of them. Exceeding the capacity is a bug in
// the workload, reported as an error rather than undefined behaviour. Only the slots
// in use hold ops: the others are left unconstructed, and a copy copies the ops it
// holds, so a short list costs what it holds, not its capacity; a constant evaluation,
// which may read no object whose lifetime has not begun, constructs every slot at once.
template <class Op, std::size_t Capacity>
class op_list {
    static_assert(std::is_trivially_destructible_v<Op>, "an op is plain data: its slots are never destroyed");
    static_assert(Capacity > 0, "a list holds at least one op");

public:
    constexpr op_list() : slots_(std::is_constant_evaluated() ? slots(constructed) : slots()) {}
    constexpr op_list(const op_list& o) : op_list() {
        for (const Op& op : o) place(op);
    }
    constexpr op_list& operator=(const op_list& o) {
        if (this != &o) {
            size_ = 0;
            for (const Op& op : o) place(op);
        }
        return *this;
    }

    TRAINPERF_ALWAYS_INLINE constexpr void push_back(const Op& op) {
        require(size_ < Capacity, "op_list.size", size_, "exceeds the list's capacity");
        place(op);
    }
    constexpr std::size_t size() const { return size_; }
    constexpr bool empty() const { return size_ == 0; }
    constexpr const Op& operator[](std::size_t i) const { return slots_.items[i]; }  // i < size()
    constexpr const Op* begin() const { return slots_.items; }
    constexpr const Op* end() const { return slots_.items + size_; }
    constexpr Op* begin() { return slots_.items; }
    constexpr Op* end() { return slots_.items + size_; }

private:
    static constexpr struct constructed_t {} constructed{};
    union slots {
        constexpr slots() {}                                  // unconstructed
        constexpr explicit slots(constructed_t) : items{} {}  // every slot a default op
        Op items[Capacity];
    };

    // The next slot, which exists (size_ < Capacity).
    TRAINPERF_ALWAYS_INLINE constexpr void place(const Op& op) {
        if (std::is_constant_evaluated())
            slots_.items[size_] = op;
        else
            ::new (static_cast<void*>(slots_.items + size_)) Op(op);
        ++size_;
    }

    slots slots_;
    std::size_t size_ = 0;
};

// ---- Ops of a stage ----------------------------------------------------------------

// Which part of a micro-batch's time an op adds to.
// context_parallel: the KV ring of context parallelism, which overlaps the attention
// core of its pass (cost/stage_pricer.hpp).
// expert_parallel: an MoE layer's token dispatch and combine (workload/moe_layer.hpp).
enum class step_part { forward, backward, tensor_parallel, pipeline, context_parallel, expert_parallel };

template <>
struct enum_names<step_part> {
    static constexpr std::array<enum_name<step_part>, 6> table{
        {{step_part::forward, "forward"}, {step_part::backward, "backward"},
         {step_part::tensor_parallel, "tensor-parallel"}, {step_part::pipeline, "pipeline"},
         {step_part::context_parallel, "context-parallel"}, {step_part::expert_parallel, "expert-parallel"}}};
};

// An op of the stage: `count` times per micro-batch, and `recomputed` more times when
// backward rebuilds what was not kept (recompute repeats forward ops).
template <class Op>
struct stage_op {
    Op op{};
    double count = 1;
    double recomputed = 0;
    step_part part = step_part::forward;
};

}  // namespace trainperf
