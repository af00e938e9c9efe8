// The ring reduce-scatter: G-1 steps, each rank sending to its right neighbour (group index
// + 1) and receiving from its left one.
#include "ring.h"
#include "watchdog.h"

#include <cstring>

namespace shardrt {

namespace {

int modulo(int a, int n) { return ((a % n) + n) % n; }

/// One step: `sendCount` elements to `right`, `recvCount` from `left`, waited for
/// under the watchdog.
void exchange(const Group &group, ElementType type, const std::byte *send, int64_t sendCount,
              int right, std::byte *recv, int64_t recvCount, int left) {
  MPI_Request requests[2];
  MPI_Irecv(recv, mpiCount(recvCount, "ring"), type.mpi, left, 0, group.comm, &requests[0]);
  MPI_Isend(send, mpiCount(sendCount, "ring"), type.mpi, right, 0, group.comm, &requests[1]);
  await(2, requests);
}

} // namespace

void ringReduceScatter(const Group &group, ElementType type, shardrt_reduction op,
                       const std::byte *in, std::byte *ownBlock, const Partition &partition,
                       std::byte *acc, std::byte *recv) {
  const int g = group.size, r = group.index;
  const int right = modulo(r + 1, g), left = modulo(r - 1, g);
  auto at = [&](const std::byte *base, int block) {
    return base + partition.begin(block) * type.bytes;
  };
  // Step s passes on the partial reduction of block r-s-1 (at step 0: this rank's own
  // contribution) and receives that of block r-s-2, adding this rank's part. After
  // g-1 steps the block received is block r, reduced over all g ranks.
  if (g == 1) {
    if (ownBlock != in)
      std::memcpy(ownBlock, in, partition.total * type.bytes);
    return;
  }
  const std::byte *send = at(in, modulo(r - 1, g));
  for (int step = 0; step < g - 1; ++step) {
    int sendBlock = modulo(r - step - 1, g), recvBlock = modulo(r - step - 2, g);
    exchange(group, type, send, partition.size(sendBlock), right, recv, partition.size(recvBlock),
             left);
    std::byte *sum = step == g - 2 ? ownBlock : acc;
    combine(type, op, sum, recv, at(in, recvBlock), partition.size(recvBlock));
    send = acc;
  }
}

} // namespace shardrt
