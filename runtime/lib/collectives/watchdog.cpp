// The collective watchdog (watchdog.h).
#include "watchdog.h"
#include "mesh/mesh.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <ctime>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace shardrt {
namespace {

/// One rank's entry on its host's board.
struct Slot {
  std::atomic<int64_t> started;   // collectives started
  std::atomic<int64_t> beatNanos; // CLOCK_MONOTONIC (one clock per host) at the last beat
  std::atomic<int32_t> worldRank;
  std::atomic<int32_t> pid;
};

struct Watch {
  MPI_Comm host = MPI_COMM_NULL;
  MPI_Win window = MPI_WIN_NULL;
  std::vector<Slot *> board; // the host's ranks, this one included
  Slot *own = nullptr;
  int worldRank = 0, worldSize = 1;
  std::atomic<double> timeout{600};
  const char *phase = "start-up";
  int64_t step = 0;
  // The collective waited on.
  const char *kind = "";
  uint32_t axes = 0;
  bool world = false;
  int64_t elements = -1;
  // The timekeeper thread, for the blocking collectives (watchedBlocking).
  std::thread timekeeper;
  std::mutex mutex;
  std::condition_variable wake;
  bool stopping = false;
  std::atomic<int64_t> blockedSince{0}; // CLOCK_MONOTONIC at the blocking call's start; 0: none
};

Watch watch;
void (*waitHook)() = nullptr;
bool allReducesWait = false;

int64_t nowNanos() {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return int64_t(now.tv_sec) * 1000000000 + now.tv_nsec;
}

void beat() {
  if (watch.own)
    watch.own->beatNanos.store(nowNanos(), std::memory_order_relaxed);
}

/// The host's ranks that are behind this one or have not beaten for two seconds.
std::string missingRanks() {
  const int64_t mine = watch.own->started.load(), now = nowNanos();
  std::string text;
  for (Slot *slot : watch.board) {
    if (slot == watch.own)
      continue;
    const int64_t started = slot->started.load();
    const bool behind = started < mine;
    const bool silent = now - slot->beatNanos.load() > 2000000000;
    if (!behind && !silent)
      continue;
    text += (text.empty() ? "" : ", ") + std::string("rank ") +
            std::to_string(slot->worldRank.load()) + " (pid " + std::to_string(slot->pid.load()) +
            (behind ? ", did not arrive" : ", arrived and stopped responding") + ")";
  }
  return text;
}

/// Ends the job for a collective that has waited `waited` seconds. Called from the
/// timekeeper thread too, so it asks MPI nothing but to abort.
[[noreturn]] void timedOut(double waited) {
  const int rank = watch.worldRank, ranks = watch.worldSize;
  const int hostRanks = int(watch.board.size());
  const std::string what =
      std::string(watch.kind) +
      (watch.world ? " over every rank" : " over " + axesText(watch.axes)) +
      (watch.elements >= 0 ? " of " + std::to_string(watch.elements) + " elements" : "");
  const std::string where = watch.step ? std::string(watch.phase) + " " + std::to_string(watch.step)
                                       : std::string(watch.phase);
  std::string missing = missingRanks();
  if (missing.empty())
    missing = "none of this host's ranks is behind or silent";
  std::fprintf(stderr,
               "shardrt: error: rank %d: collective %s (number %lld of this rank, in %s) has "
               "waited %.0f s, past --collective-timeout %g; ranks that did not arrive: %s%s; "
               "ending the job\n",
               rank, what.c_str(), (long long)watch.own->started.load(), where.c_str(), waited,
               watch.timeout.load(), missing.c_str(),
               hostRanks < ranks ? " (ranks on other hosts are not shown)" : "");
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 4);
  std::_Exit(4);
}

/// The timekeeper's loop: every 100 ms, while the main thread is in a blocking
/// collective, it beats for the rank and ends the job past the timeout.
void keepTime() {
  std::unique_lock<std::mutex> lock(watch.mutex);
  while (!watch.stopping) {
    watch.wake.wait_for(lock, std::chrono::milliseconds(100));
    const int64_t since = watch.blockedSince.load(std::memory_order_acquire);
    if (!since)
      continue;
    beat();
    const double waited = double(nowNanos() - since) * 1e-9, timeout = watch.timeout.load();
    if (timeout > 0 && waited > timeout)
      timedOut(waited);
  }
}

} // namespace

void watchInit() {
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &watch.host);
  Slot *mine = nullptr;
  MPI_Win_allocate_shared(sizeof(Slot), 1, MPI_INFO_NULL, watch.host, &mine, &watch.window);
  int rank = 0, hostRanks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &watch.worldSize);
  watch.worldRank = rank;
  MPI_Comm_size(watch.host, &hostRanks);
  new (mine) Slot();
  mine->worldRank.store(rank);
  mine->pid.store(int32_t(getpid()));
  watch.own = mine;
  beat();
  MPI_Barrier(watch.host); // every slot is written before anyone reads one
  watch.board.clear();
  for (int r = 0; r < hostRanks; ++r) {
    MPI_Aint bytes = 0;
    int unit = 0;
    Slot *slot = nullptr;
    MPI_Win_shared_query(watch.window, r, &bytes, &unit, &slot);
    watch.board.push_back(slot);
  }
  watch.stopping = false;
  watch.timekeeper = std::thread(keepTime);
}

void watchFinalize() {
  if (watch.timekeeper.joinable()) {
    {
      std::lock_guard<std::mutex> lock(watch.mutex);
      watch.stopping = true;
    }
    watch.wake.notify_one();
    watch.timekeeper.join();
  }
  if (watch.window != MPI_WIN_NULL)
    MPI_Win_free(&watch.window);
  if (watch.host != MPI_COMM_NULL)
    MPI_Comm_free(&watch.host);
  watch.board.clear();
  watch.own = nullptr;
}

int ranksOnThisHost() { return int(watch.board.size()); }

MPI_Comm hostCommunicator() { return watch.host; }

void setCollectiveTimeout(double seconds) { watch.timeout = seconds; }

void setWatchedPhase(const char *phase, int64_t step) {
  watch.phase = phase;
  watch.step = step;
}

void arrive(const char *kind, uint32_t axes, bool world, int64_t elements) {
  watch.kind = kind;
  watch.axes = axes;
  watch.world = world;
  watch.elements = elements;
  if (watch.own) {
    watch.own->started.fetch_add(1, std::memory_order_relaxed);
    beat();
  }
}

void enterBlocking() { watch.blockedSince.store(nowNanos(), std::memory_order_release); }

void leaveBlocking() { watch.blockedSince.store(0, std::memory_order_release); }

void await(int count, MPI_Request *requests) {
  using Clock = std::chrono::steady_clock;
  const Clock::time_point start = Clock::now();
  int done = 0;
  MPI_Testall(count, requests, &done, MPI_STATUSES_IGNORE);
  while (!done) {
    const double waited = std::chrono::duration<double>(Clock::now() - start).count();
    if (watch.own && watch.timeout > 0 && waited > watch.timeout)
      timedOut(waited);
    if (waited > 1e-3) {
      beat();
      std::this_thread::sleep_for(std::chrono::microseconds(waited > 1.0 ? 10000 : 50));
    }
    if (waitHook)
      waitHook();
    MPI_Testall(count, requests, &done, MPI_STATUSES_IGNORE);
  }
}

void setWaitHook(void (*hook)()) { waitHook = hook; }

void setAllReducesInAwait(bool inAwait) { allReducesWait = inAwait; }

bool allReducesInAwait() { return allReducesWait; }

} // namespace shardrt
