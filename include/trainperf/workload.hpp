// The workload: a training step as a list of operations, specs in, ops out. One layer's
// forward is GEMMs (m, n, k, batch, dtype) and memory-bound ops (bytes moved, FLOPs);
// backward adds a dgrad and a wgrad GEMM per GEMM and an elementwise backward per
// memory-bound op; recompute repeats forward ops. Shapes are per rank. Nothing here
// prices an op: kernel_model.hpp and comm.hpp do, step.hpp schedules them. By concept:
//   workload/layer.hpp     one layer's GEMMs, memory-bound ops and the model code's host calls
//   workload/fp8.hpp       Transformer Engine's FP8 casts and amax bookkeeping
//   workload/stage.hpp     one micro-batch on the busiest pipeline stage
//                          (micro_batch_workload, for_each_stage_op)
//   workload/step_ops.hpp  once per step: data-parallel sync, the optimizer or its offload
//                          (step_workload)
#pragma once

#include "workload/layer.hpp"
#include "workload/fp8.hpp"
#include "workload/stage.hpp"
#include "workload/step_ops.hpp"
