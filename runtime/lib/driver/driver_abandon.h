// A stop in the middle of a step (driver_stop.h): on SIGINT or SIGTERM, which a kill
// follows (mpirun's SIGKILL odls_base_sigkill_timeout seconds after its SIGTERM, 1 by
// default; Slurm's KillWait), the step in progress is abandoned rather than finished, and
// the checkpoint of the last completed step is written from the parameters in memory.
//
//  1. Parameters and optimizer state change only in the step's update, at its end. The
//     step's health check (driver_health.h) leaves a digest of this rank's blocks of both
//     after every step; the same digest now says whether the update has begun.
//  2. A rank notices the stop in a collective wait (the watchdog's await calls
//     onCollectiveWait on every poll): its own signal, or a notice from a rank that had
//     one. It sends the notice on to every rank and stays in that wait until every rank
//     has voted (a nonblocking all-reduce on a communicator of its own): whether it is
//     inside the compiled step, and whether its digest still holds.
//  3. Every rank stays where it voted until the vote is complete, so all of them are
//     then in a wait and none is computing. When all are inside the step with their
//     digests intact, each calls the driver's abandon: the checkpoint of the last
//     completed step (gathered over MPI_COMM_WORLD, which no step collective uses), the
//     summary, exit status 5, without going back into the step or MPI_Finalize (its
//     collectives are left in flight). Otherwise the step is finished and the stop
//     happens after it, as for the early-warning signal.
//
// A rank blocked inside MPI could not vote, and ranks that had voted would wait on it
// for ever: while armed, the all-reduces wait in await too (watchdog.h:
// setAllReducesInAwait), the communicators are all made before the first step, and a
// run that reduces its gradients in bf16 (blocking all-to-alls) is not armed.
#ifndef SHARDRT_LIB_DRIVER_ABANDON_H
#define SHARDRT_LIB_DRIVER_ABANDON_H

#include "driver_modes.h"

#include <cstdint>
#include <functional>
#include <vector>

namespace shardrt {

/// A digest of blocks' bits: any change to an element changes it (but for sums that
/// cancel exactly).
uint64_t digestOf(const std::vector<Block> &params, const std::vector<Block> &state);

/// Arms the stop in the middle of a step for a training run. `abandon(signal)` is
/// called on every rank, from inside the step in progress, once every rank has agreed;
/// it must not return. `params` and `state` are checked against the digest. Collective.
void armAbandon(std::function<void(int signal)> abandon, const std::vector<Block> &params,
                const std::vector<Block> &state);
/// Disarms it at the end of the run. Collective.
void disarmAbandon();
bool abandonArmed();

/// Around the compiled step; and the digest of the parameters and state after each
/// step (the step's health check computes it).
void enterStep();
void leaveStep();
void stepCompleted(uint64_t digest);

} // namespace shardrt

#endif // SHARDRT_LIB_DRIVER_ABANDON_H
