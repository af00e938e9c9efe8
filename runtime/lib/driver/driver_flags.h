// The command line of a compiled program: one table of flags (driver_flags.cpp), so
// adding one is one row there and one field here.
#ifndef SHARDRT_LIB_DRIVER_FLAGS_H
#define SHARDRT_LIB_DRIVER_FLAGS_H

#include <cstdint>
#include <stdexcept>
#include <string>

namespace shardrt {

/// What the program runs: the training loop, the forward pass once, or the
/// finite-difference check of its gradients.
enum class Mode { Train, Forward, CheckGradients };

struct DriverOptions {
  Mode mode = Mode::Train;
  uint64_t seed = 0;  // of the parameter initialisers, the shuffle and the synthetic inputs
  std::string output; // the final JSON; empty for stdout

  // Training.
  std::string data = "/usr/share/datasets/fashion-mnist";
  int64_t epochs = 1;
  int64_t steps = 0;   // 0: `epochs` epochs
  std::string metrics; // JSON lines; empty for none
  int64_t logEvery = 1;
  bool eval = true;

  // Checkpoints (driver_checkpoint.h).
  std::string checkpointDir;        // empty: no checkpoints
  int64_t checkpointEvery = 0;      // steps; 0: after each epoch (without a dataset: at the end)
  double checkpointSeconds = 0;     // 0: no interval in seconds
  int64_t keep = 5;                 // checkpoints of each series kept
  std::string bestMetric;           // an eval result; empty: no best series
  bool bestHigher = true;           // its direction
  std::string resume;               // a checkpoint file, or a folder (its newest)
  bool seedGiven = false;           // --seed was given (it must agree with --resume)
  // A step whose loss or new state is not finite (driver_health.h).
  bool skipNonFinite = false;       // false: stop at the first (exit 3)
  int64_t maxSkips = 10;            // skip: consecutive skipped steps before stopping
  bool checkMemory = true;          // refuse to start when a rank needs more than the host offers
  double collectiveTimeout = 600;   // seconds a collective may wait (watchdog.h); 0: for ever

  // --forward.
  int64_t values = 8; // leading values printed per result

  // --check-gradients.
  int64_t fdSamples = 6;
  double fdEps = 1e-2, fdRtol = 2e-2, fdAtol = 1e-3;

  bool help = false;
};

/// A bad command line; what() says what is wrong.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Parses argv[1..argc). Flags take their value as the next argument or after '='
/// (`--seed 3`, `--seed=3`). Throws UsageError.
DriverOptions parseFlags(int argc, char **argv);

/// The --help text.
std::string usageText(const char *program);

} // namespace shardrt

#endif // SHARDRT_LIB_DRIVER_FLAGS_H
