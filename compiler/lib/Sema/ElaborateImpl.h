//===- ElaborateImpl.h - the elaborator shared by Sema's files --*- C++ -*-===//
//
// Elaboration evaluates the model's statements in order. An expression
// evaluates to a compile-time scalar, an axis name, a shape, a block instance
// or a tensor; a tensor is a node appended to a graph, typed by OpTyping.
// There are two ways in: evalConstant for the values that must be known at
// compile time (sizes, initialiser arguments), where a tensor is an error,
// and evalInGraph, which also builds tensors into a graph.
//
//   Sema.cpp         the blocks of loaded files, then the elaborator's entry
//   Elaborate.cpp    the model: inputs, lets, loss, metrics, optimizer
//   ConstEval.cpp    compile-time values: names, numbers, shapes, axes, types
//   TensorExpr.cpp   the tensor graph of an expression
//   Instantiate.cpp  calls: arguments, block instances and their forward
//                    functions, parameters, scan stacking
//
// Errors poison the value (Value::None) so one mistake reports once.
//
//===----------------------------------------------------------------------===//

#ifndef SHARDC_LIB_SEMA_ELABORATEIMPL_H
#define SHARDC_LIB_SEMA_ELABORATEIMPL_H

#include "shardc/Sema/Builtins.h"
#include "shardc/Sema/Sema.h"
#include "shardc/Support/NearestName.h"

#include "llvm/ADT/STLFunctionalExtras.h"

#include <set>

namespace shardc {
struct OpArg;
} // namespace shardc

namespace shardc::sema {

struct Instance;

struct Value {
  enum Kind {
    None,
    Tensor,
    Int,
    Float,
    Bool,
    String,
    Axis,
    Shape,
    InstanceRef,
    BlockRef,
    BuiltinRef
  };
  Kind kind = None;
  unsigned node = 0; // Tensor
  int64_t intValue = 0;
  double floatValue = 0;
  bool boolValue = false;
  std::string text;       // String, Axis
  std::vector<Dim> shape; // Shape; size -1 when not given
  Instance *instance = nullptr;
  const BlockAST *block = nullptr;
  const Builtin *builtin = nullptr;

  bool ok() const { return kind != None; }
  bool isNumber() const { return kind == Int || kind == Float; }
  static Value tensor(unsigned node) {
    Value v;
    v.kind = Tensor;
    v.node = node;
    return v;
  }
};

/// `an int`, `a tensor`, ...: for diagnostics.
std::string describeKind(const Value &v);
ArgKind argKindOf(ScalarKind kind);

/// Axis sizes known in one scope (a block instance or the model), with where
/// each was learnt.
struct AxisEnv {
  std::map<std::string, std::pair<int64_t, SMRange>> sizes;
};

/// A block applied to config values. Elaborated at its first call.
struct Instance {
  const BlockAST *block = nullptr;
  std::string path; // empty until named by a let or first call
  std::map<std::string, Value> config;
  std::map<std::string, std::string> axisParams; // axis parameter -> logical axis ("" unbound)
  AxisEnv axes;
  int64_t scanLength = 0;

  bool elaborated = false;
  std::vector<TensorType> argTypes;
  SMRange firstCall;
  std::map<std::string, Value> members; // sub-instances and parameters
  std::map<const Expr *, Instance *> inlineInstances;
  std::map<std::string, unsigned> autoNames;
  // scan
  std::shared_ptr<Graph> scanBody;
  std::vector<unsigned> scanOperands;
};

/// Where nodes go. Inside a scan body, parameters become body arguments and
/// the outer context gets the stacked parameter.
struct GraphContext {
  Graph *graph;
  GraphContext *outer = nullptr;
  int64_t scanLength = 0;
  std::vector<unsigned> *scanOperands = nullptr;
};

/// Names visible while evaluating: a model's or one block instance's.
struct Scope {
  std::map<std::string, Value> names;
  Instance *owner; // inline instances are cached here
  AxisEnv *axes;
  std::map<std::string, std::string> *axisParams; // null in the model
};

/// Evaluates an expression that may be either kind of value, a call
/// argument or a config value: evalConstant, or evalInGraph into one graph.
using Evaluator = llvm::function_ref<Value(const Expr &, Scope &)>;

/// Elaborates one model into a TypedProgram; owns the block instances it
/// creates on the way.
class Elaborator {
public:
  Elaborator(DiagnosticEngine &diags, const BlockTable &blocks, TypedProgram &program,
             llvm::ArrayRef<ConfigOverride> overrides = {})
      : diags(diags), blocks(blocks), program(program), overrides(overrides) {}

