// trainperf-cublaslt: times a transformer layer's training GEMMs (and a calibration
// sweep) with cuBLASLt, checks results against a host reference, compares each time
// with trainperf's kernel model and writes one JSON file (benchmarks/data/README.md).
// Plain C++20 against the CUDA runtime and cuBLASLt; exits 77 when no GPU is present.
#include <cublasLt.h>
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <trainperf/spec/gpu_catalog.hpp>
#include <trainperf/io/json.hpp>
#include <trainperf/cost/kernel_model.hpp>
#include <trainperf/spec/model_catalog.hpp>

#include "gemm_list.hpp"
#include "inputs.hpp"
#include "report.hpp"

namespace {

using namespace cublaslt_harness;
using trainperf::dtype;

constexpr int exit_skipped = 77;  // ctest's SKIP_RETURN_CODE
constexpr int exit_usage = 2;

struct usage_error : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// A failed CUDA runtime call leaves the context unusable: the run stops. A failed
// cuBLASLt call (say, a shape it does not support) fails that GEMM only.
struct lt_error : std::runtime_error {
    using std::runtime_error::runtime_error;
};

void check_cuda(cudaError_t e, const char* call, int line) {
    if (e != cudaSuccess)
        throw std::runtime_error(std::string(call) + " (line " + std::to_string(line) +
                                 "): " + cudaGetErrorName(e) + ": " + cudaGetErrorString(e));
}
void check_lt(cublasStatus_t s, const char* call, int line) {
    if (s != CUBLAS_STATUS_SUCCESS)
        throw lt_error(std::string(call) + " (line " + std::to_string(line) + "): " + cublasLtGetStatusName(s) +
                       ": " + cublasLtGetStatusString(s));
}
#define CUDA_CHECK(call) check_cuda((call), #call, __LINE__)
#define LT_CHECK(call) check_lt((call), #call, __LINE__)

// ---------------------------------------------------------------------------------
// Options

struct options {
    std::vector<layer_request> layers;
    bool sweep = false;
    std::string sweep_size = "full";
    dtype math = dtype::bf16;
    std::string gpu;            // catalog name; default: from the device's name
    std::string calibration;    // calibration file for the predictions
    std::string out = "trainperf-cublaslt.json";
    int warmup = 10;
    int repetitions = 50;
    int check_samples = 16;
    bool verbose = false;
    // --layer custom,...: sizes of a model not in the catalog
    int hidden = 0, heads = 0, kv_heads = 0, ffn = 0;
    bool swiglu = false;
    std::string command;
};

const char* const usage_text =
    "usage: trainperf-cublaslt [--layer MODEL,BATCH,SEQ[,TP]]... [--sweep] [options]\n"
    "  --layer MODEL,BATCH,SEQ[,TP]  one layer's forward+backward GEMMs per tensor-parallel rank;\n"
    "                                MODEL from the catalog, or 'custom' with --hidden/--heads/--ffn\n"
    "  --sweep                       the calibration grid of GEMM shapes\n"
    "  --sweep-size full|small|tiny  grid size (default full)\n"
    "  --dtype bf16|fp16|tf32|fp32   (default bf16; fp32 accumulation throughout)\n"
    "  --gpu NAME                    catalog GPU for predictions (default: from the device name)\n"
    "  --calibration FILE            kernel parameters for predictions (default: the arch's defaults)\n"
    "  --out FILE                    JSON output (default trainperf-cublaslt.json)\n"
    "  --warmup N  --reps N  --check-samples N  --verbose\n"
    "  --hidden H --heads A [--kv-heads K] --ffn F [--swiglu]   sizes for --layer custom,...\n"
    "Exits 77 when no CUDA GPU is present.\n";

int to_int(const std::string& flag, const std::string& v) {
    try {
        std::size_t used = 0;
        const int i = std::stoi(v, &used);
        if (used == v.size() && i >= 0) return i;
    } catch (const std::exception&) {
    }
    throw usage_error(flag + " = " + v + ": must be a non-negative integer");
}

options parse(int argc, char** argv) {
    options o;
    for (int i = 0; i < argc; ++i) {
        if (i > 0) o.command += ' ';
        o.command += argv[i];
    }
    auto value = [&](int& i) -> std::string {
        if (i + 1 >= argc) throw usage_error(std::string(argv[i]) + ": needs a value");
        return argv[++i];
    };
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--help" || a == "-h") {
            std::cout << usage_text;
            std::exit(0);
        } else if (a == "--layer") {
            const std::string v = value(i);
            std::vector<std::string> parts;
            std::stringstream ss(v);
            for (std::string p; std::getline(ss, p, ',');) parts.push_back(p);
            if (parts.size() < 3 || parts.size() > 4)
                throw usage_error("--layer = " + v + ": expected MODEL,BATCH,SEQ[,TP]");
            layer_request r{.model = parts[0], .micro_batch = to_int("--layer batch", parts[1]),
                            .seq = to_int("--layer seq", parts[2]),
                            .tp = parts.size() == 4 ? to_int("--layer tp", parts[3]) : 1};
            o.layers.push_back(r);
        } else if (a == "--sweep") {
            o.sweep = true;
        } else if (a == "--sweep-size") {
            o.sweep_size = value(i);
            o.sweep = true;
        } else if (a == "--dtype") {
            const std::string v = value(i);
            const auto t = trainperf::parse_dtype(v);
            if (!t || (*t != dtype::bf16 && *t != dtype::fp16 && *t != dtype::tf32 && *t != dtype::fp32))
                throw usage_error("--dtype = " + v + ": must be bf16, fp16, tf32 or fp32");
            o.math = *t;
        } else if (a == "--gpu") {
            o.gpu = value(i);
        } else if (a == "--calibration") {
            o.calibration = value(i);
        } else if (a == "--out") {
            o.out = value(i);
        } else if (a == "--warmup") {
            o.warmup = to_int(a, value(i));
        } else if (a == "--reps") {
            o.repetitions = std::max(1, to_int(a, value(i)));
        } else if (a == "--check-samples") {
            o.check_samples = to_int(a, value(i));
        } else if (a == "--verbose") {
            o.verbose = true;
        } else if (a == "--hidden") {
            o.hidden = to_int(a, value(i));
        } else if (a == "--heads") {
            o.heads = to_int(a, value(i));
        } else if (a == "--kv-heads") {
            o.kv_heads = to_int(a, value(i));
        } else if (a == "--ffn") {
            o.ffn = to_int(a, value(i));
        } else if (a == "--swiglu") {
            o.swiglu = true;
        } else {
            throw usage_error("unknown option " + a + "\n" + usage_text);
        }
    }
    if (o.layers.empty() && !o.sweep) throw usage_error(std::string("nothing to run\n") + usage_text);
    return o;
}

