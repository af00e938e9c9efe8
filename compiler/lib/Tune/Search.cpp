//===- Search.cpp - which layout? -----------------------------------------===//
//
// 1. The model's axes, from its typed program before any rules (loadProgram).
// 2. A candidate per layout of Candidates.h, its rules file written.
// 3. The calibration (Calibrate.h), read or measured.
// 4. Each candidate compiled by shardc for its plan (--report=json), predicted
//    by the cost model, left out when it fails or does not fit.
// 5. The --top best predicted built and trained --steps steps on the ranks.
// 6. The fastest measured (else the best predicted) written out with a
//    comment that says why, and the table (or JSON) printed.
//
//===----------------------------------------------------------------------===//

#include "shardc/Tune/Search.h"

#include "shardc/Frontend/LoadProgram.h"
#include "shardc/Sema/Sema.h"
#include "shardc/Sema/TypedPrinter.h"
#include "shardc/Tune/Calibrate.h"
#include "shardc/Tune/Candidates.h"
#include "shardc/Tune/CostModel.h"
#include "shardc/Tune/Processes.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>

using namespace shardc;
namespace json = llvm::json;

void shardc::progress(const TuneOptions &options, const llvm::Twine &message) {
  if (!options.asJSON)
    llvm::errs() << message << "\n";
}