  /// Elaborates `model` into the program. Returns false after reporting errors.
  bool elaborateModel(const ModelAST &model);

  /// The inputs' first axis is `microbatches.count` times smaller than written.
  void splitInputs(const Microbatches &microbatches) { inputSplit = microbatches; }

private:
  // ---- the model (Elaborate.cpp)
  void let(const LetAST &let, Scope &scope, GraphContext &ctx, const std::string &prefix);

  // ---- compile-time values (ConstEval.cpp)
  /// Evaluates a value known at compile time; a tensor there is an error.
  Value evalConstant(const Expr &expr, Scope &scope);
  Value evalConstantCall(const CallExpr &call, Scope &scope);
  Value evalName(const NameExpr &name, Scope &scope);
  std::string suggest(llvm::StringRef name, const Scope &scope);
  /// `-v` where v is no tensor: numbers negate, anything else is an error.
  Value negateConstant(Value v, SMRange range);
  /// Reports an operand of `bin` that is neither a tensor nor a number.
  bool checkArithmeticOperand(const BinaryExpr &bin, const Expr &operand, const Value &v);
  /// Compile-time arithmetic on two numbers: `depth * 4`.
  Value foldArithmetic(const BinaryExpr &bin, const Value &lhs, const Value &rhs);
  Value evalShape(const std::vector<DimAST> &dims, Scope &scope);
  std::optional<int64_t> evalSize(const Expr &expr, Scope &scope);
  std::optional<std::string> resolveAxisName(const std::string &name, SMRange range, Scope &scope);
  std::optional<TensorType> resolveType(const TensorTypeAST &type, Scope &scope,
                                        llvm::StringRef what, bool isModelInput = false);
  /// A size written for the axis the microbatches split, divided by their number.
  std::optional<int64_t> splitSize(const std::string &axis, int64_t size, SMRange range,
                                   llvm::StringRef what);
  auto constantEvaluator() {
    return [this](const Expr &expr, Scope &scope) { return evalConstant(expr, scope); };
  }

  // ---- tensors (TensorExpr.cpp)
  /// Evaluates any value; a tensor's operations are appended to ctx's graph.
  Value evalInGraph(const Expr &expr, Scope &scope, GraphContext &ctx);
  Value evalCallInGraph(const CallExpr &call, Scope &scope, GraphContext &ctx);
  Value evalNegInGraph(const NegExpr &neg, Scope &scope, GraphContext &ctx);
  Value evalBinaryInGraph(const BinaryExpr &bin, Scope &scope, GraphContext &ctx);
  Value scalarToTensor(const Value &v, DType dtype, SMRange range, GraphContext &ctx);
  Value callBuiltin(const Builtin &builtin, const CallExpr &call, Scope &scope, GraphContext &ctx);
  bool promoteNumberBranches(std::vector<OpArg> &args, std::vector<Value> &values,
                             GraphContext &ctx);
  /// Reports a tensor of more than kMaxTensorElements elements at `at`.
  bool checkSize(const TensorType &type, SMRange at);
  /// An operation's result: within the size limit, each axis once.
  bool checkResult(const TensorType &type, SMRange at, llvm::StringRef op);
  auto graphEvaluator(GraphContext &ctx) {
    return [this, &ctx](const Expr &expr, Scope &scope) { return evalInGraph(expr, scope, ctx); };
  }
  const TensorType &typeOf(const GraphContext &ctx, unsigned node) {
    return ctx.graph->nodes[node].type;
  }

