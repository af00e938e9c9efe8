// shardrt-test-driver CASE [flags...]: small programs as shardc would compile them, run
// by the runtime's driver (shardrt_main) with a hand-written manifest and entries.
//
//   matmul:DxM   forward only (no optimizer), on mesh (data = D, model = M): y = x @ W + b
//                with x split on data (batch) and model (contraction), W split on model
//                (contraction), so each rank's product is partial and all_reduce over
//                model completes it; then z = relu(y) @ V + c, times gain, with V, c,
//                gain, z split on model (columns); loss = mean(z^2) by all_reduce over
//                both axes; the i32 labels returned as they are and counted into a
//                histogram (all_reduce_i32 over data).
//   matmul-ref   the same program unsplit, plain loops and no collectives: the oracle the
//                sharded runs are compared with (test/EndToEnd/Inputs/compare_outputs.py).
//   stack:M      the stacked parameters blocks.W, blocks.U and the stacked input blocks.u
//                (uniform fill, a scanned dropout's numbers) of shape [3, 4, 8], on mesh
//                (model = M), returned as results.
//   layers:M     the same stacks given as three one-layer tensors each (`layer` 0..2),
//                copied into results of the stacked shape: the numbers must be blocks.W's
//                and blocks.u's bitwise, and blocks.U's (xavier_normal with one layer's
//                fans) must be stack's normal(stddev = sqrt(2 / (4 + 8))).
//   stacked:M    the stacks as a pipeline's parameters: `stacked`, split by layer over
//                `model`, blocks.U xavier_normal with one layer's fans (layers:M's bitwise).
//   linear:DxM:B:LR
//                softmax regression on the dataset, trained by hand: logits = image @ W + b
//                on mesh (data = D, model = M), global batch B split over data, the pixels
//                (image rows, W rows) over model; momentum (0.9, learning rate LR) with
//                gradients summed over data. Train results: loss, accuracy, the step
//                buffer (count) and a checksum of the batch's labels by row (the order
//                of the examples); eval results: per-example loss and accuracy, logits.
//   badgrad:DxM:B:LR
//                the same with a wrong gradient for b (twice the true one).
//   synthetic:D  no dataset: loss = mean((x @ w)^2) over x [8, 4] filled anew each step,
//                split over data; plain SGD (no optimizer state).
//   file:PATH    the manifest in PATH, no train entry, eval and grad that do nothing
//                (for manifest errors); file+train:PATH gives a train entry too.
// The flags after CASE go to the driver (--help lists them).
#include "shardrt/driver.h"
#include "shardrt/shardrt.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

// ---- matmul ----------------------------------------------------------------------

constexpr int64_t kBatch = 16, kIn = 64, kHidden = 32, kOut = 16, kClasses = 10;
constexpr uint32_t kData = 1u << 0, kModel = 1u << 1;

// DATA and MODEL stand for the mesh axes a dimension is split over: 0 and 1 in the
// sharded manifest, nothing in the reference. SIZES is the mesh. (The same tokens in
// the stack manifests below.)
const char *const kMatmulManifest = R"({
  "model": "MatmulTest",
  "mesh": {"axes": ["data", "model"], "sizes": [SIZES]},
  "params": [
    {"name": "W", "dtype": "f32", "global_shape": [64, 32], "shape": [64, 32],
     "split": [[MODEL], []], "init": {"name": "xavier_normal", "args": {}}},
    {"name": "b", "dtype": "f32", "global_shape": [32], "shape": [32],
     "split": [[]], "init": {"name": "normal", "args": {"stddev": 0.5}}},
    {"name": "V", "dtype": "f32", "global_shape": [32, 16], "shape": [32, 16],
     "split": [[], [MODEL]], "init": {"name": "he_normal", "args": {}}},
    {"name": "c", "dtype": "f32", "global_shape": [16], "shape": [16],
     "split": [[MODEL]], "init": {"name": "uniform", "args": {"scale": 0.1}}},
    {"name": "gain", "dtype": "f32", "global_shape": [16], "shape": [16],
     "split": [[MODEL]], "init": {"name": "constant", "args": {"value": 1.5}}}
  ],
  "optimizer": null,
  "inputs": [
    {"name": "x", "dtype": "f32", "shape": [16, 64], "split": [[DATA], [MODEL]],
     "fill": {"kind": "normal"}},
    {"name": "label", "dtype": "i32", "shape": [16], "split": [[DATA]],
     "fill": {"kind": "integers", "high": 10}}
  ],
  "eval": {"results": [
    {"name": "loss", "dtype": "f32", "shape": [], "split": []},
    {"name": "y", "dtype": "f32", "shape": [16, 32], "split": [[DATA], []]},
    {"name": "z", "dtype": "f32", "shape": [16, 16], "split": [[DATA], [MODEL]]},
    {"name": "labels", "dtype": "i32", "shape": [16], "split": [[DATA]]},
    {"name": "histogram", "dtype": "i32", "shape": [10], "split": [[]]}
  ]}
})";

