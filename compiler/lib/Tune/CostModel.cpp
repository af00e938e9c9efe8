//===- CostModel.cpp - a layout's step time, predicted ---------------------===//

#include "shardc/Tune/CostModel.h"

#include "llvm/ADT/StringExtras.h"

using namespace shardc;
using llvm::json::Object;
using llvm::json::Value;

namespace {

llvm::Error malformed(const llvm::Twine &what) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), what);
}

Value linkJSON(const LinkCost &link) {
  return Object{{"latency_seconds", link.latency},
                {"bandwidth_bytes_per_second", link.bytesPerSecond}};
}

llvm::Expected<LinkCost> parseLink(const Object *object, llvm::StringRef name) {
  std::optional<double> latency = object ? object->getNumber("latency_seconds") : std::nullopt;
  std::optional<double> bandwidth =
      object ? object->getNumber("bandwidth_bytes_per_second") : std::nullopt;
  if (!latency || !bandwidth || *latency < 0 || *bandwidth <= 0)
    return malformed("calibration's '" + name +
                     "' needs latency_seconds >= 0 and bandwidth_bytes_per_second > 0");
  return LinkCost{*latency, *bandwidth};
}

/// The ranks of the group of mesh axes `axes` that rank 0 is in: whether they all
/// live on rank 0's host.
bool groupCrossesHosts(const Mesh &mesh, const std::vector<std::string> &axes,
                       int64_t ranksPerHost) {
  int64_t last = 0;
  for (const auto &[name, size] : mesh.axes)
    last = last * size + (llvm::is_contained(axes, name) ? size - 1 : 0);
  return last >= ranksPerHost;
}

} // namespace

Value Calibration::toJSON() const {
  Object object{{"ranks", ranks},
                {"hosts", hosts},
                {"gemm_flops_per_rank", gemmFlopsPerRank},
                {"gemm_bf16_flops_per_rank", gemmBf16FlopsPerRank},
                {"bf16_products", bf16Emulated ? "emulated" : "onednn"},
                {"elementwise_per_rank", elementwisePerRank},
                {"local", linkJSON(local)}};
  if (network)
    object["network"] = linkJSON(*network);
  return object;
}

llvm::Expected<Calibration> shardc::parseCalibration(const Value &value) {
  const Object *object = value.getAsObject();
  if (!object)
    return malformed("a calibration is a JSON object");
  Calibration calibration;
  std::optional<int64_t> ranks = object->getInteger("ranks");
  std::optional<int64_t> hosts = object->getInteger("hosts");
  std::optional<double> gemm = object->getNumber("gemm_flops_per_rank");
  std::optional<double> elementwise = object->getNumber("elementwise_per_rank");
  if (!ranks || *ranks < 1 || !gemm || *gemm <= 0 || !elementwise || *elementwise <= 0)
    return malformed("calibration needs ranks >= 1, gemm_flops_per_rank > 0 and "
                     "elementwise_per_rank > 0");
  calibration.ranks = *ranks;
  calibration.hosts = hosts.value_or(1);
  if (calibration.hosts < 1 || *ranks % calibration.hosts)
    return malformed("calibration's hosts must divide its ranks");
  calibration.gemmFlopsPerRank = *gemm;
  if (const Value *bf16 = object->get("gemm_bf16_flops_per_rank")) {
    std::optional<double> rate = bf16->getAsNumber();
    if (!rate || *rate < 0)
      return malformed("calibration's gemm_bf16_flops_per_rank must be a number >= 0");
    calibration.gemmBf16FlopsPerRank = *rate;
  }
  if (const Value *how = object->get("bf16_products")) {
    std::optional<llvm::StringRef> name = how->getAsString();
    if (!name || (*name != "onednn" && *name != "emulated"))
      return malformed("calibration's bf16_products must be \"onednn\" or \"emulated\"");
    calibration.bf16Emulated = *name == "emulated";
  }
  calibration.elementwisePerRank = *elementwise;
  auto local = parseLink(object->getObject("local"), "local");
  if (!local)
    return local.takeError();
  calibration.local = *local;
  if (calibration.hosts > 1) {
    auto network = parseLink(object->getObject("network"), "network");
    if (!network)
      return network.takeError();
    calibration.network = *network;
  }
  return calibration;
}