  // ---- calls (Instantiate.cpp)
  std::optional<std::vector<std::pair<const SignatureParam *, const Expr *>>>
  bindArguments(llvm::StringRef callee, const std::vector<SignatureParam> &signature,
                const std::vector<Argument> &args, SMRange call);
  Value evalArgument(const SignatureParam &param, const Expr *expr, Scope &scope,
                     Evaluator evaluate, SMRange call);
  Value reportNotCallable(const CallExpr &call, const Value &callee);
  Value instantiate(const BlockAST &block, const CallExpr &call, Scope &scope, Evaluator evaluate);
  /// `scan(block, length)`: a copy of a fresh instance whose parameters are
  /// stacked `length` times.
  Value scanInstance(const CallExpr &call, const Instance &inner, int64_t length);
  Value callInstance(Instance &inst, const CallExpr &call, Scope &scope, GraphContext &ctx);
  std::optional<unsigned> inlineForward(Instance &inst, const std::vector<unsigned> &args,
                                        GraphContext &ctx, SMRange call);
  std::optional<unsigned> inlineForwardBody(Instance &inst, const std::vector<unsigned> &args,
                                            GraphContext &ctx, SMRange call);
  /// A forward function's `loss NAME = e` or `metric NAME = e`: an f32[] node
  /// recorded in ctx's graph under the instance's path.
  void addBlockTerm(const Instance &inst, const BlockTermAST &term, Scope &scope,
                    GraphContext &ctx);
  bool bindForwardArgs(Instance &inst, const std::vector<TensorType> &types,
                       const std::vector<Argument> &args);
  void createMembers(Instance &inst, GraphContext &ctx);
  /// A parameter or a synthetic input: a leaf of the model's graph, declared
  /// with its type; in a scan body, an argument whose stack, the leaf with a
  /// leading `layer` dimension, the scan takes from the enclosing graph.
  unsigned makeLeaf(GraphContext &ctx, const Node &leaf,
                    llvm::function_ref<void(const TensorType &)> declare);
  unsigned makeParam(GraphContext &ctx, const std::string &path, const TensorType &type,
                     const Initializer &init, SMRange loc);
  /// A dropout's uniform numbers, the input `dropout.K` of the dropped
  /// tensor's type; in a scan body each layer gets its own.
  unsigned makeDropoutUniforms(GraphContext &ctx, const TensorType &type, SMRange loc);
  std::optional<Initializer> evalInitializer(const ParamDeclAST &decl, const TensorType &type,
                                             Scope &scope);
  Scope instanceScope(Instance &inst);

  DiagnosticEngine &diags;
  const BlockTable &blocks;
  TypedProgram &program;
  std::vector<std::unique_ptr<Instance>> instances;
  Instance modelOwner;
  std::set<std::string> usedPaths;
  std::optional<Microbatches> inputSplit;
  llvm::ArrayRef<ConfigOverride> overrides; // --set, for the model's config

  /// A config parameter's value from --set (its text parsed as `param`'s kind), or
  /// None after an error at the value.
  Value overriddenConfig(const ConfigParamAST &param, const ConfigOverride &set);
  /// Errors for --set names that are no config parameter of `model`.
  void checkOverridesUsed(const ModelAST &model);
  /// The model's `generate` declaration (Generate.cpp), once its values are known.
  void elaborateGenerate(const ModelAST &model, const Scope &scope);
  std::vector<const BlockAST *> elaborating; // blocks whose forward is being inlined
  unsigned numDropouts = 0;                  // K of the next `dropout.K`
};

} // namespace shardc::sema

#endif
