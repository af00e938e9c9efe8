//===- shardc-tune.cpp - which layout? ------------------------------------===//
//
// shardc tune MODEL.shard --ranks N [--hosts H] [--top K] [--precision NAME=TYPE] [-o BEST.rules]
//
// A layout search: the layouts people write (Tune/Candidates.h) for the model's
// logical axes over every factorization of N, each compiled by shardc for its
// communication plan; those that compile and fit a rank's memory ranked by the
// cost model (Tune/CostModel.h) with this machine's constants (shardrt-calibrate);
// the K best built and trained a few steps each on N ranks; the fastest measured
// written out as a rules file whose comment says why. Everything it makes (rules,
// reports, executables, logs, the calibration) stays in --work-dir.
//
//===----------------------------------------------------------------------===//

#include "shardc/Frontend/LoadProgram.h"
#include "shardc/Sema/Sema.h"
#include "shardc/Sema/TypedPrinter.h"
#include "shardc/Tune/Candidates.h"
#include "shardc/Tune/CostModel.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <thread>
#include <fstream>

using namespace shardc;
namespace cl = llvm::cl;
namespace json = llvm::json;

namespace {

cl::OptionCategory category("shardc tune options");
cl::opt<std::string> modelFile(cl::Positional, cl::desc("<model.shard>"), cl::Required,
                               cl::cat(category));
cl::opt<int64_t> ranks("ranks", cl::desc("Ranks to lay the model out on"), cl::value_desc("N"), cl::Required,
                       cl::cat(category));
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
cl::opt<std::string> outputFile("o", cl::desc("Where to write the fastest layout's rules "
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
cl::list<std::string> runArgs("run-arg",
                              cl::desc("An argument for every timed run (repeatable)"),
                              cl::value_desc("arg"), cl::cat(category));

int fail(const llvm::Twine &message) {
  llvm::errs() << "shardc tune: error: " << message << "\n";
  return 1;
}

void progress(const llvm::Twine &message) {
  if (!asJSON)
    llvm::errs() << message << "\n";
}

std::string readFile(llvm::StringRef path) {
  auto buffer = llvm::MemoryBuffer::getFile(path);
  return buffer ? (*buffer)->getBuffer().str() : std::string();
}

bool writeFile(llvm::StringRef path, llvm::StringRef text) {
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec);
  if (ec)
    return false;
  os << text;
  return !os.has_error();
}

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

Finished runProgram(std::vector<std::string> argv, const std::string &log) {
  Finished result;
  auto program = llvm::sys::findProgramByName(argv[0]);
  if (!program) {
    result.err = "error: cannot find '" + argv[0] + "'";
    return result;
  }
  std::vector<llvm::StringRef> args(argv.begin(), argv.end());
  const std::string out = log + ".out", err = log + ".err";
  std::optional<llvm::StringRef> redirects[] = {llvm::StringRef("/dev/null"), llvm::StringRef(out),
                                                llvm::StringRef(err)};
  std::string message;
  bool failedToStart = false;
  llvm::sys::ProcessInfo child = llvm::sys::ExecuteNoWait(*program, args, std::nullopt, redirects,
                                                          0, &message, &failedToStart);
  bool stopped = false;
  if (!failedToStart) {
    // Past --timeout, SIGTERM first: mpirun then ends its ranks (SIGKILL would leave
    // them running); SIGKILL if it has not ended 10 s later.
    using Clock = std::chrono::steady_clock;
    const auto deadline = Clock::now() + std::chrono::seconds(timeout);
    llvm::sys::ProcessInfo done;
    while ((done = llvm::sys::Wait(child, 0, &message)).Pid == 0) {
      if (!stopped && Clock::now() >= deadline) {
        stopped = true;
        ::kill(child.Pid, SIGTERM);
      }
      if (stopped && Clock::now() >= deadline + std::chrono::seconds(10)) {
        ::kill(child.Pid, SIGKILL);
        done = llvm::sys::Wait(child, std::nullopt, &message);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    result.status = done.ReturnCode;
  }
  result.out = readFile(out);
  result.err = readFile(err);
  if (stopped)
    result.err += "error: stopped after " + std::to_string(timeout) + " s (--timeout)";
  else if (failedToStart || result.status < 0)
    result.err += "error: " + message;
  if (stopped && result.status == 0)
    result.status = -2;
  return result;
}

std::string besideThisProgram(const char *argv0, llvm::StringRef name) {
  std::string self = llvm::sys::fs::getMainExecutable(argv0, (void *)&besideThisProgram);
  llvm::SmallString<256> path(llvm::sys::path::parent_path(self));
  llvm::sys::path::append(path, name);
  return std::string(path);
}

/// The command that starts a program on `n` ranks, ready for its path and arguments:
/// --launcher's, or on this machine only with `here`.
std::vector<std::string> launcher(int64_t n, bool network, bool here = false) {
  std::vector<std::string> argv;
  if (!launcherText.empty() && !here) {
    llvm::SmallVector<llvm::StringRef> words;
    llvm::StringRef(launcherText).split(words, ' ', -1, false);
    for (llvm::StringRef word : words)
      argv.push_back(word == "{ranks}" ? std::to_string(n) : word.str());
    return argv;
  }
  argv = {"mpirun", "--oversubscribe"};
  if (geteuid() == 0)
    argv.push_back("--allow-run-as-root");
  if (network)
    llvm::append_range(argv, std::vector<std::string>{"--mca", "btl", "tcp,self"});
  llvm::append_range(argv, std::vector<std::string>{"-np", std::to_string(n)});
  return argv;
}

/// This host's memory over the ranks it runs (what the runtime's own check offers a
/// rank), from /proc/meminfo.
int64_t memoryPerRankOfThisHost(int64_t ranksHere) {
  std::ifstream meminfo("/proc/meminfo");
  std::string key, unit;
  int64_t kib = 0;
  while (meminfo >> key >> kib >> unit)
    if (key == "MemTotal:")
      return kib * 1024 / ranksHere;
  return INT64_MAX;
}

/// shardrt-calibrate's figures for `n` ranks started by `argv`.
llvm::Expected<json::Object> calibrate(std::vector<std::string> argv, const std::string &tool,
                                       const std::string &log) {
  argv.push_back(tool);
  Finished run = runProgram(argv, log);
  auto parsed = json::parse(llvm::StringRef(run.out).trim());
  if (run.status != 0 || !parsed || !parsed->getAsObject()) {
    if (!parsed)
      llvm::consumeError(parsed.takeError());
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "calibration failed (" + log + ".err): " + run.why());
  }
  return std::move(*parsed->getAsObject());
}

/// A link's figures as a calibration holds them, from a shardrt-calibrate run.
json::Object linkFigures(const json::Object &run) {
  json::Object link;
  for (const char *key : {"latency_seconds", "bandwidth_bytes_per_second"})
    if (const json::Value *value = run.get(key))
      link[key] = *value;
  return link;
}

/// The calibration: read from --calibration, or measured here, both checked by
/// parseCalibration. The GEMM and streaming rates and the ranks' own link are
/// measured as the timed runs start them (all N ranks); with --hosts, a host's link
/// with its N/H ranks over shared memory.
llvm::Expected<Calibration> loadOrMeasureCalibration(const char *argv0) {
  if (!calibrationFile.empty()) {
    auto text = llvm::MemoryBuffer::getFile(calibrationFile);
    if (!text)
      return llvm::createStringError(text.getError(), "cannot read --calibration '" +
                                                          calibrationFile +
                                                          "': " + text.getError().message());
    auto parsed = json::parse((*text)->getBuffer());
    auto calibration = parsed ? parseCalibration(*parsed) : parsed.takeError();
    if (!calibration)
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "--calibration '" + calibrationFile +
                                         "': " + toString(calibration.takeError()));
    return calibration;
  }
  const std::string tool = besideThisProgram(argv0, "shardrt-calibrate");
  progress("calibrating: shardrt-calibrate on " + llvm::Twine(ranks) + " ranks" +
           (!launcherText.empty() ? " under --launcher" : hosts > 1 ? " over TCP" : ""));
  auto all = calibrate(launcher(ranks, hosts > 1), tool, workDir + "/calibrate");
  if (!all)
    return all.takeError();
  json::Object figures{{"ranks", ranks.getValue()}, {"hosts", hosts.getValue()}};
  for (const char *key :
       {"gemm_flops_per_rank", "gemm_bf16_flops_per_rank", "elementwise_per_rank"})
    if (const json::Value *value = all->get(key))
      figures[key] = *value;
  // With one host the ranks' link is the host's; with one rank per host no group
  // stays inside a host, and the host's link is never used.
  figures[hosts > 1 ? "network" : "local"] = linkFigures(*all);
  if (hosts > 1 && ranks / hosts == 1)
    figures["local"] = linkFigures(*all);
  else if (hosts > 1) {
    progress("calibrating: shardrt-calibrate on one host's " + llvm::Twine(ranks / hosts) +
             " ranks");
    auto host = calibrate(launcher(ranks / hosts, false, /*here=*/true), tool,
                          workDir + "/calibrate-host");
    if (!host)
      return host.takeError();
    figures["local"] = linkFigures(*host);
  }
  auto calibration = parseCalibration(json::Value(std::move(figures)));
  if (!calibration)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "shardrt-calibrate's figures (" + workDir +
                                       "/calibrate*.out): " + toString(calibration.takeError()));
  return calibration;
}

/// One candidate through the search.
struct Trial {
  Candidate candidate;
  std::string stem; // its files in --work-dir: STEM.rules, STEM.report.out, STEM (the program)
  std::string rulesFile() const { return stem + ".rules"; }
  std::string rejected; // why it was left out, if it was
  StepCost predicted;
  std::optional<double> measured; // median seconds per step
  std::optional<int64_t> peakBytes; // the largest rank's peak resident memory in that run
  std::string measureError;
};

std::vector<std::string> compilerFlags() {
  std::vector<std::string> flags;
  for (const std::string &dir : importDirs)
    flags.push_back("-I" + dir);
  for (const std::string &set : configSets)
    flags.push_back("--set=" + set);
  return flags;
}

/// Compiles the trial's layout for its plan and predicts its step.
void predict(Trial &trial, const std::string &shardc, const Calibration &calibration,
             int64_t memoryLimit) {
  std::vector<std::string> argv = {shardc, modelFile, "--rules", trial.rulesFile(),
                                   "--report=json"};
  llvm::append_range(argv, compilerFlags());
  Finished run = runProgram(argv, trial.stem + ".report");
  if (run.status != 0) {
    trial.rejected = run.why();
    return;
  }
  auto report = json::parse(run.out);
  if (!report || !report->getAsObject()) {
    trial.rejected = report ? "the report is not a JSON object" : toString(report.takeError());
    return;
  }
  auto cost = predictStep(*report->getAsObject(), trial.candidate.mesh, calibration);
  if (!cost) {
    trial.rejected = toString(cost.takeError());
    return;
  }
  trial.predicted = *cost;
  if (cost->memoryPerRank > memoryLimit)
    trial.rejected = "needs " + formatBytes(cost->memoryPerRank) + " per rank, more than the " +
                     formatBytes(memoryLimit) + " a rank has";
}

/// Builds the trial's executable and trains it a few steps on the ranks.
void measure(Trial &trial, const std::string &shardc) {
  const std::string &stem = trial.stem;
  std::vector<std::string> build = {shardc, modelFile, "--rules", trial.rulesFile(), "-o", stem};
  llvm::append_range(build, compilerFlags());
  Finished built = runProgram(build, stem + ".build");
  if (built.status != 0) {
    trial.measureError = "build failed: " + built.why();
    return;
  }
  std::vector<std::string> argv = launcher(ranks, hosts > 1);
  const std::string metrics = stem + ".metrics.jsonl";
  llvm::sys::fs::remove(metrics);
  llvm::append_range(argv, std::vector<std::string>{stem, "--steps", std::to_string(steps),
                                                    "--synthetic", "--no-eval", "--metrics",
                                                    metrics});
  llvm::append_range(argv, runArgs);
  Finished ran = runProgram(argv, stem + ".run");
  if (ran.status != 0) {
    trial.measureError = "run failed: " + ran.why();
    return;
  }
  std::vector<double> times;
  llvm::SmallVector<llvm::StringRef> lines;
  const std::string text = readFile(metrics);
  llvm::StringRef(text).split(lines, '\n', -1, false);
  for (llvm::StringRef line : lines) {
    auto value = json::parse(line);
    if (!value) {
      llvm::consumeError(value.takeError());
      continue;
    }
    const json::Object *entry = value->getAsObject();
    if (!entry || entry->getString("kind") != "train")
      continue;
    std::optional<int64_t> step = entry->getInteger("step");
    std::optional<double> seconds = entry->getNumber("seconds_per_step");
    if (step && seconds && *step > 2)
      times.push_back(*seconds);
  }
  if (times.empty()) {
    trial.measureError = "no step after the second has a time in " + metrics;
    return;
  }
  std::sort(times.begin(), times.end());
  size_t n = times.size();
  trial.measured = n % 2 ? times[n / 2] : (times[n / 2 - 1] + times[n / 2]) / 2;
  // The run's summary, its last line: the largest rank's peak resident memory.
  llvm::StringRef summary = llvm::StringRef(ran.out).trim().rsplit('\n').second;
  if (summary.empty())
    summary = llvm::StringRef(ran.out).trim();
  if (auto value = json::parse(summary)) {
    if (const json::Object *object = value->getAsObject())
      if (const json::Object *resident = object->getObject("resident_bytes_per_rank"))
        trial.peakBytes = resident->getInteger("peak");
  } else {
    llvm::consumeError(value.takeError());
  }
}

std::string milliseconds(double seconds) {
  return llvm::formatv("{0:F1} ms", seconds * 1e3).str();
}

/// Why the winner won, as the rules file's comment says it.
std::vector<std::string> explain(const Trial &best, const std::vector<const Trial *> &timed,
                                 const std::string &modelName,
                                 const Calibration &calibration) {
  std::vector<std::string> lines;
  const Candidate &c = best.candidate;
  std::string where = std::to_string(ranks) + " ranks" +
                      (hosts > 1 ? " on " + std::to_string(hosts) + " hosts" : "");
  if (best.measured) {
    lines.push_back("shardc tune: the fastest of the " + std::to_string(timed.size()) +
                    " layouts it built and timed for " + modelName + " on " + where + ".");
    std::string next;
    for (const Trial *other : timed)
      if (other != &best && other->measured && next.empty())
        next = "; next " + other->candidate.label() + " at " + milliseconds(*other->measured);
    lines.push_back(c.name + " over " + c.mesh.str() + ": " + c.summary + ". Measured " +
                    milliseconds(*best.measured) + " per train step (median of " +
                    std::to_string(steps - 2) + " steps)" + next + ".");
  } else {
    lines.push_back("shardc tune: the layout predicted fastest for " + modelName + " on " +
                    where + " (not timed).");
    lines.push_back(c.name + " over " + c.mesh.str() + ": " + c.summary + ".");
  }
  const StepCost &p = best.predicted;
  lines.push_back(llvm::formatv("Predicted {0}: {1} of compute ({2:F3} GFLOP of contractions per "
                                "rank at {3:F1} GFLOP/s, {4:F3} G other loop iterations at "
                                "{5:F2} G/s),",
                                milliseconds(p.seconds()), milliseconds(p.computeSeconds),
                                p.contractionFlops / 1e9, p.gemmFlopsPerRank / 1e9,
                                (p.flops - p.contractionFlops) / 1e9,
                                calibration.elementwisePerRank / 1e9)
                      .str());
  lines.push_back(llvm::formatv("{0} of communication ({1} collectives, {2} sent per rank); "
                                "{3} per rank.",
                                milliseconds(p.communicationSeconds), p.collectives,
                                formatBytes(p.sentBytes), formatBytes(p.memoryPerRank))
                      .str());
  return lines;
}

json::Value trialJSON(const Trial &t) {
  json::Array rules;
  for (const auto &[logical, meshAxis] : t.candidate.rules)
    rules.push_back(logical + " -> " + meshAxis);
  json::Object mesh;
  for (const auto &[name, size] : t.candidate.mesh.axes)
    mesh[name] = size;
  json::Object object{{"name", t.candidate.name},
                      {"label", t.candidate.label()},
                      {"mesh", std::move(mesh)},
                      {"rules", std::move(rules)},
                      {"rules_file", t.rulesFile()},
                      {"rejected", t.rejected.empty() ? json::Value(nullptr) : t.rejected}};
  if (t.rejected.empty() || t.predicted.flops) {
    object["memory_per_rank"] = t.predicted.memoryPerRank;
    object["predicted_seconds"] = t.predicted.seconds();
    object["compute_seconds"] = t.predicted.computeSeconds;
    object["communication_seconds"] = t.predicted.communicationSeconds;
  }
  object["measured_seconds"] = t.measured ? json::Value(*t.measured) : json::Value(nullptr);
  object["measured_peak_resident_bytes"] =
      t.peakBytes ? json::Value(*t.peakBytes) : json::Value(nullptr);
  if (!t.measureError.empty())
    object["measure_error"] = t.measureError;
  return object;
}

json::Value axesJSON(const ModelAxes &axes) {
  auto list = [](const std::vector<std::string> &names) {
    return json::Array(std::vector<json::Value>(names.begin(), names.end()));
  };
  return json::Object{{"batch", axes.batch},
                      {"sequence", axes.sequence.empty() ? json::Value(nullptr) : axes.sequence},
                      {"parameters", list(axes.parameterAxes)},
                      {"pairs", list(axes.pairs)},
                      {"carry", list(axes.carry)},
                      {"fsdp", axes.fsdp}};
}

std::string listed(const std::vector<std::string> &names) {
  return names.empty() ? "none" : llvm::join(names, ", ");
}

void printTable(const std::vector<Trial> &trials, const Trial *best, llvm::raw_ostream &os) {
  const bool anyRow = llvm::any_of(trials, [](const Trial &t) { return t.rejected.empty(); });
  if (anyRow)
    os << llvm::formatv("  {0,-28} {1,12} {2,12} {3,22} {4,12} {5,12}\n", "layout",
                        "memory/rank", "predicted", "(compute + comm)", "measured", "peak RSS");
  for (const Trial &t : trials) {
    if (!t.rejected.empty())
      continue;
    std::string split = "(" + llvm::formatv("{0:F1}", t.predicted.computeSeconds * 1e3).str() +
                        " + " +
                        llvm::formatv("{0:F1}", t.predicted.communicationSeconds * 1e3).str() + ")";
    os << llvm::formatv("  {0,-28} {1,12} {2,12} {3,22} {4,12} {5,12}{6}\n", t.candidate.label(),
                        formatBytes(t.predicted.memoryPerRank), milliseconds(t.predicted.seconds()),
                        split,
                        t.measured ? milliseconds(*t.measured)
                                   : t.measureError.empty() ? "-" : "failed",
                        t.peakBytes ? formatBytes(*t.peakBytes) : "-",
                        &t == best ? "  <- best" : "");
  }
  bool any = false;
  for (const Trial &t : trials) {
    if (t.rejected.empty() && t.measureError.empty())
      continue;
    if (!any)
      os << (anyRow ? "\n" : "") << "left out:\n";
    any = true;
    os << "  " << t.candidate.label() << ": "
       << (t.rejected.empty() ? t.measureError : t.rejected) << "\n";
  }
}

int tune(const char *argv0) {
  if (ranks < 2)
    return fail("--ranks must be at least 2: one rank has one layout");
  if (hosts < 1 || ranks % hosts)
    return fail("--hosts must divide --ranks (" + llvm::Twine(ranks) + ")");
  if (top > 0 && steps < 3)
    return fail("--steps must be at least 3: the first two steps are not timed");
  if (!maxMemoryPerRank.empty() && parseBytes(maxMemoryPerRank) < 0)
    return fail("--max-memory-per-rank needs a size such as 4G, 512MiB or 1048576, not '" +
                maxMemoryPerRank + "'");
  const std::string stem = llvm::sys::path::stem(modelFile).str();
  if (workDir.empty())
    workDir = stem + ".tune";
  if (outputFile.empty())
    outputFile = stem + ".tuned.rules";
  if (std::error_code ec = llvm::sys::fs::create_directories(workDir))
    return fail("cannot make --work-dir '" + workDir + "': " + ec.message());

  // The model's axes, from its typed program before any rules.
  llvm::SourceMgr sourceMgr;
  DiagnosticEngine diags(sourceMgr);
  std::optional<TypedProgram> program;
  if (auto sets = parseConfigOverrides(configSets, sourceMgr, diags)) {
    LoadProgramOptions options;
    options.importDirs.assign(importDirs.begin(), importDirs.end());
    options.config = std::move(*sets);
    program = loadProgram(modelFile, options, diags).program;
  }
  if (!program)
    return fail("the model has errors (above)");
  auto precisions = parsePrecisionFlags(precisionFlags, sourceMgr, diags);
  if (!precisions || !applyPrecisions(*program, *precisions, diags))
    return fail("--precision has errors (above)");
  const ModelAxes axes = analyzeAxes(*program);
  if (axes.batch.empty())
    return fail("model " + program->modelName + " has no input with an axis to split");

  std::vector<Trial> trials;
  for (Candidate &candidate : layoutCandidates(axes, ranks)) {
    Trial trial;
    trial.candidate = std::move(candidate);
    for (const PrecisionAST &precision : *precisions)
      trial.candidate.precisions.push_back({precision.what, precision.type});
    std::string name = llvm::formatv("{0,0+2}-{1}", trials.size() + 1,
                                     trial.candidate.label())
                           .str();
    for (char &ch : name)
      if (!llvm::isAlnum(ch) && ch != '-')
        ch = '_';
    trial.stem = workDir + "/" + name;
    if (!writeFile(trial.rulesFile(), trial.candidate.rulesText()))
      return fail("cannot write '" + trial.rulesFile() + "'");
    trials.push_back(std::move(trial));
  }

  auto calibration = loadOrMeasureCalibration(argv0);
  if (!calibration)
    return fail(toString(calibration.takeError()));
  if (calibration->ranks != ranks || calibration->hosts != hosts)
    return fail("--calibration '" + calibrationFile + "' is for " +
                llvm::Twine(calibration->ranks) + " ranks on " + llvm::Twine(calibration->hosts) +
                " host(s), not " + llvm::Twine(ranks) + " on " + llvm::Twine(hosts));
  if (program->matmulInBf16 && calibration->gemmBf16FlopsPerRank <= 0)
    return fail("--precision matmul=bf16 prices the products at the calibration's bf16 GEMM "
                "rate, which --calibration '" + calibrationFile +
                "' lacks (gemm_bf16_flops_per_rank): measure one (leave out --calibration)");
  std::string calibrationText;
  llvm::raw_string_ostream(calibrationText) << llvm::formatv("{0:2}", calibration->toJSON());
  writeFile(workDir + "/calibration.json", calibrationText + "\n");

  const std::string shardc = besideThisProgram(argv0, "shardc");
  const int64_t memoryLimit = maxMemoryPerRank.empty() ? memoryPerRankOfThisHost(ranks / hosts)
                                                       : parseBytes(maxMemoryPerRank);
  for (size_t i = 0; i < trials.size(); ++i) {
    predict(trials[i], shardc, *calibration, memoryLimit);
    progress(llvm::formatv("[{0}/{1}] {2}: {3}", i + 1, trials.size(),
                           trials[i].candidate.label(),
                           trials[i].rejected.empty() ? milliseconds(trials[i].predicted.seconds()) +
                                                            " predicted"
                                                      : "left out (" + trials[i].rejected + ")"));
  }
  std::stable_sort(trials.begin(), trials.end(), [](const Trial &a, const Trial &b) {
    if (a.rejected.empty() != b.rejected.empty())
      return a.rejected.empty();
    return a.rejected.empty() && a.predicted.seconds() < b.predicted.seconds();
  });
  if (trials.empty() || !trials.front().rejected.empty()) {
    printTable(trials, nullptr, llvm::errs());
    return fail("no layout of the " + llvm::Twine(trials.size()) +
                " tried compiles and fits (see " + workDir + ")");
  }

  std::vector<const Trial *> timed;
  for (Trial &trial : trials) {
    if (timed.size() == top || !trial.rejected.empty())
      break;
    progress("timing " + trial.candidate.label() + ": " + llvm::Twine(steps) + " steps on " +
             llvm::Twine(ranks) + " ranks");
    measure(trial, shardc);
    timed.push_back(&trial);
  }
  const Trial *best = &trials.front();
  for (const Trial *t : timed)
    if (t->measured && (!best->measured || *t->measured < *best->measured))
      best = t;
  if (top > 0 && !best->measured) {
    printTable(trials, nullptr, llvm::errs());
    return fail("no timed layout ran (see " + workDir + ")");
  }
  std::vector<const Trial *> byTime = timed;
  std::stable_sort(byTime.begin(), byTime.end(), [](const Trial *a, const Trial *b) {
    return a->measured.value_or(INFINITY) < b->measured.value_or(INFINITY);
  });
  std::vector<std::string> comment =
      explain(*best, byTime, program->modelName, *calibration);
  std::string command = "shardc tune " + modelFile;
  for (const std::string &flag : compilerFlags())
    command += " " + flag;
  command += " --ranks " + std::to_string(ranks);
  if (hosts > 1)
    command += " --hosts " + std::to_string(hosts);
  for (const std::string &precision : precisionFlags)
    command += " --precision " + precision;
  comment.push_back(command + "; the candidates, their plans and logs in " + workDir + ".");
  if (!writeFile(outputFile, best->candidate.rulesText(comment)))
    return fail("cannot write '" + outputFile + "'");

  if (asJSON) {
    json::Array list;
    for (const Trial &t : trials)
      list.push_back(trialJSON(t));
    json::Object result{{"model", program->modelName},
                        {"ranks", ranks.getValue()},
                        {"hosts", hosts.getValue()},
                        {"axes", axesJSON(axes)},
                        {"precisions", json::Array(best->candidate.precisionLines())},
                        {"calibration", calibration->toJSON()},
                        {"candidates", std::move(list)},
                        {"best", best->candidate.label()},
                        {"rules_file", outputFile.getValue()}};
    llvm::outs() << llvm::formatv("{0:2}", json::Value(std::move(result))) << "\n";
    return 0;
  }
  llvm::outs() << "Layouts of " << program->modelName << " on " << ranks << " ranks"
               << (hosts > 1 ? " over " + std::to_string(hosts) + " hosts" : "") << llvm::formatv(
                      " (per rank: GEMM {0:F1} GFLOP/s{1}, streaming {2:F2} G/s; all_reduce {3:F0} "
                      "us + {4:F2} GB/s",
                      calibration->gemmFlopsPerRank / 1e9,
                      calibration->gemmBf16FlopsPerRank > 0
                          ? llvm::formatv(" ({0:F1} in bf16{1})",
                                          calibration->gemmBf16FlopsPerRank / 1e9,
                                          calibration->bf16Emulated ? ", emulated" : "")
                                .str()
                          : "",
                      calibration->elementwisePerRank / 1e9, calibration->local.latency * 1e6,
                      calibration->local.bytesPerSecond / 1e9);
  if (calibration->network)
    llvm::outs() << llvm::formatv(", between hosts {0:F0} us + {1:F2} GB/s",
                                  calibration->network->latency * 1e6,
                                  calibration->network->bytesPerSecond / 1e9);
  llvm::outs() << "):\n";
  llvm::outs() << "  batch " << axes.batch << ", sequence "
               << (axes.sequence.empty() ? "none" : axes.sequence) << ", column/row pairs "
               << listed(axes.pairs) << ", scan carry " << listed(axes.carry) << ", fsdp over "
               << axes.fsdp << "\n\n";
  printTable(trials, best, llvm::outs());
  llvm::outs() << "\nwrote " << outputFile << ": " << best->candidate.label() << " ("
               << best->candidate.summary << ")\n";
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(
      argc, argv,
      "shardc tune: the layouts people write for a model, predicted, the best built and timed; "
      "the fastest written out as a rules file\n");
  return tune(argv[0]);
}
