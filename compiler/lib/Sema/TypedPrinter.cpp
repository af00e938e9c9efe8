//===- TypedPrinter.cpp - `shardc --emit=typed` ---------------------------===//

#include "shardc/Sema/TypedPrinter.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/Path.h"

using namespace shardc;

namespace {

class TypedPrinter {
public:
  TypedPrinter(const TypedProgram &program, DiagnosticEngine &diags, llvm::raw_ostream &os)
      : program(program), diags(diags), os(os) {}

  void print() {
    const Mesh &mesh = program.mesh;
    os << "model " << program.modelName << "  (" << program.modelPath << ")\n";
    os << "mesh " << mesh.str() << ": " << mesh.numRanks() << " rank"
       << (mesh.numRanks() == 1 ? "" : "s") << "  (" << program.rulesPath << ")\n";

    int64_t paramBytes = 0, inputBytes = 0;
    os << "\nparameters\n";
    for (const Parameter &p : program.params) {
      os << "  param " << p.path << ": " << p.type.str() << "  init " << p.init.str() << "\n";
      tensorDetails(p);
      paramBytes = addSaturating(paramBytes, p.localBytes(mesh));
    }
    os << "\ninputs\n";
    for (const Input &t : program.inputs) {
      os << "  input " << t.path << ": " << t.type.str()
         << (t.dropoutUniforms ? "  fill uniform, anew each training step" : "") << "\n";
      tensorDetails(t);
      inputBytes = addSaturating(inputBytes, t.localBytes(mesh));
    }
    if (!program.constraints.empty()) {
      os << "\nconstraints\n";
      for (const ShardedTensor &t : program.constraints) {
        os << "  let " << t.path << ": " << t.type.str() << "  (" << diags.describe(t.loc.Start)
           << ")\n";
        tensorDetails(t);
      }
    }

    os << "\nmemory per rank\n";
    os << "  parameters       " << llvm::right_justify(formatBytes(paramBytes), 12) << "  ("
       << program.params.size() << " tensors)\n";
    if (program.optimizer) {
      size_t n = optimizerState(program.optimizer->kind).size();
      os << "  optimizer state  "
         << llvm::right_justify(formatBytes(mulSaturating(paramBytes, n)), 12) << "  ("
         << program.optimizer->name() << ": " << n << " per parameter)\n";
    }
    os << "  inputs           " << llvm::right_justify(formatBytes(inputBytes), 12) << "\n";

    os << "\ngraph\n";
    printGraph(program.graph, 1);
    printTerms(program.graph, 1);
    os << "  loss %" << program.loss << "\n";
    for (const auto &[name, node] : program.metrics)
      os << "  metric " << name << " %" << node << "\n";
    if (program.optimizer) {
      os << "  optimizer " << program.optimizer->name() << "(";
      for (size_t i = 0; i < program.optimizer->hyperparameters.size(); ++i) {
        const auto &[name, value] = program.optimizer->hyperparameters[i];
        os << (i ? ", " : "") << name << " = " << llvm::format("%g", value);
      }
      os << ")\n";
    }
    if (program.generate)
      os << "  generate " << program.generate->input << " ~ " << program.generate->logits << "\n";
    const Microbatches &microbatches = program.microbatches;
    const Input *batched = batchInput(program);
    if (microbatches.count > 1 && batched) {
      const Dim &batch = batched->type.dims.front();
      os << "  microbatches " << microbatches.count << ": the train step runs '" << batch.axis
         << "' = " << batch.size << " in " << microbatches.count << " slices of "
         << batch.size / microbatches.count
         << ", their gradients summed, then reduced across ranks once\n";
    }
    const Pipeline &pipeline = program.pipeline;
    if (!pipeline.axis.empty())
      os << "  pipeline: the scan's layers in " << pipeline.stages << " stages along '"
         << pipeline.axis << "', " << microbatches.count << " microbatches through them, "
         << pipeline.schedule << " schedule (--report draws it)\n";
  }

private:
  void tensorDetails(const ShardedTensor &t) { printShardingDetails(t, program.mesh, diags, os); }

