//===- StepFunctionsImpl.h - the step builder of Train's files -*- C++ -*-===//
//
// StepProgramBuilder builds the step functions of StepFunctions.h, one idea
// per file:
//   StepFunctions.cpp   train_step, eval_step and grad_step from the flat graph
//   Microbatches.cpp    microbatch_step and apply_step (gradient accumulation)
//   PipelineStages.cpp  a pipeline's stages and the functions each runs
//   LayerLoop.cpp       the scan as a loop: the layer-loop split (the stages'
//                       split of PipelineStages.cpp, one stage per layer)
//   DecodeStep.cpp      prefill_step and decode_step: --generate's KV cache
//
//===----------------------------------------------------------------------===//

#ifndef SHARDC_LIB_TRAIN_STEPFUNCTIONSIMPL_H
#define SHARDC_LIB_TRAIN_STEPFUNCTIONSIMPL_H

#include "shardc/Train/StepFunctions.h"

#include <map>
#include <set>

namespace shardc {

class StepProgramBuilder {
public:
  StepProgramBuilder(const TypedProgram &program, DiagnosticEngine &diags)
      : program(program), diags(diags) {}

  std::optional<StepProgram> run(const TypedProgram *microbatch, bool loopScans);

  static bool hasAxis(const TensorType &type, llvm::StringRef axis);

  /// Whether `node` mixes the examples of the microbatch axis: it reduces over
  /// it (a batch norm's statistics, a contraction over the batch), normalises
  /// over it (a softmax whose last axis it is) or depends on a row's position in
  /// it (a causal mask over it). One microbatch would compute its own. (The
  /// decode step asks the same of the positions.)
  static bool mixesExamples(const Graph &graph, const Node &node, llvm::StringRef axis);

private:
  const TypedProgram &program;
  DiagnosticEngine &diags;
  StepProgram sp;

  /// A program's training forward and gradient in the flat graph.
  struct Forward {
    std::vector<FlatNode> ids;
    std::vector<FunctionValue> params, inputs;
    std::vector<unsigned> grads;
    /// The loss (the model's and its blocks' loss terms), then the model's
    /// metrics, then the block terms' (each the mean of its values).
    std::vector<FunctionValue> lossAndMetrics;
    std::vector<RematGroup> remat;
    /// The sum of the block loss terms (weighted: flatten's `auxLossWeight`).
    std::optional<FlatNode> auxLoss;
    /// Each block term's path and the mean of its values.
    std::vector<std::pair<std::string, FlatNode>> termMeans;
  };

  /// Appends `p`'s forwards and the gradient of its loss to the flat graph.
  std::optional<Forward> differentiate(const TypedProgram &p, double auxLossWeight = 1);

  /// Appends `p`'s forwards to the flat graph (no gradient yet); its loss is the
  /// model's plus `auxLossWeight` times the sum of its blocks' loss terms.
  std::optional<Forward> flatten(const TypedProgram &p, double auxLossWeight);

  /// `op` on two scalars of both forwards: one node where they are one.
  FlatNode scalarOp(OpKind op, FlatNode lhs, FlatNode rhs, SMRange loc);

  /// An f32[] constant of both forwards.
  FlatNode scalarConstant(double value, SMRange loc);

  /// The block terms: their sums and means; the loss terms' weighted sum.
  void addBlockTerms(Forward &forward, const std::vector<FlatTerm> &terms, double auxLossWeight);

  /// A node without operands: an argument of the step functions.
  unsigned addNode(OpKind op, const std::string &name, const TensorType &type, SMRange loc);

  /// A value shaped and sharded like parameter `p`.
  static FunctionValue like(const FunctionValue &p, const std::string &name, unsigned node);

  /// An argument for a gradient of parameter `p` (a sum of them), sharded like it.
  FunctionValue gradientArgument(const FunctionValue &p);

  FunctionValue scalarResult(const std::string &name, unsigned node);

  /// The arguments of a parameter or input (`op` is its node's): the tensor,
  /// or a stacked one layer by layer, each sharded without its layer dim.
  std::vector<FunctionValue> layersOf(const ShardedTensor &t, OpKind op, unsigned begin);

  /// The sharding of `dim` wherever an input has the same logical axis (the
  /// rules place an axis the same way in every tensor).
  Sharding shardingOfAxis(const std::string &axis);

  /// A loss or metric that is the mean of one value per example (the first
  /// dim of an input) is returned per example, as f32.
  FunctionValue evalResult(const Output &o, unsigned node);

  /// A block term's eval result: its value repeated for every example of the
  /// batch, so that evaluation averages it over the split as it averages the
  /// loss (a scalar where no input has a batch).
  FunctionValue termEvalResult(const std::string &path, unsigned node);

