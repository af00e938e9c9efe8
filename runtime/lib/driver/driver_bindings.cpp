// Bindings: parsing them, and resolving them against the program's inputs.
#include "driver_bindings.h"
#include "driver_layout.h"

#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <set>

namespace shardrt {
namespace {

using json = nlohmann::json;

const char *const kFormats[] = {"npy", "npz", "safetensors", "idx", "images", "tokens", "text"};

std::string absoluteIn(const std::string &path, const std::string &folder) {
  return path.empty() || path[0] == '/' ? path : folder + path;
}

bool isFolder(const std::string &path) {
  struct stat info;
  return stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode);
}

bool endsWith(const std::string &text, const std::string &suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

/// The format a path has by its name, or "" when its name does not tell.
std::string formatOfPath(const std::string &path) {
  if (isFolder(path))
    return "images";
  for (const char *format : {"npy", "npz", "safetensors"})
    if (endsWith(path, std::string(".") + format))
      return format;
  if (endsWith(path, ".bin"))
    return "tokens";
  if (endsWith(path, ".txt"))
    return "text";
  const std::string name = path.substr(path.rfind('/') + 1);
  if (endsWith(name, ".gz") || name.find("-ubyte") != std::string::npos ||
      name.find(".idx") != std::string::npos)
    return "idx";
  return "";
}

std::string formatOf(const Binding &binding) {
  return binding.format.empty() ? formatOfPath(binding.path) : binding.format;
}

/// "[:90%]", "[90%:]", "[100:2000]": the examples [first, first + count) of `total`, as
/// TFDS slices them (a percentage of the total, rounded to the nearest example).
void applySlice(const std::string &slice, int64_t total, int64_t &first, int64_t &count,
                const std::string &what) {
  first = 0;
  count = total;
  if (slice.empty())
    return;
  auto fail = [&](const std::string &why) -> void {
    throw BindingError(what + ": slice '" + slice + "' " + why +
                       " (write it as TFDS does: \"[:90%]\", \"[90%:]\", \"[100:2000]\")");
  };
  const size_t colon = slice.find(':');
  if (slice.size() < 3 || slice.front() != '[' || slice.back() != ']' || colon == std::string::npos)
    fail("is not [START:END]");
  auto bound = [&](std::string text, int64_t fallback) -> int64_t {
    if (text.empty())
      return fallback;
    const bool percent = text.back() == '%';
    if (percent)
      text.pop_back();
    if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos ||
        text.size() > 18)
      fail("has a bound that is not a count or a percentage");
    const int64_t value = std::stoll(text);
    if (percent) {
      if (value > 100)
        fail("has a percentage above 100");
      return int64_t(std::llround(double(total) * double(value) / 100.0));
    }
    if (value > total)
      fail("ends after the " + std::to_string(total) + " examples there are");
    return value;
  };
  const int64_t start = bound(slice.substr(1, colon - 1), 0);
  const int64_t end = bound(slice.substr(colon + 1, slice.size() - colon - 2), total);
  if (end <= start)
    fail("holds no example of the " + std::to_string(total));
  first = start;
  count = end - start;
}

/// The per-example shape without its dimensions of size 1.
Shape squeezed(Shape shape) {
  shape.erase(std::remove(shape.begin(), shape.end(), 1), shape.end());
  return shape;
}

std::string typeText(DType dtype, const Shape &shape) {
  return std::string(dtypeName(dtype)) + shapeText(shape);
}

bool isInteger(data::ElementType type) {
  return type != data::ElementType::F32 && type != data::ElementType::F64;
}

/// How to bind `name`, for messages.
std::string howToBind(const std::string &name, const char *split) {
  const bool train = std::string(split) == "train";
  return "bind it in the run configuration (\"data\": {\"" + std::string(split) + "\": {\"" + name +
         "\": \"PATH\"}}) or with --" + (train ? "data " : "eval-data ") + name + "=PATH" +
         (train ? "; --data " + name + "=synthetic gives it random numbers" : "");
}

class Planner {
public:
  explicit Planner(const Manifest &manifest) : manifest_(manifest) {
    for (const TensorSpec &input : manifest.inputs)
      if (input.fill != FillKind::Uniform)
        names_.push_back(input.name);
  }