/// The eval buffers of the matmul programs: parameters, inputs, then results.
struct MatmulBuffers {
  const float *w, *b, *v, *c, *gain, *x;
  const int32_t *label;
  float *loss, *y, *z;
  int32_t *labels, *histogram;

  explicit MatmulBuffers(void **buffers)
      : w(static_cast<const float *>(buffers[0])), b(static_cast<const float *>(buffers[1])),
        v(static_cast<const float *>(buffers[2])), c(static_cast<const float *>(buffers[3])),
        gain(static_cast<const float *>(buffers[4])), x(static_cast<const float *>(buffers[5])),
        label(static_cast<const int32_t *>(buffers[6])), loss(static_cast<float *>(buffers[7])),
        y(static_cast<float *>(buffers[8])), z(static_cast<float *>(buffers[9])),
        labels(static_cast<int32_t *>(buffers[10])),
        histogram(static_cast<int32_t *>(buffers[11])) {}
};

void matmulSharded(void **buffers) {
  MatmulBuffers t(buffers);
  const int64_t batch = kBatch / shardrt_mesh_axis_size(0);
  const int64_t in = kIn / shardrt_mesh_axis_size(1), out = kOut / shardrt_mesh_axis_size(1);

  // This rank holds `in` rows of W and the matching columns of x: a partial product.
  for (int64_t i = 0; i < batch; ++i)
    for (int64_t j = 0; j < kHidden; ++j) {
      float sum = 0;
      for (int64_t k = 0; k < in; ++k)
        sum += t.x[i * in + k] * t.w[k * kHidden + j];
      t.y[i * kHidden + j] = sum;
    }
  shardrt_all_reduce_f32(kModel, t.y, t.y, batch * kHidden, SHARDRT_SUM);
  for (int64_t i = 0; i < batch; ++i)
    for (int64_t j = 0; j < kHidden; ++j)
      t.y[i * kHidden + j] += t.b[j];

  // V's columns are split over model, so z's are: no communication.
  float squares = 0;
  for (int64_t i = 0; i < batch; ++i)
    for (int64_t j = 0; j < out; ++j) {
      float sum = t.c[j];
      for (int64_t k = 0; k < kHidden; ++k)
        sum += std::max(t.y[i * kHidden + k], 0.0f) * t.v[k * out + j];
      t.z[i * out + j] = sum * t.gain[j];
      squares += t.z[i * out + j] * t.z[i * out + j];
    }
  shardrt_all_reduce_f32(kData | kModel, &squares, t.loss, 1, SHARDRT_SUM);
  *t.loss /= float(kBatch * kOut);

  for (int64_t i = 0; i < batch; ++i) {
    t.labels[i] = t.label[i];
    ++t.histogram[t.label[i]];
  }
  shardrt_all_reduce_i32(kData, t.histogram, t.histogram, kClasses, SHARDRT_SUM);
}

