// What rank 0 tells about a training run: a JSON line per logged step and per
// evaluation in the metrics file, a progress line on a terminal, the evaluations and a
// summary on stderr, and the summary as one JSON object on the final output.
#ifndef SHARDRT_LIB_DRIVER_REPORT_H
#define SHARDRT_LIB_DRIVER_REPORT_H

#include "driver_checkpoint.h"
#include "driver_eval.h"
#include "driver_modes.h"

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

namespace shardrt {

/// Where a run that ended before its last step stopped, and why.
struct EarlyStop {
  int64_t step = 0;       // the last step completed; 0 with no signal: the run reached its last
  bool nonFinite = false; // a non-finite step stopped it (driver_health.h)
  int signal = 0;         // or a stop signal did (driver_stop.h)
  bool abandoned = false; // and step + 1 was abandoned (driver_abandon.h)
};

/// The exit status of a run that abandoned a step (driver_abandon.h).
constexpr int kExitAbandoned = 5;

/// Every rank may call it; only rank 0 writes.
class TrainingReport {
public:
  /// Steps firstStep + 1 .. totalSteps run (firstStep > 0: resumed from a checkpoint).
  /// `stepsPerEpoch` is 0 for a model that reads no dataset (no epochs, no batch).
  TrainingReport(const Program &program, std::FILE *metrics, int64_t firstStep, int64_t totalSteps,
                 int64_t stepsPerEpoch);

  /// After each step: its train results (the replicated scalars) and the seconds spent
  /// in train steps so far. Logs every --log-every steps and the last.
  /// `nonFiniteSteps` so far (driver_health.h) goes on each metrics line.
  void step(int64_t step, int64_t epoch, const std::vector<Block> &results, double trainSeconds,
            int64_t nonFiniteSteps);

  void evaluation(int64_t step, int64_t epoch, const Evaluation &evaluation);

  /// The summary, after the last step or where `stop` says the run ended: the
  /// checkpoints written and the newest, which a run resumes from, and the non-finite
  /// steps. `prefetchWait`: seconds the steps waited for their batch. Collective: the
  /// resident memory reported is the most of any rank.
  void finish(double trainSeconds, double prefetchWait, float finalLoss,
              const Checkpointer &checkpointer, int64_t nonFiniteSteps, const EarlyStop &stop = {});

  /// With --report-page, rank 0 writes the page: the metrics so far, the program's
  /// plan and layouts, and `summary` (a JSON object; may be empty).
  void writePage(const std::string &summary) const;

private:
  /// A metrics line: to the metrics file, and kept for the report page.
  void record(const std::string &line);
  void endProgressLine();
  /// The line logged every --log-interval: where the run is, the mean loss since the
  /// last such line, the rate, the time spent and the time left.
  void logProgress(int64_t step, int64_t epoch, double trainSeconds);

  const Program &program_;
  std::FILE *metrics_;
  const int64_t firstStep_, totalSteps_, stepsPerEpoch_, batch_;
  const bool active_, terminal_;
  bool progressShown_ = false;
  int64_t loggedStep_;       // the last step logged (or the first step's predecessor),
  double loggedSeconds_ = 0; // and the train seconds then
  bool evaluated_ = false;
  Evaluation last_;
  // The interval log: when the run started, when and at which step the last line was,
  // and the losses since.
  const std::chrono::steady_clock::time_point started_;
  std::chrono::steady_clock::time_point intervalStart_;
  int64_t intervalStep_;
  double intervalTrainSeconds_ = 0, lossSum_ = 0;
  int64_t lossCount_ = 0;
  std::vector<std::string> records_; // the metrics lines, with --report-page
};

} // namespace shardrt

#endif // SHARDRT_LIB_DRIVER_REPORT_H
