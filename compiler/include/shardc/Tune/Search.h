//===- Search.h - which layout? ---------------------------------*- C++ -*-===//
//
// shardc tune's layout search: the layouts people write (Candidates.h) for the
// model's logical axes over every factorization of the ranks, each compiled by
// shardc for its communication plan; those that compile and fit a rank's
// memory ranked by the cost model (CostModel.h) with this machine's constants
// (Calibrate.h); the K best built and trained a few steps each on the ranks
// (Processes.h); the fastest measured written out as a rules file whose
// comment says why. Everything it makes (rules, reports, executables, logs,
// the calibration) stays in the work folder.
//
//===----------------------------------------------------------------------===//

#ifndef SHARDC_TUNE_SEARCH_H
#define SHARDC_TUNE_SEARCH_H

#include "llvm/ADT/Twine.h"

#include <cstdint>
#include <string>
#include <vector>

namespace shardc {

/// shardc tune's options, as its --help describes them.
struct TuneOptions {
  std::string modelFile;
  int64_t ranks = 0;                   // --ranks
  int64_t hosts = 1;                   // --hosts
  unsigned top = 3;                    // --top
  unsigned steps = 8;                  // --steps
  std::string outputFile;              // -o; empty: MODEL.tuned.rules
  std::string workDir;                 // --work-dir; empty: MODEL.tune
  std::string calibrationFile;         // --calibration; empty: measure one
  std::string launcherText;            // --launcher; empty: mpirun
  std::string maxMemoryPerRank;        // --max-memory-per-rank; empty: this host's over its ranks
  unsigned timeout = 600;              // --timeout, seconds
  bool asJSON = false;                 // --json
  std::vector<std::string> importDirs; // -I
  std::vector<std::string> configSets; // --set NAME=VALUE
  std::vector<std::string> precisionFlags; // --precision NAME=TYPE
  std::vector<std::string> runArgs;        // --run-arg
};

/// Runs the search, printing its table (or JSON) and writing the best layout's
/// rules; `argv0` finds shardc and shardrt-calibrate beside this program.
/// Returns the exit status.
int tune(const TuneOptions &options, const char *argv0);

/// A line of progress on standard error (none with --json).
void progress(const TuneOptions &options, const llvm::Twine &message);

} // namespace shardc

#endif
