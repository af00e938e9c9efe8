/* shardrt.h - the C ABI of libshardrt, the runtime that shardc's generated SPMD code
 * calls.
 *
 * Every rank of an `mpirun` job runs the same program on its shard of the data. The
 * runtime knows the device mesh (named axes with sizes, one MPI rank per device), runs
 * collectives over subsets of the mesh axes, and fills parameter shards with random
 * numbers that do not depend on the layout.
 *
 * Conventions used throughout:
 *  - Ranks map to mesh coordinates row-major (the last axis varies fastest), as in
 *    MLIR's shard dialect: on a mesh (data = 2, model = 4), rank 6 is (data 1, model 2).
 *  - A subset of mesh axes is a bitmask, bit i standing for mesh axis i. The ranks that
 *    share their coordinates on the axes outside the subset form a *group*; a rank's
 *    *group index* is its row-major linear index over the subset's axes, taken in mesh
 *    order. Collectives run within groups, and the blocks they gather, scatter or
 *    exchange are ordered by group index. The empty subset (0) makes every rank a group
 *    of one; the full mask makes the whole mesh one group.
 *  - Tensors are dense, row-major, described by their number of dimensions `ndim` and
 *    their local (per-rank) shape.
 *  - Collectives are SPMD: every rank of the mesh makes the same sequence of calls.
 *    The first collective on a subset creates its communicator, which is a collective
 *    operation over the whole mesh.
 *  - Errors in the caller's arguments (a bad axis mask, a dimension that does not
 *    divide by the group size, ...) print `shardrt: error: ...` and abort the job.
 *
 * Everything is single-threaded; call from one thread per rank.
 */
#ifndef SHARDRT_SHARDRT_H
#define SHARDRT_SHARDRT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The library is built with hidden visibility; these declarations are its exports. */
#pragma GCC visibility push(default)

/* ---- Mesh setup -------------------------------------------------------------- */

/* Initialises MPI (unless the caller already did) and the mesh of `num_axes` axes
 * with the given sizes. `axis_names` (may be NULL) names the axes in messages.
 * If the number of ranks differs from the product of the axis sizes, rank 0 prints
 * `shardrt: error: the mesh (data = 2, model = 4) needs 8 ranks, but mpirun started 3`
 * and every rank finalizes MPI and exits with status 1. It also tunes the process: glibc
 * keeps the memory the program frees (mallopt; no first touch of fresh pages for each
 * step's temporaries) and OpenBLAS runs on one thread (see the kernels below). */
void shardrt_init(int *argc, char ***argv, int num_axes, const int64_t *axis_sizes,
                  const char *const *axis_names);

/* Frees the communicators and the scratch buffer; finalizes MPI if shardrt_init
 * initialised it. */
void shardrt_finalize(void);

int shardrt_rank(void);      /* this process's rank in the mesh (= MPI_COMM_WORLD rank) */
int shardrt_num_ranks(void); /* the number of ranks (= product of the axis sizes) */
int shardrt_mesh_num_axes(void);
int64_t shardrt_mesh_axis_size(int axis);
int64_t shardrt_mesh_coord(int axis); /* this rank's coordinate on `axis` */

/* The size of this rank's group over the subset `axes` (product of those axis sizes),
 * and this rank's index in it: the order of its block in gathers and scatters. */
int64_t shardrt_group_size(uint32_t axes);
int64_t shardrt_group_index(uint32_t axes);

/* The number of communicators created so far (one per non-empty axis subset used;
 * the empty subset needs none). For tests. */
int shardrt_debug_num_communicators(void);

/* ---- Collectives ------------------------------------------------------------- */
/* All take the axis subset first. `in` and `out` must not overlap except where said.
 * all_reduce is MPI's blocking MPI_Allreduce, timed by the runtime's watchdog thread
 * (bench/runtime: never slower than MPI's, since it is MPI's). From 32 MiB on,
 * reduce_scatter runs a ring of point-to-point messages through the runtime's scratch
 * buffer instead of MPI's collective, which allocates a temporary as large as the
 * message on every call. The environment variable SHARDRT_RING_MIN_BYTES moves the
 * switch-over (0: always the ring). */

typedef enum shardrt_reduction {
  SHARDRT_SUM = 0,
  SHARDRT_MAX = 1,
  SHARDRT_MIN = 2,
  SHARDRT_PRODUCT = 3
} shardrt_reduction;

