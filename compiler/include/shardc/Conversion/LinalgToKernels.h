//===- LinalgToKernels.h - linalg to libshardrt kernels ---------*- C++ -*-===//
//
// convert-linalg-to-loops turns a matmul or a convolution into scalar loops,
// far from what the machine can do. shardc calls libshardrt's kernels
// (OpenBLAS sgemm, im2col convolutions; runtime/include/shardrt/shardrt.h)
// for the forms its MLIRGen emits, and leaves everything else to the loops.
//
//===----------------------------------------------------------------------===//

#ifndef SHARDC_CONVERSION_LINALGTOKERNELS_H
#define SHARDC_CONVERSION_LINALGTOKERNELS_H

#include <memory>

namespace mlir {
class Pass;
} // namespace mlir

namespace shardc {

/// `lower-to-kernels`: on a bufferized module (linalg on memrefs), replaces
///   - linalg.matmul and 2-D contractions `out[m, n] += a * b` (3 loops, one a
///     reduction, operands indexed by permutations of their two loops) with
///     shardrt_matmul_f32, transposes read off the maps;
///   - linalg.conv_2d_nhwc_hwcf with shardrt_conv2d_f32;
///   - the linalg.generic forms of the convolution's filter and input
///     gradients (docs: LinalgToKernels.cpp) with
///     shardrt_conv2d_{filter,input}_grad_f32;
/// when every operand is an f32 memref of static shape laid out densely
/// row-major (any offset). The others stay linalg ops.
std::unique_ptr<mlir::Pass> createLowerToKernelsPass();
void registerLowerToKernelsPass();

} // namespace shardc

#endif
