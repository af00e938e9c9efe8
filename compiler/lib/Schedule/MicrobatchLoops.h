//===- MicrobatchLoops.h - what the microbatch and pipeline loops share -*- C++ -*-===//
//
// shardc-accumulate-microbatches and shardc-pipeline-schedule both build
// train_step, after partitioning, as loops over microbatches that call
// functions of one microbatch and sum what they return.
//
//===----------------------------------------------------------------------===//

#ifndef SHARDC_LIB_SHARD_MICROBATCHLOOPS_H
#define SHARDC_LIB_SHARD_MICROBATCHLOOPS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"

namespace shardc::microbatch_loops {

/// The `shardc.role` of `fn`'s argument `arg` (empty: none).
llvm::StringRef roleOf(mlir::func::FuncOp fn, unsigned arg);

/// Where a function's result `result` is reduced across ranks by a sum
/// all_reduce that may move after the loop (it is linear: reducing the sum
/// equals summing the reductions): the value itself (a loss or metric) or, for
/// a gradient's running sum `sum + g`, the term `g` added to the sum argument.
/// Not a reduce_scatter (FSDP's gradients): deferred, each rank would hold the
/// sum of the whole gradient instead of its shard.
mlir::OpOperand *deferrableReduction(mlir::OpOperand &result);

/// Each result of `fn` that a sum all_reduce reduces is returned unreduced;
/// the all_reduces, by result (null: none), for after the loop. Not a pipeline
/// stage's result that another stage receives (kTransferAttr): it is sent whole.
llvm::SmallVector<mlir::Operation *> deferReductions(mlir::func::FuncOp fn);

/// `value` * `factor`.
mlir::Value scale(mlir::OpBuilder &b, mlir::Location loc, mlir::Value value, double factor);

/// `sum` + `value`, written over `sum`: the payload reads its output, so that
/// bufferization keeps one buffer for the sum through the loop, and elementwise
/// fusion (which gives an op whose output it does not read a new one) leaves it.
mlir::Value accumulate(mlir::OpBuilder &b, mlir::Location loc, mlir::Value sum, mlir::Value value);

/// Replaces `call` by a copy of `callee`'s body (one block).
void inlineCall(mlir::func::CallOp call, mlir::func::FuncOp callee);

/// Each running sum `sum + g` the loop yields becomes an accumulation into
/// `sum`; anything else it yields in place of a sum is copied into it. A loop
/// that yielded a new buffer per iteration would need the deallocation
/// pipeline's runtime ownership checks, which the bare-pointer lowering does
/// not support.
void addInPlace(mlir::scf::ForOp loop);

/// A step function `name` with these arguments and results (null attributes:
/// none) and an entry block, before `anchor`.
mlir::func::FuncOp declareStep(mlir::func::FuncOp anchor, llvm::StringRef name,
                               llvm::ArrayRef<mlir::Type> argTypes,
                               llvm::ArrayRef<mlir::DictionaryAttr> argAttrs,
                               llvm::ArrayRef<mlir::Type> resultTypes,
                               llvm::ArrayRef<mlir::DictionaryAttr> resultAttrs);

/// @train_step (the runtime's ABI) with an entry block, before `apply` (apply_step):
/// its parameters, state and step are apply_step's, its inputs those of `batch` (the
/// function that runs one microbatch) `count` times as long along their
/// microbatch_dim; its results the update's parameters and state, its loss, then
/// `batch`'s results 1 .. `metrics`.
mlir::func::FuncOp declareTrainStep(mlir::func::FuncOp apply, mlir::func::FuncOp batch,
                                    int64_t count, unsigned metrics);

/// A tensor of `type` filled with zeros.
mlir::Value zerosOf(mlir::OpBuilder &b, mlir::Location loc, mlir::RankedTensorType type);

/// Microbatch `k`'s slice (of `type`) of `input` along `dim`.
mlir::Value sliceMicrobatch(mlir::OpBuilder &b, mlir::Location loc, mlir::Value input,
                            mlir::RankedTensorType type, int64_t dim, mlir::Value k);

} // namespace shardc::microbatch_loops

#endif