trainperf::transformer_config model_for(const options& o, const layer_request& r) {
    if (r.model != "custom") return trainperf::lookup_model(r.model);
    trainperf::transformer_config m{.name = "custom", .layers = 1, .hidden = o.hidden, .heads = o.heads,
                                    .kv_heads = o.kv_heads, .ffn_hidden = o.ffn, .vocab = 1,
                                    .ffn = o.swiglu ? trainperf::ffn_kind::swiglu : trainperf::ffn_kind::gelu};
    trainperf::validate(m);
    return m;
}

// The catalog entry for a device name as the driver reports it. Order matters:
// the more specific names first.
std::optional<std::string> catalog_name_for(const std::string& device) {
    static const std::pair<const char*, const char*> table[] = {
        {"H200", "h200-sxm"},           {"H100 PCIe", "h100-pcie"},
        {"H100", "h100-sxm"},           {"A100-SXM4-80GB", "a100-sxm-80gb"},
        {"A100-SXM4-40GB", "a100-sxm-40gb"}, {"V100-SXM2-32GB", "v100-sxm2-32gb"},
        {"RTX 3090 Ti", "rtx-3090-ti"}, {"RTX 3090", "rtx-3090"},
        {"Orin", "jetson-orin-nx-16gb"}, {"B200", "b200"},
    };
    for (const auto& [needle, name] : table)
        if (device.find(needle) != std::string::npos) return std::string(name);
    return std::nullopt;
}

// ---------------------------------------------------------------------------------
// SM clocks seen while timing, through NVML loaded at run time (the toolkit here
// ships no NVML header; the driver ships libnvidia-ml).

