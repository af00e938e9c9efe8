//===- Passes.td - shardc's passes around upstream's partitioner -*- tablegen -*-===//
//
// What MLIR 22's sharding-propagation and shard-partition need around them to
// partition every program shardc makes. shardc runs them in the
// shardc-propagate and shardc-partition pipelines (Pipeline/PassPipelines.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef SHARDC_SHARD_PASSES
#define SHARDC_SHARD_PASSES

include "mlir/Pass/PassBase.td"

def ReplicateUnshardedPass
    : Pass<"shardc-replicate-unsharded", "::mlir::func::FuncOp"> {
  let summary = "Annotate as replicated the tensors sharding propagation did "
                "not reach, then propagate from them";
  let description = [{
    MLIR 22's sharding-propagation derives an op's sharding from annotated
    operands or users. A tensor that no annotated value reaches gets none: a
    one_hot of an argmax (made from 0-d values) that is summed back to a 0-d
    value, or the broadcast of the loss's cotangent into the gradient of a
    scalar parameter (`mean(image + s)`). shard-partition expects every
    tensor annotated and dereferences the missing grid (a segmentation
    fault).

    This pass runs after propagation: it annotates each such ranked result
    as replicated (nothing sharded reaches it, so every rank computes all of
    it) and propagates again (forward-backward) from those anchors to their
    operands and users. A function without any sharding (the reference
    build) is left alone.

    Example, on a function whose other values are split on @mesh:

    ```mlir
    %hot = linalg.generic ... ins(%label : tensor<i32>) outs(%init : tensor<4xf32>)
    ```

    gains

    ```mlir
    %replicated = shard.sharding @mesh split_axes = [[]] : !shard.sharding
    %hot_annotated = shard.shard %hot to %replicated : tensor<4xf32>
    ```
  }];
  let dependentDialects = ["::mlir::shard::ShardDialect"];
}

