/* e2e_main.c - driver for the end-to-end tests of shardc-shard-to-runtime.
 *
 * Usage: PROGRAM AXIS_SIZE... (run under mpirun with as many ranks as the mesh has).
 * Sets up the mesh with shardrt_init, calls `test_main` (a function of the test's
 * MLIR module, lowered by shardc-lower-to-llvm), prints how many communicators
 * the runtime made, and finalizes.
 *
 * The MLIR side fills and prints buffers through the helpers below, declared there
 * as `func.func private @fill_f32(memref<*xf32>)`, `@print_f32(i32, memref<*xf32>)`
 * and so on: convert-func-to-llvm passes an unranked memref as (rank, pointer to
 * the ranked descriptor). Every line starts with "rank R #TAG" so that `sort` puts
 * the output of all ranks in a fixed order.
 */
#include <shardrt/shardrt.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void test_main(void);

/* The ranked memref descriptor: sizes[rank] then strides[rank] follow offset. */
typedef struct {
  void *allocated;
  void *aligned;
  int64_t offset;
  int64_t sizes_and_strides[];
} Descriptor;

/* Calls `visit` on every element offset (in elements, from `aligned`) in row-major
 * order of the shape. */
static void for_each_element(int64_t rank, const Descriptor *d,
                             void (*visit)(void *ctx, int64_t linear, int64_t offset), void *ctx) {
  const int64_t *sizes = d->sizes_and_strides;
  const int64_t *strides = d->sizes_and_strides + rank;
  int64_t count = 1;
  for (int64_t i = 0; i < rank; ++i)
    count *= sizes[i];
  for (int64_t linear = 0; linear < count; ++linear) {
    int64_t rest = linear, offset = d->offset;
    for (int64_t i = rank - 1; i >= 0; --i) {
      offset += (rest % sizes[i]) * strides[i];
      rest /= sizes[i];
    }
    visit(ctx, linear, offset);
  }
}

/* Element `linear` of every filled buffer is 100 * rank + linear. */
static void fill_f32_at(void *ctx, int64_t linear, int64_t offset) {
  ((float *)ctx)[offset] = (float)(100 * shardrt_rank() + linear);
}
static void fill_i32_at(void *ctx, int64_t linear, int64_t offset) {
  ((int32_t *)ctx)[offset] = (int32_t)(100 * shardrt_rank() + linear);
}

void fill_f32(int64_t rank, Descriptor *d) { for_each_element(rank, d, fill_f32_at, d->aligned); }
void fill_i32(int64_t rank, Descriptor *d) { for_each_element(rank, d, fill_i32_at, d->aligned); }

typedef struct {
  const void *data;
  int is_float;
  char *line;
  size_t used, capacity;
} Printer;

static void append(Printer *p, const char *text) {
  size_t n = strlen(text);
  if (p->used + n + 1 > p->capacity) {
    p->capacity = 2 * (p->used + n + 1);
    p->line = realloc(p->line, p->capacity);
  }
  memcpy(p->line + p->used, text, n + 1);
  p->used += n;
}

static void print_at(void *ctx, int64_t linear, int64_t offset) {
  Printer *p = ctx;
  char text[64];
  (void)linear;
  if (p->is_float)
    snprintf(text, sizeof text, " %g", ((const float *)p->data)[offset]);
  else
    snprintf(text, sizeof text, " %d", ((const int32_t *)p->data)[offset]);
  append(p, text);
}

/* One write per line, so that lines of different ranks do not interleave. */
static void print_buffer(int32_t tag, int64_t rank, Descriptor *d, int is_float) {
  Printer p = {d->aligned, is_float, NULL, 0, 0};
  char text[96];
  snprintf(text, sizeof text, "rank %d #%02d [", shardrt_rank(), tag);
  append(&p, text);
  for (int64_t i = 0; i < rank; ++i) {
    snprintf(text, sizeof text, i ? "x%lld" : "%lld", (long long)d->sizes_and_strides[i]);
    append(&p, text);
  }
  append(&p, "]:");
  for_each_element(rank, d, print_at, &p);
  append(&p, "\n");
  fputs(p.line, stdout);
  fflush(stdout);
  free(p.line);
}

void print_f32(int32_t tag, int64_t rank, Descriptor *d) { print_buffer(tag, rank, d, 1); }
void print_i32(int32_t tag, int64_t rank, Descriptor *d) { print_buffer(tag, rank, d, 0); }

void print_index(int32_t tag, int64_t value) {
  printf("rank %d #%02d index: %lld\n", shardrt_rank(), tag, (long long)value);
  fflush(stdout);
}

int main(int argc, char **argv) {
  int64_t sizes[8];
  int num_axes = argc - 1;
  if (num_axes < 1 || num_axes > 8) {
    fprintf(stderr, "usage: %s AXIS_SIZE...\n", argv[0]);
    return 2;
  }
  for (int i = 0; i < num_axes; ++i)
    sizes[i] = atoll(argv[i + 1]);
  shardrt_init(&argc, &argv, num_axes, sizes, NULL);
  test_main();
  printf("rank %d communicators: %d\n", shardrt_rank(), shardrt_debug_num_communicators());
  fflush(stdout);
  shardrt_finalize();
  return 0;
}
