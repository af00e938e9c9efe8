//===- DocumentAnalysis.cpp - the front end on an editor's files ----------===//
//
// 1. Load the model file and its imports as shardc does (loadProgram), the
//    editor's unsaved text read instead of the disk, and collect the
//    diagnostics instead of printing them.
// 2. Answer queries from what was kept: the ASTs (names, scopes, where each
//    is declared) and the typed program (named shapes, the rules' plan).
//
// A name resolves in its scope: the block or model around the position (the
// last one declared before it; the AST keeps their names' ranges, not their
// extents), then the blocks of every loaded file, then the builtins.
//
//===----------------------------------------------------------------------===//

#include "shardc/LanguageServer/DocumentAnalysis.h"

#include "shardc/Frontend/LoadProgram.h"

#include "shardc/Parse/Parser.h"
#include "shardc/Sema/Builtins.h"
#include "shardc/Sema/Sema.h"
#include "shardc/Sema/TypedPrinter.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <set>

using namespace shardc;

struct DocumentAnalysis::State {
  mutable llvm::SourceMgr sourceMgr; // its lookups by line are cached
  DiagnosticEngine engine{sourceMgr};
  std::unique_ptr<ModuleLoader> loader;
  std::vector<const ModuleAST *> modules; // every loaded file
  std::unique_ptr<RulesFileAST> rules;
  unsigned rulesBuffer = 0;
  std::optional<TypedProgram> program;

  /// The declaration a name at a position resolves to.
  struct Resolved {
    std::string name;
    SMRange declared;
    const BlockAST *block = nullptr;     // a block's name
    const LetAST *let = nullptr;         // a let (a value or a sub-block instance)
    const ParamDeclAST *param = nullptr; // a block's parameter
    const InputAST *input = nullptr;
    const ArgDeclAST *arg = nullptr; // a forward's argument
    const ConfigParamAST *config = nullptr;
    const Builtin *builtin = nullptr;
    const ModuleAST *imported = nullptr; // an import's file
    std::string axis;                    // a logical axis of the program
    SMRange at;                          // the name (or the import) hovered
    bool ofModel = false;                // declared in the model (not a block)
    const char *scopeEnd = nullptr;      // where the block or model declaring it ends
  };

  unsigned bufferOf(const std::string &path) const {
    for (unsigned id = 1; id <= sourceMgr.getNumBuffers(); ++id)
      if (absolutePath(sourceMgr.getMemoryBuffer(id)->getBufferIdentifier()) == path)
        return id;
    return 0;
  }

  FilePosition position(SMLoc loc) const {
    auto [line, column] = sourceMgr.getLineAndColumn(loc);
    return {line ? line - 1 : 0, column ? column - 1 : 0};
  }

  std::optional<FileRange> toRange(SMRange range) const {
    if (!range.Start.isValid())
      return std::nullopt;
    unsigned buffer = sourceMgr.FindBufferContainingLoc(range.Start);
    if (!buffer)
      return std::nullopt;
    FileRange r;
    r.path = absolutePath(sourceMgr.getMemoryBuffer(buffer)->getBufferIdentifier());
    r.start = position(range.Start);
    r.end = range.End.isValid() ? position(range.End) : r.start;
    return r;
  }

  /// The location of a position, clamped to its buffer.
  SMLoc locAt(unsigned buffer, FilePosition at) const {
    SMLoc loc = sourceMgr.FindLocForLineAndColumn(buffer, at.line + 1, at.column + 1);
    return loc.isValid() ? loc
                         : SMLoc::getFromPointer(sourceMgr.getMemoryBuffer(buffer)->getBufferEnd());
  }

  /// The identifier around `loc` (a dotted import path included when `dotted`).
  SMRange wordAt(unsigned buffer, SMLoc loc, bool dotted = false) const {
    llvm::StringRef text = sourceMgr.getMemoryBuffer(buffer)->getBuffer();
    auto isWord = [&](char c) {
      return isalnum(static_cast<unsigned char>(c)) || c == '_' || (dotted && c == '.');
    };
    const char *begin = loc.getPointer(), *end = loc.getPointer();
    while (begin > text.begin() && isWord(begin[-1]))
      --begin;
    while (end < text.end() && isWord(*end))
      ++end;
    return SMRange(SMLoc::getFromPointer(begin), SMLoc::getFromPointer(end));
  }

  const ModuleAST *moduleIn(unsigned buffer) const {
    for (const ModuleAST *m : modules)
      if (m->buffer == buffer)
        return m;
    return nullptr;
  }

