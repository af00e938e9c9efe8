//===- RulesAST.h - abstract syntax of partition rules files ----*- C++ -*-===//

#ifndef SHARDC_AST_RULESAST_H
#define SHARDC_AST_RULESAST_H

#include "shardc/Support/Diagnostics.h"

#include <cstdint>
#include <string>
#include <vector>

namespace shardc {

struct MeshAxisAST {
  std::string name;
  SMRange range;
  int64_t size = 0;
  SMRange sizeRange;
};

struct MeshAST {
  SMRange range;
  std::vector<MeshAxisAST> axes;
};

/// The right side of a rule, or one entry of an override: the mesh axes a
/// dimension is split over; empty means replicated (`none`).
struct MeshTargetAST {
  SMRange range;
  std::vector<std::pair<std::string, SMRange>> axes;
  std::vector<std::string> axisNames() const;
};

/// `none`, `data` or `(data, model)`: how rules files spell mesh axes.
std::string formatMeshAxes(const std::vector<std::string> &axes);

struct RuleAST {
  std::string logicalAxis;
  SMRange range; // the whole rule
  SMRange axisRange;
  MeshTargetAST target;
};

struct OverrideAST {
  std::string pattern; // glob over parameter paths
  SMRange range;
  SMRange patternRange;
  std::vector<MeshTargetAST> dims;
};

/// remat "blocks" : nothing
struct RematAST {
  std::string pattern; // glob over scanned blocks' paths
  SMRange range;
  SMRange patternRange;
  std::string policy;
  SMRange policyRange;
};

/// microbatches 4
struct MicrobatchesAST {
  int64_t count = 0;
  SMRange range;
  SMRange countRange;
};

struct ScheduleAST {
  std::string name; // gpipe, 1f1b (lower case)
  SMRange range;
  SMRange nameRange;
};

/// precision matmul : bf16
struct PrecisionAST {
  std::string what, type; // matmul; f32 or bf16
  SMRange range;
  SMRange whatRange;
  SMRange typeRange;
};

struct RulesFileAST {
  std::string path;
  std::vector<MeshAST> meshes; // sema checks there is exactly one
  std::vector<RuleAST> rules;
  std::vector<OverrideAST> overrides;
  std::vector<RematAST> remats;
  std::vector<MicrobatchesAST> microbatches; // sema checks there is at most one
  std::vector<ScheduleAST> schedules;        // likewise
  std::vector<PrecisionAST> precisions;      // at most one per `what`
};

} // namespace shardc

#endif
