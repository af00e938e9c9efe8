// Training health: whether a step left the run finite, agreed on by every rank, and
// what went non-finite first when it did not (--on-nonfinite, --max-skips).
#ifndef SHARDRT_LIB_DRIVER_HEALTH_H
#define SHARDRT_LIB_DRIVER_HEALTH_H

#include "driver_modes.h"

#include <string>
#include <vector>

namespace shardrt {

/// What went non-finite in a step, as bits: its loss, or the new parameters and
/// optimizer state (a non-finite gradient cannot reach them without that: sgd,
/// momentum and adam each add a multiple of it).
enum StepHealth : int { kFinite = 0, kLossNonFinite = 1, kStateNonFinite = 2 };

/// The verdict on a step from its loss (replicated) and this rank's blocks of the new
/// parameters and state, the same on every rank; `stopSignal` gets the SIGINT or
/// SIGTERM any rank has received, or 0 (driver_stop.h). Collective: one MPI_Allreduce
/// of two ints, so that a stop costs the steps no collective of its own.
int stepHealth(float loss, const std::vector<Block> &params, const std::vector<Block> &state,
               int &stopSignal);

/// After a non-finite step, from the parameters it started from and its inputs (both
/// still held: the train entry wrote the other set): the first parameter, in the
/// program's order, whose gradient is not finite on some rank ("blocks.W1 [layer 2]"),
/// or "" when every gradient is. Runs the grad entry once. Collective.
std::string firstNonFiniteGradient(const Program &program, const std::vector<Block> &params,
                                   const std::vector<Block> &inputs);

/// The first of `blocks` that is not finite on some rank, named as above, or "".
/// Collective.
std::string firstNonFiniteBlock(const std::vector<Block> &blocks);

} // namespace shardrt

#endif // SHARDRT_LIB_DRIVER_HEALTH_H
