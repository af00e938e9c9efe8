//===- ModelParser.cpp - ANTLR parse tree of a model file to AST ----------===//

#include "ParseSupport.h"
#include "shardc/Parse/Parser.h"

#include "ShardModelLexer.h"
#include "ShardModelParser.h"

#include <cerrno>
#include <cstdlib>

using namespace shardc;
using namespace shardc::parse;
using P = shardc::antlr::ShardModelParser;

namespace {

/// Builds AST nodes from a parse tree that has no syntax errors.
class ModelBuilder {
public:
  ModelBuilder(const SourceText &source, DiagnosticEngine &diags) : source(source), diags(diags) {}

  std::unique_ptr<ModuleAST> build(P::ModelFileContext *ctx) {
    auto module = std::make_unique<ModuleAST>();
    module->path = source.path();
    module->buffer = source.bufferId();
    for (auto *imp : ctx->importDecl()) {
      std::string name;
      for (auto *part : imp->modulePath()->IDENT())
        name += (name.empty() ? "" : ".") + part->getText();
      module->imports.push_back({name, source.range(imp)});
    }
    for (auto *top : ctx->topDecl()) {
      if (top->blockDecl())
        module->blocks.push_back(buildBlock(top->blockDecl()));
      else
        module->models.push_back(buildModel(top->modelDecl()));
    }
    return module;
  }

private:
  BlockAST buildBlock(P::BlockDeclContext *ctx) {
    BlockAST block;
    block.name = ctx->IDENT()->getText();
    block.range = source.range(ctx->IDENT());
    block.config = buildConfig(ctx->configList());
    for (auto *member : ctx->blockMember()) {
      if (auto *p = member->paramDecl()) {
        ParamDeclAST param;
        param.name = p->IDENT()->getText();
        param.range = source.range(p->IDENT());
        param.type = buildTensorType(p->tensorType());
        if (p->expr())
          param.init = buildExpr(p->expr());
        block.params.push_back(std::move(param));
      } else if (auto *let = member->letStmt()) {
        block.lets.push_back(buildLet(let));
      } else if (auto *term = member->termDecl()) {
        block.misplacedTerms.push_back(buildTerm(term, 0));
      } else {
        block.forwards.push_back(buildForward(member->forwardDecl()));
      }
    }
    return block;
  }

  ForwardAST buildForward(P::ForwardDeclContext *ctx) {
    ForwardAST fwd;
    fwd.range = source.range(ctx->getStart(), ctx->getStart());
    for (auto *a : ctx->argDecl())
      fwd.args.push_back(
          {a->IDENT()->getText(), source.range(a->IDENT()), buildTensorType(a->tensorType())});
    fwd.result = buildTensorType(ctx->tensorType());
    for (auto *stmt : ctx->forwardStmt()) {
      if (auto *let = stmt->letStmt())
        fwd.lets.push_back(buildLet(let));
      else
        fwd.terms.push_back(buildTerm(stmt->termDecl(), fwd.lets.size()));
    }
    fwd.resultValue = buildExpr(ctx->returnStmt()->expr());
    fwd.returnRange = source.range(ctx->returnStmt());
    return fwd;
  }

  BlockTermAST buildTerm(P::TermDeclContext *ctx, size_t afterLets) {
    BlockTermAST term;
    term.isLoss = ctx->kind->getText() == "loss";
    term.name = ctx->IDENT()->getText();
    term.range = source.range(ctx->IDENT());
    term.value = buildExpr(ctx->expr());
    term.afterLets = afterLets;
    return term;
  }

  ModelAST buildModel(P::ModelDeclContext *ctx) {
    ModelAST model;
    model.name = ctx->IDENT()->getText();
    model.range = source.range(ctx->IDENT());
    model.config = buildConfig(ctx->configList());
    for (auto *member : ctx->modelMember()) {
      if (auto *in = member->inputDecl())
        model.inputs.push_back(
            {in->IDENT()->getText(), source.range(in->IDENT()), buildTensorType(in->tensorType())});
      else if (auto *let = member->letStmt())
        model.lets.push_back(buildLet(let));
      else if (auto *loss = member->lossDecl()) {
        if (loss->IDENT())
          model.namedLosses.push_back(source.range(loss->IDENT()));
        model.losses.emplace_back(source.range(loss->getStart(), loss->getStart()),
                                  buildExpr(loss->expr()));
      } else if (auto *metric = member->metricDecl())
        model.metrics.push_back(
            {metric->IDENT()->getText(), source.range(metric->IDENT()), buildExpr(metric->expr())});
      else if (auto *opt = member->optimizerDecl())
        model.optimizers.push_back(
            {opt->IDENT()->getText(), source.range(opt->IDENT()), buildArgs(opt->callArgs())});
      else {
        auto *gen = member->generateDecl();
        model.generates.push_back({gen->input->getText(), gen->logits->getText(),
                                   source.range(gen->getStart(), gen->getStart()),
                                   source.range(gen->input, gen->input),
                                   source.range(gen->logits, gen->logits)});
      }
    }
    return model;
  }

  std::vector<ConfigParamAST> buildConfig(P::ConfigListContext *ctx) {
    std::vector<ConfigParamAST> config;
    if (!ctx)
      return config;
    for (auto *c : ctx->configParam()) {
      ConfigParamAST param;
      param.name = c->IDENT()->getText();
      param.range = source.range(c->IDENT());
      std::string kind = c->scalarKind()->getText();
      param.kind = kind == "int"      ? ScalarKind::Int
                   : kind == "float"  ? ScalarKind::Float
                   : kind == "bool"   ? ScalarKind::Bool
                   : kind == "string" ? ScalarKind::String
                                      : ScalarKind::Axis;
      if (c->expr())
        param.defaultValue = buildExpr(c->expr());
      config.push_back(std::move(param));
    }
    return config;
  }

