//===- Sema.cpp - blocks of the loaded files, then the model --------------===//
//
// The loader hands over each file as it is loaded: its blocks are declared and
// checked for what needs no instantiation. The model is elaborated only when
// nothing before it reported an error.
//
//===----------------------------------------------------------------------===//

#include "ElaborateImpl.h"

using namespace shardc;

void Sema::addModule(const ModuleAST &module) {
  for (const BlockAST &block : module.blocks) {
    if (const Builtin *b = lookupBuiltin(block.name)) {
      diags.error(block.range, "block '" + block.name + "' has the name of a builtin " +
                                   (b->category == BuiltinCategory::Op ? "operation" : "function"));
      continue;
    }
    auto [it, inserted] = blocks.emplace(block.name, &block);
    if (!inserted) {
      diags.error(block.range, "duplicate definition of block '" + block.name + "'");
      diags.note(it->second->range, "first defined here");
      continue;
    }
    checkBlock(block);
  }
}

/// Checks what does not need instantiation: unique names, one forward.
void Sema::checkBlock(const BlockAST &block) {
  std::map<std::string, std::pair<SMRange, llvm::StringRef>> names; // name -> where, what
  auto declare = [&](const std::string &name, SMRange range, llvm::StringRef what) {
    auto [it, inserted] = names.emplace(name, std::make_pair(range, what));
    if (!inserted) {
      diags.error(range, "duplicate definition of " + what + " '" + name + "' in block '" +
                             block.name + "'");
      diags.note(it->second.first, "first defined here");
    }
  };
  for (const auto &c : block.config)
    declare(c.name, c.range, "parameter");
  for (const auto &p : block.params) {
    declare(p.name, p.range, "param");
    // Parameters are what the gradient updates and the initialisers fill.
    if (p.type.dtype != DType::F32)
      diags.error(p.type.range, "param '" + p.name + "' must be f32, not " +
                                    dtypeName(p.type.dtype) + ": parameters are trained");
  }
  for (const auto &l : block.lets)
    declare(l.name, l.range, "let");
  // A term's name is a path of each instance's, as a parameter's is.
  for (const auto &f : block.forwards)
    for (const auto &t : f.terms)
      declare(t.name, t.range, t.isLoss ? "loss" : "metric");
  for (const auto &t : block.misplacedTerms)
    diags.error(t.range, std::string(t.isLoss ? "loss" : "metric") + " '" + t.name +
                             "' is outside the forward function of block '" + block.name +
                             "': a block's losses and metrics are computed by its forward, "
                             "declared among its lets");
  if (block.forwards.empty())
    diags.error(block.range, "block '" + block.name + "' has no forward function");
  for (size_t i = 1; i < block.forwards.size(); ++i) {
    diags.error(block.forwards[i].range,
                "block '" + block.name + "' has more than one forward function");
    diags.note(block.forwards[0].range, "first forward function here");
  }
  for (const auto &f : block.forwards) {
    std::map<std::string, SMRange> local;
    for (const auto &a : f.args) {
      if (!local.emplace(a.name, a.range).second)
        diags.error(a.range, "duplicate argument '" + a.name + "'");
      // An argument would hide the member inside the forward function.
      auto member = names.find(a.name);
      if (member != names.end()) {
        diags.error(a.range, "forward argument '" + a.name + "' has the name of the " +
                                 member->second.second + " '" + a.name + "' of block '" +
                                 block.name + "'; rename one of them");
        diags.note(member->second.first, "the " + member->second.second + " is defined here");
      }
    }
  }
}