/* out[i] = reduction over the group of in[i], for `count` elements; in == out allowed.
 * Every rank of a group gets bitwise the same result (the ring reduces each element in
 * one place; test/Runtime checks it for MPI's collective too). */
void shardrt_all_reduce_f32(uint32_t axes, const float *in, float *out, int64_t count,
                            shardrt_reduction op);
void shardrt_all_reduce_i32(uint32_t axes, const int32_t *in, int32_t *out, int64_t count,
                            shardrt_reduction op);

/* A parameter's gradient summed over the group (the all_reduces and reduce_scatters that
 * shardc-mark-gradient-syncs marks): as shardrt_all_reduce_f32 and
 * shardrt_reduce_scatter_f32, or, under --reduce-precision bf16 (a group of two ranks or
 * more, a sum), sent in bfloat16 and summed in f32 by the rank that keeps each block;
 * an all-reduce's sums are then rounded to bfloat16. Every rank still gets the same
 * bits. */
void shardrt_all_reduce_gradient_f32(uint32_t axes, const float *in, float *out, int64_t count,
                                     shardrt_reduction op);
void shardrt_reduce_scatter_gradient_f32(uint32_t axes, const float *in, float *out, int ndim,
                                         const int64_t *in_shape, int scatter_dim,
                                         shardrt_reduction op);

/* From now on the two above send bfloat16 (1) or f32 (0, the default). The driver's
 * --reduce-precision sets it. */
void shardrt_set_reduce_precision_bf16(int32_t enabled);

/* shardrt_all_reduce_gradient_f32 and shardrt_reduce_scatter_gradient_f32 in two
 * halves, so that the backward pass goes on
 * while the gradient travels: the start returns a handle, and `out` holds the result
 * once shardrt_wait(handle) has returned; `in` may be overwritten as soon as the start
 * returns, `out` must be neither read nor written before the wait, which names it
 * again (and stops the job if it is not the start's `out`). Where it does not
 * overlap (shardrt_set_overlap_gradients), for a group of one rank or a reduction
 * other than a sum, the start reduces at once and returns 0, for which the wait does
 * nothing. Every rank of a group gets the same bits: each element is summed
 * by one rank, in group order (in f32 maybe not the bits of the blocking entry, which
 * is MPI's all-reduce). Waiting for a handle also waits for every reduction started
 * before it. */
int64_t shardrt_all_reduce_gradient_start_f32(uint32_t axes, const float *in, float *out,
                                              int64_t count, shardrt_reduction op);
int64_t shardrt_reduce_scatter_gradient_start_f32(uint32_t axes, const float *in, float *out,
                                                  int ndim, const int64_t *in_shape,
                                                  int scatter_dim, shardrt_reduction op);
void shardrt_wait(int64_t handle, const float *out);

/* Moves the reductions in flight on without waiting: MPI moves a nonblocking message
 * only inside an MPI call, so shardc calls this before each large loop nest of a step
 * (the kernels call it before each product). */
void shardrt_progress_gradients(void);

/* From now on the starts above overlap (1) or reduce at once (0, the default). The
 * driver's --overlap-gradients sets it. */
void shardrt_set_overlap_gradients(int32_t enabled);

/* Concatenates the group's local tensors (all of shape `local_shape`) along
 * `gather_dim`, ordered by group index: `out` has shape local_shape with
 * local_shape[gather_dim] multiplied by the group size. */
void shardrt_all_gather_f32(uint32_t axes, const float *in, float *out, int ndim,
                            const int64_t *local_shape, int gather_dim);
void shardrt_all_gather_i32(uint32_t axes, const int32_t *in, int32_t *out, int ndim,
                            const int64_t *local_shape, int gather_dim);

/* shardrt_all_gather_f32 in two halves, for a parameter's gather under FSDP, which
 * shardc starts one weight early (shardc-prefetch-gathers): the start returns a handle
 * and `out` holds the gathered tensor once shardrt_wait(handle, out) has returned, with
 * the rules of the gradients' starts above (`in` may be overwritten once the start
 * returns; waiting for a handle also waits for every older one). Where it does not
 * prefetch (shardrt_set_prefetch_weights) or for a group of one rank, the start gathers
 * at once and returns 0. The same bits as shardrt_all_gather_f32. */
