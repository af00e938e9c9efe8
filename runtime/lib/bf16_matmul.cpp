// bfloat16 matrix products on oneDNN (bf16_matmul.h). The operands are converted into
// two buffers of their own (not the scratch buffer, which a convolution's im2col
// matrix occupies while it calls sgemm), each keeping its orientation: oneDNN reads a
// transposed operand through its strides. A primitive (a conversion, a product) is
// made once per shape.
#include "bf16_matmul.h"
#include "mesh.h"
#include "scratch.h"

#include "shardrt/shardrt.h"

#include <oneapi/dnnl/dnnl.hpp>

#include <map>
#include <tuple>

namespace shardrt {
namespace {

bool inBf16 = false;

struct Dnnl {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  using Product = std::tuple<int64_t, int64_t, int64_t, bool, bool, int64_t, bool>;
  std::map<Product, dnnl::matmul> products;
  using Conversion = std::tuple<int64_t, int64_t, int64_t>;
  std::map<Conversion, dnnl::reorder> conversions;
  ScratchBuffer a, b;
};

Dnnl &dnnlState() {
  static Dnnl state;
  return state;
}

/// `rows` rows of `cols` floats, `ld` apart, into `out` densely as bfloat16 (to
/// nearest, ties to even): a oneDNN reorder, which converts with the CPU's own
/// instruction where it has one (44 GB/s of f32 read here; a scalar loop of ours took a
/// fifth of W4's step).
void convert(Dnnl &state, const float *in, int64_t rows, int64_t cols, int64_t ld, void *out) {
  using dnnl::memory;
  memory::desc from({rows, cols}, memory::data_type::f32, memory::dims{ld, 1});
  memory::desc to({rows, cols}, memory::data_type::bf16, memory::dims{cols, 1});
  const Dnnl::Conversion shape{rows, cols, ld};
  auto found = state.conversions.find(shape);
  if (found == state.conversions.end())
    found = state.conversions
                .emplace(shape, dnnl::reorder(dnnl::reorder::primitive_desc(
                                    state.engine, from, state.engine, to)))
                .first;
  memory fromMem(from, state.engine, const_cast<float *>(in)), toMem(to, state.engine, out);
  found->second.execute(state.stream, fromMem, toMem);
}

void product(bool accumulate, bool transA, bool transB, int64_t m, int64_t n, int64_t k,
             const float *a, int64_t lda, const float *b, int64_t ldb, float *c, int64_t ldc) {
  using dnnl::memory;
  Dnnl &state = dnnlState();
  // Stored as they are: a is [m, k] or [k, m], b [k, n] or [n, k].
  const int64_t aRows = transA ? k : m, aCols = transA ? m : k;
  const int64_t bRows = transB ? n : k, bCols = transB ? k : n;
  std::byte *a16 = state.a.tryReserve(size_t(aRows * aCols) * 2);
  std::byte *b16 = state.b.tryReserve(size_t(bRows * bCols) * 2);
  if (!a16 || !b16)
    fatal("out of memory: a bfloat16 matrix product of %lld x %lld x %lld has no room for "
          "its operands",
          (long long)m, (long long)n, (long long)k);
  convert(state, a, aRows, aCols, lda, a16);
  convert(state, b, bRows, bCols, ldb, b16);

  memory::desc aDesc({m, k}, memory::data_type::bf16,
                     transA ? memory::dims{1, m} : memory::dims{k, 1});
  memory::desc bDesc({k, n}, memory::data_type::bf16,
                     transB ? memory::dims{1, k} : memory::dims{n, 1});
  memory::desc cDesc({m, n}, memory::data_type::f32, memory::dims{ldc, 1});
  const Dnnl::Product shape{m, n, k, transA, transB, ldc, accumulate};
  auto found = state.products.find(shape);
  if (found == state.products.end()) {
    dnnl::primitive_attr attr;
    if (accumulate) {
      dnnl::post_ops sum;
      sum.append_sum(1.0f);
      attr.set_post_ops(sum);
    }
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(aDesc, bDesc, cDesc), attr, state.engine);
    found = state.products.emplace(shape, dnnl::matmul(pd)).first;
  }
  memory aMem(aDesc, state.engine, a16), bMem(bDesc, state.engine, b16),
      cMem(cDesc, state.engine, c);
  found->second.execute(state.stream,
                        {{DNNL_ARG_SRC, aMem}, {DNNL_ARG_WEIGHTS, bMem}, {DNNL_ARG_DST, cMem}});
  state.stream.wait();
}

} // namespace

void setMatmulInBf16(bool enabled) { inBf16 = enabled; }

bool matmulInBf16() { return inBf16; }

void bf16Gemm(bool accumulate, bool transA, bool transB, int64_t m, int64_t n, int64_t k,
              const float *a, int64_t lda, const float *b, int64_t ldb, float *c, int64_t ldc) {
  // oneDNN reports failures as exceptions, which must not cross the generated code
  // that called the kernel.
  try {
    product(accumulate, transA, transB, m, n, k, a, lda, b, ldb, c, ldc);
  } catch (const dnnl::error &error) {
    fatal("oneDNN failed on a bfloat16 matrix product of %lld x %lld x %lld: %s (status %d)",
          (long long)m, (long long)n, (long long)k, error.what(), int(error.status));
  }
}

} // namespace shardrt

extern "C" void shardrt_set_matmul_precision_bf16(int32_t enabled) {
  shardrt::setMatmulInBf16(enabled != 0);
}