  /// Every binding names an input the program has.
  void checkNames(const std::map<std::string, Binding> &bindings) {
    for (const auto &[name, binding] : bindings)
      if (std::find(names_.begin(), names_.end(), name) == names_.end()) {
        std::string known;
        for (const std::string &input : names_)
          known += (known.empty() ? "" : ", ") + input;
        throw BindingError(binding.origin + ": " + manifest_.model + " has no input '" + name +
                           "' to bind" + didYouMean(name, names_) +
                           "; its inputs: " + (known.empty() ? "none" : known));
      }
  }

  /// A file that cannot be read names the input it was to feed.
  BoundInput bind(size_t index, const Binding &binding) {
    try {
      return bindFile(index, binding);
    } catch (const data::DataError &error) {
      throw data::DataError("input '" + manifest_.inputs[index].name + "' (" + binding.origin +
                            "): " + error.what());
    }
  }

private:
  BoundInput bindFile(size_t index, const Binding &binding) {
    const TensorSpec &input = manifest_.inputs[index];
    BoundInput bound;
    bound.input = index;
    bound.dtype = input.dtype;
    bound.exampleSize = numElements(input.shape) / input.shape[0];
    bound.what = "input '" + input.name + "' (" + binding.origin + ")";
    const std::string format = formatOf(binding);
    if (format.empty())
      throw BindingError(bound.what + ": cannot tell the format of '" + binding.path +
                         "' from its name; say it with \"format\" (one of npy, npz, safetensors, "
                         "idx, images, tokens, text)");
    if (std::find(std::begin(kFormats), std::end(kFormats), format) == std::end(kFormats))
      throw BindingError(bound.what + ": unknown format '" + format +
                         "' (known: npy, npz, safetensors, idx, images, tokens, text)");
    const bool tokens = format == "tokens" || format == "text";
    const bool needsField = format == "npz" || format == "safetensors";
    if (needsField && binding.field.empty())
      throw BindingError(bound.what + ": '" + binding.path +
                         "' holds several arrays; name one as " + binding.path + "#NAME");
    if ((format == "npy" || format == "idx") && !binding.field.empty())
      throw BindingError(bound.what + ": a " + format + " file holds one array, so '#" +
                         binding.field + "' names nothing");
    if (!binding.elementType.empty() && format != "tokens")
      throw BindingError(bound.what + ": \"dtype\" is for token files; a " + format +
                         " file says its own");

    if (format == "images") {
      const std::string field =
          binding.field.empty() ? (input.dtype == DType::I32 ? "label" : "image") : binding.field;
      if (field != "image" && field != "label")
        throw BindingError(bound.what + ": an image folder has the fields image and label, not '" +
                           field + "'");
      // The images' size comes from the input they feed; labels need none.
      const bool image = field == "image";
      if (image && (input.shape.size() != 4 || (input.shape[3] != 1 && input.shape[3] != 3)))
        throw BindingError(bound.what +
                           ": images feed an input [batch, height, width, 1 or 3], "
                           "not " +
                           typeText(input.dtype, input.shape));
      const std::string size = image ? shapeText(input.shape) : "";
      const data::ImageFolderPlan &folder = imageFolder(binding.path, size, input.shape);
      bound.array = image ? folder.images : folder.labels;
      // Labels are the same whatever size the images are decoded to.
      bound.arrayKey = "images:" + binding.path + "#" + field + size;
    } else if (tokens) {
      const std::string field = binding.field.empty() ? "inputs" : binding.field;
      if (field != "inputs" && field != "targets")
        throw BindingError(bound.what + ": a token file has the fields inputs and targets, not '" +
                           field + "'");
      data::ElementType type = data::ElementType::U8;
      if (format == "tokens") {
        const std::string name = binding.elementType.empty() ? "uint16" : binding.elementType;
        if (name == "uint16")
          type = data::ElementType::U16;
        else if (name == "uint32")
          type = data::ElementType::U32;
        else if (name != "uint8")
          throw BindingError(bound.what + ": token files hold uint8, uint16 or uint32, not '" +
                             name + "'");
      }
      bound.array = data::openTokens(binding.path, type);
      bound.arrayKey = "tokens:" + binding.path + ":" + data::elementTypeName(type);
      bound.view = field == "inputs" ? View::Windows : View::NextWindows;
    } else {
      bound.array = format == "npy"           ? data::openNpy(binding.path)
                    : format == "npz"         ? data::openNpz(binding.path, binding.field)
                    : format == "safetensors" ? data::openSafetensors(binding.path, binding.field)
                                              : data::openIdx(binding.path);
      bound.arrayKey = format + ":" + binding.path + "#" + binding.field;
    }
    checkShape(bound, input);
    checkConversion(bound, input, binding);
    const int64_t total = examplesIn(bound, input);
    applySlice(binding.slice, total, bound.first, bound.count, bound.what);
    return bound;
  }