std::optional<TypedProgram> Sema::analyzeModel(const ModuleAST &main, llvm::StringRef modelPath,
                                               const Microbatches *microbatch) {
  if (main.models.empty()) {
    if (diags.errorCount() == errorsAtStart)
      diags.fileError(main.path, "no model in this file: a model file needs one "
                                 "`model Name { ... }` declaration");
    return std::nullopt;
  }
  for (size_t i = 1; i < main.models.size(); ++i) {
    diags.error(main.models[i].range, "more than one model in this file");
    diags.note(main.models[0].range, "first model here");
  }
  if (diags.errorCount() != errorsAtStart)
    return std::nullopt;
  TypedProgram program;
  program.modelPath = modelPath.str();
  sema::Elaborator elaborator(diags, blocks, program, config);
  if (microbatch)
    elaborator.splitInputs(*microbatch);
  if (!elaborator.elaborateModel(main.models[0]))
    return std::nullopt;
  collectOutputs(program);
  return program;
}

namespace {

/// A `--FLAG NAME=VALUE` flag, located in a buffer of its own.
struct FlagPair {
  std::string name, value;
  SMRange whole, nameRange, valueRange;
};

/// Each of `values` (what `--FLAG` was given) split at its `=` into a buffer of its
/// own (`<command line>`, text `--FLAG NAME=VALUE`) so that an error points into the
/// flag; std::nullopt after reporting one that is not NAME=VALUE (`wants` says what
/// NAME is).
std::optional<std::vector<FlagPair>> parseFlagPairs(llvm::StringRef flag, llvm::StringRef wants,
                                                    llvm::ArrayRef<std::string> values,
                                                    llvm::SourceMgr &sourceMgr,
                                                    DiagnosticEngine &diags) {
  std::vector<FlagPair> pairs;
  for (const std::string &set : values) {
    auto [name, value] = llvm::StringRef(set).split('=');
    if (!llvm::StringRef(set).contains('=') || name.trim().empty()) {
      diags.toolError("--" + flag.str() + " wants NAME=VALUE (" + wants.str() + "), not '" + set +
                      "'");
      return std::nullopt;
    }
    const std::string prefix = "--" + flag.str() + " ";
    unsigned buffer = sourceMgr.AddNewSourceBuffer(
        llvm::MemoryBuffer::getMemBufferCopy(prefix + set, "<command line>"), llvm::SMLoc());
    const char *start = sourceMgr.getMemoryBuffer(buffer)->getBufferStart() + prefix.size();
    auto range = [](const char *begin, size_t size) {
      return SMRange(llvm::SMLoc::getFromPointer(begin), llvm::SMLoc::getFromPointer(begin + size));
    };
    pairs.push_back({name.trim().str(), value.trim().str(), range(start, set.size()),
                     range(start, name.size()), range(start + name.size() + 1, value.size())});
  }
  return pairs;
}

} // namespace

std::optional<std::vector<ConfigOverride>>
shardc::parseConfigOverrides(llvm::ArrayRef<std::string> sets, llvm::SourceMgr &sourceMgr,
                             DiagnosticEngine &diags) {
  auto pairs = parseFlagPairs("set", "a config parameter of the model", sets, sourceMgr, diags);
  if (!pairs)
    return std::nullopt;
  std::vector<ConfigOverride> overrides;
  for (FlagPair &pair : *pairs)
    overrides.push_back(
        {std::move(pair.name), std::move(pair.value), pair.nameRange, pair.valueRange});
  return overrides;
}

std::optional<std::vector<PrecisionAST>>
shardc::parsePrecisionFlags(llvm::ArrayRef<std::string> flags, llvm::SourceMgr &sourceMgr,
                            DiagnosticEngine &diags) {
  auto pairs = parseFlagPairs("precision",
                              "matmul or gradients = f32 or bf16, as a rules "
                              "file's `precision matmul : bf16`",
                              flags, sourceMgr, diags);
  if (!pairs)
    return std::nullopt;
  std::vector<PrecisionAST> precisions;
  for (FlagPair &pair : *pairs)
    precisions.push_back(
        {std::move(pair.name), std::move(pair.value), pair.whole, pair.nameRange, pair.valueRange});
  return precisions;
}
