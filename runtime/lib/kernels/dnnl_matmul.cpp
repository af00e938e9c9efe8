// Matrix products on oneDNN's matmul (dnnl_matmul.h). In f32 it reads the operands in
// place. In bfloat16 they are copied into two buffers of their own (not the scratch
// buffer, which a convolution's im2col matrix occupies while it calls sgemm), each
// keeping its orientation: oneDNN reads a transposed operand through its strides. A
// batch of products (attention's, over batch and heads) is one 4-d primitive of each
// kind. A primitive (a conversion, a product) is made once per shape.
//
// bf16 products run on oneDNN's bf16 kernels where the CPU has them (AVX512-BF16 or
// AMX). Elsewhere (AVX2: oneDNN 2.6 has no bf16 matmul there) they are emulated: the
// operands rounded to bfloat16 but kept as f32, then an f32 product. A bf16 x bf16
// product is exact in f32, so the two differ only in the order of the summation.
#include "dnnl_matmul.h"
#include "dnnl_context.h"
#include "memory/scratch.h"

#include "shardrt/shardrt.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <tuple>
#include <utility>

namespace shardrt {
namespace {

bool inBf16 = false;

using memory_type = dnnl::memory::data_type;

/// The primitives made and the operands' bf16 buffers; made after the engine they use,
/// so destroyed before it.
struct Dnnl {
  DnnlContext &context = dnnlContext();
  // The operands' type, m, n, k, transA, transB, accumulate, the batch's sizes, then
  // the leading dimension and the batch's strides of a, b (as the product reads them)
  // and c.
  using Product = std::array<int64_t, 18>;
  std::map<Product, dnnl::matmul> products;
  // rows, cols, ld, the batch's sizes and the operand's strides.
  using Conversion = std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t>;
  std::map<Conversion, dnnl::reorder> conversions;
  ScratchBuffer a, b;
};

Dnnl &dnnlState() {
  static Dnnl state;
  return state;
}

/// [rows, cols] matrices of `type` with strides `inner` (the row's, the column's),
/// one per product of `batch`, `outer` apart; a plain matrix when the batch is single.
dnnl::memory::desc matrices(const Batch &batch, const int64_t outer[2], int64_t rows, int64_t cols,
                            dnnl::memory::dims inner, dnnl::memory::data_type type) {
  if (batch.single())
    return dnnl::memory::desc({rows, cols}, type, inner);
  // A batch dimension of size 1 is never stepped, so its stride (0 from the compiler)
  // is free: oneDNN picks its kernels by the order of the strides and takes a 0 for the
  // innermost dimension (its reference matmul, 300x slower: a MoE's [1, experts]
  // products), so it gets the stride that nests it outside the others.
  int64_t span = std::max(rows * inner[0], cols * inner[1]);
  int64_t second = batch.sizes[1] == 1 ? span : outer[1];
  int64_t first = batch.sizes[0] == 1 ? batch.sizes[1] * second : outer[0];
  return dnnl::memory::desc({batch.sizes[0], batch.sizes[1], rows, cols}, type,
                            {first, second, inner[0], inner[1]});
}

/// The strides of dense [rows, cols] matrices side by side, one per product.
void denseStrides(const Batch &batch, int64_t rows, int64_t cols, int64_t out[2]) {
  out[1] = rows * cols;
  out[0] = batch.sizes[1] * out[1];
}

/// Whether the [rows, cols] matrices of `batch` (rows `ld` apart, products `strides`
/// apart) are exactly the first rows * cols * products elements: a dense tensor with
/// its dimensions in some order (attention's [batch, seq, heads, head_dim] read per
/// batch and head). Such an operand converts as one flat run and keeps its strides.
bool fillsItsSpan(const Batch &batch, const int64_t strides[2], int64_t rows, int64_t cols,
                  int64_t ld) {
  std::array<std::pair<int64_t, int64_t>, 4> dims = {
      // (stride, size)
      {{1, cols}, {ld, rows}, {strides[1], batch.sizes[1]}, {strides[0], batch.sizes[0]}}};
  std::sort(dims.begin(), dims.end());
  int64_t dense = 1;
  for (auto [stride, size] : dims) {
    if (size == 1)
      continue;
    if (stride != dense)
      return false;
    dense *= size;
  }
  return true;
}

/// `rows` rows of `cols` floats, `ld` apart, of each product of the batch (`strides`
/// apart) into `out` densely as bfloat16 (to nearest, ties to even): a oneDNN reorder,
/// which converts with the CPU's own instruction where it has one, as a scalar loop is
/// too slow for every product of a step (bench/gpt times W4's bf16 steps).
void convert(Dnnl &state, const Batch &batch, const int64_t strides[2], const float *in,
             int64_t rows, int64_t cols, int64_t ld, void *out) {
  using dnnl::memory;
  int64_t dense[2];
  denseStrides(batch, rows, cols, dense);
  memory::desc from = matrices(batch, strides, rows, cols, {ld, 1}, memory::data_type::f32);
  memory::desc to = matrices(batch, dense, rows, cols, {cols, 1}, memory::data_type::bf16);
  const Dnnl::Conversion shape{rows,           cols,       ld,        batch.sizes[0],
                               batch.sizes[1], strides[0], strides[1]};
  auto found = state.conversions.find(shape);
  if (found == state.conversions.end())
    found = state.conversions
                .emplace(shape, dnnl::reorder(dnnl::reorder::primitive_desc(
                                    state.context.engine, from, state.context.engine, to)))
                .first;
  memory fromMem(from, state.context.engine, const_cast<float *>(in)),
      toMem(to, state.context.engine, out);
  found->second.execute(state.context.stream, fromMem, toMem);
}

/// One oneDNN matmul of `precision` (its operands' type; f32 accumulation into an f32
/// c) for the whole batch, made once per shape and layout.
void product(memory_type precision, bool accumulate, bool transA, bool transB, int64_t m, int64_t n,
             int64_t k, const void *a, int64_t lda, const int64_t aOuter[2], const void *b,
             int64_t ldb, const int64_t bOuter[2], float *c, int64_t ldc, const Batch &batch) {
  using dnnl::memory;
  Dnnl &state = dnnlState();
  // A row's and a column's strides of an operand stored with leading dimension `ld`.
  auto inner = [](bool transposed, int64_t ld) {
    return transposed ? memory::dims{1, ld} : memory::dims{ld, 1};
  };
  memory::desc aDesc = matrices(batch, aOuter, m, k, inner(transA, lda), precision);
  memory::desc bDesc = matrices(batch, bOuter, k, n, inner(transB, ldb), precision);
  memory::desc cDesc = matrices(batch, batch.c, m, n, {ldc, 1}, memory::data_type::f32);
  const Dnnl::Product shape{int64_t(precision),
                            m,
                            n,
                            k,
                            transA,
                            transB,
                            accumulate,
                            batch.sizes[0],
                            batch.sizes[1],
                            lda,
                            aOuter[0],
                            aOuter[1],
                            ldb,
                            bOuter[0],
                            bOuter[1],
                            ldc,
                            batch.c[0],
                            batch.c[1]};
  auto found = state.products.find(shape);
  const dnnl::engine &engine = state.context.engine;
  if (found == state.products.end()) {
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(aDesc, bDesc, cDesc),
                                    addingToOutput(accumulate), engine);
    found = state.products.emplace(shape, dnnl::matmul(pd)).first;
  }
  memory aMem(aDesc, engine, const_cast<void *>(a)), bMem(bDesc, engine, const_cast<void *>(b)),
      cMem(cDesc, engine, c);
  found->second.execute(state.context.stream,
                        {{DNNL_ARG_SRC, aMem}, {DNNL_ARG_WEIGHTS, bMem}, {DNNL_ARG_DST, cMem}});
  state.context.stream.wait();
}

/// Where an operand's copy lies: its leading dimension and the batch's strides in it.
struct OperandCopy {
  int64_t ld;
  int64_t strides[2];
};

/// An operand of `batch` (rows x cols matrices, rows `ld` apart, products `strides`
/// apart) copied by `copy(batch, strides, rows, cols, ld)`, which writes the matrices
/// densely: as one flat run where the operand fills its span (it then keeps its
/// layout), matrix by matrix otherwise.
template <typename Copy>
OperandCopy copyOperand(const Batch &batch, const int64_t strides[2], int64_t rows, int64_t cols,
                        int64_t ld, Copy copy) {
  if (fillsItsSpan(batch, strides, rows, cols, ld)) {
    const int64_t none[2] = {0, 0}, count = batch.sizes[0] * batch.sizes[1] * rows * cols;
    copy(Batch{}, none, 1, count, count);
    return {ld, {strides[0], strides[1]}};
  }
  copy(batch, strides, rows, cols, ld);
  OperandCopy dense{cols, {0, 0}};
  denseStrides(batch, rows, cols, dense.strides);
  return dense;
}

/// `x` rounded to bfloat16 (to nearest, ties to even, as oneDNN's conversion), kept
/// in f32. A NaN stays a NaN.
inline float roundedToBf16(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  if ((bits & 0x7fffffffu) > 0x7f800000u)
    bits |= 0x00400000u;
  else
    bits += 0x7fffu + ((bits >> 16) & 1u);
  bits &= 0xffff0000u;
  std::memcpy(&x, &bits, sizeof x);
  return x;
}

/// A bfloat16 widened to f32 (exactly).
inline float widened(uint16_t half) {
  const uint32_t bits = uint32_t(half) << 16;
  float x;
  std::memcpy(&x, &bits, sizeof x);
  return x;
}

/// The emulation's copy (copyOperand's `copy`): each element of `in` through
/// `element`, densely into the f32 matrices at `out`.
template <typename In, typename Element> auto copyingTo(float *out, const In *in, Element element) {
  return [=](const Batch &batch, const int64_t strides[2], int64_t rows, int64_t cols, int64_t ld) {
    float *to = out;
    for (int64_t i = 0; i < batch.sizes[0]; ++i)
      for (int64_t j = 0; j < batch.sizes[1]; ++j)
        for (int64_t row = 0; row < rows; ++row) {
          const In *from = in + i * strides[0] + j * strides[1] + row * ld;
          for (int64_t col = 0; col < cols; ++col)
            to[col] = element(from[col]);
          to += cols;
        }
  };
}

/// The products of `batch` on copies of both operands, each made by the copy
/// `copier(operand, buffer)` returns (copyOperand's `copy`) into a buffer of its own at
/// `bytes` per element, then oneDNN's matmul of `type` on the copies.
template <typename In, typename Copier>
void productOfCopies(memory_type type, size_t bytes, bool accumulate, bool transA, bool transB,
                     int64_t m, int64_t n, int64_t k, const In *a, int64_t lda, const In *b,
                     int64_t ldb, float *c, int64_t ldc, const Batch &batch, Copier copier) {
  Dnnl &state = dnnlState();
  // Stored as they are: a is [m, k] or [k, m], b [k, n] or [n, k].
  const int64_t aRows = transA ? k : m, aCols = transA ? m : k;
  const int64_t bRows = transB ? n : k, bCols = transB ? k : n;
  const size_t products = size_t(batch.sizes[0] * batch.sizes[1]);
  std::byte *aCopy = state.a.tryReserve(products * size_t(aRows * aCols) * bytes);
  std::byte *bCopy = state.b.tryReserve(products * size_t(bRows * bCols) * bytes);
  if (!aCopy || !bCopy)
    fatal("out of memory: %lld bfloat16 matrix products of %lld x %lld x %lld have no room "
          "for their operands",
          (long long)products, (long long)m, (long long)n, (long long)k);
  OperandCopy aLayout = copyOperand(batch, batch.a, aRows, aCols, lda, copier(a, aCopy));
  OperandCopy bLayout = copyOperand(batch, batch.b, bRows, bCols, ldb, copier(b, bCopy));
  product(type, accumulate, transA, transB, m, n, k, aCopy, aLayout.ld, aLayout.strides, bCopy,
          bLayout.ld, bLayout.strides, c, ldc, batch);
}

/// The products of bfloat16 operands (`In` f32 elements rounded by `element`, or
/// bfloat16 ones widened) emulated: the operands copied as f32, then an f32 product.
template <typename In, typename Element>
void emulatedProduct(bool accumulate, bool transA, bool transB, int64_t m, int64_t n, int64_t k,
                     const In *a, int64_t lda, const In *b, int64_t ldb, float *c, int64_t ldc,
                     const Batch &batch, Element element) {
  productOfCopies(memory_type::f32, sizeof(float), accumulate, transA, transB, m, n, k, a, lda, b,
                  ldb, c, ldc, batch, [&](const In *in, std::byte *out) {
                    return copyingTo(reinterpret_cast<float *>(out), in, element);
                  });
}

/// The product in bfloat16 on oneDNN's kernels: each operand converted into a buffer
/// of its own first.
void bf16Product(bool accumulate, bool transA, bool transB, int64_t m, int64_t n, int64_t k,
                 const float *a, int64_t lda, const float *b, int64_t ldb, float *c, int64_t ldc,
                 const Batch &batch) {
  Dnnl &state = dnnlState();
  productOfCopies(memory_type::bf16, 2, accumulate, transA, transB, m, n, k, a, lda, b, ldb, c, ldc,
                  batch, [&state](const float *in, std::byte *out) {
                    return [&state, in, out](const Batch &batch, const int64_t strides[2],
                                             int64_t rows, int64_t cols, int64_t ld) {
                      convert(state, batch, strides, in, rows, cols, ld, out);
                    };
                  });
}

/// Whether this CPU has bfloat16 kernels in oneDNN: AVX512-BF16 or AMX, in the ISA
/// oneDNN runs at (which ONEDNN_MAX_CPU_ISA may lower).
bool dnnlHasBf16Kernels() {
  const auto isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
  const auto bf16 = static_cast<unsigned>(dnnl::cpu_isa::avx512_core_bf16);
  return (isa & bf16) == bf16;
}

/// Whether a bf16 product has run in this process.
bool bf16ProductsRan = false;

/// How this process computes bf16 products, decided at its first one; emulation is
/// said once, by rank 0, as it costs the speed a user asked bf16 for.
Bf16Products bf16Products() {
  static const Bf16Products how = [] {
    if (dnnlHasBf16Kernels())
      return Bf16Products::OneDnn;
    int initialised = 0, rank = 0;
    MPI_Initialized(&initialised);
    if (initialised)
      MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    const char *limit = std::getenv("ONEDNN_MAX_CPU_ISA");
    if (rank == 0)
      std::fprintf(stderr,
                   "shardrt: warning: bf16 products emulated: this CPU has no AVX512-BF16 or "
                   "AMX%s%s%s; expect no speed-up\n",
                   limit ? " (ONEDNN_MAX_CPU_ISA=" : "", limit ? limit : "", limit ? ")" : "");
    return Bf16Products::Emulated;
  }();
  bf16ProductsRan = true;
  return how;
}

/// What a failure names: the batch of products and their shape.
std::string products(const char *precision, int64_t m, int64_t n, int64_t k, const Batch &batch) {
  return std::to_string(batch.sizes[0]) + " x " + std::to_string(batch.sizes[1]) + " " + precision +
         " matrix products of " + std::to_string(m) + " x " + std::to_string(n) + " x " +
         std::to_string(k);
}

} // namespace

