//===- Sharding.cpp - apply a rules file to a typed program ---------------===//
//
// 1. Check the rules file on its own: one mesh with unique, positive axes;
//    rules and overrides that name known mesh axes, each at most once; no
//    rule that an earlier rule for its logical axis keeps from ever applying.
// 2. Give every parameter, input and constrained value a sharding: an
//    override matching its path wins, else the rules decide its dimensions
//    the way Flax's logical_to_mesh_axes does (flax/linen/spmd.py): rules
//    for one logical axis are fallbacks in file order, and a rule whose mesh
//    axes a dimension of the tensor has already taken is skipped.
// 3. Check each sharding: a mesh axis splits at most one dimension of a
//    tensor, and every dimension divides by the product of its mesh axes.
//    Upstream MLIR would silently truncate instead, so this must run first.
//
//===----------------------------------------------------------------------===//

#include "shardc/Sema/Sema.h"

#include "shardrt/program_limits.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/CheckedArithmetic.h"

#include <map>
#include <set>

using namespace shardc;

namespace {

/// Glob over parameter paths: `*` matches within one path segment, `**`
/// across segments, `?` one character. Dynamic programming over the pattern
/// from its end, O(pattern x path): backtracking took exponential time on
/// patterns like `**a**a**a...b`.
bool globMatch(llvm::StringRef pattern, llvm::StringRef path) {
  const size_t n = path.size();
  // rest[j]: the pattern after the current token matches path[j..].
  std::vector<char> rest(n + 1, false), here(n + 1, false);
  rest[n] = true;
  size_t end = pattern.size();
  while (end > 0) {
    // The token ending at `end`: `**`, `*`, `?` or one character. (A run of
    // stars containing `**` matches anything whichever way it is split.)
    size_t start = end - 1;
    if (pattern[start] == '*' && start > 0 && pattern[start - 1] == '*')
      --start;
    llvm::StringRef token = pattern.slice(start, end);
    for (size_t j = n + 1; j-- > 0;) {
      if (token == "**")
        here[j] = rest[j] || (j < n && here[j + 1]);
      else if (token == "*")
        here[j] = rest[j] || (j < n && path[j] != '.' && here[j + 1]);
      else
        here[j] = j < n && (token[0] == '?' || token[0] == path[j]) && rest[j + 1];
    }
    std::swap(rest, here);
    end = start;
  }
  return rest[0];
}

std::string targetText(const MeshTargetAST &t) { return formatMeshAxes(t.axisNames()); }

std::string ruleText(const RuleAST &rule) {
  return "rule " + rule.logicalAxis + " -> " + targetText(rule.target);
}

bool sameSpec(const OverrideAST &a, const OverrideAST &b) {
  if (a.dims.size() != b.dims.size())
    return false;
  for (size_t i = 0; i < a.dims.size(); ++i)
    if (a.dims[i].axisNames() != b.dims[i].axisNames())
      return false;
  return true;
}

/// Every mesh axis of `inner` is one of `outer`'s (so `none` is within any).
bool usesOnlyAxesOf(const MeshTargetAST &inner, const MeshTargetAST &outer) {
  std::vector<std::string> outerAxes = outer.axisNames();
  return llvm::all_of(inner.axisNames(),
                      [&](const std::string &axis) { return llvm::is_contained(outerAxes, axis); });
}

class RulesApplier {
public:
  RulesApplier(TypedProgram &program, const RulesFileAST &rules, DiagnosticEngine &diags)
      : program(program), rules(rules), diags(diags) {
    for (const RuleAST &rule : rules.rules)
      axisRules.push_back({rule.logicalAxis, rule.target.axisNames()});
  }

