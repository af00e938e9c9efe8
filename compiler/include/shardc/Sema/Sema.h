//===- Sema.h - from ASTs to a typed, sharded program -----------*- C++ -*-===//

#ifndef SHARDC_SEMA_SEMA_H
#define SHARDC_SEMA_SEMA_H

#include "shardc/AST/RulesAST.h"
#include "shardc/Sema/TypedProgram.h"

#include <map>
#include <optional>
#include <string>

namespace shardc {

/// The blocks of every loaded file, by name.
using BlockTable = std::map<std::string, const BlockAST *>;

/// `--set NAME=VALUE`: a model config parameter's value from the command line,
/// the text of each part located in a buffer of the source manager.
struct ConfigOverride {
  std::string name, value;
  SMRange nameRange, valueRange;
};

/// Semantic analysis of one model program. The driver hands it every loaded
/// file (a ModuleLoader's `onLoaded`), then the file holding the model.
class Sema {
public:
  /// Sema counts the errors reported from here on: a program with a file that
  /// did not load or a bad block is not elaborated.
  explicit Sema(DiagnosticEngine &diags) : diags(diags), errorsAtStart(diags.errorCount()) {}

  /// Declares the blocks of a loaded file and checks what needs no
  /// instantiation: names unique among blocks and builtins, one forward.
  void addModule(const ModuleAST &module);

  /// Instantiates the blocks the model of `main` uses, infers named shapes
  /// through every operation and checks them. `modelPath` is the path the
  /// user gave. Reports errors and returns std::nullopt if there were any.
  /// With `microbatch`, the inputs' first axis is `microbatch->count` times
  /// smaller than the model writes it (wherever it writes its size): the program
  /// one microbatch runs.
  std::optional<TypedProgram> analyzeModel(const ModuleAST &main, llvm::StringRef modelPath,
                                           const Microbatches *microbatch = nullptr);

  /// Config parameters that analyzeModel sets instead of their defaults.
  void setConfig(std::vector<ConfigOverride> overrides) { config = std::move(overrides); }

private:
  void checkBlock(const BlockAST &block);

  DiagnosticEngine &diags;
  unsigned errorsAtStart;
  BlockTable blocks;
  std::vector<ConfigOverride> config;
};

/// Applies a rules file to a typed program: the mesh, and a sharding for
/// every parameter, input and constrained value, checked for unknown mesh
/// axes, rules that can never apply, mesh axes used twice and divisibility.
bool applyRules(TypedProgram &program, const RulesFileAST &rules, DiagnosticEngine &diags);

/// A rules file's precision lines (`precision matmul : bf16`), checked: known
/// names, f32 or bf16, one line per name. Part of applyRules; shardc tune checks
/// its --precision flags with it.
bool applyPrecisions(TypedProgram &program, llvm::ArrayRef<PrecisionAST> precisions,
                     DiagnosticEngine &diags);

/// The `--set NAME=VALUE` flags as overrides, each located in a buffer of its own
/// (`<command line>`) so that an error points into the flag; std::nullopt after
/// reporting one that is not NAME=VALUE.
std::optional<std::vector<ConfigOverride>> parseConfigOverrides(llvm::ArrayRef<std::string> sets,
                                                                llvm::SourceMgr &sourceMgr,
                                                                DiagnosticEngine &diags);

/// shardc tune's `--precision NAME=TYPE` flags as a rules file's precision lines,
/// located like parseConfigOverrides' flags, for applyPrecisions to check.
std::optional<std::vector<PrecisionAST>> parsePrecisionFlags(llvm::ArrayRef<std::string> flags,
                                                             llvm::SourceMgr &sourceMgr,
                                                             DiagnosticEngine &diags);

} // namespace shardc

#endif
