//===- MLIRGenGradients.cpp - the gradient's and optimizer's internal ops -===//
//
// The ops lib/Train appends that the language has no word for, as linalg
// structured ops the sharding models place. The convolution gradients are
// generics tagged with a `library_call` (conv2d_filter_grad,
// conv2d_input_grad) that shardc-lower-to-kernels turns into runtime calls:
//
//   filter  dw[kh,kw,c,f] = sum_{n,oh,ow} xpad[n, oh*s + kh, ow*s + kw, c] dy[n,oh,ow,f]
//   input   dx[n,i,j,c]   = sum_{kh,kw,f} dyp[n, i - kh + KH-1, j - kw + KW-1, f] w[kh,kw,c,f]
//
// where dyp is dy dilated by the stride (zeros between rows) and padded so
// that the input gradient is a stride-1 correlation with the flipped kernel,
// computed directly into dx (no slice, which has no sharding model).
//
//===----------------------------------------------------------------------===//

#include "MLIRGenImpl.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace shardc;

namespace {

double number(const Node &node, const char *name) { return std::get<double>(node.attrs.at(name)); }

} // namespace

/// Tags a convolution gradient's contraction for shardc-lower-to-kernels.
static Value tagged(Value contraction, StringRef libraryCall) {
  contraction.getDefiningOp<linalg::GenericOp>().setLibraryCall(libraryCall);
  return contraction;
}

Value MLIRGenImpl::conv2dFilterGrad(Value x, Value dy, const Node &node, Location at) {
  int64_t s = std::get<int64_t>(node.attrs.at("stride"));
  bool same = std::get<std::string>(node.attrs.at("padding")) == "SAME";
  RankedTensorType dw = tensorType(node.type);
  auto xType = cast<RankedTensorType>(x.getType());
  Value xpad = padSpatial(x, samePadding(xType, {dw.getDimSize(0), dw.getDimSize(1)}, s, same), at);
  MLIRContext *ctx = b.getContext();
  AffineExpr d[7];
  bindDims(ctx, d[0], d[1], d[2], d[3], d[4], d[5], d[6]); // kh kw c f n oh ow
  AffineMap xMap = AffineMap::get(7, 0, {d[4], d[5] * s + d[0], d[6] * s + d[1], d[2]}, ctx);
  AffineMap dyMap = AffineMap::get(7, 0, {d[4], d[5], d[6], d[3]}, ctx);
  return tagged(contract(xpad, dy, {xMap, dyMap}, dw, at), "conv2d_filter_grad");
}

/// dy [N, OH, OW, F] dilated by the stride (s - 1 zeros after each row and
/// column) and padded: row q of the result holds dy's row r at
/// q = r*s + K-1 - (the forward's low padding), so that the input gradient of a
/// KH x KW window is a stride-1 correlation over it. It is H + KH - 1 rows
/// long (W + KW - 1 columns), or longer when the stride exceeds the window:
/// the rows past that are dilation zeros that no window reads.
Value MLIRGenImpl::spreadCotangent(Value dy, RankedTensorType dx, int64_t kh, int64_t kw, int64_t s,
                                   bool same, Location at) {
  auto dyType = cast<RankedTensorType>(dy.getType());
  auto pads = samePadding(dx, {kh, kw}, s, same);
  // Dilate: [N,OH,OW,F] -> [N,OH,1,OW,1,F] -> padded to [N,OH,s,OW,s,F] -> [N,OH*s,OW*s,F].
  if (s > 1) {
    int64_t n = dyType.getDimSize(0), oh = dyType.getDimSize(1), ow = dyType.getDimSize(2),
            f = dyType.getDimSize(3);
    auto expanded = RankedTensorType::get({n, oh, 1, ow, 1, f}, b.getF32Type());
    SmallVector<ReassociationIndices> groups{{0}, {1, 2}, {3, 4}, {5}};
    Value spread = tensor::ExpandShapeOp::create(b, at, expanded, dy, groups);
    spread = padded(spread, {0, 0, 0, 0, 0, 0}, {0, 0, s - 1, 0, s - 1, 0}, at);
    dy = tensor::CollapseShapeOp::create(
        b, at, RankedTensorType::get({n, oh * s, ow * s, f}, b.getF32Type()), spread, groups);
    dyType = cast<RankedTensorType>(dy.getType());
  }
  // The low padding is never negative (SAME pads at most window - 1 low).
  SmallVector<int64_t> low{0, kh - 1 - pads[0].first, kw - 1 - pads[1].first, 0};
  SmallVector<int64_t> high{
      0, std::max<int64_t>(dx.getDimSize(1) + kh - 1 - low[1] - dyType.getDimSize(1), 0),
      std::max<int64_t>(dx.getDimSize(2) + kw - 1 - low[2] - dyType.getDimSize(2), 0), 0};
  return padded(dy, low, high, at);
}

