//===- GPT2Config.cpp - config.json for nanoGPT or Hugging Face -----------===//
//
// nanoGPT's config.json holds exactly GPTConfig's fields, so that
// GPTConfig(**json.load(f)) takes it; Hugging Face's holds GPT2Config's keys, with
// what W4's GPT does differently from GPT-2's defaults said explicitly.
//
//===----------------------------------------------------------------------===//

#include "shardc/Export/ExportGPT2.h"

#include <nlohmann/json.hpp>

using namespace shardc;

std::string shardc::gpt2Config(const GPTSizes &sizes, GPT2Format format) {
  nlohmann::ordered_json config;
  switch (format) {
  case GPT2Format::NanoGPT:
    config["n_layer"] = sizes.layers;
    config["n_head"] = sizes.heads;
    config["n_embd"] = sizes.embed;
    config["block_size"] = sizes.positions;
    // The layer norms' biases are trained, and nanoGPT's flag covers the linear
    // layers' too: theirs are written as zeros.
    config["bias"] = true;
    config["vocab_size"] = sizes.vocab;
    // Not recorded in a checkpoint; nanoGPT's default, what inference wants.
    config["dropout"] = 0.0;
    break;
  case GPT2Format::HuggingFace:
    config["architectures"] = {"GPT2LMHeadModel"};
    config["model_type"] = "gpt2";
    config["vocab_size"] = sizes.vocab;
    config["n_positions"] = sizes.positions;
    config["n_embd"] = sizes.embed;
    config["n_layer"] = sizes.layers;
    config["n_head"] = sizes.heads;
    config["n_inner"] = sizes.hidden;
    // shardc's gelu is GPT-2's tanh approximation.
    config["activation_function"] = "gelu_new";
    config["layer_norm_epsilon"] = 1e-5;
    config["scale_attn_weights"] = true;
    config["tie_word_embeddings"] = false;
    // A vocabulary of the model's own (W4's: bytes) has no GPT-2 token 50256.
    config["bos_token_id"] = nullptr;
    config["eos_token_id"] = nullptr;
    config["torch_dtype"] = "float32";
    break;
  }
  return config.dump(2) + "\n";
}
