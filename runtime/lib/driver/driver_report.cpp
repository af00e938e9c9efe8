// Rank 0's account of a training run.
//
// Images per second count the train steps only (filling the batch and the entry), not
// the evaluations: a metrics line's rate is over the steps since the previous line, the
// summary's over the whole run. The interval log (--log-interval) is for people under
// mpirun, where stderr is a pipe and the progress line cannot be rewritten in place: its
// time left is the wall time so far, evaluations included, per step, times the steps
// left.
#include "driver_report.h"
#include "collectives/collectives.h"
#include "collectives/traffic.h"
#include "collectives/watchdog.h"
#include "driver_json.h"
#include "driver_output.h"
#include "driver_page.h"
#include "driver_stop.h"
#include "host/host.h"
#include "kernels/dnnl_matmul.h"
#include "memory/scratch.h"

#include <mpi.h>

#include <unistd.h>

#include <cmath>
#include <string>

namespace shardrt {
namespace {

std::string integer(int64_t value) { return std::to_string(value); }

/// "loss 0.4123, accuracy 0.8086 over 10000 examples"
std::string describe(const Evaluation &evaluation) {
  std::string text;
  for (const auto &[name, mean] : evaluation.means)
    text += (text.empty() ? "" : ", ") + name + " " + jsonNumber(mean, "%.6g");
  return text + " over " + integer(evaluation.examples) + " examples";
}

/// "42 s", "3m 05s", "1h 02m".
std::string durationText(double seconds) {
  char text[32];
  const long long s = std::llround(seconds);
  if (s < 60)
    std::snprintf(text, sizeof text, "%lld s", s);
  else if (s < 3600)
    std::snprintf(text, sizeof text, "%lldm %02llds", s / 60, s % 60);
  else
    std::snprintf(text, sizeof text, "%lldh %02lldm", s / 3600, s % 3600 / 60);
  return text;
}

/// Rank 0's collectives in its train steps (traffic.h): the steps counted and, per kind
/// that moved anything, its calls, bytes and sent bytes over those steps.
std::string trafficJson() {
  const TrafficCounts &counts = trafficCounts();
  JsonObject kinds;
  for (int k = 0; k < kTrafficKinds; ++k) {
    const Traffic &t = counts.kinds[k];
    if (!t.calls)
      continue;
    JsonObject traffic;
    traffic.add("calls", integer(t.calls))
        .add("bytes", integer(t.bytes))
        .add("sent_bytes", integer(t.sentBytes));
    kinds.add(trafficKindName(TrafficKind(k)), traffic.str());
  }
  JsonObject json;
  json.add("steps", integer(counts.steps)).add("by_kind", kinds.str());
  return json.str();
}

} // namespace

TrainingReport::TrainingReport(const Program &program, std::FILE *metrics, int64_t firstStep,
                               int64_t totalSteps, int64_t stepsPerEpoch)
    : program_(program), metrics_(metrics), firstStep_(firstStep), totalSteps_(totalSteps),
      stepsPerEpoch_(stepsPerEpoch), batch_(stepsPerEpoch ? program.manifest.batch : 0),
      active_(program.rank == 0), terminal_(active_ && isatty(STDERR_FILENO)),
      loggedStep_(firstStep), started_(std::chrono::steady_clock::now()), intervalStart_(started_),
      intervalStep_(firstStep) {}

void TrainingReport::logProgress(int64_t step, int64_t epoch, double trainSeconds) {
  const auto now = std::chrono::steady_clock::now();
  const double elapsed = std::chrono::duration<double>(now - started_).count();
  const double trainTime = trainSeconds - intervalTrainSeconds_;
  const int64_t done = step - firstStep_;
  std::string where = "step " + integer(step) + "/" + integer(totalSteps_);
  if (stepsPerEpoch_)
    where += " (epoch " + integer(epoch) + ")";
  char rate[48];
  const double steps = double(step - intervalStep_);
  if (batch_)
    std::snprintf(rate, sizeof rate, "%.0f examples/s", double(batch_) * steps / trainTime);
  else
    std::snprintf(rate, sizeof rate, "%.3g s/step", trainTime / steps);
  endProgressLine();
  std::fprintf(stderr, "%s  loss %.6g (mean of %lld)  %s  elapsed %s  left %s\n", where.c_str(),
               lossSum_ / double(lossCount_), (long long)lossCount_, rate,
               durationText(elapsed).c_str(),
               durationText(elapsed / double(done) * double(totalSteps_ - step)).c_str());
  std::fflush(stderr);
  intervalStart_ = now;
  intervalStep_ = step;
  intervalTrainSeconds_ = trainSeconds;
  lossSum_ = 0;
  lossCount_ = 0;
}

void TrainingReport::step(int64_t step, int64_t epoch, const std::vector<Block> &results,
                          double trainSeconds, int64_t nonFiniteSteps) {
  if (!active_)
    return;
  const DriverOptions &options = program_.options;
  lossSum_ += results[0].floats()[0];
  ++lossCount_;
  const bool logs =
      step == totalSteps_ ||
      (options.logIntervalInSteps
           ? (step - firstStep_) % int64_t(std::ceil(options.logInterval)) == 0
           : std::chrono::duration<double>(std::chrono::steady_clock::now() - intervalStart_)
                     .count() >= options.logInterval);
  if (logs)
    logProgress(step, epoch, trainSeconds);
  if (step % options.logEvery != 0 && step != totalSteps_)
    return;
  const double seconds = trainSeconds - loggedSeconds_;
  const int64_t steps = step - loggedStep_;
  const double perSecond = double(batch_ * steps) / seconds;
  loggedStep_ = step;
  loggedSeconds_ = trainSeconds;
  const float loss = results[0].floats()[0];
  JsonObject line(JsonObject::Compact);
  line.add("kind", "\"train\"").add("step", integer(step));
  line.add("epoch", stepsPerEpoch_ ? integer(epoch) : "null").add("loss", jsonNumber(loss));
  for (size_t i = 1; i < results.size(); ++i)
    line.add(results[i].spec->name, jsonNumber(results[i].floats()[0]));
  line.add("images_per_second", batch_ ? jsonNumber(perSecond) : "null");
  line.add("seconds_per_step", jsonNumber(seconds / double(steps)));
  line.add("nonfinite_steps", integer(nonFiniteSteps));
  record(line.str());
  if (terminal_) {
    char text[200];
    if (stepsPerEpoch_)
      std::snprintf(text, sizeof text, "epoch %lld/%lld  step %lld/%lld  loss %.4f  %.0f images/s",
                    (long long)epoch, (long long)((totalSteps_ - 1) / stepsPerEpoch_ + 1),
                    (long long)step, (long long)totalSteps_, loss, perSecond);
    else
      std::snprintf(text, sizeof text, "step %lld/%lld  loss %.4f  %.3g s/step", (long long)step,
                    (long long)totalSteps_, loss, seconds / double(steps));
    std::fprintf(stderr, "\r%s\033[K", text);
    std::fflush(stderr);
    progressShown_ = true;
  }
}

void TrainingReport::evaluation(int64_t step, int64_t epoch, const Evaluation &evaluation) {
  if (!active_)
    return;
  evaluated_ = true;
  last_ = evaluation;
  JsonObject line(JsonObject::Compact);
  line.add("kind", "\"eval\"").add("epoch", integer(epoch)).add("step", integer(step));
  line.add("examples", integer(evaluation.examples));
  for (const auto &[name, mean] : evaluation.means)
    line.add(name, jsonNumber(mean));
  record(line.str());
  endProgressLine();
  std::fprintf(stderr, "epoch %lld, step %lld: test %s\n", (long long)epoch, (long long)step,
               describe(evaluation).c_str());
}

void TrainingReport::finish(double trainSeconds, double prefetchWait, float finalLoss,
                            const Checkpointer &checkpointer, int64_t nonFiniteSteps,
                            const EarlyStop &stop) {
  const ResidentMemory mine = residentMemory();
  int64_t memory[6] = {mine.peak,   mine.anonymous,           mine.file,
                       mine.shared, program_.residentAtStart, int64_t(scratch().capacity())};
  watchedWorld("all_reduce of the resident memory", [&](MPI_Request *request) {
    MPI_Iallreduce(MPI_IN_PLACE, memory, 6, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD, request);
  });
  // A pipeline's waits in its receives: the most and the least of any rank (the
  // bubble is where a stage waits), and whether any rank received at all.
  double waits[3] = {pipelineReceiveSeconds(), -pipelineReceiveSeconds(),
                     double(pipelineReceives())};
  watchedWorld("all_reduce of the pipeline's waits", [&](MPI_Request *request) {
    MPI_Iallreduce(MPI_IN_PLACE, waits, 3, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD, request);
  });
  const bool received = waits[2] > 0;
  if (!active_)
    return;
  endProgressLine();
  const Manifest &manifest = program_.manifest;
  // Where the run ends, and the rates of the steps this process ran.
  const int64_t lastStep = stop.signal || stop.nonFinite ? stop.step : totalSteps_;
  const double epochs = double(lastStep) / double(stepsPerEpoch_);
  const double steps = double(lastStep - firstStep_);
  // A run stopped before its first step has no rates.
  const double secondsPerEpoch = steps > 0 ? trainSeconds * double(stepsPerEpoch_) / steps : 0;
  const double perSecond = steps > 0 ? double(batch_) * steps / trainSeconds : 0;
  const std::string resumed =
      firstStep_ ? " (resumed after step " + integer(firstStep_) + ")" : std::string();
  if (stepsPerEpoch_)
    std::fprintf(stderr,
                 "%s: %.6g epoch%s, %lld steps of %lld examples%s in %.3g s (%.3g s per epoch, "
                 "%.0f images/s); final train loss %.6g\n",
                 manifest.model.c_str(), epochs, epochs == 1 ? "" : "s", (long long)lastStep,
                 (long long)batch_, resumed.c_str(), trainSeconds, secondsPerEpoch, perSecond,
                 finalLoss);
  else
    std::fprintf(stderr, "%s: %lld steps%s in %.3g s (%.3g s per step); final train loss %.6g\n",
                 manifest.model.c_str(), (long long)lastStep, resumed.c_str(), trainSeconds,
                 steps > 0 ? trainSeconds / steps : 0, finalLoss);
  if (evaluated_)
    std::fprintf(stderr, "last evaluation: %s\n", describe(last_).c_str());

  // Without a dataset there are no epochs and no batch to count images by.
  auto ifData = [&](const std::string &value) { return batch_ ? value : "null"; };
  JsonObject summary;
  summary.add("model", jsonString(manifest.model)).add("mesh", meshJson(manifest));
  summary.add("seed", std::to_string(program_.options.seed));
  summary.add("epochs", ifData(jsonNumber(epochs))).add("steps", integer(lastStep));
  summary.add("resumed_after", firstStep_ ? integer(firstStep_) : "null");
  summary.add("batch_size", ifData(integer(batch_)));
  summary.add("train_seconds", jsonNumber(trainSeconds));
  summary.add("seconds_per_epoch", ifData(jsonNumber(secondsPerEpoch)));
  summary.add("images_per_second", ifData(jsonNumber(perSecond)));
  summary.add("final_train_loss", jsonNumber(finalLoss));
  summary.add("nonfinite_steps", integer(nonFiniteSteps));
  summary.add("stopped_at_nonfinite_step", stop.nonFinite ? integer(stop.step) : "null");
  summary.add("stopped_by_signal", stop.signal ? jsonString(stopSignalName(stop.signal)) : "null");
  summary.add("stopped_after_step", stop.signal ? integer(stop.step) : "null");
  summary.add("abandoned_step", stop.abandoned ? integer(stop.step + 1) : "null");
  summary.add("checkpoints", integer(checkpointer.written()));
  summary.add("checkpoint_seconds", jsonNumber(checkpointer.seconds()));
  summary.add("resume_from",
              checkpointer.newest().empty() ? "null" : jsonString(checkpointer.newest()));
  summary.add("prefetch_wait_seconds", ifData(jsonNumber(prefetchWait)));
  if (received) {
    JsonObject pipelineWaits;
    pipelineWaits.add("max", jsonNumber(waits[0])).add("min", jsonNumber(-waits[1]));
    summary.add("pipeline_receive_wait_seconds", pipelineWaits.str());
  }
  JsonObject resident;
  resident.add("peak", integer(memory[0]))
      .add("anonymous", integer(memory[1]))
      .add("file", integer(memory[2]))
      .add("shared", integer(memory[3]))
      .add("at_start", integer(memory[4]))
      .add("scratch", integer(memory[5]));
  summary.add("resident_bytes_per_rank", resident.str());
  summary.add("collectives", trafficJson());
  summary.add("config", program_.options.effective.dump());
  const char *bf16Products = bf16ProductsUsed();
  summary.add("bf16_products", bf16Products ? jsonString(bf16Products) : "null");
  if (evaluated_) {
    JsonObject eval;
    eval.add("examples", integer(last_.examples));
    for (const auto &[name, mean] : last_.means)
      eval.add(name, jsonNumber(mean));
    summary.add("eval", eval.str());
  } else {
    summary.add("eval", "null");
  }
  std::fprintf(program_.out, "%s\n", summary.str().c_str());
  writePage(summary.str());
}

void TrainingReport::record(const std::string &line) {
  if (metrics_) {
    std::fprintf(metrics_, "%s\n", line.c_str());
    std::fflush(metrics_);
  }
  if (!program_.options.reportPage.empty())
    records_.push_back(line);
}

void TrainingReport::writePage(const std::string &summary) const {
  if (active_ && !program_.options.reportPage.empty())
    writeReportPage(program_.options.reportPage, program_.manifest, records_, summary);
}

void TrainingReport::endProgressLine() {
  if (progressShown_)
    std::fputs("\r\033[K", stderr);
  progressShown_ = false;
}

} // namespace shardrt
