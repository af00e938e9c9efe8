// The mesh as the rest of the runtime sees it: groups of ranks over axis subsets,
// their cached communicators, the one way to stop on a caller's error, and rank 0's
// verdict shared.
#ifndef SHARDRT_LIB_MESH_H
#define SHARDRT_LIB_MESH_H

#include <mpi.h>

#include <cstdint>
#include <string>

namespace shardrt {

/// Prints `shardrt: error: <message>` and ends the job: MPI_Abort once MPI is up (the
/// error may be on one rank only, and the others must not hang), exit(1) before.
[[noreturn]] void fatal(const char *format, ...) __attribute__((format(printf, 1, 2)));

/// Every rank gets rank 0's `ok`: rank 0 alone reads files and prints what is wrong
/// with them, and every rank must leave (or go on) with it. Collective.
bool rank0Verdict(bool ok);

/// Every rank gets rank 0's `bytes` (under 2 GiB); `what` names the broadcast for the
/// collective watchdog. Collective.
void broadcastFromRank0(std::string &bytes, const char *what);

/// The mesh shardrt_init set up: "(data = 2, model = 4)", "(2, 4)" when the axes have
/// no names, "(one rank)" when there are none.
std::string describeMesh();

/// The mesh axes of a mask by name: "data, model" ("axes 0, 1" without names).
std::string axesText(uint32_t axes);

/// This rank's group over a subset of the mesh axes.
struct Group {
  MPI_Comm comm; // ranks ordered by group index; MPI_COMM_SELF for the empty subset
  int size;
  int index;
};

/// The group over `axes` (bit i = mesh axis i). The first call for a subset creates its
/// communicator (a collective over the whole mesh); later calls reuse it.
Group groupOver(uint32_t axes, const char *caller);

/// The smallest all_reduce / reduce_scatter, in bytes, that takes the ring.
int64_t ringMinBytes();

} // namespace shardrt

#endif // SHARDRT_LIB_MESH_H
