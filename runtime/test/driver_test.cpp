// shardrt-test-driver CASE [flags...]: small programs as shardc would compile them, run
// by the runtime's driver (shardrt_main) with a hand-written manifest and entry.
//
//   matmul:DxM   on mesh (data = D, model = M): y = x @ W + b with x split on data (batch)
//                and model (contraction), W split on model (contraction), so each rank's
//                product is partial and all_reduce over model completes it; then
//                z = relu(y) @ V + c, times gain, with V, c, gain, z split on model
//                (columns); loss = mean(z^2) by all_reduce over both axes; the i32 labels
//                returned as they are and counted into a histogram (all_reduce_i32 over
//                data).
//   matmul-ref   the same program unsplit, plain loops and no collectives: the oracle the
//                sharded runs are compared with (test/EndToEnd/Inputs/compare_outputs.py).
//   stack:M      the stacked parameters blocks.W, blocks.U of shape [3, 4, 8], on mesh
//                (model = M), returned as results.
//   layers:M     the same stacks given as three one-layer parameters each (`layer` 0..2),
//                copied into results of the stacked shape: the numbers must be blocks.W's
//                bitwise, and blocks.U's (xavier_normal with one layer's fans) must be
//                stack's normal(stddev = sqrt(2 / (4 + 8))).
//   file:PATH    the manifest in PATH with an entry that does nothing (for manifest
//                errors).
// The flags after CASE go to the driver (--help lists them).
#include "shardrt/driver.h"
#include "shardrt/shardrt.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

namespace {

// ---- matmul ----------------------------------------------------------------------

constexpr int64_t kBatch = 16, kIn = 64, kHidden = 32, kOut = 16, kClasses = 10;
constexpr uint32_t kData = 1u << 0, kModel = 1u << 1;

// DATA and MODEL stand for the mesh axes a dimension is split over: 0 and 1 in the
// sharded manifest, nothing in the reference. SIZES is the mesh. (The same tokens in
// the stack manifests below.)
const char *const kMatmulManifest = R"({
  "model": "MatmulTest",
  "mode": "forward",
  "mesh": {"axes": ["data", "model"], "sizes": [SIZES]},
  "args": [
    {"role": "param", "name": "W", "dtype": "f32", "global_shape": [64, 32], "shape": [64, 32],
     "split": [[MODEL], []], "init": {"name": "xavier_normal", "args": {}}},
    {"role": "param", "name": "b", "dtype": "f32", "global_shape": [32], "shape": [32],
     "split": [[]], "init": {"name": "normal", "args": {"stddev": 0.5}}},
    {"role": "param", "name": "V", "dtype": "f32", "global_shape": [32, 16], "shape": [32, 16],
     "split": [[], [MODEL]], "init": {"name": "he_normal", "args": {}}},
    {"role": "param", "name": "c", "dtype": "f32", "global_shape": [16], "shape": [16],
     "split": [[MODEL]], "init": {"name": "uniform", "args": {"scale": 0.1}}},
    {"role": "param", "name": "gain", "dtype": "f32", "global_shape": [16], "shape": [16],
     "split": [[MODEL]], "init": {"name": "constant", "args": {"value": 1.5}}},
    {"role": "input", "name": "x", "dtype": "f32", "shape": [16, 64], "split": [[DATA], [MODEL]],
     "fill": {"kind": "normal"}},
    {"role": "input", "name": "label", "dtype": "i32", "shape": [16], "split": [[DATA]],
     "fill": {"kind": "integers", "high": 10}}
  ],
  "results": [
    {"name": "loss", "dtype": "f32", "shape": [], "split": []},
    {"name": "y", "dtype": "f32", "shape": [16, 32], "split": [[DATA], []]},
    {"name": "z", "dtype": "f32", "shape": [16, 16], "split": [[DATA], [MODEL]]},
    {"name": "labels", "dtype": "i32", "shape": [16], "split": [[DATA]]},
    {"name": "histogram", "dtype": "i32", "shape": [10], "split": [[]]}
  ]
})";

/// The buffers of the matmul programs, in manifest order: arguments, then results.
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
  "mode": "forward",
  "mesh": {"axes": ["model"], "sizes": [SIZES]},
  "args": [
    {"role": "param", "name": "blocks.W", "dtype": "f32", "global_shape": [3, 4, 8],
     "shape": [3, 4, 8], "split": [[], [MODEL], []],
     "init": {"name": "normal", "args": {"stddev": 0.5}}},
    {"role": "param", "name": "blocks.U", "dtype": "f32", "global_shape": [3, 4, 8],
     "shape": [3, 4, 8], "split": [[], [], [MODEL]],
     "init": {"name": "normal", "args": {"stddev": 0.408248290463863}}}
  ],
  "results": [
    {"name": "W", "dtype": "f32", "shape": [3, 4, 8], "split": [[], [MODEL], []]},
    {"name": "U", "dtype": "f32", "shape": [3, 4, 8], "split": [[], [], [MODEL]]}
  ]
})";

