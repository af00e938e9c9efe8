//===- StepFunctions.h - the functions a compiled program runs --*- C++ -*-===//
//
// Between sema and MLIRGen: the typed program becomes one flat graph (scans
// unrolled, a scanned parameter one `param` node per layer; the forward with
// dropout masks for training, without for evaluation), extended with the
// reverse-mode gradient of the loss and the optimizer's update, and the
// three functions the runtime calls are lists of that graph's nodes:
//
//   train_step  params, optimizer state, inputs, step -> new params, new
//               state, loss, metrics
//   eval_step   params, inputs -> loss and metrics (per example where they
//               are a mean over the batch), the model's named values
//   grad_step   params, inputs -> loss, one gradient per parameter
//
// and for a model with `generate` whose attention reads `cache`s, --generate's
//
//   prefill_step params (a scanned one once per layer, under every layout),
//                the generate input -> the logits, each cache's value
//   decode_step  params (likewise), the tokens at one position and each
//                sample's position (the generate input's type, its last axis
//                of size 1), the caches -> the logits there, the caches with
//                that position written
//
// train_step and grad_step compute the training forward, eval_step the
// evaluation forward, where dropout is the identity (its inputs unused).
// Argument and result order is the runtime's ABI (runtime/README.md).
//
// With microbatches (gradient accumulation), train_step is built after
// partitioning (shardc-accumulate-microbatches) from two functions of a
// second flat graph, the program at one microbatch's size:
//
//   microbatch_step  params, the gradients' sums so far, one microbatch's
//                    inputs -> loss, metrics, the sums plus its gradients
//   apply_step       params, optimizer state, gradients, loss, step ->
//                    new params, new state, loss
//
// With a pipeline (`layer -> stage`), train_step is built after partitioning
// (shardc-pipeline-schedule) from each stage's functions of the program at one
// microbatch's size, and apply_step:
//
//   stage_forward_S   the stage's params, one microbatch's inputs, what earlier
//                     stages sent it -> what it sends to later stages, what its
//                     backward pass reads (residuals)
//   stage_backward_S  the same, the gradients' sums so far, the cotangents of
//                     what it sent, the residuals -> (the last stage: loss,
//                     metrics, which its forward made), the cotangents of what
//                     it received, the sums plus its gradients
//
// With a scan and neither (the scan as a loop), train_step, grad_step and eval_step
// are built after partitioning (shardc-layer-loop) from the functions of the
// prologue, the first layer and the epilogue (LayerLoopSteps), the stacked ABI as
// under a pipeline.
//
// Under a pipeline the runtime's ABI (StepProgram::params, apply_step) takes a
// scanned parameter and its state as one stacked tensor split over the stage
// axis, so that each stage holds its own layers; the pipeline pass slices a
// stage's layers out of it, and gives eval_step and grad_step (built layer by
// layer) the same arguments.
//
//===----------------------------------------------------------------------===//

#ifndef SHARDC_TRAIN_STEPFUNCTIONS_H
#define SHARDC_TRAIN_STEPFUNCTIONS_H

#include "shardc/Sema/TypedProgram.h"
#include "shardc/Support/Diagnostics.h"

#include <optional>

