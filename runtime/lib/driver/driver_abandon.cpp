// A stop in the middle of a step (driver_abandon.h).
#include "driver_abandon.h"
#include "collectives/watchdog.h"
#include "driver_stop.h"

#include <mpi.h>

#include <chrono>
#include <thread>

namespace shardrt {
namespace {

constexpr int kNoticeTag = 0x5709;

struct Abandon {
  bool armed = false;
  bool inStep = false;
  bool voted = false; // a vote happened (once per run)
  bool busy = false;  // voting or abandoning: the waits inside are plain waits
  MPI_Comm comm = MPI_COMM_NULL;
  MPI_Request notice = MPI_REQUEST_NULL;
  int noticeValue = 0;
  uint64_t digest = 0;
  const std::vector<Block> *params = nullptr, *state = nullptr;
  std::function<void(int)> abandon;
};

Abandon run;

uint64_t digestOfBlock(const Block &block) {
  const uint32_t *bits = static_cast<const uint32_t *>(block.data());
  const int64_t count = block.count();
  uint64_t sum = 0;
  for (int64_t i = 0; i < count; ++i)
    sum += bits[i];
  return sum;
}

/// What onCollectiveWait does once this rank knows of a stop: pass the notice on, vote,
/// and abandon the step when every rank may.
void vote() {
  run.busy = true;
  run.voted = true;
  int rank = 0, ranks = 1;
  MPI_Comm_rank(run.comm, &rank);
  MPI_Comm_size(run.comm, &ranks);
  static const int one = 1;
  for (int peer = 0; peer < ranks; ++peer)
    if (peer != rank) {
      MPI_Request request;
      MPI_Isend(&one, 1, MPI_INT, peer, kNoticeTag, run.comm, &request);
      MPI_Request_free(&request);
    }
  // Bit 0: this rank cannot abandon the step (outside it, or its update has begun).
  int votes[2] = {!run.inStep || digestOf(*run.params, *run.state) != run.digest, stopBits()};
  MPI_Request request;
  MPI_Iallreduce(MPI_IN_PLACE, votes, 2, MPI_INT, MPI_BOR, run.comm, &request);
  int done = 0;
  for (MPI_Test(&request, &done, MPI_STATUS_IGNORE); !done;
       MPI_Test(&request, &done, MPI_STATUS_IGNORE))
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  if (!votes[0])
    run.abandon(stopSignalOf(votes[1])); // does not return
  run.busy = false;
}

void onCollectiveWait() {
  if (!run.armed || run.busy || run.voted)
    return;
  bool known = stopAbandons();
  if (!known && run.notice != MPI_REQUEST_NULL) {
    int arrived = 0;
    MPI_Test(&run.notice, &arrived, MPI_STATUS_IGNORE);
    known = arrived;
  }
  if (known)
    vote();
}

} // namespace

uint64_t digestOf(const std::vector<Block> &params, const std::vector<Block> &state) {
  uint64_t digest = 0, position = 1;
  for (const std::vector<Block> *blocks : {&params, &state})
    for (const Block &block : *blocks) {
      digest += digestOfBlock(block) * position;
      position += 2;
    }
  return digest;
}

void armAbandon(std::function<void(int)> abandon, const std::vector<Block> &params,
                const std::vector<Block> &state) {
  MPI_Comm_dup(MPI_COMM_WORLD, &run.comm);
  // Every communicator now: MPI_Comm_split, made at a collective's first use, blocks.
  shardrt_make_communicators();
  MPI_Irecv(&run.noticeValue, 1, MPI_INT, MPI_ANY_SOURCE, kNoticeTag, run.comm, &run.notice);
  run.abandon = std::move(abandon);
  run.params = &params;
  run.state = &state;
  run.digest = digestOf(params, state);
  run.inStep = run.voted = run.busy = false;
  run.armed = true;
  setAllReducesInAwait(true);
  setWaitHook(onCollectiveWait);
}

void disarmAbandon() {
  if (!run.armed)
    return;
  setWaitHook(nullptr);
  setAllReducesInAwait(false);
  run.armed = false;
  if (run.notice != MPI_REQUEST_NULL) {
    MPI_Cancel(&run.notice);
    MPI_Wait(&run.notice, MPI_STATUS_IGNORE);
  }
  // Every rank is here: the notices sent are all delivered or unmatched in this
  // communicator, which goes with them.
  MPI_Barrier(run.comm);
  MPI_Comm_free(&run.comm);
  run.abandon = nullptr;
}

bool abandonArmed() { return run.armed; }

void enterStep() { run.inStep = true; }

void leaveStep() { run.inStep = false; }

void stepCompleted(uint64_t digest) { run.digest = digest; }

} // namespace shardrt