// LAYER_PARAMS is replaced by three copies of this, for layers 0, 1, 2.
const char *const kLayerParams = R"(
    {"role": "param", "name": "blocks.W", "dtype": "f32", "global_shape": [3, 4, 8], "layer": LAYER,
     "shape": [4, 8], "split": [[MODEL], []], "init": {"name": "normal", "args": {"stddev": 0.5}}},
    {"role": "param", "name": "blocks.U", "dtype": "f32", "global_shape": [3, 4, 8], "layer": LAYER,
     "shape": [4, 8], "split": [[], [MODEL]], "init": {"name": "xavier_normal"}})";

const char *const kLayersManifest = R"({
  "model": "StackTest",
  "mode": "forward",
  "mesh": {"axes": ["model"], "sizes": [SIZES]},
  "args": [LAYER_PARAMS
  ],
  "results": [
    {"name": "W", "dtype": "f32", "shape": [3, 4, 8], "split": [[], [MODEL], []]},
    {"name": "U", "dtype": "f32", "shape": [3, 4, 8], "split": [[], [], [MODEL]]}
  ]
})";

void stackEntry(void **buffers) {
  const int64_t count = kLayers * kRows * kCols / shardrt_mesh_axis_size(0);
  std::memcpy(buffers[2], buffers[0], count * sizeof(float));
  std::memcpy(buffers[3], buffers[1], count * sizeof(float));
}

/// Buffers: W0, U0, W1, U1, W2, U2, then the results W, U: each layer is one slice of
/// dimension 0 of its result.
void layersEntry(void **buffers) {
  const int64_t perLayer = kRows * kCols / shardrt_mesh_axis_size(0);
  for (int64_t layer = 0; layer < kLayers; ++layer)
    for (int which = 0; which < 2; ++which)
      std::memcpy(static_cast<float *>(buffers[2 * kLayers + which]) + layer * perLayer,
                  buffers[2 * layer + which], perLayer * sizeof(float));
}

void doNothing(void **) {}

// ---- cases -------------------------------------------------------------------------

std::string replaceAll(std::string text, const std::string &from, const std::string &to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
  return text;
}

int usage(const char *program) {
  std::fprintf(stderr,
               "usage: %s matmul:DxM|matmul-ref|stack:M|layers:M|file:PATH [driver flags...]\n",
               program);
  return 2;
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 2)
    return usage(argv[0]);
  const std::string testCase = argv[1];
  std::string manifest;
  shardrt_entry_fn entry = nullptr;
  long long data = 0, model = 0;
  if (std::sscanf(testCase.c_str(), "matmul:%lldx%lld", &data, &model) == 2) {
    manifest =
        replaceAll(kMatmulManifest, "SIZES", std::to_string(data) + ", " + std::to_string(model));
    manifest = replaceAll(replaceAll(manifest, "DATA", "0"), "MODEL", "1");
    entry = matmulSharded;
  } else if (testCase == "matmul-ref") {
    manifest = replaceAll(kMatmulManifest, "SIZES", "1, 1");
    manifest = replaceAll(replaceAll(manifest, "DATA", ""), "MODEL", "");
    entry = matmulReference;
  } else if (std::sscanf(testCase.c_str(), "stack:%lld", &model) == 1) {
    manifest = replaceAll(kStackManifest, "SIZES", std::to_string(model));
    manifest = replaceAll(manifest, "MODEL", "0");
    entry = stackEntry;
  } else if (std::sscanf(testCase.c_str(), "layers:%lld", &model) == 1) {
    std::string params;
    for (int layer = 0; layer < kLayers; ++layer)
      params += (layer ? "," : "") + replaceAll(kLayerParams, "LAYER", std::to_string(layer));
    manifest = replaceAll(kLayersManifest, "LAYER_PARAMS", params);
    manifest = replaceAll(replaceAll(manifest, "SIZES", std::to_string(model)), "MODEL", "0");
    entry = layersEntry;
  } else if (testCase.rfind("file:", 0) == 0) {
    std::ifstream file(testCase.substr(5));
    std::stringstream text;
    text << file.rdbuf();
    if (!file)
      return usage(argv[0]);
    manifest = text.str();
    entry = doNothing;
  } else {
    return usage(argv[0]);
  }
  // The driver sees the program name and the flags after CASE.
  argv[1] = argv[0];
  return shardrt_main(argc - 1, argv + 1, manifest.c_str(), entry);
}
