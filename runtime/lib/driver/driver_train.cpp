// The training loop.
//
//  1. The checkpoint folder and the metrics file are opened first, then the data of the
//     inputs bound to files is loaded once per host (driver_data.h); an epoch is
//     floor(train examples / batch) steps, the remainder dropped.
//  2. Everything is allocated once, parameters and optimizer state too: the train
//     entry writes their update over them (the compiled step keeps them as they were
//     where the loss or a gradient is not finite, and returns a NaN loss then).
//  3. Each step: this rank's rows of the batch (prefetched while the step before ran),
//     new synthetic inputs, the 1-based step number, the train entry. Only that is
//     timed.
//  4. After each epoch (and after the last step, inside an epoch or not, and every
//     --eval-every steps) the eval entry runs on the test set.
//  5. A step whose loss or gradients are not finite is never kept: with --on-nonfinite
//     stop (the default) the run ends there with exit 3, naming what went first and
//     the checkpoint to resume from; with skip the step changed nothing, until
//     --max-skips steps in a row were. An update that overflowed from finite gradients
//     is in the parameters already: the run stops, skip or not.
//  6. A stop signal (driver_stop.h) ends the run after the step in progress (the ranks
//     agree on it in the step's health all-reduce), with a checkpoint of it when
//     checkpoints are on, and exit 128 + the signal. With --checkpoint-dir, SIGINT and
//     SIGTERM abandon the step in progress instead, at its next collective wait, and
//     write the checkpoint of the step before it: exit 5 (driver_abandon.h).
//  7. With --checkpoint-dir, checkpoints after the steps the flags ask for; with
//     --resume, the run starts from one: its parameters, state and step, and the data
//     order and random numbers that follow from (seed, step), as if never stopped.
#include "collectives/traffic.h"
#include "collectives/watchdog.h"
#include "driver_abandon.h"
#include "driver_checkpoint.h"
#include "driver_data.h"
#include "driver_eval.h"
#include "driver_health.h"
#include "driver_modes.h"
#include "driver_output.h"
#include "driver_report.h"
#include "driver_stop.h"

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
/// first parameter whose gradient did (the step kept the parameters it started from),
/// or else the first the update made non-finite, and the checkpoint to resume from.
/// Collective.
void explainNonFinite(const Program &program, int64_t step, int health,
                      const std::vector<Block> &params, const std::vector<Block> &state,
                      const std::vector<Block> &inputs, int64_t skippedInARow,
                      const std::string &newestCheckpoint) {
  const bool overflowed = health & kStateNonFinite;
  GradientVerdict gradients;
  if (!overflowed)
    gradients = checkGradients(program, params, inputs);
  std::string where;
  if (!gradients.firstNonFinite.empty()) {
    where = "the first parameter whose gradient is not finite: '" + gradients.firstNonFinite + "'";
  } else {
    std::string culprit = firstNonFiniteBlock(params);
    if (culprit.empty())
      culprit = firstNonFiniteBlock(state);
    where = culprit.empty() ? "every gradient is finite"
                            : "every gradient is finite; the update overflowed '" + culprit + "'";
  }
  if (program.rank != 0)
    return;
  const std::string what = overflowed ? "the update is not finite"
                           : !gradients.lossFinite
                               ? "the loss is not finite"
                               : "the loss is finite, the gradients went non-finite first";
  const std::string why =
      overflowed ? "stopping (an update already applied cannot be skipped)"
      : program.options.skipNonFinite
          ? std::to_string(skippedInARow) +
                (skippedInARow == 1 ? " step was" : " steps in a row were") +
                " not finite and skipped (--max-skips " + std::to_string(program.options.maxSkips) +
                ")"
          : "stopping (--on-nonfinite stop; skip drops such a step's update instead)";
  const std::string kept =
      overflowed ? "the parameters in memory are not finite" : "nothing of this step was kept";
  const std::string resume = newestCheckpoint.empty() ? "no checkpoint was written"
                                                      : "resume from " + newestCheckpoint +
                                                            " (written from finite values)";
  std::fprintf(stderr, "shardrt: error: step %lld: %s (%s); %s; %s; %s\n", (long long)step,
               what.c_str(), where.c_str(), why.c_str(), kept.c_str(), resume.c_str());
}

