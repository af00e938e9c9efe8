// shardc-accumulate-microbatches needs both functions MLIRGen makes for
// microbatches and the module's count; a module with half of them is an error, not
// a train_step built from guesses.
// RUN: not %shardc-opt %s --shardc-accumulate-microbatches 2>&1 | FileCheck %s
// CHECK: error: shardc-accumulate-microbatches needs @microbatch_step, @apply_step, the module's shardc.microbatches and no @train_step
module attributes {shardc.microbatches = 2 : i64} {
  func.func @microbatch_step(%x: tensor<2xf32>) -> tensor<2xf32> {
    return %x : tensor<2xf32>
  }
}