  bool run() {
    unsigned errorsBefore = diags.errorCount();
    if (!checkMesh())
      return false;
    checkTargets();
    checkRules();
    if (diags.errorCount() != errorsBefore)
      return false;
    program.rulesPath = rules.path;
    if (!applyPipeline())
      return false;
    std::vector<bool> overrideUsed(rules.overrides.size(), false);
    for (Parameter &p : program.params)
      shard(p, /*isParam=*/true, overrideUsed);
    for (ShardedTensor &t : program.inputs)
      shard(t, false, overrideUsed);
    for (ShardedTensor &t : program.constraints)
      shard(t, false, overrideUsed);
    for (ShardedTensor &t : program.outputs)
      shard(t, false, overrideUsed);
    reportUnused(overrideUsed);
    applyRemat();
    applyMicrobatches();
    applyPrecisions(program, rules.precisions, diags);
    return diags.errorCount() == errorsBefore;
  }

private:
  bool checkMesh() {
    if (rules.meshes.empty()) {
      diags.fileError(rules.path, "no mesh in this rules file: start it with a line like "
                                  "`mesh (data = 2, model = 4)`");
      return false;
    }
    for (size_t i = 1; i < rules.meshes.size(); ++i) {
      diags.error(rules.meshes[i].range, "a rules file has one mesh; this is a second");
      diags.note(rules.meshes[0].range, "first mesh here");
    }
    bool ok = rules.meshes.size() == 1;
    std::map<std::string, SMRange> seen;
    for (const MeshAxisAST &axis : rules.meshes[0].axes) {
      if (axis.size < 1) {
        diags.error(axis.sizeRange, "mesh axis '" + axis.name +
                                        "' must have at least 1 device, got " +
                                        std::to_string(axis.size));
        ok = false;
      }
      auto [it, inserted] = seen.emplace(axis.name, axis.range);
      if (!inserted) {
        diags.error(axis.range, "duplicate mesh axis '" + axis.name + "'");
        diags.note(it->second, "first declared here");
        ok = false;
      }
      program.mesh.axes.emplace_back(axis.name, axis.size);
    }
    // The runtime's limits: ranks are MPI ints, a collective's axes bits of one.
    const MeshAST &mesh = rules.meshes[0];
    if (mesh.axes.size() > size_t(shardrt::kMaxMeshAxes)) {
      diags.error(mesh.range, "a mesh has at most " + std::to_string(shardrt::kMaxMeshAxes) +
                                  " axes, this one " + std::to_string(mesh.axes.size()));
      return false;
    }
    int64_t ranks = 1;
    for (const MeshAxisAST &axis : mesh.axes) {
      std::optional<int64_t> product = llvm::checkedMul(ranks, std::max<int64_t>(axis.size, 1));
      if (!product || *product > shardrt::kMaxRanks) {
        diags.error(mesh.range, "the mesh " + program.mesh.str() +
                                    " needs more than 2^31 - 1 devices (MPI's limit on ranks)");
        return false;
      }
      ranks = *product;
    }
    return ok;
  }

  bool isMeshAxis(const std::string &name) const {
    return llvm::any_of(program.mesh.axes, [&](const auto &a) { return a.first == name; });
  }

  void checkTarget(const MeshTargetAST &target) {
    std::set<std::string> seen;
    for (const auto &[axis, range] : target.axes) {
      if (!isMeshAxis(axis)) {
        std::string names;
        for (const auto &a : program.mesh.axes)
          names += (names.empty() ? "" : ", ") + a.first;
        diags.error(range, "unknown mesh axis '" + axis + "'; the mesh has " + names);
      } else if (!seen.insert(axis).second) {
        diags.error(range, "mesh axis '" + axis + "' appears twice in " + targetText(target));
      }
    }
  }

  void checkTargets() {
    for (const RuleAST &rule : rules.rules)
      checkTarget(rule.target);
    for (const OverrideAST &o : rules.overrides)
      for (const MeshTargetAST &t : o.dims)
        checkTarget(t);
  }