/// Rank 0 says where a stop signal ended the run (`abandoned`: the step after `step`
/// was cut short), and how to go on.
void explainStop(const Program &program, int signal, int64_t step, int64_t totalSteps,
                 bool abandoned, const std::string &newestCheckpoint) {
  if (program.rank != 0)
    return;
  const std::string &folder = program.options.checkpointDir;
  const std::string saved =
      folder.empty() ? "nothing was saved (no --checkpoint-dir)"
      : newestCheckpoint.empty()
          ? "no step completed, nothing was saved"
          : "checkpoint '" + newestCheckpoint + "' written; go on with --resume " + folder;
  const std::string cut =
      abandoned ? "; step " + std::to_string(step + 1) + " abandoned" : std::string();
  std::fprintf(stderr, "shardrt: %s: stopped after step %lld of %lld%s; %s\n",
               stopSignalName(signal), (long long)step, (long long)totalSteps, cut.c_str(),
               saved.c_str());
}

/// Disarms the stop in the middle of a step however the run ends.
struct Disarm {
  ~Disarm() { disarmAbandon(); }
};

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
  catchStopSignals(options.checkpointSignal);
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
  std::vector<Block> params = allocateBlocks(manifest.params, place), state;
  // State kind major: every parameter's first kind (adam's mu), then the next.
  for (size_t kind = 0; kind < manifest.optimizerState.size(); ++kind)
    for (const TensorSpec &param : manifest.params)
      state.push_back(allocateBlock(param, place));
  std::vector<Block> inputs = allocateBlocks(manifest.inputs, place);
  std::vector<Block> step;
  step.push_back(allocateBlock(kStepSpec, place));
  std::vector<Block> trainResults = allocateBlocks(manifest.trainResults, place);
  std::vector<Block> evalResults = allocateBlocks(manifest.evalResults, place);
  RunPosition resumed; // step 0 when starting afresh
  if (options.resume.empty())
    fillParams(params, options.seed);
  else
    resumed = checkpointer.restore(options.resume, params, state, /*resuming=*/true);
  if (resumed.step >= totalSteps) {
    if (program.rank == 0)
      std::fprintf(stderr,
                   "shardrt: error: the checkpoint is after step %lld, and this run ends at "
                   "step %lld: ask for more with --epochs or --steps\n",
                   (long long)resumed.step, (long long)totalSteps);
    return 2;
  }
  // The train entry updates the parameters and state in place.
  std::vector<void *> trainBuffers = pointersOf({&params, &state, &inputs, &step, &trainResults});
  std::vector<void *> evalBuffers = pointersOf({&params, &inputs, &evalResults});

  TrainingReport report(program, metrics, resumed.step, totalSteps, stepsPerEpoch);
  std::unique_ptr<TrainBatches> batches;
  if (readsData)
    batches = std::make_unique<TrainBatches>(program.data, arrays, inputs, place, options.seed,
                                             stepsPerEpoch, totalSteps, options.prefetch);
  int64_t nonFiniteSteps = 0, skippedInARow = 0;
  double trainSeconds = 0;
  using Clock = std::chrono::steady_clock;
  int64_t current = resumed.step + 1; // the step in progress
  // SIGINT or SIGTERM in the middle of a step, every rank in a collective wait of it and
  // none in its update: the checkpoint of the step before, from the parameters in
  // memory, and out without going back into the step (driver_abandon.h).
  auto abandon = [&](int signal) {
    const int64_t done = current - 1;
    setWatchedPhase("checkpoint of the step before the abandoned", current);
    const int64_t inEpoch = readsData && done ? (done - 1) % stepsPerEpoch + 1 : 0;
    const int64_t epoch = readsData && done ? (done - 1) / stepsPerEpoch + 1 : 0;
    bool saved = true;
    if (done > 0)
      saved = checkpointer.afterStep({done, epoch, inEpoch * batch}, /*lastStep=*/true, params,
                                     state, nullptr);
    if (saved) {
      report.finish(trainSeconds, batches ? batches->waitedSeconds() : 0,
                    trainResults[0].floats()[0], checkpointer, nonFiniteSteps,
                    {done, false, signal, /*abandoned=*/true});
      // Out at once: mpirun's SIGKILL follows its SIGTERM by a second (a loaded rank
      // was killed with its summary still in the buffer).
      std::fflush(nullptr);
      explainStop(program, signal, done, totalSteps, /*abandoned=*/true, checkpointer.newest());
    }
    const bool closed = closeOnRank0(metrics, options.metrics) &&
                        (program.rank != 0 || closeOnRank0(program.out, options.output));
    std::fflush(nullptr);
    // The step's collectives are left in flight: no MPI_Finalize.
    std::_Exit(saved && closed ? kExitAbandoned : 1);
  };
  Disarm disarm;
  // With bf16 gradients the step blocks in MPI's all-to-alls, where a rank cannot vote.
  if (!options.checkpointDir.empty() && !options.gradientsBf16)
    armAbandon(abandon, params, state);
  // Rank 0's clock starts with everyone's.
  watchedWorld("barrier before step 1",
               [](MPI_Request *request) { MPI_Ibarrier(MPI_COMM_WORLD, request); });
  for (int64_t s = resumed.step + 1; s <= totalSteps; ++s) {
    current = s;
    const int64_t epoch = readsData ? (s - 1) / stepsPerEpoch + 1 : 0;
    const int64_t inEpoch = readsData ? (s - 1) % stepsPerEpoch : 0;
    const Clock::time_point start = Clock::now();
    if (batches)
      batches->load(s);
    fillInputs(inputs, stepSeed(options.seed, s), program.data.synthetic);
    step[0].floats()[0] = float(s);
    setWatchedPhase("train step", s);
    startCountingTraffic();
    enterStep();
    program.train(trainBuffers.data());
    leaveStep();
    stopCountingTraffic();
    int signal = 0;
    uint64_t digest = 0;
    const int health = stepHealth(trainResults[0].floats()[0], params, state, signal, digest);
    stepCompleted(digest);
    if (health == kFinite) {
      skippedInARow = 0;
    } else {
      ++nonFiniteSteps;
      ++skippedInARow;
    }
    trainSeconds += std::chrono::duration<double>(Clock::now() - start).count();
    report.step(s, epoch, trainResults, trainSeconds, nonFiniteSteps);
    if (health != kFinite && (!options.skipNonFinite || (health & kStateNonFinite) ||
                              skippedInARow >= options.maxSkips)) {
      explainNonFinite(program, s, health, params, state, inputs, skippedInARow,
                       checkpointer.newest());
      report.finish(trainSeconds, batches ? batches->waitedSeconds() : 0,
                    trainResults[0].floats()[0], checkpointer, nonFiniteSteps,
                    {s, /*nonFinite=*/true, 0});
      return closeOnRank0(metrics, options.metrics) ? 3 : 1;
    }
    const bool epochEnds = inEpoch + 1 == stepsPerEpoch || s == totalSteps;
    Evaluation evaluation;
    const bool evaluates = readsData && options.eval &&
                           (epochEnds || (options.evalEvery && s % options.evalEvery == 0));
    if (evaluates) {
      setWatchedPhase("evaluation after step", s);
      evaluation = evaluate(program, evalBuffers.data(), inputs, evalResults, arrays);
      report.evaluation(s, epoch, evaluation);
    }
    setWatchedPhase("checkpoint after step", s);
    if (!checkpointer.afterStep({s, epoch, (inEpoch + 1) * batch}, s == totalSteps || signal,
                                params, state, evaluates ? &evaluation : nullptr))
      return 1;
    if (signal && s < totalSteps) {
      report.finish(trainSeconds, batches ? batches->waitedSeconds() : 0,
                    trainResults[0].floats()[0], checkpointer, nonFiniteSteps, {s, false, signal});
      explainStop(program, signal, s, totalSteps, /*abandoned=*/false, checkpointer.newest());
      return closeOnRank0(metrics, options.metrics) ? 128 + signal : 1;
    }
  }
  report.finish(trainSeconds, batches ? batches->waitedSeconds() : 0, trainResults[0].floats()[0],
                checkpointer, nonFiniteSteps);
  return closeOnRank0(metrics, options.metrics) ? 0 : 1;
}

} // namespace shardrt
