//===- Passes.td - shardc's lowerings to libshardrt --------*- tablegen -*-===//
//
// The passes that call into libshardrt (runtime/include/shardrt/shardrt.h).
// shardc runs both in the shardc-lower-to-llvm pipeline (Pipeline/PassPipelines.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef SHARDC_CONVERSION_PASSES
#define SHARDC_CONVERSION_PASSES

include "mlir/Pass/PassBase.td"

def ShardToRuntimePass : Pass<"shardc-shard-to-runtime", "::mlir::ModuleOp"> {
  let summary = "Lower shard collectives and process queries on tensors to "
                "calls into libshardrt";
  let description = [{
    Upstream's convert-shard-to-mpi lowers only all_reduce and splits a new MPI
    communicator at every call. This pass lowers every collective of a
    partitioned module (after shard-partition) to a call into libshardrt,
    whose communicators are made once per mesh-axis subset.

    It rewrites shard.all_reduce / all_gather / reduce_scatter / all_to_all /
    all_slice / process_multi_index / process_linear_index / grid_shape /
    neighbors_linear_indices on tensors into func.call of libshardrt
    functions and removes the shard.grid ops nothing refers to any more. Any
    other shard op is an error.

    The result stays at tensor level (bufferization.to_buffer read_only of
    the inputs, memref.alloc + to_tensor restrict writable of the outputs),
    for one-shot-bufferize to run next. Run canonicalize / cse before this
    pass or after bufferization, not in between: the to_buffer(to_tensor)
    folding hides the runtime's reads from the bufferization analysis.

    Example:

    ```mlir
    %0 = shard.all_reduce %x on @grid grid_axes = [1] : tensor<8xf32> -> tensor<8xf32>
    ```

    becomes (pointers through memref.extract_aligned_pointer_as_index and
    llvm.inttoptr)

    ```mlir
    %in = bufferization.to_buffer %x read_only : tensor<8xf32> to memref<8xf32>
    %out = memref.alloc() {alignment = 64 : i64} : memref<8xf32>
    call @shardrt_all_reduce_f32(%mask, %inPtr, %outPtr, %count, %sum)
        : (i32, !llvm.ptr, !llvm.ptr, i64, i32) -> ()
    %0 = bufferization.to_tensor %out restrict writable : memref<8xf32> to tensor<8xf32>
    ```

    A gradient's all_reduce or reduce_scatter (shardc.gradient_sync) is
    started and waited for apart, so that the backward pass goes on while it
    travels (the driver's --overlap-gradients):
    shardrt_all_reduce_gradient_start_f32 (shardrt_reduce_scatter_gradient_
    start_f32) where the op was returns a handle, and shardrt_wait(handle,
    out) and the to_tensor come just before the first op of the block that
    reads the sum. Where that op is the return of a private function (a scan
    layer's backward part, shardc-outline-layers), the function returns the
    handle as an extra i64 result and each call waits before the first
    reader of that result, naming the result's buffer, which
    buffer-results-to-out-params makes one that the caller allocates (the
    runtime checks that it is the start's). Since MPI moves messages only
    inside MPI calls, a call of shardrt_progress_gradients goes before each
    linalg op of a function body with an operand of 64 Ki elements or more.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::bufferization::BufferizationDialect",
    "::mlir::func::FuncDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::LLVM::LLVMDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::tensor::TensorDialect",
  ];
}

def LowerToKernelsPass : Pass<"shardc-lower-to-kernels", "::mlir::ModuleOp"> {
  let summary = "Replace matmuls and 2-D convolutions (and their gradients) "
                "on dense f32 buffers with calls of libshardrt's kernels";
  let description = [{
    convert-linalg-to-loops turns a matmul or a convolution into scalar
    loops, far from what the machine can do. This pass calls libshardrt's
    kernels (OpenBLAS sgemm, im2col convolutions) for the forms shardc's
    MLIRGen emits and leaves everything else to the loops. It runs on a
    bufferized module (linalg on memrefs) and replaces
      - linalg.matmul, batch_matmul and every contraction
        `out[batch, m, n] += a[batch, m, k] * b[batch, k, n]` whose operands
        are indexed by permutations of their loops, in any layout where each
        of M, N and K flattens to one strided dimension with a unit-stride
        dimension per matrix, with shardrt_matmul_f32 (transposes and leading
        dimensions read off the maps and strides), or with batch dimensions
        shardrt_batched_matmul_f32 (the innermost two batch loops' sizes and
        strides passed to the kernel, any further ones scf.for loops around
        it);
      - linalg.conv_2d_nhwc_hwcf with shardrt_conv2d_f32;
      - the linalg.generic forms of the convolution's filter and input
        gradients (LinalgToKernels.cpp) with
        shardrt_conv2d_{filter,input}_grad_f32;
    when every operand is an f32 memref of static shape (and, for the
    convolutions, laid out densely row-major, any offset). The others stay
    linalg ops. A kernel accumulates into its output (the op's init) unless
    the output is a fresh buffer whose only earlier write is a zero
    linalg.fill, or a function's argument whose last use before the kernel
    is such a fill: then the fill goes and the kernel overwrites (the first
    argument, `accumulate`, is 0). A convolution whose input is a padded
    copy (a fresh buffer of zeros with a tensor copied into its middle, as
    tensor.pad bufferizes) reads the tensor in place with the pads instead,
    when nothing may write the tensor before its last reader; the copy goes.

    Example:

    ```mlir
    linalg.matmul ins(%a, %b : memref<4x16xf32>, memref<16x10xf32>)
                  outs(%c : memref<4x10xf32>)
    ```

    becomes

    ```mlir
    call @shardrt_matmul_f32(%true, %false, %false, %c4, %c10, %c16, %c16, %c10, %c10,
                             %aPtr, %bPtr, %cPtr)
        : (i32, i32, i32, i64, i64, i64, i64, i64, i64, !llvm.ptr, !llvm.ptr, !llvm.ptr) -> ()
    ```
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::func::FuncDialect",
    "::mlir::LLVM::LLVMDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect",
  ];
}

#endif // SHARDC_CONVERSION_PASSES
