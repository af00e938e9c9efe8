// Clean stops: SIGINT, SIGTERM (Ctrl-C, `kill`, mpirun or Slurm passing either on to the
// ranks) and the early-warning signal of --checkpoint-signal (SIGUSR1 by default; Slurm's
// `--signal`) end a training run at the next safe point, with a checkpoint of the last
// completed step, instead of killing it inside one. A second one ends the process at
// once, as the signal would have; the newest checkpoint written stays whole (they are
// written atomically: checkpoint_file.h).
//
// No handler ever runs on the thread that computes. The main thread, and every thread
// it starts after catchStopSignals (the batch prefetch, oneDNN's and OpenMP's workers),
// blocks these signals; a thread of this file's, and MPI's own progress threads, take
// them. oneDNN 2.x's AVX2 sgemm kernel (what its f32 matmul runs on a CPU without
// AVX-512, a Zen 3) points %rsp into a workspace on the heap while it runs: a handler
// run on that thread wrote its signal frame (about 3 KiB with the AVX-512 state) over
// the malloc chunks below it, and the rank died later in free() (oneDNN issue 4845,
// fixed in 3.11; Debian 12 ships 2.6.3). Seen in the core dumps of ranks that
// mpirun's SIGTERM had reached inside shardrt_matmul_f32.
//
// What each signal does (runTraining): the early-warning signal finishes the step in
// progress, then checkpoints; SIGINT and SIGTERM, which a kill follows, abandon the step
// in progress at its next collective wait where the run is set up for it
// (driver_abandon.h), else finish it.
#ifndef SHARDRT_LIB_DRIVER_STOP_H
#define SHARDRT_LIB_DRIVER_STOP_H

#include <string>

namespace shardrt {

/// The signal a --checkpoint-signal value names ("USR1", "SIGUSR1", "usr2", "HUP",
/// "ALRM", "XCPU", ...; those whose default action ends the process), 0 for "none", -1
/// for a name it does not take.
int checkpointSignalNamed(const std::string &name);
/// The names checkpointSignalNamed takes, for an error message.
const char *checkpointSignalNames();

/// From here on SIGINT, SIGTERM and `checkpointSignal` (0: none) are recorded for
/// stopSignal; a second one ends the process as the signal would have. Blocks them in
/// the calling thread (and so in the threads it starts later) and starts the thread
/// that takes them. Once per process.
void catchStopSignals(int checkpointSignal);

/// Whether this process has received one (no collective: to cut a wait short).
bool stopReceived();
/// Whether the one received asks to abandon the step in progress (SIGINT, SIGTERM).
bool stopAbandons();

/// The stop signal any rank has received (SIGTERM before SIGINT before the
/// checkpoint signal), or 0. Collective over every rank, so that all of them stop after
/// the same step. Training agrees on it in the step's health all-reduce instead
/// (driver_health.h): this process's signal as bits to OR over the ranks, and the
/// signal they mean.
int stopSignal();
int stopBits();
int stopSignalOf(int bits);

/// "SIGINT", "SIGTERM", "SIGUSR1", ...
const char *stopSignalName(int signal);

} // namespace shardrt

#endif // SHARDRT_LIB_DRIVER_STOP_H
