// The training loop.
//
//  1. The checkpoint folder and the metrics file are opened first, then the data of the
//     inputs bound to files is loaded once per host (driver_data.h); an epoch is
//     floor(train examples / batch) steps, the remainder dropped.
//  2. Everything is allocated once: parameters and optimizer state twice, since the
//     train entry reads one set and writes the other; the two swap roles after each
//     step (two pointer tables, no copy).
//  3. Each step: this rank's rows of the batch (prefetched while the step before ran),
//     new synthetic inputs, the 1-based step number, the train entry. Only that is
//     timed.
//  4. After each epoch (and after the last step, inside an epoch or not, and every
//     --eval-every steps) the eval entry runs on the test set.
//  5. A step whose loss or new parameters and state are not finite is never kept:
//     with --on-nonfinite stop (the default) the run ends there with exit 3, naming
//     what went first and the checkpoint to resume from; with skip its update is
//     dropped (the sets do not swap) until --max-skips steps in a row were.
//  6. SIGINT or SIGTERM ends the run after the step in progress (the ranks agree on it
//     in the step's health all-reduce), with a checkpoint of it when checkpoints are
//     on, and exit 128 + the signal (driver_stop.h).
//  7. With --checkpoint-dir, checkpoints after the steps the flags ask for; with
//     --resume, the run starts from one: its parameters, state and step, and the data
//     order and random numbers that follow from (seed, step), as if never stopped.
#include "driver_checkpoint.h"
#include "driver_data.h"
#include "driver_eval.h"
#include "driver_health.h"
#include "driver_modes.h"
#include "driver_output.h"
#include "driver_report.h"
#include "driver_stop.h"
#include "../watchdog.h"

#include <mpi.h>

#include <chrono>
#include <memory>

