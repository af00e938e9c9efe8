// The eval job (--evaluate), as JAXline runs one beside training: the parameters of a
// checkpoint, restored onto this program's mesh whatever mesh wrote them, evaluated on
// the eval split, with the same stderr line and metrics line as training's evaluations
// (the metrics file is appended to, so it may be the training run's). On a folder it
// takes the newest checkpoint; with --poll it then waits for newer ones, evaluating
// the newest each time it looks, until the checkpoint of the run's last step or a stop
// signal.
#include "driver_checkpoint.h"
#include "driver_data.h"
#include "driver_eval.h"
#include "driver_json.h"
#include "driver_modes.h"
#include "driver_output.h"
#include "driver_report.h"
#include "driver_stop.h"

#include <chrono>
#include <thread>

namespace shardrt {

int runEvaluation(const Program &program) {
  const Manifest &manifest = program.manifest;
  const DriverOptions &options = program.options;
  catchStopSignals(program.options.checkpointSignal);
  bool opened = false;
  std::FILE *metrics = openOnRank0(options.metrics, nullptr, program.rank, opened, "a");
  if (!opened)
    return 1;
  DataPlan evalOnly = program.data;
  evalOnly.train = {};
  DataArrays arrays;
  if (!loadData(evalOnly, arrays))
    return 1;

  const Placement &place = program.place;
  std::vector<Block> params = allocateBlocks(manifest.params, place);
  std::vector<Block> inputs = allocateBlocks(manifest.inputs, place);
  std::vector<Block> results = allocateBlocks(manifest.evalResults, place);
  std::vector<void *> buffers = pointersOf({&params, &inputs, &results});

  const int64_t stepsPerEpoch = program.data.train.examples / program.data.batch;
  const int64_t lastStep = options.steps ? options.steps : options.epochs * stepsPerEpoch;
  TrainingReport report(program, metrics, 0, lastStep, stepsPerEpoch);
  const bool polls = options.poll > 0;
  int64_t evaluatedStep = -1, evaluated = 0;
  Evaluation last;
  int signal = 0;
  for (;;) {
    std::string path;
    if (int status = findCheckpointToRead(manifest, options, program.rank, evaluatedStep, path))
      return status;
    if (!path.empty()) {
      Checkpointer checkpointer(program, stepsPerEpoch);
      const RunPosition at = checkpointer.restore(path, params, /*state=*/{}, /*resuming=*/false);
      last = evaluate(program, buffers.data(), inputs, results, arrays);
      report.evaluation(at.step, at.epoch, last);
      evaluatedStep = at.step;
      ++evaluated;
    }
    if (!polls || evaluatedStep >= lastStep || (signal = stopSignal()))
      break;
    // In slices, so that a stop signal is seen within a moment.
    const auto until =
        std::chrono::steady_clock::now() + std::chrono::duration<double>(options.poll);
    while (!stopReceived() && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  if (program.rank == 0) {
    if (signal)
      std::fprintf(stderr, "shardrt: %s: the eval job stops after %lld evaluations\n",
                   stopSignalName(signal), (long long)evaluated);
    JsonObject summary;
    summary.add("model", jsonString(manifest.model)).add("mesh", meshJson(manifest));
    summary.add("evaluated_checkpoints", std::to_string(evaluated));
    summary.add("step", std::to_string(evaluatedStep));
    JsonObject eval;
    eval.add("examples", std::to_string(last.examples));
    for (const auto &[name, mean] : last.means)
      eval.add(name, jsonNumber(mean));
    summary.add("eval", eval.str());
    summary.add("stopped_by_signal", signal ? jsonString(stopSignalName(signal)) : "null");
    std::fprintf(program.out, "%s\n", summary.str().c_str());
    report.writePage(summary.str());
  }
  if (!closeOnRank0(metrics, options.metrics))
    return 1;
  return signal ? 128 + signal : 0;
}

} // namespace shardrt
