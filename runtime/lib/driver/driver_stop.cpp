// See driver_stop.h.
#include "driver_stop.h"
#include "collectives/watchdog.h"

#include <mpi.h>

#include <csignal>

namespace shardrt {
namespace {

volatile std::sig_atomic_t received = 0;

extern "C" void recordStop(int signal) {
  if (received) {
    // Asked twice: the user wants it gone now.
    std::signal(signal, SIG_DFL);
    std::raise(signal);
    return;
  }
  received = signal;
}

} // namespace

void catchStopSignals() {
  struct sigaction action {};
  action.sa_handler = recordStop;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART; // system calls in progress (MPI's polls, writes) go on
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

bool stopReceived() { return received != 0; }

int stopBits() { return received == SIGINT ? 1 : received == SIGTERM ? 2 : 0; }

int stopSignalOf(int bits) { return bits & 2 ? SIGTERM : bits & 1 ? SIGINT : 0; }

int stopSignal() {
  int bits = stopBits();
  watchedWorld("all_reduce of the stop signal", [&](MPI_Request *request) {
    MPI_Iallreduce(MPI_IN_PLACE, &bits, 1, MPI_INT, MPI_BOR, MPI_COMM_WORLD, request);
  });
  return stopSignalOf(bits);
}

const char *stopSignalName(int signal) { return signal == SIGINT ? "SIGINT" : "SIGTERM"; }

} // namespace shardrt