  static bool before(SMRange a, SMLoc b) { return a.Start.getPointer() <= b.getPointer(); }
  static bool within(SMLoc loc, SMRange r) {
    return r.Start.isValid() && r.Start.getPointer() <= loc.getPointer() &&
           loc.getPointer() <= r.End.getPointer();
  }

  /// The block or model whose body holds `loc`: the last declared before it.
  std::pair<const BlockAST *, const ModelAST *> scopeAt(const ModuleAST &module, SMLoc loc) const {
    const BlockAST *block = nullptr;
    const ModelAST *model = nullptr;
    const char *start = nullptr;
    for (const BlockAST &b : module.blocks)
      if (before(b.range, loc) && b.range.Start.getPointer() > start)
        block = &b, model = nullptr, start = b.range.Start.getPointer();
    for (const ModelAST &m : module.models)
      if (before(m.range, loc) && m.range.Start.getPointer() > start)
        block = nullptr, model = &m, start = m.range.Start.getPointer();
    return {block, model};
  }

  /// Where the block or model around `loc` ends: the next one's name, or the
  /// end of the file.
  const char *scopeEnd(const ModuleAST &module, SMLoc loc) const {
    const char *end = sourceMgr.getMemoryBuffer(module.buffer)->getBufferEnd();
    auto next = [&](SMRange name) {
      if (name.Start.getPointer() > loc.getPointer() && name.Start.getPointer() < end)
        end = name.Start.getPointer();
    };
    for (const BlockAST &b : module.blocks)
      next(b.range);
    for (const ModelAST &m : module.models)
      next(m.range);
    return end;
  }

  const BlockAST *findBlock(llvm::StringRef name) const {
    for (const ModuleAST *m : modules)
      for (const BlockAST &b : m->blocks)
        if (b.name == name)
          return &b;
    return nullptr;
  }

  std::optional<Resolved> resolve(const std::string &path, FilePosition at) const {
    unsigned buffer = bufferOf(path);
    const ModuleAST *module = moduleIn(buffer);
    if (!module)
      return std::nullopt;
    SMLoc loc = locAt(buffer, at);
    // `import a.b`: the loaded file whose path ends in a/b.shard.
    for (const ImportAST &imp : module->imports) {
      if (!within(loc, imp.range))
        continue;
      std::string file = imp.module;
      std::replace(file.begin(), file.end(), '.', '/');
      for (const ModuleAST *m : modules)
        if (llvm::StringRef(absolutePath(m->path)).ends_with("/" + file + ".shard")) {
          Resolved r;
          r.name = imp.module;
          r.at = imp.range;
          r.imported = m;
          return r;
        }
    }
    SMRange word = wordAt(buffer, loc);
    Resolved r;
    r.name = std::string(word.Start.getPointer(), word.End.getPointer());
    r.at = word;
    if (r.name.empty() || isdigit(static_cast<unsigned char>(r.name[0])))
      return std::nullopt;
    auto [block, model] = scopeAt(*module, loc);
    r.scopeEnd = scopeEnd(*module, loc);
    // The declaration named r.name in `decls`, into `slot`.
    auto match = [&](const auto &decls, auto *&slot) {
      for (const auto &decl : decls)
        if (decl.name == r.name) {
          slot = &decl;
          r.declared = decl.range;
          return true;
        }
      return false;
    };
    if (block) {
      for (const ForwardAST &fwd : block->forwards)
        if (match(fwd.lets, r.let) || match(fwd.args, r.arg))
          return r;
      if (match(block->params, r.param) || match(block->lets, r.let) ||
          match(block->config, r.config))
        return r;
    }
    if (model) {
      r.ofModel = true;
      if (match(model->lets, r.let) || match(model->inputs, r.input) ||
          match(model->config, r.config))
        return r;
    }
    if ((r.block = findBlock(r.name))) {
      r.declared = r.block->range;
      return r;
    }
    if ((r.builtin = lookupBuiltin(r.name)))
      return r;
    if (program)
      for (const std::string &axis : axes())
        if (axis == r.name) {
          r.axis = axis;
          return r;
        }
    return std::nullopt;
  }

  /// The logical axes of the program's parameters and inputs, in order.
  std::vector<std::string> axes() const {
    std::vector<std::string> names;
    auto add = [&](const TensorType &type) {
      for (const Dim &d : type.dims)
        if (!llvm::is_contained(names, d.axis))
          names.push_back(d.axis);
    };
    for (const Input &in : program->inputs)
      add(in.type);
    for (const Parameter &p : program->params)
      add(p.type);
    return names;
  }

