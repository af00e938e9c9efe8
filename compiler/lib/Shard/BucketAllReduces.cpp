//===- BucketAllReduces.cpp - gradients all-reduced in buckets ------------===//
//
// See shardc-bucket-all-reduces in include/shardc/Shard/Passes.td.
//
//===----------------------------------------------------------------------===//

#include "shardc/Shard/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"

namespace shardc {
#define GEN_PASS_DEF_BUCKETALLREDUCESPASS
#include "shardc/Shard/Passes.h.inc"
} // namespace shardc

using namespace mlir;
using namespace mlir::shard;

namespace {

/// All_reduces that may share one collective: the same grid, axes, reduction
/// and element type (the result's, which may differ from the operand's).
struct Bucket {
  SmallVector<AllReduceOp> members;
  int64_t bytes = 0;

  bool accepts(AllReduceOp op) const {
    AllReduceOp first = members.front();
    auto type = [](AllReduceOp r) { return cast<RankedTensorType>(r.getResult().getType()); };
    auto inType = [](AllReduceOp r) { return cast<RankedTensorType>(r.getInput().getType()); };
    return first.getGrid() == op.getGrid() && first.getGridAxes() == op.getGridAxes() &&
           first.getReduction() == op.getReduction() &&
           type(first).getElementType() == type(op).getElementType() &&
           inType(first).getElementType() == inType(op).getElementType();
  }
};

int64_t bytesOf(AllReduceOp op) {
  auto type = cast<RankedTensorType>(op.getResult().getType());
  return type.getNumElements() * ((type.getElementTypeBitWidth() + 7) / 8);
}

/// `value` as a 1-D tensor (a rank-0 one as one element).
Value flatten(OpBuilder &b, Location loc, Value value) {
  auto type = cast<RankedTensorType>(value.getType());
  auto flat = RankedTensorType::get({type.getNumElements()}, type.getElementType());
  if (type.getRank() == 1)
    return value;
  if (type.getRank() == 0)
    return tensor::ExpandShapeOp::create(b, loc, flat, value, ArrayRef<ReassociationIndices>{});
  ReassociationIndices all = llvm::to_vector(llvm::seq<int64_t>(0, type.getRank()));
  return tensor::CollapseShapeOp::create(b, loc, flat, value, ArrayRef<ReassociationIndices>{all});
}

/// The inverse of flatten, to `type`.
Value unflatten(OpBuilder &b, Location loc, Value flat, RankedTensorType type) {
  if (type.getRank() == 1)
    return flat;
  if (type.getRank() == 0)
    return tensor::CollapseShapeOp::create(b, loc, type, flat, ArrayRef<ReassociationIndices>{});
  ReassociationIndices all = llvm::to_vector(llvm::seq<int64_t>(0, type.getRank()));
  return tensor::ExpandShapeOp::create(b, loc, type, flat, ArrayRef<ReassociationIndices>{all});
}

/// One all_reduce of the members' operands, concatenated, where the last
/// member was; each member's result is its slice of it.
void emitBucket(Bucket &bucket) {
  if (bucket.members.size() < 2)
    return;
  AllReduceOp last = bucket.members.back();
  OpBuilder b(last);
  Location loc = last.getLoc();
  SmallVector<Value> parts;
  for (AllReduceOp op : bucket.members)
    parts.push_back(flatten(b, loc, op.getInput()));
  Value all = tensor::ConcatOp::create(b, loc, /*dim=*/0, parts);
  auto resultElement = cast<RankedTensorType>(last.getResult().getType()).getElementType();
  auto allType =
      RankedTensorType::get(cast<RankedTensorType>(all.getType()).getShape(), resultElement);
  Value reduced = AllReduceOp::create(b, loc, allType, last.getGridAttr(), last.getGridAxesAttr(),
                                      all, last.getReductionAttr())
                      .getResult();
  int64_t offset = 0;
  for (AllReduceOp op : bucket.members) {
    auto type = cast<RankedTensorType>(op.getResult().getType());
    int64_t size = type.getNumElements();
    Value slice = tensor::ExtractSliceOp::create(
        b, loc, RankedTensorType::get({size}, resultElement), reduced, ValueRange{}, ValueRange{},
        ValueRange{}, b.getDenseI64ArrayAttr({offset}), b.getDenseI64ArrayAttr({size}),
        b.getDenseI64ArrayAttr({1}));
    op.getResult().replaceAllUsesWith(unflatten(b, loc, slice, type));
    offset += size;
  }
  for (AllReduceOp op : bucket.members)
    op.erase();
}

struct BucketAllReducesPass : public shardc::impl::BucketAllReducesPassBase<BucketAllReducesPass> {
  using BucketAllReducesPassBase::BucketAllReducesPassBase;

  void runOnOperation() override {
    func::FuncOp fn = getOperation();
    if (fn.isExternal() || !fn.getBody().hasOneBlock())
      return;
    Block &body = fn.getBody().front();
    const int64_t limit = bucketBytes;
    SmallVector<Bucket> open, done;
    // A bucket is emitted where its last member is: it closes when a member's
    // result is read before the next all_reduce it could take (that reader
    // would then come before the bucket), or when it is full.
    auto firstReader = [&](const Bucket &bucket) {
      Operation *first = nullptr;
      for (AllReduceOp member : bucket.members)
        for (Operation *user : member->getUsers())
          if (Operation *inBody = body.findAncestorOpInBlock(*user))
            if (!first || inBody->isBeforeInBlock(first))
              first = inBody;
      return first;
    };
    for (Operation &op : body) {
      auto reduce = dyn_cast<AllReduceOp>(op);
      if (!reduce || !isa<RankedTensorType>(reduce.getInput().getType()))
        continue;
      auto *bucket = llvm::find_if(open, [&](Bucket &b) { return b.accepts(reduce); });
      if (bucket != open.end()) {
        Operation *reader = firstReader(*bucket);
        if ((reader && reader->isBeforeInBlock(reduce)) ||
            bucket->bytes + bytesOf(reduce) > limit) {
          done.push_back(std::move(*bucket));
          open.erase(bucket);
          bucket = open.end();
        }
      }
      if (bucket == open.end()) {
        open.emplace_back();
        bucket = &open.back();
      }
      bucket->members.push_back(reduce);
      bucket->bytes += bytesOf(reduce);
    }
    for (Bucket &bucket : llvm::concat<Bucket>(done, open))
      emitBucket(bucket);
  }
};

} // namespace
