//===- GPTCheckpoint.cpp - W4's GPT read from a training checkpoint -------===//
//
// Each expected parameter's shape is written in the model's sizes; the first
// parameter that has a size sets it and every later one must agree, so that a
// checkpoint of another shape of the same names is refused with both shapes named.
//
//===----------------------------------------------------------------------===//

#include "shardc/Export/GPTCheckpoint.h"

#include "checkpoint_file.h"

#include <cstring>
#include <filesystem>

using namespace shardc;

namespace {

enum Size { Vocab, Embed, Heads, HeadDim, Layers, Hidden, Positions, NumSizes };
const char *const sizeNames[NumSizes] = {"vocab",  "embed",  "heads",    "head_dim",
                                         "layers", "hidden", "positions"};

int64_t &sizeOf(GPTSizes &sizes, Size size) {
  int64_t *fields[NumSizes] = {&sizes.vocab,  &sizes.embed,  &sizes.heads,    &sizes.headDim,
                               &sizes.layers, &sizes.hidden, &sizes.positions};
  return *fields[size];
}

/// A parameter of W4's GPT: its path under params/, its shape in sizes, where it goes.
struct Expected {
  const char *name;
  std::vector<Size> dims;
  F32Tensor GPTCheckpoint::*member;
};

const std::vector<Expected> &expectedParameters() {
  using C = GPTCheckpoint;
  static const std::vector<Expected> table = {
      {"wte.table", {Vocab, Embed}, &C::tokenTable},
      {"wte.positions", {Positions, Embed}, &C::positionTable},
      {"blocks.ln1.scale", {Layers, Embed}, &C::ln1Scale},
      {"blocks.ln1.bias", {Layers, Embed}, &C::ln1Bias},
      {"blocks.attention.Wq", {Layers, Embed, Heads, HeadDim}, &C::wq},
      {"blocks.attention.Wk", {Layers, Embed, Heads, HeadDim}, &C::wk},
      {"blocks.attention.Wv", {Layers, Embed, Heads, HeadDim}, &C::wv},
      {"blocks.attention.Wo", {Layers, Heads, HeadDim, Embed}, &C::wo},
      {"blocks.ln2.scale", {Layers, Embed}, &C::ln2Scale},
      {"blocks.ln2.bias", {Layers, Embed}, &C::ln2Bias},
      {"blocks.mlp.W1", {Layers, Embed, Hidden}, &C::w1},
      {"blocks.mlp.W2", {Layers, Hidden, Embed}, &C::w2},
      {"ln_f.scale", {Embed}, &C::lnFScale},
      {"ln_f.bias", {Embed}, &C::lnFBias},
      {"head.W", {Embed, Vocab}, &C::head},
  };
  return table;
}

const char *const paramsPrefix = "params/";

std::string shapeText(const std::vector<int64_t> &shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

/// `[layers = 2, embed = 16, hidden]`: the sizes known so far with their values.
std::string expectedText(const Expected &expected, GPTSizes &sizes) {
  std::string text = "[";
  for (size_t i = 0; i < expected.dims.size(); ++i) {
    text += (i ? ", " : "") + std::string(sizeNames[expected.dims[i]]);
    if (int64_t size = sizeOf(sizes, expected.dims[i]))
      text += " = " + std::to_string(size);
  }
  return text + "]";
}

/// What the checkpoint holds instead: its parameters with their shapes, the first 12.
std::string parametersText(const shardrt::CheckpointReader &reader) {
  std::string text;
  size_t listed = 0, count = 0;
  for (const shardrt::StoredTensor &tensor : reader.tensors()) {
    if (tensor.name.rfind(paramsPrefix, 0) != 0)
      continue;
    if (++count > 12)
      continue;
    text += (listed++ ? ", " : "") + tensor.name.substr(std::strlen(paramsPrefix)) + " " +
            (tensor.dtype == shardrt::DType::F32 ? "f32" : "i32") + shapeText(tensor.shape);
  }
  if (count == 0)
    return "none under params/";
  if (count > listed)
    text += " and " + std::to_string(count - listed) + " more";
  return text;
}

std::string resolveCheckpoint(const std::string &fileOrFolder) {
  std::error_code error;
  if (!std::filesystem::is_directory(fileOrFolder, error))
    return fileOrFolder;
  std::vector<std::pair<int64_t, std::string>> found =
      shardrt::listCheckpoints(fileOrFolder, "ckpt");
  if (found.empty())
    throw ExportError("'" + fileOrFolder + "' holds no checkpoint (ckpt-STEP.safetensors)");
  return found.back().second;
}

} // namespace

GPTCheckpoint shardc::readGPTCheckpoint(const std::string &fileOrFolder) {
  try {
    GPTCheckpoint gpt;
    gpt.path = resolveCheckpoint(fileOrFolder);
    shardrt::CheckpointReader reader(gpt.path);
    const std::string at = "'" + gpt.path + "': ";
    const std::map<std::string, std::string> &metadata = reader.metadata();
    auto format = metadata.find("format");
    if (format == metadata.end() || format->second != "shardrt-checkpoint-1")
      throw ExportError(at + "not a shardc training checkpoint (its metadata's format is " +
                        (format == metadata.end() ? "missing" : "'" + format->second + "'") +
                        ", not 'shardrt-checkpoint-1')");
    auto model = metadata.find("model"), step = metadata.find("step");
    gpt.model = model == metadata.end() ? "?" : model->second;
    gpt.step = step == metadata.end() ? 0 : std::stoll(step->second);

    const std::vector<Expected> &expected = expectedParameters();
    size_t missing = 0;
    const Expected *firstMissing = nullptr;
    for (const Expected &parameter : expected)
      if (!reader.find(paramsPrefix + std::string(parameter.name))) {
        firstMissing = firstMissing ? firstMissing : &parameter;
        ++missing;
      }
    if (firstMissing) {
      GPTSizes unknown;
      throw ExportError(
          at + "not W4's GPT (stdlib/transformer.shard's blocks named as examples/gpt/gpt.shard " +
          "names them: wte, blocks scanned over layers, ln_f, head): model '" + gpt.model +
          "' has no parameter '" + firstMissing->name + "' " +
          expectedText(*firstMissing, unknown) +
          (missing > 1 ? " (nor " + std::to_string(missing - 1) + " more of the " +
                             std::to_string(expected.size()) + " expected)"
                       : "") +
          "; its parameters: " + parametersText(reader));
    }

    for (const Expected &parameter : expected) {
      const shardrt::StoredTensor &stored =
          *reader.find(paramsPrefix + std::string(parameter.name));
      const std::string named = at + "parameter '" + parameter.name + "' ";
      if (stored.dtype != shardrt::DType::F32)
        throw ExportError(named + "is i32" + shapeText(stored.shape) + ", not f32");
      const std::string expectedShape = expectedText(parameter, gpt.sizes);
      bool fits = stored.shape.size() == parameter.dims.size();
      for (size_t i = 0; fits && i < parameter.dims.size(); ++i) {
        int64_t &size = sizeOf(gpt.sizes, parameter.dims[i]);
        fits = stored.shape[i] > 0 && (size == 0 || size == stored.shape[i]);
        if (fits)
          size = stored.shape[i];
      }
      if (!fits)
        throw ExportError(named + "is f32" + shapeText(stored.shape) + ", but the parameters " +
                          "before it make W4's GPT's " + expectedShape);
      F32Tensor &tensor = gpt.*parameter.member;
      tensor.shape = stored.shape;
      std::vector<uint32_t> bits = reader.read(stored);
      tensor.values.resize(bits.size());
      std::memcpy(tensor.values.data(), bits.data(), bits.size() * sizeof(float));
    }
    return gpt;
  } catch (const shardrt::CheckpointError &error) {
    throw ExportError(error.what());
  }
}
