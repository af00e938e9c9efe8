//===- Candidates.h - the layouts a layout search tries ----------*- C++ -*-===//
//
// `shardc tune` starts from the layouts people write by hand, made from the
// model's own logical axes (read off its typed program, before any rules):
//
//   dp           the batch over every rank
//   fsdp         dp, and the parameters' most common axis over the same ranks
//                (ZeRO-3: each weight all-gathered where it is used)
//   tp(AXIS)     one parameter axis over a `model` mesh axis, the batch over
//                `data`
//   megatron     every column/row pair axis at once (an axis that one
//                contraction with a parameter makes and another contracts, as
//                Megatron-LM's MLP hidden units and attention heads), except
//                the axes of a scan's carry: the residual stream stays whole
//   megatron+sp  megatron, and the sequence over `model` where nothing else
//                took it (Korthikanti et al.)
//   fsdp+megatron  both, on a two-axis mesh
//
// over every factorization of the ranks into (data, model). Which of them
// compile, fit and run fastest is for the search to find out.
//
//===----------------------------------------------------------------------===//

#ifndef SHARDC_TUNE_CANDIDATES_H
#define SHARDC_TUNE_CANDIDATES_H

#include "shardc/Sema/TypedProgram.h"

#include <string>
#include <vector>

namespace shardc {

/// The roles the search gives a model's logical axes.
struct ModelAxes {
  std::string batch;                      // the inputs' first axis
  std::string sequence;                   // the batch input's next axis, if a sequence
  std::vector<std::string> parameterAxes; // most parameter bytes first; no `layer`
  std::vector<std::string> pairs;         // column/row pair axes, in the same order
  std::vector<std::string> carry;         // the axes of every scan's carry
  std::string fsdp;                       // the axis in the most parameter bytes
};

ModelAxes analyzeAxes(const TypedProgram &program);

/// One layout: a mesh of `data` and `model` and the rules, in order.
struct Candidate {
  std::string name; // "megatron", "tp(hidden)", "dp", ...
  Mesh mesh;
  std::vector<std::pair<std::string, std::string>> rules; // logical axis -> mesh axis
  std::string summary;                                    // "batch over data, hidden over model"
  /// The precision policy every candidate shares (shardc tune --precision):
  /// matmul -> bf16, ...
  std::vector<std::pair<std::string, std::string>> precisions;
  /// `precision matmul : bf16`, one per policy.
  std::vector<std::string> precisionLines() const;
  /// The rules file, its comment lines (each `// ...`) first.
  std::string rulesText(llvm::ArrayRef<std::string> comment = {}) const;
  /// `megatron 2x4`: the name, then the mesh as data x model.
  std::string label() const;
};

std::vector<Candidate> layoutCandidates(const ModelAxes &axes, int64_t ranks);

} // namespace shardc

#endif
