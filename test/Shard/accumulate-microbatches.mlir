// shardc-accumulate-microbatches: @train_step from @microbatch_step and @apply_step,
// a loop over the microbatches whose gradients are reduced once, after it.
// RUN: %shardc-opt %s --shardc-accumulate-microbatches | FileCheck %s

// Two microbatches of 2 of the rank's 4 rows. microbatch_step adds its gradient to
// the sum it is given; the loop passes it the running sum and adds up the loss. The
// gradient's all_reduce moves after the loop (reducing the sum of the partial
// gradients); the loss, made by an op after its all_reduce, is reduced in each
// microbatch. Both sums times 1/2 (their microbatch_scale), then apply_step's update;
// both functions inlined and erased; each sum accumulated over itself.

// CHECK-LABEL: func.func @train_step
// CHECK-SAME:    (%[[W:.*]]: tensor<4xf32> {shardc.name = "w", shardc.role = "parameter"},
// CHECK-SAME:     %[[X:.*]]: tensor<4x4xf32> {shardc.name = "x", shardc.role = "input"},
// CHECK-SAME:     %[[STEP:.*]]: tensor<f32> {shardc.name = "step", shardc.role = "step"})
// CHECK-SAME:    -> (tensor<4xf32> {shardc.name = "w"}, tensor<f32> {shardc.name = "loss"})
// CHECK:         %[[ZERO_LOSS:.*]] = linalg.fill {{.*}} -> tensor<f32>
// CHECK:         %[[ZERO_GRAD:.*]] = linalg.fill {{.*}} -> tensor<4xf32>
// CHECK:         %[[SUMS:.*]]:2 = scf.for %[[K:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[LOSS_SUM:.*]] = %[[ZERO_LOSS]], %[[GRAD_SUM:.*]] = %[[ZERO_GRAD]])
// CHECK:           %[[ROWS:.*]] = arith.constant 2 : index
// CHECK:           %[[AT:.*]] = arith.muli %[[K]], %[[ROWS]] : index
// CHECK:           %[[SLICE:.*]] = tensor.extract_slice %[[X]][%[[AT]], 0] [2, 4] [1, 1] : tensor<4x4xf32> to tensor<2x4xf32>
// CHECK:           %[[PARTIAL:.*]] = linalg.generic {{.*}} ins(%[[SLICE]] : tensor<2x4xf32>)
// CHECK-NOT:       shard.all_reduce %[[PARTIAL]]
// CHECK:           %[[NEXT_GRAD:.*]] = linalg.generic {{.*}} ins(%[[PARTIAL]] : tensor<4xf32>) outs(%[[GRAD_SUM]] : tensor<4xf32>)
// CHECK-NEXT:      ^bb0(%[[G:.*]]: f32, %[[ACC:.*]]: f32):
// CHECK-NEXT:        arith.addf %[[ACC]], %[[G]] : f32
// CHECK:           %[[LOCAL_LOSS:.*]] = shard.all_reduce
// CHECK:           %[[LOSS:.*]] = arith.negf
// CHECK:           %[[NEXT_LOSS:.*]] = linalg.generic {{.*}} ins(%[[LOSS]] : tensor<f32>) outs(%[[LOSS_SUM]] : tensor<f32>)
// CHECK:           scf.yield %[[NEXT_LOSS]], %[[NEXT_GRAD]]
// CHECK:         %[[MEAN_LOSS:.*]] = linalg.generic {{.*}} ins(%[[SUMS]]#0 : tensor<f32>)
// CHECK:           arith.constant 5.000000e-01 : f32
// CHECK:         %[[MEAN_GRAD:.*]] = linalg.generic {{.*}} ins(%[[SUMS]]#1 : tensor<4xf32>)
// CHECK:         %[[GRAD:.*]] = shard.all_reduce %[[MEAN_GRAD]] on @mesh grid_axes = [0] : tensor<4xf32> -> tensor<4xf32>
// CHECK:         %[[NEW_W:.*]] = arith.subf %[[W]], %[[GRAD]] : tensor<4xf32>
// CHECK:         return %[[NEW_W]], %[[MEAN_LOSS]]
// CHECK-NOT:     func.call
// CHECK-NOT:     @microbatch_step
// CHECK-NOT:     @apply_step
module attributes {shardc.microbatches = 2 : i64} {
  shard.grid @mesh(shape = 2)
  func.func @microbatch_step(%w: tensor<4xf32> {shardc.name = "w", shardc.role = "parameter"},
                             %sum: tensor<4xf32> {shardc.name = "grad/w", shardc.role = "gradient"},
                             %x: tensor<2x4xf32> {shardc.microbatch_dim = 0 : i64, shardc.name = "x", shardc.role = "input"})
      -> (tensor<f32> {shardc.microbatch_scale = 5.000000e-01 : f64, shardc.name = "loss"},
          tensor<4xf32> {shardc.microbatch_scale = 5.000000e-01 : f64, shardc.name = "grad/w"}) {
    %init = tensor.empty() : tensor<4xf32>
    %partial = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>],
                               iterator_types = ["reduction", "parallel"]}
        ins(%x : tensor<2x4xf32>) outs(%init : tensor<4xf32>) {
    ^bb0(%in: f32, %acc: f32):
      %s = arith.addf %in, %acc : f32
      linalg.yield %s : f32
    } -> tensor<4xf32>
    %grad = shard.all_reduce %partial on @mesh grid_axes = [0] : tensor<4xf32> -> tensor<4xf32>
    %out = tensor.empty() : tensor<4xf32>
    %summed = linalg.add ins(%sum, %grad : tensor<4xf32>, tensor<4xf32>) outs(%out : tensor<4xf32>) -> tensor<4xf32>
    %zero = tensor.empty() : tensor<f32>
    %reduced = shard.all_reduce %zero on @mesh grid_axes = [0] : tensor<f32> -> tensor<f32>
    %loss = arith.negf %reduced : tensor<f32>
    return %loss, %summed : tensor<f32>, tensor<4xf32>
  }
  func.func @apply_step(%w: tensor<4xf32> {shardc.name = "w", shardc.role = "parameter"},
                        %g: tensor<4xf32> {shardc.name = "grad/w", shardc.role = "gradient"},
                        %loss: tensor<f32> {shardc.name = "loss", shardc.role = "loss"},
                        %step: tensor<f32> {shardc.name = "step", shardc.role = "step"})
      -> (tensor<4xf32> {shardc.name = "w"}, tensor<f32> {shardc.name = "loss"}) {
    %new = arith.subf %w, %g : tensor<4xf32>
    return %new, %loss : tensor<4xf32>, tensor<f32>
  }
}

