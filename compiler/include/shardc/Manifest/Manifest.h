//===- Manifest.h - the program description the driver reads ---*- C++ -*-===//
//
// The writer of the runtime's manifest; its keys are the runtime's
// (shardrt/manifest_keys.h), shared with the reader in runtime/lib/driver.
//
//===----------------------------------------------------------------------===//

#ifndef SHARDC_MANIFEST_MANIFEST_H
#define SHARDC_MANIFEST_MANIFEST_H

#include "shardc/Report/Report.h"
#include "shardc/Sema/TypedProgram.h"
#include "shardc/Train/StepFunctions.h"

#include <string>
#include <vector>

namespace shardc {

/// The program description the runtime's driver reads (runtime/README.md):
/// mesh, parameters with their initialisers, optimizer, inputs with their
/// fills or dataset fields, the steps' results, each with its split over the
/// mesh, the memory per rank, and `plan`, the communication plan as
/// --report=json prints it (for the run's report page), and the CPU the code is
/// compiled for with the features the runtime checks at start (a CodeTarget's
/// `cpu` and `features`, Pipeline.h).
std::string buildManifest(const TypedProgram &program, const StepProgram &steps, bool reference,
                          const MemoryPerRank &memory, const std::string &plan,
                          const std::string &targetCpu,
                          const std::vector<std::string> &targetFeatures);

} // namespace shardc

#endif