def DecomposeReshardsPass : Pass<"shardc-decompose-reshards"> {
  let summary = "Split reshards shard-partition cannot do in one step into a "
                "chain of single steps";
  let description = [{
    MLIR 22's shard-partition turns each pair of chained shard.shard ops (a
    value's sharding, then the sharding a user wants) into collectives, but
    only when the two differ by one step on one grid axis: split a dimension
    once more (all_slice), unsplit its last axis (all_gather), or move a last
    axis to another dimension (all_to_all). Anything else is meant to be
    rejected by an assertion that release builds of LLVM compile out: the
    pass then applies the first step it recognises and carries on with a
    value whose local shape is wrong. On a 2-D mesh that is easy to hit: a
    gradient produced [[], [model]] and used as [[data]] came out
    [[data], [model]], and the op using it failed to verify.

    This pass runs right before shard-partition (on any op, typically
    func.func). For each shard.shard whose source is a shard.shard with
    another sharding that upstream cannot reach in one step, it inserts
    intermediate shard.shard ops (at the user's location) so that each link
    of the chain is one step. Order: splits first (local slices that shrink
    what later collectives move), then all_to_all moves upstream recognises,
    then all_gathers. Pairs with halos or explicit shard offsets are left
    alone.

    Example: `[[], [1]]` to `[[0]]` becomes `[[], [1]]` -> `[[0], [1]]`
    (all_slice) -> `[[0]]` (all_gather):

    ```mlir
    %s1 = shard.sharding @mesh split_axes = [[0], [1]] : !shard.sharding
    %step = shard.shard %produced to %s1 : tensor<8x8xf32>
    %used = shard.shard %step to %s2 annotate_for_users : tensor<8x8xf32>
    ```
  }];
  let dependentDialects = ["::mlir::shard::ShardDialect"];
}

def DropUnitAxesPass : Pass<"shardc-drop-unit-axes", "::mlir::func::FuncOp"> {
  let summary = "Take mesh axes of size 1 out of collectives, and collectives "
                "over nothing but such axes out of the program";
  let description = [{
    A rule that maps a logical axis to a mesh axis of size 1 (`mesh (data = 8,
    model = 1)`, `hidden -> model`) splits nothing, but shard-partition still
    emits the collectives that axis would need: an all_reduce over `model` of
    a value every rank holds whole, which costs a call and a copy per step and
    shows in the report. Over an axis of size 1 every collective is the
    identity, and leaving such an axis out of a collective over several axes
    changes no rank's block (its coordinate there is always 0).

    The pass runs after shard-partition: it drops the size-1 axes from each
    collective's grid_axes and replaces a collective left with none by its
    input.

    ```mlir
    shard.grid @mesh(shape = 8x1)
    %0 = shard.all_reduce %x on @mesh grid_axes = [1] : tensor<1x1024xf32> -> tensor<1x1024xf32>
    %1 = shard.all_reduce %y on @mesh grid_axes = [0, 1] : tensor<4xf32> -> tensor<4xf32>
    ```

    becomes (%0's uses take %x)

    ```mlir
    %1 = shard.all_reduce %y on @mesh grid_axes = [0] : tensor<4xf32> -> tensor<4xf32>
    ```
  }];
  let dependentDialects = ["::mlir::shard::ShardDialect"];
}

def FuseReduceScatterPass
    : Pass<"shardc-fuse-reduce-scatter", "::mlir::func::FuncOp"> {
  let summary = "Turn an all_reduce whose only use is an all_slice over the "
                "same mesh axes into one reduce_scatter";
  let description = [{
    MLIR 22's shard-partition reduces a partial value whole and then slices
    it when its user wants it split: under FSDP rules every gradient is
    all-reduced over `data` (N ranks each send and receive the whole
    gradient) and then each rank keeps its 1/N block. A reduce_scatter over
    the same axes gives each rank exactly that block of the sum, and moves
    half the bytes of an all-reduce: ZeRO-3's gradient communication.

    The pass runs after shard-partition and cse (which merge the slices of
    one value). It rewrites each shard.all_slice whose input is a
    shard.all_reduce with no other use, on the same grid and over the same
    grid axes in the same order (so that the block a rank keeps is the block
    reduce_scatter gives it), into one shard.reduce_scatter with the
    all_reduce's reduction and the slice's axis.

    An all_reduce that a sum over the sliced axis also reads (the clipping
    norm's sum of an FSDP gradient's squares, a layer norm's bias gradient
    under a sequence split) is fused too: the sum reads the rank's slice from
    zero, an all_reduce of its (small) result adds the slices' sums, and the
    sum's init is added once.

    ```mlir
    %sum = shard.all_reduce %grad on @mesh grid_axes = [0] : tensor<1024x1024xf32> -> tensor<1024x1024xf32>
    %mine = shard.all_slice %sum on @mesh grid_axes = [0] slice_axis = 0 : tensor<1024x1024xf32> -> tensor<512x1024xf32>
    ```

    becomes

    ```mlir
    %mine = shard.reduce_scatter %grad on @mesh grid_axes = [0] scatter_axis = 0 : tensor<1024x1024xf32> -> tensor<512x1024xf32>
    ```
  }];
  let dependentDialects = ["::mlir::shard::ShardDialect"];
}

def CombineAllReducesPass
    : Pass<"shardc-combine-all-reduces", "::mlir::func::FuncOp"> {
  let summary = "Add partial sums before reducing them: one all_reduce where "
                "two sums of all_reduces were";
  let description = [{
    A gradient that several split contractions contribute to (an attention
    block's input: through q, k and v, each contracted over `heads` split on
    `model`) is, after shard-partition, each partial sum all-reduced and the
    results added. A sum of all_reduces over the same axes is the all_reduce of
    the sum: this pass rewrites an elementwise add (a linalg.generic of two
    same-shaped operands, identity maps, `arith.addf` of both) whose operands
    are both sum all_reduces on the same grid axes, each used only there, into
    the add of their inputs and one all_reduce of it. Repeated, a chain of such
    adds becomes one collective: Megatron's one all-reduce per block input in
    the backward pass. The additions happen in another order, as in Megatron.

    In a running sum whose terms are not all reduced (the clipping norm: the
    replicated gradients' squares need no collective, and a split gradient's
    term is its init plus an all_reduce; linalg.add counts as an add too),
    all_reduces move out of the tree of adds, add(add(y, all_reduce(a)), q) ->
    add(add(y, q), all_reduce(a)), and two that meet combine (one rewrite,
    `combine` in CombineAllReduces.cpp, does every case), so the norm is one
    scalar all_reduce per mesh axis under every layout.

    ```mlir
    %a = shard.all_reduce %pa on @mesh grid_axes = [1] : tensor<2x6x8xf32> -> tensor<2x6x8xf32>
    %b = shard.all_reduce %pb on @mesh grid_axes = [1] : tensor<2x6x8xf32> -> tensor<2x6x8xf32>
    %s = linalg.generic {...} ins(%a, %b : ...) outs(%init : ...) { addf }
    ```

    becomes

    ```mlir
    %p = linalg.generic {...} ins(%pa, %pb : ...) outs(%init : ...) { addf }
    %s = shard.all_reduce %p on @mesh grid_axes = [1] : tensor<2x6x8xf32> -> tensor<2x6x8xf32>
    ```
  }];
  let dependentDialects = ["::mlir::shard::ShardDialect"];
}

def MarkGradientSyncsPass
    : Pass<"shardc-mark-gradient-syncs", "::mlir::func::FuncOp"> {
  let summary = "Mark the collectives that reduce the parameters' gradients";
  let description = [{
    MLIRGen marks the op that makes each parameter's gradient in train_step
    (and microbatch_step) `shardc.gradient_sync`, an attribute that
    propagation does not see (an annotation or a marker op there would move
    where it reduces the gradient) and that partitioning keeps on the op's
    copy. This pass marks the sum all_reduces and reduce_scatters that reduce
    it: those after the op, through the other collectives, reshapes and the
    adds that partitioning puts between them (a reduction's init, added after
    its all_reduce), and, when the op adds up the gradient's pieces (a
    parameter used twice), those that reduced a piece before it. The mark then
    leaves the op. It runs after the passes that combine and fuse collectives,
    and before the bucketing, which keeps gradients and other sums in separate
    buckets. The runtime sends what is marked in bfloat16 under
    `--reduce-precision bf16` (PyTorch's bf16_compress_hook, FSDP's
    reduce_dtype); every other collective (activations under tensor
    parallelism, the loss, the clipping norm, layer norms' statistics) stays
    f32.

    ```mlir
    %g = linalg.generic {...} ins(%x, %dy : ...) outs(%zero : tensor<4xf32>) attrs = {shardc.gradient_sync}
    %r = shard.all_reduce %g on @mesh grid_axes = [0] : tensor<4xf32> -> tensor<4xf32>
    ```

    becomes

    ```mlir
    %g = linalg.generic {...} ins(%x, %dy : ...) outs(%zero : tensor<4xf32>)
    %r = shard.all_reduce %g on @mesh grid_axes = [0] {shardc.gradient_sync} : tensor<4xf32> -> tensor<4xf32>
    ```
  }];
  let dependentDialects = ["::mlir::shard::ShardDialect"];
}

def BucketAllReducesPass
    : Pass<"shardc-bucket-all-reduces", "::mlir::func::FuncOp"> {
  let summary = "All-reduce gradients in buckets: one collective for "
                "several all_reduces with nothing reading them in between";
  let description = [{
    Under data parallelism every gradient is its own all_reduce (W2: 8 per
    step, most of them a few hundred bytes), each paying the collective's
    latency. As DDP's gradient buckets, this pass gathers all_reduces of the
    same grid, axes, reduction and element types, in program order, into
    buckets of at most `bucket-bytes`: a bucket closes when the next
    all_reduce it could take comes after an op that reads one of its
    results, or when it would overflow; an all_reduce larger than a bucket
    stays alone. Each block buckets its own (a pipeline stage's case sums its
    layers' gradients there). The default, 256 KiB, is measured (bench/runtime, 2 ranks):
    gathering costs a copy, and the runtime all-reduces 4 x 64 KiB in 124 us
    one by one against 92 us gathered, but 4 x 1 MiB in 1.13 ms against
    2.2 ms gathered. Each bucket of two or more becomes one
    all_reduce of its operands flattened and concatenated (tensor.concat),
    where its last member was, and each member's result is its slice,
    reshaped back. The buckets start as soon as their last gradient exists;
    the runtime's collectives block, so nothing overlaps with them.

    ```mlir
    %a = shard.all_reduce %ga on @mesh grid_axes = [0] : tensor<3x4xf32> -> tensor<3x4xf32>
    %b = shard.all_reduce %gb on @mesh grid_axes = [0] : tensor<4xf32> -> tensor<4xf32>
    ```

    becomes

    ```mlir
    %fa = tensor.collapse_shape %ga [[0, 1]] : tensor<3x4xf32> into tensor<12xf32>
    %all = tensor.concat dim(0) %fa, %gb : (tensor<12xf32>, tensor<4xf32>) -> tensor<16xf32>
    %r = shard.all_reduce %all on @mesh grid_axes = [0] : tensor<16xf32> -> tensor<16xf32>
    %sa = tensor.extract_slice %r[0] [12] [1] : tensor<16xf32> to tensor<12xf32>
    %a = tensor.expand_shape %sa [[0, 1]] output_shape [3, 4] : tensor<12xf32> into tensor<3x4xf32>
    %b = tensor.extract_slice %r[12] [4] [1] : tensor<16xf32> to tensor<4xf32>
    ```
  }];
  let options = [
    Option<"bucketBytes", "bucket-bytes", "int64_t", /*default=*/"256 << 10",
           "The most bytes one bucket reduces">,
  ];
  let dependentDialects = ["::mlir::shard::ShardDialect", "::mlir::tensor::TensorDialect"];
}

def RegatherParametersPass
    : Pass<"shardc-regather-parameters", "::mlir::func::FuncOp"> {
  let summary = "Gather a sharded parameter again before each op that reads "
                "it, so that its full copy lives only as long as that op";
  let description = [{
    Under FSDP (ZeRO-3) each rank holds a slice of every parameter and
    all-gathers the whole where it is used. shard-partition puts the gather
    of a function argument at the top of the function, and cse makes one
    gather serve the forward's read and the backward's: every layer's full
    weights are then live from the start of the step to the end of its
    backward pass, the memory ZeRO-3 exists to save (every layer's gathered
    weights at once instead of one layer's; bench/memory measures it). As
    FSDP's reshard-after-forward, this pass gives each
    user of an all_gather of a `parameter` argument a gather of its own,
    right before it, and drops the shared one: a full weight lives from its
    gather to its one read. The price is what FSDP pays: a parameter used
    in the forward and in the backward pass is gathered twice per step. The
    copies carry a distinct `shardc.regather` attribute so that cse does not
    merge them back.

    ```mlir
    %w = shard.all_gather %arg0 on @mesh grid_axes = [0] gather_axis = 0 : tensor<96x768xf32> -> tensor<768x768xf32>
    %y = linalg.matmul ins(%x, %w ...)     // forward
    ...
    %dx = linalg.matmul ins(%dy, %w ...)   // backward
    ```

    becomes

    ```mlir
    %w0 = shard.all_gather %arg0 on @mesh grid_axes = [0] gather_axis = 0 {shardc.regather = 0 : i64} : ...
    %y = linalg.matmul ins(%x, %w0 ...)
    ...
    %w1 = shard.all_gather %arg0 on @mesh grid_axes = [0] gather_axis = 0 {shardc.regather = 1 : i64} : ...
    %dx = linalg.matmul ins(%dy, %w1 ...)
    ```
  }];
  let dependentDialects = ["::mlir::shard::ShardDialect"];
}

def PrefetchGathersPass : Pass<"shardc-prefetch-gathers", "::mlir::ModuleOp"> {
  let summary = "Start each parameter's gather (FSDP) before the op that reads "
                "the previous one, so that it can travel while that op computes";
  let description = [{
    After shardc-regather-parameters each read of a sharded parameter has an
    all_gather of its own right before it: the op waits for its weight, and
    the communication hides behind nothing. As PyTorch FSDP's prefetch, this
    pass starts each weight's gather one read early:

    - a private function's (a scan layer's, shardc-outline-layers) first
      gather of one of its arguments moves into its callers, its result an
      argument of the function: each call's gather goes before the previous
      call in the block of a function treated so (the layer before), where
      the sharded weight is available;
    - then, in each block, each such gather moves before the first reader
      of the block's previous one.

    shardc-shard-to-runtime lowers these gathers to a start and a wait before
    their reader (`shardrt_all_gather_start_f32`, `shardrt_wait`); where the
    runtime prefetches (`--prefetch-weights`) the gather then travels while
    the previous weight's op or the previous layer computes. Two gathered
    weights are live at a time instead of one (the arena that
    shardc-plan-buffers plans counts them).

    ```mlir
    %w0 = shard.all_gather %arg0 ... {shardc.regather = 0 : i64}
    %y = linalg.matmul ins(%x, %w0 ...)
    %w1 = shard.all_gather %arg1 ... {shardc.regather = 1 : i64}
    %z = linalg.matmul ins(%y, %w1 ...)
    ```

    becomes

    ```mlir
    %w0 = shard.all_gather %arg0 ... {shardc.regather = 0 : i64}
    %w1 = shard.all_gather %arg1 ... {shardc.regather = 1 : i64}
    %y = linalg.matmul ins(%x, %w0 ...)
    %z = linalg.matmul ins(%y, %w1 ...)
    ```
  }];
  let dependentDialects = ["::mlir::shard::ShardDialect"];
}

def SliceEarlyPass : Pass<"shardc-slice-early", "::mlir::func::FuncOp"> {
  let summary = "Slice the operands of a computation instead of its result, "
                "so that each rank computes only the block it keeps";
  let description = [{
    MLIR 22's shard-partition computes an op on the sharding of its operands
    and then reshards the result for its user: when the operands are
    replicated along an axis and the user wants the result split there, every
    rank computes the whole result and keeps 1/N of it (an all_slice). Under
    `maps2 -> model` on W2 that is the avg_pool backward, computed on all 64
    channels on each rank and then sliced to 32.

    The pass runs after shard-partition and moves each shard.all_slice above
    the op that made its input, when that op's result has no other use and
    its block is computed from blocks of the operands:
    - a linalg op (elementwise, pooling, convolution gradients, ...) whose
      sliced result dimension is a parallel loop that every indexing map uses
      as a plain dimension and whose body does not read that loop's index:
      each operand indexed by the loop is sliced on that dimension;
    - tensor.pad with no padding on the sliced dimension;
    - tensor.collapse_shape: the blocks of a collapsed dimension are the
      blocks of the outermost source dimension of size > 1 in its group,
      when the number of blocks divides it;
    - shard.all_reduce over mesh axes the slice does not use: the blocks
      are reduced (1/N of the bytes move);
    - scf.if with one result (the init of a split reduction): each branch
      yields its block;
    - a splat constant or tensor.empty: a smaller one.
    Repeated, the slice rises as far as such ops go; what is left is one
    all_slice (a local copy) of a value every rank already holds.

    ```mlir
    %full = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
        ins(%x : tensor<8x64xf32>) outs(%init : tensor<8x64xf32>) { ... }
    %mine = shard.all_slice %full on @mesh grid_axes = [0] slice_axis = 1 : tensor<8x64xf32> -> tensor<8x32xf32>
    ```

    becomes

    ```mlir
    %xs = shard.all_slice %x on @mesh grid_axes = [0] slice_axis = 1 : tensor<8x64xf32> -> tensor<8x32xf32>
    %mine = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
        ins(%xs : tensor<8x32xf32>) outs(%init_block : tensor<8x32xf32>) { ... }
    ```
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect", "::mlir::shard::ShardDialect",
                           "::mlir::tensor::TensorDialect"];
}

#endif // SHARDC_SHARD_PASSES
