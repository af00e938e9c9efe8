//===- ASTPrinter.cpp - `shardc --emit=ast` -------------------------------===//

#include "shardc/AST/ASTPrinter.h"

using namespace shardc;

namespace {

class Printer {
public:
  Printer(llvm::SourceMgr &sourceMgr, llvm::raw_ostream &os) : sourceMgr(sourceMgr), os(os) {}

  void line(unsigned indent, SMRange at, const llvm::Twine &text) {
    os.indent(indent * 2) << text;
    if (at.Start.isValid()) {
      auto [line, col] = sourceMgr.getLineAndColumn(at.Start);
      os << "  @" << line << ':' << col;
    }
    os << '\n';
  }

  static std::string type(const TensorTypeAST &t) {
    return (dtypeName(t.dtype) + printShape(t.dims)).str();
  }

  void config(unsigned indent, const std::vector<ConfigParamAST> &params) {
    for (const auto &p : params)
      line(indent, p.range,
           "config " + p.name + ": " + scalarKindName(p.kind) +
               (p.defaultValue ? " = " + printExpr(*p.defaultValue) : std::string()));
  }

  void let(unsigned indent, const LetAST &l) {
    line(indent, l.range,
         "let " + l.name + " = " + printExpr(*l.value) +
             (l.constraint ? " : " + printShape(*l.constraint) : std::string()));
  }

  static std::string args(const std::vector<Argument> &args) {
    std::string out;
    for (const auto &a : args)
      out +=
          (out.empty() ? "" : ", ") + (a.name.empty() ? "" : a.name + " = ") + printExpr(*a.value);
    return out;
  }

  void module(const ModuleAST &m) {
    line(0, SMRange(), "module '" + m.path + "'");
    for (const auto &imp : m.imports)
      line(1, imp.range, "import " + imp.module);
    for (const auto &b : m.blocks) {
      line(1, b.range, "block " + b.name);
      config(2, b.config);
      for (const auto &p : b.params)
        line(2, p.range,
             "param " + p.name + ": " + type(p.type) +
                 (p.init ? " init " + printExpr(*p.init) : std::string()));
      for (const auto &l : b.lets)
        let(2, l);
      for (const auto &f : b.forwards) {
        std::string sig;
        for (const auto &a : f.args)
          sig += (sig.empty() ? "" : ", ") + a.name + ": " + type(a.type);
        line(2, f.range, "forward(" + sig + ") -> " + type(f.result));
        auto terms = f.terms.begin();
        for (size_t i = 0; i <= f.lets.size(); ++i) {
          for (; terms != f.terms.end() && terms->afterLets == i; ++terms)
            line(3, terms->range,
                 (terms->isLoss ? "loss " : "metric ") + terms->name + " = " +
                     printExpr(*terms->value));
          if (i < f.lets.size())
            let(3, f.lets[i]);
        }
        line(3, f.returnRange, "return " + printExpr(*f.resultValue));
      }
    }
    for (const auto &m2 : m.models) {
      line(1, m2.range, "model " + m2.name);
      config(2, m2.config);
      for (const auto &in : m2.inputs)
        line(2, in.range, "input " + in.name + ": " + type(in.type));
      for (const auto &l : m2.lets)
        let(2, l);
      for (const auto &[range, expr] : m2.losses)
        line(2, range, "loss " + printExpr(*expr));
      for (const auto &metric : m2.metrics)
        line(2, metric.range, "metric " + metric.name + " = " + printExpr(*metric.value));
      for (const auto &opt : m2.optimizers)
        line(2, opt.range, "optimizer " + opt.name + "(" + args(opt.args) + ")");
    }
  }

  static std::string target(const MeshTargetAST &t) { return formatMeshAxes(t.axisNames()); }

  void rules(const RulesFileAST &r) {
    line(0, SMRange(), "rules '" + r.path + "'");
    for (const auto &mesh : r.meshes) {
      line(1, mesh.range, "mesh");
      for (const auto &axis : mesh.axes)
        line(2, axis.range, "axis " + axis.name + " = " + std::to_string(axis.size));
    }
    for (const auto &rule : r.rules)
      line(1, rule.range, "rule " + rule.logicalAxis + " -> " + target(rule.target));
    for (const auto &o : r.overrides) {
      std::string dims;
      for (const auto &d : o.dims)
        dims += (dims.empty() ? "" : ", ") + target(d);
      line(1, o.range, "override \"" + o.pattern + "\" : [" + dims + "]");
    }
    for (const auto &remat : r.remats)
      line(1, remat.range, "remat \"" + remat.pattern + "\" : " + remat.policy);
    for (const auto &m : r.microbatches)
      line(1, m.range, "microbatches " + std::to_string(m.count));
  }

private:
  llvm::SourceMgr &sourceMgr;
  llvm::raw_ostream &os;
};

} // namespace

void shardc::printAST(const ModuleAST &module, llvm::SourceMgr &sourceMgr, llvm::raw_ostream &os) {
  Printer(sourceMgr, os).module(module);
}

void shardc::printAST(const RulesFileAST &rules, llvm::SourceMgr &sourceMgr,
                      llvm::raw_ostream &os) {
  Printer(sourceMgr, os).rules(rules);
}