namespace shardrt {
namespace {

/// The `step` buffer: an f32 scalar.
const TensorSpec kStepSpec = [] {
  TensorSpec spec;
  spec.name = "step";
  return spec;
}();

/// Why the run stops at non-finite step `step` (rank 0 says it): what went first, the
/// first parameter whose gradient did (from `before`, the step's parameters), or else
/// the first the update made non-finite, and the checkpoint to resume from. Collective.
void explainNonFinite(const Program &program, int64_t step, int health,
                      const std::vector<Block> &before, const std::vector<Block> &newParams,
                      const std::vector<Block> &newState, const std::vector<Block> &inputs,
                      int64_t skippedInARow, const std::string &newestCheckpoint) {
  std::string culprit = firstNonFiniteGradient(program, before, inputs);
  std::string where;
  if (!culprit.empty()) {
    where = "the first parameter whose gradient is not finite: '" + culprit + "'";
  } else {
    culprit = firstNonFiniteBlock(newParams);
    if (culprit.empty())
      culprit = firstNonFiniteBlock(newState);
    where = culprit.empty() ? "every gradient is finite"
                            : "every gradient is finite; the update overflowed '" + culprit + "'";
  }
  if (program.rank != 0)
    return;
  const std::string what = health & kLossNonFinite
                               ? "the loss is not finite"
                               : "the loss is finite, the gradients went non-finite first";
  const std::string why =
      program.options.skipNonFinite
          ? std::to_string(skippedInARow) +
                (skippedInARow == 1 ? " step was" : " steps in a row were") +
                " not finite and skipped (--max-skips " +
                std::to_string(program.options.maxSkips) + ")"
          : "stopping (--on-nonfinite stop; skip drops such a step's update instead)";
  const std::string resume =
      newestCheckpoint.empty()
          ? "no checkpoint was written"
          : "resume from " + newestCheckpoint + " (written from finite values)";
  std::fprintf(stderr, "shardrt: error: step %lld: %s (%s); %s; nothing of this step was kept; %s\n",
               (long long)step, what.c_str(), where.c_str(), why.c_str(), resume.c_str());
}

/// Rank 0 says where a stop signal ended the run, and how to go on.
void explainStop(const Program &program, int signal, int64_t step, int64_t totalSteps,
                 const std::string &newestCheckpoint) {
  if (program.rank != 0)
    return;
  const std::string &folder = program.options.checkpointDir;
  const std::string saved =
      folder.empty() ? "nothing was saved (no --checkpoint-dir)"
                     : "checkpoint '" + newestCheckpoint + "' written; go on with --resume " +
                           folder;
  std::fprintf(stderr, "shardrt: %s: stopped after step %lld of %lld; %s\n",
               stopSignalName(signal), (long long)step, (long long)totalSteps, saved.c_str());
}

} // namespace

int runTraining(const Program &program) {
  const Manifest &manifest = program.manifest;
  const DriverOptions &options = program.options;
  const bool readsData = program.data.readsData;
  const int64_t batch = program.data.batch;
  const int64_t stepsPerEpoch = readsData ? program.data.train.examples / batch : 0;
  int64_t totalSteps = options.steps;
  if (!totalSteps && __builtin_mul_overflow(options.epochs, stepsPerEpoch, &totalSteps)) {
    if (program.rank == 0)
      std::fprintf(stderr, "shardrt: error: %lld epochs are too many steps\n",
                   (long long)options.epochs);
    return 2;
  }
  catchStopSignals();
  // The folder's lock first: a second run on it stops before touching any file.
  Checkpointer checkpointer(program, stepsPerEpoch);
  if (!checkpointer.prepare())
    return 1;
  bool opened = false;
  std::FILE *metrics = openOnRank0(options.metrics, nullptr, program.rank, opened);
  if (!opened)
    return 1;
  // The data last: loading it may take a while (decoding an image folder), and a
  // mistyped output should not wait for it.
  DataArrays arrays;
  if (readsData && !loadData(program.data, arrays))
    return 1;

  const Placement &place = program.place;
  std::vector<Block> params[2], state[2];
  for (int set = 0; set < 2; ++set) {
    params[set] = allocateBlocks(manifest.params, place);
    // State kind major: every parameter's first kind (adam's mu), then the next.
    for (size_t kind = 0; kind < manifest.optimizerState.size(); ++kind)
      for (const TensorSpec &param : manifest.params)
        state[set].push_back(allocateBlock(param, place));
  }
  std::vector<Block> inputs = allocateBlocks(manifest.inputs, place);
  std::vector<Block> step;
  step.push_back(allocateBlock(kStepSpec, place));
  std::vector<Block> trainResults = allocateBlocks(manifest.trainResults, place);
  std::vector<Block> evalResults = allocateBlocks(manifest.evalResults, place);
  RunPosition resumed; // step 0 when starting afresh
  if (options.resume.empty())
    fillParams(params[0], options.seed);
  else
    resumed = checkpointer.restore(options.resume, params[0], state[0], /*resuming=*/true);
  if (resumed.step >= totalSteps) {
    if (program.rank == 0)
      std::fprintf(stderr,
                   "shardrt: error: the checkpoint is after step %lld, and this run ends at "
                   "step %lld: ask for more with --epochs or --steps\n",
                   (long long)resumed.step, (long long)totalSteps);
    return 2;
  }
  // Table c reads set c and writes set 1 - c.
  std::vector<void *> trainBuffers[2], evalBuffers[2];
  for (int c = 0; c < 2; ++c) {
    trainBuffers[c] = pointersOf(
        {&params[c], &state[c], &inputs, &step, &params[1 - c], &state[1 - c], &trainResults});
    evalBuffers[c] = pointersOf({&params[c], &inputs, &evalResults});
  }

  TrainingReport report(program, metrics, resumed.step, totalSteps, stepsPerEpoch);
  std::unique_ptr<TrainBatches> batches;
  if (readsData)
    batches = std::make_unique<TrainBatches>(program.data, arrays, inputs, place, options.seed,
                                             stepsPerEpoch, totalSteps, options.prefetch);
  int current = 0;
  int64_t nonFiniteSteps = 0, skippedInARow = 0;
  double trainSeconds = 0;
  using Clock = std::chrono::steady_clock;
  // Rank 0's clock starts with everyone's.
  watchedWorld("barrier before step 1", [](MPI_Request *request) {
    MPI_Ibarrier(MPI_COMM_WORLD, request);
  });
  for (int64_t s = resumed.step + 1; s <= totalSteps; ++s) {
    const int64_t epoch = readsData ? (s - 1) / stepsPerEpoch + 1 : 0;
    const int64_t inEpoch = readsData ? (s - 1) % stepsPerEpoch : 0;
    const Clock::time_point start = Clock::now();
    if (batches)
      batches->load(s);
    fillInputs(inputs, stepSeed(options.seed, s), program.data.synthetic);
    step[0].floats()[0] = float(s);
    setWatchedPhase("train step", s);
    program.train(trainBuffers[current].data());
    int signal = 0;
    const int health = stepHealth(trainResults[0].floats()[0], params[1 - current],
                                  state[1 - current], signal);
    if (health == kFinite) {
      current = 1 - current;
      skippedInARow = 0;
    } else {
      ++nonFiniteSteps;
      ++skippedInARow;
    }
    trainSeconds += std::chrono::duration<double>(Clock::now() - start).count();
    report.step(s, epoch, trainResults, trainSeconds, nonFiniteSteps);
    if (health != kFinite && (!options.skipNonFinite || skippedInARow >= options.maxSkips)) {
      explainNonFinite(program, s, health, params[current], params[1 - current],
                       state[1 - current], inputs, skippedInARow, checkpointer.newest());
      report.finish(trainSeconds, batches ? batches->waitedSeconds() : 0,
                    trainResults[0].floats()[0], checkpointer, nonFiniteSteps,
                    {s, /*nonFinite=*/true, 0});
      return closeOnRank0(metrics, options.metrics) ? 3 : 1;
    }
    const bool epochEnds = inEpoch + 1 == stepsPerEpoch || s == totalSteps;
    Evaluation evaluation;
    const bool evaluates =
        readsData && options.eval &&
        (epochEnds || (options.evalEvery && s % options.evalEvery == 0));
    if (evaluates) {
      setWatchedPhase("evaluation after step", s);
      evaluation =
          evaluate(program, evalBuffers[current].data(), inputs, evalResults, arrays);
      report.evaluation(s, epoch, evaluation);
    }
    setWatchedPhase("checkpoint after step", s);
    if (!checkpointer.afterStep({s, epoch, (inEpoch + 1) * batch}, s == totalSteps || signal,
                                params[current], state[current],
                                evaluates ? &evaluation : nullptr))
      return 1;
    if (signal && s < totalSteps) {
      report.finish(trainSeconds, batches ? batches->waitedSeconds() : 0,
                    trainResults[0].floats()[0], checkpointer, nonFiniteSteps, {s, false, signal});
      explainStop(program, signal, s, totalSteps, checkpointer.newest());
      return closeOnRank0(metrics, options.metrics) ? 128 + signal : 1;
    }
  }
  report.finish(trainSeconds, batches ? batches->waitedSeconds() : 0,
                trainResults[0].floats()[0], checkpointer, nonFiniteSteps);
  return closeOnRank0(metrics, options.metrics) ? 0 : 1;
}

} // namespace shardrt
