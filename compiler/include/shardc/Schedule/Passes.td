//===- Passes.td - shardc's schedule transforms ------------*- tablegen -*-===//
//
// What builds train_step from the functions MLIRGen emits in its place for
// microbatches, a pipeline or a scan run as a loop, after partitioning, on
// local shapes: the order in which a rank runs its microbatches, its stage's
// work or its layers. shardc runs them in the shardc-partition pipeline and
// WriteInSlots before bufferization (Pipeline/PassPipelines.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef SHARDC_SCHEDULE_PASSES
#define SHARDC_SCHEDULE_PASSES

include "mlir/Pass/PassBase.td"

def AccumulateMicrobatchesPass : Pass<"shardc-accumulate-microbatches", "::mlir::ModuleOp"> {
  let summary = "Build train_step from microbatch_step and apply_step: a loop "
                "over the microbatches, their gradients reduced once";
  let description = [{
    Gradient accumulation (the rules' `microbatches N`). MLIRGen emits, in
    place of train_step, @microbatch_step (the forward and backward pass of
    one microbatch: loss, metrics, gradients) and @apply_step (the
    optimizer's update of summed gradients), each partitioned on its own.
    This pass, after partitioning, on local shapes:

    1. Defers the reductions of microbatch_step's results: a result made by
       a sum all_reduce is returned unreduced, and the all_reduce moves after
       the loop (it is linear, so reducing the sum equals summing the
       reductions): one all_reduce per gradient per step, not per microbatch
       (DDP's no_sync). A reduce_scatter (FSDP's gradients) stays in the loop,
       as FSDP and ZeRO keep it: deferred, each rank would hold the sum of the
       whole gradient instead of its shard (bench/memory measures the arena).
    2. Builds @train_step (the runtime's ABI: parameters, state, inputs,
       step): an scf.for over the N microbatches slices each input along its
       `shardc.microbatch_dim` (the rank's rows of microbatch k are rows
       [k*b, (k+1)*b) of its rows of the batch) and adds microbatch_step's
       results into zero-filled accumulators; after the loop each sum is
       scaled (`shardc.microbatch_scale`: 1/N for a mean over the batch),
       reduced as deferred, and apply_step updates.
    3. Inlines both functions into it and erases them, so that the later
       passes and the report see one train_step.
    4. Makes each running sum's add write over the sum it reads, so that each
       sum keeps one buffer through the loop.

    ```mlir
    func.func @microbatch_step(%w: tensor<4x4xf32>, %x: tensor<2x4xf32> {shardc.microbatch_dim = 0})
        -> (tensor<f32>, tensor<4x4xf32> {shardc.microbatch_scale = 0.5}) {
      ...
      %g = shard.all_reduce %partial on @mesh grid_axes = [0] : tensor<4x4xf32> -> tensor<4x4xf32>
      return %loss, %g
    }
    ```

    becomes a train_step whose loop adds `%partial` of each microbatch, and
    whose one all_reduce reduces the sum after the loop.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect", "::mlir::linalg::LinalgDialect",
                           "::mlir::scf::SCFDialect", "::mlir::tensor::TensorDialect"];
}

def PipelineSchedulePass : Pass<"shardc-pipeline-schedule", "::mlir::ModuleOp"> {
  let summary = "Build train_step from the pipeline stages' functions: each rank "
                "runs its stage's schedule of microbatches, sending activations "
                "forward and their cotangents back";
  let description = [{
    Pipeline parallelism (the rules' `layer -> stage`, `microbatches N`,
    `schedule "gpipe"|1f1b`). MLIRGen emits, in place of train_step, for each
    stage S @stage_forward_S (the stage's params, one microbatch's inputs,
    the activations it receives -> those it sends, and the residuals: what
    its backward pass reads of its forward values, on the last stage the loss
    and metrics too) and @stage_backward_S (the same, the gradients' sums,
    the cotangents of what it sent, the residuals -> the last stage's loss and
    metrics, the cotangents of what it received, the sums plus its
    gradients), and @apply_step, each partitioned on its own. Arguments and
    results that cross stages carry `shardc.transfer` (the module's
    `shardc.pipeline` lists each transfer's stages). This pass, after
    partitioning, on local shapes:

    1. Defers the sum all_reduces of the backward functions' results, as
       shardc-accumulate-microbatches does.
    2. Builds @train_step: `shardrt_make_communicators` (every rank makes every
       communicator first, as a collective inside a stage meets only that
       stage's ranks), the rank's coordinate on the stage axis, and an
       scf.index_switch on it whose case S runs stage S's schedule as scf.for
       loops over microbatches: GPipe (every forward, then every backward, the
       last microbatch first) or 1F1B (p - 1 - S forwards, then one forward and
       one backward alternately, then the remaining backwards). A forward
       receives its activations (`shard.recv` from the sending stage), calls
       the stage's forward, `shard.send`s what later stages read and keeps the
       received activations and the residuals, each in a buffer of slots
       (every microbatch's under GPipe, at most p - S under 1F1B); a backward
       receives the cotangents, calls the backward function on the kept
       values, sends the cotangents back and adds gradients and totals.
       Each case writes every parameter's gradient sum (zeros for the other
       stages') and the loss and metrics (zeros but on the last stage) into
       buffers allocated before the switch (a switch that yielded its cases'
       own allocations would need the deallocation's runtime ownership
       checks, which the bare-pointer lowering does not support).
    3. After it `shardrt_wait_sends`, then each sum is scaled, all_reduced
       over the stage axis together with the axes its deferred reduction had
       (every rank then holds every gradient: each rank holds every
       parameter), and apply_step updates.
    4. Inlines the functions and erases them, and makes the loops' sums
       accumulate in place.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect", "::mlir::linalg::LinalgDialect",
                           "::mlir::scf::SCFDialect", "::mlir::tensor::TensorDialect",
                           "::mlir::shard::ShardDialect", "::mlir::memref::MemRefDialect",
                           "::mlir::bufferization::BufferizationDialect"];
}

def LayerLoopPass : Pass<"shardc-layer-loop", "::mlir::ModuleOp"> {
  let summary = "Build train_step with the scan as a loop: one compiled layer, "
                "called once per layer forward and in reverse backward";
  let description = [{
    A program with one scan of two or more layers, without a pipeline or
    microbatches (the module's `shardc.layer_loop` {layers, transfers}).
    MLIRGen emits, in place of train_step, the functions of its three parts as
    a pipeline's stages' (see shardc-pipeline-schedule): @prologue_forward and
    _backward (what comes before the scan), @layer_forward and _backward (the
    first layer, on one layer's slices of the stacked parameters and dropout
    numbers and the carry), @epilogue_forward and _backward (what follows, the
    loss and metrics), and @apply_step, each partitioned on its own; the
    carry and what the prologue passes to the epilogue cross as transfers,
    sharded by the rules. This pass, after partitioning, on local shapes:

    1. eval_step and grad_step (built layer by layer) take the stacked
       parameters and inputs, each layer a slice where it is read; grad_step
       returns a stacked parameter's gradient stacked.
    2. Builds @train_step: the prologue's forward; an scf.for over the layers
       calling the layer's forward on each layer's slices and the carry, its
       received carry and residuals kept in stacks; the epilogue's forward and
       backward; an scf.for from the last layer to the first calling the
       layer's backward on its kept values and the carry's cotangent, each
       layer's gradient sum set into a stack; the prologue's backward; then
       apply_step. A parameter read by the prologue and the epilogue (tied
       weights) sums both parts' gradients. Each function's gradient
       reductions (all_reduce, reduce_scatter) stay inside it, so a layer's
       run inside the loop.
    3. Inlines the functions and erases them, and makes the loops' stacks
       update in place.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect", "::mlir::linalg::LinalgDialect",
                           "::mlir::scf::SCFDialect", "::mlir::tensor::TensorDialect"];
}

def WriteInSlotsPass : Pass<"shardc-write-in-slots", "::mlir::func::FuncOp"> {
  let summary = "Make each value a layer loop sets into its slot of a stack in that slot";
  let description = [{
    Inside a loop of shardc-layer-loop (`shardc.layer_loop`), a value that a
    tensor.insert_slice sets into its slot of a stack the loop carries (a
    residual, a gradient, the next carry) is made by an op whose init is an
    empty tensor, or zeros filled into one (a contraction's). That tensor
    becomes the slot (a tensor.extract_slice of the stack at the same place,
    filled where it was), so that one-shot bufferization writes the value in
    place instead of into a temporary copied in after. Runs right before
    bufferization, after the elementwise fusion that gives fused ops new inits.
    Upstream's eliminate-empty-tensors does this for any destination, but
    miscompiles a memref destination that two values trace back to through one
    empty tensor shared by cse (a pipeline's loss and metric totals).
  }];
  let dependentDialects = ["::mlir::tensor::TensorDialect"];
}

#endif