llvm::Expected<StepCost> shardc::predictStep(const Object &report, const Mesh &mesh,
                                             const Calibration &calibration) {
  const Object *memory = report.getObject("memory_per_rank");
  const llvm::json::Array *collectives = report.getArray("collectives_per_step");
  std::optional<int64_t> flops = memory ? memory->getInteger("step_flops") : std::nullopt;
  std::optional<int64_t> contraction =
      memory ? memory->getInteger("contraction_flops") : std::nullopt;
  std::optional<int64_t> total = memory ? memory->getInteger("total") : std::nullopt;
  if (!flops || !contraction || !total || !collectives)
    return malformed("the report has no memory_per_rank.step_flops, contraction_flops, total "
                     "or collectives_per_step");
  if (mesh.numRanks() != calibration.ranks)
    return malformed("the calibration is for " + llvm::Twine(calibration.ranks) +
                     " ranks, the layout has " + llvm::Twine(mesh.numRanks()));
  StepCost cost;
  cost.gemmFlopsPerRank = calibration.gemmFlopsPerRank;
  if (report.getString("matmul_precision").value_or("f32") == "bf16") {
    if (calibration.gemmBf16FlopsPerRank <= 0)
      return malformed("the layout computes its products in bfloat16 (precision matmul : bf16) "
                       "and the calibration has no gemm_bf16_flops_per_rank: measure one (leave "
                       "out --calibration)");
    cost.gemmFlopsPerRank = calibration.gemmBf16FlopsPerRank;
  }
  cost.flops = *flops;
  cost.contractionFlops = *contraction;
  cost.memoryPerRank = *total;
  cost.computeSeconds = double(*contraction) / cost.gemmFlopsPerRank +
                        double(*flops - *contraction) / calibration.elementwisePerRank;
  const int64_t ranksPerHost = calibration.ranks / calibration.hosts;
  for (const Value &entry : *collectives) {
    const Object *collective = entry.getAsObject();
    if (!collective)
      return malformed("a collective of the report is not an object");
    if (!collective->getBoolean("traffic").value_or(false))
      continue; // a slice of what the rank holds: no message
    std::optional<int64_t> count = collective->getInteger("count");
    std::optional<int64_t> sent = collective->getInteger("sent_bytes");
    std::optional<llvm::StringRef> kind = collective->getString("kind");
    std::optional<llvm::StringRef> axesText = collective->getString("mesh_axes");
    if (!count || !sent || !kind || !axesText)
      return malformed("a collective of the report lacks count, sent_bytes, kind or mesh_axes");
    std::vector<std::string> axes;
    int64_t group = 1;
    llvm::SmallVector<llvm::StringRef> names;
    axesText->split(names, ',', -1, false);
    for (llvm::StringRef name : names) {
      name = name.trim(" ()");
      if (mesh.indexOf(name.str()) == int64_t(mesh.axes.size()))
        return malformed("a collective over '" + *axesText + "', not an axis of " + mesh.str());
      axes.push_back(name.str());
      group *= mesh.size(name.str());
    }
    const LinkCost &link = calibration.network && groupCrossesHosts(mesh, axes, ranksPerHost)
                               ? *calibration.network
                               : calibration.local;
    // The calibrated latency is an all_reduce's 2 (ranks - 1) ring steps; a
    // gather or a scatter takes half as many over its group.
    const double steps = (kind->starts_with("all_reduce") ? 2.0 : 1.0) * double(group - 1);
    const double perStep =
        calibration.ranks > 1 ? link.latency / (2.0 * double(calibration.ranks - 1)) : 0;
    cost.communicationSeconds +=
        double(*count) * (steps * perStep + double(*sent) / link.bytesPerSecond);
    cost.sentBytes += *count * *sent;
    cost.collectives += *count;
  }
  return cost;
}
