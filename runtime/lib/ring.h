// Ring reduce-scatter and all-gather over point-to-point messages (Patarasuk & Yuan,
// "Bandwidth optimal all-reduce algorithms for clusters of workstations", 2009).
//
// Why not MPI's collectives: OpenMPI's MPI_Allreduce and MPI_Reduce_scatter_block
// allocate a temporary as large as the message on every call; at 64 MiB glibc maps
// and unmaps it each time, and the page faults make the call several times slower.
// The ring sends each element across the group twice, the bandwidth optimum, and its
// only temporaries are two blocks in the runtime's scratch buffer.
#ifndef SHARDRT_LIB_RING_H
#define SHARDRT_LIB_RING_H

#include "element.h"
#include "mesh.h"

namespace shardrt {

/// `total` elements cut into `parts` contiguous blocks; block g is [begin(g), begin(g+1)).
/// Sizes differ by at most one when `parts` does not divide `total`.
struct Partition {
  int64_t total;
  int parts;
  int64_t begin(int g) const { return total * g / parts; }
  int64_t size(int g) const { return begin(g + 1) - begin(g); }
  int64_t largest() const { return (total + parts - 1) / parts; }
};

/// After the call, `ownBlock` holds block `group.index` of the reduction over the group
/// of every rank's `in`. `acc` and `recv` hold partition.largest() elements each.
/// `ownBlock` may be in's own block (in place). Each block is reduced along the ring in
/// one fixed order, ending at its owner, so the result does not depend on the caller.
void ringReduceScatter(const Group &group, ElementType type, shardrt_reduction op,
                       const std::byte *in, std::byte *ownBlock, const Partition &partition,
                       std::byte *acc, std::byte *recv);

/// `buffer` holds this rank's block (group.index); afterwards it holds every block.
void ringAllGather(const Group &group, ElementType type, std::byte *buffer,
                   const Partition &partition);

} // namespace shardrt

#endif // SHARDRT_LIB_RING_H
