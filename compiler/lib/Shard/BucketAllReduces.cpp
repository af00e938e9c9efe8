//===- BucketAllReduces.cpp - gradients all-reduced in buckets ------------===//
//
// See shardc-bucket-all-reduces in include/shardc/Shard/Passes.td.
//
//===----------------------------------------------------------------------===//

#include "shardc/IR/Attributes.h"
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

int64_t bytesOf(AllReduceOp op) {
  auto type = cast<RankedTensorType>(op.getResult().getType());
  return type.getNumElements() * ((type.getElementTypeBitWidth() + 7) / 8);
}

/// All_reduces that may share one collective: the same grid, axes, reduction,
/// element type (the result's, which may differ from the operand's) and
/// kGradientSyncAttr.
struct Bucket {
  SmallVector<AllReduceOp> members;
  int64_t bytes = 0;
  /// The first op of the body that reads a member's result.
  Operation *firstReader = nullptr;

  void add(AllReduceOp op, Block &body) {
    members.push_back(op);
    bytes += bytesOf(op);
    for (Operation *user : op->getUsers())
      if (Operation *inBody = body.findAncestorOpInBlock(*user))
        if (!firstReader || inBody->isBeforeInBlock(firstReader))
          firstReader = inBody;
  }

  bool accepts(AllReduceOp op) const {
    AllReduceOp first = members.front();
    // A bucket of gradients is one the runtime may send in bfloat16.
    if (first->hasAttr(shardc::kGradientSyncAttr) != op->hasAttr(shardc::kGradientSyncAttr))
      return false;
    auto type = [](AllReduceOp r) { return cast<RankedTensorType>(r.getResult().getType()); };
    auto inType = [](AllReduceOp r) { return cast<RankedTensorType>(r.getInput().getType()); };
    return first.getGrid() == op.getGrid() && first.getGridAxes() == op.getGridAxes() &&
           first.getReduction() == op.getReduction() &&
           type(first).getElementType() == type(op).getElementType() &&
           inType(first).getElementType() == inType(op).getElementType();
  }
};

/// `value` reshaped to `type` when one of the two is 1-D (a rank-0 tensor is
/// one element): a collapse to the 1-D one, an expand from it.
Value reshape(OpBuilder &b, Location loc, Value value, RankedTensorType type) {
  auto from = cast<RankedTensorType>(value.getType());
  if (from.getRank() == type.getRank())
    return value;
  RankedTensorType wide = from.getRank() > type.getRank() ? from : type;
  SmallVector<ReassociationIndices> groups;
  if (std::min(from.getRank(), type.getRank()) == 1)
    groups.push_back(llvm::to_vector(llvm::seq<int64_t>(0, wide.getRank())));
  if (wide == from)
    return tensor::CollapseShapeOp::create(b, loc, type, value, groups);
  return tensor::ExpandShapeOp::create(b, loc, type, value, groups);
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
  for (AllReduceOp op : bucket.members) {
    auto type = cast<RankedTensorType>(op.getInput().getType());
    parts.push_back(reshape(b, loc, op.getInput(),
                            RankedTensorType::get({type.getNumElements()}, type.getElementType())));
  }
  Value all = tensor::ConcatOp::create(b, loc, /*dim=*/0, parts);
  auto resultElement = cast<RankedTensorType>(last.getResult().getType()).getElementType();
  auto allType =
      RankedTensorType::get(cast<RankedTensorType>(all.getType()).getShape(), resultElement);
  auto bucketReduce = AllReduceOp::create(b, loc, allType, last.getGridAttr(),
                                          last.getGridAxesAttr(), all, last.getReductionAttr());
  if (Attribute gradients = last->getAttr(shardc::kGradientSyncAttr))
    bucketReduce->setAttr(shardc::kGradientSyncAttr, gradients);
  Value reduced = bucketReduce.getResult();
  int64_t offset = 0;
  for (AllReduceOp op : bucket.members) {
    auto type = cast<RankedTensorType>(op.getResult().getType());
    int64_t size = type.getNumElements();
    Value slice = tensor::ExtractSliceOp::create(
        b, loc, RankedTensorType::get({size}, resultElement), reduced, ValueRange{}, ValueRange{},
        ValueRange{}, b.getDenseI64ArrayAttr({offset}), b.getDenseI64ArrayAttr({size}),
        b.getDenseI64ArrayAttr({1}));
    op.getResult().replaceAllUsesWith(reshape(b, loc, slice, type));
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
    // Each block's own: the body's, and a pipeline stage's case (its layers'
    // gradients summed over the other axes after its schedule).
    SmallVector<Block *> blocks;
    fn.walk([&](Block *block) { blocks.push_back(block); });
    for (Block *block : blocks)
      bucketBlock(*block);
  }

  void bucketBlock(Block &body) {
    const int64_t limit = bucketBytes;
    SmallVector<Bucket> open, done;
    // A bucket is emitted where its last member is: it closes when a member's
    // result is read before the next all_reduce it could take (that reader
    // would then come before the bucket), or when it is full.
    for (Operation &op : body) {
      auto reduce = dyn_cast<AllReduceOp>(op);
      if (!reduce || !isa<RankedTensorType>(reduce.getInput().getType()))
        continue;
      auto *bucket = llvm::find_if(open, [&](Bucket &b) { return b.accepts(reduce); });
      if (bucket != open.end() &&
          ((bucket->firstReader && bucket->firstReader->isBeforeInBlock(reduce)) ||
           bucket->bytes + bytesOf(reduce) > limit)) {
        done.push_back(std::move(*bucket));
        open.erase(bucket);
        bucket = open.end();
      }
      if (bucket == open.end())
        bucket = &open.emplace_back();
      bucket->add(reduce, body);
    }
    for (Bucket &bucket : llvm::concat<Bucket>(done, open))
      emitBucket(bucket);
  }
};

} // namespace