  /// A rule for a logical axis is tried only after every earlier rule for it
  /// was skipped, that is, after each had a mesh axis taken. If an earlier
  /// rule's mesh axes are all among this rule's (or it is `none`, which is
  /// never skipped), this rule is always skipped too.
  void checkRules() {
    for (auto rule = rules.rules.begin(); rule != rules.rules.end(); ++rule) {
      auto shadowing = std::find_if(rules.rules.begin(), rule, [&](const RuleAST &earlier) {
        return earlier.logicalAxis == rule->logicalAxis &&
               usesOnlyAxesOf(earlier.target, rule->target);
      });
      if (shadowing == rule)
        continue;
      if (shadowing->target.axisNames() == rule->target.axisNames()) {
        diags.warning(rule->range, "duplicate rule for logical axis '" + rule->logicalAxis + "'");
        continue;
      }
      diags.error(rule->range,
                  ruleText(*rule) + " can never apply: " +
                      (shadowing->target.axes.empty()
                           ? "the earlier " + ruleText(*shadowing) + " always does"
                           : "it is tried only after " + ruleText(*shadowing) +
                                 " was skipped for a taken mesh axis, and it uses that axis too"));
      diags.note(shadowing->range, "earlier rule here");
    }
    // A rule for an axis no tensor has is likely a typo, but rules files are
    // shared between models, so it only warns.
    std::set<std::string> modelAxes;
    auto collect = [&](const ShardedTensor &t) {
      for (const Dim &d : t.type.dims)
        modelAxes.insert(d.axis);
    };
    llvm::for_each(program.params, collect);
    llvm::for_each(program.inputs, collect);
    llvm::for_each(program.constraints, collect);
    for (const RuleAST &rule : rules.rules)
      if (!modelAxes.count(rule.logicalAxis))
        diags.warning(rule.axisRange, "rule for logical axis '" + rule.logicalAxis +
                                          "' matches no parameter, input or constrained value "
                                          "of model " +
                                          program.modelName);
  }

  void shard(ShardedTensor &t, bool isParam, std::vector<bool> &overrideUsed) {
    const OverrideAST *override = nullptr;
    if (isParam)
      for (size_t i = 0; i < rules.overrides.size(); ++i) {
        const OverrideAST &o = rules.overrides[i];
        if (!globMatch(o.pattern, t.path))
          continue;
        overrideUsed[i] = true;
        if (!override) {
          override = &o;
        } else if (!sameSpec(*override, o)) {
          diags.error(o.range, "conflicting overrides for parameter '" + t.path + "'");
          diags.note(override->range, "it also matches this override");
          return;
        }
      }

    if (override && override->dims.size() != t.type.dims.size()) {
      diags.error(override->range, "override \"" + override->pattern + "\" gives " +
                                       std::to_string(override->dims.size()) +
                                       " dimension(s), but '" + t.path + "' has " +
                                       std::to_string(t.type.dims.size()) + ": " + t.type.str());
      diags.note(t.loc, "'" + t.path + "' is declared here");
      return;
    }

    t.sharding.dims.assign(t.type.dims.size(), DimSharding());
    if (override) {
      for (size_t i = 0; i < t.type.dims.size(); ++i) {
        DimSharding &d = t.sharding.dims[i];
        d.meshAxes = override->dims[i].axisNames();
        d.reason = "override \"" + override->pattern + "\"";
        d.cause = override->dims[i].range;
      }
    } else {
      applyRules(t);
    }
    checkSharding(t);
  }

  /// Flax's _logical_to_mesh_axes (decideDims), each dimension told which rule
  /// decided it or which were skipped for a taken mesh axis.
  void applyRules(ShardedTensor &t) {
    std::vector<int> decided = decideDims(
        t.type.dims, axisRules, nullptr, [&](size_t r, size_t i, const std::string &taken) {
          const RuleAST &rule = rules.rules[r];
          t.sharding.dims[i].skipped.push_back({ruleText(rule) + " skipped, " + taken, rule.range});
        });
    for (auto [d, r] : llvm::zip_equal(t.sharding.dims, decided)) {
      if (r < 0) {
        d.reason = d.skipped.empty() ? "no rule" : "every rule skipped";
        continue;
      }
      const RuleAST &rule = rules.rules[r];
      d.meshAxes = rule.target.axisNames();
      d.reason = ruleText(rule);
      d.cause = rule.range;
    }
  }

