//===- RulesParser.cpp - ANTLR parse tree of a rules file to AST ----------===//

#include "ParseSupport.h"
#include "shardc/Parse/Parser.h"

#include "ShardRulesLexer.h"
#include "ShardRulesParser.h"

#include <cerrno>
#include <cstdlib>

using namespace shardc;
using namespace shardc::parse;
using P = shardc::antlr::ShardRulesParser;

static MeshTargetAST buildTarget(const SourceText &source, P::MeshTargetContext *ctx) {
  MeshTargetAST target;
  target.range = source.range(ctx);
  for (auto *axis : ctx->IDENT())
    target.axes.emplace_back(axis->getText(), source.range(axis));
  return target;
}

std::unique_ptr<RulesFileAST> shardc::parseRulesFile(unsigned buffer, DiagnosticEngine &diags) {
  SourceText source(buffer, diags);
  if (!source.checkEncoding("rules file"))
    return nullptr;
  ParseSession session(source, diags);
  auto *root =
      session.parse<antlr::ShardRulesLexer, P>([](P &parser) { return parser.rulesFile(); });
  if (!root)
    return nullptr;

  unsigned errorsBefore = diags.errorCount();
  auto rules = std::make_unique<RulesFileAST>();
  rules->path = source.path();
  for (auto *m : root->meshDecl()) {
    MeshAST mesh;
    mesh.range = source.range(m->getStart(), m->getStart());
    for (auto *a : m->meshAxis()) {
      errno = 0;
      long long size = std::strtoll(a->INT()->getText().c_str(), nullptr, 10);
      if (errno == ERANGE)
        diags.error(source.range(a->INT()),
                    "mesh axis size " + a->INT()->getText() + " is too large");
      mesh.axes.push_back(
          {a->IDENT()->getText(), source.range(a->IDENT()), size, source.range(a->INT())});
    }
    rules->meshes.push_back(std::move(mesh));
  }
  for (auto *block : root->rulesBlock())
    for (auto *r : block->ruleDecl())
      rules->rules.push_back({r->IDENT()->getText(), source.range(r), source.range(r->IDENT()),
                              buildTarget(source, r->meshTarget())});
  for (auto *o : root->overrideDecl()) {
    OverrideAST override;
    override.pattern = unquote(o->STRING()->getText());
    override.range = source.range(o);
    override.patternRange = source.range(o->STRING());
    for (auto *t : o->meshTarget())
      override.dims.push_back(buildTarget(source, t));
    rules->overrides.push_back(std::move(override));
  }
  for (auto *r : root->rematDecl()) {
    RematAST remat;
    remat.pattern = unquote(r->STRING()->getText());
    remat.range = source.range(r);
    remat.patternRange = source.range(r->STRING());
    remat.policy = r->IDENT()->getText();
    remat.policyRange = source.range(r->IDENT());
    rules->remats.push_back(std::move(remat));
  }
  for (auto *m : root->microbatchesDecl()) {
    MicrobatchesAST microbatches;
    errno = 0;
    microbatches.count = std::strtoll(m->INT()->getText().c_str(), nullptr, 10);
    microbatches.range = source.range(m);
    microbatches.countRange = source.range(m->INT());
    if (errno == ERANGE)
      diags.error(microbatches.countRange, "microbatches " + m->INT()->getText() + " is too large");
    rules->microbatches.push_back(microbatches);
  }
  for (auto *s : root->scheduleDecl()) {
    ScheduleAST schedule;
    schedule.name = llvm::StringRef(unquote(s->STRING()->getText())).lower();
    schedule.range = source.range(s);
    schedule.nameRange = source.range(s->STRING());
    rules->schedules.push_back(schedule);
  }
  for (auto *p : root->precisionDecl()) {
    PrecisionAST precision;
    precision.what = p->IDENT(0)->getText();
    precision.type = p->IDENT(1)->getText();
    precision.range = source.range(p);
    precision.whatRange = source.range(p->IDENT(0));
    precision.typeRange = source.range(p->IDENT(1));
    rules->precisions.push_back(precision);
  }
  return diags.errorCount() == errorsBefore ? std::move(rules) : nullptr;
}
