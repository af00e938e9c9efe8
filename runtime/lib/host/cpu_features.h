// The instruction set features of the CPU a rank runs on, read with cpuid and xgetbv
// (no LLVM in the runtime), by the names shardc records in the manifest
// (shardrt/cpu_features.def).
#ifndef SHARDRT_LIB_CPU_FEATURES_H
#define SHARDRT_LIB_CPU_FEATURES_H

#include <string>
#include <vector>

namespace shardrt {

/// Those of `needed` that this CPU lacks, or whose registers the operating system does
/// not save, in the order given; a name shardrt/cpu_features.def does not list counts
/// as lacking.
std::vector<std::string> missingCpuFeatures(const std::vector<std::string> &needed);

/// The highest x86-64 microarchitecture level this CPU has every feature of, as LLVM
/// names the CPU: "x86-64-v3", or "x86-64" for the baseline.
std::string cpuLevelName();

} // namespace shardrt

#endif // SHARDRT_LIB_CPU_FEATURES_H
