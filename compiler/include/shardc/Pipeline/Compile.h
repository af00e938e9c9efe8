//===- Compile.h - what shardc runs on a model and its rules ----*- C++ -*-===//
//
// The shardc command without its command line: the front end (loadProgram),
// then the stages of Pipeline.h up to the one --emit names, printed, or the
// executable, with the report and the manifest. tools/shardc parses the
// options into CompileOptions and calls compile.
//
//===----------------------------------------------------------------------===//

#ifndef SHARDC_PIPELINE_COMPILE_H
#define SHARDC_PIPELINE_COMPILE_H

#include <optional>
#include <string>
#include <vector>

namespace shardc {

/// shardc's options, as its --help describes them.
struct CompileOptions {
  enum class Emit { AST, Typed, Layout, MLIR, Sharded, SPMD, LLVM, Executable };
  enum class ReportFormat { None, Text, JSON };

  std::string modelFile;
  std::string rulesFile;                    // --rules; empty: none
  std::optional<Emit> emit;                 // --emit, when given
  std::string outputFile = "-";             // -o; "-": standard output
  bool reference = false;                   // --reference
  bool unrollScans = false;                 // --unroll-scans
  bool printLocations = false;              // --locations
  ReportFormat report = ReportFormat::None; // --report[=text|json]
  bool strict = false;                      // --strict
  std::string runtimeDir;                   // --runtime-dir: the folder of libshardrt.so
  std::string maxMemoryPerRank;             // --max-memory-per-rank
  std::string targetCpu = "native";         // --target-cpu
  std::string targetFeatures;               // --target-features
  std::vector<std::string> importDirs;      // -I
  std::vector<std::string> configSets;      // --set NAME=VALUE
};

/// Runs shardc on `options`: prints the stage asked for (or the plan, or the
/// report) to the output file, or writes the executable; diagnostics go to
/// standard error with the count of errors. Returns the exit status.
int compile(const CompileOptions &options);

} // namespace shardc

#endif
