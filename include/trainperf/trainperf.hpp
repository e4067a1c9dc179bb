// Umbrella header: everything in the core library (Boost.Units and the standard
// library only), layer by layer (docs/architecture.md). The fits in
// calibrate/calibration.hpp and calibrate/microbench_calibration.hpp (Eigen) and the
// JSON readers and writers in io/ (nlohmann-json) are included separately by the
// programs that want them.
#pragma once

#include "core/attributes.hpp"
#include "core/catalog_lookup.hpp"
#include "core/dtype.hpp"
#include "core/enum_names.hpp"
#include "core/enum_set.hpp"
#include "core/error.hpp"
#include "core/limits.hpp"
#include "core/units.hpp"

#include "spec/attention_kernels.hpp"
#include "spec/finetune.hpp"
#include "spec/framework.hpp"
#include "spec/gpu_catalog.hpp"
#include "spec/hardware.hpp"
#include "spec/host.hpp"
#include "spec/kernel_params.hpp"
#include "spec/layout_text.hpp"
#include "spec/links.hpp"
#include "spec/model.hpp"
#include "spec/model_catalog.hpp"
#include "spec/optimizer.hpp"
#include "spec/parallel.hpp"
#include "spec/precision.hpp"
#include "spec/setup.hpp"
#include "spec/system.hpp"

#include "workload/flops.hpp"
#include "workload/fp8.hpp"
#include "workload/layer.hpp"
#include "workload/ops.hpp"
#include "workload/placement.hpp"
#include "workload/stage.hpp"
#include "workload/step_ops.hpp"

#include "cost/comm.hpp"
#include "cost/fit_margin.hpp"
#include "cost/input_pipeline.hpp"
#include "cost/kernel_model.hpp"
#include "cost/memory.hpp"
#include "cost/scaling.hpp"
#include "cost/stage_pricer.hpp"
#include "cost/step.hpp"
#include "cost/step_prices.hpp"
#include "cost/training_run.hpp"

#include "search/batch_suggestion.hpp"
#include "search/data_parallel_scaling.hpp"
#include "search/fit_across.hpp"
#include "search/fit_advice.hpp"
#include "search/fit_table.hpp"
#include "search/framework_search.hpp"
#include "search/layout_search.hpp"
#include "search/training_plan.hpp"

#include "calibrate/measurement.hpp"
#include "calibrate/microbench.hpp"
#include "calibrate/microbench_csv.hpp"
#include "calibrate/published_runs.hpp"

#include "io/csv.hpp"
#include "io/report_table.hpp"
