//===- Calibrate.cpp - this machine's constants for the cost model --------===//

#include "shardc/Tune/Calibrate.h"
#include "shardc/Tune/Processes.h"

#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

using namespace shardc;
namespace json = llvm::json;

namespace {

/// shardrt-calibrate's figures for `n` ranks started by `argv`.
llvm::Expected<json::Object> calibrate(std::vector<std::string> argv, const std::string &tool,
                                       const std::string &log, unsigned timeout) {
  argv.push_back(tool);
  Finished run = runProgram(argv, log, timeout);
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

} // namespace

llvm::Expected<Calibration> shardc::loadOrMeasureCalibration(const TuneOptions &o,
                                                             const char *argv0) {
  if (!o.calibrationFile.empty()) {
    auto text = llvm::MemoryBuffer::getFile(o.calibrationFile);
    if (!text)
      return llvm::createStringError(text.getError(), "cannot read --calibration '" +
                                                          o.calibrationFile +
                                                          "': " + text.getError().message());
    auto parsed = json::parse((*text)->getBuffer());
    auto calibration = parsed ? parseCalibration(*parsed) : parsed.takeError();
    if (!calibration)
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "--calibration '" + o.calibrationFile +
                                         "': " + toString(calibration.takeError()));
    return calibration;
  }
  const std::string tool = besideThisProgram(argv0, "shardrt-calibrate");
  progress(o, "calibrating: shardrt-calibrate on " + llvm::Twine(o.ranks) + " ranks" +
                  (!o.launcherText.empty() ? " under --launcher"
                   : o.hosts > 1           ? " over TCP"
                                           : ""));
  auto all = calibrate(launcherCommand(o.launcherText, o.ranks, o.hosts > 1), tool,
                       o.workDir + "/calibrate", o.timeout);
  if (!all)
    return all.takeError();
  json::Object figures{{"ranks", o.ranks}, {"hosts", o.hosts}};
  for (const char *key :
       {"gemm_flops_per_rank", "gemm_bf16_flops_per_rank", "bf16_products", "elementwise_per_rank"})
    if (const json::Value *value = all->get(key))
      figures[key] = *value;
  // With one host the ranks' link is the host's; with one rank per host no group
  // stays inside a host, and the host's link is never used.
  figures[o.hosts > 1 ? "network" : "local"] = linkFigures(*all);
  if (o.hosts > 1 && o.ranks / o.hosts == 1)
    figures["local"] = linkFigures(*all);
  else if (o.hosts > 1) {
    progress(o, "calibrating: shardrt-calibrate on one host's " + llvm::Twine(o.ranks / o.hosts) +
                    " ranks");
    auto host = calibrate(launcherCommand(o.launcherText, o.ranks / o.hosts, false, /*here=*/true),
                          tool, o.workDir + "/calibrate-host", o.timeout);
    if (!host)
      return host.takeError();
    figures["local"] = linkFigures(*host);
  }
  auto calibration = parseCalibration(json::Value(std::move(figures)));
  if (!calibration)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "shardrt-calibrate's figures (" + o.workDir +
                                       "/calibrate*.out): " + toString(calibration.takeError()));
  return calibration;
}