int64_t shardrt_all_gather_start_f32(uint32_t axes, const float *in, float *out, int ndim,
                                     const int64_t *local_shape, int gather_dim);

/* Where shardrt_all_gather_start_f32 leaves its gather in flight from now on: never (the
 * default), where the group's ranks are on more than one host, or always. The driver's
 * --prefetch-weights sets it (off, auto, on). */
typedef enum {
  SHARDRT_PREFETCH_OFF = 0,
  SHARDRT_PREFETCH_ACROSS_HOSTS = 1,
  SHARDRT_PREFETCH_ON = 2
} shardrt_prefetch;
void shardrt_set_prefetch_weights(shardrt_prefetch when);

/* A pipeline's point-to-point messages (shardc-pipeline-schedule): the activations a
 * stage sends the next, their cotangents sent back. `peer` is the other rank's index
 * in the group of `axes` (the stage axis), `tag` tells the messages between two ranks
 * apart (they arrive in the order sent). shardrt_send copies `bytes` of `data` and
 * returns at once (the message leaves while the stage computes); shardrt_recv returns
 * once they are in `data`, waiting as the collectives do (--collective-timeout);
 * shardrt_wait_sends waits until every message sent has left. */
void shardrt_send(uint32_t axes, const void *data, int64_t bytes, int64_t peer, int tag);
void shardrt_recv(uint32_t axes, void *data, int64_t bytes, int64_t peer, int tag);
void shardrt_wait_sends(void);

/* Makes the communicator of every subset of the mesh axes now, which is collective over
 * every rank: a pipelined step calls it first, as its stages then run different
 * collectives, each among its own ranks. */
void shardrt_make_communicators(void);

/* Reduces the group's tensors of shape `in_shape` element-wise, splits the result along
 * `scatter_dim` into group-size blocks and gives block g to the rank of group index g:
 * `out` has shape in_shape with in_shape[scatter_dim] divided by the group size (which
 * must divide it). */
void shardrt_reduce_scatter_f32(uint32_t axes, const float *in, float *out, int ndim,
                                const int64_t *in_shape, int scatter_dim, shardrt_reduction op);
void shardrt_reduce_scatter_i32(uint32_t axes, const int32_t *in, int32_t *out, int ndim,
                                const int64_t *in_shape, int scatter_dim, shardrt_reduction op);

/* Splits the local tensor of shape `in_shape` along `split_dim` into group-size blocks,
 * sends block g to the rank of group index g, and concatenates the blocks received
 * along `concat_dim`, ordered by the sender's group index: `out` has shape in_shape
 * with in_shape[split_dim] divided by, then in_shape[concat_dim] multiplied by, the
 * group size. split_dim == concat_dim is allowed. */
void shardrt_all_to_all_f32(uint32_t axes, const float *in, float *out, int ndim,
                            const int64_t *in_shape, int split_dim, int concat_dim);
void shardrt_all_to_all_i32(uint32_t axes, const int32_t *in, int32_t *out, int ndim,
                            const int64_t *in_shape, int split_dim, int concat_dim);

/* ---- Dense f32 kernels ------------------------------------------------------------- */
/* What lower-to-kernels (compiler/lib/Conversion/LinalgToKernels.cpp) replaces linalg
 * matmuls and 2-D convolutions with. Tensors are dense and row-major, convolutions NHWC
 * with HWCF kernels; every kernel ACCUMULATES into its output, as the linalg op does into
 * its init. All run on OpenBLAS's sgemm, the convolutions on an im2col matrix in the
 * runtime's scratch buffer. Nothing here needs shardrt_init; shardrt_init makes OpenBLAS
 * use the calling thread alone (lib/host/host.cpp says why) unless OPENBLAS_NUM_THREADS,
 * GOTO_NUM_THREADS or OMP_NUM_THREADS is set. Dimensions beyond 2^31 - 1 are an error. */

/* Each kernel accumulates into its output (`accumulate` != 0) or overwrites it (0: the
 * output's previous contents are never read, lower-to-kernels' replacement of a zero fill). */

/* From now on every kernel's matrix products round their operands to bfloat16 and
 * accumulate in f32 (oneDNN's matmul), or (0) compute in f32 on OpenBLAS (a product with M or
 * K at most 16 on oneDNN's sgemm, faster there: bench/kernels), the default.
 * The driver's --matmul-precision sets it. */
