//===- GPTCheckpoint.h - W4's GPT read from a training checkpoint -*- C++ -*-===//
//
// The parameters of a GPT built from stdlib/transformer.shard's blocks under the
// names examples/gpt/gpt.shard gives them (wte, blocks scanned over layers, ln_f,
// head), read from a shardc training checkpoint (runtime/lib/driver/
// checkpoint_file.h), with the model's sizes read off their shapes. The optimizer's
// state in the file is left alone.
//
//===----------------------------------------------------------------------===//

#ifndef SHARDC_EXPORT_GPTCHECKPOINT_H
#define SHARDC_EXPORT_GPTCHECKPOINT_H

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace shardc {

/// A checkpoint that cannot be exported; what() names the file and says why.
struct ExportError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// An f32 tensor, row-major.
struct F32Tensor {
  std::vector<int64_t> shape;
  std::vector<float> values;
};

/// The GPT's sizes, as its parameters' shapes give them.
struct GPTSizes {
  int64_t vocab = 0, embed = 0, heads = 0, headDim = 0, layers = 0, hidden = 0, positions = 0;
};

/// Its parameters in shardc's layouts; the blocks' are stacked on a leading
/// [layers] dimension, as a scan stores them.
struct GPTCheckpoint {
  std::string path; // the file read (the newest of a folder)
  int64_t step = 0;
  std::string model; // the model's name in the file's metadata
  GPTSizes sizes;
  F32Tensor tokenTable;        // wte.table [vocab, embed]
  F32Tensor positionTable;     // wte.positions [positions, embed]
  F32Tensor ln1Scale, ln1Bias; // blocks.ln1 [layers, embed]
  F32Tensor wq, wk, wv;        // blocks.attention [layers, embed, heads, head_dim]
  F32Tensor wo;                // blocks.attention.Wo [layers, heads, head_dim, embed]
  F32Tensor ln2Scale, ln2Bias; // blocks.ln2 [layers, embed]
  F32Tensor w1;                // blocks.mlp.W1 [layers, embed, hidden]
  F32Tensor w2;                // blocks.mlp.W2 [layers, hidden, embed]
  F32Tensor lnFScale, lnFBias; // ln_f [embed]
  F32Tensor head;              // head.W [embed, vocab]
};

/// Reads `fileOrFolder`: a checkpoint file, or the folder of a run's checkpoints,
/// whose newest `ckpt-STEP.safetensors` is taken (as the driver's --resume does).
/// Throws ExportError when it cannot be read, is damaged, or is not this GPT: a
/// parameter missing (naming it and listing what the checkpoint has), of another
/// dtype, or of a shape that disagrees with the sizes the others give.
GPTCheckpoint readGPTCheckpoint(const std::string &fileOrFolder);

} // namespace shardc

#endif // SHARDC_EXPORT_GPTCHECKPOINT_H
