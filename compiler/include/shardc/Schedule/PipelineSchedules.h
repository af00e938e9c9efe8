//===- PipelineSchedules.h - the order of a pipeline stage's work -*- C++ -*-===//
//
// What each stage of a pipeline runs, in order, for `m` microbatches over `p`
// stages: shardc-pipeline-schedule builds these loops, the report draws them.
//
//===----------------------------------------------------------------------===//

#ifndef SHARDC_SCHEDULE_PIPELINESCHEDULES_H
#define SHARDC_SCHEDULE_PIPELINESCHEDULES_H

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

#include <algorithm>
#include <cstdint>

namespace shardc {

/// One step of a stage's schedule: the forward or backward pass of microbatch
/// `scale * i + offset` in iteration i of its loop.
struct PipelineAction {
  bool forward;
  int64_t scale, offset;
};

/// `count` iterations, each running `actions` in order.
struct PipelineLoop {
  int64_t count;
  llvm::SmallVector<PipelineAction, 2> actions;
};

/// Stage `s`'s schedule. GPipe: every forward, then every backward, the last
/// microbatch first. 1F1B (PipeDream-Flush, Narayanan et al. 2021): p - 1 - s
/// forwards to fill the pipeline, then one forward and one backward
/// alternately, then the remaining backwards.
inline llvm::SmallVector<PipelineLoop> pipelineSchedule(llvm::StringRef schedule, int64_t s,
                                                        int64_t p, int64_t m) {
  if (schedule == "gpipe")
    return {{m, {{true, 1, 0}}}, {m, {{false, -1, m - 1}}}};
  const int64_t warmup = std::min(p - 1 - s, m);
  return {{warmup, {{true, 1, 0}}},
          {m - warmup, {{true, 1, warmup}, {false, 1, 0}}},
          {warmup, {{false, 1, m - warmup}}}};
}

/// How many microbatches' received activations stage `s` keeps at once: every
/// microbatch's under GPipe, at most p - s under 1F1B (its forwards run at
/// most that far ahead of its backwards).
inline int64_t pipelineSlots(llvm::StringRef schedule, int64_t s, int64_t p, int64_t m) {
  return schedule == "gpipe" ? m : std::min(m, p - s);
}

} // namespace shardc

#endif
