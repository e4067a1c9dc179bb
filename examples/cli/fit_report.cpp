#include "fit_report.hpp"

#include "cli.hpp"
#include "table_output.hpp"
#include "training_flags.hpp"

#include <trainperf/spec/layout_text.hpp>

#include <iomanip>
#include <ostream>

namespace trainperf::cli {

namespace {
std::string gb_and_gib(bytes b) {
    return fixed(to_gb(b).value(), 2) + " GB (" + fixed(to_gib(b).value(), 2) + " GiB)";
}

// Under an advice option, indented five columns and wrapped within the terminal's width:
// its predict command (with shell continuations) and a borderline verdict's line.
constexpr std::size_t option_indent = 5;

std::string indented(std::string text) {
    for (std::size_t at = text.find('\n'); at != std::string::npos; at = text.find('\n', at + 1))
        text.insert(at + 1, std::string(option_indent, ' '));
    return std::string(option_indent, ' ') + text + "\n";
}

std::string option_command(const std::string& command) {
    return indented(wrap_command(command, terminal_columns - option_indent));
}

std::string option_borderline(const fit_option& o) {
    std::string text = borderline_text(o.margin, o.setup.framework.memory);
    if (!text.empty() && text.back() == '\n') text.pop_back();
    return indented(wrap_words(text, 0, terminal_columns - option_indent));
}

// What a change beyond the layout changed, before the layout it runs on.
std::string change_text(const fit_option& o) {
    const training_setup& s = o.setup;
    switch (o.change) {
        case fit_change::shorter_sequence: return "seq " + std::to_string(o.report.seq) + ", ";
        case fit_change::optimizer: return std::string(to_string(s.optimizer)) + ", ";
        case fit_change::lora:
        case fit_change::qlora:
            return "rank " + std::to_string(s.finetune.rank) + " on " + lora_targets_text(s.finetune.targets) + ", ";
        case fit_change::moe_overlap:
            return s.moe.a2a_overlap ? "EP overlap (--moe-a2a-overlap), " : "shared-expert overlap, ";
        default: return "";
    }
}
}  // namespace

std::string borderline_text(const fit_margin& m, const memory_overheads& o) {
    const bool fits = m.margin.value() >= 0;
    switch (m.decided_by) {
        case deciding_assumption::none: break;
        case deciding_assumption::allocator_slack:
            return "borderline: the verdict rests on the allocator's slack, " + gb_and_gib(m.assumed) + " (" +
                   (o.expandable_segments ? std::string("the partly used pages of expandable segments")
                                          : fixed(100 * o.fragmentation, 0) + " % of the peak") +
                   ", an ASSUMPTION): " +
                   (fits                     ? "twice that and it would not fit"
                    : o.expandable_segments ? "with none it would fit"
                                            : "with none (e.g. expandable segments) it would fit") +
                   "\n";
        case deciding_assumption::cuda_context:
            return "borderline: the verdict rests on the CUDA context, " + gb_and_gib(m.assumed) +
                   " (an ASSUMPTION; it depends on the driver and the libraries loaded): " +
                   (fits ? "twice that and it would not fit" : "with a smaller one it could fit") + "\n";
    }
    return "";
}

std::string fit_margin_text(const fit_margin& m, const memory_overheads& o) {
    const bool fits = m.margin.value() >= 0;
    return std::string(fits ? "margin: " : "over by: ") + gb_and_gib(fits ? m.margin : bytes_of(-m.margin.value())) +
           " per GPU\n" + borderline_text(m, o);
}

void print_does_not_fit(std::ostream& out, const fit_advice& advice,
                        const std::function<std::string(const training_setup&)>& run_flags) {
    out << "Does NOT fit: it needs " << gb_and_gib(advice.needed) << " per GPU, " << gb_and_gib(advice.capacity)
        << " can be used: " << gb_and_gib(advice.excess()) << " too much.\n"
        << "A layout that does not fit cannot run, so it has no step time, throughput or MFU.\n";
    if (advice.options.empty()) {
        out << "None of these changes makes it fit on its own: " << enum_name_list<fit_change>(", ")
            << " (ZeRO-3 on up to " << fit_advice_max_gpus << " GPUs).\n";
        return;
    }
    out << "Each of these changes makes it fit on its own: first the same training on other layouts, then another\n"
           "optimizer, adapters (fine-tuning only) and a shorter sequence, which change what is trained; within each,\n"
           "most tokens/s per GPU first:\n";
    int rank = 1;
    for (const fit_option& o : advice.options) {
        const step_report& r = o.report;
        out << std::setw(3) << rank++ << "  " << to_string(o.change) << ": " << change_text(o) << describe(o.setup.layout)
            << "\n"
            << "     " << fixed(to_gib(r.memory.total()).value(), 1) << " GiB per GPU (margin "
            << fixed(to_gib(o.margin.margin).value(), 2) << " GiB) on " << gpus_text(r.gpus) << ", "
            << fixed(r.step_time.value() * 1e3, 0) << " ms per step of " << r.global_batch << " samples, "
            << fixed(r.tokens_per_second_per_gpu(), 0) << " tokens/s per GPU\n";
        if (o.margin.borderline()) out << option_borderline(o);
        out << option_command(predict_command(run_flags(o.setup), o.setup.layout));
    }
}

void print_speed_advice(std::ostream& out, const speed_advice& advice,
                        const std::function<std::string(const training_setup&)>& run_flags, std::size_t shown) {
    if (!advice.worth_saying()) return;
    if (advice.dominated())
        out << "\nThe step is dominated by " << to_string(advice.largest) << ": " << fixed(100 * advice.largest_share, 1)
            << " % of it.";
    out << "\nFaster layouts of the same GPUs and global batch (most tokens/s per GPU first; each predicted):\n";
    int rank = 1;
    for (std::size_t i = 0; i < advice.options.size() && i < shown; ++i) {
        const fit_option& o = advice.options[i];
        const step_report& r = o.report;
        out << std::setw(3) << rank++ << "  " << to_string(o.change) << ": " << describe(o.setup.layout) << "\n"
            << "     +" << fixed(100 * o.gain, 1) << " % tokens/s per GPU: " << fixed(r.step_time.value() * 1e3, 1)
            << " ms per step, " << fixed(r.tokens_per_second_per_gpu(), 0) << " tokens/s per GPU, "
            << fixed(to_gib(r.memory.total()).value(), 1) << " GiB per GPU\n"
            << option_command(predict_command(run_flags(o.setup), o.setup.layout));
    }
}

}  // namespace trainperf::cli