void shardrt_set_matmul_precision_bf16(int32_t enabled);

/* How this process's bfloat16 products ran: "onednn" (oneDNN's bf16 kernels, on a CPU
 * with AVX512-BF16 or AMX), "emulated" (elsewhere: the operands rounded to bfloat16 and
 * kept in f32, then an f32 product), or NULL before the first. Decided once per process. */
const char *shardrt_bf16_products(void);

/* c[M,N] += op(a) op(b): a is [M,K] ([K,M] if trans_a), b is [K,N] ([N,K] if trans_b),
 * each row-major with its leading dimension (the distance between its rows' starts:
 * lda >= K for [M,K], ldc >= N, ...), so that a matrix can be a strided view of a larger
 * tensor. lower-to-kernels calls it for a contraction without batch dimensions. */
void shardrt_matmul_f32(int32_t accumulate, int32_t trans_a, int32_t trans_b, int64_t m, int64_t n,
                        int64_t k, int64_t lda, int64_t ldb, int64_t ldc, const float *a,
                        const float *b, float *c);

/* shardrt_matmul_f32 for each of batch0 x batch1 products of the same shape: the (i, j)-th
 * reads a + i * a_stride0 + j * a_stride1, b + i * b_stride0 + j * b_stride1 and writes
 * c + i * c_stride0 + j * c_stride1 (strides in elements): attention's products over
 * batch and heads in one call, one oneDNN primitive under --matmul-precision bf16. */
void shardrt_batched_matmul_f32(int32_t accumulate, int32_t trans_a, int32_t trans_b, int64_t m,
                                int64_t n, int64_t k, int64_t lda, int64_t ldb, int64_t ldc,
                                int64_t batch0, int64_t batch1, int64_t a_stride0,
                                int64_t a_stride1, int64_t b_stride0, int64_t b_stride1,
                                int64_t c_stride0, int64_t c_stride1, const float *a,
                                const float *b, float *c);

/* shardrt_matmul_f32 and shardrt_batched_matmul_f32 with operands in bfloat16 (the bits
 * of each element, as uint16_t) and an f32 c, accumulated in f32 on oneDNN's matmul:
 * lower-to-kernels calls them for the products whose operands a program holds in bf16
 * (`precision matmul : bf16` in the rules file). */
void shardrt_matmul_bf16(int32_t accumulate, int32_t trans_a, int32_t trans_b, int64_t m, int64_t n,
                         int64_t k, int64_t lda, int64_t ldb, int64_t ldc, const uint16_t *a,
                         const uint16_t *b, float *c);
void shardrt_batched_matmul_bf16(int32_t accumulate, int32_t trans_a, int32_t trans_b, int64_t m,
                                 int64_t n, int64_t k, int64_t lda, int64_t ldb, int64_t ldc,
                                 int64_t batch0, int64_t batch1, int64_t a_stride0,
                                 int64_t a_stride1, int64_t b_stride0, int64_t b_stride1,
                                 int64_t c_stride0, int64_t c_stride1, const uint16_t *a,
                                 const uint16_t *b, float *c);

/* y[N,OH,OW,F] += sum over kh, kw, c of xp[n, oh*sh + kh*dh, ow*sw + kw*dw, c] * k[kh,kw,c,f],
 * with k [KH,KW,C,F] and xp the input x [N,H,W,C] padded with zeros: pad_h rows above
 * it, pad_w columns left of it, and whatever the windows reach past its far edges (a
 * padded x is passed with pads 0). */
void shardrt_conv2d_f32(int32_t accumulate, int64_t n, int64_t h, int64_t w, int64_t c,
                        int64_t pad_h, int64_t pad_w, int64_t kh, int64_t kw, int64_t f, int64_t oh,
                        int64_t ow, int64_t sh, int64_t sw, int64_t dh, int64_t dw, const float *x,
                        const float *k, float *y);

/* The filter gradient of that convolution (dilation 1):
 * dw[KH,KW,C,F] += sum over n, oh, ow of xp[n, oh*sh + kh, ow*sw + kw, c] * dy[n,oh,ow,f],
 * with xp the input x [N,H,W,C] padded as above and dy [N,OH,OW,F]. */
