//===- GPT2Readme.cpp - the README.md beside the exported weights ---------===//
//
// What a reader of the output folder needs and cannot see in the tensors: where
// they came from, how to load them, and where the target's stock model computes
// something else than the shardc model did.
//
//===----------------------------------------------------------------------===//

#include "shardc/Export/ExportGPT2.h"

#include <cmath>
#include <cstdio>

using namespace shardc;

namespace {

std::string number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.9g", value);
  return text;
}

std::string scaleText(const GPTSizes &sizes, std::optional<double> modelScale) {
  const double gpt2 = 1 / std::sqrt(double(sizes.headDim));
  const std::string gpt2Text = "GPT-2's 1/sqrt(head_dim) = " + number(gpt2);
  if (!modelScale)
    return "- Attention scale: " + gpt2Text +
           ", assumed: a checkpoint does not record the model's `scale` parameter "
           "(examples/gpt/gpt.shard's default is 1/sqrt(head_dim)). For a model "
           "trained with another scale, export again with `--scale S`.\n";
  const double factor = *modelScale * std::sqrt(double(sizes.headDim));
  if (std::fabs(factor - 1) < 1e-9)
    return "- Attention scale: the model's " + number(*modelScale) + " (`--scale`), " + gpt2Text +
           ".\n";
  return "- Attention scale: the model's " + number(*modelScale) + " (`--scale`) is not " +
         gpt2Text + ": the query weights (the first third of each `c_attn`) are multiplied by " +
         number(factor) + " so that GPT-2's attention computes the model's scores.\n";
}

} // namespace

std::string shardc::gpt2Readme(const GPTCheckpoint &gpt, GPT2Format format,
                               std::optional<double> modelScale) {
  const GPTSizes &s = gpt.sizes;
  const bool nano = format == GPT2Format::NanoGPT;
  std::string text = std::string("# ") + (nano ? "nanoGPT" : "Hugging Face GPT-2") +
                     " weights from shardc\n\n" + "Exported by `shardc export --format " +
                     gpt2FormatName(format) + "` from `" + gpt.path + "` (model `" + gpt.model +
                     "`, step " + std::to_string(gpt.step) + "): " + std::to_string(s.layers) +
                     " layers, n_embd " + std::to_string(s.embed) + ", " + std::to_string(s.heads) +
                     " heads of " + std::to_string(s.headDim) + ", an MLP of " +
                     std::to_string(s.hidden) + ", " + std::to_string(s.positions) +
                     " positions, a vocabulary of " + std::to_string(s.vocab) + ".\n\n";
  if (nano)
    text += "`model.safetensors` holds nanoGPT's state_dict names and layouts (`nn.Linear` "
            "weights [out, in]); `config.json` holds `GPTConfig`'s fields:\n\n"
            "```python\n"
            "import json\n"
            "from safetensors.torch import load_file\n"
            "from model import GPT, GPTConfig  # nanoGPT's model.py, changed as below\n"
            "model = GPT(GPTConfig(**json.load(open(\"config.json\"))))\n"
            "missing, unexpected = model.load_state_dict(load_file(\"model.safetensors\"), "
            "strict=False)\n"
            "assert not unexpected and all(name.endswith(\".attn.bias\") for name in missing)\n"
            "```\n\n"
            "(nanoGPT keeps its causal mask as a buffer `attn.bias` where PyTorch has no flash "
            "attention, which no export holds.) Change nanoGPT's model.py first:\n\n"
            "- The head is untied: delete `self.transformer.wte.weight = self.lm_head.weight`, "
            "or `lm_head.weight` overwrites the token embedding.\n"
            "- gelu: shardc's is GPT-2's tanh approximation; nanoGPT's MLP uses `nn.GELU()` "
            "(exact, erf): make it `nn.GELU(approximate=\"tanh\")`.\n"
            "- Biases: `bias: true` because the layer norms' biases are trained; shardc's linear "
            "layers have none, so theirs are zeros.\n";
  else
    text += "`model.safetensors` and `config.json` hold the names, layouts and keys of "
            "`GPT2LMHeadModel.save_pretrained` (`Conv1D` weights [in, out]):\n\n"
            "```python\n"
            "from transformers import GPT2LMHeadModel\n"
            "model = GPT2LMHeadModel.from_pretrained(\"THIS_FOLDER\")\n"
            "```\n\n"
            "- The head is untied: `tie_word_embeddings` is false.\n"
            "- gelu: `gelu_new`, the tanh approximation, as shardc's.\n"
            "- Biases: shardc's linear layers have none; GPT-2's are written as zeros.\n"
            "- Tokens: the model's own ids (W4's are bytes), no `bos_token_id` or "
            "`eos_token_id`.\n";
  text += scaleText(s, modelScale);
  text += "- Layer norms: epsilon 1e-5, stdlib/transformer.shard's default and PyTorch's.\n"
          "- Dropout is not in a checkpoint and plays no part in inference.\n";
  return text;
}
