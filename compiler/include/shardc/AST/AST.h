//===- AST.h - abstract syntax of model files -------------------*- C++ -*-===//
//
// The AST of a model file (*.shard), built from the ANTLR parse tree. Every
// node keeps its source range; nothing here knows about shapes or MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef SHARDC_AST_AST_H
#define SHARDC_AST_AST_H

#include "shardc/Support/Diagnostics.h"

#include "llvm/Support/Casting.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace shardc {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

/// One dimension of a shape: a logical axis name and an optional size.
struct DimAST {
  std::string name;
  SMRange range;
  ExprPtr size; // null when the size comes from elsewhere
};

enum class DType { F32, I32, Bool };
llvm::StringRef dtypeName(DType dtype);

struct TensorTypeAST {
  DType dtype = DType::F32;
  std::vector<DimAST> dims;
  SMRange range;
};

/// One kind per subclass of Expr, which its classof tests.
enum class ExprKind { Name, Int, Float, String, Bool, Shape, Call, Neg, Binary };
enum class BinaryOp { MatMul, Mul, Div, Add, Sub, Eq, Ne, Lt, Le, Gt, Ge };
llvm::StringRef binaryOpSpelling(BinaryOp op);

/// An expression. Its subclass follows `kind`: test and convert with
/// llvm::isa, cast and dyn_cast, which work without C++ RTTI.
struct Expr {
  Expr(ExprKind kind, SMRange range) : kind(kind), range(range) {}
  virtual ~Expr() = default;
  const ExprKind kind;
  SMRange range;
};

struct NameExpr : Expr {
  NameExpr(SMRange r, std::string name) : Expr(ExprKind::Name, r), name(std::move(name)) {}
  static bool classof(const Expr *expr) { return expr->kind == ExprKind::Name; }
  std::string name;
};
struct IntExpr : Expr {
  IntExpr(SMRange r, int64_t value) : Expr(ExprKind::Int, r), value(value) {}
  static bool classof(const Expr *expr) { return expr->kind == ExprKind::Int; }
  int64_t value;
};
struct FloatExpr : Expr {
  FloatExpr(SMRange r, double value) : Expr(ExprKind::Float, r), value(value) {}
  static bool classof(const Expr *expr) { return expr->kind == ExprKind::Float; }
  double value;
};
struct StringExpr : Expr {
  StringExpr(SMRange r, std::string value) : Expr(ExprKind::String, r), value(std::move(value)) {}
  static bool classof(const Expr *expr) { return expr->kind == ExprKind::String; }
  std::string value;
};
struct BoolExpr : Expr {
  BoolExpr(SMRange r, bool value) : Expr(ExprKind::Bool, r), value(value) {}
  static bool classof(const Expr *expr) { return expr->kind == ExprKind::Bool; }
  bool value;
};
/// `[a, b = 2]` used as a value: axis lists and target shapes of builtins.
struct ShapeExpr : Expr {
  ShapeExpr(SMRange r, std::vector<DimAST> dims)
      : Expr(ExprKind::Shape, r), dims(std::move(dims)) {}
  static bool classof(const Expr *expr) { return expr->kind == ExprKind::Shape; }
  std::vector<DimAST> dims;
};
struct Argument {
  std::string name; // empty when positional
  SMRange nameRange;
  ExprPtr value;
};
struct CallExpr : Expr {
  CallExpr(SMRange r, ExprPtr callee, std::vector<Argument> args)
      : Expr(ExprKind::Call, r), callee(std::move(callee)), args(std::move(args)) {}
  static bool classof(const Expr *expr) { return expr->kind == ExprKind::Call; }
  ExprPtr callee;
  std::vector<Argument> args;
};
struct NegExpr : Expr {
  NegExpr(SMRange r, ExprPtr operand) : Expr(ExprKind::Neg, r), operand(std::move(operand)) {}
  static bool classof(const Expr *expr) { return expr->kind == ExprKind::Neg; }
  ExprPtr operand;
};
struct BinaryExpr : Expr {
  BinaryExpr(SMRange r, BinaryOp op, SMRange opRange, ExprPtr lhs, ExprPtr rhs)
      : Expr(ExprKind::Binary, r), op(op), opRange(opRange), lhs(std::move(lhs)),
        rhs(std::move(rhs)) {}
  static bool classof(const Expr *expr) { return expr->kind == ExprKind::Binary; }
  BinaryOp op;
  SMRange opRange;
  ExprPtr lhs, rhs;
};