namespace {

int fail(const llvm::Twine &message) {
  llvm::errs() << "shardc tune: error: " << message << "\n";
  return 1;
}

/// One candidate through the search.
struct Trial {
  Candidate candidate;
  std::string stem; // its files in --work-dir: STEM.rules, STEM.report.out, STEM (the program)
  std::string rulesFile() const { return stem + ".rules"; }
  std::string rejected; // why it was left out, if it was
  StepCost predicted;
  std::optional<double> measured;   // median seconds per step
  std::optional<int64_t> peakBytes; // the largest rank's peak resident memory in that run
  std::string measureError;
};

std::vector<std::string> compilerFlags(const TuneOptions &o) {
  std::vector<std::string> flags;
  for (const std::string &dir : o.importDirs)
    flags.push_back("-I" + dir);
  for (const std::string &set : o.configSets)
    flags.push_back("--set=" + set);
  return flags;
}

/// Compiles the trial's layout for its plan and predicts its step.
void predict(const TuneOptions &o, Trial &trial, const std::string &shardc,
             const Calibration &calibration, int64_t memoryLimit) {
  std::vector<std::string> argv = {shardc, o.modelFile, "--rules", trial.rulesFile(),
                                   "--report=json"};
  llvm::append_range(argv, compilerFlags(o));
  Finished run = runProgram(argv, trial.stem + ".report", o.timeout);
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
void measure(const TuneOptions &o, Trial &trial, const std::string &shardc) {
  const std::string &stem = trial.stem;
  std::vector<std::string> build = {shardc, o.modelFile, "--rules", trial.rulesFile(), "-o", stem};
  llvm::append_range(build, compilerFlags(o));
  Finished built = runProgram(build, stem + ".build", o.timeout);
  if (built.status != 0) {
    trial.measureError = "build failed: " + built.why();
    return;
  }
  std::vector<std::string> argv = launcherCommand(o.launcherText, o.ranks, o.hosts > 1);
  const std::string metrics = stem + ".metrics.jsonl";
  llvm::sys::fs::remove(metrics);
  llvm::append_range(argv,
                     std::vector<std::string>{stem, "--steps", std::to_string(o.steps),
                                              "--synthetic", "--no-eval", "--metrics", metrics});
  llvm::append_range(argv, o.runArgs);
  Finished ran = runProgram(argv, stem + ".run", o.timeout);
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

std::string milliseconds(double seconds) { return llvm::formatv("{0:F1} ms", seconds * 1e3).str(); }

/// Why the winner won, as the rules file's comment says it.
std::vector<std::string> explain(const TuneOptions &o, const Trial &best,
                                 const std::vector<const Trial *> &timed,
                                 const std::string &modelName, const Calibration &calibration) {
  std::vector<std::string> lines;
  const Candidate &c = best.candidate;
  std::string where = std::to_string(o.ranks) + " ranks" +
                      (o.hosts > 1 ? " on " + std::to_string(o.hosts) + " hosts" : "");
  if (best.measured) {
    lines.push_back("shardc tune: the fastest of the " + std::to_string(timed.size()) +
                    " layouts it built and timed for " + modelName + " on " + where + ".");
    std::string next;
    for (const Trial *other : timed)
      if (other != &best && other->measured && next.empty())
        next = "; next " + other->candidate.label() + " at " + milliseconds(*other->measured);
    lines.push_back(c.name + " over " + c.mesh.str() + ": " + c.summary + ". Measured " +
                    milliseconds(*best.measured) + " per train step (median of " +
                    std::to_string(o.steps - 2) + " steps)" + next + ".");
  } else {
    lines.push_back("shardc tune: the layout predicted fastest for " + modelName + " on " + where +
                    " (not timed).");
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
    os << llvm::formatv("  {0,-28} {1,12} {2,12} {3,22} {4,12} {5,12}\n", "layout", "memory/rank",
                        "predicted", "(compute + comm)", "measured", "peak RSS");
  for (const Trial &t : trials) {
    if (!t.rejected.empty())
      continue;
    std::string split = "(" + llvm::formatv("{0:F1}", t.predicted.computeSeconds * 1e3).str() +
                        " + " +
                        llvm::formatv("{0:F1}", t.predicted.communicationSeconds * 1e3).str() + ")";
    os << llvm::formatv(
        "  {0,-28} {1,12} {2,12} {3,22} {4,12} {5,12}{6}\n", t.candidate.label(),
        formatBytes(t.predicted.memoryPerRank), milliseconds(t.predicted.seconds()), split,
        t.measured               ? milliseconds(*t.measured)
        : t.measureError.empty() ? "-"
                                 : "failed",
        t.peakBytes ? formatBytes(*t.peakBytes) : "-", &t == best ? "  <- best" : "");
  }
  bool any = false;
  for (const Trial &t : trials) {
    if (t.rejected.empty() && t.measureError.empty())
      continue;
    if (!any)
      os << (anyRow ? "\n" : "") << "left out:\n";
    any = true;
    os << "  " << t.candidate.label() << ": " << (t.rejected.empty() ? t.measureError : t.rejected)
       << "\n";
  }
}

} // namespace

int shardc::tune(const TuneOptions &options, const char *argv0) {
  TuneOptions o = options; // with --work-dir and -o defaulted
  if (o.ranks < 2)
    return fail("--ranks must be at least 2: one rank has one layout");
  if (o.hosts < 1 || o.ranks % o.hosts)
    return fail("--hosts must divide --ranks (" + llvm::Twine(o.ranks) + ")");
  if (o.top > 0 && o.steps < 3)
    return fail("--steps must be at least 3: the first two steps are not timed");
  if (!o.maxMemoryPerRank.empty() && parseBytes(o.maxMemoryPerRank) < 0)
    return fail("--max-memory-per-rank needs a size such as 4G, 512MiB or 1048576, not '" +
                o.maxMemoryPerRank + "'");
  const std::string stem = llvm::sys::path::stem(o.modelFile).str();
  if (o.workDir.empty())
    o.workDir = stem + ".tune";
  if (o.outputFile.empty())
    o.outputFile = stem + ".tuned.rules";
  if (std::error_code ec = llvm::sys::fs::create_directories(o.workDir))
    return fail("cannot make --work-dir '" + o.workDir + "': " + ec.message());

  // The model's axes, from its typed program before any rules.
  llvm::SourceMgr sourceMgr;
  DiagnosticEngine diags(sourceMgr);
  std::optional<TypedProgram> program;
  if (auto sets = parseConfigOverrides(o.configSets, sourceMgr, diags)) {
    LoadProgramOptions options;
    options.importDirs.assign(o.importDirs.begin(), o.importDirs.end());
    options.config = std::move(*sets);
    program = loadProgram(o.modelFile, options, diags).program;
  }
  if (!program)
    return fail("the model has errors (above)");
  auto precisions = parsePrecisionFlags(o.precisionFlags, sourceMgr, diags);
  if (!precisions || !applyPrecisions(*program, *precisions, diags))
    return fail("--precision has errors (above)");
  const ModelAxes axes = analyzeAxes(*program);
  if (axes.batch.empty())
    return fail("model " + program->modelName + " has no input with an axis to split");

  std::vector<Trial> trials;
  for (Candidate &candidate : layoutCandidates(axes, o.ranks)) {
    Trial trial;
    trial.candidate = std::move(candidate);
    for (const PrecisionAST &precision : *precisions)
      trial.candidate.precisions.push_back({precision.what, precision.type});
    std::string name =
        llvm::formatv("{0,0+2}-{1}", trials.size() + 1, trial.candidate.label()).str();
    for (char &ch : name)
      if (!llvm::isAlnum(ch) && ch != '-')
        ch = '_';
    trial.stem = o.workDir + "/" + name;
    if (!writeFile(trial.rulesFile(), trial.candidate.rulesText()))
      return fail("cannot write '" + trial.rulesFile() + "'");
    trials.push_back(std::move(trial));
  }

  auto calibration = loadOrMeasureCalibration(o, argv0);
  if (!calibration)
    return fail(toString(calibration.takeError()));
  if (calibration->ranks != o.ranks || calibration->hosts != o.hosts)
    return fail("--calibration '" + o.calibrationFile + "' is for " +
                llvm::Twine(calibration->ranks) + " ranks on " + llvm::Twine(calibration->hosts) +
                " host(s), not " + llvm::Twine(o.ranks) + " on " + llvm::Twine(o.hosts));
  if (program->matmulInBf16 && calibration->gemmBf16FlopsPerRank <= 0)
    return fail("--precision matmul=bf16 prices the products at the calibration's bf16 GEMM "
                "rate, which --calibration '" +
                o.calibrationFile +
                "' lacks (gemm_bf16_flops_per_rank): measure one (leave out --calibration)");
  std::string calibrationText;
  llvm::raw_string_ostream(calibrationText) << llvm::formatv("{0:2}", calibration->toJSON());
  writeFile(o.workDir + "/calibration.json", calibrationText + "\n");

  const std::string shardc = besideThisProgram(argv0, "shardc");
  const int64_t memoryLimit = o.maxMemoryPerRank.empty()
                                  ? memoryPerRankOfThisHost(o.ranks / o.hosts)
                                  : parseBytes(o.maxMemoryPerRank);
  for (size_t i = 0; i < trials.size(); ++i) {
    predict(o, trials[i], shardc, *calibration, memoryLimit);
    progress(o,
             llvm::formatv("[{0}/{1}] {2}: {3}", i + 1, trials.size(), trials[i].candidate.label(),
                           trials[i].rejected.empty()
                               ? milliseconds(trials[i].predicted.seconds()) + " predicted"
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
                " tried compiles and fits (see " + o.workDir + ")");
  }

  std::vector<const Trial *> timed;
  for (Trial &trial : trials) {
    if (timed.size() == o.top || !trial.rejected.empty())
      break;
    progress(o, "timing " + trial.candidate.label() + ": " + llvm::Twine(o.steps) + " steps on " +
                    llvm::Twine(o.ranks) + " ranks");
    measure(o, trial, shardc);
    timed.push_back(&trial);
  }
  const Trial *best = &trials.front();
  for (const Trial *t : timed)
    if (t->measured && (!best->measured || *t->measured < *best->measured))
      best = t;
  if (o.top > 0 && !best->measured) {
    printTable(trials, nullptr, llvm::errs());
    return fail("no timed layout ran (see " + o.workDir + ")");
  }
  std::vector<const Trial *> byTime = timed;
  std::stable_sort(byTime.begin(), byTime.end(), [](const Trial *a, const Trial *b) {
    return a->measured.value_or(INFINITY) < b->measured.value_or(INFINITY);
  });
  std::vector<std::string> comment = explain(o, *best, byTime, program->modelName, *calibration);
  std::string command = "shardc tune " + o.modelFile;
  for (const std::string &flag : compilerFlags(o))
    command += " " + flag;
  command += " --ranks " + std::to_string(o.ranks);
  if (o.hosts > 1)
    command += " --hosts " + std::to_string(o.hosts);
  for (const std::string &precision : o.precisionFlags)
    command += " --precision " + precision;
  comment.push_back(command + "; the candidates, their plans and logs in " + o.workDir + ".");
  if (!writeFile(o.outputFile, best->candidate.rulesText(comment)))
    return fail("cannot write '" + o.outputFile + "'");

  if (o.asJSON) {
    json::Array list;
    for (const Trial &t : trials)
      list.push_back(trialJSON(t));
    json::Object result{{"model", program->modelName},
                        {"ranks", o.ranks},
                        {"hosts", o.hosts},
                        {"axes", axesJSON(axes)},
                        {"precisions", json::Array(best->candidate.precisionLines())},
                        {"calibration", calibration->toJSON()},
                        {"candidates", std::move(list)},
                        {"best", best->candidate.label()},
                        {"rules_file", o.outputFile}};
    llvm::outs() << llvm::formatv("{0:2}", json::Value(std::move(result))) << "\n";
    return 0;
  }
  llvm::outs() << "Layouts of " << program->modelName << " on " << o.ranks << " ranks"
               << (o.hosts > 1 ? " over " + std::to_string(o.hosts) + " hosts" : "")
               << llvm::formatv(
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
  llvm::outs() << "\nwrote " << o.outputFile << ": " << best->candidate.label() << " ("
               << best->candidate.summary << ")\n";
  return 0;
}
