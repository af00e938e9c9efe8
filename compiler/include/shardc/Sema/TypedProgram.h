//===- TypedProgram.h - the model after semantic analysis -------*- C++ -*-===//
//
// What sema hands to the rest of the compiler: the model's forward
// computation as a graph of typed nodes (blocks inlined, `scan` kept as a node
// with a body graph), every parameter and input with its path, named shape
// and mesh sharding, the loss, metrics and optimizer.
//
//===----------------------------------------------------------------------===//

#ifndef SHARDC_SEMA_TYPEDPROGRAM_H
#define SHARDC_SEMA_TYPEDPROGRAM_H

#include "shardc/AST/AST.h"
#include "shardc/IR/LayerStage.h"
#include "shardc/Sema/Ops.h"
#include "shardc/Support/Bytes.h"
#include "shardc/Support/Mesh.h"

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Support/CheckedArithmetic.h"

#include <deque>
#include <map>
#include <memory>
#include <string>
#include <variant>
#include <vector>

namespace shardc {

/// One named dimension with a known size.
struct Dim {
  std::string axis;
  int64_t size = 0;
  bool operator==(const Dim &o) const { return axis == o.axis && size == o.size; }
};

/// The most elements a tensor may have (a petabyte of f32). Sema rejects larger
/// ones, so sizes computed from a program's tensors (bytes, shards, sums over
/// all of them) fit in 64 bits.
inline constexpr int64_t kMaxTensorElements = int64_t(1) << 48;

struct TensorType {
  DType dtype = DType::F32;
  std::vector<Dim> dims;

