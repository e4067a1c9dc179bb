// The fit table across frameworks (`trainperf fit --framework any`): search/fit_table.hpp's
// table once per framework profile, the request's setup with that profile in place of
// its framework. A profile whose software cannot run the base setup — its layout (tp > 1
// without tensor parallelism, a ZeRO stage it lacks, ...), its fine-tuning mode, or the
// recipe or optimizer the table is restricted to — is left out with validate's reason
// (search/framework_search.hpp skipped_framework), as plan_across leaves one out.
//
// Each profile is used as it is given: switches a caller chooses for every framework
// (FlashAttention on or off, --grad-reduce-dtype) are set on each profile before the call.
#pragma once

#include <algorithm>
#include <cstddef>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "../core/error.hpp"
#include "../spec/framework.hpp"
#include "../spec/setup.hpp"
#include "fit_table.hpp"
#include "framework_search.hpp"

namespace trainperf {

struct fit_across_result {
    std::vector<fit_table> tables;            // one per framework that runs the base, in the order given
    std::vector<skipped_framework> skipped;   // those that do not, each with the reason
};

namespace fit_across_detail {

// The request with `fw` in place of its base's framework.
inline fit_table_request with_framework(const fit_table_request& r, const framework_profile& fw) {
    fit_table_request out = r;
    out.base.framework = fw;
    return out;
}

// Why the base with `fw` is not a setup (validate's message); empty when it is.
inline std::string refusal(const fit_table_request& r, const framework_profile& fw) {
    try {
        validate(with_framework(r, fw).base);
    } catch (const invalid_argument& e) {
        return e.what();
    }
    return {};
}

}  // namespace fit_across_detail

// fit_table_of(request) with each framework of `frameworks` that runs the base setup in
// place of the base's framework; the rest in `skipped`. Throws when none runs it.
inline fit_across_result fit_tables_across(const fit_table_request& request,
                                           std::span<const framework_profile> frameworks) {
    using namespace fit_across_detail;
    require(!frameworks.empty(), "frameworks", 0, "must name at least one framework profile");
    fit_across_result out;
    for (const framework_profile& fw : frameworks) {
        if (std::string why = refusal(request, fw); !why.empty()) {
            out.skipped.push_back({std::string(fw.name), std::move(why)});
            continue;
        }
        out.tables.push_back(fit_table_of(with_framework(request, fw)));
    }
    if (out.tables.empty()) fail_no_framework_runs(out.skipped);
    return out;
}

}  // namespace trainperf
