//===- Processes.h - the programs a layout search starts --------*- C++ -*-===//
//
// shardc tune measures by running programs: shardc for each candidate's plan
// and executable, shardrt-calibrate, and the timed runs under mpirun (or
// --launcher), each with a time limit and its output kept in --work-dir.
//
//===----------------------------------------------------------------------===//

#ifndef SHARDC_TUNE_PROCESSES_H
#define SHARDC_TUNE_PROCESSES_H

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <string>
#include <vector>

namespace shardc {

/// A program run to the end, its output in `log`.out and `log`.err.
struct Finished {
  int status = -1;
  std::string out, err;
  /// The first line of its standard error that says "error", else its last line.
  std::string why() const {
    llvm::SmallVector<llvm::StringRef> lines;
    llvm::StringRef(err).split(lines, '\n', -1, false);
    for (llvm::StringRef line : lines)
      if (line.contains("error"))
        return line.trim().str();
    return lines.empty() ? "exit status " + std::to_string(status) : lines.back().trim().str();
  }
};

/// Runs `argv` (its program found on the PATH) to the end, its standard output
/// and error written to `log`.out and `log`.err. Past `timeout` seconds,
/// SIGTERM, then SIGKILL if it has not ended 10 s later.
Finished runProgram(std::vector<std::string> argv, const std::string &log, unsigned timeout);

/// The program `name` in the folder of this one (`argv0`).
std::string besideThisProgram(const char *argv0, llvm::StringRef name);

/// The command that starts a program on `n` ranks, ready for its path and
/// arguments: `launcherText`'s ({ranks} replaced by `n`), or with none (or
/// `here`, on this machine only) mpirun, over TCP with `network`.
std::vector<std::string> launcherCommand(llvm::StringRef launcherText, int64_t n, bool network,
                                         bool here = false);

/// This host's memory over the ranks it runs (what the runtime's own check
/// offers a rank), from /proc/meminfo.
int64_t memoryPerRankOfThisHost(int64_t ranksHere);

/// A file's text; empty when it cannot be read.
std::string readFile(llvm::StringRef path);

/// Writes `text` to `path`; false when it cannot.
bool writeFile(llvm::StringRef path, llvm::StringRef text);

} // namespace shardc

#endif