  /// Optimizer state arguments shaped like `params`, appended to `args`: the
  /// state nodes, kind major.
  std::vector<std::vector<unsigned>> addState(const Optimizer &optimizer,
                                              const std::vector<FunctionValue> &params,
                                              std::vector<FunctionValue> &args);

  FunctionValue stepArgument(const Optimizer &optimizer);

  static std::vector<unsigned> nodesOf(const std::vector<FunctionValue> &values);

  /// The update's results, mirroring the arguments: parameters, then state.
  static void addUpdateResults(StepFunction &fn, const UpdateNodes &updated);

  void buildTrain(const Optimizer &optimizer, const std::vector<FunctionValue> &inputs,
                  const std::vector<unsigned> &grads,
                  const std::vector<FunctionValue> &lossAndMetrics);

  //===--------------------------------------------------------------------===//
  // Microbatches (Microbatches.cpp)
  //===--------------------------------------------------------------------===//

  /// Only the loss and the metrics may mix the microbatch axis's examples (as
  /// their outermost mean or sum).
  bool checkBatchReductions(const TypedProgram &micro);

  /// The factor of the sum over microbatches of a loss or metric (`id` in
  /// `micro`'s graph) that gives the batch's value: 1/N for a mean over the
  /// microbatch axis, 1 for a sum.
  std::optional<double> microbatchScale(const TypedProgram &micro, unsigned id,
                                        const std::string &what);

  /// The checks every step at one microbatch's size needs.
  bool checkMicrobatchProgram(const TypedProgram &micro);

  /// The inputs, each with the dim that the microbatches split.
  std::vector<FunctionValue> microbatchInputs(const Forward &forward, const TypedProgram &micro);

  /// The loss and the metrics, each with the factor of its sum over microbatches.
  std::optional<std::vector<FunctionValue>> scaledLossAndMetrics(const Forward &forward,
                                                                 const TypedProgram &micro);

  /// The gradients are added to their sums in the function that makes them,
  /// as train_step's update reads them: sharding propagation then reduces each
  /// where the sum needs it (a reduce-scatter under FSDP); a gradient returned
  /// as it is made would ask its contraction for the parameter's sharding
  /// (all-to-alls of its operands, every rank computing it from the whole
  /// batch). Appends the sums' arguments and results to `fn`.
  void addGradientSums(StepFunction &fn, const std::vector<FunctionValue> &params,
                       const std::vector<unsigned> &grads, double scale,
                       std::vector<FunctionValue> &sumArgs);

  /// apply_step: the sums over the microbatches are its arguments.
  StepFunction buildApply(const std::vector<FunctionValue> &params, const FunctionValue &total);

  /// microbatch_step and apply_step, from the program at one microbatch's size.
  bool buildMicrobatches(const TypedProgram &micro);

  //===--------------------------------------------------------------------===//
  // Pipeline stages (PipelineStages.cpp)
  //===--------------------------------------------------------------------===//

  /// The stage of each node the `roots` (the loss and the metrics, or
  /// evaluation's results) need (-1: a value any stage computes for itself,
  /// from inputs and constants alone). A scanned layer's nodes are its stage's
  /// (`stageOf`); any other node is on the latest stage of its operands (the
  /// first if none has one), or on `epilogue` (>= 0) where that is a layer's,
  /// and a parameter outside the scan on the stage of the nodes that read it; a
  /// root nothing else reads is on `last`. What
  /// crosses between stages is then what flows from one layer to the next. A
  /// parameter outside the scan read on several stages (tied weights: an
  /// embedding's table as the head) is on each of them, as Megatron-LM keeps
  /// the tied embedding on the first and the last stage: its stage is
  /// kEveryReader, `shared` says which.
  static constexpr int kEveryReader = -2;

  std::vector<int> assignStages(const Forward &forward, const std::vector<unsigned> &roots,
                                const std::vector<bool> &needed,
                                llvm::function_ref<int(int64_t)> stageOf, int epilogue, int last,
                                std::map<unsigned, std::set<int>> &shared);

  static unsigned countScans(const TypedProgram &p);

  /// How many layers the flat graph's scans have.
  int64_t flatLayers() const;

  /// What `backward` reads of its stage's forward values (nodes before
  /// `backwardBegin` on stage `s`) becomes a result of `forward` and an argument
  /// of `backward` (ArgRole::residual): kept from the forward pass, each
  /// microbatch's until its backward pass, rather than recomputed. Under a
  /// `remat` policy the gradient reads its own recomputed copies instead, and
  /// the stage keeps what the policy keeps.
  void keepResiduals(StepFunction &forward, StepFunction &backward, unsigned backwardBegin,
                     const std::vector<int> &stage, int s, const TypedProgram &p);

