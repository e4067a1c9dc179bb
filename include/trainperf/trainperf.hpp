// Umbrella header: everything in the core library (Boost.Units and the standard
// library only). calibration.hpp (Eigen) and io/json.hpp (nlohmann-json) are
// included separately by the programs that want them.
#pragma once

#include "units.hpp"
#include "error.hpp"
#include "dtype.hpp"
#include "hardware.hpp"
#include "hardware/catalog.hpp"
#include "model.hpp"
#include "models/catalog.hpp"
#include "precision.hpp"
#include "optimizer.hpp"
#include "kernel_model.hpp"
#include "measurement.hpp"
#include "comm.hpp"
#include "scaling.hpp"
#include "input_pipeline.hpp"
#include "parallel.hpp"
#include "flops.hpp"
#include "memory.hpp"
#include "framework.hpp"
#include "workload.hpp"
#include "step.hpp"
#include "validation.hpp"
#include "planner.hpp"
#include "training_run.hpp"
