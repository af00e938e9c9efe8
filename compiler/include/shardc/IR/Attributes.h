//===- Attributes.h - what the stages record on the module ------*- C++ -*-===//
//
// The names of the generated functions and of the attributes MLIRGen stamps
// on the module, its grid and its functions' arguments and results: all that
// the stages after it (lowering, the communication plan) know of the
// program, so that they read the IR alone. Then the attributes the passes
// after partitioning leave for the later ones.
//
//===----------------------------------------------------------------------===//

#ifndef SHARDC_IR_ATTRIBUTES_H
#define SHARDC_IR_ATTRIBUTES_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Operation.h"

namespace shardc {

inline constexpr const char *kTrainFunction = "train_step";
inline constexpr const char *kEvalFunction = "eval_step";
inline constexpr const char *kGradFunction = "grad_step";
inline constexpr const char *kPrefillFunction = "prefill_step";
inline constexpr const char *kDecodeFunction = "decode_step";
inline constexpr const char *kGridName = "mesh";
/// With microbatches, in place of train_step until shardc-accumulate-microbatches
/// builds it from them (StepFunctions.h).
inline constexpr const char *kMicrobatchFunction = "microbatch_step";
inline constexpr const char *kApplyFunction = "apply_step";
/// With a pipeline, each stage's functions (+ the stage's number) in place of
/// microbatch_step, until shardc-pipeline-schedule builds train_step.
inline constexpr const char *kStageForwardFunction = "stage_forward_";
inline constexpr const char *kStageBackwardFunction = "stage_backward_";

/// On arguments and results: the parameter path, `mu/` + path, input name,
/// `step`, `loss`, ...
inline constexpr const char *kNameAttr = "shardc.name";
/// A layer slice of a scanned parameter (its state, its gradient) or dropout input.
inline constexpr const char *kLayerAttr = "shardc.layer";
/// Every layer of a scanned parameter (its state, its gradient), stacked along
/// dim 0 (the value: how many): a pipeline's apply_step, split over the stage axis.
inline constexpr const char *kStackedAttr = "shardc.stacked";
/// An eval result returned per example.
inline constexpr const char *kPerExampleAttr = "shardc.per_example";
/// On ops: a value the backward pass recomputes (remat), with its group (one
/// layer of a scanned block under a `remat` policy).
inline constexpr const char *kRematAttr = "shardc.remat";

/// On arguments: what the runtime passes there (its ABI, runtime/README.md),
/// one of the roles below.
inline constexpr const char *kRoleAttr = "shardc.role";
inline constexpr const char *kParameterRole = "parameter";
inline constexpr const char *kOptimizerStateRole = "optimizer_state";
inline constexpr const char *kInputRole = "input";
inline constexpr const char *kStepRole = "step";
/// apply_step's: the sums over the microbatches.
inline constexpr const char *kGradientRole = "gradient";
inline constexpr const char *kLossRole = "loss";
/// A pipeline stage's: a value an earlier stage sent, the cotangent of one it sent.
inline constexpr const char *kActivationRole = "activation";
inline constexpr const char *kCotangentRole = "cotangent";
/// A stage's forward value that its backward pass reads: a result of the
/// forward (named `residual/N`, kept per microbatch), an argument of the backward.
inline constexpr const char *kResidualRole = "residual";
/// decode_step's: one layer's `cache`, the whole context.
inline constexpr const char *kCacheRole = "cache";
/// On a stage function's activation and cotangent arguments and results: the
/// index of the transfer (kPipelineAttr's `transfers`).
inline constexpr const char *kTransferAttr = "shardc.transfer";

/// On the op that makes a parameter's gradient in train_step (and
/// microbatch_step), then, from shardc-mark-gradient-syncs on, on the
/// all_reduces and reduce_scatters that reduce it across ranks: what
/// --reduce-precision bf16 sends in bfloat16.
inline constexpr const char *kGradientSyncAttr = "shardc.gradient_sync";

/// On the module: the number of microbatches of train_step.
inline constexpr const char *kMicrobatchesAttr = "shardc.microbatches";
/// On the module: "bf16" where the rules file's `precision matmul : bf16` asks
/// for every matrix product's operands in bfloat16 (shardc-matmul-operands-bf16).
inline constexpr const char *kMatmulPrecisionAttr = "shardc.matmul_precision";
/// On the module: "bf16" where the rules file's `precision gradients : bf16`
/// has the run reduce the gradients in bfloat16 (--reduce-precision's default).
inline constexpr const char *kGradientPrecisionAttr = "shardc.gradient_precision";
/// Whether `module`'s precision attribute `name` (kMatmulPrecisionAttr,
/// kGradientPrecisionAttr) asks for bfloat16.
inline bool precisionIsBf16(mlir::Operation *module, const char *name) {
  auto precision = module->getAttrOfType<mlir::StringAttr>(name);
  return precision && precision.getValue() == "bf16";
}
/// On the module: the CPU the code is compiled for (--target-cpu, `native`
/// resolved to the host's) and the instruction set features the code may use that
/// the runtime checks at start, which the manifest records too.
inline constexpr const char *kTargetCpuAttr = "shardc.target_cpu";
inline constexpr const char *kTargetFeaturesAttr = "shardc.target_features";
/// On a microbatch_step input: the dim the microbatches split.
inline constexpr const char *kMicrobatchDimAttr = "shardc.microbatch_dim";
/// On a microbatch_step result: the factor of its sum over the microbatches.
inline constexpr const char *kMicrobatchScaleAttr = "shardc.microbatch_scale";

/// On the module, with a pipeline: {axis (grid axis index), stages, schedule,
/// transfers: [[from stage, to stage], ...]}; shardc-pipeline-schedule adds
/// kept_bytes: per stage, the bytes it keeps per microbatch for its backward pass.
inline constexpr const char *kPipelineAttr = "shardc.pipeline";

/// On the module, with the scan as a loop: {layers, transfers: [[from stage, to
/// stage], ...]} (stage 0 the prologue, 1 .. layers the layers, layers + 1 the
/// epilogue), for shardc-layer-loop; on the loops it makes (a unit attribute).
inline constexpr const char *kLayerLoopAttr = "shardc.layer_loop";
inline constexpr const char *kPrologueFunction = "prologue_";
inline constexpr const char *kLayerFunction = "layer_";
inline constexpr const char *kEpilogueFunction = "epilogue_";

/// On the module: the rules file the shardings come from.
inline constexpr const char *kRulesAttr = "shardc.rules";
/// On the module: the source locations of the sharding constraints and of
/// the outputs' shardings, where a reshard is asked for.
inline constexpr const char *kRequestedLayoutsAttr = "shardc.requested_layouts";
/// On the module: for each mesh axis, the rules (and overrides) that split some
/// parameter, input or constrained value over it, for the report to name what
/// made a collective: dictionaries {axis, rule ("rule hidden -> model"), at}.
inline constexpr const char *kAxisRulesAttr = "shardc.axis_rules";
/// On the grid: the names of its axes, as the rules file writes them.
inline constexpr const char *kAxisNamesAttr = "shardc.axis_names";

/// On each all_gather shardc-regather-parameters copies, a number that keeps
/// the copies apart: cse would merge equal collectives of the same operand
/// back into one.
inline constexpr llvm::StringLiteral kRegatherAttr = "shardc.regather";

} // namespace shardc

#endif
