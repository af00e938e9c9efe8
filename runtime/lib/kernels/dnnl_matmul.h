// Matrix products on oneDNN's matmul: the matmul kernels' wide f32 products
// (kernels.cpp), and in bfloat16 every sgemm of the dense kernels when the run asks
// for it (`--matmul-precision bf16`), as JAX's
// jax_default_matmul_precision='bfloat16' and PyTorch's bf16 autocast of matmuls do:
// each operand's elements rounded to bfloat16 (to nearest, ties to even), the products
// accumulated in f32 into an f32 output, by oneDNN's matmul. Tensors stay f32 in
// memory; only the products lose precision.
#ifndef SHARDRT_LIB_DNNL_MATMUL_H
#define SHARDRT_LIB_DNNL_MATMUL_H

#include <cstdint>

namespace shardrt {

/// Whether sgemm computes in bfloat16 from now on. oneDNN takes its threads from
/// OpenMP: a compiled program runs it on one (restartWithOneBlasThread, host.h).
void setMatmulInBf16(bool enabled);
bool matmulInBf16();

/// How bf16 products run: on oneDNN's bfloat16 kernels, or emulated on the f32 path
/// (the operands rounded to bfloat16, then an f32 product) where the CPU has none.
enum class Bf16Products { OneDnn, Emulated };

/// "onednn" or "emulated" once a bf16 product has run in this process, else null:
/// what the run's summary names.
const char *bf16ProductsUsed();

/// sizes[0] x sizes[1] products of the same shape at once: the (i, j)-th reads
/// a + i * a[0] + j * a[1] and b + ..., and writes c + ... (strides in elements).
struct Batch {
  int64_t sizes[2] = {1, 1};
  int64_t a[2] = {0, 0}, b[2] = {0, 0}, c[2] = {0, 0};

  bool single() const { return sizes[0] == 1 && sizes[1] == 1; }
};

/// c[m, n] = op(a) op(b) (+ c when accumulating) as kernels.cpp's sgemm, in bfloat16,
/// for each product of `batch`: a is [m, k] ([k, m] if transA) with leading dimension
/// lda, b [k, n] ([n, k] if transB) with ldb, c [m, n] with ldc; m, n, k > 0. One
/// oneDNN primitive (and one conversion of each operand) for the whole batch, or the
/// emulation's f32 primitive.
void bf16Gemm(bool accumulate, bool transA, bool transB, int64_t m, int64_t n, int64_t k,
              const float *a, int64_t lda, const float *b, int64_t ldb, float *c, int64_t ldc,
              const Batch &batch = {});

/// The same with operands already in bfloat16, read in place (the bf16 kernels').
void bf16OperandsGemm(bool accumulate, bool transA, bool transB, int64_t m, int64_t n, int64_t k,
                      const uint16_t *a, int64_t lda, const uint16_t *b, int64_t ldb, float *c,
                      int64_t ldc, const Batch &batch = {});

/// The same in f32 on oneDNN's matmul, read in place: one primitive for the batch.
void dnnlGemm(bool accumulate, bool transA, bool transB, int64_t m, int64_t n, int64_t k,
              const float *a, int64_t lda, const float *b, int64_t ldb, float *c, int64_t ldc,
              const Batch &batch = {});

} // namespace shardrt

#endif // SHARDRT_LIB_DNNL_MATMUL_H
