//===- RulesFuzzer.cpp - libFuzzer target: a rules file -------------------===//
//
// Each input is a rules file, applied to W1 (examples/mlp/mlp.shard: a scan,
// so stacked parameters with a `layer` axis, and the axes batch, embed,
// hidden) and printed as the typed plan and the layouts.
//
//===----------------------------------------------------------------------===//

#include "FrontEnd.h"
#include "FuzzInput.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  shardc::fuzz::typeCheck(SHARDC_SOURCE_DIR "/examples/mlp/mlp.shard",
                          shardc::fuzz::writeFile("fuzz.rules", data, size));
  return 0;
}
