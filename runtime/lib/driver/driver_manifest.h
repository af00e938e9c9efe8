// The manifest that shardc compiles into a program: its mesh, parameters, optimizer,
// inputs and the results of its entries, and how each tensor is split over the mesh
// (format in runtime/README.md).
#ifndef SHARDRT_LIB_DRIVER_MANIFEST_H
#define SHARDRT_LIB_DRIVER_MANIFEST_H

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace shardrt {

enum class DType { F32, I32 };

const char *dtypeName(DType dtype);

/// The initialisers of the language; each maps to one shardrt_fill_*.
enum class InitKind {
  Zeros,
  Ones,
  Constant,
  Normal,
  Uniform,
  XavierNormal,
  XavierUniform,
  LecunNormal,
  HeNormal
};

/// How an input is made up: N(0, 1) or U[0, 1) for f32 (the latter a dropout's
/// numbers), integers in [0, high) for i32.
enum class FillKind { Normal, Uniform, Integers };

/// One parameter, input or result of the program.
struct TensorSpec {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;          // the whole tensor (for a layer: one layer of it)
  std::vector<std::vector<int>> split; // per dimension, the mesh axes it is split over, major first

  // Parameters and inputs: one layer of a stack, or the whole tensor.
  std::vector<int64_t> globalShape; // = shape, or [layers, shape...] when `layer` is set
  int64_t layer = -1;               // which slice of globalShape's dimension 0, or -1
  bool stacked = false;             // dimension 0 stacks every layer (a pipeline's parameter)
  /// One layer's shape: without a stacked dimension 0 (an initialiser's fans).
  std::vector<int64_t> layerShape() const {
    return stacked ? std::vector<int64_t>(shape.begin() + 1, shape.end()) : shape;
  }

  // Parameters.
  InitKind init = InitKind::Zeros;
  double initArg = 0; // constant's value, normal's stddev, uniform's scale

  // Inputs.
  FillKind fill = FillKind::Normal;
  int64_t high = 0;    // integers are drawn from [0, high)
  int64_t classes = 0; // an i32 input that feeds one_hot: its labels lie in [0, classes)

  // Eval results: a per-example value [batch] that the driver averages over the real
  // examples.
  bool perExample = false;
};

struct Manifest {
  std::string model;
  std::vector<std::string> axisNames;
  std::vector<int64_t> axisSizes;
  std::vector<TensorSpec> params, inputs;
  bool hasOptimizer = false;
  std::string optimizer;                   // its name, when it has one
  std::vector<std::string> optimizerState; // the state kinds, one tensor per parameter each
  std::vector<TensorSpec> trainResults;    // the loss, then the metrics: f32 scalars
  std::vector<TensorSpec> evalResults;
  int64_t batch = 0; // the global batch of the inputs read from files (driver_bindings.h); 0:
                     // none is
  // What a rank needs in all, as shardc's --report counts it (parameters and state,
  // inputs, the largest of the steps' planned arenas, oneDNN's
  // convolution buffers, the process); 0 when the
  // manifest does not say.
  int64_t memoryPerRank = 0;
  int64_t scratchBytes = 0; // the runtime's scratch buffer, mapped before the first step
  // Run settings the program was compiled with: a JSON object of the configuration's
  // keys, applied before the run's configuration and flags; empty for none.
  std::string settings;
  std::string plan; // shardc's --report=json of the program, for the report page; may be empty
  // The CPU the code is compiled for and the instruction set features it may use
  // (shardrt/cpu_features.def's names); empty when the manifest does not say.
  std::string targetCpu;
  std::vector<std::string> targetFeatures;
  // The model's `generate INPUT ~ LOGITS`: the i32 input --generate fills along its
  // last axis and the eval result with its shape and the vocabulary after; -1: none.
  int generateInput = -1, generateLogits = -1;
  // --generate's prefill and decode steps (the KV cache): each one's arguments and
  // results, per argument the parameter it is (one layer of it) or -1, and the arguments
  // that are caches (decode's; its results after the logits are their new values, as
  // prefill's are their values).
  struct Step {
    std::vector<TensorSpec> args, results;
    std::vector<int> param, caches;
  };
  struct Generation {
    bool present = false;
    Step prefill, decode;
    int tokens = -1, positions = -1; // decode's arguments
    int prefillTokens = -1;          // prefill's
  } generation;
};

/// A manifest that is not valid JSON or does not follow the format; what() names the
/// offending entry.
struct ManifestError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Parses the manifest and checks everything that can be checked before running: types,
/// known names, split axes that exist, are used once per tensor and divide the
/// dimension they split, layers inside their stack, blocks small enough for one MPI
/// message, per-example results of an input's batch, an optimizer exactly when there are
/// train results. Throws ManifestError.
Manifest parseManifest(const char *text);

} // namespace shardrt

#endif // SHARDRT_LIB_DRIVER_MANIFEST_H
