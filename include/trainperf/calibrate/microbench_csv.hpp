// Reads a table of published micro-benchmark results (tests/data/
// transformers_microbench.csv): one row per measured statement with the GPU, the
// statement's kind, dtype, sizes and the measured rate. Lines starting with '#' are
// provenance; quoted fields (RFC 4180) may hold commas. Malformed rows are errors
// naming the line and the field.
#pragma once

#include <cmath>
#include <istream>
#include <optional>
#include <string>
#include <vector>

#include "../core/error.hpp"

namespace trainperf::io {

struct microbench_row {
    int line = 0;              // in the file, for messages
    std::string gpu;           // catalog name, or empty where the source names only a device
    std::string device_name;   // as the source prints it
    std::string source;
    std::string kind;          // matmul, elementwise_scale_fp32, layer_forward, ..._best
    std::string dtype;         // fp16, fp32, "fp32 (torch.float32)"
    double n = 0;              // matmul size or elementwise elements (0: none)
    int batch = 0, seq = 0;    // 0: none
    std::string model;
    std::optional<double> tflops;
    std::optional<double> gb_per_s;
};

namespace microbench_detail {

// One CSV record's fields; quoted fields may hold commas and doubled quotes.
inline std::vector<std::string> split_record(const std::string& line, int number) {
    std::vector<std::string> fields(1);
    bool quoted = false;
    for (std::size_t i = 0; i < line.size(); ++i) {
        const char ch = line[i];
        if (quoted) {
            if (ch == '"' && i + 1 < line.size() && line[i + 1] == '"') {
                fields.back() += '"';
                ++i;
            } else if (ch == '"') {
                quoted = false;
            } else {
                fields.back() += ch;
            }
        } else if (ch == '"') {
            quoted = true;
        } else if (ch == ',') {
            fields.emplace_back();
        } else if (ch != '\r') {
            fields.back() += ch;
        }
    }
    require(!quoted, "line " + std::to_string(number), line.substr(0, 40), "has an unterminated quote");
    return fields;
}

inline std::optional<double> number(const std::string& text, int line, const char* field) {
    if (text.empty()) return std::nullopt;
    std::size_t used = 0;
    double v = 0;
    try {
        v = std::stod(text, &used);
    } catch (const std::exception&) {
        used = 0;
    }
    require(used == text.size() && std::isfinite(v) && v >= 0,
            "line " + std::to_string(line) + " " + field, text, "is not a non-negative number");
    return v;
}

}  // namespace microbench_detail

inline std::vector<microbench_row> read_microbench(std::istream& in) {
    namespace md = microbench_detail;
    static constexpr const char* header =
        "gpu,device_name,source,kind,dtype,m,n,k,batch,seq,model,flops_formula,measured_tflops,measured_gb_per_s";
    std::vector<microbench_row> rows;
    std::string line;
    int number = 0;
    bool seen_header = false;
    while (std::getline(in, line)) {
        ++number;
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (line.empty() || line[0] == '#') continue;
        if (!seen_header) {
            std::string why = "is not the header: ";
            why.append(header);
            require(line == header, "line " + std::to_string(number), line.substr(0, 40), why);
            seen_header = true;
            continue;
        }
        const auto f = md::split_record(line, number);
        require(f.size() == 14, "line " + std::to_string(number), f.size(), "fields; expected 14");
        microbench_row r;
        r.line = number;
        r.gpu = f[0];
        r.device_name = f[1];
        r.source = f[2];
        r.kind = f[3];
        r.dtype = f[4];
        r.n = md::number(f[6], number, "n").value_or(0);
        const auto whole = [&](const std::string& text, const char* field) {
            const double v = md::number(text, number, field).value_or(0);
            require(v <= double(1 << 20) && v == double(int(v)), "line " + std::to_string(number) + " " + field, text,
                    "must be a whole number between 0 and 2^20");
            return int(v);
        };
        r.batch = whole(f[8], "batch");
        r.seq = whole(f[9], "seq");
        r.model = f[10];
        r.tflops = md::number(f[12], number, "measured_tflops");
        r.gb_per_s = md::number(f[13], number, "measured_gb_per_s");
        require(r.tflops || r.gb_per_s, "line " + std::to_string(number), "(empty)", "has no measured rate");
        rows.push_back(std::move(r));
    }
    require(seen_header, "microbench csv", "(empty)", "has no header line");
    return rows;
}

}  // namespace trainperf::io
