//===- TypedPrinter.h - `shardc --emit=typed`, the rule linter --*- C++ -*-===//

#ifndef SHARDC_SEMA_TYPEDPRINTER_H
#define SHARDC_SEMA_TYPEDPRINTER_H

#include "shardc/Sema/TypedProgram.h"

#include "llvm/Support/raw_ostream.h"

namespace shardc {

/// For every parameter, input and constrained value: path, named shape, the
/// rule that placed each dimension, mesh sharding, local shape and bytes per
/// rank; then memory per rank and the typed forward graph.
void printTypedProgram(const TypedProgram &program, DiagnosticEngine &diags,
                       llvm::raw_ostream &os);

/// `1.50 MiB`
std::string formatBytes(int64_t bytes);
/// A size as flags write it: digits, then maybe K, M, G or T (powers of 1024, with
/// or without "iB"): `4G`, `512MiB`, `1048576`; -1 when it is not one.
int64_t parseBytes(llvm::StringRef text);
/// A tensor's sharding, local shape and bytes per rank, then for each dimension
/// the rules skipped and the rule that decided it (what --emit=typed and the
/// language server's hover show).
void printShardingDetails(const ShardedTensor &t, const Mesh &mesh,
                          const DiagnosticEngine &diags, llvm::raw_ostream &os);

} // namespace shardc

#endif
