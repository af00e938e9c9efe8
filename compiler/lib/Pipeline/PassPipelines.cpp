//===- PassPipelines.cpp - shardc's pass pipelines, defined once ----------===//
//
// shardc runs these (Partition.cpp, LowerToLLVM.cpp); shardc-opt and the lit
// tests run them by name (Registration.cpp).
//
//===----------------------------------------------------------------------===//

#include "shardc/Conversion/Passes.h"
#include "shardc/Optimize/Passes.h"
#include "shardc/Pipeline/Pipeline.h"
#include "shardc/Schedule/Passes.h"
#include "shardc/Shard/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/Shard/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

// shardc-replicate-unsharded anchors what propagation did not reach and
// propagates again from there. No cse before partitioning: it merges
// tensor.empty ops that then carry two shardings, which crashes
// shard-partition.
void shardc::buildPropagatePipeline(OpPassManager &pm) {
  shard::ShardingPropagationOptions propagation;
  propagation.traversal = shard::TraversalOrder::ForwardBackward;
  OpPassManager &function = pm.nest<func::FuncOp>();
  function.addPass(shard::createShardingPropagation(propagation));
  function.addPass(createReplicateUnshardedPass());
}

// shardc-decompose-reshards first: shard-partition does a reshard in one step
// only, and silently gets a longer one wrong. cse after it merges the
// identical reshards it makes for each use of a value, so that the report
// counts what runs, and so that shardc-fuse-reduce-scatter sees one slice of
// each reduced value. shardc-drop-unit-axes before the fusion, which wants the
// reduction's and the slice's axes alike; shardc-slice-early before it too
// (a slice it lifts may land on an all_reduce), then cse merges the slices it
// makes of one value. shardc-combine-all-reduces after cse (which merges equal
// all_reduces that would otherwise have two uses) and before the fusion (a
// combined all_reduce may be sliced), and again after it: the fusion moves
// sums over a sliced axis (the clipping norm's) below the slice, each with a
// scalar all_reduce that the running sum of the norm then combines.
// shardc-mark-gradient-syncs after the combining and the fusion (it then
// sees the collectives that run) and before the bucketing (which keeps the
// gradients it marks apart from other sums).
// shardc-accumulate-microbatches (with microbatches) after the combining, on
// each gradient's own collective, which it moves after its loop, and before the
// bucketing, which then buckets those.
// shardc-bucket-all-reduces on the all_reduces that are left.
// shardc-regather-parameters after the last cse, which would merge its
// gathers back into one that keeps every full weight live (ZeRO-3's copy
// per use; its attribute keeps the later cse of the bufferize pipeline off
// them too).
void shardc::buildPartitionPipeline(OpPassManager &pm) {
  OpPassManager &function = pm.nest<func::FuncOp>();
  function.addPass(createDecomposeReshardsPass());
  function.addPass(shard::createPartition());
  function.addPass(createCanonicalizerPass());
  function.addPass(createCSEPass());
  function.addPass(createDropUnitAxesPass());
  function.addPass(createSliceEarlyPass());
  function.addPass(createCSEPass());
  function.addPass(createCombineAllReducesPass());
  function.addPass(createFuseReduceScatterPass());
  function.addPass(createCombineAllReducesPass());
  function.addPass(createMarkGradientSyncsPass());
  pm.addPass(createAccumulateMicrobatchesPass());
  pm.addPass(createPipelineSchedulePass());
  pm.addPass(createLayerLoopPass());
  OpPassManager &after = pm.nest<func::FuncOp>();
  after.addPass(createBucketAllReducesPass());
  after.addPass(createRegatherParametersPass());
}

