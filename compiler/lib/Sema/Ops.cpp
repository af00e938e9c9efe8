//===- Ops.cpp - names, operand counts and attributes of graph ops --------===//

#include "shardc/Sema/Ops.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/ErrorHandling.h"

#include <vector>

using namespace shardc;

namespace {

struct OpEntry {
  llvm::StringRef name;
  std::optional<unsigned> arity;
  std::vector<llvm::StringRef> attributes;
};

std::optional<unsigned> fixedArity(int arity) {
  return arity < 0 ? std::nullopt : std::optional<unsigned>(arity);
}

/// `"over scale"` -> {over, scale}.
std::vector<llvm::StringRef> words(llvm::StringRef text) {
  llvm::SmallVector<llvm::StringRef> parts;
  text.split(parts, ' ', -1, /*KeepEmpty=*/false);
  return {parts.begin(), parts.end()};
}

const std::vector<OpEntry> &opTable() {
  static const std::vector<OpEntry> table = {
#define SHARDC_OP(NAME, SIGNATURE) {#NAME, std::nullopt, {}},
#define SHARDC_OPERATOR(NAME, ARITY) {#NAME, ARITY, {}},
#define SHARDC_INTERNAL_OP(NAME, ARITY, ATTRIBUTES) {#NAME, fixedArity(ARITY), words(ATTRIBUTES)},
#include "shardc/Sema/Builtins.def"
  };
  return table;
}

struct OptimizerEntry {
  llvm::StringRef name;
  std::vector<llvm::StringRef> state;
};

const std::vector<OptimizerEntry> &optimizerTable() {
  static const std::vector<OptimizerEntry> table = {
#define SHARDC_OPTIMIZER(NAME, SIGNATURE, STATE) {#NAME, words(STATE)},
#include "shardc/Sema/Builtins.def"
  };
  return table;
}

} // namespace

llvm::StringRef shardc::opName(OpKind op) { return opTable()[static_cast<size_t>(op)].name; }

std::optional<unsigned> shardc::opArity(OpKind op) {
  return opTable()[static_cast<size_t>(op)].arity;
}

llvm::ArrayRef<llvm::StringRef> shardc::opAttributes(OpKind op) {
  return opTable()[static_cast<size_t>(op)].attributes;
}

OpKind shardc::binaryOpKind(BinaryOp op) {
  switch (op) {
  case BinaryOp::MatMul:
    return OpKind::matmul;
  case BinaryOp::Mul:
    return OpKind::mul;
  case BinaryOp::Div:
    return OpKind::div;
  case BinaryOp::Add:
    return OpKind::add;
  case BinaryOp::Sub:
    return OpKind::sub;
  case BinaryOp::Eq:
    return OpKind::eq;
  case BinaryOp::Ne:
    return OpKind::ne;
  case BinaryOp::Lt:
    return OpKind::lt;
  case BinaryOp::Le:
    return OpKind::le;
  case BinaryOp::Gt:
    return OpKind::gt;
  case BinaryOp::Ge:
    return OpKind::ge;
  }
  llvm_unreachable("every binary operator makes a node");
}

llvm::StringRef shardc::optimizerName(OptimizerKind optimizer) {
  return optimizerTable()[static_cast<size_t>(optimizer)].name;
}

llvm::ArrayRef<llvm::StringRef> shardc::optimizerState(OptimizerKind optimizer) {
  return optimizerTable()[static_cast<size_t>(optimizer)].state;
}