  /// `layer -> stage`: the scanned layers in stages along one mesh axis, which
  /// nothing else may use; the pipeline's microbatches and schedule.
  bool applyPipeline() {
    const unsigned errorsBefore = diags.errorCount();
    const RuleAST *layerRule = nullptr;
    for (const RuleAST &rule : rules.rules)
      if (rule.logicalAxis == kLayerAxis && !rule.target.axes.empty() && !layerRule)
        layerRule = &rule;
    if (!layerRule) {
      // The layer loop's activations between its functions.
      for (const RuleAST &rule : rules.rules)
        if (rule.logicalAxis != kLayerAxis)
          program.pipeline.axisRules.push_back({rule.logicalAxis, rule.target.axisNames()});
      for (const ScheduleAST &schedule : rules.schedules)
        diags.error(schedule.range, "a schedule orders a pipeline's stages, and these rules "
                                    "make none: write `layer -> AXIS` to run the scanned "
                                    "layers in stages along a mesh axis");
      return diags.errorCount() == errorsBefore;
    }
    Pipeline &pipeline = program.pipeline;
    if (layerRule->target.axes.size() != 1) {
      diags.error(layerRule->target.range, "the layers' stages run along one mesh axis, not " +
                                               targetText(layerRule->target));
      return false;
    }
    pipeline.axis = layerRule->target.axes.front().first;
    pipeline.stages = program.mesh.size(pipeline.axis);
    pipeline.loc = layerRule->range;
    auto usesStages = [&](const MeshTargetAST &t) {
      return llvm::is_contained(t.axisNames(), pipeline.axis);
    };
    for (const RuleAST &rule : rules.rules) {
      if (&rule == layerRule)
        continue;
      if (usesStages(rule.target)) {
        diags.error(rule.range, "mesh axis '" + pipeline.axis + "' holds the pipeline's stages, " +
                                    "so " + ruleText(rule) + " cannot split '" + rule.logicalAxis +
                                    "' over it");
        diags.note(layerRule->range, "the stages are made here");
      } else if (rule.logicalAxis != kLayerAxis) {
        pipeline.axisRules.push_back({rule.logicalAxis, rule.target.axisNames()});
      }
    }
    for (const OverrideAST &o : rules.overrides)
      if (llvm::any_of(o.dims, usesStages)) {
        diags.error(o.range, "mesh axis '" + pipeline.axis + "' holds the pipeline's stages; " +
                                 "an override cannot split a parameter over it");
        diags.note(layerRule->range, "the stages are made here");
      }
    if (rules.microbatches.empty())
      diags.error(layerRule->range, "a pipeline runs microbatches through its stages: add "
                                    "`microbatches N` (N of at least " +
                                        std::to_string(pipeline.stages) +
                                        ", the stages, keeps every stage busy part of the time)");
    for (const ScheduleAST &schedule : rules.schedules) {
      if (&schedule != &rules.schedules.front()) {
        diags.error(schedule.range, "more than one schedule line");
        diags.note(rules.schedules.front().range, "the first is here");
      } else if (!llvm::is_contained(kPipelineSchedules, schedule.name)) {
        diags.error(schedule.nameRange, "unknown pipeline schedule \"" + schedule.name +
                                            "\"; the schedules are \"gpipe\" and \"1f1b\"");
      } else {
        pipeline.schedule = schedule.name;
      }
    }
    return diags.errorCount() == errorsBefore;
  }

  /// A stacked tensor's `layer` axis on the pipeline's stages: the layers must
  /// divide into them. A stacked parameter (with its optimizer state) or
  /// scanned dropout's numbers are then split over the stage axis, each stage
  /// holding its own layers'.
  void placeLayers(ShardedTensor &t) {
    if (t.sharding.dims.empty() || t.sharding.dims[0].meshAxes.empty() ||
        t.sharding.dims[0].meshAxes.front() != program.pipeline.axis)
      return;
    DimSharding &layer = t.sharding.dims[0];
    bool divides = t.stacked && t.type.dims[0].size % program.pipeline.stages == 0;
    if (!t.stacked) {
      diags.error(layer.cause, "'" + t.path + "' has a '" + std::string(kLayerAxis) +
                                   "' axis that no scan stacked, so it cannot run in the "
                                   "pipeline's stages (" +
                                   layer.reason + ")");
      diags.note(t.loc, "'" + t.path + "' " + t.type.str() + " is declared here");
    } else if (!divides && !layersReported) {
      layersReported = true; // once: every tensor of the scan has the same layers
      diags.error(layer.cause, "the " + std::to_string(t.type.dims[0].size) + " layers of '" +
                                   t.path + "' do not divide into the " +
                                   std::to_string(program.pipeline.stages) + " stages of '" +
                                   program.pipeline.axis + "' (" + layer.reason + ")");
      diags.note(t.loc, "'" + t.path + "' " + t.type.str() + " is declared here");
    }
    if (!divides)
      layer.meshAxes.clear();
    layer.reason += ": pipeline stages";
  }