  LetAST buildLet(P::LetStmtContext *ctx) {
    LetAST let;
    let.name = ctx->IDENT()->getText();
    let.range = source.range(ctx->IDENT());
    let.value = buildExpr(ctx->expr());
    if (ctx->shape()) {
      let.constraint = buildDims(ctx->shape());
      let.constraintRange = source.range(ctx->shape());
    }
    return let;
  }

  TensorTypeAST buildTensorType(P::TensorTypeContext *ctx) {
    TensorTypeAST type;
    std::string dtype = ctx->dtype()->getText();
    type.dtype = dtype == "f32" ? DType::F32 : dtype == "i32" ? DType::I32 : DType::Bool;
    type.dims = buildDims(ctx->shape());
    type.range = source.range(ctx);
    return type;
  }

  std::vector<DimAST> buildDims(P::ShapeContext *ctx) {
    std::vector<DimAST> dims;
    for (auto *d : ctx->dim()) {
      DimAST dim;
      dim.name = d->IDENT()->getText();
      dim.range = source.range(d);
      if (d->expr())
        dim.size = buildExpr(d->expr());
      dims.push_back(std::move(dim));
    }
    return dims;
  }

  std::vector<Argument> buildArgs(P::CallArgsContext *ctx) {
    std::vector<Argument> args;
    for (auto *a : ctx->arg()) {
      Argument arg;
      if (a->IDENT()) {
        arg.name = a->IDENT()->getText();
        arg.nameRange = source.range(a->IDENT());
      }
      arg.value = buildExpr(a->expr());
      args.push_back(std::move(arg));
    }
    return args;
  }

  ExprPtr buildExpr(P::ExprContext *ctx) {
    SMRange range = source.range(ctx);
    if (auto *c = dynamic_cast<P::CallExprContext *>(ctx))
      return std::make_unique<CallExpr>(range, buildExpr(c->expr()), buildArgs(c->callArgs()));
    if (auto *n = dynamic_cast<P::NegExprContext *>(ctx))
      return std::make_unique<NegExpr>(range, buildExpr(n->expr()));
    if (auto *m = dynamic_cast<P::MulExprContext *>(ctx))
      return buildBinary(range, m->op, m->expr(0), m->expr(1));
    if (auto *a = dynamic_cast<P::AddExprContext *>(ctx))
      return buildBinary(range, a->op, a->expr(0), a->expr(1));
    if (auto *c = dynamic_cast<P::CompareExprContext *>(ctx))
      return buildBinary(range, c->op, c->expr(0), c->expr(1));
    if (auto *p = dynamic_cast<P::ParenExprContext *>(ctx))
      return buildExpr(p->expr());
    if (auto *s = dynamic_cast<P::ShapeExprContext *>(ctx))
      return std::make_unique<ShapeExpr>(range, buildDims(s->shape()));
    if (auto *n = dynamic_cast<P::NameExprContext *>(ctx))
      return std::make_unique<NameExpr>(range, n->getText());
    if (auto *i = dynamic_cast<P::IntExprContext *>(ctx)) {
      errno = 0;
      long long value = std::strtoll(i->getText().c_str(), nullptr, 10);
      if (errno == ERANGE)
        diags.error(range, "integer literal " + i->getText() + " is too large");
      return std::make_unique<IntExpr>(range, value);
    }
    if (auto *f = dynamic_cast<P::FloatExprContext *>(ctx)) {
      errno = 0;
      double value = std::strtod(f->getText().c_str(), nullptr);
      if (errno == ERANGE && std::abs(value) > 1.0)
        diags.error(range, "number " + f->getText() + " is out of range");
      return std::make_unique<FloatExpr>(range, value);
    }
    if (auto *s = dynamic_cast<P::StringExprContext *>(ctx))
      return std::make_unique<StringExpr>(range, unquote(s->getText()));
    return std::make_unique<BoolExpr>(range, ctx->getText() == "true");
  }

  ExprPtr buildBinary(SMRange range, antlr4::Token *op, P::ExprContext *lhs, P::ExprContext *rhs) {
    static const std::pair<const char *, BinaryOp> ops[] = {
        {"@", BinaryOp::MatMul}, {"*", BinaryOp::Mul}, {"/", BinaryOp::Div}, {"+", BinaryOp::Add},
        {"-", BinaryOp::Sub},    {"==", BinaryOp::Eq}, {"!=", BinaryOp::Ne}, {"<", BinaryOp::Lt},
        {"<=", BinaryOp::Le},    {">", BinaryOp::Gt},  {">=", BinaryOp::Ge}};
    BinaryOp kind = BinaryOp::Add;
    for (auto &[spelling, k] : ops)
      if (op->getText() == spelling)
        kind = k;
    return std::make_unique<BinaryExpr>(range, kind, source.range(op, op), buildExpr(lhs),
                                        buildExpr(rhs));
  }

  const SourceText &source;
  DiagnosticEngine &diags;
};

} // namespace

std::unique_ptr<ModuleAST> shardc::parseModelFile(unsigned buffer, DiagnosticEngine &diags) {
  SourceText source(buffer, diags);
  if (!source.checkEncoding("model file"))
    return nullptr;
  ParseSession session(source, diags);
  auto *root =
      session.parse<antlr::ShardModelLexer, P>([](P &parser) { return parser.modelFile(); });
  if (!root)
    return nullptr;
  unsigned errorsBefore = diags.errorCount();
  auto module = ModelBuilder(source, diags).build(root);
  return diags.errorCount() == errorsBefore ? std::move(module) : nullptr;
}