  /// The folder at `path` opened for images of `shape`'s [height, width, channels]
  /// (`size`, its text), listed once however many inputs read it; `size` empty: for
  /// its labels, from any listing of it.
  const data::ImageFolderPlan &imageFolder(const std::string &path, const std::string &size,
                                           const Shape &shape) {
    auto listed = folders_.lower_bound(path + "@");
    if (size.empty() && listed != folders_.end() && listed->first.rfind(path + "@", 0) == 0)
      return listed->second;
    auto [at, added] = folders_.try_emplace(path + "@" + size);
    if (added)
      at->second = size.empty() ? data::openImageFolder(path, 1, 1, 1)
                                : data::openImageFolder(path, shape[1], shape[2], shape[3]);
    return at->second;
  }

  void checkShape(const BoundInput &bound, const TensorSpec &input) {
    const data::ArrayPlan &array = bound.array;
    const Shape example(input.shape.begin() + 1, input.shape.end());
    if (bound.view != View::Rows) {
      if (array.shape.size() != 1 || input.shape.size() != 2)
        throw BindingError(bound.what + ": token windows feed an input [batch, sequence], not " +
                           typeText(input.dtype, input.shape));
      return;
    }
    const Shape held(array.shape.begin() + 1, array.shape.end());
    if (squeezed(held) != squeezed(example))
      throw BindingError(bound.what + " takes examples of " + typeText(input.dtype, example) +
                         ", but " + array.what + " holds " + std::to_string(array.shape[0]) +
                         " examples of " + data::elementTypeName(array.type) + shapeText(held));
  }

  void checkConversion(BoundInput &bound, const TensorSpec &input, const Binding &binding) {
    const data::ElementType type = bound.array.type;
    if (input.dtype == DType::I32) {
      if (!isInteger(type))
        throw BindingError(bound.what + " is i32, but " + bound.array.what + " holds " +
                           data::elementTypeName(type) +
                           "; integers feed an i32 input (convert the file)");
      if (binding.scale)
        throw BindingError(bound.what + ": \"scale\" applies to f32 inputs; '" + input.name +
                           "' is i32");
      bound.classes = input.classes;
      return;
    }
    bound.scale = binding.scale ? *binding.scale : type == data::ElementType::U8 ? 1.0 / 255 : 1.0;
  }

  int64_t examplesIn(const BoundInput &bound, const TensorSpec &input) {
    if (bound.view == View::Rows)
      return bound.array.shape[0];
    const int64_t window = input.shape[1], tokens = bound.array.shape[0];
    // The targets of the last window end at the last token.
    const int64_t windows = tokens > window ? (tokens - 1) / window : 0;
    if (windows == 0)
      throw BindingError(bound.what + ": " + bound.array.what + " holds " + std::to_string(tokens) +
                         " tokens, too few for one window of " + std::to_string(window) +
                         " and its next token");
    return windows;
  }

