// Training health: whether a step left the run finite, agreed on by every rank, and
// what went non-finite first when it did not (--on-nonfinite, --max-skips).
#ifndef SHARDRT_LIB_DRIVER_HEALTH_H
#define SHARDRT_LIB_DRIVER_HEALTH_H

#include "driver_modes.h"

#include <string>
#include <vector>

namespace shardrt {

/// What went non-finite in a step, as bits: its loss (which the compiled step makes
/// NaN when a gradient is not finite, leaving the parameters and state as they were),
/// or the parameters and optimizer state (an update that overflowed from a finite loss
/// and finite gradients).
enum StepHealth : int { kFinite = 0, kLossNonFinite = 1, kStateNonFinite = 2 };

/// The verdict on a step from its loss (replicated) and this rank's blocks of the
/// parameters and state after it, the same on every rank; `stopSignal` gets the SIGINT
/// or SIGTERM any rank has received, or 0 (driver_stop.h), and `digest` this rank's
/// digestOf(params, state) (driver_abandon.h), from the same pass over them. Collective:
/// one MPI_Allreduce of two ints, so that a stop costs the steps no collective of its own.
int stepHealth(float loss, const std::vector<Block> &params, const std::vector<Block> &state,
               int &stopSignal, uint64_t &digest);

/// What the gradients of a step were: whether its loss is finite, and the first
/// parameter, in the program's order, whose gradient is not finite on some rank
/// ("blocks.W1 [layer 2]"), or "" when every gradient is.
struct GradientVerdict {
  bool lossFinite = true;
  std::string firstNonFinite;
};

/// After a non-finite step, from the parameters it started from (the step kept them)
/// and its inputs. Runs the grad entry once. Collective.
GradientVerdict checkGradients(const Program &program, const std::vector<Block> &params,
                               const std::vector<Block> &inputs);

/// The first of `blocks` that is not finite on some rank, named as above, or "".
/// Collective.
std::string firstNonFiniteBlock(const std::vector<Block> &blocks);

} // namespace shardrt

#endif // SHARDRT_LIB_DRIVER_HEALTH_H