void matmulReference(void **buffers) {
  MatmulBuffers t(buffers);
  for (int64_t i = 0; i < kBatch; ++i)
    for (int64_t j = 0; j < kHidden; ++j) {
      float sum = 0;
      for (int64_t k = 0; k < kIn; ++k)
        sum += t.x[i * kIn + k] * t.w[k * kHidden + j];
      t.y[i * kHidden + j] = sum + t.b[j];
    }
  float squares = 0;
  for (int64_t i = 0; i < kBatch; ++i)
    for (int64_t j = 0; j < kOut; ++j) {
      float sum = t.c[j];
      for (int64_t k = 0; k < kHidden; ++k)
        sum += std::max(t.y[i * kHidden + k], 0.0f) * t.v[k * kOut + j];
      t.z[i * kOut + j] = sum * t.gain[j];
      squares += t.z[i * kOut + j] * t.z[i * kOut + j];
    }
  *t.loss = squares / float(kBatch * kOut);
  for (int64_t i = 0; i < kBatch; ++i) {
    t.labels[i] = t.label[i];
    ++t.histogram[t.label[i]];
  }
}

// ---- stacked parameters ------------------------------------------------------------

constexpr int64_t kLayers = 3, kRows = 4, kCols = 8;

const char *const kStackManifest = R"({
  "model": "StackTest",
  "mesh": {"axes": ["model"], "sizes": [SIZES]},
  "params": [
    {"name": "blocks.W", "dtype": "f32", "global_shape": [3, 4, 8],
     "shape": [3, 4, 8], "split": W_SPLIT,STACKED
     "init": {"name": "normal", "args": {"stddev": 0.5}}},
    {"name": "blocks.U", "dtype": "f32", "global_shape": [3, 4, 8],
     "shape": [3, 4, 8], "split": U_SPLIT,STACKED
     "init": U_INIT}
  ],
  "inputs": [
    {"name": "blocks.u", "dtype": "f32", "shape": [3, 4, 8], "split": U_SPLIT,
     "fill": {"kind": "uniform"}}
  ],
  "eval": {"results": [
    {"name": "W", "dtype": "f32", "shape": [3, 4, 8], "split": W_SPLIT},
    {"name": "U", "dtype": "f32", "shape": [3, 4, 8], "split": U_SPLIT},
    {"name": "u", "dtype": "f32", "shape": [3, 4, 8], "split": U_SPLIT}
  ]}
})";

// LAYER_PARAMS and LAYER_INPUTS are replaced by three copies of these, for layers 0, 1, 2.
const char *const kLayerParams = R"(
    {"name": "blocks.W", "dtype": "f32", "global_shape": [3, 4, 8], "layer": LAYER,
     "shape": [4, 8], "split": [[MODEL], []], "init": {"name": "normal", "args": {"stddev": 0.5}}},
    {"name": "blocks.U", "dtype": "f32", "global_shape": [3, 4, 8], "layer": LAYER,
     "shape": [4, 8], "split": [[], [MODEL]], "init": {"name": "xavier_normal"}})";
const char *const kLayerInputs = R"(
    {"name": "blocks.u", "dtype": "f32", "global_shape": [3, 4, 8], "layer": LAYER,
     "shape": [4, 8], "split": [[], [MODEL]], "fill": {"kind": "uniform"}})";

const char *const kLayersManifest = R"({
  "model": "StackTest",
  "mesh": {"axes": ["model"], "sizes": [SIZES]},
  "params": [LAYER_PARAMS
  ],
  "inputs": [LAYER_INPUTS
  ],
  "eval": {"results": [
    {"name": "W", "dtype": "f32", "shape": [3, 4, 8], "split": [[], [MODEL], []]},
    {"name": "U", "dtype": "f32", "shape": [3, 4, 8], "split": [[], [], [MODEL]]},
    {"name": "u", "dtype": "f32", "shape": [3, 4, 8], "split": [[], [], [MODEL]]}
  ]}
})";

constexpr int kStacks = 3; // W, U, u

void stackEntry(void **buffers) {
  const int64_t count = kLayers * kRows * kCols / shardrt_mesh_axis_size(0);
  for (int which = 0; which < kStacks; ++which)
    std::memcpy(buffers[kStacks + which], buffers[which], count * sizeof(float));
}

