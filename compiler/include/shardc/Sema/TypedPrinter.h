//===- TypedPrinter.h - `shardc --emit=typed`, the rule linter --*- C++ -*-===//

#ifndef SHARDC_SEMA_TYPEDPRINTER_H
#define SHARDC_SEMA_TYPEDPRINTER_H

#include "shardc/Sema/TypedProgram.h"
#include "shardc/Support/Bytes.h"

#include "llvm/Support/raw_ostream.h"

namespace shardc {

/// For every parameter, input and constrained value: path, named shape, the
/// rule that placed each dimension, mesh sharding, local shape and bytes per
/// rank; then memory per rank and the typed forward graph.
void printTypedProgram(const TypedProgram &program, DiagnosticEngine &diags, llvm::raw_ostream &os);

/// A tensor's sharding, local shape and bytes per rank, then for each dimension
/// the rules skipped and the rule that decided it (what --emit=typed and the
/// language server's hover show).
void printShardingDetails(const ShardedTensor &t, const Mesh &mesh, const DiagnosticEngine &diags,
                          llvm::raw_ostream &os);

} // namespace shardc

#endif
