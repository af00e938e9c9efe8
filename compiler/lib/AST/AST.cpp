//===- AST.cpp - names and expression printing ----------------------------===//

#include "shardc/AST/AST.h"
#include "shardc/AST/RulesAST.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

using namespace shardc;

llvm::StringRef shardc::dtypeName(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return "f32";
  case DType::I32:
    return "i32";
  case DType::Bool:
    return "bool";
  }
  return "?";
}

llvm::StringRef shardc::scalarKindName(ScalarKind kind) {
  switch (kind) {
  case ScalarKind::Int:
    return "int";
  case ScalarKind::Float:
    return "float";
  case ScalarKind::Bool:
    return "bool";
  case ScalarKind::String:
    return "string";
  case ScalarKind::Axis:
    return "axis";
  }
  return "?";
}

llvm::StringRef shardc::binaryOpSpelling(BinaryOp op) {
  switch (op) {
  case BinaryOp::MatMul:
    return "@";
  case BinaryOp::Mul:
    return "*";
  case BinaryOp::Div:
    return "/";
  case BinaryOp::Add:
    return "+";
  case BinaryOp::Sub:
    return "-";
  case BinaryOp::Eq:
    return "==";
  case BinaryOp::Ne:
    return "!=";
  case BinaryOp::Lt:
    return "<";
  case BinaryOp::Le:
    return "<=";
  case BinaryOp::Gt:
    return ">";
  case BinaryOp::Ge:
    return ">=";
  }
  return "?";
}

static void printDims(const std::vector<DimAST> &dims, llvm::raw_ostream &os) {
  os << '[';
  for (size_t i = 0; i < dims.size(); ++i) {
    os << (i ? ", " : "") << dims[i].name;
    if (dims[i].size)
      os << " = " << printExpr(*dims[i].size);
  }
  os << ']';
}

static void printExprTo(const Expr &expr, llvm::raw_ostream &os) {
  switch (expr.kind) {
  case ExprKind::Name:
    os << llvm::cast<NameExpr>(expr).name;
    return;
  case ExprKind::Int:
    os << llvm::cast<IntExpr>(expr).value;
    return;
  case ExprKind::Float:
    os << llvm::format("%g", llvm::cast<FloatExpr>(expr).value);
    return;
  case ExprKind::String:
    os << '"';
    os.write_escaped(llvm::cast<StringExpr>(expr).value);
    os << '"';
    return;
  case ExprKind::Bool:
    os << (llvm::cast<BoolExpr>(expr).value ? "true" : "false");
    return;
  case ExprKind::Shape:
    printDims(llvm::cast<ShapeExpr>(expr).dims, os);
    return;
  case ExprKind::Call: {
    const auto &call = llvm::cast<CallExpr>(expr);
    printExprTo(*call.callee, os);
    os << '(';
    for (size_t i = 0; i < call.args.size(); ++i) {
      os << (i ? ", " : "");
      if (!call.args[i].name.empty())
        os << call.args[i].name << " = ";
      printExprTo(*call.args[i].value, os);
    }
    os << ')';
    return;
  }
  case ExprKind::Neg:
    os << "(-";
    printExprTo(*llvm::cast<NegExpr>(expr).operand, os);
    os << ')';
    return;
  case ExprKind::Binary: {
    const auto &bin = llvm::cast<BinaryExpr>(expr);
    os << '(';
    printExprTo(*bin.lhs, os);
    os << ' ' << binaryOpSpelling(bin.op) << ' ';
    printExprTo(*bin.rhs, os);
    os << ')';
    return;
  }
  }
}

std::string shardc::printExpr(const Expr &expr) {
  std::string out;
  llvm::raw_string_ostream os(out);
  printExprTo(expr, os);
  return out;
}

std::string shardc::printShape(const std::vector<DimAST> &dims) {
  std::string out;
  llvm::raw_string_ostream os(out);
  printDims(dims, os);
  return out;
}

std::vector<std::string> MeshTargetAST::axisNames() const {
  std::vector<std::string> names;
  for (const auto &axis : axes)
    names.push_back(axis.first);
  return names;
}

std::string shardc::formatMeshAxes(const std::vector<std::string> &axes) {
  if (axes.empty())
    return "none";
  if (axes.size() == 1)
    return axes[0];
  std::string out;
  for (const auto &a : axes)
    out += (out.empty() ? "(" : ", ") + a;
  return out + ")";
}