// Why each pass sits where it does:
//   inline, symbol-dce     each step function disappears into its entry
//   canonicalize, cse      before shardc-shard-to-runtime: afterwards
//                          canonicalize folds to_buffer(to_tensor %alloc)
//                          and hides the runtime's reads from bufferization
//   shardc-splats-to-fills, -channels-innermost, -fuse-elementwise
//                          on tensors, before the collectives become calls
//                          (their greedy rewriting would fold the
//                          to_buffer(to_tensor) pairs too): inits are fills of
//                          their own buffers, pooling loops over channels
//                          innermost, elementwise chains one loop nest (a
//                          layer's forward op fused into its backward is
//                          recomputed there, not kept: the unrolled step's
//                          memory; never across two layers)
//   shardc-update-in-place  after the fusion (which gives fused ops new
//                          inits): the train step's new parameters and state
//                          made over the old ones where nothing reads those after
//   shardc-outline-layers  then each scan layer's parts become calls of one
//                          function per distinct part, before anything else
//                          that grows with the step's size; after cse, which
//                          would merge equal results of a function (upstream's
//                          buffer-results-to-out-params crashes on a buffer
//                          returned twice)
//   shardc-prefetch-gathers  after it (a layer's first gather then moves
//                          before the previous layer's call, the others
//                          before the previous weight's reader in the
//                          layer's function) and before the gathers become
//                          runtime starts and waits
//   shardc-shard-to-runtime  collectives become calls while still on tensors
//   shardc-write-in-slots  last before bufferization (after the fusion, which
//                          gives fused ops new inits): a layer loop's values
//                          made in their slots of its stacks
//   one-shot-bufferize     function boundaries with identity layouts, so
//                          that memref arguments can be bare pointers
//   drop-equivalent-buffer-results, buffer-results-to-out-params
//                          a layer function writes its results into
//                          buffers its caller allocates (the caller's arena
//                          plans them), not into allocations it returns
//   buffer-deallocation-pipeline, convert-bufferization-to-memref
//                          frees every temporary (the clones it makes
//                          become memref copies); shardc-split-deallocs
//                          inside it, before the simplification
// Upstream's buffer-deallocation-pipeline with shardc-split-deallocs before
// the simplification, which is quadratic in a dealloc's memrefs.
static void buildDeallocationPipeline(OpPassManager &pm) {
  OpPassManager &function = pm.nest<func::FuncOp>();
  function.addPass(memref::createExpandReallocPass({/*emitDeallocs=*/false}));
  function.addPass(createCanonicalizerPass());
  function.addPass(bufferization::createOwnershipBasedBufferDeallocationPass());
  function.addPass(createCanonicalizerPass());
  function.addPass(shardc::createSplitDeallocsPass());
  function.addPass(bufferization::createBufferDeallocationSimplificationPass());
  pm.addPass(bufferization::createLowerDeallocationsPass());
  OpPassManager &after = pm.nest<func::FuncOp>();
  after.addPass(createCSEPass());
  after.addPass(createCanonicalizerPass());
}