  void checkSharding(ShardedTensor &t) {
    const bool pipelined = !program.pipeline.axis.empty();
    if (pipelined)
      placeLayers(t);
    auto onStages = [&](const DimSharding &d) {
      return pipelined && d.meshAxes == std::vector<std::string>{program.pipeline.axis};
    };
    if (t.stacked && !t.sharding.dims.empty() && !t.sharding.dims[0].meshAxes.empty() &&
        !onStages(t.sharding.dims[0])) {
      const DimSharding &layer = t.sharding.dims[0];
      diags.error(layer.cause, "the '" + std::string(kLayerAxis) + "' axis of '" + t.path +
                                   "', stacked by a scan, cannot be split (" + layer.reason +
                                   "): the layers run one after another; a rule `" + kLayerAxis +
                                   " -> AXIS` runs them in pipeline stages along AXIS");
      diags.note(t.loc, "'" + t.path + "' " + t.type.str() + " is declared here");
    }
    std::map<std::string, size_t> usedBy;
    for (size_t i = 0; i < t.sharding.dims.size(); ++i) {
      const DimSharding &d = t.sharding.dims[i];
      const Dim &dim = t.type.dims[i];
      int64_t parts = 1;
      std::string axes;
      for (const std::string &axis : d.meshAxes) {
        parts *= program.mesh.size(axis);
        axes += (axes.empty() ? "" : " x ") + axis + " (" +
                std::to_string(program.mesh.size(axis)) + ")";
        auto [it, inserted] = usedBy.emplace(axis, i);
        if (!inserted) {
          diags.error(d.cause, "mesh axis '" + axis + "' is used twice in '" + t.path + "' " +
                                   t.type.str() + ": by dimension '" +
                                   t.type.dims[it->second].axis + "' and by '" + dim.axis + "' (" +
                                   d.reason + ")");
          diags.note(t.loc, "'" + t.path + "' is declared here");
        }
      }
      if (dim.size % parts != 0) {
        diags.error(d.cause, "dimension '" + dim.axis + "' of '" + t.path + "' has size " +
                                 std::to_string(dim.size) + ", which is not divisible by " + axes +
                                 (d.meshAxes.size() > 1 ? " = " + std::to_string(parts) : "") +
                                 " (" + d.reason + ")");
        diags.note(t.loc, "'" + t.path + "' " + t.type.str() + " is declared here");
      }
    }
  }

  void reportUnused(const std::vector<bool> &overrideUsed) {
    for (size_t i = 0; i < rules.overrides.size(); ++i) {
      if (overrideUsed[i])
        continue;
      std::string paths;
      for (const Parameter &p : program.params)
        paths += (paths.empty() ? "" : ", ") + p.path;
      diags.error(rules.overrides[i].patternRange,
                  "override \"" + rules.overrides[i].pattern +
                      "\" matches no parameter; the parameters are " +
                      (paths.empty() ? "none" : paths));
    }
  }

  /// Each `remat` names scanned blocks by a glob over their paths; the first that
  /// matches a scan gives it its policy (attribute `remat` of the scan node).
  void applyRemat() {
    if (rules.remats.empty())
      return;
    std::vector<Node *> scans;
    std::string paths;
    for (Node &node : program.graph.nodes)
      if (node.op == OpKind::scan) {
        scans.push_back(&node);
        paths += (paths.empty() ? "" : ", ") + std::get<std::string>(node.attrs.at("instance"));
      }
    for (const RematAST &remat : rules.remats) {
      if (!llvm::is_contained(kRematPolicies, remat.policy)) {
        diags.error(remat.policyRange, "unknown remat policy '" + remat.policy +
                                           "': nothing (recompute the block), dots (keep "
                                           "the matmuls' and contractions' outputs) or "
                                           "everything (recompute nothing)");
        continue;
      }
      bool matched = false;
      for (Node *scan : scans) {
        if (!globMatch(remat.pattern, std::get<std::string>(scan->attrs.at("instance"))))
          continue;
        matched = true;
        scan->attrs.try_emplace("remat", remat.policy);
      }
      if (!matched)
        diags.error(remat.patternRange,
                    "remat \"" + remat.pattern +
                        "\" matches no scanned block (remat applies to the layers of a "
                        "scan); the scanned blocks are " +
                        (paths.empty() ? "none" : paths));
    }
  }

