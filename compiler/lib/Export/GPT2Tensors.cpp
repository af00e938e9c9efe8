//===- GPT2Tensors.cpp - GPT-2's names and layouts of W4's parameters -----===//
//
// shardc's weights are [in, out] (x @ W), with the heads as their own dimensions:
// Wq [embed, heads, head_dim] is [embed, heads x head_dim] read row-major, the heads
// major, as GPT-2 splits its q, k and v into heads. Hugging Face's Conv1D keeps
// [in, out]; nanoGPT's nn.Linear stores [out, in], the transpose.
//
//===----------------------------------------------------------------------===//

#include "shardc/Export/ExportGPT2.h"

using namespace shardc;

namespace {

/// Layer `layer` of a stacked [layers, ...] tensor: its elements' offset and count.
std::pair<const float *, size_t> layerOf(const F32Tensor &stacked, int64_t layer) {
  const size_t count = stacked.values.size() / size_t(stacked.shape[0]);
  return {stacked.values.data() + size_t(layer) * count, count};
}

/// An [in, out] matrix in the target's layout: as it is, or transposed to [out, in].
F32Tensor matrix(const float *values, int64_t in, int64_t out, bool outMajor) {
  F32Tensor tensor;
  tensor.shape = outMajor ? std::vector<int64_t>{out, in} : std::vector<int64_t>{in, out};
  tensor.values.resize(size_t(in * out));
  for (int64_t i = 0; i < in; ++i)
    for (int64_t o = 0; o < out; ++o)
      tensor.values[size_t(outMajor ? o * in + i : i * out + o)] = values[i * out + o];
  return tensor;
}

F32Tensor vector(const float *values, int64_t size) {
  return F32Tensor{{size}, std::vector<float>(values, values + size)};
}

F32Tensor zeros(int64_t size) { return F32Tensor{{size}, std::vector<float>(size_t(size), 0.f)}; }

} // namespace

std::vector<NamedTensor> shardc::gpt2Tensors(const GPTCheckpoint &gpt, GPT2Format format,
                                             double queryFactor) {
  const GPTSizes &s = gpt.sizes;
  // nanoGPT's nn.Linear: [out, in].
  const bool outMajor = format == GPT2Format::NanoGPT;
  const int64_t embed = s.embed, qkv = s.heads * s.headDim;
  std::vector<NamedTensor> out;
  out.push_back({"transformer.wte.weight", gpt.tokenTable});
  out.push_back({"transformer.wpe.weight", gpt.positionTable});
  for (int64_t layer = 0; layer < s.layers; ++layer) {
    const std::string at = "transformer.h." + std::to_string(layer) + ".";
    out.push_back({at + "ln_1.weight", vector(layerOf(gpt.ln1Scale, layer).first, embed)});
    out.push_back({at + "ln_1.bias", vector(layerOf(gpt.ln1Bias, layer).first, embed)});

    // c_attn [embed, 3 x qkv]: each input row is q's row, then k's, then v's.
    std::vector<float> attn(size_t(embed * 3 * qkv));
    const float *q = layerOf(gpt.wq, layer).first, *k = layerOf(gpt.wk, layer).first,
                *v = layerOf(gpt.wv, layer).first;
    for (int64_t i = 0; i < embed; ++i)
      for (int64_t j = 0; j < qkv; ++j) {
        float *row = &attn[size_t(i * 3 * qkv)];
        row[j] = float(double(q[i * qkv + j]) * queryFactor);
        row[qkv + j] = k[i * qkv + j];
        row[2 * qkv + j] = v[i * qkv + j];
      }
    out.push_back({at + "attn.c_attn.weight", matrix(attn.data(), embed, 3 * qkv, outMajor)});
    out.push_back({at + "attn.c_attn.bias", zeros(3 * qkv)});
    out.push_back(
        {at + "attn.c_proj.weight", matrix(layerOf(gpt.wo, layer).first, qkv, embed, outMajor)});
    out.push_back({at + "attn.c_proj.bias", zeros(embed)});

    out.push_back({at + "ln_2.weight", vector(layerOf(gpt.ln2Scale, layer).first, embed)});
    out.push_back({at + "ln_2.bias", vector(layerOf(gpt.ln2Bias, layer).first, embed)});
    out.push_back(
        {at + "mlp.c_fc.weight", matrix(layerOf(gpt.w1, layer).first, embed, s.hidden, outMajor)});
    out.push_back({at + "mlp.c_fc.bias", zeros(s.hidden)});
    out.push_back({at + "mlp.c_proj.weight",
                   matrix(layerOf(gpt.w2, layer).first, s.hidden, embed, outMajor)});
    out.push_back({at + "mlp.c_proj.bias", zeros(embed)});
  }
  out.push_back({"transformer.ln_f.weight", gpt.lnFScale});
  out.push_back({"transformer.ln_f.bias", gpt.lnFBias});
  // An nn.Linear in both: [vocab, embed].
  out.push_back({"lm_head.weight", matrix(gpt.head.values.data(), embed, s.vocab, true)});
  return out;
}
