//===- LinalgToKernels.cpp - linalg on buffers to libshardrt kernels ------===//
//
// The `shardc-lower-to-kernels` pass (include/shardc/Conversion/Passes.td).
// It runs after bufferization and deallocation, before
// convert-linalg-to-loops, and replaces the linalg ops that a training step
// spends its time in with calls of libshardrt's dense kernels
// (runtime/include/shardrt/shardrt.h), which accumulate into their output as
// the ops do into their init, or overwrite it when the init is a zero fill
// of a fresh buffer (the fill goes).
//
// The algorithm:
//  1. Collect the linalg ops on memrefs whose operands are f32 memrefs of
//     static shape and strides (the convolution forms: dense and row-major,
//     an identity layout or the identity's strides with any offset). Others
//     stay for convert-linalg-to-loops.
//  2. Match each against the forms below, by indexing maps, iterator types
//     and body (a `library_call` attribute is neither needed nor read: the
//     maps and the body say everything; a body must be exactly
//     `out + in0 * in1`, operands of the add and multiply in either order):
//     a. Contraction (linalg.matmul, batch_matmul, the generics of `@`,
//        `contract` and their gradients): every map a projected permutation,
//        each loop a batch loop (in all three operands), an M loop (first
//        input and output), an N loop (second input and output) or a K
//        reduction (both inputs). Each of M, N and K may be several loops
//        when every operand that has them lays them out as one strided
//        dimension (x[b, s, e] @ w[e, h, d]: M = b*s, N = h*d), and each
//        matrix needs a unit-stride dimension, transposed when it is the
//        rows; an output with unit-stride rows is computed as
//        C^T = B^T A^T.
//          -> shardrt_matmul_f32(trans_a, trans_b, M, N, K, lda, ldb, ldc,
//                                A, B, out)
//        or, with batch loops, shardrt_batched_matmul_f32 with the innermost
//        two's sizes and the operands' strides along them (attention's [b, h]
//        heads of scores), inside one scf.for per further batch loop that
//        advances the pointers by the operands' strides.
//     b. linalg.conv_2d_nhwc_hwcf, any strides and dilations
//          -> shardrt_conv2d_f32 (b.-d. _bf16 under `precision matmul : bf16`,
//             the module's shardc.matmul_precision: products in bfloat16)
//     c. Filter gradient, loops (kh, kw, c, f, n, oh, ow), [par x4, red x3]:
//          xpad (d4, d5 * sh + d0, d6 * sw + d1, d2), dy (d4, d5, d6, d3),
//          out (d0, d1, d2, d3)         -> shardrt_conv2d_filter_grad_f32
//        with the strides sh, sw >= 1 read off the maps.
//     d. Input gradient, loops (n, i, j, c, kh, kw, f), [par x4, red x3]:
//          dyp (d0, d1 - d4 + KH-1, d2 - d5 + KW-1, d6), w (d4, d5, d3, d6),
//          out (d0, d1, d2, d3), dyp [N, H+KH-1, W+KW-1, F]
//                                       -> shardrt_conv2d_input_grad_f32
//     Map results are compared as linear forms (coefficient per loop plus a
//     constant), so `d0 + d5 * 2` and `d5 * 2 + d0` are the same.
//  3. A convolution's input (x, xpad or dyp) that is a padded copy, a fresh
//     buffer filled with +0.0 and a tensor copied into its middle (how
//     tensor.pad bufferizes), is read in place: the kernel gets the tensor,
//     its height and width and the pads in front (the zeros behind it are
//     implied), and the buffer, fill and copy go, if every reader of the
//     buffer is such a kernel and nothing may write the tensor between the
//     copy and the last reader (W2: 12 MB of zeros and copies a step).
//     Then replace each match with the call: first the accumulate flag, 0 when
//     the output is a fresh buffer whose only earlier write is a linalg.fill
//     with +0.0, or a function's argument whose last use before the kernel is
//     such a fill (a layer function's result: W4's query, key and value
//     projections), the fill then erased, then sizes as i64 constants (flags as
//     i32; one constant per value), buffers as pointers to their first
//     element (advanced inside the batch loops). Runtime functions are declared on first use as
//     private func.func, like shardc-shard-to-runtime's.
//
//===----------------------------------------------------------------------===//

#include "RuntimeCalls.h"
#include "shardc/Conversion/Passes.h"
#include "shardc/IR/Attributes.h"
#include "shardc/Support/MultiplyAccumulate.h"
#include "shardrt/scratch_regions.h"

#include "mlir/Analysis/FlatLinearValueConstraints.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/Utils/MemRefUtils.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "mlir/Pass/Pass.h"

