//===- MLIRGenImpl.h - the emitter shared by MLIRGen's files ----*- C++ -*-===//
//
// MLIRGen.cpp emits the functions and the language's operations,
// MLIRGenGradients.cpp the internal operations of the gradient and the
// optimizer (lib/Train).
//
//===----------------------------------------------------------------------===//

#ifndef SHARDC_LIB_MLIRGEN_MLIRGENIMPL_H
#define SHARDC_LIB_MLIRGEN_MLIRGENIMPL_H

#include "shardc/MLIRGen/MLIRGen.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Utils/StructuredOpsUtils.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/Support/MathExtras.h"

#include <array>

namespace shardc {

/// A node's attribute `name` of kind T.
template <typename T> const T &attr(const Node &node, const char *name) {
  return std::get<T>(node.attrs.at(name));
}

/// Builds the body of a linalg.generic from its block arguments.
using BodyBuilder =
    llvm::function_ref<mlir::Value(mlir::OpBuilder &, mlir::Location, mlir::ValueRange)>;

class MLIRGenImpl {
public:
  MLIRGenImpl(mlir::MLIRContext &context, const TypedProgram &program, const StepProgram &steps,
              DiagnosticEngine &diags, const MLIRGenOptions &options)
      : program(program), steps(steps), diags(diags), options(options), b(&context) {}

  mlir::OwningOpRef<mlir::ModuleOp> run();

private:
  const TypedProgram &program;
  const StepProgram &steps;
  DiagnosticEngine &diags;
  const MLIRGenOptions &options;
  mlir::OpBuilder b;
  bool failed = false;

  // Locations and types.
  mlir::Location loc(SMRange range);
  mlir::Type elementType(DType dtype);
  mlir::RankedTensorType tensorType(const TensorType &type);
  void error(SMRange range, const llvm::Twine &message);

  mlir::Value annotate(mlir::Value value, const Sharding &sharding, mlir::Location at);
  mlir::ArrayAttr axisRules();
  mlir::ArrayAttr transfersAttr(const std::vector<PipelineTransfer> &transfers);
  mlir::DictionaryAttr pipelineAttr(const PipelineSteps &pipeline);
  mlir::Value constrain(mlir::Value value, const Sharding &sharding, mlir::Location at);

  // Functions.
  bool emitFunction(mlir::ModuleOp module, const StepFunction &function);
  mlir::Value valueOf(unsigned id, std::vector<mlir::Value> &values);
  mlir::Value emitNode(const Node &node, std::vector<mlir::Value> &values);
  mlir::Value emitGradientNode(const Node &node, std::vector<mlir::Value> &values);