/// Compile-time parameter of a block or model: `depth: int = 1024`.
enum class ScalarKind { Int, Float, Bool, String, Axis };
llvm::StringRef scalarKindName(ScalarKind kind);

struct ConfigParamAST {
  std::string name;
  SMRange range;
  ScalarKind kind = ScalarKind::Int;
  ExprPtr defaultValue; // may be null
};

struct ParamDeclAST {
  std::string name;
  SMRange range;
  TensorTypeAST type;
  ExprPtr init; // may be null: the default initialiser
};

struct LetAST {
  std::string name;
  SMRange range;
  ExprPtr value;
  std::optional<std::vector<DimAST>> constraint; // `: [a, b]`
  SMRange constraintRange;
};

struct ArgDeclAST {
  std::string name;
  SMRange range;
  TensorTypeAST type;
};

/// `loss NAME = e` or `metric NAME = e` in a block's forward function: an
/// auxiliary loss term or a metric of each instance (Flax's `sow`).
struct BlockTermAST {
  bool isLoss = false;
  std::string name;
  SMRange range;
  ExprPtr value;
  size_t afterLets = 0; // how many of the forward's lets come before it
};

struct ForwardAST {
  SMRange range;
  std::vector<ArgDeclAST> args;
  TensorTypeAST result;
  std::vector<LetAST> lets;
  std::vector<BlockTermAST> terms;
  ExprPtr resultValue;
  SMRange returnRange;
};

struct BlockAST {
  std::string name;
  SMRange range;
  std::vector<ConfigParamAST> config;
  std::vector<ParamDeclAST> params;
  std::vector<LetAST> lets;                 // sub-block instances
  std::vector<ForwardAST> forwards;         // sema checks there is exactly one
  std::vector<BlockTermAST> misplacedTerms; // outside the forward: sema reports them
};

struct InputAST {
  std::string name;
  SMRange range;
  TensorTypeAST type;
};

struct MetricAST {
  std::string name;
  SMRange range;
  ExprPtr value;
};

struct OptimizerAST {
  std::string name;
  SMRange range;
  std::vector<Argument> args;
};

/// `generate INPUT ~ LOGITS`: the input that --generate fills one position at a
/// time, and the model's value that scores each position's successor.
struct GenerateAST {
  std::string input, logits;
  SMRange range, inputRange, logitsRange;
};

/// Statements of a model in source order (`loss` may refer to lets before it).
struct ModelAST {
  std::string name;
  SMRange range;
  std::vector<ConfigParamAST> config;
  std::vector<InputAST> inputs;
  std::vector<LetAST> lets;
  std::vector<std::pair<SMRange, ExprPtr>> losses; // sema checks exactly one
  std::vector<SMRange> namedLosses;                // `loss NAME = e`, a block's: sema reports them
  std::vector<MetricAST> metrics;
  std::vector<OptimizerAST> optimizers; // sema checks at most one
  std::vector<GenerateAST> generates;   // sema checks at most one
};

struct ImportAST {
  std::string module; // `a.b`
  SMRange range;
};

struct ModuleAST {
  std::string path;
  unsigned buffer = 0;
  std::vector<ImportAST> imports;
  std::vector<BlockAST> blocks;
  std::vector<ModelAST> models;
};

/// Prints an expression or a shape back as source text, fully parenthesised.
std::string printExpr(const Expr &expr);
std::string printShape(const std::vector<DimAST> &dims);

} // namespace shardc

#endif