/// Buffers: W0, U0, W1, U1, W2, U2, u0, u1, u2, then the results W, U, u: each layer is
/// one slice of dimension 0 of its result.
void layersEntry(void **buffers) {
  const int64_t perLayer = kRows * kCols / shardrt_mesh_axis_size(0);
  for (int64_t layer = 0; layer < kLayers; ++layer)
    for (int which = 0; which < kStacks; ++which) {
      void *slice = which < 2 ? buffers[2 * layer + which] : buffers[2 * kLayers + layer];
      std::memcpy(static_cast<float *>(buffers[kStacks * kLayers + which]) + layer * perLayer,
                  slice, perLayer * sizeof(float));
    }
}

// ---- linear: softmax regression on the dataset --------------------------------------

constexpr int64_t kPixels = 28 * 28;
constexpr float kMomentum = 0.9f;

// BATCH is the global batch and LR the learning rate, DATA, MODEL and SIZES as above.
const char *const kLinearManifest = R"({
  "model": "LinearTest",
  "mesh": {"axes": ["data", "model"], "sizes": [SIZES]},
  "params": [
    {"name": "W", "dtype": "f32", "shape": [784, 10], "split": [[MODEL], []],
     "init": {"name": "normal", "args": {"stddev": 0.01}}},
    {"name": "b", "dtype": "f32", "shape": [10], "split": [[]], "init": {"name": "zeros"}}
  ],
  "optimizer": {"name": "momentum", "args": {"lr": LR, "beta": 0.9}, "state": ["trace"]},
  "inputs": [
    {"name": "image", "dtype": "f32", "shape": [BATCH, 28, 28, 1],
     "split": [[DATA], [MODEL], [], []], "fill": {"kind": "normal"}},
    {"name": "label", "dtype": "i32", "shape": [BATCH], "split": [[DATA]],
     "fill": {"kind": "integers", "high": 10}, "classes": 10}
  ],
  "train": {"results": [
    {"name": "loss", "dtype": "f32", "shape": [], "split": []},
    {"name": "accuracy", "dtype": "f32", "shape": [], "split": []},
    {"name": "count", "dtype": "f32", "shape": [], "split": []},
    {"name": "batch_checksum", "dtype": "f32", "shape": [], "split": []}
  ]},
  "eval": {"results": [
    {"name": "loss", "dtype": "f32", "shape": [BATCH], "split": [[DATA]], "per_example": true},
    {"name": "accuracy", "dtype": "f32", "shape": [BATCH], "split": [[DATA]],
     "per_example": true},
    {"name": "logits", "dtype": "f32", "shape": [BATCH, 10], "split": [[DATA], []]}
  ]}
})";

struct {
  int64_t batch;
  float lr;
  bool badGrad;
} gLinear;

/// This rank's part: `rows` rows of the batch from `firstRow`, `pixels` of each image
/// (a band of its rows, which are W's rows too).
struct LinearPart {
  int64_t rows = gLinear.batch / shardrt_mesh_axis_size(0);
  int64_t firstRow = shardrt_mesh_coord(0) * rows;
  int64_t pixels = kPixels / shardrt_mesh_axis_size(1);
};

/// Per example: logits = image @ W + b (partial over this rank's pixels, completed over
/// model), the cross-entropy and whether the argmax is the label; d(mean loss)/d(logits)
/// = (softmax - onehot) / batch when `dlogits` is given.
void linearExamples(const float *w, const float *b, const float *image, const int32_t *label,
                    float *logits, float *loss, float *correct, float *dlogits) {
  LinearPart part;
  for (int64_t i = 0; i < part.rows; ++i)
    for (int64_t c = 0; c < kClasses; ++c) {
      float sum = 0;
      for (int64_t k = 0; k < part.pixels; ++k)
        sum += image[i * part.pixels + k] * w[k * kClasses + c];
      logits[i * kClasses + c] = sum;
    }
  shardrt_all_reduce_f32(kModel, logits, logits, part.rows * kClasses, SHARDRT_SUM);
  for (int64_t i = 0; i < part.rows; ++i) {
    float *z = logits + i * kClasses;
    for (int64_t c = 0; c < kClasses; ++c)
      z[c] += b[c];
    const int64_t best = std::max_element(z, z + kClasses) - z;
    float total = 0;
    for (int64_t c = 0; c < kClasses; ++c)
      total += std::exp(z[c] - z[best]);
    loss[i] = z[best] + std::log(total) - z[label[i]];
    correct[i] = best == label[i] ? 1.0f : 0.0f;
    if (dlogits)
      for (int64_t c = 0; c < kClasses; ++c)
        dlogits[i * kClasses + c] =
            (std::exp(z[c] - z[best]) / total - (c == label[i] ? 1.0f : 0.0f)) /
            float(gLinear.batch);
  }
}