#include "llvm/ADT/MapVector.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "shardc-lower-to-kernels"

namespace shardc {
#define GEN_PASS_DEF_LOWERTOKERNELSPASS
#include "shardc/Conversion/Passes.h.inc"
} // namespace shardc

using namespace mlir;
using shardc::conversion_detail::getElementPointer;
using shardc::conversion_detail::needScratch;
using shardc::conversion_detail::RuntimeFunctions;

namespace {

/// A runtime call that replaces a linalg op: integer arguments, then
/// pointers to the buffers.
struct KernelCall {
  StringRef function;
  SmallVector<IntegerAttr> scalars;
  SmallVector<Value> buffers;
  /// Loops around the call: each runs `size` times, advancing each buffer's
  /// pointer by its element stride.
  struct BatchLoop {
    int64_t size;
    SmallVector<int64_t> strides;
  };
  SmallVector<BatchLoop> batch;
  /// For the convolutions, where the scalars say the first buffer's height,
  /// width and the zero rows and columns read in front of it (0 until step 3
  /// finds the buffer is a padded copy).
  struct PaddedInput {
    unsigned height, width, padHeight, padWidth;
  };
  std::optional<PaddedInput> paddedInput;
  /// What the call takes of the runtime's scratch buffer, by its scalars
  /// (none: nothing).
  std::function<size_t(ArrayRef<int64_t> scalars)> scratchBytes;
};

/// f32, static shape, dense row-major (step 1).
bool isDenseF32(Value v) {
  auto type = dyn_cast<MemRefType>(v.getType());
  return type && type.getElementType().isF32() && !type.getMemorySpace() &&
         memref::isStaticShapeAndContiguousRowMajor(type);
}

ArrayRef<int64_t> shapeOf(Value v) { return cast<MemRefType>(v.getType()).getShape(); }

/// One coefficient per loop, then the constant: a map result as a linear form.
using LinearForm = SmallVector<int64_t>;

std::optional<LinearForm> getLinearForm(AffineExpr expr, unsigned numLoops) {
  LinearForm form;
  // Without symbols, anything past the loops and the constant is a floordiv
  // or mod.
  if (failed(getFlattenedAffineExpr(expr, numLoops, 0, &form)) || form.size() != numLoops + 1)
    return std::nullopt;
  return form;
}

/// The form sum(coefficient * loop) + constant.
LinearForm makeForm(unsigned numLoops, ArrayRef<std::pair<unsigned, int64_t>> terms,
                    int64_t constant = 0) {
  LinearForm form(numLoops + 1, 0);
  for (auto [loop, coefficient] : terms)
    form[loop] += coefficient;
  form[numLoops] = constant;
  return form;
}

/// The form of a map result that is just `loop`.
LinearForm loopForm(unsigned numLoops, unsigned loop) { return makeForm(numLoops, {{loop, 1}}); }

/// Whether `map`'s results have exactly the given forms.
bool hasForms(AffineMap map, ArrayRef<LinearForm> forms) {
  if (map.getNumSymbols() != 0 || map.getNumResults() != forms.size())
    return false;
  for (auto [expr, form] : llvm::zip_equal(map.getResults(), forms))
    if (getLinearForm(expr, map.getNumDims()) != form)
      return false;
  return true;
}

/// Whether `map`'s results are the given loops.
bool hasLoops(AffineMap map, ArrayRef<unsigned> loops) {
  SmallVector<LinearForm> forms;
  for (unsigned loop : loops)
    forms.push_back(loopForm(map.getNumDims(), loop));
  return hasForms(map, forms);
}

/// Two inputs, one init, a body `out + in0 * in1` (either operand order), each
/// input read as it is or widened to f32 (shardc-matmul-operands-bf16's form).
bool isMultiplyAccumulate(linalg::LinalgOp op) {
  return op.getNumDpsInputs() == 2 && op.getNumDpsInits() == 1 &&
         shardc::isMultiplyAccumulateBody(*op.getBlock());
}

bool hasIterators(linalg::LinalgOp op, unsigned parallel, unsigned reduction) {
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  if (iterators.size() != parallel + reduction)
    return false;
  for (auto [i, it] : llvm::enumerate(iterators))
    if (it != (i < parallel ? utils::IteratorType::parallel : utils::IteratorType::reduction))
      return false;
  return true;
}

/// The loops of one matrix dimension of a contraction (M, N or K) as one
/// index: their sizes multiply, and in every operand that has them they are
/// laid out as one strided dimension (each loop's stride is the next one's
/// times its size), with `stride` the innermost's.
struct LoopGroup {
  SmallVector<unsigned> loops;
  int64_t size = 1;
};

/// A memref's strides when they and its shape are static.
std::optional<SmallVector<int64_t>> staticStrides(Value v) {
  auto type = dyn_cast<MemRefType>(v.getType());
  if (!type || type.getMemorySpace() || !type.hasStaticShape())
    return std::nullopt;
  auto [strides, offset] = type.getStridesAndOffset();
  if (llvm::any_of(strides, ShapedType::isDynamic))
    return std::nullopt;
  return strides;
}

/// One operand of a contraction: its buffer, its indexing map, its strides.
struct Operand {
  Value buffer;
  AffineMap map;
  SmallVector<int64_t> strides;