void shardrt_conv2d_filter_grad_f32(int32_t accumulate, int64_t n, int64_t h, int64_t w, int64_t c,
                                    int64_t pad_h, int64_t pad_w, int64_t kh, int64_t kw, int64_t f,
                                    int64_t oh, int64_t ow, int64_t sh, int64_t sw, const float *x,
                                    const float *dy, float *dw);

/* The input gradient, as a stride-1 correlation of dyp [N, H+KH-1, W+KW-1, F] (the output
 * gradient, dilated by the stride and padded) with the spatially flipped kernel:
 * dx[N,H,W,C] += sum over kh, kw, f of dyp[n, i - kh + KH-1, j - kw + KW-1, f] * k[kh,kw,c,f],
 * where dyp is dy [N, dy_h, dy_w, F] with pad_h rows of zeros above it, pad_w columns
 * left of it and zeros past its far edges (a dyp built already is passed with its own
 * sizes and pads 0). */
void shardrt_conv2d_input_grad_f32(int32_t accumulate, int64_t n, int64_t h, int64_t w, int64_t c,
                                   int64_t kh, int64_t kw, int64_t f, int64_t dy_h, int64_t dy_w,
                                   int64_t pad_h, int64_t pad_w, const float *dy, const float *k,
                                   float *dx);

/* The three convolution entries with their products in bfloat16 (f32 operands rounded
 * to bfloat16 as they are read, f32 accumulation: im2col products on oneDNN's bf16
 * matmul), the same arguments: lower-to-kernels calls them under `precision matmul :
 * bf16`, as --matmul-precision bf16 does with the f32 ones at run time. */
void shardrt_conv2d_bf16(int32_t accumulate, int64_t n, int64_t h, int64_t w, int64_t c,
                         int64_t pad_h, int64_t pad_w, int64_t kh, int64_t kw, int64_t f,
                         int64_t oh, int64_t ow, int64_t sh, int64_t sw, int64_t dh, int64_t dw,
                         const float *x, const float *k, float *y);
void shardrt_conv2d_filter_grad_bf16(int32_t accumulate, int64_t n, int64_t h, int64_t w, int64_t c,
                                     int64_t pad_h, int64_t pad_w, int64_t kh, int64_t kw,
                                     int64_t f, int64_t oh, int64_t ow, int64_t sh, int64_t sw,
                                     const float *x, const float *dy, float *dw);
void shardrt_conv2d_input_grad_bf16(int32_t accumulate, int64_t n, int64_t h, int64_t w, int64_t c,
                                    int64_t kh, int64_t kw, int64_t f, int64_t dy_h, int64_t dy_w,
                                    int64_t pad_h, int64_t pad_w, const float *dy, const float *k,
                                    float *dx);

/* ---- Counter-based random numbers ----------------------------------------------- */
/* A parameter's value at global element index n (row-major over the global shape) is a
 * function of (seed, parameter path, n) only, so every sharding of a parameter holds
 * the same numbers as the unsharded one. The generator is Philox4x32-10 (Salmon et al.,
 * "Parallel random numbers: as easy as 1, 2, 3", SC'11) with
 *   key     = the 64-bit FNV-1a hash of the path (low word first),
 *   counter = (n low, n high, seed low, seed high).
 * Nothing here needs shardrt_init. */

/* One Philox4x32-10 block: out = philox(counter, key). */
void shardrt_philox4x32_10(const uint32_t counter[4], const uint32_t key[2], uint32_t out[4]);
/* FNV-1a, 64 bits, of the NUL-terminated `path`. */
uint64_t shardrt_hash_path(const char *path);

/* The draws at one element: uniform in [0, 1) from 24 bits of the block's first word;
 * standard normal by Box-Muller from two 53-bit uniforms made of the block's four words
 * (the cosine branch). */
float shardrt_uniform01(uint64_t seed, uint64_t path_hash, uint64_t index);
float shardrt_normal01(uint64_t seed, uint64_t path_hash, uint64_t index);

/* ---- Parameter initialisers, named as in the language ------------------------------ */
/* A shard is the block of a tensor of shape `global_shape` that starts at
 * `local_offset` (per dimension) and has shape `local_shape`; `out` receives it densely,
 * row-major. The random fills take the run's seed and the parameter's path
 * (`blocks.W1`). */

