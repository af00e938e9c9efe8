// The settings of a run: a run configuration file (JSON, `--config FILE`) and the
// command line, which overrides it. One table (driver_flags.cpp) gives every setting
// its flag, its configuration key (the flag without its dashes, '-' as '_') and its
// type, so adding one is one row there and one field here.
#ifndef SHARDRT_LIB_DRIVER_FLAGS_H
#define SHARDRT_LIB_DRIVER_FLAGS_H

#include "shardrt/shardrt.h"

#include <nlohmann/json.hpp>

#include <csignal>
#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace shardrt {

/// What the program runs: the training loop, evaluations of checkpoints (an eval job),
/// the forward pass once, the finite-difference check of its gradients, or the report
/// page from a metrics file.
enum class Mode { Train, Evaluate, Forward, CheckGradients, Generate, Page };

/// Where an input's numbers come from, as the configuration or a flag says it:
/// "synthetic", or a file or folder with what to take from it (driver_bindings.h
/// resolves it against the program's inputs).
struct Binding {
  bool synthetic = false;
  std::string path;   // absolute, or relative to the current folder
  std::string format; // npy, npz, safetensors, idx, images, tokens, text; empty: from the path
  std::string field;  // npz member, safetensors tensor, images image|label, tokens inputs|targets
  std::string elementType;     // tokens: uint8, uint16 (default), uint32
  std::optional<double> scale; // into f32; default 1/255 from uint8, else 1
  std::string slice;           // TFDS-style "[:90%]", "[100:]"; empty: every example
  std::string origin;          // where it was given, for messages
};

/// Input name -> binding, for the training steps and for the evaluations.
struct DataBindings {
  std::map<std::string, Binding> train, eval;
  bool synthetic = false; // --synthetic: inputs bound nowhere get synthetic numbers
};

struct DriverOptions {
  Mode mode = Mode::Train;
  uint64_t seed = 0;  // of the parameter initialisers, the shuffle and the synthetic inputs
  std::string output; // the final JSON; empty for stdout

  // Training.
  DataBindings data;
  bool prefetch = true; // load the next batch while a step runs
  int64_t epochs = 1;
  int64_t steps = 0;       // 0: `epochs` epochs
  std::string metrics;     // JSON lines; empty for none
  std::string reportPage;  // the run's HTML report page (driver_page.h); empty for none
  std::string fromMetrics; // --from-metrics: make the page from this metrics file instead
  int64_t logEvery = 1;
  // A progress line on stderr every logInterval seconds, or steps (JAXline's
  // log_train_data_interval and interval_type), and after the last step.
  double logInterval = 10;
  bool logIntervalInSteps = false;
  bool eval = true;
  int64_t evalEvery = 0; // also evaluate every N steps; 0: after each epoch only

  // Checkpoints (driver_checkpoint.h).
  std::string checkpointDir;    // empty: no checkpoints
  int64_t checkpointEvery = 0;  // steps; 0: after each epoch (without a dataset: at the end)
  double checkpointSeconds = 0; // 0: no interval in seconds
  int64_t keep = 5;             // checkpoints of each series kept
  std::string bestMetric;       // an eval result; empty: no best series
  bool bestHigher = true;       // its direction
  std::string resume;           // a checkpoint file, or a folder (its newest)
  bool seedGiven = false;       // --seed was given (it must agree with --resume)
  // A step whose loss or new state is not finite (driver_health.h).
  bool skipNonFinite = false;     // false: stop at the first (exit 3)
  int64_t maxSkips = 10;          // skip: consecutive skipped steps before stopping
  bool checkMemory = true;        // refuse to start when a rank needs more than the host offers
  double collectiveTimeout = 600; // seconds a collective may wait (watchdog.h); 0: for ever
  int checkpointSignal = SIGUSR1; // --checkpoint-signal; 0: none (driver_stop.h)
  bool matmulBf16 = false;        // matrix products in bfloat16 (dnnl_matmul.h)
  bool gradientsBf16 = false;     // gradients reduced in bfloat16 (shardrt.h)
  bool overlapGradients = false;  // gradients' reductions in flight (shardrt.h)
  shardrt_prefetch prefetchWeights = SHARDRT_PREFETCH_ACROSS_HOSTS; // FSDP's gathers in flight

  // --evaluate: a checkpoint file, or a folder (its newest, then the new ones every
  // `poll` seconds when poll > 0).
  std::string evaluate;
  double poll = 0;

  // --forward.
  int64_t values = 8; // leading values printed per result

  // --generate (driver_generate.cpp): from the checkpoint `resume`.
  std::string prompt, promptFile; // the prompt's bytes: the text, or a file's
  int64_t maxTokens = 0;          // new tokens per sample; 0: up to the context
  double temperature = 1;         // 0: the most likely token (greedy)
  int64_t topK = 0;               // 0: every token
  double topP = 1;                // 1: every token
  int64_t samples = 1;
  std::string logits;     // .npy of the last buffer's logits; empty for none
  bool recompute = false; // the eval entry over the whole prefix, not the decode step

  // --check-gradients.
  int64_t fdSamples = 6;
  double fdEps = 1e-2, fdRtol = 2e-2, fdAtol = 1e-3;

  bool help = false;
  std::string config; // the run configuration file, if any

  /// Every setting as a run configuration would give it (the effective configuration,
  /// defaults included), for the summary and checkpoints.
  nlohmann::json effective;
};

/// A bad command line; what() says what is wrong.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// The settings the program was compiled with (`compiled`: a JSON object of
/// configuration keys, the manifest's `settings`, or empty), then the run configuration
/// `--config FILE` (if given), then the flags in argv[1..argc), each overriding the one
/// before. Flags take their value as the next argument or after '=' (`--seed 3`,
/// `--seed=3`). A configuration key that does not exist (the nearest is suggested) or
/// whose value has another type than its flag takes is an error, like a bad flag.
/// Throws UsageError.
DriverOptions parseSettings(int argc, char **argv, const std::string &compiled = "");

/// The --help text.
std::string usageText(const char *program);

/// " (did you mean 'epochs'?)" when one of `known` is a likely typo of `name`, else "".
std::string didYouMean(const std::string &name, const std::vector<std::string> &known);

} // namespace shardrt

#endif // SHARDRT_LIB_DRIVER_FLAGS_H
