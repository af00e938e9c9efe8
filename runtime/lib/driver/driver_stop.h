// Clean stops: SIGINT or SIGTERM (Ctrl-C, `kill`, or mpirun passing either on to its
// ranks) ends a training run between two steps, after the checkpoint of the last step
// finished, instead of killing it inside one.
//
// mpirun sends each rank SIGTERM when it is interrupted, and SIGKILL a second later
// (OpenMPI's odls_base_sigkill_timeout, 1 s by default): the step in progress, one
// all-reduce and the checkpoint must fit in that second, or the run loses only what
// a kill loses (the newest checkpoint written stays whole).
#ifndef SHARDRT_LIB_DRIVER_STOP_H
#define SHARDRT_LIB_DRIVER_STOP_H

namespace shardrt {

/// From here on, the first SIGINT or SIGTERM is recorded for stopSignal; a second one
/// ends the process as the signal would have.
void catchStopSignals();

/// Whether this process has received one (no collective: to cut a wait short).
bool stopReceived();

/// The stop signal any rank has received (SIGTERM before SIGINT), or 0. Collective
/// over every rank, so that all of them stop after the same step. Training agrees on
/// it in the step's health all-reduce instead (driver_health.h): this process's
/// signal as bits to OR over the ranks, and the signal they mean.
int stopSignal();
int stopBits();
int stopSignalOf(int bits);

/// "SIGINT" or "SIGTERM".
const char *stopSignalName(int signal);

} // namespace shardrt

#endif // SHARDRT_LIB_DRIVER_STOP_H
