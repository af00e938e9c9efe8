/* shardrt-test-communicators: communicators are made once per axis subset and freed
 * at finalize.
 *
 * Run under `mpirun -np 8` (mesh data = 2, model = 4). Calls collectives 1000 times
 * per subset and counts communicators two ways: the runtime's own count, and the calls
 * it makes to MPI_Comm_split and MPI_Comm_free, which this program intercepts through
 * MPI's profiling interface (its definitions below take precedence over libmpi's;
 * PMPI_* are the real ones). Written in C, so it also checks that shardrt.h is C.
 * Prints `communicators: ...` lines on rank 0; exits non-zero on a failure. */
#include "shardrt/shardrt.h"

#include <mpi.h>

#include <stdio.h>

static int splits = 0, hostSplits = 0, frees = 0, failures = 0, rank = 0;

int MPI_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm *newcomm) {
  ++splits;
  return PMPI_Comm_split(comm, color, key, newcomm);
}

/* The collective watchdog's communicator of the ranks of a host, made at init. */
int MPI_Comm_split_type(MPI_Comm comm, int type, int key, MPI_Info info, MPI_Comm *newcomm) {
  ++hostSplits;
  return PMPI_Comm_split_type(comm, type, key, info, newcomm);
}

int MPI_Comm_free(MPI_Comm *comm) {
  ++frees;
  return PMPI_Comm_free(comm);
}

static void expect(const char *what, long long got, long long want) {
  if (got != want) {
    ++failures;
    fprintf(stderr, "rank %d: %s is %lld, expected %lld\n", rank, what, got, want);
  }
}

enum { kCalls = 1000, kData = 1u << 0, kModel = 1u << 1 };

int main(int argc, char **argv) {
  const int64_t sizes[2] = {2, 4};
  const char *names[2] = {"data", "model"};
  shardrt_init(&argc, &argv, 2, sizes, names);
  rank = shardrt_rank();

  /* The same all_reduce over `model` 1000 times: one communicator. */
  float ones[16], sums[16];
  for (int i = 0; i < 16; ++i)
    ones[i] = 1.0f;
  for (int call = 0; call < kCalls; ++call)
    shardrt_all_reduce_f32(kModel, ones, sums, 16, SHARDRT_SUM);
  expect("sum over model", (long long)sums[15], 4);
  expect("communicators after 1000 all_reduce over model", shardrt_debug_num_communicators(), 1);
  expect("MPI_Comm_split calls after 1000 all_reduce over model", splits, 1);

  /* Interleaved collectives over data, model, the whole mesh and no axis: one more
   * communicator each for data and the whole mesh, none for the empty subset. */
  float gathered[32], scattered[4], in[8]; /* scattered: 8 / |data| = 4 */
  const int64_t shape[1] = {8};
  for (int i = 0; i < 8; ++i)
    in[i] = (float)(rank * 8 + i);
  for (int call = 0; call < kCalls; ++call) {
    shardrt_all_gather_f32(kModel, in, gathered, 1, shape, 0);
    shardrt_reduce_scatter_f32(kData, in, scattered, 1, shape, 0, SHARDRT_SUM);
    shardrt_all_reduce_f32(kData | kModel, ones, sums, 16, SHARDRT_SUM);
    shardrt_all_reduce_f32(0, ones, sums, 16, SHARDRT_SUM);
  }
  expect("communicators after 1000 calls each over 4 subsets", shardrt_debug_num_communicators(),
         3);
  expect("MPI_Comm_split calls after 1000 calls each over 4 subsets", splits, 3);

  if (rank == 0)
    printf("communicators: %d calls over 4 axis subsets made %d communicators\n",
           kCalls + 4 * kCalls, splits);
  shardrt_finalize();
  expect("MPI_Comm_split_type calls (the watchdog's)", hostSplits, 1);
  expect("MPI_Comm_free calls at finalize", frees, 3 + hostSplits);

  int status = failures == 0 ? 0 : 1;
  if (rank == 0 && failures == 0)
    printf("communicators: finalize freed %d and the watchdog's %d\n", frees - hostSplits,
           hostSplits);
  return status;
}