  /// The product of the sizes, or INT64_MAX when that overflows.
  int64_t numElements() const;
  int64_t elementBytes() const { return dtype == DType::Bool ? 1 : 4; }
  /// The position of the dimension named `axis`, or -1.
  int axisIndex(llvm::StringRef axis) const {
    for (size_t i = 0; i < dims.size(); ++i)
      if (dims[i].axis == axis)
        return int(i);
    return -1;
  }
  bool operator==(const TensorType &o) const { return dtype == o.dtype && dims == o.dims; }
  bool operator!=(const TensorType &o) const { return !(*this == o); }
  /// `f32[batch=8, embed=1024]`
  std::string str() const;
};

/// A rule for a dimension's logical axis passed over because a dimension of
/// the same tensor decided before had taken one of its mesh axes.
struct SkippedRule {
  std::string reason; // "rule embed -> data skipped, data taken by batch"
  SMRange cause;      // the rule
};

/// How one dimension is placed on the mesh, and the rule that decided it.
struct DimSharding {
  std::vector<std::string> meshAxes; // empty: replicated
  std::string reason;                // "rule hidden -> model", "override \"a.*\"", "no rule",
                                     // "every rule skipped"
  SMRange cause;                     // the rule or override, when there is one
  std::vector<SkippedRule> skipped;  // in file order, all before the deciding rule
};

struct Sharding {
  std::vector<DimSharding> dims;
  /// `[none, model]`, `[(data, model), none]`
  std::string str() const;
};

using Attribute = std::variant<int64_t, double, std::string, std::vector<std::string>>;

struct Graph;

/// One operation of the computation: a builtin (`matmul`, `relu`, ...), an
/// operator (`add`, `neg`, `eq`, ...) or an internal op (Builtins.def). A
/// `dropout` node's operands are x and its uniform numbers (an input, or in a
/// scan body that input's slice).
struct Node {
  unsigned id = 0;
  OpKind op = OpKind::constant;
  std::vector<unsigned> operands;
  TensorType type;
  SMRange loc;
  std::string name; // the let name, parameter path or input name
  std::map<std::string, Attribute> attrs;
  std::shared_ptr<Graph> body; // `scan` only
  int constraint = -1;         // index into TypedProgram::constraints
  /// Of a flattened node: the layer of the scan it computes part of (-1:
  /// none), and which part (MLIRGen names its ops' locations by it).
  int64_t layer = -1;
  LayerStage stage = LayerStage::forward;
};

/// A block's `loss NAME = e` or `metric NAME = e` (Flax's sow), one per inlined
/// call: an f32[] node of the graph the forward was inlined into (a scan body's
/// once for every layer). Every loss term is added to the model's loss; each
/// term is reported under `path` as the mean of its values (layers and calls).
struct BlockTerm {
  std::string path; // `blocks.moe.balance`: the instance's path, then the name
  bool isLoss = false;
  unsigned node = 0;
  SMRange loc;
};

struct Graph {
  /// A deque: appending keeps references to earlier nodes (and their types)
  /// valid, which every builder that adds nodes while reading others needs.
  std::deque<Node> nodes;
  std::vector<unsigned> args; // scan bodies: the carry, then the slices of stacked tensors
  unsigned result = 0;
  std::vector<BlockTerm> terms;
  unsigned add(Node node);
};

/// Parameter initialiser: `xavier_normal`, `normal(stddev = 0.02)`.
struct Initializer {
  std::string name;
  std::vector<std::pair<std::string, double>> args;
  std::string str() const;
};

/// A parameter, an input or a constrained value: something with a sharding.
struct ShardedTensor {
  std::string path; // `blocks.W1`, `x`, `blocks.y`
  TensorType type;
  SMRange loc;
  Sharding sharding;
  bool stacked = false; // by a scan, along a leading kLayerAxis dimension
  /// Per-rank shape, elements and bytes under the sharding.
  std::vector<int64_t> localShape(const Mesh &mesh) const;
  int64_t localBytes(const Mesh &mesh) const;
};

/// A scanned block's parameters carry a leading `layer` (kLayerAxis) dimension.
struct Parameter : ShardedTensor {
  Initializer init;
};

/// A model input, or one the compiler adds for a `dropout`: its uniform
/// numbers in [0, 1), which the runtime draws anew at each training step
/// (named `dropout.K`, in source order; of the dropped tensor's type, so the
/// rules split it like that tensor; in a scanned block with a leading
/// `layer` dimension like the block's parameters).
struct Input : ShardedTensor {
  bool dropoutUniforms = false;
};

/// A value a forward run reports: the loss, a metric or one of the model's
/// named values (`let h = ...`), sharded by the rules like an input.
struct Output : ShardedTensor {
  unsigned node = 0;
};

/// `generate INPUT ~ LOGITS`: --generate fills the i32 input one position at a time
/// (along its last axis), drawing each from the value's scores at the position before.
struct Generate {
  std::string input;  // the input's name
  std::string logits; // the value's name: an eval result
  SMRange loc;
};

struct Optimizer {
  OptimizerKind kind = OptimizerKind::sgd;
  std::vector<std::pair<std::string, double>> hyperparameters;
  SMRange loc;
  llvm::StringRef name() const { return optimizerName(kind); }
};

/// What the backward pass of a scanned block keeps of its forward values (the rules
/// file's `remat`, JAX's checkpoint policies): `nothing` (recompute the block from
/// its input), `dots` (keep the matmuls' and contractions' outputs, recompute the
/// rest), `everything` (recompute nothing, as without remat).
inline constexpr const char *kRematPolicies[] = {"nothing", "dots", "everything"};

/// Gradient accumulation (the rules file's `microbatches N`): the training step
/// runs its batch in `count` slices of the inputs' first axis, one after another.
struct Microbatches {
  int64_t count = 1;
  SMRange loc;
};

/// A rule of a rules file as it applies to a tensor: a logical axis onto mesh
/// axes (none: replicated).
struct AxisRule {
  std::string logicalAxis;
  std::vector<std::string> meshAxes;
};

/// Flax's _logical_to_mesh_axes over `dims`: the rules in order (not the dims);
/// each decides the undecided dim with its logical axis unless `admits(rule,
/// dim)` says no, or a decided dim has taken one of its mesh axes (then
/// `skipped(rule, dim, taken)` hears of it, `taken` like "data taken by batch").
/// Returns the rule that decided each dim (-1: none, replicated).
std::vector<int> decideDims(
    const std::vector<Dim> &dims, const std::vector<AxisRule> &rules,
    llvm::function_ref<bool(size_t rule, size_t dim)> admits = nullptr,
    llvm::function_ref<void(size_t rule, size_t dim, const std::string &taken)> skipped = nullptr);

/// Pipeline parallelism (the rules file's `layer -> stage`): the scanned layers
/// split in order over the mesh axis `axis`, `stages` = its size; what comes
/// before the scan runs on the first stage, what follows on the last. The
/// training step runs the microbatches through the stages in `schedule`'s
/// order (`gpipe` or `1f1b`).
struct Pipeline {
  std::string axis; // empty: no pipeline
  int64_t stages = 1;
  std::string schedule = "1f1b";
  SMRange loc; // the rule
  /// Each activation's sharding over the other axes, by the rules in order: what
  /// one stage sends, the next receives (without a pipeline: what one function
  /// of the layer loop passes to the next).
  std::vector<AxisRule> axisRules;
  /// `type`'s sharding by axisRules, as sema shards a parameter (a mesh axis
  /// once per tensor); a dimension its axes do not divide stays whole.
  Sharding shardingOf(const TensorType &type, const Mesh &mesh) const;
};

inline constexpr const char *kPipelineSchedules[] = {"gpipe", "1f1b"};

struct TypedProgram {
  std::string modelName;
  std::string modelPath, rulesPath;
  Mesh mesh;
  std::vector<Parameter> params;
  std::vector<Input> inputs;
  std::vector<ShardedTensor> constraints;
  Graph graph;
  unsigned loss = 0;
  std::vector<std::pair<std::string, unsigned>> metrics;
  std::optional<Optimizer> optimizer;
  std::optional<Generate> generate;
  std::vector<Output> outputs;
  Microbatches microbatches;
  Pipeline pipeline;
  /// The rules file's `precision matmul : bf16`: every matrix product's operands
  /// in bfloat16 (shardc-matmul-operands-bf16); `precision gradients : bf16`:
  /// the parameters' gradients reduced across ranks in bfloat16 (the run's
  /// default --reduce-precision).
  bool matmulInBf16 = false, gradientsInBf16 = false;
  /// Set on the program elaborated at one microbatch's size (`microbatches`
  /// slices of the batch): the inputs' first axis, which it divides.
  std::string microbatchAxis;
};

/// The first input with an axis, whose first axis is the batch that microbatches
/// split; null without one.
const Input *batchInput(const TypedProgram &program);

/// The block terms of the program's graph and of its scan bodies, in graph order.
std::vector<const BlockTerm *> blockTerms(const TypedProgram &program);

/// Fills `outputs`: the loss, the metrics, then the model's named values in
/// graph order.
void collectOutputs(TypedProgram &program);

/// The logical axis a scanned block's parameters gain in front.
inline constexpr const char *kLayerAxis = "layer";

} // namespace shardc

#endif