namespace shardc {

/// What an argument of a step function is: the runtime's ABI for the functions
/// it calls (parameters, then state, inputs, the step), and for apply_step
/// what the microbatches summed.
enum class ArgRole {
  parameter,
  optimizer_state,
  input,
  step,
  gradient,
  loss,
  activation, // a pipeline stage's value sent by an earlier stage
  cotangent,  // the cotangent of one it sent, sent back by the later stage
  residual,   // a forward value of the stage that its backward pass reads
  cache       // decode_step's: a `cache` of one layer, the whole context
};

/// An argument or a result of a step function: a node of the flat graph.
struct FunctionValue {
  std::string name; // parameter path, input name, `mu/conv1.w`, `step`, `loss`
  unsigned node = 0;
  int64_t layer = -1;   // a scanned parameter's layer (and its state's, its gradient's),
                        // or a scanned dropout input's
  bool stacked = false; // every layer of a scanned parameter, along dim 0 (pipelines)
  Sharding sharding;    // no dims: left to propagation (scalars)
  SMRange loc;
  /// A loss or metric that is the mean over the batch, returned unreduced
  /// by eval_step so that the runtime can leave out a padded batch's rows.
  bool perExample = false;
  ArgRole role = ArgRole::input; // of an argument
  /// Of a microbatch_step input: its dim that the microbatches split (-1: none).
  int64_t microbatchDim = -1;
  /// Of a microbatch_step result: the factor of its sum over the microbatches
  /// (1/N for a mean over the batch, 1 for a sum).
  double microbatchScale = 1;
  /// Of a pipeline stage's argument or result: the PipelineTransfer it is or
  /// whose cotangent it is (-1: none).
  int64_t transfer = -1;
};

struct StepFunction {
  std::string name;
  std::vector<FunctionValue> args, results;
  /// The graph nodes of the parameters' gradients that the step reduces across
  /// ranks: MLIRGen marks the ops that make them (kGradientSyncAttr), so that the
  /// collectives that reduce them are told from the others.
  std::vector<unsigned> gradients;
};

/// Gradient accumulation: train_step runs `grads` on each of the program's
/// `microbatches.count` slices of its inputs, sums (and scales) the results,
/// reduces the gradients across ranks once and updates with `apply`.
struct MicrobatchSteps {
  StepFunction grads, apply;
};

/// A value one pipeline stage computes and a later one reads, sent once per
/// microbatch (its cotangent sent back), sharded over the other mesh axes by the rules.
struct PipelineTransfer {
  unsigned node = 0;
  int from = 0, to = 0;
  Sharding sharding;
};

struct PipelineStage {
  StepFunction forward, backward;
};

struct PipelineSteps {
  std::string axis, schedule;
  std::vector<PipelineTransfer> transfers;
  std::vector<PipelineStage> stages;
  StepFunction apply;
};

/// A scan as a loop (no pipeline, no microbatches): the program in stages as a
/// pipeline's, the prologue (stage 0), each layer (1 .. `layers`) and the
/// epilogue (`layers` + 1), all on every rank in turn. `parts` are the
/// prologue's and the first layer's functions (PipelineStage), named prologue_
/// and layer_forward and _backward; `epilogue` (epilogue_step) is the
/// epilogue's forward and backward in one, which returns the loss and the
/// metrics; `evalParts` the three's evaluation forwards (_eval; the
/// epilogue's returns eval_step's results). train_step, grad_step and
/// eval_step (shardc-layer-loop) call the layer's for every layer on its slices
/// of the stacked parameters and dropout numbers, forward in order and backward
/// in reverse (the transpose of lax.scan). The prologue's functions take the
/// runtime's inputs (stacked).
struct LayerLoopSteps {
  int64_t layers = 0;
  std::vector<PipelineTransfer> transfers, evalTransfers;
  std::vector<PipelineStage> parts;
  StepFunction epilogue;
  std::vector<StepFunction> evalParts;
  StepFunction apply;
};

/// --generate with a KV cache: the prompt's caches and logits at once, then one
/// position per call.
struct GenerationSteps {
  StepFunction prefill, decode;
};

struct StepProgram {
  /// Every node any of the functions needs; a function computes the nodes
  /// its results depend on.
  Graph graph;
  /// One per parameter, a scanned one once per layer (the `params` of the
  /// functions' arguments), or stacked under a pipeline.
  std::vector<FunctionValue> params;
  /// Likewise the inputs (a scanned dropout's numbers once per layer, or stacked
  /// under a pipeline).
  std::vector<FunctionValue> inputs;
  std::optional<StepFunction> train; // none without an optimizer
  StepFunction eval, grad;
  /// With microbatches: `train` stays the runtime's ABI, and MLIRGen emits these
  /// instead of it.
  std::optional<MicrobatchSteps> microbatches;
  /// With a pipeline: likewise.
  std::optional<PipelineSteps> pipeline;
  /// With the scan as a loop: likewise; params and inputs are stacked.
  std::optional<LayerLoopSteps> loop;
  /// --generate's steps with a KV cache (DecodeStep.cpp); none where the logits
  /// mix positions otherwise, or under a pipeline.
  std::optional<GenerationSteps> generation;
};

/// Builds the flat graph and the three functions; with `microbatch` (the
/// program at one microbatch's size, TypedProgram::microbatchAxis set) also the
/// microbatch steps; with `loopScans`, the layer loop's functions where the
/// program can have them (LayerLoopSteps). Reports what it cannot differentiate
/// or unroll, or accumulate over microbatches, at its source location and
/// returns std::nullopt.
std::optional<StepProgram> buildStepProgram(const TypedProgram &program, DiagnosticEngine &diags,
                                            const TypedProgram *microbatch = nullptr,
                                            bool loopScans = false);

/// Where a node of the typed program is in the flat graph: in the training
/// forward, where each dropout applies its mask, and in the evaluation
/// forward, where each dropout is the identity (the same node where no
/// dropout feeds it).
struct FlatNode {
  unsigned train = 0, eval = 0;
};

/// One layer of a scanned block under a `remat` policy other than `everything`:
/// the flat graph's nodes [begin, end), which the gradient recomputes before the
/// layer's backward pass instead of keeping them from the forward.
struct RematGroup {
  std::string policy;
  unsigned begin = 0, end = 0;
};

/// A block's loss term or metric in the flat graph: its value in every instance
/// (each layer of a scan, each call of the block), in source and layer order.
struct FlatTerm {
  std::string path;
  bool isLoss = false;
  std::vector<FlatNode> values;
  SMRange loc;
};

/// Copies the program's forward into `out` for training and for evaluation,
/// every scan unrolled: the body once per layer, stacked parameters and
/// dropout inputs as per-layer `param` and `input` nodes (attribute
/// `layer`). `newIds` maps the program graph's node ids to `out`'s; `terms`
/// gets the block terms' values, one FlatTerm per path.
bool flattenForwards(const TypedProgram &program, Graph &out, std::vector<FlatNode> &newIds,
                     std::vector<RematGroup> &remat, std::vector<FlatTerm> &terms,
                     DiagnosticEngine &diags);

/// Appends the reverse-mode gradient of `loss` (a scalar) to `graph`; returns
/// one gradient node per node of `wrt` (a zero constant where the loss does
/// not depend on it), or std::nullopt after reporting an op it cannot
/// differentiate. The forward values of each `remat` group that its policy does
/// not keep are recomputed, just before the group's own gradient, by copies
/// (attribute `remat`: the group's index) that the gradient reads instead.
/// With `within`, only the nodes it marks (and those appended after it) are
/// differentiated; the others are constants to this gradient: a pipeline
/// stage's backward stops at the values it received, and a value received
/// with another made from it on an earlier stage gets no second share through
/// that stage's ops.
std::optional<std::vector<unsigned>> appendGradient(Graph &graph, unsigned loss,
                                                    const std::vector<unsigned> &wrt,
                                                    const std::vector<RematGroup> &remat,
                                                    DiagnosticEngine &diags,
                                                    const std::vector<bool> *within = nullptr);

/// The nodes of an optimizer update: the new parameters, then the new state in
/// the same order; and the loss the train step returns (NaN where the update was
/// not applied).
struct UpdateNodes {
  std::vector<unsigned> values;
  unsigned loss = 0;
};

/// Appends the optimizer's update (optax semantics) of `params` (nodes) by
/// `grads`, with the state nodes `state[s][p]` and the 1-based update number
/// `step` (an f32 scalar node), applied only where `loss` and every gradient are
/// finite (else each parameter and state keeps its value).
UpdateNodes appendOptimizerUpdate(Graph &graph, const Optimizer &optimizer, unsigned loss,
                                  const std::vector<unsigned> &params, std::vector<unsigned> grads,
                                  const std::vector<std::vector<unsigned>> &state, unsigned step);

/// Appends a node of `op` on `operands`; returns its id.
unsigned appendNode(Graph &graph, OpKind op, std::vector<unsigned> operands, const TensorType &type,
                    SMRange loc, std::map<std::string, Attribute> attrs = {});

} // namespace shardc

#endif
