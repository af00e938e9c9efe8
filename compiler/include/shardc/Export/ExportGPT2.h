//===- ExportGPT2.h - W4's GPT as GPT-2's tensors for PyTorch ----*- C++ -*-===//
//
// `shardc export`: a GPTCheckpoint written as the safetensors and config.json that
// PyTorch's GPT-2 implementations load, nanoGPT's (model.py, nn.Linear weights
// [out, in]) or Hugging Face's (GPT2LMHeadModel, Conv1D weights [in, out]), with a
// README.md beside them that says what differs from those models' defaults.
//
//===----------------------------------------------------------------------===//

#ifndef SHARDC_EXPORT_EXPORTGPT2_H
#define SHARDC_EXPORT_EXPORTGPT2_H

#include "shardc/Export/GPTCheckpoint.h"

#include <optional>
#include <string>
#include <vector>

namespace shardc {

enum class GPT2Format { NanoGPT, HuggingFace };

/// "nanogpt" or "hf"; nullopt for any other name.
std::optional<GPT2Format> parseGPT2Format(const std::string &name);
/// The names parseGPT2Format knows, for an error message: "nanogpt, hf".
const char *knownGPT2Formats();
const char *gpt2FormatName(GPT2Format format);

/// A tensor under its name in the target format.
struct NamedTensor {
  std::string name;
  F32Tensor tensor;
};

/// GPT-2's names and layouts of `gpt`'s parameters, in the order of PyTorch's
/// state_dict: each layer's Wq, Wk, Wv one c_attn weight (q, then k, then v, heads
/// major), the linear layers' biases zeros (shardc's have none), the head [vocab,
/// embed]. `queryFactor` multiplies the query weights: the model's attention scale
/// over GPT-2's 1/sqrt(head_dim), folded into Wq (1: the same scale).
std::vector<NamedTensor> gpt2Tensors(const GPTCheckpoint &gpt, GPT2Format format,
                                     double queryFactor);

/// config.json: nanoGPT's GPTConfig fields, or Hugging Face's GPT2Config keys.
std::string gpt2Config(const GPTSizes &sizes, GPT2Format format);

/// README.md for the output folder: where the tensors came from, how to load them,
/// what the target's stock model would compute differently.
std::string gpt2Readme(const GPTCheckpoint &gpt, GPT2Format format,
                       std::optional<double> modelScale);

/// Why `sizes` cannot be written in `format`, or "" when they can: GPT-2 splits
/// n_embd into its heads (n_embd = heads x head_dim), and nanoGPT's MLP is 4 x n_embd.
std::string gpt2Unfit(const GPTSizes &sizes, GPT2Format format);

/// Throws ExportError unless `scale` (--scale) is a finite number above 0.
void checkAttentionScale(double scale);

/// What exportGPT2 wrote, for the message.
struct ExportedFiles {
  std::vector<std::string> paths;
  size_t tensors = 0;
  int64_t parameters = 0; // elements written, the zero biases included
  double queryFactor = 1;
};

/// Writes `outDir`/model.safetensors, config.json and README.md (making `outDir`;
/// each file replaced whole, or left as it was on failure). `modelScale`: the
/// attention scale the model was trained with (its `scale` config parameter, which
/// the checkpoint does not record); none: GPT-2's 1/sqrt(head_dim). Throws
/// ExportError.
ExportedFiles exportGPT2(const GPTCheckpoint &gpt, GPT2Format format,
                         std::optional<double> modelScale, const std::string &outDir);

} // namespace shardc

#endif // SHARDC_EXPORT_EXPORTGPT2_H