  /// The typed graph's nodes (scan bodies included) of a block's let: named
  /// `name` or `path.name`, computed within `scope`.
  void nodesNamed(const Graph &graph, llvm::StringRef name, SMRange scope,
                  std::vector<const Node *> &out) const {
    for (const Node &n : graph.nodes) {
      llvm::StringRef nodeName(n.name);
      if ((nodeName == name || nodeName.ends_with(("." + name).str())) &&
          within(n.loc.Start, scope))
        out.push_back(&n);
      if (n.body)
        nodesNamed(*n.body, name, scope, out);
    }
  }

  std::string sharded(const ShardedTensor &t) const {
    std::string text;
    llvm::raw_string_ostream os(text);
    os << "`" << t.path << "`: `" << t.type.str() << "`\n";
    if (!program->mesh.axes.empty()) {
      os << "```\n";
      printShardingDetails(t, program->mesh, engine, os);
      os << "```\n";
    }
    return text;
  }
};

namespace {

FileRange wholeFile(const std::string &path) { return FileRange{path, {0, 0}, {0, 0}}; }

} // namespace

std::string shardc::absolutePath(llvm::StringRef path) {
  llvm::SmallString<256> full(path);
  llvm::sys::fs::make_absolute(full);
  llvm::sys::path::remove_dots(full, /*remove_dot_dot=*/true);
  return full.str().str();
}

bool shardc::isRulesFile(llvm::StringRef path) { return path.ends_with(".rules"); }

DocumentAnalysis::DocumentAnalysis(const std::string &modelPath, const std::string &rulesPath,
                                   const std::map<std::string, std::string> &openFiles,
                                   const std::vector<std::string> &importDirs)
    : state(std::make_unique<State>()) {
  State &s = *state;
  s.engine.setOpenFiles(&openFiles);
  s.engine.setHandler([this](const Diagnostic &d) {
    std::optional<FileRange> range = state->toRange(d.range);
    if (d.kind == llvm::SourceMgr::DK_Note) {
      if (!diags.empty() && range)
        diags.back().notes.emplace_back(*range, d.message);
      return;
    }
    // A diagnostic without a place (a file that cannot be read, the tool's own)
    // goes on the file it is about, or on the model file.
    diags.push_back({range ? *range : wholeFile(d.file), d.kind, d.message, {}});
  });
  if (!rulesPath.empty())
    if ((s.rulesBuffer = s.engine.addFile(rulesPath)))
      s.rules = parseRulesFile(s.rulesBuffer, s.engine);
  if (modelPath.empty())
    return;
  LoadProgramOptions options;
  options.importDirs = importDirs;
  options.rules = s.rules.get();
  // The plan of rules that do not apply is incomplete: shapes only.
  options.keepShapesOnRuleErrors = true;
  // A file of blocks only (a library) is checked as sema checks an import.
  options.allowLibrary = true;
  options.onLoaded = [&](const ModuleAST &m) { s.modules.push_back(&m); };
  LoadedProgram loaded = loadProgram(modelPath, options, s.engine);
  s.loader = std::move(loaded.loader);
  if (!loaded.model || loaded.model->models.empty())
    return;
  s.program = std::move(loaded.program);
  for (FileDiagnostic &d : diags)
    if (d.range.path.empty())
      d.range = wholeFile(modelPath);
}

DocumentAnalysis::~DocumentAnalysis() = default;

bool DocumentAnalysis::reads(const std::string &path) const { return state->bufferOf(path) != 0; }

