// Ring reduce-scatter over point-to-point messages (Patarasuk & Yuan, "Bandwidth
// optimal all-reduce algorithms for clusters of workstations", 2009), for the large
// reduce_scatters.
//
// Why not MPI's collective: OpenMPI's MPI_Reduce_scatter_block allocates a temporary as
// large as the message on every call, and a large one is mapped and unmapped each time,
// its pages faulted in afresh. The ring sends each element across the group once, and
// its only temporaries are two blocks in the runtime's scratch buffer. The all-reduce
// does not take the ring: with the heap keeping freed memory (host.cpp) MPI_Allreduce is
// faster (bench/runtime).
#ifndef SHARDRT_LIB_RING_H
#define SHARDRT_LIB_RING_H

#include "element.h"
#include "mesh/mesh.h"

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

} // namespace shardrt

#endif // SHARDRT_LIB_RING_H