/// The batch's mean loss, accuracy and label checksum, and the gradients of the mean
/// loss: sums over this rank's rows, completed over data.
void linearGradients(const float *w, const float *b, const float *image, const int32_t *label,
                     float stats[3], float *dw, float *db) {
  LinearPart part;
  std::vector<float> logits(part.rows * kClasses), loss(part.rows), correct(part.rows),
      dlogits(part.rows * kClasses);
  linearExamples(w, b, image, label, logits.data(), loss.data(), correct.data(), dlogits.data());
  stats[0] = stats[1] = stats[2] = 0;
  for (int64_t i = 0; i < part.rows; ++i) {
    stats[0] += loss[i] / float(gLinear.batch);
    stats[1] += correct[i] / float(gLinear.batch);
    stats[2] += float((part.firstRow + i + 1) * label[i]);
  }
  shardrt_all_reduce_f32(kData, stats, stats, 3, SHARDRT_SUM);
  for (int64_t k = 0; k < part.pixels; ++k)
    for (int64_t c = 0; c < kClasses; ++c) {
      float sum = 0;
      for (int64_t i = 0; i < part.rows; ++i)
        sum += image[i * part.pixels + k] * dlogits[i * kClasses + c];
      dw[k * kClasses + c] = sum;
    }
  for (int64_t c = 0; c < kClasses; ++c) {
    db[c] = 0;
    for (int64_t i = 0; i < part.rows; ++i)
      db[c] += dlogits[i * kClasses + c];
  }
  shardrt_all_reduce_f32(kData, dw, dw, part.pixels * kClasses, SHARDRT_SUM);
  shardrt_all_reduce_f32(kData, db, db, kClasses, SHARDRT_SUM);
}

/// trace = momentum * trace + g; w -= lr * trace, in place.
void momentumUpdate(float *w, float *trace, const float *g, int64_t count) {
  for (int64_t i = 0; i < count; ++i) {
    trace[i] = kMomentum * trace[i] + g[i];
    w[i] -= gLinear.lr * trace[i];
  }
}

#define F(i) static_cast<float *>(buffers[i])
#define I(i) static_cast<const int32_t *>(buffers[i])

/// W, b, trace W, trace b (updated in place), image, label, step, then loss, accuracy,
/// count, batch_checksum.
void linearTrain(void **buffers) {
  LinearPart part;
  std::vector<float> dw(part.pixels * kClasses), db(kClasses);
  float stats[3];
  linearGradients(F(0), F(1), F(4), I(5), stats, dw.data(), db.data());
  momentumUpdate(F(0), F(2), dw.data(), part.pixels * kClasses);
  momentumUpdate(F(1), F(3), db.data(), kClasses);
  *F(7) = stats[0];
  *F(8) = stats[1];
  *F(9) = *F(6);
  *F(10) = stats[2];
}

/// W, b, image, label, then loss [rows], accuracy [rows], logits [rows, 10].
void linearEval(void **buffers) {
  linearExamples(F(0), F(1), F(2), I(3), F(6), F(4), F(5), nullptr);
}

/// W, b, image, label, then loss, dW, db.
void linearGrad(void **buffers) {
  float stats[3];
  linearGradients(F(0), F(1), F(2), I(3), stats, F(5), F(6));
  *F(4) = stats[0];
  for (int64_t c = 0; gLinear.badGrad && c < kClasses; ++c)
    F(6)[c] *= 2;
}

// ---- synthetic: no dataset -------------------------------------------------------------