  /// `microbatches N`: at most one, N at least 1, and a training step to run them.
  void applyMicrobatches() {
    if (rules.microbatches.empty())
      return;
    const MicrobatchesAST &first = rules.microbatches.front();
    for (const MicrobatchesAST &again : llvm::drop_begin(rules.microbatches)) {
      diags.error(again.range, "more than one microbatches line");
      diags.note(first.range, "the first is here");
    }
    if (first.count < 1)
      diags.error(first.countRange,
                  "microbatches must be at least 1, not " + std::to_string(first.count));
    else if (!program.optimizer)
      diags.error(first.range, "microbatches split the training step's batch, and model '" +
                                   program.modelName + "' has no optimizer to train with");
    else if (program.microbatchAxis.empty()) { // not the microbatch's own program
      checkMicrobatchRows(first);
      warnIdleStages(first);
    }
    program.microbatches = {first.count, first.range};
  }

  /// Fewer microbatches than stages trains right, but no stage ever reaches the
  /// steady state (1F1B's one forward and one backward at a time).
  void warnIdleStages(const MicrobatchesAST &microbatches) {
    const int64_t m = microbatches.count, p = program.pipeline.stages;
    if (program.pipeline.axis.empty() || m >= p)
      return;
    diags.warning(microbatches.countRange,
                  std::to_string(m) + " microbatches through " + std::to_string(p) +
                      " pipeline stages: each stage idles " +
                      std::to_string((100 * (p - 1) + (m + p - 1) / 2) / (m + p - 1)) +
                      " % of the step, the bubble (p - 1) / (m + p - 1); with " +
                      std::to_string(p) + " or more every stage has a steady state");
  }

  /// Each rank's rows of the batch (the first input's first dim) divide into the
  /// microbatches: one error here rather than one per tensor of the microbatch.
  void checkMicrobatchRows(const MicrobatchesAST &microbatches) {
    const Input *input = batchInput(program);
    if (!input || input->sharding.dims.empty())
      return;
    const Dim &batch = input->type.dims.front();
    int64_t shards = 1;
    for (const std::string &axis : input->sharding.dims.front().meshAxes)
      shards *= program.mesh.size(axis);
    if (batch.size % shards == 0 && (batch.size / shards) % microbatches.count == 0)
      return;
    diags.error(microbatches.countRange,
                std::to_string(microbatches.count) + " microbatches do not divide the batch: '" +
                    batch.axis + "' = " + std::to_string(batch.size) + " of input '" + input->path +
                    "' over " + std::to_string(shards) + " shards is " +
                    std::to_string(batch.size / shards) + " per rank");
    diags.note(input->loc, "'" + input->path + "' is declared here");
  }

  TypedProgram &program;
  const RulesFileAST &rules;
  DiagnosticEngine &diags;
  std::vector<AxisRule> axisRules; // rules.rules, as decideDims reads them
  bool layersReported = false;
};

} // namespace

bool shardc::applyPrecisions(TypedProgram &program, llvm::ArrayRef<PrecisionAST> precisions,
                             DiagnosticEngine &diags) {
  const unsigned errorsBefore = diags.errorCount();
  std::map<std::string, const PrecisionAST *> seen;
  for (const PrecisionAST &precision : precisions) {
    if (precision.what != "matmul" && precision.what != "gradients") {
      diags.error(precision.whatRange,
                  "unknown precision '" + precision.what +
                      "': `precision matmul : bf16` rounds every matrix product's "
                      "operands to bfloat16, `precision gradients : bf16` reduces the "
                      "gradients across ranks in bfloat16");
      continue;
    }
    if (precision.type != "f32" && precision.type != "bf16") {
      diags.error(precision.typeRange,
                  "precision " + precision.what + " is f32 or bf16, not '" + precision.type + "'");
      continue;
    }
    auto [first, inserted] = seen.try_emplace(precision.what, &precision);
    if (!inserted) {
      diags.error(precision.range, "more than one precision line for " + precision.what);
      diags.note(first->second->range, "the first is here");
      continue;
    }
    (precision.what == "matmul" ? program.matmulInBf16 : program.gradientsInBf16) =
        precision.type == "bf16";
  }
  return diags.errorCount() == errorsBefore;
}

bool shardc::applyRules(TypedProgram &program, const RulesFileAST &rules, DiagnosticEngine &diags) {
  return RulesApplier(program, rules, diags).run();
}