std::optional<HoverText> DocumentAnalysis::hover(const std::string &path, FilePosition at) const {
  const State &s = *state;
  std::optional<State::Resolved> r = s.resolve(path, at);
  if (!r)
    return std::nullopt;
  std::string text;
  llvm::raw_string_ostream os(text);
  auto done = [&] { return HoverText{text, s.toRange(r->at).value_or(FileRange{path, at, at})}; };
  if (r->builtin) {
    os << "```\n" << r->builtin->name << "(" << r->builtin->signature << ")\n```\nbuiltin";
    return done();
  }
  if (r->imported) {
    os << "import `" << r->name << "`: " << r->imported->path;
    return done();
  }
  if (r->block) {
    os << "```\nblock " << r->block->name;
    if (!r->block->config.empty()) {
      os << "(";
      for (size_t i = 0; i < r->block->config.size(); ++i)
        os << (i ? ", " : "") << r->block->config[i].name << ": "
           << scalarKindName(r->block->config[i].kind);
      os << ")";
    }
    os << "\n```\n";
    for (const ParamDeclAST &p : r->block->params)
      os << "- param `" << p.name << "`: `" << printShape(p.type.dims) << "`\n";
    return done();
  }
  if (r->config) {
    os << "config `" << r->name << ": " << scalarKindName(r->config->kind) << "`";
    if (r->config->defaultValue)
      os << " = `" << printExpr(*r->config->defaultValue) << "`";
    return done();
  }
  if (r->arg) {
    os << "argument `" << r->name << "`: `" << printShape(r->arg->type.dims) << "`";
    return done();
  }
  if (!s.program) {
    os << "`" << r->name
       << "`: types and shardings show when a model that uses it is open "
          "and has no errors";
    return done();
  }
  const TypedProgram &p = *s.program;
  if (!r->axis.empty()) {
    os << "logical axis `" << r->axis << "`";
    for (const Input &in : p.inputs)
      if (int i = in.type.axisIndex(r->axis); i >= 0) {
        os << " = " << in.type.dims[i].size;
        break;
      }
    return done();
  }
  if (r->input) {
    for (const Input &in : p.inputs)
      if (in.path == r->name)
        os << s.sharded(in);
    return done();
  }
  if (r->param) {
    for (const Parameter &param : p.params)
      if (param.loc.Start == r->param->range.Start)
        os << s.sharded(param) << "init `" << param.init.str() << "`\n\n";
    return done();
  }
  // A let: a value of the model (an output, sharded like an input), a value of
  // a block (one node per instance: named by its path, computed in the block),
  // with the plan of its constraint, or a sub-block instance, with its
  // parameters.
  if (r->ofModel)
    for (const Output &out : p.outputs)
      if (out.path == r->name) {
        os << s.sharded(out);
        return done();
      }
  std::vector<const Node *> nodes;
  s.nodesNamed(p.graph, r->name, SMRange(r->declared.Start, SMLoc::getFromPointer(r->scopeEnd)),
               nodes);
  std::set<std::string> types;
  for (const Node *n : nodes)
    types.insert(n->type.str());
  for (const std::string &type : types)
    os << "`" << r->name << "`: `" << type << "`\n\n";
  for (const ShardedTensor &c : p.constraints)
    if (State::within(c.loc.Start, SMRange(r->let->range.Start, r->let->constraintRange.End)))
      os << s.sharded(c);
  if (nodes.empty())
    for (const Parameter &param : p.params)
      if (llvm::StringRef(param.path).starts_with(r->name + ".") ||
          llvm::StringRef(param.path).contains("." + r->name + "."))
        os << s.sharded(param) << "\n";
  if (text.empty())
    os << "`" << r->name << "`";
  return done();
}

std::optional<FileRange> DocumentAnalysis::definition(const std::string &path,
                                                      FilePosition at) const {
  std::optional<State::Resolved> r = state->resolve(path, at);
  if (!r)
    return std::nullopt;
  if (r->imported)
    return wholeFile(absolutePath(r->imported->path));
  return state->toRange(r->declared);
}

std::vector<Completion> DocumentAnalysis::complete(const std::string &path, FilePosition at) const {
  const State &s = *state;
  std::vector<Completion> out;
  std::set<std::string> seen;
  auto add = [&](const std::string &label, const std::string &detail, Completion::Kind kind) {
    if (seen.insert(label).second)
      out.push_back({label, detail, kind});
  };
  if (s.program)
    for (const std::string &axis : s.axes())
      add(axis, "logical axis", Completion::Axis);
  if (isRulesFile(path)) {
    for (const char *keyword :
         {"mesh", "rules", "override", "remat", "microbatches", "schedule", "precision", "none"})
      add(keyword, "keyword", Completion::Keyword);
    for (const char *policy : kRematPolicies)
      add(policy, "remat policy", Completion::Keyword);
    for (const char *schedule : kPipelineSchedules)
      add("\"" + std::string(schedule) + "\"", "pipeline schedule", Completion::Keyword);
    if (s.rules)
      for (const MeshAST &mesh : s.rules->meshes)
        for (const MeshAxisAST &axis : mesh.axes)
          add(axis.name, "mesh axis", Completion::Axis);
    return out;
  }
  unsigned buffer = s.bufferOf(path);
  if (const ModuleAST *module = s.moduleIn(buffer)) {
    auto [block, model] = s.scopeAt(*module, s.locAt(buffer, at));
    auto config = [&](const std::vector<ConfigParamAST> &params) {
      for (const ConfigParamAST &c : params)
        add(c.name, "config " + scalarKindName(c.kind).str(), Completion::Variable);
    };
    if (block) {
      for (const ForwardAST &fwd : block->forwards) {
        for (const ArgDeclAST &arg : fwd.args)
          add(arg.name, "argument " + printShape(arg.type.dims), Completion::Variable);
        for (const LetAST &let : fwd.lets)
          add(let.name, "let", Completion::Variable);
      }
      for (const ParamDeclAST &p : block->params)
        add(p.name, "param " + printShape(p.type.dims), Completion::Field);
      for (const LetAST &let : block->lets)
        add(let.name, "block instance", Completion::Variable);
      config(block->config);
    }
    if (model) {
      for (const InputAST &in : model->inputs)
        add(in.name, "input " + printShape(in.type.dims), Completion::Variable);
      for (const LetAST &let : model->lets)
        add(let.name, "let", Completion::Variable);
      config(model->config);
    }
  }
  for (const ModuleAST *m : s.modules)
    for (const BlockAST &b : m->blocks)
      add(b.name, "block (" + llvm::sys::path::filename(m->path).str() + ")", Completion::Class);
  for (const Builtin &b : allBuiltins())
    add(b.name, b.name + "(" + b.signature + ")", Completion::Function);
  return out;
}

