//===- Passes.td - shardc's optimizations of the step ------*- tablegen -*-===//
//
// What runs on the partitioned step so that it holds and touches fewer
// buffers: on tensors before bufferization (shardc-bufferize), and on the
// bufferized step (shardc-lower-to-llvm) (Pipeline/PassPipelines.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef SHARDC_OPTIMIZE_PASSES
#define SHARDC_OPTIMIZE_PASSES

include "mlir/Pass/PassBase.td"

def EmbeddingGathersPass : Pass<"shardc-embedding-gathers", "::mlir::func::FuncOp"> {
  let summary = "Make contractions with a one-hot gathers and scatter-adds";
  let description = [{
    MLIRGen writes the embedding and its gradient as contractions with a
    one-hot of the ids (`[ids' dims, vocab]`, 1 where the last index equals
    the id), which the sharding models split like any contraction: a table
    split over vocab is Megatron's vocab-parallel embedding, the one-hot then
    sliced over its class axis by `shard.all_slice`. After partitioning, the
    contractions cost tokens x vocab x embed multiply-adds each way. This
    pass rewrites them by what the one-hot selects:

    - summed over the classes (the lookup): a gather, out[t, e] += table[id_t
      - first, e], a `linalg.generic` reading the table with `tensor.extract`;
    - summed over the ids (the gradient): a scatter-add, one `scf.for` per
      ids dim adding row t of dy into row id_t - first of out.

    `first` is the first class this rank holds (0 unless the one-hot is
    sliced: then the first element of the same `shard.all_slice` of the
    classes' indices); an id outside this rank's classes adds nothing, as
    its one-hot row was zero. The one-hot goes when nothing else reads it.
    Sums are the contraction's up to order (the scatter adds rows in the ids'
    order).
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::shard::ShardDialect",
    "::mlir::tensor::TensorDialect",
  ];
}

def SplatsToFillsPass : Pass<"shardc-splats-to-fills", "::mlir::func::FuncOp"> {
  let summary = "Make splat tensor constants fills of empty tensors";
  let description = [{
    One-shot-bufferize turns a tensor constant into a read-only global, and
    every op that writes into it (a contraction's or a reduction's zero
    init) into a fresh buffer plus a copy of the whole global: W2's step
    copied 12.8 MB of zeros per convolution. A splat constant becomes
    `linalg.fill` of a `tensor.empty` instead: a memset-like loop into the
    buffer the op writes anyway, which shardc-lower-to-kernels can drop
    when a kernel overwrites its output.

    An `scf.if` whose branches yield the same splat (shard-partition's
    "init on the first process, the neutral element elsewhere" when the init
    is the neutral element) is replaced by that splat first.

    ```mlir
    %zero = arith.constant dense<0.0> : tensor<128x10xf32>
    ```

    becomes

    ```mlir
    %c0 = arith.constant 0.0 : f32
    %empty = tensor.empty() : tensor<128x10xf32>
    %zero = linalg.fill ins(%c0 : f32) outs(%empty : tensor<128x10xf32>) -> tensor<128x10xf32>
    ```
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::tensor::TensorDialect",
  ];
}

def ChannelsInnermostPass : Pass<"shardc-channels-innermost", "::mlir::func::FuncOp"> {
  let summary = "Make NHWC pooling ops generics whose innermost loop is the "
                "channel";
  let description = [{
    linalg.pooling_nhwc_sum / _max iterate (n, oh, ow, c, kh, kw): lowered to
    loops, the innermost runs over a 2x2 window, two scalar iterations, and
    the channels, contiguous in memory, are an outer loop. This pass
    generalizes each pooling op on tensors and interchanges its loops to
    (n, oh, ow, kh, kw, c), so that the innermost loop is a contiguous,
    vectorizable run over channels, and so that shardc-fuse-elementwise can
    fuse the pooled activation (a relu) into it.
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect"];
}

def MatmulOperandsBf16Pass : Pass<"shardc-matmul-operands-bf16", "::mlir::ModuleOp"> {
  let summary = "Give every matrix product bfloat16 operands where the rules "
                "file asks for it";
  let description = [{
    Under `precision matmul : bf16` (the module's `shardc.matmul_precision`
    is "bf16"), each f32 contraction on tensors (a matmul, attention's
    products, their gradients: a multiply-accumulate with a reduction whose
    operands are read through permutations of its loops) reads its two
    operands rounded to bfloat16 (to nearest, ties to even) and accumulates
    their products in f32 into its f32 result, as JAX's
    `jax_default_matmul_precision='bfloat16'` and PyTorch's bf16 autocast of
    matmuls do. The rounding is an elementwise op of its own before the
    product, one per operand and block, which shardc-fuse-elementwise then
    fuses into the operand's producer: a layer norm's or an activation's loop
    writes the bf16 operand directly, and shardc-lower-to-kernels calls
    oneDNN's bf16 matmul on it (`shardrt_matmul_bf16`) instead of converting
    both operands on every call. Convolutions are left to
    shardc-lower-to-kernels, which calls the runtime's _bf16 convolution
    entries under the attribute (f32 operands, products in bf16). Without the attribute
    the pass changes nothing.

    ```mlir
    %c = linalg.matmul ins(%a, %b : tensor<4x8xf32>, tensor<8x2xf32>) outs(%z : tensor<4x2xf32>)
    ```
    becomes
    ```mlir
    %a16 = linalg.generic {...} ins(%a : tensor<4x8xf32>) outs(%e : tensor<4x8xbf16>) { truncf }
    %b16 = linalg.generic {...} ins(%b : tensor<8x2xf32>) outs(%f : tensor<8x2xbf16>) { truncf }
    %c = linalg.generic {...} ins(%a16, %b16 : ...) outs(%z : tensor<4x2xf32>) { extf, extf, mulf, addf }
    ```
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect", "::mlir::arith::ArithDialect",
                           "::mlir::tensor::TensorDialect"];
}

def FuseElementwisePass : Pass<"shardc-fuse-elementwise", "::mlir::func::FuncOp"> {
  let summary = "Fuse elementwise linalg ops into their consumers, sparing "
                "the ops that become kernels";
  let description = [{
    Every elementwise op of a step (a bias add, a relu, an Adam update's
    terms) is its own loop nest over its own buffer; on tensors larger than
    the cache each one is a round trip to memory. This pass applies
    upstream's elementwise fusion (linalg::populateElementwiseOpsFusionPatterns)
    with three limits:
      - a producer is fused into the single op that reads its result, or
        into every op that reads it when it only moves data (a broadcast, a
        transpose) or is cheap to repeat (at most seven additions, products,
        maxima, selects, compares or conversions of a mask to floats: a bias
        add that both a relu and the relu's gradient read, a dropout's mask,
        Adam's moment updates that both the parameter's update and the new
        moment read), so that no costly work is done twice;
      - nothing is fused into a multiply-accumulate with a reduction (a
        matmul, a contraction, a convolution's gradient): those become
        sgemm-based kernels in shardc-lower-to-kernels, which a fused body
        would no longer match;
      - producer and consumer are of one scan layer, or both of none (their
        locations, LayerLocations.h): a layer's forward op fused into its
        backward is recomputed there instead of kept from the forward, but
        fused across two layers the first and last layers would differ from
        the others and share no function with them (shardc-outline-layers).

    ```mlir
    %y = linalg.generic {...} ins(%conv, %bias) outs(%e0) { addf }
    %r = linalg.generic {...} ins(%y) outs(%e1) { maximumf }
    ```

    becomes one linalg.generic that reads %conv and %bias and writes relu(conv + bias).
  }];
  let dependentDialects = [
    "::mlir::affine::AffineDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::tensor::TensorDialect",
  ];
}

def FuseSiblingsPass : Pass<"shardc-fuse-siblings", "::mlir::func::FuncOp"> {
  let summary = "Make elementwise loops that read the same tensor one loop";
  let description = [{
    After shardc-fuse-elementwise, an optimizer's update of one parameter is
    still three loops: Adam's new parameter, new first and new second moment
    each read the gradient and the old moments (the moments' cheap updates are
    fused into every reader), eight reads of a parameter's size for four
    tensors. Upstream's linalg fusion on tensors is producer-into-consumer
    only; this pass fuses sibling loops (loops that read a common tensor,
    neither reading the other's result, as the affine dialect's sibling fusion
    does for loops over memrefs) into one linalg.generic with the results of
    both, so that each tensor is read once; the body's common subexpressions
    (the moment both compute) are computed once.

    Two loops are fused where both are elementwise (every loop parallel, every
    operand indexed by the identity or a scalar) over the same static loop
    ranges, of one scan layer part or both of none (as
    shardc-fuse-elementwise), with only elementwise loops, empty tensors and
    constants between them, and nothing between them reading the first's
    results. The fused loop stands where the second was.

    ```mlir
    %p = linalg.generic ins(%w, %mu, %g, %nu) outs(%e0) { adam's update }
    %m = linalg.generic ins(%mu, %g) outs(%e1) { b1 mu + (1 - b1) g }
    ```

    becomes one linalg.generic ins(%w, %mu, %g, %nu) outs(%e0, %e1) with both
    results.
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect"];
}

def UpdateInPlacePass : Pass<"shardc-update-in-place", "::mlir::func::FuncOp"> {
  let summary = "Make the train step's new parameters and state over the old ones";
  let description = [{
    The train entry updates parameters and optimizer state in place: the
    runtime passes each buffer once, read as a `bufferization.to_tensor
    restrict writable` and written back by a `materialize_in_destination`
    into the same buffer. Where the op that makes a new value (Adam's update
    of a parameter, of a moment) has an empty tensor as its init and no other
    reader, the old value becomes its init, so that one-shot bufferization
    writes the new value over the old one (the copy back then folds away)
    instead of into a temporary of the parameter's size copied over it at the
    end. Bufferization's analysis keeps this right: where something still
    reads the old value after the op (a parameter's update reads the moments
    the moments' own updates replace), that op gets a new buffer as before.
    Runs after the elementwise fusion, which gives fused ops new inits, and
    before layers are outlined.

    ```mlir
    %p = bufferization.to_tensor %arg0 restrict writable
    %e = tensor.empty() : tensor<64xf32>
    %new = linalg.generic ... ins(%p, %g) outs(%e)
    bufferization.materialize_in_destination %new in writable %arg0
    ```

    gets `outs(%p)`.
  }];
  let dependentDialects = ["::mlir::bufferization::BufferizationDialect"];
}

def OutlineLayersPass : Pass<"shardc-outline-layers", "::mlir::ModuleOp"> {
  let summary = "Move each part of each scan layer (forward, backward, "
                "gradient checks, update) into a function, one function per "
                "distinct part";
  let description = [{
    A scan is unrolled before partitioning (upstream's shard passes have no
    sharding model for loops), so the partitioned step holds a copy of the
    block's forward, backward and parameter update for every layer. Left
    there, every later pass, and LLVM, works on each copy: compile time grew
    with depth (bench/compile measures it against depth). As Flax's nn.scan and
    JAX's lax.scan trace the body once, this pass gives each part of each
    layer one function and calls it, and parts whose functions print alike
    share one, so the rest of the pipeline sees a layer's code once whatever
    the depth.

    MLIRGen names each op's location by the layer part its node computes
    (`loc("layer 3 forward"(...))`, `backward`, `check` for its gradients'
    terms of the finiteness test and the clipping norm, `update`;
    LayerLocations.h); partitioning keeps locations. A collective's location
    does not count (the partitioner gives it its operand's or its reader's,
    which may be another part's). For each part of a block (of a function or
    of the microbatches' loop), the ops from its first to its last form the
    call:

    - an op between them of no layer that only the part's ops use (a
      parameter's all_gather under FSDP, ZeRO-3's per-layer gather), or
      that reads only what the part makes (a gradient's reduce_scatter),
      joins the part;
    - any other op between them that reads what the part makes moves after
      the call (a bucket of gradients of several layers); if the part reads
      it too, the part stays inline;
    - the part's arguments are what it reads from outside, in order of first
      use; what is computed from nothing (constants, tensor.empty, a fill of
      one) stays where it is and is cloned in; its results are the values
      it makes that are used outside.

    The functions are private, `no_inline`, and take their temporaries'
    arena from the caller (`shardc.arena_argument`: shardc-plan-buffers
    plans the callee first and its arena becomes one buffer of the caller's,
    live during the call). The numbers of `shardc.remat` and
    `shardc.regather` (which only keep cse apart) restart in each function,
    so that the layers' functions print alike.
  }];
  let dependentDialects = [
    "::mlir::func::FuncDialect",
    "::mlir::LLVM::LLVMDialect",
  ];
}

def SplitDeallocsPass : Pass<"shardc-split-deallocs", "::mlir::func::FuncOp"> {
  let summary = "Give each allocation of a bufferization.dealloc that nothing "
                "else in it aliases a dealloc of its own";
  let description = [{
    The ownership-based deallocation frees a block's buffers with one
    `bufferization.dealloc` at its end, every buffer of the block in it; an
    unrolled step's entry block holds thousands. Upstream's
    buffer-deallocation-simplification then splits off each memref that may
    alias none of the others, asking an alias analysis about every pair:
    quadratic in the depth of an unrolled scan (bench/compile). Without retained values (nothing a dealloc's
    results report on), a memref whose buffer is a `memref.alloc` that no
    other memref of the dealloc views aliases none of them, so this pass
    splits those off in one walk, before the simplification, which then
    sees single-memref deallocs. What may alias (block arguments, two views
    of one buffer) stays together, for the simplification.

    ```mlir
    bufferization.dealloc (%a, %b : memref<4xf32>, memref<8xf32>) if (%true, %true)
    ```

    becomes

    ```mlir
    bufferization.dealloc (%a : memref<4xf32>) if (%true)
    bufferization.dealloc (%b : memref<8xf32>) if (%true)
    ```
  }];
  let dependentDialects = ["::mlir::bufferization::BufferizationDialect"];
}

def PlanBuffersPass : Pass<"shardc-plan-buffers", "::mlir::ModuleOp"> {
  let summary = "Place a function's temporary buffers in one arena, reusing "
                "the bytes of buffers no longer live";
  let description = [{
    After bufferization and deallocation every temporary of a step is its own
    memref.alloc, freed after its last use; malloc decides where it lands and
    the step's memory is whatever the heap grows to. This pass plans it ahead
    of time, as TFLite's arena planner does: each static-shape alloc of the
    function's body that one memref.dealloc of the body frees is live from
    its first use to the last op that reaches its bytes (through a view, a
    pointer taken of it, or anything computed from those), not to the
    dealloc, which the deallocation pipeline puts at the end of the block;
    the buffers, largest first, go to the
    lowest 64-byte aligned offset where they overlap no buffer live at the
    same time. The function then allocates one i8 arena on entry and frees it
    on return; each buffer is a `memref.view` of it. The arena's size is left
    on the function as `shardc.arena_bytes`.

    The body of an scf.for (the microbatches' loop) is planned the same way
    within the loop, and its plan is one buffer of the block around it, live
    while the loop runs: an iteration's temporaries reuse one region of the
    arena, iteration after iteration. The cases of an scf.index_switch (a
    pipeline's stages) are planned each from the same first byte of one such
    buffer, as large as the largest case: a rank runs one case.

    Allocs freed elsewhere (in a branch, or not at all) keep their own
    allocation.

    ```mlir
    %a = memref.alloc() : memref<256xf32>     // live [0, 2]
    ...
    memref.dealloc %a : memref<256xf32>
    %b = memref.alloc() : memref<256xf32>     // live [3, 5]: a's bytes
    ```

    becomes

    ```mlir
    %arena = memref.alloc() {alignment = 64 : i64} : memref<1024xi8>
    %a = memref.view %arena[%c0][] : memref<1024xi8> to memref<256xf32>
    %b = memref.view %arena[%c0][] : memref<1024xi8> to memref<256xf32>
    ...
    memref.dealloc %arena : memref<1024xi8>
    ```

    A function marked `shardc.arena_argument` (the entry points shardc adds
    for the runtime) instead takes the arena as a new last argument and
    neither allocates nor frees it: the runtime maps one arena for the
    process (shardrt_step_arena) and every step reuses it. Allocated on each
    step, the arena left a hole in the heap that the small allocations
    between steps broke up, and a run held two arenas instead of the one the
    report counts.

    Functions are planned callees first. A function marked
    `shardc.arena_argument` that shardc-outline-layers made is called, not
    entered by the runtime: each call passes it a buffer of its arena's size,
    allocated just before the call and freed just after, which the caller's
    plan places like any other temporary. The calls of a layer's forwards
    and backwards then reuse one region of the step's arena.

    An argument that every call frees right after it (a layer's saved
    activations, which its backward reads last) is donated: after the
    function's last access to it, its bytes take the function's temporaries
    that fit there, as the unrolled step reused a dead activation's bytes.
    Each caller then allocates the argument as i8 bytes viewed at its type
    and passes the bytes too, as an argument before the arena.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::memref::MemRefDialect",
  ];
}

def OutlineKernelsPass : Pass<"shardc-outline-kernels", "::mlir::ModuleOp"> {
  let summary = "Move each linalg op of the bufferized step into a kernel "
                "function, one function per distinct op";
  let description = [{
    The step functions are unrolled: a scan of N blocks holds N copies of a
    block's ops (forward, gradient, update), each the same loop nest on
    other buffers. Lowered in place, every copy is lowered, optimised and
    compiled again, most of it in LLVM (bench/compile). Like IREE's dispatch regions and their deduplication,
    this pass moves each linalg op on buffers into a private function of its
    operands (and of the values its body reads from outside, constants
    cloned in) and calls it; ops whose functions print the same (same op,
    attributes, types and body) share one function, so that every later
    pass, and LLVM, sees one block's kernels however many blocks there are.
    Kernels are marked `no_inline`: inlined back, the step would again be
    one function of thousands of loop nests.

    shardc-lower-to-kernels' loops over a batched matmul's batch dimensions
    (an `scf.for` of index arithmetic, pointers and runtime calls) are
    outlined the same way: left in the step, each one made
    convert-scf-to-cf split the step's one block in two, moving every op
    after it, and that pass grew with the square of the depth
    (bench/compile).

    Operands from `memref.view`s of the arena have identity layouts, so the
    same op of two layers has the same types; an operand with a strided
    layout (a slice) keeps its offset in its type, and its kernel is shared
    only by ops at the same offset. The calling convention passes bare
    pointers, which cannot carry a dynamic offset: an operand that is a
    `memref.subview` at a dynamic offset (a rank's block of an all_slice)
    is passed as its source and its offsets, and the kernel takes the slice;
    an op with another such operand stays where it is.

    ```mlir
    linalg.generic {...} ins(%a : memref<8xf32>) outs(%b : memref<8xf32>) {...}
    linalg.generic {...} ins(%c : memref<8xf32>) outs(%d : memref<8xf32>) {...}
    ```

    becomes

    ```mlir
    call @shardc_kernel_0(%a, %b) : (memref<8xf32>, memref<8xf32>) -> ()
    call @shardc_kernel_0(%c, %d) : (memref<8xf32>, memref<8xf32>) -> ()
    func.func private @shardc_kernel_0(%x: memref<8xf32>, %y: memref<8xf32>) attributes {no_inline} {
      linalg.generic {...} ins(%x : memref<8xf32>) outs(%y : memref<8xf32>) {...}
      return
    }
    ```
  }];
  let dependentDialects = [
    "::mlir::func::FuncDialect",
    "::mlir::LLVM::LLVMDialect",
  ];
}

def ExpandTanhPass : Pass<"shardc-expand-tanh", "::mlir::ModuleOp"> {
  let summary = "Expand math.tanh into exp (upstream's expansion), applied to "
                "the tanh ops only";
  let description = [{
    libm's tanhf goes through expm1f, several times the cost of expf in W4's
    step (bench/gpt), so gelu's tanh is computed from exp with upstream's expansion
    pattern (math-expand-ops{ops=tanh}). The upstream pass applies it with a
    greedy rewrite of the whole module, which also folds every op and
    simplifies every region, a cost that grows with the step for the few
    tanh ops of the kernels (bench/compile). This pass hands the
    tanh ops alone to the rewriter.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect", "::mlir::math::MathDialect"];
}

def ExpandBf16Pass : Pass<"shardc-expand-bf16", "::mlir::ModuleOp"> {
  let summary = "Expand the conversions between f32 and bf16 into integer ops "
                "(upstream's patterns), applied to those conversions only";
  let description = [{
    LLVM lowers an f32 -> bf16 `fptrunc` to one instruction on a CPU with
    AVX512-BF16 and to a call of `__truncsfbf2` on any other, which GCC 12's
    libgcc lacks: a program with bf16 operands would not link for such a
    target. Upstream's expansion (arith-expand's include-bf16 patterns)
    rounds to nearest, ties to even, and keeps NaNs, with integer ops that
    every x86-64 has and that the loop vectorizer takes; it gives the same
    bits on every target. Upstream's pass also expands the other arith ops it
    knows (maximumf, ceildivsi, ...); this one hands the bf16 `truncf` and
    `extf` alone to the rewriter.

    Input:
    ```mlir
    %h = arith.truncf %x : f32 to bf16
    ```
    Output: `arith.bitcast` to i32, the rounding bias added, a shift right by
    16, a select of a quiet NaN for a NaN, and `arith.trunci` to i16 bitcast
    to bf16.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect"];
}

def ReassociateReductionsPass : Pass<"shardc-reassociate-reductions", "::mlir::ModuleOp"> {
  let summary = "Let the float sums and products that a linalg.generic "
                "accumulates over its reduction loops be reassociated";
  let description = [{
    A reduction's loop adds into its output element one term at a time; LLVM
    may only vectorize that loop (partial sums in vector lanes, added at the
    end) when the add carries the `reassoc` fast-math flag. Without it, the
    row sums of layer norm, softmax and their gradients ran one float per
    instruction: 7 % of W4's step in bf16. This pass puts `reassoc` on the op
    that folds a term into the accumulator (`acc + term`, `acc * term`) of
    every linalg.generic with a reduction loop, and on no other op: the terms
    are computed as written, only their order of summation may change, as
    it already does when a reduced axis is split over ranks. Which order is
    fixed when the executable is made (EmitExecutable's fixReductionOrder: a
    vector width and interleave count set by the loop's length), so the same
    reduction gives the same bits in every kernel it is fused into.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect"];
}

#endif // SHARDC_OPTIMIZE_PASSES