  // Building blocks.
  mlir::Value empty(llvm::ArrayRef<int64_t> shape, mlir::Type element, mlir::Location at);
  mlir::Value filled(llvm::ArrayRef<int64_t> shape, mlir::Type element, mlir::TypedAttr value,
                     mlir::Location at);
  mlir::Value scalar(mlir::Type type, double value, mlir::Location at);
  mlir::Value generic(mlir::ValueRange inputs, llvm::ArrayRef<mlir::AffineMap> inputMaps,
                      mlir::Value init, mlir::AffineMap initMap,
                      llvm::ArrayRef<mlir::utils::IteratorType> iterators, mlir::Location at,
                      BodyBuilder body);
  mlir::Value elementwise(llvm::ArrayRef<unsigned> operands, llvm::ArrayRef<mlir::Value> values,
                          const TensorType &resultType, mlir::Location at, BodyBuilder body);
  mlir::Value map(mlir::ValueRange inputs, mlir::Type resultElement, mlir::Location at,
                  BodyBuilder body);
  mlir::Value reduce(mlir::ValueRange inputs, llvm::ArrayRef<bool> reduced, mlir::TypedAttr init,
                     mlir::Location at, BodyBuilder combine);
  llvm::SmallVector<bool> lastAxis(mlir::Value x);
  llvm::SmallVector<bool> axesNamed(const TensorType &type, const std::vector<std::string> &over);
  mlir::Value broadcastReduced(mlir::ValueRange full, mlir::Value reducedValue,
                               llvm::ArrayRef<bool> reduced, mlir::Location at, BodyBuilder body);
  mlir::Value broadcastTo(mlir::Value x, llvm::ArrayRef<bool> missing, mlir::RankedTensorType to,
                          mlir::Location at, BodyBuilder body);
  /// The sum over the `reduced` dims of the inputs' product.
  mlir::Value sumOver(mlir::ValueRange inputs, llvm::ArrayRef<bool> reduced, mlir::Location at);
  /// The largest (or smallest) element over the `reduced` dims.
  mlir::Value extremum(mlir::Value x, llvm::ArrayRef<bool> reduced, bool largest,
                       mlir::Location at);
  /// GPT-2's gelu: 0.5 x (1 + tanh(u)), u = kGeluScale (x + kGeluCubic x^3).
  static constexpr double kGeluScale = llvm::numbers::sqrt2 * llvm::numbers::inv_sqrtpi;
  static constexpr double kGeluCubic = 0.044715;
  /// u, in a body.
  mlir::Value geluTanhArgument(mlir::OpBuilder &n, mlir::Location at, mlir::Value x);
  mlir::Value padded(mlir::Value x, llvm::ArrayRef<int64_t> low, llvm::ArrayRef<int64_t> high,
                     mlir::Location at);

  // Operations.
  mlir::AffineMap loopMap(llvm::ArrayRef<unsigned> dims, unsigned loops);
  mlir::Value contract(mlir::Value lhs, mlir::Value rhs, llvm::ArrayRef<mlir::AffineMap> maps,
                       mlir::RankedTensorType result, mlir::Location at);
  mlir::Value oneHot(mlir::Value ids, int64_t classes, mlir::Location at);
  mlir::Value matmul(mlir::Value lhs, mlir::Value rhs, mlir::RankedTensorType result,
                     mlir::Location at);
  mlir::Value contractByName(mlir::Value lhs, mlir::Value rhs, const TensorType &lhsType,
                             const TensorType &rhsType, const TensorType &resultType,
                             mlir::Location at);
  mlir::Value logSoftmax(mlir::Value x, llvm::ArrayRef<bool> reduced, mlir::Location at,
                         bool softmax);
  mlir::Value argmax(mlir::Value x, mlir::Location at);
  mlir::Value cumsum(mlir::Value x, const Node &node, mlir::Location at);
  mlir::Value topKMask(mlir::Value x, const Node &node, mlir::Location at);
  mlir::Value topK(mlir::Value x, const TensorType &xType, const Node &node, mlir::Location at);
  mlir::Value conv2d(mlir::Value x, mlir::Value w, const Node &node, mlir::Location at);
  mlir::Value avgPool(mlir::Value x, const Node &node, mlir::Location at);
  /// SAME padding of NHWC height and width for a window of that height and
  /// width, as XLA: (low, high) per spatial dim.
  std::array<std::pair<int64_t, int64_t>, 2>
  samePadding(mlir::RankedTensorType x, std::array<int64_t, 2> window, int64_t stride, bool same);
  mlir::Value padSpatial(mlir::Value x, std::array<std::pair<int64_t, int64_t>, 2> pads,
                         mlir::Location at);
  mlir::Value reshapeTo(mlir::Value x, mlir::RankedTensorType to, mlir::Location at);

  // Gradients.
  mlir::Value spreadCotangent(mlir::Value dy, mlir::RankedTensorType dx, int64_t kh, int64_t kw,
                              int64_t stride, bool same, mlir::Location at);
  mlir::Value conv2dInputGrad(mlir::Value dy, mlir::Value w, const Node &node, mlir::Location at);
  mlir::Value conv2dFilterGrad(mlir::Value x, mlir::Value dy, const Node &node, mlir::Location at);
  mlir::Value avgPoolGrad(mlir::Value dy, const Node &node, mlir::Location at);
};

} // namespace shardc

#endif
