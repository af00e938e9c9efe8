// See driver_stop.h.
#include "driver_stop.h"
#include "collectives/watchdog.h"

#include <mpi.h>
#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <csignal>
#include <cstring>
#include <thread>

namespace shardrt {
namespace {

// The signals --checkpoint-signal may name: the usual early warnings, each of which
// ends the process by default (so that a run that does not catch it ends as before).
const struct {
  const char *name;
  int signal;
} kCheckpointSignals[] = {{"USR1", SIGUSR1}, {"USR2", SIGUSR2}, {"HUP", SIGHUP},
                          {"ALRM", SIGALRM}, {"XCPU", SIGXCPU}, {"VTALRM", SIGVTALRM},
                          {"PROF", SIGPROF}};

std::atomic<int> received{0};         // the first stop signal, 0: none
std::atomic<pid_t> firstSender{0};    // who sent it (0: the kernel, e.g. a terminal's ^C)
std::atomic<int> checkpointSignal{0}; // --checkpoint-signal, 0: none
static_assert(std::atomic<int>::is_always_lock_free, "read in a signal handler");
static_assert(std::atomic<pid_t>::is_always_lock_free, "read in a signal handler");

extern "C" void recordStop(int signal, siginfo_t *info, void *) {
  int first = 0; // on failure: the first stop signal
  const pid_t sender = info ? info->si_pid : 0;
  if (received.compare_exchange_strong(first, signal)) {
    firstSender = sender;
    return;
  }
  // The same signal from another process is the same request delivered twice: Slurm
  // signals every process of a job and mpirun forwards its own copy, a terminal's ^C
  // reaches mpirun and the ranks. Asked again by the same sender, or by another signal:
  // the user wants it gone now. The signal is blocked in this thread while its handler
  // runs, so it arrives, and ends the process, once we return.
  if (signal == first && sender != firstSender)
    return;
  std::signal(signal, SIG_DFL);
  std::raise(signal);
}

} // namespace

int checkpointSignalNamed(const std::string &name) {
  std::string upper;
  for (char c : name)
    upper += char(std::toupper(static_cast<unsigned char>(c)));
  if (upper == "NONE")
    return 0;
  if (upper.rfind("SIG", 0) == 0)
    upper = upper.substr(3);
  for (const auto &known : kCheckpointSignals)
    if (upper == known.name)
      return known.signal;
  return -1;
}

const char *checkpointSignalNames() { return "USR1, USR2, HUP, ALRM, XCPU, VTALRM, PROF, none"; }

void catchStopSignals(int signalNumber) {
  static std::atomic<bool> caught{false};
  if (caught.exchange(true))
    return;
  checkpointSignal = signalNumber;
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  if (signalNumber)
    sigaddset(&set, signalNumber);
  struct sigaction action {};
  action.sa_sigaction = recordStop;
  sigfillset(&action.sa_mask); // one handler at a time
  // SA_RESTART: system calls in progress (MPI's polls, writes) go on.
  action.sa_flags = SA_RESTART | SA_SIGINFO;
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
  if (signalNumber)
    sigaction(signalNumber, &action, nullptr);
  // The thread that takes them, started before they are blocked here: it inherits
  // this thread's mask as it is now.
  std::thread([] {
    for (;;)
      pause();
  }).detach();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

bool stopReceived() { return received.load() != 0; }

bool stopAbandons() {
  const int signal = received.load();
  return signal == SIGINT || signal == SIGTERM;
}

int stopBits() {
  const int signal = received.load();
  return signal == SIGINT ? 1 : signal == SIGTERM ? 2 : signal ? 4 : 0;
}

int stopSignalOf(int bits) {
  return bits & 2 ? SIGTERM : bits & 1 ? SIGINT : bits & 4 ? checkpointSignal.load() : 0;
}

int stopSignal() {
  int bits = stopBits();
  watchedWorld("all_reduce of the stop signal", [&](MPI_Request *request) {
    MPI_Iallreduce(MPI_IN_PLACE, &bits, 1, MPI_INT, MPI_BOR, MPI_COMM_WORLD, request);
  });
  return stopSignalOf(bits);
}

const char *stopSignalName(int signal) {
  switch (signal) {
  case SIGINT:
    return "SIGINT";
  case SIGTERM:
    return "SIGTERM";
  case SIGUSR1:
    return "SIGUSR1";
  case SIGUSR2:
    return "SIGUSR2";
  case SIGHUP:
    return "SIGHUP";
  case SIGALRM:
    return "SIGALRM";
  case SIGXCPU:
    return "SIGXCPU";
  case SIGVTALRM:
    return "SIGVTALRM";
  case SIGPROF:
    return "SIGPROF";
  default:
    return "a signal";
  }
}

} // namespace shardrt
