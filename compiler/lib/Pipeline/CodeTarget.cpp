//===- CodeTarget.cpp - the CPU the generated code is compiled for --------===//
//
// A program built for the host by default (`native`), or for a CPU that every
// host of a cluster has: --target-cpu and --target-features resolve as clang's
// -mcpu and -target-feature do. The features the code may use are recorded
// for the runtime, which refuses a CPU without them at start instead of
// dying of SIGILL in the first step; the list of features it can check is
// the runtime's (shardrt/cpu_features.def).
//
//===----------------------------------------------------------------------===//

#include "shardc/IR/Attributes.h"
#include "shardc/Pipeline/Pipeline.h"
#include "shardc/Support/NearestName.h"

#include "mlir/IR/Builders.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/X86TargetParser.h"

using namespace shardc;

namespace {

/// The features the runtime checks, in shardrt/cpu_features.def's order.
constexpr llvm::StringLiteral kCheckedFeatures[] = {
#define SHARDRT_CPU_FEATURE(NAME, ...) NAME,
#include "shardrt/cpu_features.def"
};

/// Every feature name the host's code generator knows (x86's: `avx512f`, ...).
std::vector<std::string> knownFeatures() {
  llvm::InitializeNativeTarget();
  llvm::Triple triple(llvm::sys::getDefaultTargetTriple());
  std::string error;
  const llvm::Target *target = llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target)
    return {};
  std::unique_ptr<llvm::MCSubtargetInfo> subtarget(
      target->createMCSubtargetInfo(triple, /*CPU=*/"", /*Features=*/""));
  std::vector<std::string> names;
  for (const llvm::SubtargetFeatureKV &feature : subtarget->getAllProcessorFeatures())
    names.push_back(feature.Key);
  return names;
}

/// Sets a feature and what it implies (or, cleared, what implies it), as clang does.
void setFeature(llvm::StringMap<bool> &enabled, llvm::StringRef name, bool on) {
  enabled[name] = on;
  llvm::X86::updateImpliedFeatures(name, on, enabled);
}

/// Applies --target-features' `+NAME,-NAME` to `target` and `enabled`, each entry
/// checked in a buffer of the flag's own (`--target-features LIST`), so that an
/// error points at it. False after an error.
bool applyFeatureFlag(llvm::StringRef list, CodeTarget &target, llvm::StringMap<bool> &enabled,
                      llvm::SourceMgr &sourceMgr, DiagnosticEngine &diags) {
  const std::string prefix = "--target-features ";
  unsigned buffer = sourceMgr.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(prefix + list.str(), "<command line>"), SMLoc());
  const char *start = sourceMgr.getMemoryBuffer(buffer)->getBufferStart() + prefix.size();
  const std::vector<std::string> known = knownFeatures();
  llvm::SmallVector<llvm::StringRef> entries;
  list.split(entries, ',');
  bool valid = true;
  for (llvm::StringRef entry : entries) {
    const char *begin = start + (entry.data() - list.data());
    SMRange range(SMLoc::getFromPointer(begin), SMLoc::getFromPointer(begin + entry.size()));
    llvm::StringRef name = entry.drop_front();
    if (!entry.starts_with("+") && !entry.starts_with("-")) {
      diags.error(range, "--target-features wants +NAME or -NAME, comma separated (as "
                         "+avx2,-avx512f), not '" +
                             entry + "'");
      valid = false;
    } else if (!llvm::is_contained(known, name)) {
      std::string nearest = nearestName(name, known);
      diags.error(range, "unknown target feature '" + name + "'" +
                             (nearest.empty() ? "" : "; did you mean '" + nearest + "'?"));
      valid = false;
    } else {
      setFeature(enabled, name, entry.front() == '+');
      target.llvmFeatures += (target.llvmFeatures.empty() ? "" : ",") + entry.str();
    }
  }
  return valid;
}

} // namespace

std::optional<CodeTarget> shardc::resolveCodeTarget(llvm::StringRef cpu, llvm::StringRef features,
                                                    llvm::SourceMgr &sourceMgr,
                                                    DiagnosticEngine &diags) {
  CodeTarget target;
  llvm::StringMap<bool> enabled;
  if (cpu == "native") {
    target.cpu = llvm::sys::getHostCPUName().str();
    for (const auto &[name, on] : llvm::sys::getHostCPUFeatures()) {
      enabled[name] = on;
      target.llvmFeatures +=
          (target.llvmFeatures.empty() ? "" : ",") + std::string(on ? "+" : "-") + name.str();
    }
  } else if (llvm::X86::parseArchX86(cpu, /*Only64Bit=*/true) != llvm::X86::CK_None) {
    target.cpu = cpu.str();
    llvm::SmallVector<llvm::StringRef> cpuFeatures;
    llvm::X86::getFeaturesForCPU(cpu, cpuFeatures);
    for (llvm::StringRef name : cpuFeatures)
      setFeature(enabled, name, true);
  } else {
    llvm::SmallVector<llvm::StringRef> names;
    llvm::X86::fillValidCPUArchList(names, /*Only64Bit=*/true);
    std::vector<std::string> candidates = {"native"};
    candidates.insert(candidates.end(), names.begin(), names.end());
    std::string nearest = nearestName(cpu, candidates);
    diags.toolError("unknown target CPU '" + cpu + "'" +
                    (nearest.empty() ? "" : "; did you mean '" + nearest + "'?") +
                    " (native, x86-64-v2, x86-64-v3, x86-64-v4 or an x86-64 CPU: " +
                    llvm::join(names, ", ") + ")");
    return std::nullopt;
  }
  if (!features.empty() && !applyFeatureFlag(features, target, enabled, sourceMgr, diags))
    return std::nullopt;
  for (llvm::StringRef name : kCheckedFeatures)
    if (enabled.lookup(name))
      target.features.push_back(name.str());
  return target;
}

void shardc::annotateCodeTarget(mlir::ModuleOp module, const CodeTarget &target) {
  mlir::Builder builder(module.getContext());
  module->setAttr(kTargetCpuAttr, builder.getStringAttr(target.cpu));
  llvm::SmallVector<llvm::StringRef> features(target.features.begin(), target.features.end());
  module->setAttr(kTargetFeaturesAttr, builder.getStrArrayAttr(features));
}