  /// `values` (a scanned tensor's once per layer) as the runtime holds `tensors`
  /// under a pipeline: a scanned one stacked in one argument (`op`'s node), split
  /// over the stage axis by sema, so that each stage holds its own layers'
  /// parameters and optimizer state (updated by apply_step where they live) and
  /// draws its own layers' dropout numbers; the others as `values` has them.
  template <typename Tensor>
  std::vector<FunctionValue> stackLayers(const std::vector<Tensor> &tensors,
                                         const std::vector<FunctionValue> &values, OpKind op);

  /// A program split into stages (a pipeline's, or the layer loop's): the nodes
  /// of each, and what crosses from one to a later one (once per reading stage).
  struct Stages {
    std::vector<int> of;
    std::map<unsigned, std::set<int>> shared;
    std::vector<PipelineTransfer> transfers;
  };

  Stages splitStages(const TypedProgram &p, const Forward &forward,
                     const std::vector<unsigned> &roots, llvm::function_ref<int(int64_t)> stageOf,
                     int epilogue, int last);

  FunctionValue transferValue(const Stages &stages, size_t k, ArgRole role, unsigned node);

  /// The parameters stage `s` reads.
  static std::vector<FunctionValue> stageParams(const Forward &forward, const Stages &stages,
                                                int s);

  /// Stage `s`'s forward: its parameters, `inputs` and what it receives -> what
  /// it sends.
  StepFunction stageForward(const Forward &forward, const Stages &stages, int s,
                            const std::vector<FunctionValue> &inputs, const std::string &name);

  /// Stage `s`'s functions: forward sends the values later stages read and
  /// returns what its backward pass reads (keepResiduals: on the last stage also
  /// the loss and metrics); backward differentiates the pseudo-loss sum(sent *
  /// its cotangent), or the loss on the last stage, and returns the cotangents of
  /// what the stage received. `inputs` are those the stage's functions take.
  /// Without `keep`, backward computes the forward values it reads itself.
  std::optional<PipelineStage> buildStage(const TypedProgram &p, const Forward &forward,
                                          const Stages &stages, int s, int last,
                                          const std::vector<FunctionValue> &lossAndMetrics,
                                          const std::vector<FunctionValue> &inputs,
                                          const std::string &forwardName,
                                          const std::string &backwardName, bool keep = true);

  /// The functions each stage runs per microbatch (buildStage), the layers
  /// split in order over the pipeline's stages.
  bool buildPipeline(const TypedProgram &micro);

  //===--------------------------------------------------------------------===//
  // The decode step (DecodeStep.cpp)
  //===--------------------------------------------------------------------===//

  /// prefill_step and decode_step, for a model with `generate` whose logits read
  /// `cache`s and nothing else across positions (else a warning says what mixes
  /// them); none under a pipeline. Their parameters are `forward`'s, one per layer.
  void buildDecode(const Forward &forward);

  //===--------------------------------------------------------------------===//
  // The scan as a loop (LayerLoop.cpp)
  //===--------------------------------------------------------------------===//

  /// A program with one scan, without a pipeline or microbatches, trains and
  /// evaluates with its scan as a loop: its flat graph (`forward`) split into
  /// stages as a pipeline's would be, the prologue (0), each layer (1 .. L) and
  /// the epilogue (L + 1), all on every rank in turn; only the prologue's, the
  /// first layer's and the epilogue's functions are built, and train_step,
  /// grad_step and eval_step (shardc-layer-loop) call the first layer's for each
  /// layer on that layer's slices. A program whose layers pass more than the
  /// carry on (the prologue anything but to the epilogue) stays unrolled.
  void buildLayerLoop(const Forward &forward);

  /// Whether the layers pass on the carry alone (one value from each to the
  /// next), and the prologue nothing else but to the epilogue.
  static bool passesCarryOnly(const Stages &stages, int epilogue);
};

template <typename Tensor>
std::vector<FunctionValue> StepProgramBuilder::stackLayers(const std::vector<Tensor> &tensors,
                                                           const std::vector<FunctionValue> &values,
                                                           OpKind op) {
  std::vector<FunctionValue> stacked;
  for (const Tensor &t : tensors) {
    if (!t.stacked) {
      stacked.push_back(
          *llvm::find_if(values, [&](const FunctionValue &v) { return v.name == t.path; }));
      continue;
    }
    FunctionValue v;
    v.name = t.path;
    v.loc = t.loc;
    v.sharding = t.sharding;
    v.role = op == OpKind::param ? ArgRole::parameter : ArgRole::input;
    v.stacked = true;
    v.node = addNode(op, t.path, t.type, t.loc);
    stacked.push_back(v);
  }
  return stacked;
}

} // namespace shardc

#endif
