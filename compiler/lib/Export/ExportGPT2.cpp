//===- ExportGPT2.cpp - the formats and the files of `shardc export` ------===//
//
// The safetensors file is written by the runtime's checkpoint writer: a temporary
// file renamed over the old one, so that an interrupted export leaves no half file.
// Its header carries the writer's "crc32" metadata besides "format": "pt", which
// Hugging Face's loader asks for; safetensors readers ignore other keys.
//
//===----------------------------------------------------------------------===//

#include "shardc/Export/ExportGPT2.h"

#include "checkpoint_file.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include <unistd.h>

using namespace shardc;

std::optional<GPT2Format> shardc::parseGPT2Format(const std::string &name) {
  if (name == "nanogpt")
    return GPT2Format::NanoGPT;
  if (name == "hf")
    return GPT2Format::HuggingFace;
  return std::nullopt;
}

const char *shardc::knownGPT2Formats() { return "nanogpt, hf"; }

const char *shardc::gpt2FormatName(GPT2Format format) {
  switch (format) {
  case GPT2Format::NanoGPT:
    return "nanogpt";
  case GPT2Format::HuggingFace:
    return "hf";
  }
  return "?";
}

std::string shardc::gpt2Unfit(const GPTSizes &sizes, GPT2Format format) {
  if (sizes.heads * sizes.headDim != sizes.embed)
    return "GPT-2 splits n_embd into n_head heads of n_embd / n_head, and this model's " +
           std::to_string(sizes.heads) + " heads of " + std::to_string(sizes.headDim) +
           " (attention.Wq [layers, embed, heads, head_dim]) make " +
           std::to_string(sizes.heads * sizes.headDim) + ", not its embed " +
           std::to_string(sizes.embed);
  if (format == GPT2Format::NanoGPT && sizes.hidden != 4 * sizes.embed)
    return "nanoGPT's MLP is 4 x n_embd = " + std::to_string(4 * sizes.embed) +
           " wide, this model's " + std::to_string(sizes.hidden) +
           " (mlp.W1 [layers, embed, hidden]); --format hf takes any width (n_inner)";
  return "";
}

void shardc::checkAttentionScale(double scale) {
  if (scale > 0 && std::isfinite(scale))
    return;
  char text[32];
  std::snprintf(text, sizeof text, "%.9g", scale);
  throw ExportError(std::string("--scale ") + text +
                    ": an attention scale is a finite number above 0");
}

namespace {

/// `text` into `path`, through a temporary file renamed over it.
void writeText(const std::string &path, const std::string &text) {
  const std::filesystem::path target(path);
  const std::filesystem::path temporary =
      target.parent_path() /
      ("." + target.filename().string() + ".tmp-" + std::to_string(getpid()));
  {
    std::ofstream file(temporary, std::ios::binary | std::ios::trunc);
    file << text;
    file.close();
    if (!file) {
      std::error_code ignored;
      std::filesystem::remove(temporary, ignored);
      throw ExportError("'" + path + "': cannot write it");
    }
  }
  std::error_code error;
  std::filesystem::rename(temporary, target, error);
  if (error) {
    std::filesystem::remove(temporary, error);
    throw ExportError("'" + path + "': cannot write it: " + error.message());
  }
}

} // namespace

ExportedFiles shardc::exportGPT2(const GPTCheckpoint &gpt, GPT2Format format,
                                 std::optional<double> modelScale, const std::string &outDir) {
  const std::string unfit = gpt2Unfit(gpt.sizes, format);
  if (!unfit.empty())
    throw ExportError("'" + gpt.path + "': cannot be written as --format " +
                      gpt2FormatName(format) + ": " + unfit);
  ExportedFiles files;
  if (modelScale) {
    checkAttentionScale(*modelScale);
    files.queryFactor = *modelScale * std::sqrt(double(gpt.sizes.headDim));
    if (std::fabs(files.queryFactor - 1) < 1e-9)
      files.queryFactor = 1;
  }

  std::error_code error;
  std::filesystem::create_directories(outDir, error);
  if (error || !std::filesystem::is_directory(outDir))
    throw ExportError("'" + outDir + "': cannot make the output folder" +
                      (error ? ": " + error.message() : ": a file of that name is there"));
  const std::filesystem::path folder(outDir);

  const std::vector<NamedTensor> tensors = gpt2Tensors(gpt, format, files.queryFactor);
  std::vector<shardrt::TensorToWrite> toWrite;
  for (const NamedTensor &named : tensors) {
    toWrite.push_back(
        {named.name, shardrt::DType::F32, named.tensor.shape, named.tensor.values.data()});
    files.parameters += int64_t(named.tensor.values.size());
  }
  files.tensors = tensors.size();
  const std::string weights = (folder / "model.safetensors").string();
  try {
    shardrt::writeCheckpointFile(weights, toWrite, {{"format", "pt"}});
  } catch (const shardrt::CheckpointError &failure) {
    throw ExportError(failure.what());
  }
  const std::string config = (folder / "config.json").string();
  writeText(config, gpt2Config(gpt.sizes, format));
  const std::string readme = (folder / "README.md").string();
  writeText(readme, gpt2Readme(gpt, format, modelScale));
  files.paths = {weights, config, readme};
  return files;
}
