//===- shardc-tune.cpp - which layout? ------------------------------------===//
//
// shardc tune MODEL.shard --ranks N [--hosts H] [--top K] [--precision NAME=TYPE] [-o BEST.rules]
//
// The layout search of lib/Tune (Search.h): the layouts people write for the
// model's logical axes, predicted from their communication plans, the best
// built and timed, the fastest written out as a rules file.
//
//===----------------------------------------------------------------------===//

#include "shardc/Tune/Search.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"

using namespace shardc;
namespace cl = llvm::cl;

namespace {

cl::OptionCategory category("shardc tune options");
cl::opt<std::string> modelFile(cl::Positional, cl::desc("<model.shard>"), cl::Required,
                               cl::cat(category));
cl::opt<int64_t> ranks("ranks", cl::desc("Ranks to lay the model out on"), cl::value_desc("N"),
                       cl::Required, cl::cat(category));
cl::opt<int64_t> hosts("hosts",
                       cl::desc("Hosts the ranks are spread over, N/H consecutive ranks each; "
                                "collectives between hosts are priced at TCP's measured cost "
                                "(default 1)"),
                       cl::value_desc("H"), cl::init(1), cl::cat(category));
cl::opt<unsigned> top("top",
                      cl::desc("Layouts to build and time, the best predicted first (default 3; "
                               "0: predict only)"),
                      cl::value_desc("K"), cl::init(3), cl::cat(category));
cl::opt<unsigned> steps("steps",
                        cl::desc("Steps each timed run trains; its time is the median of "
                                 "those after the first two (default 8)"),
                        cl::value_desc("S"), cl::init(8), cl::cat(category));
cl::opt<std::string> outputFile("o",
                                cl::desc("Where to write the fastest layout's rules "
                                         "(default: MODEL.tuned.rules here)"),
                                cl::value_desc("file.rules"), cl::cat(category));
cl::opt<std::string> workDir("work-dir",
                             cl::desc("Folder for the candidates' rules, reports, executables "
                                      "and logs (default: MODEL.tune here)"),
                             cl::value_desc("dir"), cl::cat(category));
cl::opt<std::string> calibrationFile(
    "calibration",
    cl::desc("Use this calibration (JSON, as tune writes to calibration.json) instead of "
             "measuring one"),
    cl::value_desc("file.json"), cl::cat(category));
cl::opt<std::string> launcherText(
    "launcher",
    cl::desc("Command that starts a program on the ranks, {ranks} replaced by their number "
             "(default: mpirun --oversubscribe -np {ranks}; with --hosts, over TCP only)"),
    cl::value_desc("command"), cl::cat(category));
cl::opt<std::string> maxMemoryPerRank(
    "max-memory-per-rank",
    cl::desc("Leave out layouts that need more per rank (default: this host's memory over its "
             "ranks)"),
    cl::value_desc("size"), cl::cat(category));
cl::opt<unsigned> timeout("timeout",
                          cl::desc("Seconds any program the search starts (a compile, the "
                                   "calibration, a timed run) may take before it is stopped "
                                   "(default 600)"),
                          cl::value_desc("S"), cl::init(600), cl::cat(category));
cl::opt<bool> asJSON("json", cl::desc("Print the results as JSON"), cl::cat(category));
cl::list<std::string> importDirs("I", cl::desc("Add a folder to the import search path"),
                                 cl::value_desc("dir"), cl::Prefix, cl::cat(category));
cl::list<std::string> configSets("set", cl::desc("Set a config parameter of the model"),
                                 cl::value_desc("NAME=VALUE"), cl::cat(category));
cl::list<std::string> precisionFlags(
    "precision",
    cl::desc("Every layout with this precision policy, as the rules file's `precision NAME : "
             "TYPE` (matmul=bf16: products in bfloat16, priced at the calibration's bf16 GEMM "
             "rate; gradients=bf16: gradients reduced in bfloat16, half the bytes); repeatable"),
    cl::value_desc("NAME=TYPE"), cl::cat(category));
cl::list<std::string> runArgs("run-arg", cl::desc("An argument for every timed run (repeatable)"),
                              cl::value_desc("arg"), cl::cat(category));

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(
      argc, argv,
      "shardc tune: the layouts people write for a model, predicted, the best built and timed; "
      "the fastest written out as a rules file\n");
  TuneOptions options;
  options.modelFile = modelFile;
  options.ranks = ranks;
  options.hosts = hosts;
  options.top = top;
  options.steps = steps;
  options.outputFile = outputFile;
  options.workDir = workDir;
  options.calibrationFile = calibrationFile;
  options.launcherText = launcherText;
  options.maxMemoryPerRank = maxMemoryPerRank;
  options.timeout = timeout;
  options.asJSON = asJSON;
  options.importDirs.assign(importDirs.begin(), importDirs.end());
  options.configSets.assign(configSets.begin(), configSets.end());
  options.precisionFlags.assign(precisionFlags.begin(), precisionFlags.end());
  options.runArgs.assign(runArgs.begin(), runArgs.end());
  return tune(options, argv[0]);
}