  int64_t strideOf(unsigned loop) const {
    return strides[*map.getResultPosition(getAffineDimExpr(loop, map.getContext()))];
  }

  /// The stride of `group` flattened in this operand, if it flattens with its
  /// loops in the group's order.
  std::optional<int64_t> groupStride(const LoopGroup &group, ArrayRef<int64_t> sizes) const {
    for (auto [outer, inner] : llvm::zip(group.loops, ArrayRef(group.loops).drop_front()))
      if (strideOf(outer) != strideOf(inner) * sizes[inner])
        return std::nullopt;
    return strideOf(group.loops.back());
  }
};

/// How BLAS reads an operand as a [rows, cols] matrix: transposed when its rows
/// are the unit-stride dimension, with leading dimension `ld`.
struct MatrixLayout {
  bool transposed;
  int64_t ld;
};

std::optional<MatrixLayout> matrixLayout(const Operand &operand, const LoopGroup &rows,
                                         const LoopGroup &cols, ArrayRef<int64_t> sizes) {
  std::optional<int64_t> rowStride = operand.groupStride(rows, sizes),
                         colStride = operand.groupStride(cols, sizes);
  if (!rowStride || !colStride)
    return std::nullopt;
  if (*colStride == 1 || cols.size == 1)
    return MatrixLayout{false, rows.size == 1 ? cols.size : *rowStride};
  if (*rowStride == 1 || rows.size == 1)
    return MatrixLayout{true, cols.size == 1 ? rows.size : *colStride};
  return std::nullopt;
}

/// The element type of a memref operand.
Type elementOf(Value v) { return cast<MemRefType>(v.getType()).getElementType(); }

/// Form a (step 2).
std::optional<KernelCall> matchContraction(linalg::LinalgOp op, Builder &b) {
  if (!isMultiplyAccumulate(op) || !llvm::all_of(op->getOperandTypes(), llvm::IsaPred<MemRefType>))
    return std::nullopt;
  // f32 operands, or bf16 ones (shardc-matmul-operands-bf16); an f32 result.
  Type element = elementOf(op->getOperand(0));
  if (!elementOf(op->getOperand(2)).isF32() || elementOf(op->getOperand(1)) != element ||
      !(element.isF32() || element.isBF16()))
    return std::nullopt;
  const StringRef precision = element.isF32() ? "f32" : "bf16";
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  SmallVector<Operand> operands;
  for (auto [value, map] : llvm::zip_equal(op->getOperands(), maps)) {
    std::optional<SmallVector<int64_t>> strides = staticStrides(value);
    if (!strides || !map.isProjectedPermutation(/*allowZeroInResults=*/false))
      return std::nullopt;
    operands.push_back({value, map, *strides});
  }
  SmallVector<int64_t> sizes = op.getStaticLoopRanges();
  // Each loop is a batch loop (in all three), M (A and out), N (B and out) or
  // K (a reduction over A and B); anything else is not a matrix product.
  LoopGroup m, n, k, batch;
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  auto has = [&](unsigned operand, unsigned loop) {
    return maps[operand].getResultPosition(getAffineDimExpr(loop, op->getContext())).has_value();
  };
  // A group's loops in the order the first operand that has them lays them out.
  auto orderBy = [&](LoopGroup &group, const Operand &operand) {
    llvm::sort(group.loops,
               [&](unsigned x, unsigned y) { return operand.strideOf(x) > operand.strideOf(y); });
  };
  for (unsigned loop = 0; loop < sizes.size(); ++loop) {
    bool reduction = iterators[loop] == utils::IteratorType::reduction;
    unsigned where = has(0, loop) | has(1, loop) << 1 | has(2, loop) << 2;
    LoopGroup *group = !reduction && where == 0b111   ? &batch
                       : !reduction && where == 0b101 ? &m
                       : !reduction && where == 0b110 ? &n
                       : reduction && where == 0b011  ? &k
                                                      : nullptr;
    if (!group)
      return std::nullopt;
    group->loops.push_back(loop);
    group->size *= sizes[loop];
  }
  if (m.loops.empty() || n.loops.empty() || k.loops.empty())
    return std::nullopt;
  orderBy(m, operands[2]);
  orderBy(n, operands[2]);
  orderBy(k, operands[0]);
  std::optional<MatrixLayout> a = matrixLayout(operands[0], m, k, sizes),
                              bm = matrixLayout(operands[1], k, n, sizes),
                              c = matrixLayout(operands[2], m, n, sizes);
  if (!a || !bm || !c)
    return std::nullopt;
  // Row-major sgemm writes C with unit-stride columns; a C laid out the other
  // way round is C^T = B^T A^T.
  unsigned first = 0, second = 1;
  int64_t rows = m.size, cols = n.size;
  if (c->transposed) {
    std::swap(a, bm);
    std::swap(first, second);
    std::swap(rows, cols);
    a->transposed = !a->transposed;
    bm->transposed = !bm->transposed;
  }
  KernelCall call{b.getStringAttr("shardrt_matmul_" + precision).getValue(),
                  {b.getI32IntegerAttr(a->transposed), b.getI32IntegerAttr(bm->transposed),
                   b.getI64IntegerAttr(rows), b.getI64IntegerAttr(cols),
                   b.getI64IntegerAttr(k.size), b.getI64IntegerAttr(a->ld),
                   b.getI64IntegerAttr(bm->ld), b.getI64IntegerAttr(c->ld)},
                  {operands[first].buffer, operands[second].buffer, operands[2].buffer}};
  for (unsigned loop : batch.loops)
    if (sizes[loop] != 1)
      call.batch.push_back({sizes[loop],
                            {operands[first].strideOf(loop), operands[second].strideOf(loop),
                             operands[2].strideOf(loop)}});
  if (call.batch.empty())
    return call;
  // The innermost two batch loops go into the kernel (one call, and one oneDNN
  // primitive in bf16, for attention's [b, h] products); any further ones stay
  // loops around it.
  KernelCall::BatchLoop inner = call.batch.pop_back_val();
  KernelCall::BatchLoop outer{1, {0, 0, 0}};
  if (!call.batch.empty())
    outer = call.batch.pop_back_val();
  call.function = b.getStringAttr("shardrt_batched_matmul_" + precision).getValue();
  call.scalars.append({b.getI64IntegerAttr(outer.size), b.getI64IntegerAttr(inner.size)});
  for (unsigned operand = 0; operand < 3; ++operand)
    call.scalars.append(
        {b.getI64IntegerAttr(outer.strides[operand]), b.getI64IntegerAttr(inner.strides[operand])});
  return call;
}

SmallVector<IntegerAttr> i64Attrs(Builder &b, ArrayRef<int64_t> values) {
  return llvm::map_to_vector(values, [&](int64_t v) { return b.getI64IntegerAttr(v); });
}

/// A convolution entry of the runtime: `shardrt_conv2d_` + `kind` + its precision.
StringRef convEntry(Builder &b, StringRef kind, bool productsInBf16) {
  return b.getStringAttr("shardrt_conv2d_" + kind + (productsInBf16 ? "bf16" : "f32")).getValue();
}

/// Form b.
std::optional<KernelCall> matchConv(linalg::Conv2DNhwcHwcfOp op, Builder &b, bool productsInBf16) {
  Value x = op.getInputs()[0], k = op.getInputs()[1], y = op.getOutputs()[0];
  ArrayRef<int64_t> xs = shapeOf(x), ks = shapeOf(k), ys = shapeOf(y);
  auto strides = llvm::to_vector(op.getStrides().getValues<int64_t>());
  auto dilations = llvm::to_vector(op.getDilations().getValues<int64_t>());
  return KernelCall{convEntry(b, "", productsInBf16),
                    i64Attrs(b, {xs[0], xs[1], xs[2], xs[3], 0, 0, ks[0], ks[1], ks[3], ys[1],
                                 ys[2], strides[0], strides[1], dilations[0], dilations[1]}),
                    {x, k, y},
                    {},
                    KernelCall::PaddedInput{1, 2, 4, 5},
                    [productsInBf16](ArrayRef<int64_t> s) {
                      return shardrt::conv2dScratchBytes(productsInBf16, s[0], s[1], s[2], s[3],
                                                         s[4], s[5], s[6], s[7], s[9], s[10], s[11],
                                                         s[12], s[13], s[14]);
                    }};
}

/// Form c.
std::optional<KernelCall> matchFilterGrad(linalg::LinalgOp op, Builder &b, bool productsInBf16) {
  if (!hasIterators(op, 4, 3) || !isMultiplyAccumulate(op))
    return std::nullopt;
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  if (maps[0].getNumResults() != 4)
    return std::nullopt;
  // The strides, read off the map of xpad and checked by hasForms below.
  auto stride = [&](unsigned result, unsigned outLoop) -> int64_t {
    std::optional<LinearForm> form = getLinearForm(maps[0].getResult(result), 7);
    return form ? (*form)[outLoop] : 0;
  };
  int64_t sh = stride(1, 5), sw = stride(2, 6);
  if (sh < 1 || sw < 1 ||
      !hasForms(maps[0], {loopForm(7, 4), makeForm(7, {{5, sh}, {0, 1}}),
                          makeForm(7, {{6, sw}, {1, 1}}), loopForm(7, 2)}) ||
      !hasLoops(maps[1], {4, 5, 6, 3}) || !hasLoops(maps[2], {0, 1, 2, 3}))
    return std::nullopt;
  Value xpad = op.getDpsInputs()[0], dy = op.getDpsInputs()[1], dw = op.getDpsInits()[0];
  ArrayRef<int64_t> xs = shapeOf(xpad), dys = shapeOf(dy), dws = shapeOf(dw);
  return KernelCall{convEntry(b, "filter_grad_", productsInBf16),
                    i64Attrs(b, {xs[0], xs[1], xs[2], xs[3], 0, 0, dws[0], dws[1], dws[3], dys[1],
                                 dys[2], sh, sw}),
                    {xpad, dy, dw},
                    {},
                    KernelCall::PaddedInput{1, 2, 4, 5},
                    [](ArrayRef<int64_t> s) {
                      return shardrt::conv2dFilterGradScratchBytes(s[0], s[1], s[2], s[3], s[4],
                                                                   s[5], s[6], s[7], s[9], s[10],
                                                                   s[11], s[12]);
                    }};
}

/// Form d.
std::optional<KernelCall> matchInputGrad(linalg::LinalgOp op, Builder &b, bool productsInBf16) {
  if (!hasIterators(op, 4, 3) || !isMultiplyAccumulate(op))
    return std::nullopt;
  Value dyp = op.getDpsInputs()[0], w = op.getDpsInputs()[1], dx = op.getDpsInits()[0];
  ArrayRef<int64_t> dyps = shapeOf(dyp), ws = shapeOf(w), dxs = shapeOf(dx);
  if (dyps.size() != 4 || ws.size() != 4 || dxs.size() != 4)
    return std::nullopt;
  int64_t kh = ws[0], kw = ws[1];
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  // The kernel reads dyp [N, H+KH-1, W+KW-1, F] densely.
  if (dyps[1] != dxs[1] + kh - 1 || dyps[2] != dxs[2] + kw - 1 ||
      !hasForms(maps[0], {loopForm(7, 0), makeForm(7, {{1, 1}, {4, -1}}, kh - 1),
                          makeForm(7, {{2, 1}, {5, -1}}, kw - 1), loopForm(7, 6)}) ||
      !hasLoops(maps[1], {4, 5, 3, 6}) || !hasLoops(maps[2], {0, 1, 2, 3}))
    return std::nullopt;
  return KernelCall{
      convEntry(b, "input_grad_", productsInBf16),
      i64Attrs(b, {dxs[0], dxs[1], dxs[2], dxs[3], kh, kw, ws[3], dyps[1], dyps[2], 0, 0}),
      {dyp, w, dx},
      {},
      KernelCall::PaddedInput{7, 8, 9, 10},
      [productsInBf16](ArrayRef<int64_t> s) {
        return shardrt::conv2dInputGradScratchBytes(productsInBf16, s[0], s[1], s[2], s[3], s[4],
                                                    s[5], s[6], s[7], s[8], s[9], s[10]);
      }};
}

/// The fill with +0.0 that is the only write of `op`'s freshly allocated
/// `output` before `op`, or the last use before `op` (in its block) of a
/// function's `output` argument (a layer function's result, written into its
/// caller's buffer) with no view of it made before `op` (a write through one
/// would go unseen), or that of a view `output` right before `op`: the kernel
/// can overwrite the buffer instead.
linalg::FillOp zeroInitOf(Operation *op, Value output) {
  if (auto arg = dyn_cast<BlockArgument>(output)) {
    if (!isa<func::FuncOp>(arg.getOwner()->getParentOp()))
      return {};
    Operation *last = nullptr;
    for (Operation *user : arg.getUsers()) {
      Operation *inBlock = op->getBlock()->findAncestorOpInBlock(*user);
      if (!inBlock || !inBlock->isBeforeInBlock(op))
        continue;
      if (isa<ViewLikeOpInterface>(user))
        return {};
      if (!last || last->isBeforeInBlock(inBlock))
        last = inBlock;
    }
    auto fill = dyn_cast_or_null<linalg::FillOp>(last);
    if (fill && fill.getOutputs()[0] == arg && matchPattern(fill.getInputs()[0], m_PosZeroFloat()))
      return fill;
    return {};
  }
  if (output.getDefiningOp<memref::SubViewOp>()) {
    // A slot of a larger buffer (a layer loop's stack): the fill of it right
    // before `op`, with nothing between that could write memory.
    for (Operation *before = op->getPrevNode(); before; before = before->getPrevNode()) {
      if (auto fill = dyn_cast<linalg::FillOp>(before))
        return fill.getOutputs()[0] == output && matchPattern(fill.getInputs()[0], m_PosZeroFloat())
                   ? fill
                   : linalg::FillOp();
      if (!isMemoryEffectFree(before))
        return {};
    }
    return {};
  }
  auto alloc = output.getDefiningOp<memref::AllocOp>();
  if (!alloc)
    return {};
  linalg::FillOp init;
  for (Operation *user : alloc->getUsers()) {
    if (user == op)
      continue;
    Operation *inBlock = op->getBlock()->findAncestorOpInBlock(*user);
    if (!inBlock)
      return {};
    if (op->isBeforeInBlock(inBlock))
      continue;
    auto fill = dyn_cast<linalg::FillOp>(user);
    if (!fill || init || fill->getBlock() != op->getBlock() ||
        !matchPattern(fill.getInputs()[0], m_PosZeroFloat()))
      return {};
    init = fill;
  }
  return init;
}

/// `convolutionsInBf16`: the convolutions' products in bfloat16 (the _bf16 entries).
std::optional<KernelCall> matchKernel(linalg::LinalgOp op, Builder &b, bool convolutionsInBf16) {
  if (!op.hasPureBufferSemantics())
    return std::nullopt;
  if (std::optional<KernelCall> call = matchContraction(op, b))
    return call;
  if (!llvm::all_of(op->getOperands(), isDenseF32))
    return std::nullopt;
  if (auto conv = dyn_cast<linalg::Conv2DNhwcHwcfOp>(op.getOperation()))
    return matchConv(conv, b, convolutionsInBf16);
  for (auto match : {matchFilterGrad, matchInputGrad})
    if (std::optional<KernelCall> call = match(op, b, convolutionsInBf16))
      return call;
  return std::nullopt;
}

/// Whether `op` writes +0.0 into all of `buffer` and nothing else: a fill, or
/// the map that bufferizing tensor.pad makes.
bool isZeroFillOf(Operation *op, Value buffer) {
  if (auto fill = dyn_cast<linalg::FillOp>(op))
    return fill.getOutputs()[0] == buffer && matchPattern(fill.getInputs()[0], m_PosZeroFloat());
  auto map = dyn_cast<linalg::MapOp>(op);
  if (!map || !map.getInputs().empty() || map.getInit() != buffer)
    return false;
  auto yield = cast<linalg::YieldOp>(map.getMapper().front().getTerminator());
  return matchPattern(yield.getValues()[0], m_PosZeroFloat());
}

/// The value `v` is a view of, through view-like ops.
Value rootOf(Value v) {
  while (auto view = v.getDefiningOp<ViewLikeOpInterface>())
    v = view.getViewSource();
  return v;
}

/// The buffer a pointer made by getElementPointer points into (null if it was
/// made some other way).
Value pointerRoot(Value pointer) {
  Value v = pointer;
  while (Operation *def = v.getDefiningOp()) {
    if (auto extract = dyn_cast<memref::ExtractAlignedPointerAsIndexOp>(def))
      return rootOf(extract.getSource());
    if (isa<LLVM::IntToPtrOp, arith::IndexCastOp, arith::AddIOp>(def))
      v = def->getOperand(0);
    else
      break;
  }
  return {};
}

/// Whether `op` may write `root` or a view of it; for an argument, any
/// argument (two may alias: a parameter and its update share a buffer).
bool mayWrite(Operation *op, Value root) {
  auto mayAlias = [&](Value written) {
    return !written || written == root || (isa<BlockArgument>(root) && isa<BlockArgument>(written));
  };
  bool writes = false;
  op->walk([&](Operation *nested) {
    auto effects = dyn_cast<MemoryEffectOpInterface>(nested);
    if (!effects) {
      // A call, or anything else that says nothing: it may write what its
      // operands point to.
      for (Value v : nested->getOperands()) {
        if (isa<BaseMemRefType>(v.getType()))
          writes |= mayAlias(rootOf(v));
        else if (isa<LLVM::LLVMPointerType>(v.getType()))
          writes |= mayAlias(pointerRoot(v));
      }
      return;
    }
    SmallVector<MemoryEffects::EffectInstance> instances;
    effects.getEffects(instances);
    for (const MemoryEffects::EffectInstance &effect : instances)
      if (isa<MemoryEffects::Write>(effect.getEffect()))
        writes |= mayAlias(effect.getValue() ? rootOf(effect.getValue()) : Value());
  });
  return writes;
}

/// A kernel reading the buffer `padded` as its first operand.
using PaddedReader = std::pair<Operation *, KernelCall *>;

/// How tensor.pad bufferizes: a fresh buffer, a +0.0 fill of it, and one copy of
/// the padded tensor into a subview of its middle.
struct PaddedCopy {
  Operation *fill;
  memref::SubViewOp middle;
  memref::CopyOp copy;
  SmallVector<Operation *> deallocs;
};

/// The padded copy that `padded` holds, if every other use of it is one of
/// `readers` (as their first buffer only), all in its block after the copy, the
/// middle covers dimensions 0 and 3 at static offsets with unit strides, and
/// nothing may write the copied tensor between the copy and the last reader.
std::optional<PaddedCopy> findPaddedCopy(Value padded, ArrayRef<PaddedReader> readers) {
  Block *block = padded.getDefiningOp()->getBlock();
  DenseSet<Operation *> readerOps;
  Operation *first = nullptr, *last = nullptr;
  for (auto [op, call] : readers) {
    if (op->getBlock() != block || llvm::count(call->buffers, padded) != 1)
      return std::nullopt;
    readerOps.insert(op);
    if (!first || op->isBeforeInBlock(first))
      first = op;
    if (!last || last->isBeforeInBlock(op))
      last = op;
  }
  PaddedCopy found{};
  for (Operation *user : padded.getUsers()) {
    if (readerOps.contains(user))
      continue;
    if (isa<memref::DeallocOp>(user))
      found.deallocs.push_back(user);
    else if (auto subview = dyn_cast<memref::SubViewOp>(user); subview && !found.middle)
      found.middle = subview;
    else if (!found.fill && user->getBlock() == block && isZeroFillOf(user, padded))
      found.fill = user;
    else
      return std::nullopt;
  }
  if (!found.fill || !found.middle || !found.middle->hasOneUse())
    return std::nullopt;
  found.copy = dyn_cast<memref::CopyOp>(*found.middle->getUsers().begin());
  if (!found.copy || found.copy.getTarget() != found.middle.getResult() ||
      found.copy->getBlock() != block || !found.fill->isBeforeInBlock(found.copy) ||
      !found.copy->isBeforeInBlock(first))
    return std::nullopt;
  Value source = found.copy.getSource();
  ArrayRef<int64_t> offsets = found.middle.getStaticOffsets();
  if (!isDenseF32(source) || !found.middle.hasUnitStride() ||
      llvm::any_of(offsets, ShapedType::isDynamic) || offsets[0] != 0 || offsets[3] != 0 ||
      shapeOf(source)[0] != shapeOf(padded)[0] || shapeOf(source)[3] != shapeOf(padded)[3])
    return std::nullopt;
  for (Operation *op = found.copy->getNextNode(); op != last->getNextNode(); op = op->getNextNode())
    if (mayWrite(op, rootOf(source)))
      return std::nullopt;
  return found;
}

/// Step 3's first part: a convolution reading a padded copy of a tensor reads the
/// tensor itself with the pads instead, and the copy, its fill and the buffer's
/// deallocation go. Returns the padded buffers, to erase once their readers are.
SmallVector<Operation *>
readPaddedInputsInPlace(MutableArrayRef<std::pair<linalg::LinalgOp, KernelCall>> work) {
  llvm::MapVector<Value, SmallVector<PaddedReader>> readers;
  for (auto &[op, call] : work)
    if (call.paddedInput && call.buffers[0].getDefiningOp<memref::AllocOp>())
      readers[call.buffers[0]].push_back({op, &call});
  SmallVector<Operation *> unused;
  for (auto &[padded, kernels] : readers) {
    std::optional<PaddedCopy> found = findPaddedCopy(padded, kernels);
    if (!found)
      continue;
    Value source = found->copy.getSource();
    ArrayRef<int64_t> offsets = found->middle.getStaticOffsets();
    Builder b(padded.getContext());
    for (auto [op, call] : kernels) {
      const KernelCall::PaddedInput &at = *call->paddedInput;
      call->buffers[0] = source;
      call->scalars[at.height] = b.getI64IntegerAttr(shapeOf(source)[1]);
      call->scalars[at.width] = b.getI64IntegerAttr(shapeOf(source)[2]);
      call->scalars[at.padHeight] = b.getI64IntegerAttr(offsets[1]);
      call->scalars[at.padWidth] = b.getI64IntegerAttr(offsets[2]);
    }
    found->copy->erase();
    found->middle->erase();
    found->fill->erase();
    for (Operation *dealloc : found->deallocs)
      dealloc->erase();
    unused.push_back(padded.getDefiningOp());
  }
  return unused;
}

struct LowerToKernelsPass : public shardc::impl::LowerToKernelsPassBase<LowerToKernelsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    Builder attrs(module.getContext());
    const bool convolutionsInBf16 = shardc::precisionIsBf16(module, shardc::kMatmulPrecisionAttr);
    // 1.-2.
    SmallVector<std::pair<linalg::LinalgOp, KernelCall>, 0> work;
    module.walk([&](linalg::LinalgOp op) {
      if (std::optional<KernelCall> call = matchKernel(op, attrs, convolutionsInBf16))
        work.push_back({op, std::move(*call)});
      else
        LLVM_DEBUG(llvm::dbgs() << "[" DEBUG_TYPE "] left to loops: " << op->getName() << " at "
                                << op->getLoc() << "\n");
    });