  void printGraph(const Graph &graph, unsigned indent) {
    for (const Node &n : graph.nodes) {
      os.indent(indent * 2) << "%" << n.id << " = " << opName(n.op);
      if (!n.name.empty() && (n.op == OpKind::input || n.op == OpKind::param ||
                              n.op == OpKind::arg || n.op == OpKind::sharding_constraint))
        os << " \"" << n.name << "\"";
      for (size_t i = 0; i < n.operands.size(); ++i)
        os << (i ? ", %" : " %") << n.operands[i];
      os << " : " << n.type.str();
      printAttrs(n);
      if (n.body) {
        os << " {\n";
        printGraph(*n.body, indent + 1);
        printTerms(*n.body, indent + 1);
        os.indent((indent + 1) * 2) << "yield %" << n.body->result << "\n";
        os.indent(indent * 2) << "}";
      }
      os << "\n";
    }
  }

  /// A block's terms: `loss` ones are added to the model's loss.
  void printTerms(const Graph &graph, unsigned indent) {
    for (const BlockTerm &term : graph.terms)
      os.indent(indent * 2) << (term.isLoss ? "block loss " : "block metric ") << term.path << " %"
                            << term.node << "\n";
  }

  void printAttrs(const Node &n) {
    if (n.attrs.empty())
      return;
    os << " {";
    bool first = true;
    for (const auto &[key, value] : n.attrs) {
      os << (first ? "" : ", ") << key << " = ";
      first = false;
      if (auto *i = std::get_if<int64_t>(&value))
        os << *i;
      else if (auto *d = std::get_if<double>(&value))
        os << llvm::format("%g", *d);
      else if (auto *s = std::get_if<std::string>(&value))
        os << '"' << *s << '"';
      else {
        const auto &list = std::get<std::vector<std::string>>(value);
        os << '[';
        for (size_t i = 0; i < list.size(); ++i)
          os << (i ? ", " : "") << list[i];
        os << ']';
      }
    }
    os << "}";
  }

  const TypedProgram &program;
  DiagnosticEngine &diags;
  llvm::raw_ostream &os;
};

} // namespace

void shardc::printTypedProgram(const TypedProgram &program, DiagnosticEngine &diags,
                               llvm::raw_ostream &os) {
  TypedPrinter(program, diags, os).print();
}

void shardc::printShardingDetails(const ShardedTensor &t, const Mesh &mesh,
                                  const DiagnosticEngine &diags, llvm::raw_ostream &os) {
  // `tp.rules:4`: the header gives the whole path.
  auto fileLine = [&](SMRange range) {
    return llvm::sys::path::filename(diags.describe(range.Start)).str();
  };
  os << "    sharding " << t.sharding.str() << "  local [";
  auto local = t.localShape(mesh);
  for (size_t i = 0; i < local.size(); ++i)
    os << (i ? ", " : "") << local[i];
  os << "]  " << formatBytes(t.localBytes(mesh)) << " per rank\n";
  // Dimensions no rule mentions share one line; the others show the rules
  // skipped for them, then the one that decided (or that none was left).
  std::string unruled;
  for (size_t i = 0; i < t.sharding.dims.size(); ++i) {
    const DimSharding &d = t.sharding.dims[i];
    const std::string &axis = t.type.dims[i].axis;
    for (const SkippedRule &s : d.skipped)
      os << "    " << axis << ": " << s.reason << "  (" << fileLine(s.cause) << ")\n";
    if (d.cause.Start.isValid())
      os << "    " << axis << ": " << d.reason << "  (" << fileLine(d.cause) << ")\n";
    else if (!d.skipped.empty())
      os << "    " << axis << ": " << d.reason << ", replicated\n";
    else
      unruled += (unruled.empty() ? "" : ", ") + axis;
  }
  if (!unruled.empty())
    os << "    " << unruled << ": no rule, replicated\n";
}