class nvml_clock {
public:
    explicit nvml_clock(int device) {
        lib_ = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
        if (!lib_) return;
        auto init = reinterpret_cast<int (*)()>(dlsym(lib_, "nvmlInit_v2"));
        auto by_bus = reinterpret_cast<int (*)(const char*, void**)>(dlsym(lib_, "nvmlDeviceGetHandleByPciBusId_v2"));
        clock_ = reinterpret_cast<int (*)(void*, int, unsigned*)>(dlsym(lib_, "nvmlDeviceGetClockInfo"));
        char bus[64] = {};
        if (!init || !by_bus || !clock_) return;
        initialised_ = init() == 0;  // nvmlReturn_t: 0 is NVML_SUCCESS
        if (!initialised_ || cudaDeviceGetPCIBusId(bus, sizeof bus, device) != cudaSuccess || by_bus(bus, &device_) != 0)
            device_ = nullptr;
    }
    nvml_clock(const nvml_clock&) = delete;
    nvml_clock& operator=(const nvml_clock&) = delete;
    ~nvml_clock() {
        if (!lib_) return;
        if (auto shutdown = reinterpret_cast<int (*)()>(dlsym(lib_, "nvmlShutdown")); shutdown && initialised_)
            shutdown();
        dlclose(lib_);
    }
    // Current SM clock in MHz (NVML_CLOCK_SM = 1).
    std::optional<double> sm_mhz() const {
        unsigned mhz = 0;
        if (device_ && clock_(device_, 1, &mhz) == 0) return mhz;
        return std::nullopt;
    }

private:
    void* lib_ = nullptr;
    void* device_ = nullptr;   // nvmlDevice_t
    bool initialised_ = false;
    int (*clock_)(void*, int, unsigned*) = nullptr;
};

// ---------------------------------------------------------------------------------
// Device memory

class device_buffer {
public:
    device_buffer() = default;
    device_buffer(const device_buffer&) = delete;
    device_buffer& operator=(const device_buffer&) = delete;
    ~device_buffer() { release(); }
    void release() {
        if (ptr_) cudaFree(ptr_);
        ptr_ = nullptr;
        bytes_ = 0;
    }
    // Returns true when it had to reallocate (contents lost).
    bool reserve(std::size_t bytes) {
        if (bytes <= bytes_) return false;
        release();
        CUDA_CHECK(cudaMalloc(&ptr_, bytes));
        bytes_ = bytes;
        return true;
    }
    unsigned char* data() const { return static_cast<unsigned char*>(ptr_); }
    std::size_t size() const { return bytes_; }

private:
    void* ptr_ = nullptr;
    std::size_t bytes_ = 0;
};

// Pool element i holds stored_value(t, i); grows (and refills) on demand.
class input_pool {
public:
    explicit input_pool(dtype t) : type_(t) {}
    unsigned char* ensure(std::size_t elements) {
        const std::size_t size = storage_bytes(type_);
        if (elements > elements_) {
            const std::size_t want = std::max(elements, elements_ + elements_ / 4);
            buffer_.reserve(want * size);
            const std::size_t chunk = std::size_t(1) << 26;
            std::vector<unsigned char> host(std::min(want, chunk) * size);
            for (std::size_t first = 0; first < want; first += chunk) {
                const std::size_t count = std::min(chunk, want - first);
                generate(type_, first, count, host.data());
                CUDA_CHECK(cudaMemcpy(buffer_.data() + first * size, host.data(), count * size,
                                      cudaMemcpyHostToDevice));
            }
            // A copy from pageable memory may return before its DMA ends.
            CUDA_CHECK(cudaDeviceSynchronize());
            elements_ = want;
        }
        return buffer_.data();
    }

private:
    dtype type_;
    device_buffer buffer_;
    std::size_t elements_ = 0;
};

// ---------------------------------------------------------------------------------
// cuBLASLt

struct lt_types {
    cudaDataType_t data;
    cublasComputeType_t compute;
};

lt_types lt_types_for(dtype t) {
    switch (t) {
        case dtype::bf16: return {CUDA_R_16BF, CUBLAS_COMPUTE_32F};
        case dtype::fp16: return {CUDA_R_16F, CUBLAS_COMPUTE_32F};
        case dtype::tf32: return {CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32};
        case dtype::fp32: return {CUDA_R_32F, CUBLAS_COMPUTE_32F};
        default: throw usage_error("dtype: the harness supports bf16, fp16, tf32 and fp32");
    }
}

// Owns the cuBLASLt descriptors of one GEMM.
struct lt_descriptors {
    cublasLtMatmulDesc_t op = nullptr;
    cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
    cublasLtMatmulPreference_t pref = nullptr;
    lt_descriptors() = default;
    lt_descriptors(const lt_descriptors&) = delete;
    lt_descriptors& operator=(const lt_descriptors&) = delete;
    ~lt_descriptors() {
        if (pref) cublasLtMatmulPreferenceDestroy(pref);
        if (c) cublasLtMatrixLayoutDestroy(c);
        if (b) cublasLtMatrixLayoutDestroy(b);
        if (a) cublasLtMatrixLayoutDestroy(a);
        if (op) cublasLtMatmulDescDestroy(op);
    }
};

