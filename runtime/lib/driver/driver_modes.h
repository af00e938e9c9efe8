// The runs of shardrt_main, one file each: training (driver_train.cpp), the eval job
// (driver_evaljob.cpp), the forward pass (driver_forward.cpp), the gradient check
// (driver_gradcheck.cpp) and sampling (driver_generate.cpp).
#ifndef SHARDRT_LIB_DRIVER_MODES_H
#define SHARDRT_LIB_DRIVER_MODES_H

#include "driver_bindings.h"
#include "driver_blocks.h"
#include "driver_flags.h"
#include "driver_manifest.h"

#include "shardrt/driver.h"

#include <cstdio>

namespace shardrt {

/// What every run is given, once the mesh is up.
struct Program {
  const Manifest &manifest;
  const DriverOptions &options;
  const DataPlan &data;               // what each input reads; for training only
  shardrt_entry_fn train, eval, grad; // checked against the manifest and the mode
  shardrt_entry_fn prefill, decode;   // --generate's KV cache; null without
  int rank;
  Placement place;
  std::FILE *out;          // where rank 0 writes the final JSON; nullptr on other ranks
  int64_t residentAtStart; // this process's resident bytes before the program's own memory
};

/// Each returns the exit status, the same on every rank: errors that every rank sees
/// alike are printed once, by rank 0.
int runTraining(const Program &program);
int runEvaluation(const Program &program);
int runForward(const Program &program);
int runGradientCheck(const Program &program);
int runGeneration(const Program &program);

} // namespace shardrt

#endif // SHARDRT_LIB_DRIVER_MODES_H