void setMatmulInBf16(bool enabled) { inBf16 = enabled; }

bool matmulInBf16() { return inBf16; }

const char *bf16ProductsUsed() {
  if (!bf16ProductsRan)
    return nullptr;
  return bf16Products() == Bf16Products::OneDnn ? "onednn" : "emulated";
}

void bf16Gemm(bool accumulate, bool transA, bool transB, int64_t m, int64_t n, int64_t k,
              const float *a, int64_t lda, const float *b, int64_t ldb, float *c, int64_t ldc,
              const Batch &batch) {
  reportingFailures(
      [&] {
        if (bf16Products() == Bf16Products::Emulated)
          return emulatedProduct(accumulate, transA, transB, m, n, k, a, lda, b, ldb, c, ldc, batch,
                                 roundedToBf16);
        bf16Product(accumulate, transA, transB, m, n, k, a, lda, b, ldb, c, ldc, batch);
      },
      [&] { return products("bfloat16", m, n, k, batch); });
}

void bf16OperandsGemm(bool accumulate, bool transA, bool transB, int64_t m, int64_t n, int64_t k,
                      const uint16_t *a, int64_t lda, const uint16_t *b, int64_t ldb, float *c,
                      int64_t ldc, const Batch &batch) {
  reportingFailures(
      [&] {
        if (bf16Products() == Bf16Products::Emulated)
          return emulatedProduct(accumulate, transA, transB, m, n, k, a, lda, b, ldb, c, ldc, batch,
                                 widened);
        product(memory_type::bf16, accumulate, transA, transB, m, n, k, a, lda, batch.a, b, ldb,
                batch.b, c, ldc, batch);
      },
      [&] { return products("bfloat16", m, n, k, batch); });
}

void dnnlGemm(bool accumulate, bool transA, bool transB, int64_t m, int64_t n, int64_t k,
              const float *a, int64_t lda, const float *b, int64_t ldb, float *c, int64_t ldc,
              const Batch &batch) {
  reportingFailures(
      [&] {
        product(memory_type::f32, accumulate, transA, transB, m, n, k, a, lda, batch.a, b, ldb,
                batch.b, c, ldc, batch);
      },
      [&] { return products("f32", m, n, k, batch); });
}

} // namespace shardrt

extern "C" void shardrt_set_matmul_precision_bf16(int32_t enabled) {
  shardrt::setMatmulInBf16(enabled != 0);
}

extern "C" const char *shardrt_bf16_products(void) { return shardrt::bf16ProductsUsed(); }