void set_batch(cublasLtMatrixLayout_t l, std::int64_t batch, std::int64_t stride) {
    const auto count = static_cast<std::int32_t>(batch);   // int32_t attribute
    LT_CHECK(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count));
    LT_CHECK(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
                                              sizeof stride));   // int64_t attribute
}

class gemm_runner {
public:
    gemm_runner(dtype t, std::size_t l2_bytes, int repetitions, nvml_clock& clock)
        : type_(t), pool_(t), l2_bytes_(l2_bytes), clock_(clock) {
        LT_CHECK(cublasLtCreate(&handle_));
        // A blocking stream: it waits for the pool's cudaMemcpy on the legacy stream.
        CUDA_CHECK(cudaStreamCreate(&stream_));
        workspace_.reserve(workspace_bytes);
        events_.resize(2 * static_cast<std::size_t>(repetitions));
        for (auto& e : events_) CUDA_CHECK(cudaEventCreate(&e));
    }
    gemm_runner(const gemm_runner&) = delete;
    gemm_runner& operator=(const gemm_runner&) = delete;
    ~gemm_runner() {
        for (auto& e : events_)
            if (e) cudaEventDestroy(e);
        if (stream_) cudaStreamDestroy(stream_);
        if (handle_) cublasLtDestroy(handle_);
    }

    static constexpr std::size_t workspace_bytes = std::size_t(32) << 20;  // NVIDIA's advice for Hopper

