// The communication plan is an analysis of the partitioned module alone:
// shardc-opt prints it for hand-written IR from the attributes MLIRGen stamps
// (shardc/IR/Attributes.h). The step's arguments count towards memory
// by their role (the step number not at all); the reshard at a requested
// layout is no [reshard], the other one is, and --strict makes it an error
// on the collective. Each collective names what made it: the constraint at
// its requested layout, else the rules that split tensors over its mesh axes.
//
// RUN: %shardc-opt %s --shardc-print-comm-plan -o /dev/null | FileCheck %s
// RUN: %shardc-opt %s --shardc-print-comm-plan=json=true -o /dev/null | FileCheck %s --check-prefix=JSON
// RUN: not %shardc-opt %s --shardc-print-comm-plan=strict=true -o /dev/null 2>&1 | FileCheck %s --check-prefix=STRICT

// CHECK: communication plan: model Tiny under tiny.rules, mesh (data = 2, model = 4), 8 ranks
// CHECK: parameters 128 B
// CHECK: optimizer 128 B
// CHECK: inputs 64 B
// CHECK: collectives per train step: 4, 448 B per rank; each rank sends 832 B by ring algorithms
// CHECK-NEXT: 2 x all_reduce sum over data f32[8, 4] 32 elements 128 B tiny.shard:3:5 (w) by batch -> data (tiny.rules:3:3){{$}}
// CHECK-NEXT: 1 x all_gather dim 0 over model f32[2, 8] 16 elements 64 B tiny.shard:4:7 (x) by constraint{{$}}
// CHECK-NEXT: 1 x all_gather dim 1 over model f32[8, 4] 32 elements 128 B {{.*}}comm-plan.mlir:{{[0-9]+}}:{{[0-9]+}} (w) by hidden -> model (tiny.rules:4:3); override "w" (tiny.rules:5:3) [reshard]

// JSON: "collective_bytes_per_step": 448
// JSON: "caused_by": [
// JSON-NEXT: "batch -> data (tiny.rules:3:3)"
// JSON-NEXT: ],
// JSON: "mesh": {
// JSON-NEXT: "data": 2,
// JSON-NEXT: "model": 4
// JSON: "ranks": 8,
// JSON-NEXT: "rules": "tiny.rules",
// JSON-NEXT: "sent_bytes_per_rank_per_step": 832,
// JSON-NEXT: "step": "train"

module @Tiny attributes {shardc.rules = "tiny.rules",
                         shardc.requested_layouts = [loc("tiny.shard":4:7)],
                         shardc.axis_rules = [{axis = "data", rule = "rule batch -> data", at = loc("tiny.rules":3:3)},
                                              {axis = "model", rule = "rule hidden -> model", at = loc("tiny.rules":4:3)},
                                              {axis = "model", rule = "override \"w\"", at = loc("tiny.rules":5:3)}]} {
  shard.grid @mesh(shape = 2x4) {shardc.axis_names = ["data", "model"]}
  func.func @train_step(
      %w: tensor<8x4xf32> {shardc.name = "w", shardc.role = "parameter"},
      %mu: tensor<8x4xf32> {shardc.name = "mu/w", shardc.role = "optimizer_state"},
      %x: tensor<2x8xf32> {shardc.name = "x", shardc.role = "input"},
      %step: tensor<f32> {shardc.name = "step", shardc.role = "step"})
      -> (tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x8xf32>, tensor<8x16xf32>) {
    // One line for the two, as for the layers of a scan.
    %0 = shard.all_reduce %w on @mesh grid_axes = [0] : tensor<8x4xf32> -> tensor<8x4xf32> loc("tiny.shard":3:5)
    %1 = shard.all_reduce %w on @mesh grid_axes = [0] : tensor<8x4xf32> -> tensor<8x4xf32> loc("tiny.shard":3:5)
    %2 = shard.all_gather %x on @mesh grid_axes = [1] gather_axis = 0 : tensor<2x8xf32> -> tensor<8x8xf32> loc("tiny.shard":4:7)
    // STRICT: comm-plan.mlir:[[@LINE+2]]:10: error: --strict: the partitioner inserted a reshard (all_gather dim 1 over model, f32[8, 4]) for the use of w that no rule or constraint asked for; add a sharding constraint or change the rules so that the layouts agree
    // STRICT-NOT: error
    %3 = shard.all_gather %w on @mesh grid_axes = [1] gather_axis = 1 : tensor<8x4xf32> -> tensor<8x16xf32>
    return %0, %1, %2, %3 : tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x8xf32>, tensor<8x16xf32>
  }
}
