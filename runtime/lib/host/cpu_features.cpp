// cpuid and xgetbv, read once, against the table of shardrt/cpu_features.def.
#include "cpu_features.h"

#include <cpuid.h>

#include <array>
#include <cstdint>

namespace shardrt {
namespace {

enum Register { EAX, EBX, ECX, EDX };
enum class State { None, Avx, Avx512, Amx };

struct CpuFeature {
  const char *name;
  int level;
  unsigned leaf, subleaf;
  Register reg;
  unsigned bit;
  State state;
};

constexpr CpuFeature kFeatures[] = {
#define SHARDRT_CPU_FEATURE(NAME, LEVEL, LEAF, SUBLEAF, REGISTER, BIT, STATE)                      \
  {NAME, LEVEL, LEAF, SUBLEAF, REGISTER, BIT, State::STATE},
#include "shardrt/cpu_features.def"
};

/// cpuid's four registers; zeros for a leaf or subleaf beyond what the CPU reports
/// (some return garbage there rather than zeros).
std::array<unsigned, 4> cpuid(unsigned leaf, unsigned subleaf) {
  std::array<unsigned, 4> regs{};
  if (__get_cpuid_max(leaf & 0x80000000u, nullptr) < leaf)
    return regs;
  if (leaf == 7 && subleaf > 0) {
    unsigned lastSubleaf = 0, unused = 0;
    __cpuid_count(7, 0, lastSubleaf, unused, unused, unused);
    if (subleaf > lastSubleaf)
      return regs;
  }
  __cpuid_count(leaf, subleaf, regs[EAX], regs[EBX], regs[ECX], regs[EDX]);
  return regs;
}

/// Whether the operating system saves each kind of register state (XCR0), as
/// llvm::sys::getHostCPUFeatures decides it.
bool stateSaved(State state) {
  if (state == State::None)
    return true;
  const std::array<unsigned, 4> leaf1 = cpuid(1, 0);
  if (!((leaf1[ECX] >> 27) & 1)) // OSXSAVE: xgetbv is there to ask
    return false;
  uint32_t low = 0, high = 0;
  asm volatile("xgetbv" : "=a"(low), "=d"(high) : "c"(0));
  const uint32_t avx = 0x6, avx512 = 0xe0, amx = (1u << 17) | (1u << 18);
  const bool avxSaved = (low & avx) == avx && ((leaf1[ECX] >> 28) & 1);
  switch (state) {
  case State::Avx:
    return avxSaved;
  case State::Avx512:
    return avxSaved && (low & avx512) == avx512;
  default:
    return (low & amx) == amx;
  }
}

bool has(const CpuFeature &feature) {
  return ((cpuid(feature.leaf, feature.subleaf)[feature.reg] >> feature.bit) & 1) &&
         stateSaved(feature.state);
}

} // namespace

std::vector<std::string> missingCpuFeatures(const std::vector<std::string> &needed) {
  std::vector<std::string> missing;
  for (const std::string &name : needed) {
    bool present = false;
    for (const CpuFeature &feature : kFeatures)
      present = present || (name == feature.name && has(feature));
    if (!present)
      missing.push_back(name);
  }
  return missing;
}

std::string cpuLevelName() {
  int level = 4;
  for (const CpuFeature &feature : kFeatures)
    if (feature.level > 0 && feature.level <= level && !has(feature))
      level = feature.level - 1;
  return level <= 1 ? "x86-64" : "x86-64-v" + std::to_string(level);
}

} // namespace shardrt