constexpr int64_t kSyntheticRows = 8, kSyntheticCols = 4;
constexpr float kSyntheticLr = 0.1f;

const char *const kSyntheticManifest = R"({
  "model": "SyntheticTest",
  "mesh": {"axes": ["data"], "sizes": [SIZES]},
  "params": [
    {"name": "w", "dtype": "f32", "shape": [4], "split": [[]],
     "init": {"name": "normal", "args": {"stddev": 1.0}}}
  ],
  "optimizer": {"name": "sgd", "args": {"lr": 0.1}, "state": []},
  "inputs": [
    {"name": "x", "dtype": "f32", "shape": [8, 4], "split": [[0], []], "fill": {"kind": "normal"}}
  ],
  "train": {"results": [{"name": "loss", "dtype": "f32", "shape": [], "split": []}]},
  "eval": {"results": [{"name": "loss", "dtype": "f32", "shape": [], "split": []}]}
})";

/// mean over the rows of (x_i . w)^2 and its gradient 2/8 sum_i (x_i . w) x_i, summed
/// over data.
void syntheticLoss(const float *w, const float *x, float *loss, float *dw) {
  const int64_t rows = kSyntheticRows / shardrt_mesh_axis_size(0);
  float sums[1 + kSyntheticCols] = {0};
  for (int64_t i = 0; i < rows; ++i) {
    float dot = 0;
    for (int64_t k = 0; k < kSyntheticCols; ++k)
      dot += x[i * kSyntheticCols + k] * w[k];
    sums[0] += dot * dot / kSyntheticRows;
    for (int64_t k = 0; k < kSyntheticCols; ++k)
      sums[1 + k] += 2 * dot * x[i * kSyntheticCols + k] / kSyntheticRows;
  }
  shardrt_all_reduce_f32(kData, sums, sums, 1 + kSyntheticCols, SHARDRT_SUM);
  *loss = sums[0];
  if (dw)
    std::copy(sums + 1, sums + 1 + kSyntheticCols, dw);
}

/// w (updated in place), x, step, then loss.
void syntheticTrain(void **buffers) {
  float dw[kSyntheticCols];
  syntheticLoss(F(0), F(1), F(3), dw);
  for (int64_t k = 0; k < kSyntheticCols; ++k)
    F(0)[k] -= kSyntheticLr * dw[k];
}

/// w, x, then loss.
void syntheticEval(void **buffers) { syntheticLoss(F(0), F(1), F(2), nullptr); }

/// w, x, then loss, dw.
void syntheticGrad(void **buffers) { syntheticLoss(F(0), F(1), F(2), F(3)); }

#undef F
#undef I

void doNothing(void **) {}

// ---- cases -------------------------------------------------------------------------

std::string replaceAll(std::string text, const std::string &from, const std::string &to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
  return text;
}

/// stack:M, or stacked:M: the stacks as a pipeline holds them, `stacked` (blocks.U's
/// xavier_normal then takes one layer's fans), each split over `model` by layer.
std::string stackManifest(long long model, bool stacked) {
  std::string manifest = replaceAll(kStackManifest, "SIZES", std::to_string(model));
  manifest = replaceAll(manifest, "W_SPLIT", stacked ? "[[MODEL], [], []]" : "[[], [MODEL], []]");
  manifest = replaceAll(manifest, "U_SPLIT", stacked ? "[[MODEL], [], []]" : "[[], [], [MODEL]]");
  manifest = replaceAll(manifest, "STACKED", stacked ? " \"stacked\": true," : "");
  manifest = replaceAll(manifest, "U_INIT",
                        stacked ? R"({"name": "xavier_normal"})"
                                : R"({"name": "normal", "args": {"stddev": 0.408248290463863}})");
  return replaceAll(manifest, "MODEL", "0");
}

int usage(const char *program) {
  std::fprintf(stderr,
               "usage: %s matmul:DxM|matmul-ref|stack:M|stacked:M|layers:M|linear:DxM:B:LR|"
               "badgrad:DxM:B:LR|synthetic:D|file:PATH|file+train:PATH [driver flags...]\n",
               program);
  return 2;
}