std::vector<Symbol> DocumentAnalysis::symbols(const std::string &path) const {
  const State &s = *state;
  std::vector<Symbol> out;
  auto symbol = [&](const std::string &name, const std::string &detail, Symbol::Kind kind,
                    SMRange range) -> std::optional<Symbol> {
    std::optional<FileRange> r = s.toRange(range);
    if (!r)
      return std::nullopt;
    return Symbol{name, detail, kind, *r, *r, {}};
  };
  auto push = [](std::vector<Symbol> &into, std::optional<Symbol> sym) {
    if (sym)
      into.push_back(std::move(*sym));
  };
  if (isRulesFile(path)) {
    if (!s.rules)
      return out;
    for (const MeshAST &mesh : s.rules->meshes) {
      std::optional<Symbol> m = symbol("mesh", "", Symbol::Module, mesh.range);
      for (const MeshAxisAST &axis : mesh.axes)
        if (m)
          push(m->children,
               symbol(axis.name, std::to_string(axis.size), Symbol::Constant, axis.range));
      push(out, std::move(m));
    }
    for (const RuleAST &rule : s.rules->rules)
      push(out, symbol(rule.logicalAxis, "-> " + formatMeshAxes(rule.target.axisNames()),
                       Symbol::Field, rule.range));
    for (const OverrideAST &o : s.rules->overrides)
      push(out, symbol(o.pattern, "override", Symbol::Field, o.range));
    for (const RematAST &r : s.rules->remats)
      push(out, symbol(r.pattern, "remat " + r.policy, Symbol::Field, r.range));
    for (const MicrobatchesAST &m : s.rules->microbatches)
      push(out, symbol("microbatches", std::to_string(m.count), Symbol::Field, m.range));
    for (const PrecisionAST &p : s.rules->precisions)
      push(out, symbol("precision " + p.what, p.type, Symbol::Field, p.range));
    for (const ScheduleAST &schedule : s.rules->schedules)
      push(out, symbol("schedule", schedule.name, Symbol::Field, schedule.range));
    return out;
  }
  const ModuleAST *module = s.moduleIn(s.bufferOf(path));
  if (!module)
    return out;
  auto lets = [&](std::optional<Symbol> &parent, const std::vector<LetAST> &list) {
    for (const LetAST &let : list)
      push(parent->children, symbol(let.name, "let", Symbol::Variable, let.range));
  };
  for (const BlockAST &block : module->blocks) {
    std::optional<Symbol> b = symbol(block.name, "block", Symbol::Class, block.range);
    if (!b)
      continue;
    for (const ParamDeclAST &p : block.params)
      push(b->children, symbol(p.name, printShape(p.type.dims), Symbol::Field, p.range));
    lets(b, block.lets);
    for (const ForwardAST &fwd : block.forwards) {
      std::optional<Symbol> f = symbol("forward", "", Symbol::Method, fwd.range);
      if (!f)
        continue;
      lets(f, fwd.lets);
      for (const BlockTermAST &term : fwd.terms)
        push(f->children,
             symbol(term.name, term.isLoss ? "loss" : "metric", Symbol::Variable, term.range));
      b->children.push_back(std::move(*f));
    }
    out.push_back(std::move(*b));
  }
  for (const ModelAST &model : module->models) {
    std::optional<Symbol> m = symbol(model.name, "model", Symbol::Module, model.range);
    if (!m)
      continue;
    for (const InputAST &in : model.inputs)
      push(m->children,
           symbol(in.name, "input " + printShape(in.type.dims), Symbol::Variable, in.range));
    lets(m, model.lets);
    out.push_back(std::move(*m));
  }
  return out;
}