    timing_result run(const gemm_job& job, const options& o) {
        const auto types = lt_types_for(type_);
        const std::size_t size = storage_bytes(type_);
        const lt_problem p = lt_problem_for(job);
        // Operands 256-byte aligned inside the pool (the heuristic's default
        // assumption); sets rotate so that small GEMMs do not find their inputs in
        // L2 from the previous repetition.
        auto align = [](std::int64_t e) { return (e + 127) / 128 * 128; };
        const std::int64_t a_span = align(p.a_elems * p.batch), b_span = align(p.b_elems * p.batch);
        const std::int64_t set_elems = a_span + b_span;
        const double set_bytes = static_cast<double>(p.a_elems + p.b_elems + p.c_elems) * p.batch * size;
        const int sets = std::clamp(static_cast<int>(std::ceil(3.0 * l2_bytes_ / set_bytes)), 1, 8);
        unsigned char* pool = pool_.ensure(static_cast<std::size_t>(set_elems * sets));
        output_.reserve(static_cast<std::size_t>(p.c_elems * p.batch) * size);

        lt_descriptors d;
        // Scale type fp32 for every compute type used here; alpha and beta are host floats.
        LT_CHECK(cublasLtMatmulDescCreate(&d.op, types.compute, CUDA_R_32F));
        const cublasOperation_t ta = p.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
        const cublasOperation_t tb = p.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
        LT_CHECK(cublasLtMatmulDescSetAttribute(d.op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
        LT_CHECK(cublasLtMatmulDescSetAttribute(d.op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
        LT_CHECK(cublasLtMatrixLayoutCreate(&d.a, types.data, static_cast<std::uint64_t>(p.a_rows),
                                            static_cast<std::uint64_t>(p.a_cols), p.lda));
        LT_CHECK(cublasLtMatrixLayoutCreate(&d.b, types.data, static_cast<std::uint64_t>(p.b_rows),
                                            static_cast<std::uint64_t>(p.b_cols), p.ldb));
        LT_CHECK(cublasLtMatrixLayoutCreate(&d.c, types.data, static_cast<std::uint64_t>(p.m),
                                            static_cast<std::uint64_t>(p.n), p.ldc));
        if (p.batch > 1) {
            set_batch(d.a, p.batch, p.a_elems);
            set_batch(d.b, p.batch, p.b_elems);
            set_batch(d.c, p.batch, p.c_elems);
        }
        LT_CHECK(cublasLtMatmulPreferenceCreate(&d.pref));
        const std::uint64_t ws = workspace_bytes;
        LT_CHECK(cublasLtMatmulPreferenceSetAttribute(d.pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws,
                                                      sizeof ws));

        timing_result r;
        cublasLtMatmulHeuristicResult_t heuristic{};
        auto choose = [&]() -> std::string {  // empty on success, else why not
            int found = 0;
            const cublasStatus_t s =
                cublasLtMatmulAlgoGetHeuristic(handle_, d.op, d.a, d.b, d.c, d.c, d.pref, 1, &heuristic, &found);
            if (s != CUBLAS_STATUS_SUCCESS) return std::string("cublasLtMatmulAlgoGetHeuristic: ") + cublasLtGetStatusName(s);
            if (found < 1) return "cublasLtMatmulAlgoGetHeuristic found no algorithm";
            if (heuristic.state != CUBLAS_STATUS_SUCCESS)
                return std::string("heuristic result state ") + cublasLtGetStatusName(heuristic.state);
            return {};
        };
        std::string why;
        if (job.gelu) {
            const cublasLtEpilogue_t e = CUBLASLT_EPILOGUE_GELU;
            LT_CHECK(cublasLtMatmulDescSetAttribute(d.op, CUBLASLT_MATMUL_DESC_EPILOGUE, &e, sizeof e));
            why = choose();
            if (!why.empty()) {  // time the GEMM without it rather than lose it
                std::fprintf(stderr, "trainperf-cublaslt: warning: GELU epilogue unsupported for %s %s (%s); "
                             "timed without it\n", job.group.c_str(), job.name.c_str(), why.c_str());
                const cublasLtEpilogue_t none = CUBLASLT_EPILOGUE_DEFAULT;
                LT_CHECK(cublasLtMatmulDescSetAttribute(d.op, CUBLASLT_MATMUL_DESC_EPILOGUE, &none, sizeof none));
                r.epilogue_applied = false;
                why = choose();
            }
        } else {
            why = choose();
        }
        if (!why.empty()) throw lt_error(why);
        const bool apply_gelu = job.gelu && r.epilogue_applied;

        r.waves_count = heuristic.wavesCount;
        r.workspace_bytes = heuristic.workspaceSize;
        std::size_t written = 0;
        // Informational only: on failure they stay -1.
        if (cublasLtMatmulAlgoConfigGetAttribute(&heuristic.algo, CUBLASLT_ALGO_CONFIG_ID, &r.algo_id,
                                                 sizeof r.algo_id, &written) != CUBLAS_STATUS_SUCCESS)
            r.algo_id = -1;
        std::uint32_t tile = 0;  // uint32_t attribute (cublasLtMatmulTile_t)
        if (cublasLtMatmulAlgoConfigGetAttribute(&heuristic.algo, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, sizeof tile,
                                                 &written) == CUBLAS_STATUS_SUCCESS)
            r.tile_id = static_cast<std::int32_t>(tile);

        const float alpha = 1.0f, beta = 0.0f;   // CUBLASLT_POINTER_MODE_HOST (the default)
        auto launch = [&](int set) {
            const unsigned char* a = pool + static_cast<std::size_t>(set * set_elems) * size;
            const unsigned char* b = a + static_cast<std::size_t>(a_span) * size;
            LT_CHECK(cublasLtMatmul(handle_, d.op, &alpha, a, d.a, b, d.b, &beta, output_.data(), d.c,
                                    output_.data(), d.c, &heuristic.algo, workspace_.data(), workspace_bytes,
                                    stream_));
        };
        for (int i = 0; i < o.warmup; ++i) launch(i % sets);
        CUDA_CHECK(cudaStreamSynchronize(stream_));   // warm-up errors surface here, not in the timing
        const int reps = o.repetitions;
        for (int i = 0; i < reps; ++i) {
            CUDA_CHECK(cudaEventRecord(events_[2 * i], stream_));
            launch(i % sets);
            CUDA_CHECK(cudaEventRecord(events_[2 * i + 1], stream_));
        }
        CUDA_CHECK(cudaStreamSynchronize(stream_));
        r.clock_mhz = clock_.sm_mhz();
        std::vector<double> times;
        for (int i = 0; i < reps; ++i) {
            float ms = 0;
            CUDA_CHECK(cudaEventElapsedTime(&ms, events_[2 * i], events_[2 * i + 1]));
            times.push_back(static_cast<double>(ms) * 1e-3);
        }
        r.median_s = percentile(times, 0.5);
        r.p10_s = percentile(times, 0.1);
        r.p90_s = percentile(times, 0.9);
        r.repetitions = reps;
        r.buffer_sets = sets;

        // Reference: sampled elements of the last repetition's output (one copy of
        // the whole output, after the timing), recomputed in double.
        const int last = (reps - 1) % sets;
        const std::uint64_t a0 = static_cast<std::uint64_t>(last * set_elems);
        const std::uint64_t b0 = a0 + static_cast<std::uint64_t>(a_span);
        r.check.tolerance = tolerance_for(type_);
        for (int s = 0; s < o.check_samples; ++s) {
            const std::uint64_t h = splitmix64(0xC0FFEEull + static_cast<std::uint64_t>(s) * 7919u);
            const auto bi = static_cast<std::int64_t>(h % static_cast<std::uint64_t>(p.batch));
            const auto i = static_cast<std::int64_t>((h >> 16) % static_cast<std::uint64_t>(p.m));
            const auto j = static_cast<std::int64_t>((h >> 40) % static_cast<std::uint64_t>(p.n));
            const auto ref = reference(type_, p, a0, b0, bi, i, j, apply_gelu);
            unsigned char raw[4] = {};
            CUDA_CHECK(cudaMemcpy(raw, output_.data() + static_cast<std::size_t>(bi * p.c_elems + p.c_index(i, j)) * size,
                                  size, cudaMemcpyDeviceToHost));
            const double got = output_as_float(type_, raw);
            const double err = std::abs(got - ref.expected) / ref.scale;
            r.check.max_rel_error = std::max(r.check.max_rel_error, std::isfinite(err) ? err : INFINITY);
            ++r.check.samples;
        }
        r.check.passed = r.check.max_rel_error <= r.check.tolerance;
        return r;
    }

private:
    dtype type_;
    input_pool pool_;
    device_buffer output_, workspace_;
    std::size_t l2_bytes_;
    nvml_clock& clock_;
    cublasLtHandle_t handle_ = nullptr;
    cudaStream_t stream_ = nullptr;
    std::vector<cudaEvent_t> events_;
};

// ---------------------------------------------------------------------------------

std::string version_string(int v) {  // CUDA encodes 13.0 as 13000
    return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

std::string utc_now() {
    const std::time_t t = std::time(nullptr);
    std::tm tm{};
    gmtime_r(&t, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

// Writes the file whole, then renames it into place: a run stopped at any moment
// leaves the last complete document.
void write_document(const std::string& path, const nlohmann::json& doc) {
    const std::filesystem::path out(path);
    if (out.has_parent_path()) std::filesystem::create_directories(out.parent_path());
    const std::filesystem::path tmp = out.string() + ".partial";
    {
        std::ofstream f(tmp);
        f << doc.dump(2) << '\n';
        if (!f.good()) throw std::runtime_error("cannot write " + tmp.string());
    }
    std::filesystem::rename(tmp, out);
}

int run(const options& o) {
    // Everything that needs no GPU first, so that a typo is a usage error anywhere.
    std::vector<gemm_job> jobs;
    cublaslt_harness::report rep;
    for (const auto& l : o.layers) {
        const auto model = model_for(o, l);
        const auto more = layer_jobs(model, l, o.math);
        jobs.insert(jobs.end(), more.begin(), more.end());
        for (const auto& existing : rep.file.layers)
            if (existing.name == layer_name(l)) throw usage_error("--layer " + layer_name(l) + " given twice");
        rep.file.layers.push_back({.name = layer_name(l), .model = l.model, .micro_batch = l.micro_batch,
                                   .seq = l.seq, .tp = l.tp, .math = o.math});
    }
    if (o.sweep) {
        const auto more = sweep_jobs(o.sweep_size, o.math);
        jobs.insert(jobs.end(), more.begin(), more.end());
    }
    for (const auto& j : jobs) (void)lt_problem_for(j);   // sizes cuBLASLt takes
    if (!o.gpu.empty()) (void)trainperf::lookup_gpu(o.gpu);
    std::optional<trainperf::calibration_file> calibration;
    if (!o.calibration.empty()) calibration = trainperf::load_calibration(o.calibration);

    int devices = 0;
    const cudaError_t e = cudaGetDeviceCount(&devices);
    if (e != cudaSuccess || devices == 0) {
        // cudaErrorNoDevice, cudaErrorInsufficientDriver (no driver at all), ...
        std::cerr << "trainperf-cublaslt: no usable CUDA GPU ("
                  << (e != cudaSuccess ? std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e)
                                       : std::string("no devices"))
                  << "); skipped\n";
        return exit_skipped;
    }
    const int device = 0;
    CUDA_CHECK(cudaSetDevice(device));
    cudaDeviceProp prop{};
    CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
    int clock_khz = 0, driver = 0, runtime = 0;
    CUDA_CHECK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, device));
    CUDA_CHECK(cudaDriverGetVersion(&driver));
    CUDA_CHECK(cudaRuntimeGetVersion(&runtime));

    std::string gpu_name = o.gpu;
    if (gpu_name.empty()) {
        const auto guess = catalog_name_for(prop.name);
        if (!guess) throw usage_error(std::string("device \"") + prop.name + "\" is not in the catalog: pass --gpu NAME");
        gpu_name = *guess;
    }
    const trainperf::gpu_spec& gpu = trainperf::lookup_gpu(gpu_name);
    if (gpu.sm_count != prop.multiProcessorCount)
        std::cerr << "trainperf-cublaslt: warning: " << prop.name << " has " << prop.multiProcessorCount
                  << " SMs, the catalog's " << gpu.name << " has " << gpu.sm_count << "\n";
    trainperf::kernel_params params = trainperf::default_kernel_params(gpu.architecture);
    if (calibration) {
        if (calibration->gpu != gpu.name)
            std::cerr << "trainperf-cublaslt: warning: calibration is for " << calibration->gpu << ", predicting "
                      << gpu.name << "\n";
        params = calibration->params;
    }
    const double peak = gpu.peak_for(o.math).value();

    rep.file.provenance = {.gpu_name = prop.name,
                           .gpu = std::string(gpu.name),
                           .sm_count = prop.multiProcessorCount,
                           .compute_capability = std::to_string(prop.major) + "." + std::to_string(prop.minor),
                           .sm_clock_max_mhz = clock_khz / 1000.0,
                           .sm_clock_min_seen_mhz = std::nullopt,
                           .sm_clock_max_seen_mhz = std::nullopt,
                           .driver = version_string(driver),
                           .cuda_runtime = version_string(runtime),
                           .cublaslt = std::to_string(cublasLtGetVersion()),
                           .date = utc_now(),
                           .command = o.command};
    rep.file.prediction_params = params;
    rep.extra_provenance = {{"l2_cache_bytes", prop.l2CacheSize}, {"memory_bytes", prop.totalGlobalMem}};
    rep.settings = {{"warmup", o.warmup}, {"repetitions", o.repetitions},
                    {"check_samples", o.check_samples}, {"workspace_bytes", gemm_runner::workspace_bytes},
                    {"timing", "cudaEvent pair around each cublasLtMatmul; median, p10, p90"},
                    {"layouts", "row-major C[m×n]; cuBLAS called for its transpose: cuBLAS m = n, n = m"}};

    nvml_clock clock(device);
    gemm_runner runner(o.math, static_cast<std::size_t>(prop.l2CacheSize), o.repetitions, clock);
    bool all_passed = true;
    std::vector<double> sweep_errors;

    std::printf("%s (%s, %d SMs), %s, predictions for %s\n", prop.name, gpu_name.c_str(),
                prop.multiProcessorCount, std::string(trainperf::to_string(o.math)).c_str(),
                o.calibration.empty() ? "default kernel parameters" : o.calibration.c_str());
    std::printf("%-26s %-6s %-4s %7s %7s %7s %5s %11s %11s %8s %9s %7s\n", "gemm", "phase", "ops", "m", "n",
                "k", "batch", "measured_us", "predicted_us", "error_%", "TFLOP/s", "%peak");
    std::fflush(stdout);
    write_document(o.out, rep.document("started"));   // an unwritable --out fails now, not after a GEMM
    std::size_t done = 0;
    try {
        for (const auto& job : jobs) {
            timing_result t;
            try {
                t = runner.run(job, o);
            } catch (const lt_error& err) {
                all_passed = false;
                rep.add_failure(job, err.what());
                std::fprintf(stderr, "trainperf-cublaslt: %s %s %s m=%g n=%g k=%g batch=%g (%s) FAILED: %s\n",
                             job.group.c_str(), job.name.c_str(), job.phase.c_str(), job.shape.m, job.shape.n,
                             job.shape.k, job.shape.batch, to_string(job.op_layout), err.what());
                write_document(o.out, rep.document("partial"));
                continue;
            }
            const auto predicted = trainperf::gemm_time(gpu, job.shape, params);
            rep.add(job, t, predicted, peak);
            ++done;
            if (t.clock_mhz) {
                auto& p = rep.file.provenance;
                p.sm_clock_min_seen_mhz = std::min(p.sm_clock_min_seen_mhz.value_or(*t.clock_mhz), *t.clock_mhz);
                p.sm_clock_max_seen_mhz = std::max(p.sm_clock_max_seen_mhz.value_or(*t.clock_mhz), *t.clock_mhz);
            }
            const double tflops = trainperf::gemm_flops(job.shape).value() / t.median_s / 1e12;
            const double err = predicted.value() / t.median_s - 1.0;
            if (!t.check.passed) {
                all_passed = false;
                std::fprintf(stderr, "trainperf-cublaslt: reference check FAILED for %s %s %s m=%g n=%g k=%g "
                             "batch=%g (%s): error %.3g > %.3g\n", job.group.c_str(), job.name.c_str(),
                             job.phase.c_str(), job.shape.m, job.shape.n, job.shape.k, job.shape.batch,
                             to_string(job.op_layout), t.check.max_rel_error, t.check.tolerance);
            }
            if (job.group == "sweep") sweep_errors.push_back(err);
            if (job.group != "sweep" || o.verbose)
                std::printf("%-26s %-6s %-4s %7g %7g %7g %5g %11.2f %11.2f %+8.1f %9.1f %6.1f%%\n",
                            (job.group == "sweep" ? std::string("sweep")
                                                  : job.name + (job.gelu && t.epilogue_applied ? "+gelu" : ""))
                                .c_str(),
                            job.phase.c_str(), to_string(job.op_layout), job.shape.m, job.shape.n, job.shape.k,
                            job.shape.batch, t.median_s * 1e6, predicted.value() * 1e6, 100 * err, tflops,
                            100 * tflops * 1e12 / peak);
            std::fflush(stdout);
            write_document(o.out, rep.document("partial"));
        }
    } catch (const std::exception& err) {
        // A CUDA error: keep what was measured, then stop.
        write_document(o.out, rep.document(std::string("aborted: ") + err.what()));
        std::fprintf(stderr, "trainperf-cublaslt: stopped after %zu of %zu GEMMs; %s keeps them\n", done,
                     jobs.size(), o.out.c_str());
        throw;
    }

    const auto doc = rep.document("complete");
    write_document(o.out, doc);
    // Whole layers: Σ measured vs Σ predicted.
    for (const auto& l : doc["layers"]) {
        if (!l.contains("measured_s")) continue;
        const double measured = l["measured_s"].get<double>(), predicted = l["predicted_s"].get<double>();
        double work = 0;
        for (const auto& g : rep.file.gemms)
            if (g.group == l["name"].get<std::string>()) work += trainperf::gemm_flops(g.shape).value();
        std::printf("%-26s %-6s %-4s %7s %7s %7s %5s %11.2f %11.2f %+8.1f %9.1f %6.1f%%\n",
                    ("layer " + l["name"].get<std::string>()).c_str(), "all", "", "", "", "", "", measured * 1e6,
                    predicted * 1e6, 100 * (predicted / measured - 1.0), work / measured / 1e12,
                    100 * work / measured / peak);
    }
    if (!sweep_errors.empty()) {
        const auto s = trainperf::summarize_rel_errors(sweep_errors);
        std::printf("sweep: %d GEMMs, prediction mean |error| %.1f %%, max %.1f %%, bias %+.1f %%\n", s.points,
                    100 * s.mean_abs_rel_error, 100 * s.max_abs_rel_error, 100 * s.mean_rel_error);
    }
    // The file must read back through trainperf's reader (the schema's definition);
    // it is written first so that a reader error loses no measurement.
    try {
        (void)trainperf::measurement_file_from_json(doc);
    } catch (const std::exception& err) {
        std::fprintf(stderr, "trainperf-cublaslt: %s does not read back: %s\n", o.out.c_str(), err.what());
        return 1;
    }
    std::printf("wrote %s (%zu of %zu GEMMs timed)%s\n", o.out.c_str(), done, jobs.size(),
                all_passed ? "" : "; SOME GEMMS FAILED OR FAILED THEIR REFERENCE CHECK (see stderr)");
    return all_passed ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
    try {
        return run(parse(argc, argv));
    } catch (const usage_error& e) {
        std::cerr << "trainperf-cublaslt: " << e.what() << "\n";
        return exit_usage;
    } catch (const std::invalid_argument& e) {   // trainperf::invalid_argument too: bad names, sizes
        std::cerr << "trainperf-cublaslt: " << e.what() << "\n";
        return exit_usage;
    } catch (const std::exception& e) {
        std::cerr << "trainperf-cublaslt: error: " << e.what() << "\n";
        return 1;
    }
}