/// linear:DxM:B:LR or badgrad:DxM:B:LR.
bool parseLinear(const std::string &testCase, std::string &manifest) {
  long long data = 0, model = 0, batch = 0;
  char lr[32] = "";
  int end = 0;
  const char *text = testCase.c_str();
  gLinear.badGrad = testCase.rfind("badgrad:", 0) == 0;
  if (!gLinear.badGrad && testCase.rfind("linear:", 0) != 0)
    return false;
  if (std::sscanf(std::strchr(text, ':') + 1, "%lldx%lld:%lld:%31[0-9.e-]%n", &data, &model, &batch,
                  lr, &end) != 4 ||
      std::strchr(text, ':')[1 + end] != '\0')
    return false;
  gLinear.batch = batch;
  gLinear.lr = std::strtof(lr, nullptr);
  manifest =
      replaceAll(kLinearManifest, "SIZES", std::to_string(data) + ", " + std::to_string(model));
  manifest = replaceAll(replaceAll(manifest, "DATA", "0"), "MODEL", "1");
  manifest = replaceAll(replaceAll(manifest, "BATCH", std::to_string(batch)), "LR", lr);
  return true;
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 2)
    return usage(argv[0]);
  const std::string testCase = argv[1];
  std::string manifest;
  shardrt_entry_fn train = nullptr, eval = nullptr, grad = doNothing;
  long long data = 0, model = 0;
  if (std::sscanf(testCase.c_str(), "matmul:%lldx%lld", &data, &model) == 2) {
    manifest =
        replaceAll(kMatmulManifest, "SIZES", std::to_string(data) + ", " + std::to_string(model));
    manifest = replaceAll(replaceAll(manifest, "DATA", "0"), "MODEL", "1");
    eval = matmulSharded;
  } else if (testCase == "matmul-ref") {
    manifest = replaceAll(kMatmulManifest, "SIZES", "1, 1");
    manifest = replaceAll(replaceAll(manifest, "DATA", ""), "MODEL", "");
    eval = matmulReference;
  } else if (std::sscanf(testCase.c_str(), "stack:%lld", &model) == 1 ||
             std::sscanf(testCase.c_str(), "stacked:%lld", &model) == 1) {
    manifest = stackManifest(model, testCase[5] == 'e');
    eval = stackEntry;
  } else if (std::sscanf(testCase.c_str(), "layers:%lld", &model) == 1) {
    std::string params, inputs;
    for (int layer = 0; layer < kLayers; ++layer) {
      params += (layer ? "," : "") + replaceAll(kLayerParams, "LAYER", std::to_string(layer));
      inputs += (layer ? "," : "") + replaceAll(kLayerInputs, "LAYER", std::to_string(layer));
    }
    manifest = replaceAll(kLayersManifest, "LAYER_PARAMS", params);
    manifest = replaceAll(manifest, "LAYER_INPUTS", inputs);
    manifest = replaceAll(replaceAll(manifest, "SIZES", std::to_string(model)), "MODEL", "0");
    eval = layersEntry;
  } else if (parseLinear(testCase, manifest)) {
    train = linearTrain;
    eval = linearEval;
    grad = linearGrad;
  } else if (std::sscanf(testCase.c_str(), "synthetic:%lld", &data) == 1) {
    manifest = replaceAll(kSyntheticManifest, "SIZES", std::to_string(data));
    train = syntheticTrain;
    eval = syntheticEval;
    grad = syntheticGrad;
  } else if (testCase.rfind("file:", 0) == 0 || testCase.rfind("file+train:", 0) == 0) {
    std::ifstream file(testCase.substr(testCase.find(':') + 1));
    std::stringstream text;
    text << file.rdbuf();
    if (!file)
      return usage(argv[0]);
    manifest = text.str();
    train = testCase[4] == '+' ? doNothing : nullptr;
    eval = doNothing;
  } else {
    return usage(argv[0]);
  }
  // The driver sees the program name and the flags after CASE.
  argv[1] = argv[0];
  return shardrt_main(argc - 1, argv + 1, manifest.c_str(), train, eval, grad, nullptr, nullptr);
}
