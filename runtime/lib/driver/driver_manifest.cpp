// Reading the manifest: nlohmann_json parses, and every entry is checked here with a
// message that names it (`manifest: inputs[0] "x": split[0]: ...`), so a compiler bug
// shows up as one clear line before any rank allocates or communicates. The keys are
// shardrt/manifest_keys.h's, the ones shardc writes.
#include "driver_manifest.h"
#include "driver_layout.h"
#include "shardrt/manifest_keys.h"
#include "shardrt/program_limits.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <climits>
#include <cmath>
#include <functional>
#include <initializer_list>
#include <set>

namespace shardrt {

using namespace manifest_keys;

namespace {

using json = nlohmann::json;

[[noreturn]] void fail(const std::string &where, const std::string &what) {
  throw ManifestError("manifest: " + (where.empty() ? "" : where + ": ") + what);
}

std::string join(const std::string &where, const std::string &key) {
  return where.empty() ? key : where + "." + key;
}

/// A key of the entry `named` (`inputs[0] "x"`): `inputs[0] "x": fill`.
std::string keyOf(const std::string &named, const char *key) { return named + ": " + key; }

std::string indexed(const std::string &where, size_t i) {
  return where + "[" + std::to_string(i) + "]";
}

void requireObject(const json &value, const std::string &where) {
  if (!value.is_object())
    fail(where, std::string("expected an object, not ") + value.type_name());
}

/// Unknown keys are errors: a misspelt key would otherwise be a silent default.
void allowKeys(const json &object, const std::string &where,
               std::initializer_list<const char *> keys) {
  for (const auto &item : object.items()) {
    bool known = false;
    for (const char *key : keys)
      known = known || item.key() == key;
    if (!known)
      fail(where, "unknown key '" + item.key() + "'");
  }
}

const json &member(const json &object, const std::string &where, const char *key) {
  auto found = object.find(key);
  if (found == object.end())
    fail(where, std::string("missing '") + key + "'");
  return *found;
}

std::string getString(const json &value, const std::string &where) {
  if (!value.is_string())
    fail(where, std::string("expected a string, not ") + value.type_name());
  return value.get<std::string>();
}

int64_t getInt(const json &value, const std::string &where, int64_t min, int64_t max) {
  bool ok = value.is_number_unsigned() ? value.get<uint64_t>() <= uint64_t(max)
                                       : value.is_number_integer();
  int64_t number = ok ? value.get<int64_t>() : 0;
  if (!ok || number < min || number > max)
    fail(where, "expected an integer from " + std::to_string(min) + " to " + std::to_string(max) +
                    ", not " + value.dump());
  return number;
}

double getNumber(const json &value, const std::string &where) {
  if (!value.is_number())
    fail(where, std::string("expected a number, not ") + value.type_name());
  return value.get<double>();
}

const json &getArray(const json &value, const std::string &where) {
  if (!value.is_array())
    fail(where, std::string("expected an array, not ") + value.type_name());
  return value;
}

/// A shape whose element count fits in int64.
Shape getShape(const json &value, const std::string &where) {
  Shape shape;
  int64_t count = 1;
  for (size_t d = 0; d < getArray(value, where).size(); ++d) {
    shape.push_back(getInt(value[d], indexed(where, d), 0, INT64_MAX));
    if (__builtin_mul_overflow(count, shape.back(), &count))
      fail(where, "the shape " + value.dump() + " has more than 2^63 elements");
  }
  return shape;
}

DType getDType(const json &value, const std::string &where) {
  std::string name = getString(value, where);
  if (name == "f32")
    return DType::F32;
  if (name == "i32")
    return DType::I32;
  fail(where, "unknown dtype '" + name + "'; known: f32, i32");
}

void readSplit(const json &value, const std::string &where, const Manifest &manifest,
               TensorSpec &spec) {
  if (getArray(value, where).size() != spec.shape.size())
    fail(where, "expected one entry per dimension of the shape " + shapeText(spec.shape) +
                    ", not " + std::to_string(value.size()));
  const int numAxes = static_cast<int>(manifest.axisSizes.size());
  std::set<int> seen;
  for (size_t d = 0; d < value.size(); ++d) {
    std::string here = indexed(where, d);
    std::vector<int> axes;
    int64_t parts = 1;
    for (size_t i = 0; i < getArray(value[d], here).size(); ++i) {
      std::string axisWhere = indexed(here, i);
      if (!value[d][i].is_number_integer() || value[d][i].get<int64_t>() < 0 ||
          value[d][i].get<int64_t>() >= numAxes)
        fail(axisWhere, value[d][i].dump() + " is not a mesh axis index (the mesh has " +
                            std::to_string(numAxes) + " axes)");
      int axis = value[d][i].get<int>();
      if (!seen.insert(axis).second)
        fail(axisWhere, "mesh axis '" + manifest.axisNames[axis] + "' splits this tensor twice");
      axes.push_back(axis);
      parts *= manifest.axisSizes[axis];
    }
    if (spec.shape[d] % parts != 0)
      fail(here, "dimension " + std::to_string(d) + " of size " + std::to_string(spec.shape[d]) +
                     " does not divide into " + std::to_string(parts) + " blocks");
    spec.split.push_back(axes);
  }
  int64_t localCount = numElements(localShape(spec, manifest.axisSizes));
  if (localCount > INT_MAX)
    fail(where, "a rank's block has " + std::to_string(localCount) +
                    " elements; one MPI message holds at most 2^31 - 1");
}

/// Reads name, dtype, shape and split, the keys every tensor has.
TensorSpec readTensor(const json &value, const std::string &where, const Manifest &manifest) {
  requireObject(value, where);
  TensorSpec spec;
  spec.name = getString(member(value, where, kName), join(where, kName));
  if (spec.name.empty())
    fail(join(where, kName), "is empty");
  std::string named = where + " \"" + spec.name + "\"";
  spec.dtype = getDType(member(value, named, kDtype), keyOf(named, kDtype));
  spec.shape = getShape(member(value, named, kShape), keyOf(named, kShape));
  readSplit(member(value, named, kSplit), keyOf(named, kSplit), manifest, spec);
  return spec;
}

struct InitName {
  const char *name;
  InitKind kind;
  const char *arg;   // its one argument, or nullptr
  double defaultArg; // NaN: the argument is required
  bool needsFans;
};

// As in the language (grammar/README.md): normal(stddev = 0.01), uniform(scale = 0.05).
const InitName kInits[] = {
    {"zeros", InitKind::Zeros, nullptr, 0, false},
    {"ones", InitKind::Ones, nullptr, 0, false},
    {"constant", InitKind::Constant, "value", NAN, false},
    {"normal", InitKind::Normal, "stddev", 0.01, false},
    {"uniform", InitKind::Uniform, "scale", 0.05, false},
    {"xavier_normal", InitKind::XavierNormal, nullptr, 0, true},
    {"xavier_uniform", InitKind::XavierUniform, nullptr, 0, true},
    {"lecun_normal", InitKind::LecunNormal, nullptr, 0, true},
    {"he_normal", InitKind::HeNormal, nullptr, 0, true},
};

void readInit(const json &value, const std::string &where, TensorSpec &spec) {
  requireObject(value, where);
  allowKeys(value, where, {kName, kArgs});
  std::string name = getString(member(value, where, kName), join(where, kName));
  const InitName *init = nullptr;
  for (const InitName &candidate : kInits)
    if (name == candidate.name)
      init = &candidate;
  if (!init)
    fail(join(where, kName), "unknown initialiser '" + name +
                                 "'; known: zeros, ones, constant, normal, uniform, xavier_normal, "
                                 "xavier_uniform, lecun_normal, he_normal");
  spec.init = init->kind;
  spec.initArg = init->defaultArg;
  const std::string argsWhere = join(where, kArgs);
  auto args = value.find(kArgs);
  if (args != value.end()) {
    requireObject(*args, argsWhere);
    for (const auto &item : args->items()) {
      if (!init->arg || item.key() != init->arg)
        fail(argsWhere, name + " has no argument '" + item.key() + "'");
      spec.initArg = getNumber(item.value(), join(argsWhere, item.key()));
    }
  }
  if (std::isnan(spec.initArg))
    fail(argsWhere, name + " needs its argument '" + init->arg + "'");
  // Fans come from one layer's shape: a stack's layer dimension is no receptive field.
  if (init->needsFans && spec.layerShape().size() < 2)
    fail(where, name + " needs a tensor of 2 or more dimensions for its fans, not " +
                    shapeText(spec.layerShape()));
}

/// global_shape and layer: the tensor is one layer of a stack, or the whole of itself.
void readLayer(const json &value, const std::string &named, TensorSpec &spec) {
  auto global = value.find(kGlobalShape);
  auto layer = value.find(kLayer);
  spec.globalShape =
      global != value.end() ? getShape(*global, keyOf(named, kGlobalShape)) : spec.shape;
  if (layer != value.end()) {
    if (global == value.end())
      fail(named, "a layer needs the global_shape of its stack");
    Shape perLayer(spec.globalShape.begin() + (spec.globalShape.empty() ? 0 : 1),
                   spec.globalShape.end());
    if (spec.globalShape.empty() || perLayer != spec.shape)
      fail(named, "global_shape " + shapeText(spec.globalShape) + " is not [layers] + shape " +
                      shapeText(spec.shape));
    spec.layer = getInt(*layer, keyOf(named, kLayer), 0, spec.globalShape[0] - 1);
  } else if (spec.globalShape != spec.shape) {
    fail(named, "global_shape " + shapeText(spec.globalShape) + " differs from shape " +
                    shapeText(spec.shape) + ", and there is no layer");
  }
}

TensorSpec readParam(const json &value, const std::string &where, const Manifest &manifest) {
  TensorSpec spec = readTensor(value, where, manifest);
  std::string named = where + " \"" + spec.name + "\"";
  allowKeys(value, named, {kName, kDtype, kShape, kSplit, kGlobalShape, kLayer, kStacked, kInit});
  if (spec.dtype != DType::F32)
    fail(named, "parameters are f32; the initialisers make nothing else");
  readLayer(value, named, spec);
  if (auto stacked = value.find(kStacked); stacked != value.end()) {
    if (!stacked->is_boolean())
      fail(keyOf(named, kStacked),
           std::string("expected true or false, not ") + stacked->type_name());
    spec.stacked = stacked->get<bool>();
    if (spec.stacked && (spec.layer >= 0 || spec.shape.empty()))
      fail(keyOf(named, kStacked),
           "a stack of layers has their dimension 0 and is not one `layer`");
  }
  readInit(member(value, named, kInit), keyOf(named, kInit), spec);
  return spec;
}

TensorSpec readInput(const json &value, const std::string &where, Manifest &manifest) {
  TensorSpec spec = readTensor(value, where, manifest);
  std::string named = where + " \"" + spec.name + "\"";
  allowKeys(value, named, {kName, kDtype, kShape, kSplit, kGlobalShape, kLayer, kFill, kClasses});
  readLayer(value, named, spec);
  std::string fillWhere = keyOf(named, kFill);
  const json &fill = member(value, named, kFill);
  requireObject(fill, fillWhere);
  std::string kind = getString(member(fill, fillWhere, kKind), join(fillWhere, kKind));
  if (kind == kFillNormal || kind == kFillUniform) {
    allowKeys(fill, fillWhere, {kKind});
    if (spec.dtype != DType::F32)
      fail(fillWhere, "a " + kind + " fill makes f32, but the input is i32");
    spec.fill = kind == kFillNormal ? FillKind::Normal : FillKind::Uniform;
  } else if (kind == kFillIntegers) {
    allowKeys(fill, fillWhere, {kKind, kHigh});
    if (spec.dtype != DType::I32)
      fail(fillWhere, "an integers fill makes i32, but the input is f32");
    spec.fill = FillKind::Integers;
    spec.high = getInt(member(fill, fillWhere, kHigh), join(fillWhere, kHigh), 1, int64_t(1) << 31);
  } else {
    fail(join(fillWhere, kKind), "unknown fill '" + kind + "'; known: normal, uniform, integers");
  }
  auto classes = value.find(kClasses);
  if (classes != value.end()) {
    if (spec.dtype != DType::I32)
      fail(keyOf(named, kClasses), "only i32 inputs (labels) have classes");
    spec.classes = getInt(*classes, keyOf(named, kClasses), 1, int64_t(1) << 31);
  }
  return spec;
}

/// Train results are f32 scalars, the loss first; eval results may be per-example, of
/// the data inputs' batch. A name must not repeat one the driver gives its metrics line.
std::vector<TensorSpec> readResults(const json &section, const std::string &entry,
                                    const Manifest &manifest) {
  const bool isTrain = entry == kTrain;
  requireObject(section, entry);
  allowKeys(section, entry, {kResults});
  const std::string where = join(entry, kResults);
  const json &results = getArray(member(section, entry, kResults), where);
  if (isTrain && results.empty())
    fail(where, "the train entry returns at least its loss");
  const std::vector<std::string_view> taken =
      isTrain ? std::vector<std::string_view>(shardrt::kTrainLineKeys.begin(),
                                              shardrt::kTrainLineKeys.end())
              : std::vector<std::string_view>(shardrt::kEvalLineKeys.begin(),
                                              shardrt::kEvalLineKeys.end());
  std::vector<TensorSpec> specs;
  std::set<std::string> names;
  for (size_t i = 0; i < results.size(); ++i) {
    std::string at = indexed(where, i);
    TensorSpec spec = readTensor(results[i], at, manifest);
    std::string named = at + " \"" + spec.name + "\"";
    if (isTrain) {
      allowKeys(results[i], named, {kName, kDtype, kShape, kSplit});
      if (spec.dtype != DType::F32 || !spec.shape.empty())
        fail(named, "train results (the loss, then metrics) are f32 scalars, not " +
                        std::string(dtypeName(spec.dtype)) + " " + shapeText(spec.shape));
    } else {
      allowKeys(results[i], named, {kName, kDtype, kShape, kSplit, kPerExample});
      auto perExample = results[i].find(kPerExample);
      if (perExample != results[i].end() && !perExample->is_boolean())
        fail(keyOf(named, kPerExample),
             std::string("expected true or false, not ") + perExample->type_name());
      spec.perExample = perExample != results[i].end() && perExample->get<bool>();
      if (spec.perExample && (spec.dtype != DType::F32 || spec.shape.size() != 1))
        fail(keyOf(named, kPerExample), "a per-example result is f32 [batch], not " +
                                            std::string(dtypeName(spec.dtype)) + " " +
                                            shapeText(spec.shape));
    }
    if (!names.insert(spec.name).second)
      fail(at, "a second result named '" + spec.name + "'");
    // The metrics line writes the loss as "loss" and the other values by name.
    if ((isTrain || spec.perExample) &&
        (std::find(taken.begin(), taken.end(), spec.name) != taken.end() ||
         (isTrain && i > 0 && spec.name == "loss")))
      fail(named, "the name '" + spec.name + "' is taken by the driver's metrics line");
    specs.push_back(spec);
  }
  return specs;
}

void readOptimizer(const json &value, Manifest &manifest) {
  requireObject(value, kOptimizer);
  allowKeys(value, kOptimizer, {kName, kArgs, kState});
  manifest.hasOptimizer = true;
  manifest.optimizer = getString(member(value, kOptimizer, kName), join(kOptimizer, kName));
  const std::string argsWhere = join(kOptimizer, kArgs);
  auto args = value.find(kArgs);
  if (args != value.end()) {
    requireObject(*args, argsWhere);
    for (const auto &item : args->items())
      getNumber(item.value(), join(argsWhere, item.key()));
  }
  const std::string stateWhere = join(kOptimizer, kState);
  const json &state = getArray(member(value, kOptimizer, kState), stateWhere);
  for (size_t i = 0; i < state.size(); ++i) {
    std::string kind = getString(state[i], indexed(stateWhere, i));
    for (const std::string &earlier : manifest.optimizerState)
      if (earlier == kind)
        fail(stateWhere, "'" + kind + "' appears twice");
    manifest.optimizerState.push_back(kind);
  }
}

/// `generate`: the input is i32 [samples..., positions] and the logits result f32
/// [samples..., positions, vocabulary], by name.
void readGenerate(const json &value, Manifest &manifest) {
  requireObject(value, kGenerate);
  allowKeys(value, kGenerate, {kInput, kLogits});
  const std::string inputName =
      getString(member(value, kGenerate, kInput), join(kGenerate, kInput));
  const std::string logitsName =
      getString(member(value, kGenerate, kLogits), join(kGenerate, kLogits));
  auto named = [](const std::vector<TensorSpec> &specs, const std::string &name) {
    auto found = std::find_if(specs.begin(), specs.end(),
                              [&](const TensorSpec &s) { return s.name == name; });
    return found == specs.end() ? -1 : int(found - specs.begin());
  };
  const int input = named(manifest.inputs, inputName);
  const int logits = named(manifest.evalResults, logitsName);
  if (input < 0 || manifest.inputs[input].dtype != DType::I32 ||
      manifest.inputs[input].shape.empty())
    fail(join(kGenerate, kInput), "'" + inputName + "' is no i32 input with an axis");
  const TensorSpec &tokens = manifest.inputs[input];
  if (logits < 0 || manifest.evalResults[logits].dtype != DType::F32 ||
      manifest.evalResults[logits].shape.size() != tokens.shape.size() + 1 ||
      !std::equal(tokens.shape.begin(), tokens.shape.end(),
                  manifest.evalResults[logits].shape.begin()))
    fail(join(kGenerate, kLogits), "'" + logitsName + "' is no f32 eval result shaped " +
                                       shapeText(tokens.shape) + " and a vocabulary");
  manifest.generateInput = input;
  manifest.generateLogits = logits;
}

/// The arguments and results of `key` (prefill or decode): each argument a parameter
/// (by name, and layer where one is stacked or stored per layer: one layer of it, split
/// alike, its stack whole along the layers), a cache (kCache) or a tensor `other` says
/// it takes (its index in `other`'s names, or -1 after failing).
Manifest::Step readStep(const json &root, const char *key, const Manifest &manifest,
                        const std::function<void(size_t, const TensorSpec &)> &other) {
  auto found = root.find(key);
  if (found == root.end())
    fail(key,
         std::string("is missing: the ") + kPrefill + " and " + kDecode + " steps come together");
  const json &value = *found;
  requireObject(value, key);
  allowKeys(value, key, {kArgs, kResults});
  Manifest::Step step;
  auto read = [&](const char *list, std::vector<TensorSpec> &specs, std::vector<int> *caches) {
    const std::string where = join(key, list);
    const json &items = getArray(member(value, key, list), where);
    for (size_t i = 0; i < items.size(); ++i) {
      const std::string at = indexed(where, i);
      TensorSpec spec = readTensor(items[i], at, manifest);
      const std::string named = at + " \"" + spec.name + "\"";
      allowKeys(items[i], named, {kName, kDtype, kShape, kSplit, kLayer, kCache});
      if (auto layer = items[i].find(kLayer); layer != items[i].end())
        spec.layer = getInt(*layer, keyOf(named, kLayer), 0, INT_MAX);
      spec.globalShape = spec.shape; // the step's own tensor, layer or not
      if (caches && items[i].value(kCache, false))
        caches->push_back(int(i));
      specs.push_back(std::move(spec));
    }
  };
  read(kArgs, step.args, &step.caches);
  read(kResults, step.results, nullptr);
  for (size_t i = 0; i < step.args.size(); ++i) {
    const TensorSpec &arg = step.args[i];
    const std::string named = indexed(join(key, kArgs), i) + " \"" + arg.name + "\"";
    int param = -1;
    for (size_t p = 0; p < manifest.params.size(); ++p) {
      const TensorSpec &candidate = manifest.params[p];
      if (candidate.name == arg.name &&
          (candidate.stacked ? arg.layer >= 0 && arg.layer < candidate.shape[0]
                             : candidate.layer == arg.layer))
        param = int(p);
    }
    step.param.push_back(param);
    if (std::find(step.caches.begin(), step.caches.end(), int(i)) != step.caches.end())
      continue;
    if (param < 0) {
      other(i, arg);
      continue;
    }
    const TensorSpec &p = manifest.params[param];
    const bool stacked = p.stacked && p.split.front().empty();
    if (arg.shape != p.layerShape() ||
        arg.split != (stacked ? decltype(p.split)(p.split.begin() + 1, p.split.end()) : p.split))
      fail(named, "is not one layer of its parameter, " + shapeText(p.layerShape()) +
                      " split alike, whole along its layers");
  }
  return step;
}

/// `prefill` and `decode` (--generate's KV cache): prefill takes the parameters and the
/// generate input and returns the logits and each cache's value; decode takes the
/// parameters, the generate input at one position, "position" alike and the caches, and
/// returns the logits at the position and the caches' new values.
void readGeneration(const json &root, Manifest &manifest) {
  if (manifest.generateInput < 0)
    fail(kDecode, "a decode step needs `generate`");
  Manifest::Generation &g = manifest.generation;
  const TensorSpec &tokens = manifest.inputs[manifest.generateInput];
  const TensorSpec &logits = manifest.evalResults[manifest.generateLogits];
  Shape column = tokens.shape;
  column.back() = 1;
  auto where = [](const char *key, const char *list, size_t i, const TensorSpec &spec) {
    return indexed(join(key, list), i) + " \"" + spec.name + "\"";
  };
  g.decode = readStep(root, kDecode, manifest, [&](size_t i, const TensorSpec &arg) {
    if (arg.dtype != DType::I32 || arg.shape != column ||
        (arg.name != tokens.name && arg.name != "position"))
      fail(where(kDecode, kArgs, i, arg), "is no parameter, cache, '" + tokens.name +
                                              "' or 'position' of shape " + shapeText(column));
    (arg.name == tokens.name ? g.tokens : g.positions) = int(i);
  });
  if (g.tokens < 0 || g.positions < 0)
    fail(join(kDecode, kArgs), "needs '" + tokens.name + "' and 'position'");
  g.prefill = readStep(root, kPrefill, manifest, [&](size_t i, const TensorSpec &arg) {
    if (arg.name != tokens.name || arg.shape != tokens.shape || arg.split != tokens.split)
      fail(where(kPrefill, kArgs, i, arg),
           "is no parameter or '" + tokens.name + "' " + shapeText(tokens.shape));
    g.prefillTokens = int(i);
  });
  if (g.prefillTokens < 0)
    fail(join(kPrefill, kArgs), "needs '" + tokens.name + "'");
  // Results: the logits, then one value per cache of the decode step's, in its order.
  const size_t caches = g.decode.caches.size();
  for (const auto &[key, step] : {std::pair(kPrefill, &g.prefill), std::pair(kDecode, &g.decode)}) {
    if (step->results.size() != caches + 1 || !step->caches.empty() != (step == &g.decode))
      fail(join(key, kResults), "are the logits and one value per cache of the decode step");
    if (step->results.front().shape.size() != logits.shape.size())
      fail(where(key, kResults, 0, step->results.front()),
           "is not the logits " + shapeText(logits.shape));
    for (size_t c = 0; c < caches; ++c) {
      const TensorSpec &cache = g.decode.args[g.decode.caches[c]];
      if (step->results[c + 1].shape != cache.shape || step->results[c + 1].split != cache.split)
        fail(where(key, kResults, c + 1, step->results[c + 1]),
             "is not the shape and split of the cache " + cache.name);
    }
  }
  g.present = true;
}

void readMesh(const json &value, Manifest &manifest) {
  const std::string axesWhere = join(kMesh, kAxes), sizesWhere = join(kMesh, kSizes);
  requireObject(value, kMesh);
  allowKeys(value, kMesh, {kAxes, kSizes});
  const json &axes = getArray(member(value, kMesh, kAxes), axesWhere);
  const json &sizes = getArray(member(value, kMesh, kSizes), sizesWhere);
  if (axes.size() != sizes.size())
    fail(kMesh,
         std::to_string(axes.size()) + " axes but " + std::to_string(sizes.size()) + " sizes");
  if (axes.size() > size_t(shardrt::kMaxMeshAxes))
    fail(kMesh, "a mesh has at most " + std::to_string(shardrt::kMaxMeshAxes) + " axes");
  int64_t ranks = 1;
  for (size_t a = 0; a < axes.size(); ++a) {
    std::string name = getString(axes[a], indexed(axesWhere, a));
    for (const std::string &earlier : manifest.axisNames)
      if (earlier == name)
        fail(axesWhere, "axis '" + name + "' appears twice");
    manifest.axisNames.push_back(name);
    manifest.axisSizes.push_back(getInt(sizes[a], indexed(sizesWhere, a), 1, INT_MAX));
    ranks *= manifest.axisSizes.back();
    if (ranks > shardrt::kMaxRanks)
      fail(kMesh, "needs more than 2^31 - 1 ranks");
  }
}

} // namespace

const char *dtypeName(DType dtype) { return dtype == DType::F32 ? "f32" : "i32"; }

Manifest parseManifest(const char *text) {
  if (!text)
    throw ManifestError("manifest: none was given (NULL)");
  json root;
  try {
    root = json::parse(text);
  } catch (const json::parse_error &error) {
    // what() starts with "[json.exception.parse_error.101] "; the rest says where.
    std::string what = error.what();
    size_t bracket = what.find("] ");
    throw ManifestError("manifest: not valid JSON: " +
                        (bracket == std::string::npos ? what : what.substr(bracket + 2)));
  }
  requireObject(root, "");
  allowKeys(root, "",
            {kModel, kMesh, kParams, kOptimizer, kInputs, kTrain, kEval, kMemoryPerRank, kPlan,
             kSettings, kTarget, kGenerate, kPrefill, kDecode});

  Manifest manifest;
  manifest.model = getString(member(root, "", kModel), kModel);
  readMesh(member(root, "", kMesh), manifest);

  const json &params = getArray(member(root, "", kParams), kParams);
  for (size_t i = 0; i < params.size(); ++i)
    manifest.params.push_back(readParam(params[i], indexed(kParams, i), manifest));

  // No optimizer (null or absent): no train entry, so no train results.
  auto optimizer = root.find(kOptimizer);
  if (optimizer != root.end() && !optimizer->is_null())
    readOptimizer(*optimizer, manifest);

  const json &inputs = getArray(member(root, "", kInputs), kInputs);
  for (size_t i = 0; i < inputs.size(); ++i)
    manifest.inputs.push_back(readInput(inputs[i], indexed(kInputs, i), manifest));

  auto train = root.find(kTrain);
  const bool hasTrain = train != root.end() && !train->is_null();
  if (manifest.hasOptimizer && !hasTrain)
    fail("", "the optimizer '" + manifest.optimizer + "' needs 'train', the train entry's results");
  if (!manifest.hasOptimizer && hasTrain)
    fail(kTrain, "a model without an optimizer has no train entry");
  if (hasTrain)
    manifest.trainResults = readResults(*train, kTrain, manifest);
  manifest.evalResults = readResults(member(root, "", kEval), kEval, manifest);
  auto memory = root.find(kMemoryPerRank);
  if (memory != root.end()) {
    requireObject(*memory, kMemoryPerRank);
    manifest.memoryPerRank =
        getInt(member(*memory, kMemoryPerRank, kTotal), join(kMemoryPerRank, kTotal), 0, INT64_MAX);
    if (memory->contains(kScratch))
      manifest.scratchBytes =
          getInt((*memory)[kScratch], join(kMemoryPerRank, kScratch), 0, INT64_MAX);
  }
  auto settings = root.find(kSettings);
  if (settings != root.end()) {
    requireObject(*settings, kSettings);
    manifest.settings = settings->dump();
  }
  auto plan = root.find(kPlan);
  if (plan != root.end()) {
    requireObject(*plan, kPlan);
    manifest.plan = plan->dump();
  }
  auto target = root.find(kTarget);
  if (target != root.end()) {
    requireObject(*target, kTarget);
    allowKeys(*target, kTarget, {kCpu, kFeatures});
    manifest.targetCpu = getString(member(*target, kTarget, kCpu), join(kTarget, kCpu));
    const std::string where = join(kTarget, kFeatures);
    const json &features = getArray(member(*target, kTarget, kFeatures), where);
    for (size_t i = 0; i < features.size(); ++i)
      manifest.targetFeatures.push_back(getString(features[i], indexed(where, i)));
  }
  auto generate = root.find(kGenerate);
  if (generate != root.end() && !generate->is_null())
    readGenerate(*generate, manifest);
  if (root.contains(kDecode) || root.contains(kPrefill))
    readGeneration(root, manifest);
  return manifest;
}

} // namespace shardrt