  const Manifest &manifest_;
  std::vector<std::string> names_;
  std::map<std::string, data::ImageFolderPlan> folders_; // by "PATH@[...shape]"
};

/// The inputs of one split agree on their number of examples.
void countExamples(DataSplit &split, const Manifest &manifest, const char *name) {
  for (const BoundInput &bound : split.inputs) {
    if (split.examples && bound.count != split.examples) {
      const BoundInput &first = split.inputs.front();
      throw BindingError("the " + std::string(name) +
                         " inputs have different numbers of examples: " +
                         manifest.inputs[first.input].name + " " + std::to_string(first.count) +
                         " (" + first.array.what + "), " + manifest.inputs[bound.input].name + " " +
                         std::to_string(bound.count) + " (" + bound.array.what + ")");
    }
    split.examples = bound.count;
  }
}

json bindingJson(const Binding &b) {
  if (b.synthetic)
    return "synthetic";
  json object = {{"path", b.path}};
  if (!b.format.empty())
    object["format"] = b.format;
  if (!b.field.empty())
    object["field"] = b.field;
  if (!b.elementType.empty())
    object["dtype"] = b.elementType;
  if (b.scale)
    object["scale"] = *b.scale;
  if (!b.slice.empty())
    object["slice"] = b.slice;
  return object;
}

Binding bindingFromJson(const json &value, const std::string &where, const std::string &folder) {
  if (value.is_string())
    return bindingFromText(value.get<std::string>(), where, folder);
  if (!value.is_object())
    throw UsageError(where +
                     " is a string (\"PATH\", \"PATH#FIELD\", \"synthetic\") or an object "
                     "of path, format, field, dtype, scale and slice, not " +
                     value.dump());
  static const std::vector<std::string> keys = {"path",  "format", "field",
                                                "dtype", "scale",  "slice"};
  Binding binding;
  binding.origin = where;
  for (const auto &[key, member] : value.items()) {
    if (std::find(keys.begin(), keys.end(), key) == keys.end())
      throw UsageError(where + ": '" + key + "' is not a binding's key" + didYouMean(key, keys) +
                       " (keys: path, format, field, dtype, scale, slice)");
    if (key == "scale") {
      if (!member.is_number() || !std::isfinite(member.get<double>()))
        throw UsageError(where + ".scale is a number, not " + member.dump());
      binding.scale = member.get<double>();
      continue;
    }
    if (!member.is_string() || member.get<std::string>().empty())
      throw UsageError(where + "." + key + " is a non-empty string, not " + member.dump());
    const std::string text = member.get<std::string>();
    if (key == "path")
      binding.path = absoluteIn(text, folder);
    else if (key == "format")
      binding.format = text;
    else if (key == "field")
      binding.field = text;
    else if (key == "dtype")
      binding.elementType = text;
    else
      binding.slice = text;
  }
  if (binding.path.empty())
    throw UsageError(where + " has no \"path\"");
  return binding;
}

} // namespace

Binding bindingFromText(const std::string &text, const std::string &origin,
                        const std::string &folder) {
  Binding binding;
  binding.origin = origin;
  if (text == "synthetic") {
    binding.synthetic = true;
    return binding;
  }
  const size_t hash = text.rfind('#');
  binding.path = absoluteIn(text.substr(0, hash), folder);
  if (hash != std::string::npos)
    binding.field = text.substr(hash + 1);
  if (binding.path.empty() || (hash != std::string::npos && binding.field.empty()))
    throw UsageError(origin + ": a binding is PATH, PATH#FIELD or synthetic, not '" + text + "'");
  return binding;
}

void bindingsFromJson(DataBindings &bindings, const json &data, const std::string &where,
                      const std::string &folder) {
  static const std::vector<std::string> splits = {"train", "eval"};
  for (const auto &[split, inputs] : data.items()) {
    if (split != "train" && split != "eval")
      throw UsageError(where + ": '" + split + "' is not a split" + didYouMean(split, splits) +
                       " (data has train and eval)");
    const std::string splitWhere = where + "." + split;
    if (!inputs.is_object())
      throw UsageError(splitWhere + " is an object of input name -> binding, not " + inputs.dump());
    auto &target = split == "train" ? bindings.train : bindings.eval;
    for (const auto &[name, value] : inputs.items())
      target[name] = bindingFromJson(value, splitWhere + "." + name, folder);
  }
}

