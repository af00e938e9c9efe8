//===- FrontendFuzzer.cpp - libFuzzer target: a model file ----------------===//
//
// Each input is a model file, type-checked against one rules file that maps
// the axis names the examples and the stdlib use (so that inputs near them get
// through sema to the linter). Imports resolve as for shardc: the stdlib too.
//
//===----------------------------------------------------------------------===//

#include "FrontEnd.h"
#include "FuzzInput.h"

namespace {
const char *const kRules = R"(mesh (data = 2, model = 2)
rules {
  batch -> data
  hidden -> model
  features -> model
  classes -> model
  embed -> data
}
)";
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const std::string rulesPath = shardc::fuzz::writeFile("fuzz.rules", kRules);
  shardc::fuzz::typeCheck(shardc::fuzz::writeFile("model.shard", data, size), rulesPath);
  return 0;
}