Value MLIRGenImpl::conv2dInputGrad(Value dy, Value w, const Node &node, Location at) {
  int64_t s = std::get<int64_t>(node.attrs.at("stride"));
  bool same = std::get<std::string>(node.attrs.at("padding")) == "SAME";
  RankedTensorType dx = tensorType(node.type);
  auto wType = cast<RankedTensorType>(w.getType());
  int64_t kh = wType.getDimSize(0), kw = wType.getDimSize(1);
  Value dyp = spreadCotangent(dy, dx, kh, kw, s, same, at);

  MLIRContext *ctx = b.getContext();
  AffineExpr d[7];
  bindDims(ctx, d[0], d[1], d[2], d[3], d[4], d[5], d[6]); // n i j c kh kw f
  AffineMap dyMap =
      AffineMap::get(7, 0, {d[0], d[1] - d[4] + (kh - 1), d[2] - d[5] + (kw - 1), d[6]}, ctx);
  AffineMap wMap = AffineMap::get(7, 0, {d[4], d[5], d[3], d[6]}, ctx);
  return tagged(contract(dyp, w, {dyMap, wMap}, dx, at), "conv2d_input_grad");
}

/// The transpose of the forward's window sum, divided like it by k^2: each
/// input position gets the sum of dy over the windows that cover it, a
/// stride-1 correlation of the spread cotangent with a k x k window of ones
/// (per channel). Rows a VALID pool dropped get zero.
Value MLIRGenImpl::avgPoolGrad(Value dy, const Node &node, Location at) {
  int64_t k = std::get<int64_t>(node.attrs.at("window"));
  int64_t s = std::get<int64_t>(node.attrs.at("stride"));
  bool same = std::get<std::string>(node.attrs.at("padding")) == "SAME";
  RankedTensorType dx = tensorType(node.type);
  MLIRContext *ctx = b.getContext();
  float scale = 1.0f / static_cast<float>(k * k);
  auto dyType = cast<RankedTensorType>(dy.getType());
  // Windows that tile the input (W2's 2x2 pools): each input position is in
  // exactly one window, dx[n, i, j, c] = dy[n, i / k, j / k, c] / k^2, a
  // broadcast instead of a correlation over the spread and padded cotangent
  // (two buffers 4 times dy's, filled and copied into).
  if (k == s && dx.getDimSize(1) == dyType.getDimSize(1) * k &&
      dx.getDimSize(2) == dyType.getDimSize(2) * k) {
    AffineExpr n, i, j, c;
    bindDims(ctx, n, i, j, c);
    AffineMap dyMap = AffineMap::get(4, 0, {n, i.floorDiv(k), j.floorDiv(k), c}, ctx);
    SmallVector<utils::IteratorType> parallel(4, utils::IteratorType::parallel);
    return generic({dy}, {dyMap}, empty(dx.getShape(), b.getF32Type(), at),
                   b.getMultiDimIdentityMap(4), parallel, at,
                   [&](OpBuilder &n, Location l, ValueRange a) -> Value {
                     return arith::MulFOp::create(n, l, a[0], scalar(n.getF32Type(), scale, l));
                   });
  }
  Value dyp = spreadCotangent(dy, dx, k, k, s, same, at);

  AffineExpr d[6];
  bindDims(ctx, d[0], d[1], d[2], d[3], d[4], d[5]); // n i j c kh kw
  AffineMap dyMap =
      AffineMap::get(6, 0, {d[0], d[1] - d[4] + (k - 1), d[2] - d[5] + (k - 1), d[3]}, ctx);
  // The window's extent, as linalg's pooling ops take it: a shape-only operand.
  Value window = empty({k, k}, b.getF32Type(), at);
  AffineMap windowMap = AffineMap::get(6, 0, {d[4], d[5]}, ctx);
  SmallVector<utils::IteratorType> iterators(4, utils::IteratorType::parallel);
  iterators.append(2, utils::IteratorType::reduction);
  Value init = filled(dx.getShape(), b.getF32Type(), b.getF32FloatAttr(0), at);
  return generic({dyp, window}, {dyMap, windowMap}, init,
                 b.getMultiDimIdentityMap(6).getMajorSubMap(4), iterators, at,
                 [&](OpBuilder &n, Location l, ValueRange a) -> Value {
                   Value term = arith::MulFOp::create(n, l, a[0], scalar(n.getF32Type(), scale, l));
                   return arith::AddFOp::create(n, l, a[2], term);
                 });
}