void shardc::buildBufferizePipeline(OpPassManager &pm) {
  // No canonicalization inside the inliner: the step functions are inlined
  // whole, and the canonicalizer after it does that work once.
  pm.addPass(createInlinerPass({}, [](OpPassManager &) {}));
  pm.addPass(createSymbolDCEPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  pm.addNestedPass<func::FuncOp>(createSplatsToFillsPass());
  pm.addNestedPass<func::FuncOp>(createEmbeddingGathersPass());
  pm.addNestedPass<func::FuncOp>(createChannelsInnermostPass());
  pm.addPass(createMatmulOperandsBf16Pass());
  pm.addNestedPass<func::FuncOp>(createFuseElementwisePass());
  pm.addNestedPass<func::FuncOp>(createFuseSiblingsPass());
  pm.addNestedPass<func::FuncOp>(createUpdateInPlacePass());
  pm.addPass(createOutlineLayersPass());
  pm.addPass(createPrefetchGathersPass());
  pm.addPass(createShardToRuntimePass());
  pm.addNestedPass<func::FuncOp>(createWriteInSlotsPass());
  bufferization::OneShotBufferizePassOptions bufferize;
  bufferize.bufferizeFunctionBoundaries = true;
  bufferize.allowReturnAllocsFromLoops = true;
  bufferize.functionBoundaryTypeConversion = bufferization::LayoutMapOption::IdentityLayoutMap;
  pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
  pm.addPass(bufferization::createDropEquivalentBufferResultsPass());
  bufferization::BufferResultsToOutParamsPassOptions outParams;
  outParams.hoistStaticAllocs = true;
  pm.addPass(bufferization::createBufferResultsToOutParamsPass(outParams));
  pm.addNestedPass<func::FuncOp>(bufferization::createBufferHoistingPass());
  buildDeallocationPipeline(pm);
  pm.addPass(createConvertBufferizationToMemRefPass());
}

// After shardc-bufferize:
//   shardc-lower-to-kernels  matmuls, convolutions and their gradients on
//                          dense buffers become sgemm-based runtime calls;
//                          on memrefs, so after bufferization, and before
//                          the loops that would take the rest
//   shardc-plan-buffers    after it (a kernel that overwrites its output
//                          asks for the output's alloc): every temporary of
//                          a step in one planned arena
//   shardc-outline-kernels after the plan (each linalg op then works on a
//                          view of the arena, whose type is the same in
//                          every layer) and before the loops: one function
//                          per distinct op, so that a block's kernels are
//                          lowered and compiled once whatever the depth
//   shardc-reassociate-reductions  before the loops: LLVM vectorizes a
//                          reduction's loop only if its add may be reordered
//   convert-linalg-to-loops .. reconcile   the standard path to LLVM; the
//                          second lower-affine takes the affine.apply that
//                          expand-strided-metadata makes for a subview at a
//                          dynamic offset (an all_slice's block);
//                          finalize-memref-to-llvm allocates through
//                          _mlir_memref_to_llvm_alloc, which libshardrt
//                          defines to stop with a message when memory runs
//                          out (malloc's null pointer would be a segfault)
//   shardc-expand-tanh     tanh (gelu's) as exp: libm's tanhf goes through
//                          expm1f, 16 % of W4's step against 2 % for expf
//   shardc-expand-bf16     the f32 <-> bf16 conversions as integer ops: LLVM
//                          calls __truncsfbf2 for them on a CPU without
//                          AVX512-BF16, which libgcc 12 does not have
//   convert-math-to-llvm   before convert-math-to-libm: exp, log, pow, sqrt as
//                          LLVM intrinsics, which the loop vectorizer calls
//                          glibc's vector math (libmvec) for (EmitExecutable);
//                          libm's functions only for what has no intrinsic
//   canonicalize last      a call's memref descriptors are built field by
//                          field and only their pointer read (bare pointers):
//                          folding the rest away leaves much less of the LLVM
//                          dialect to translate and compile (bench/compile)
void shardc::buildLowerToLLVMPipeline(OpPassManager &pm,
                                      const LowerToLLVMPipelineOptions &options) {
  buildBufferizePipeline(pm);
  if (options.kernels)
    pm.addPass(createLowerToKernelsPass());
  pm.addPass(createPlanBuffersPass());
  pm.addPass(createOutlineKernelsPass());
  pm.addPass(createReassociateReductionsPass());
  pm.addPass(createConvertLinalgToLoopsPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  FinalizeMemRefToLLVMConversionPassOptions memrefToLLVM;
  memrefToLLVM.useGenericFunctions = true;
  pm.addPass(createFinalizeMemRefToLLVMConversionPass(memrefToLLVM));
  pm.addPass(createExpandTanhPass());
  pm.addPass(createExpandBf16Pass());
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createConvertMathToLibmPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertIndexToLLVMPass());
  ConvertFuncToLLVMPassOptions funcToLLVM;
  funcToLLVM.useBarePtrCallConv = options.barePointers;
  pm.addPass(createConvertFuncToLLVMPass(funcToLLVM));
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  pm.addPass(createCanonicalizerPass());
}
