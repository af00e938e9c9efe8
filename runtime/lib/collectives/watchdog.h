// The collective watchdog (--collective-timeout): every collective of the runtime, the
// compiled steps' and the driver's own, is timed.
//
//  1. Most start their MPI operation without blocking and wait in await, which polls
//     for a millisecond (a collective that is on time costs nothing more), then sleeps
//     between polls, 50 us at first and 10 ms once a second has passed: a stalled
//     collective does not burn a core. The all-reduces call MPI's blocking
//     MPI_Allreduce, which is faster (bench/runtime), and a thread of the runtime's,
//     the timekeeper, times them instead.
//  2. Each rank counts the collectives it has started and, while it waits, beats a
//     clock, on a board in memory shared by the ranks of its host.
//  3. When a collective has waited past the timeout, the rank reads the board, names
//     the collective, the step and the ranks that did not arrive (fewer collectives
//     started than its own) or stopped (no beat for two seconds), and ends the job
//     with MPI_Abort, exit status 4. Ranks on other hosts are not on the board.
#ifndef SHARDRT_LIB_WATCHDOG_H
#define SHARDRT_LIB_WATCHDOG_H

#include <mpi.h>

#include <cstdint>

namespace shardrt {

/// Sets up the board among this host's ranks; shardrt_init calls it. Collective.
void watchInit();
void watchFinalize();

/// How many ranks run on this rank's host (the board's size), itself included.
int ranksOnThisHost();
/// The communicator of this host's ranks, ordered by world rank.
MPI_Comm hostCommunicator();

/// The timeout in seconds (600 until set; 0 waits for ever), and what the ranks are
/// doing, for the message: a phase ("train step", "evaluation") and a step (0: none).
void setCollectiveTimeout(double seconds);
void setWatchedPhase(const char *phase, int64_t step);

/// Marks the start of one collective, by its kind, the mesh axes it spans (as a mask;
/// `world` for the driver's own over every rank) and the elements this rank puts in
/// (-1: not said), as the report lists them. Every rank starts the same sequence of
/// collectives.
void arrive(const char *kind, uint32_t axes, bool world = false, int64_t elements = -1);

/// Waits for `requests` as described above. While it polls, it calls the wait hook.
void await(int count, MPI_Request *requests);

/// A function await calls on every poll after its first (the driver's stop in the
/// middle of a step, driver_abandon.h); nullptr: none. It may not return.
void setWaitHook(void (*hook)());

/// Whether the all-reduces too start a nonblocking MPI operation and wait in await, so
/// that a rank in one can take part in a stop (default: MPI's blocking all-reduce,
/// timed by the timekeeper). Every rank sets the same.
void setAllReducesInAwait(bool inAwait);
bool allReducesInAwait();

/// Around a blocking MPI collective: a thread of the runtime's keeps its time
/// meanwhile, beating for the rank and ending the job past the timeout as await does.
void enterBlocking();
void leaveBlocking();

/// A blocking collective of `elements` over mesh `axes`: arrive, call(), timed by
/// the timekeeper thread.
template <typename Call>
void watchedBlocking(const char *kind, uint32_t axes, int64_t elements, Call call) {
  arrive(kind, axes, /*world=*/false, elements);
  enterBlocking();
  call();
  leaveBlocking();
}

/// One of the driver's collectives over every rank: arrive, issue(&request) starts it,
/// await.
template <typename Issue> void watchedWorld(const char *kind, Issue issue) {
  arrive(kind, 0, /*world=*/true);
  MPI_Request request;
  issue(&request);
  await(1, &request);
}

} // namespace shardrt

#endif // SHARDRT_LIB_WATCHDOG_H