json bindingsJson(const DataBindings &bindings) {
  json data = {{"train", json::object()}, {"eval", json::object()}};
  for (const auto &[name, binding] : bindings.train)
    data["train"][name] = bindingJson(binding);
  for (const auto &[name, binding] : bindings.eval)
    data["eval"][name] = bindingJson(binding);
  return data;
}

DataPlan planData(const Manifest &manifest, const DataBindings &bindings, bool evaluates) {
  Planner planner(manifest);
  planner.checkNames(bindings.train);
  planner.checkNames(bindings.eval);
  DataPlan plan;
  std::vector<size_t> fromFiles;
  for (size_t i = 0; i < manifest.inputs.size(); ++i) {
    const TensorSpec &input = manifest.inputs[i];
    auto found = bindings.train.find(input.name);
    if (input.fill == FillKind::Uniform || (found == bindings.train.end() && bindings.synthetic) ||
        (found != bindings.train.end() && found->second.synthetic)) {
      plan.synthetic.push_back(i);
      continue;
    }
    if (found == bindings.train.end())
      throw BindingError("input '" + input.name + "' " + typeText(input.dtype, input.shape) +
                         " of " + manifest.model +
                         " is bound to no data: " + howToBind(input.name, "train"));
    plan.train.inputs.push_back(planner.bind(i, found->second));
    fromFiles.push_back(i);
  }
  plan.readsData = !fromFiles.empty();
  if (!plan.readsData) {
    if (!bindings.eval.empty())
      throw BindingError(bindings.eval.begin()->second.origin +
                         ": an eval binding, but training reads no data, so there are no epochs "
                         "to evaluate after");
    return plan;
  }
  for (size_t i : fromFiles) {
    const TensorSpec &input = manifest.inputs[i], &first = manifest.inputs[fromFiles[0]];
    if (input.shape[0] != first.shape[0])
      throw BindingError("inputs read from files share one batch, but '" + first.name + "' is " +
                         typeText(first.dtype, first.shape) + " and '" + input.name + "' " +
                         typeText(input.dtype, input.shape));
  }
  plan.batch = manifest.inputs[fromFiles[0]].shape[0];
  countExamples(plan.train, manifest, "train");
  if (plan.train.examples < plan.batch)
    throw BindingError("the training set has " + std::to_string(plan.train.examples) +
                       " examples, fewer than one batch of " + std::to_string(plan.batch));
  if (!evaluates)
    return plan;
  for (size_t i : fromFiles) {
    const TensorSpec &input = manifest.inputs[i];
    auto found = bindings.eval.find(input.name);
    if (found == bindings.eval.end())
      throw BindingError("input '" + input.name +
                         "' is read from a file for training but has no "
                         "data for the evaluations: " +
                         howToBind(input.name, "eval") + ", or give --no-eval");
    if (found->second.synthetic)
      throw BindingError(found->second.origin + ": input '" + input.name +
                         "' is read from a file for training; evaluating it on synthetic numbers "
                         "measures nothing (give --no-eval instead)");
    plan.eval.inputs.push_back(planner.bind(i, found->second));
  }
  for (const auto &[name, binding] : bindings.eval)
    if (std::none_of(fromFiles.begin(), fromFiles.end(),
                     [&](size_t i) { return manifest.inputs[i].name == name; }))
      throw BindingError(binding.origin + ": input '" + name +
                         "' is synthetic in training, so it is synthetic in the evaluations too");
  countExamples(plan.eval, manifest, "eval");
  for (const TensorSpec &result : manifest.evalResults)
    if (result.perExample && result.shape[0] != plan.batch)
      throw BindingError("eval result '" + result.name +
                         "' has one value per example of a batch of " +
                         std::to_string(result.shape[0]) +
                         ", but the inputs read from files have "
                         "a batch of " +
                         std::to_string(plan.batch) +
                         ", so it cannot be averaged "
                         "over the evaluation's examples (give --no-eval)");
  return plan;
}

} // namespace shardrt