    // 3.
    SmallVector<Operation *> unusedBuffers = readPaddedInputsInPlace(work);
    RuntimeFunctions runtime(module);
    Type ptr = LLVM::LLVMPointerType::get(module.getContext());
    for (auto &[op, call] : work) {
      SmallVector<Type> types{attrs.getI32Type()};
      for (IntegerAttr scalar : call.scalars)
        types.push_back(scalar.getType());
      types.append(call.buffers.size(), ptr);
      func::FuncOp fn = runtime.getOrDeclare(op, call.function, types, {});
      if (!fn)
        return signalPassFailure();
      OpBuilder b(op);
      Location loc = op.getLoc();
      if (call.scratchBytes)
        needScratch(module, int64_t(call.scratchBytes(llvm::map_to_vector(
                                call.scalars, [](IntegerAttr s) { return s.getInt(); }))));
      linalg::FillOp zeroInit = zeroInitOf(op, call.buffers.back());
      call.scalars.insert(call.scalars.begin(), attrs.getI32IntegerAttr(!zeroInit));
      if (zeroInit)
        zeroInit->erase();
      SmallVector<Value> args;
      DenseMap<Attribute, Value> constants;
      for (IntegerAttr scalar : call.scalars) {
        Value &constant = constants[scalar];
        if (!constant)
          constant = arith::ConstantOp::create(b, loc, scalar);
        args.push_back(constant);
      }
      // The batch loops, and each buffer's element offset inside them.
      SmallVector<Value> offsets(call.buffers.size());
      for (const KernelCall::BatchLoop &loop : call.batch) {
        auto zero = arith::ConstantIndexOp::create(b, loc, 0);
        auto forOp =
            scf::ForOp::create(b, loc, zero, arith::ConstantIndexOp::create(b, loc, loop.size),
                               arith::ConstantIndexOp::create(b, loc, 1));
        b.setInsertionPoint(forOp.getBody()->getTerminator());
        Value iv = forOp.getInductionVar();
        for (auto [offset, stride] : llvm::zip_equal(offsets, loop.strides)) {
          Value step =
              arith::MulIOp::create(b, loc, iv, arith::ConstantIndexOp::create(b, loc, stride));
          offset = offset ? Value(arith::AddIOp::create(b, loc, offset, step)) : step;
        }
      }
      for (auto [buffer, offset] : llvm::zip_equal(call.buffers, offsets))
        args.push_back(getElementPointer(b, loc, buffer, offset));
      func::CallOp::create(b, loc, fn, args);
      LLVM_DEBUG(llvm::dbgs() << "[" DEBUG_TYPE "] " << call.function << " for " << op->getName()
                              << " at " << loc << "\n");
      op->erase();
    }
    for (Operation *buffer : unusedBuffers)
      buffer->erase();
  }
};

} // namespace