void shardrt_fill_zeros_f32(float *out, int64_t count);
void shardrt_fill_ones_f32(float *out, int64_t count);
void shardrt_fill_constant_f32(float *out, int64_t count, float value);

/* normal(stddev): N(0, stddev^2). */
void shardrt_fill_normal_f32(float *out, int ndim, const int64_t *global_shape,
                             const int64_t *local_shape, const int64_t *local_offset, uint64_t seed,
                             const char *path, float stddev);
/* uniform(scale): U(-scale, scale). */
void shardrt_fill_uniform_f32(float *out, int ndim, const int64_t *global_shape,
                              const int64_t *local_shape, const int64_t *local_offset,
                              uint64_t seed, const char *path, float scale);

/* Variance scaling as in Flax/JAX, without truncation:
 *   xavier_normal   N(0, 2 / (fan_in + fan_out))
 *   xavier_uniform  U(-sqrt(6 / (fan_in + fan_out)), +sqrt(6 / (fan_in + fan_out)))
 *   lecun_normal    N(0, 1 / fan_in)
 *   he_normal       N(0, 2 / fan_in)
 * The caller passes the fans: shardrt_compute_fans gives them for a kernel; a stacked
 * (scan) parameter's leading layer axis must be left out of them. */
void shardrt_fill_xavier_normal_f32(float *out, int ndim, const int64_t *global_shape,
                                    const int64_t *local_shape, const int64_t *local_offset,
                                    uint64_t seed, const char *path, int64_t fan_in,
                                    int64_t fan_out);
void shardrt_fill_xavier_uniform_f32(float *out, int ndim, const int64_t *global_shape,
                                     const int64_t *local_shape, const int64_t *local_offset,
                                     uint64_t seed, const char *path, int64_t fan_in,
                                     int64_t fan_out);
void shardrt_fill_lecun_normal_f32(float *out, int ndim, const int64_t *global_shape,
                                   const int64_t *local_shape, const int64_t *local_offset,
                                   uint64_t seed, const char *path, int64_t fan_in,
                                   int64_t fan_out);
void shardrt_fill_he_normal_f32(float *out, int ndim, const int64_t *global_shape,
                                const int64_t *local_shape, const int64_t *local_offset,
                                uint64_t seed, const char *path, int64_t fan_in, int64_t fan_out);

/* Fans of a kernel of shape [..., in, out] as Flax defines them: with the receptive
 * field the product of the leading dimensions, fan_in = in * field and fan_out = out *
 * field (a conv kernel HWIO: kh*kw*in and kh*kw*out). ndim must be at least 2. */
void shardrt_compute_fans(int ndim, const int64_t *shape, int64_t *fan_in, int64_t *fan_out);

/* ---- Memory of generated code ----------------------------------------------- */

/* What memref.alloc and memref.dealloc become (MLIR's finalize-memref-to-llvm with
 * use-generic-functions): malloc, aligned_alloc and free, except that memory running
 * out stops the job with a message instead of handing the step a null pointer. */
void *_mlir_memref_to_llvm_alloc(size_t bytes);
void *_mlir_memref_to_llvm_aligned_alloc(size_t alignment, size_t bytes);
void _mlir_memref_to_llvm_free(void *pointer);

/* The step arena: the buffer in which a train, eval or grad step places its temporaries
 * (shardc-plan-buffers), passed by the entry points shardc adds as their last buffer. One
 * for the process, at least `bytes` long and 64-byte aligned; the steps run one at a time
 * and none keeps anything in it. It is the runtime's, mapped once and reused by every
 * step, so that a run holds the arena `shardc --report` prints and no more: allocated
 * with malloc on each step, it left a hole in the heap that smaller allocations between
 * steps broke up, and the heap grew by a second arena. */
void *shardrt_step_arena(int64_t bytes);

/* What memref.copy between views that are not both contiguous becomes: MLIR's
 * memrefCopy (libmlir_c_runner_utils, which would pull libMLIR and libLLVM into every
 * program), with the same contract: `elem_size` bytes per element, source and target
 * of the same rank and sizes, any strides. */
typedef struct {
  int64_t rank;
  void *descriptor;
} shardrt_unranked_memref;
void memrefCopy(int64_t elem_size, shardrt_unranked_memref *source,
                shardrt_unranked_memref *target);

#pragma GCC visibility pop

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* SHARDRT_SHARDRT_H */
