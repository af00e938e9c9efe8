// Binding a program's inputs to their data: from what the run configuration and the
// flags say (driver_flags.h's Binding) to the array each input reads, checked against
// the input before anything runs.
//
// Rules, in the order they are checked:
//  1. Every input the user declared (not a dropout's numbers) has a training binding,
//     or is synthetic because the binding says so (or --synthetic covers every unbound
//     one). A binding names an input the program has.
//  2. With training data and evaluations, every input read from a file has an eval
//     binding too; a synthetic one is synthetic there as well.
//  3. A file's examples have the input's per-example shape, dimensions of size 1
//     aside ([N, 28, 28] feeds f32[batch, 28, 28, 1]); token files are cut into
//     windows of the input's last dimension, the targets one token later.
//  4. Element types convert by one rule: into f32, value * scale (scale 1/255 from
//     uint8, else 1, unless the binding says); into i32, integers that fit, never
//     floats. Labels of an input that feeds one_hot lie in [0, classes).
//  5. The inputs read from files share one batch (dimension 0), and the inputs of one
//     split have the same number of examples.
#ifndef SHARDRT_LIB_DRIVER_BINDINGS_H
#define SHARDRT_LIB_DRIVER_BINDINGS_H

#include "data/array_file.h"
#include "driver_flags.h"
#include "driver_manifest.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace shardrt {

/// "synthetic", "PATH" or "PATH#FIELD"; a relative PATH is taken in `folder` (with
/// its trailing slash; "" for the current folder). `origin` says where it was given.
Binding bindingFromText(const std::string &text, const std::string &origin,
                        const std::string &folder);

/// The configuration's "data": {"train": {NAME: BINDING}, "eval": {...}}, each
/// BINDING a string as above or an object of path, format, field, dtype, scale and
/// slice. Throws UsageError naming the key (`where`) that is wrong.
void bindingsFromJson(DataBindings &bindings, const nlohmann::json &data, const std::string &where,
                      const std::string &folder);

/// The bindings as the configuration writes them.
nlohmann::json bindingsJson(const DataBindings &bindings);

/// How an input's examples lie in its array.
enum class View {
  Rows,       // example i is row i
  Windows,    // a token file: example i is tokens [i * n, i * n + n)
  NextWindows // the targets of Windows: one token later
};

/// One input read from a file.
struct BoundInput {
  size_t input = 0; // index in the manifest's inputs
  DType dtype = DType::F32;
  int64_t exampleSize = 0; // the input's elements per example
  data::ArrayPlan array;
  std::string arrayKey; // equal keys: the same array, loaded once
  View view = View::Rows;
  int64_t first = 0, count = 0; // the slice of examples taken
  double scale = 1;             // into f32
  int64_t classes = 0;          // i32 labels must lie in [0, classes); 0: any that fits
  std::string what;             // "input 'image' (run.json: data.train.image)"
};

/// The inputs of one split and their examples.
struct DataSplit {
  std::vector<BoundInput> inputs;
  int64_t examples = 0;
};

struct DataPlan {
  bool readsData = false;        // some input is read from a file; else no epochs
  int64_t batch = 0;             // the file inputs' dimension 0
  DataSplit train, eval;         // eval is empty without evaluations
  std::vector<size_t> synthetic; // inputs with synthetic numbers (dropout's included)
};

/// A binding that cannot be honoured; what() says which input and why, and how to
/// bind it.
struct BindingError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Resolves `bindings` for training against the program's inputs, reading only the
/// files' headers. `evaluates`: evaluations run after epochs. Throws BindingError or
/// data::DataError.
DataPlan planData(const Manifest &manifest, const DataBindings &bindings, bool evaluates);

} // namespace shardrt

#endif // SHARDRT_LIB_DRIVER_BINDINGS_H