Value MLIRGenImpl::emitGradientNode(const Node &node, std::vector<Value> &values) {
  Location at = loc(node.loc);
  auto operand = [&](unsigned i) { return valueOf(node.operands[i], values); };
  auto each = [&](BodyBuilder body) {
    return elementwise(node.operands, values, node.type, at, body);
  };
  auto f32 = [&](OpBuilder &n, double v, Location l) { return scalar(n.getF32Type(), v, l); };
  RankedTensorType type = tensorType(node.type);

  switch (node.op) {
  case OpKind::broadcast_over: {
    const auto &over = std::get<std::vector<std::string>>(node.attrs.at("over"));
    SmallVector<bool> missing;
    for (const Dim &d : node.type.dims)
      missing.push_back(llvm::is_contained(over, d.axis));
    double scale = number(node, "scale");
    return broadcastTo(operand(0), missing, type, at,
                       [&](OpBuilder &n, Location l, ValueRange a) -> Value {
                         if (scale == 1.0)
                           return a[0];
                         return arith::MulFOp::create(n, l, a[0], f32(n, scale, l));
                       });
  }
  case OpKind::relu_grad:
    return each([&](OpBuilder &n, Location l, ValueRange a) -> Value {
      Value zero = f32(n, 0, l);
      Value positive = arith::CmpFOp::create(n, l, arith::CmpFPredicate::OGT, a[0], zero);
      return arith::SelectOp::create(n, l, positive, a[1], zero);
    });
  case OpKind::embedding_grad: { // loops: the table's dims (vocab first), then ids' dims
    unsigned tableRank = type.getRank();
    unsigned idsRank = cast<RankedTensorType>(operand(0).getType()).getRank();
    unsigned loops = tableRank + idsRank;
    SmallVector<unsigned> idsDims = llvm::to_vector(llvm::seq<unsigned>(tableRank, loops));
    SmallVector<unsigned> oneHotDims = idsDims;
    oneHotDims.push_back(0);
    SmallVector<unsigned> dyDims = idsDims;
    llvm::append_range(dyDims, llvm::seq<unsigned>(1, tableRank));
    return contract(oneHot(operand(0), type.getShape()[0], at), operand(1),
                    {loopMap(oneHotDims, loops), loopMap(dyDims, loops)}, type, at);
  }
  case OpKind::gelu_grad: // dy (0.5 (1 + t) + 0.5 x (1 - t^2) du/dx), t = tanh(u)
    return each([&](OpBuilder &n, Location l, ValueRange a) -> Value {
      Value x = a[0], t = math::TanhOp::create(n, l, geluTanhArgument(n, l, x));
      Value x2 = arith::MulFOp::create(n, l, x, x);
      Value du = arith::MulFOp::create(
          n, l, f32(n, kGeluScale, l),
          arith::AddFOp::create(n, l, f32(n, 1, l),
                                arith::MulFOp::create(n, l, x2, f32(n, 3 * kGeluCubic, l))));
      Value onePlusT = arith::AddFOp::create(n, l, f32(n, 1, l), t);
      Value sech2 = arith::SubFOp::create(n, l, f32(n, 1, l), arith::MulFOp::create(n, l, t, t));
      Value slope = arith::AddFOp::create(
          n, l, onePlusT, arith::MulFOp::create(n, l, x, arith::MulFOp::create(n, l, sech2, du)));
      return arith::MulFOp::create(n, l, a[1], arith::MulFOp::create(n, l, f32(n, 0.5, l), slope));
    });
  case OpKind::matmul_grad_lhs: { // dy[m..., n...] . b[k, n...] -> [m..., k]
    unsigned lFree = type.getRank() - 1;
    unsigned rFree = cast<RankedTensorType>(operand(1).getType()).getRank() - 1;
    auto nLoops = llvm::seq<unsigned>(lFree + 1, lFree + 1 + rFree);
    SmallVector<unsigned> dyDims = llvm::to_vector(llvm::seq<unsigned>(0, lFree)), bDims{lFree};
    llvm::append_range(dyDims, nLoops);
    llvm::append_range(bDims, nLoops);
    unsigned loops = lFree + rFree + 1;
    return contract(operand(0), operand(1), {loopMap(dyDims, loops), loopMap(bDims, loops)}, type,
                    at);
  }
  case OpKind::matmul_grad_rhs: { // a[m..., k] . dy[m..., n...] -> [k, n...]
    unsigned rFree = type.getRank() - 1;
    unsigned lFree = cast<RankedTensorType>(operand(0).getType()).getRank() - 1;
    auto mLoops = llvm::seq<unsigned>(rFree + 1, rFree + 1 + lFree);
    SmallVector<unsigned> aDims = llvm::to_vector(mLoops), dyDims = llvm::to_vector(mLoops);
    aDims.push_back(0);
    llvm::append_range(dyDims, llvm::seq<unsigned>(1, rFree + 1));
    unsigned loops = lFree + rFree + 1;
    return contract(operand(0), operand(1), {loopMap(aDims, loops), loopMap(dyDims, loops)}, type,
                    at);
  }
  case OpKind::log_softmax_grad: { // dy - exp(y) sum(dy)
    SmallVector<bool> reduced = axesNamed(node.type, attr<std::vector<std::string>>(node, "over"));
    return broadcastReduced({operand(0), operand(1)}, sumOver(operand(1), reduced, at), reduced, at,
                            [](OpBuilder &n, Location l, ValueRange a) -> Value {
                              Value p = math::ExpOp::create(n, l, a[0]);
                              return arith::SubFOp::create(n, l, a[1],
                                                           arith::MulFOp::create(n, l, p, a[2]));
                            });
  }
  case OpKind::softmax_grad: { // y (dy - sum(dy y))
    SmallVector<bool> reduced = axesNamed(node.type, attr<std::vector<std::string>>(node, "over"));
    Value dot = sumOver({operand(0), operand(1)}, reduced, at);
    return broadcastReduced({operand(0), operand(1)}, dot, reduced, at,
                            [](OpBuilder &n, Location l, ValueRange a) -> Value {
                              Value centered = arith::SubFOp::create(n, l, a[1], a[2]);
                              return arith::MulFOp::create(n, l, a[0], centered);
                            });
  }
  case OpKind::top_k_mask:
    return topKMask(operand(0), node, at);
  case OpKind::softmax_cross_entropy_grad: { // (softmax(z) sum(labels) - labels) dy
    Value probs = logSoftmax(operand(0), lastAxis(operand(0)), at, /*softmax=*/true);
    Value labelMass = sumOver(operand(1), lastAxis(operand(1)), at);
    unsigned rank = type.getRank();
    AffineMap identity = b.getMultiDimIdentityMap(rank), rows = identity.dropResult(rank - 1);
    SmallVector<utils::IteratorType> iterators(rank, utils::IteratorType::parallel);
    return generic({probs, operand(1), labelMass, operand(2)}, {identity, identity, rows, rows},
                   empty(type.getShape(), b.getF32Type(), at), identity, iterators, at,
                   [](OpBuilder &n, Location l, ValueRange a) -> Value {
                     Value predicted = arith::MulFOp::create(n, l, a[0], a[2]);
                     Value diff = arith::SubFOp::create(n, l, predicted, a[1]);
                     return arith::MulFOp::create(n, l, diff, a[3]);
                   });
  }
  case OpKind::conv2d_input_grad:
    return conv2dInputGrad(operand(0), operand(1), node, at);
  case OpKind::conv2d_filter_grad:
    return conv2dFilterGrad(operand(0), operand(1), node, at);
  case OpKind::avg_pool_grad:
    return avgPoolGrad(operand(0), node, at);
  case OpKind::to_f32:
    return each([&](OpBuilder &n, Location l, ValueRange a) -> Value {
      if (a[0].getType().isInteger(1))
        return arith::UIToFPOp::create(n, l, n.getF32Type(), a[0]);
      return arith::SIToFPOp::create(n, l, n.getF32Type(), a[0]);
    });

  // The optimizers.
  case OpKind::learning_rate: // optax's warmup_cosine_decay_schedule at update step - 1
    return each([&](OpBuilder &n, Location l, ValueRange a) -> Value {
      double peak = number(node, "peak"), warmup = number(node, "warmup"),
             decaySteps = number(node, "decay_steps"), end = number(node, "end");
      Value count = arith::SubFOp::create(n, l, a[0], f32(n, 1, l));
      Value rising = arith::MulFOp::create(n, l, count, f32(n, warmup > 0 ? peak / warmup : 0, l));
      Value lr = f32(n, peak, l);
      if (decaySteps > warmup) { // end + (peak - end) (1 + cos(pi min(t, T) / T)) / 2
        double span = decaySteps - warmup;
        Value t = arith::MinimumFOp::create(
            n, l, arith::SubFOp::create(n, l, count, f32(n, warmup, l)), f32(n, span, l));
        Value cosine = math::CosOp::create(
            n, l, arith::MulFOp::create(n, l, t, f32(n, llvm::numbers::pi / span, l)));
        Value half = arith::MulFOp::create(n, l, arith::AddFOp::create(n, l, cosine, f32(n, 1, l)),
                                           f32(n, 0.5 * (peak - end), l));
        lr = arith::AddFOp::create(n, l, half, f32(n, end, l));
      }
      Value warming =
          arith::CmpFOp::create(n, l, arith::CmpFPredicate::OLT, count, f32(n, warmup, l));
      return arith::SelectOp::create(n, l, warming, rising, lr);
    });
  case OpKind::finite_zero: // the sum of g * 0 over every axis: 0 where every g is
                            // finite, NaN elsewhere. One reduction, which
                            // shardc-fuse-reduce-scatter sums slice by slice under
                            // FSDP. (An annotation of g as its parameter is split
                            // spreads back into the backward pass: W4 under FSDP
                            // then all-to-alls every activation gradient.)
    return reduce(
        operand(0), SmallVector<bool>(steps.graph.nodes[node.operands[0]].type.dims.size(), true),
        cast<TypedAttr>(b.getZeroAttr(b.getF32Type())), at,
        [&](OpBuilder &n, Location l, ValueRange a) -> Value {
          return arith::AddFOp::create(n, l, a[1], arith::MulFOp::create(n, l, a[0], f32(n, 0, l)));
        });
  case OpKind::clip_scale: // clip / max(sqrt(sum of squares), clip)
    return each([&](OpBuilder &n, Location l, ValueRange a) -> Value {
      Value clip = f32(n, number(node, "clip"), l);
      Value norm = math::SqrtOp::create(n, l, a[0]);
      return arith::DivFOp::create(n, l, clip, arith::MaximumFOp::create(n, l, norm, clip));
    });
  case OpKind::sgd_update: // p - lr g
    return each([&](OpBuilder &n, Location l, ValueRange a) -> Value {
      return arith::SubFOp::create(n, l, a[0], arith::MulFOp::create(n, l, a[1], a[2]));
    });
  case OpKind::momentum_trace: // g + beta t
    return each([&](OpBuilder &n, Location l, ValueRange a) -> Value {
      Value decayed = arith::MulFOp::create(n, l, a[0], f32(n, number(node, "beta"), l));
      return arith::AddFOp::create(n, l, a[1], decayed);
    });
  case OpKind::adam_mu:
  case OpKind::adam_nu: // beta m + (1 - beta) g (or g^2)
    return each([&](OpBuilder &n, Location l, ValueRange a) -> Value {
      double beta = number(node, "beta");
      Value g =
          node.op == OpKind::adam_mu ? a[1] : arith::MulFOp::create(n, l, a[1], a[1]).getResult();
      Value kept = arith::MulFOp::create(n, l, a[0], f32(n, beta, l));
      Value added = arith::MulFOp::create(n, l, g, f32(n, 1.0 - beta, l));
      return arith::AddFOp::create(n, l, kept, added);
    });
  case OpKind::adam_bias_correction: // 1 - beta^step
    return each([&](OpBuilder &n, Location l, ValueRange a) -> Value {
      Value power = math::PowFOp::create(n, l, f32(n, number(node, "beta"), l), a[0]);
      return arith::SubFOp::create(n, l, f32(n, 1, l), power);
    });
  case OpKind::adam_update: // p - lr ((mu / c1) / (sqrt(nu / c2) + eps) + weight_decay p)
    return each([&](OpBuilder &n, Location l, ValueRange a) -> Value {
      Value mu = arith::DivFOp::create(n, l, a[1], a[3]);
      Value nu = arith::DivFOp::create(n, l, a[2], a[4]);
      Value denominator = arith::AddFOp::create(n, l, math::SqrtOp::create(n, l, nu),
                                                f32(n, number(node, "eps"), l));
      Value direction = arith::DivFOp::create(n, l, mu, denominator);
      if (double decay = number(node, "weight_decay"))
        direction = arith::AddFOp::create(n, l, direction,
                                          arith::MulFOp::create(n, l, a[0], f32(n, decay, l)));
      return arith::SubFOp::create(n, l, a[0], arith::MulFOp::create(n, l, direction, a[5]));
    });

  case OpKind::keep_if_finite: // the update where the step's health h is finite, else
                               // the value before it: h - h is 0 unless h is inf or NaN
    return each([&](OpBuilder &n, Location l, ValueRange a) -> Value {
      Value zero = arith::SubFOp::create(n, l, a[2], a[2]);
      Value finite = arith::CmpFOp::create(n, l, arith::CmpFPredicate::OEQ, zero, f32(n, 0, l));
      return arith::SelectOp::create(n, l, finite, a[0], a[1]);
    });

  default: // emitNode handles the forward ops
    break;
  }
  error(node.loc, "internal error: '" + opName(node.op) + "' is no gradient or update op");
  return {};
}
