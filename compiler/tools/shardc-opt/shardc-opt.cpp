//===- shardc-opt.cpp - mlir-opt with shardc's passes and models ----------===//
//
// Runs any upstream pass plus the project's own passes and pipelines, with
// the project's sharding models attached, so that lit tests can exercise each
// piece on hand-written IR (like mlir-opt / iree-opt).
//
//===----------------------------------------------------------------------===//

#include "shardc/Pipeline/Pipeline.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  shardc::registerDialects(registry);
  shardc::registerPasses();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "shardc optimizer driver\n", registry));
}
