// Mesh setup: rank <-> coordinates, groups over axis subsets, communicators made once.
//
// A subset's communicator comes from one MPI_Comm_split of MPI_COMM_WORLD with
//   color = the rank's row-major index over the axes *outside* the subset (which group),
//   key   = the rank's row-major index over the axes *inside* it (place in the group),
// so a communicator's rank order is the group index, the order MLIR's shard dialect
// gives blocks. Communicators are cached by axis mask and freed at finalize; upstream's
// shard-to-MPI lowering splits anew at every collective and never frees.
#include "mesh.h"
#include "collectives/watchdog.h"
#include "host/host.h"
#include "memory/scratch.h"

#include "shardrt/shardrt.h"

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <unordered_map>
#include <vector>

namespace shardrt {
namespace {

struct MeshState {
  bool initialised = false;
  bool ownsMpi = false; // shardrt_init called MPI_Init, so finalize must end MPI
  int rank = 0;
  int numRanks = 1;
  std::vector<int64_t> sizes;
  std::vector<std::string> names;
  std::vector<int64_t> coords;
  std::unordered_map<uint32_t, MPI_Comm> comms;
  int64_t ringMinBytes = kDefaultRingMinBytes;
};

MeshState state;

bool mpiIsUp() {
  int initialised = 0, finalised = 0;
  MPI_Initialized(&initialised);
  MPI_Finalized(&finalised);
  return initialised && !finalised;
}

void requireInit(const char *caller) {
  if (!state.initialised)
    fatal("%s called before shardrt_init", caller);
}

void checkAxis(int axis, const char *caller) {
  requireInit(caller);
  if (axis < 0 || axis >= static_cast<int>(state.sizes.size()))
    fatal("%s: axis %d is not an axis of the mesh, which has %zu", caller, axis,
          state.sizes.size());
}

void checkMask(uint32_t axes, const char *caller) {
  requireInit(caller);
  uint32_t valid = state.sizes.size() >= 32 ? ~0u : (1u << state.sizes.size()) - 1;
  if (axes & ~valid)
    fatal("%s: axis mask 0x%x names axes that the mesh, with %zu, does not have", caller, axes,
          state.sizes.size());
}

/// Row-major index of this rank over the axes that `inside` says (mesh order).
int64_t linearIndex(uint32_t axes, bool inside) {
  int64_t index = 0;
  for (size_t a = 0; a < state.sizes.size(); ++a)
    if (((axes >> a) & 1u) == static_cast<uint32_t>(inside))
      index = index * state.sizes[a] + state.coords[a];
  return index;
}

int64_t productOver(uint32_t axes) {
  int64_t product = 1;
  for (size_t a = 0; a < state.sizes.size(); ++a)
    if ((axes >> a) & 1u)
      product *= state.sizes[a];
  return product;
}

int64_t readRingMinBytes() {
  const char *text = std::getenv("SHARDRT_RING_MIN_BYTES");
  if (!text || !*text)
    return kDefaultRingMinBytes;
  char *end = nullptr;
  long long value = std::strtoll(text, &end, 10);
  if (*end || value < 0)
    fatal("SHARDRT_RING_MIN_BYTES must be a number of bytes, not '%s'", text);
  return value;
}

} // namespace

void fatal(const char *format, ...) {
  std::fprintf(stderr, "shardrt: error: ");
  va_list args;
  va_start(args, format);
  std::vfprintf(stderr, format, args);
  va_end(args);
  std::fprintf(stderr, "\n");
  std::fflush(stderr);
  if (mpiIsUp())
    MPI_Abort(MPI_COMM_WORLD, 1);
  std::exit(1);
}

Group groupOver(uint32_t axes, const char *caller) {
  checkMask(axes, caller);
  Group group;
  group.size = static_cast<int>(productOver(axes));
  group.index = static_cast<int>(linearIndex(axes, true));
  if (axes == 0) {
    group.comm = MPI_COMM_SELF;
    return group;
  }
  auto found = state.comms.find(axes);
  if (found != state.comms.end()) {
    group.comm = found->second;
    return group;
  }
  MPI_Comm comm;
  MPI_Comm_split(MPI_COMM_WORLD, static_cast<int>(linearIndex(axes, false)), group.index, &comm);
  state.comms.emplace(axes, comm);
  group.comm = comm;
  return group;
}

int64_t ringMinBytes() { return state.ringMinBytes; }

std::string describeMesh() {
  if (state.sizes.empty())
    return "(one rank)";
  std::string text = "(";
  for (size_t a = 0; a < state.sizes.size(); ++a) {
    if (a)
      text += ", ";
    if (!state.names[a].empty())
      text += state.names[a] + " = ";
    text += std::to_string(state.sizes[a]);
  }
  return text + ")";
}

std::string axesText(uint32_t axes) {
  std::string text;
  for (size_t a = 0; a < state.sizes.size(); ++a)
    if (axes >> a & 1u)
      text += (text.empty() ? "" : ", ") +
              (state.names[a].empty() ? "axis " + std::to_string(a) : state.names[a]);
  return text;
}

bool rank0Verdict(bool ok) {
  int verdict = ok;
  watchedWorld("broadcast of rank 0's verdict", [&](MPI_Request *request) {
    MPI_Ibcast(&verdict, 1, MPI_INT, 0, MPI_COMM_WORLD, request);
  });
  return verdict != 0;
}

void broadcastFromRank0(std::string &bytes, const char *what) {
  uint64_t size = bytes.size();
  watchedWorld(what, [&](MPI_Request *request) {
    MPI_Ibcast(&size, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD, request);
  });
  bytes.resize(size);
  watchedWorld(what, [&](MPI_Request *request) {
    MPI_Ibcast(bytes.data(), int(size), MPI_CHAR, 0, MPI_COMM_WORLD, request);
  });
}

} // namespace shardrt

using namespace shardrt;

extern "C" {

void shardrt_init(int *argc, char ***argv, int num_axes, const int64_t *axis_sizes,
                  const char *const *axis_names) {
  if (state.initialised)
    fatal("shardrt_init called twice");
  if (num_axes < 0 || num_axes > 31)
    fatal("a mesh has between 0 and 31 axes, not %d", num_axes);
  if (!mpiIsUp()) {
    MPI_Init(argc, argv);
    state.ownsMpi = true;
  }
  MPI_Comm_rank(MPI_COMM_WORLD, &state.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &state.numRanks);

  int64_t meshSize = 1;
  state.sizes.assign(axis_sizes, axis_sizes + num_axes);
  state.names.clear();
  for (int a = 0; a < num_axes; ++a) {
    state.names.emplace_back(axis_names && axis_names[a] ? axis_names[a] : "");
    if (state.sizes[a] < 1)
      fatal("mesh axis %d has size %lld; sizes must be at least 1", a,
            static_cast<long long>(state.sizes[a]));
    meshSize *= state.sizes[a];
  }
  if (meshSize != state.numRanks) {
    // Every rank sees the mismatch, so all leave the same way: no rank waits on
    // another, and mpirun reports the non-zero status.
    if (state.rank == 0) {
      std::fprintf(stderr, "shardrt: error: the mesh %s needs %lld ranks, but mpirun started %d\n",
                   describeMesh().c_str(), static_cast<long long>(meshSize), state.numRanks);
      std::fflush(stderr);
    }
    MPI_Finalize();
    std::exit(1);
  }

  // Row-major: the last axis varies fastest.
  state.coords.assign(num_axes, 0);
  int64_t rest = state.rank;
  for (int a = num_axes - 1; a >= 0; --a) {
    state.coords[a] = rest % state.sizes[a];
    rest /= state.sizes[a];
  }
  state.ringMinBytes = readRingMinBytes();
  watchInit();
  keepFreedMemory();
  useOneBlasThread();
  state.initialised = true;
}

void shardrt_finalize(void) {
  requireInit("shardrt_finalize");
  for (auto &entry : state.comms)
    MPI_Comm_free(&entry.second);
  state.comms.clear();
  watchFinalize();
  scratch().release();
  if (state.ownsMpi)
    MPI_Finalize();
  state = MeshState();
}

int shardrt_rank(void) {
  requireInit("shardrt_rank");
  return state.rank;
}

int shardrt_num_ranks(void) {
  requireInit("shardrt_num_ranks");
  return state.numRanks;
}

int shardrt_mesh_num_axes(void) {
  requireInit("shardrt_mesh_num_axes");
  return static_cast<int>(state.sizes.size());
}

int64_t shardrt_mesh_axis_size(int axis) {
  checkAxis(axis, "shardrt_mesh_axis_size");
  return state.sizes[axis];
}

int64_t shardrt_mesh_coord(int axis) {
  checkAxis(axis, "shardrt_mesh_coord");
  return state.coords[axis];
}

int64_t shardrt_group_size(uint32_t axes) {
  checkMask(axes, "shardrt_group_size");
  return productOver(axes);
}

int64_t shardrt_group_index(uint32_t axes) {
  checkMask(axes, "shardrt_group_index");
  return linearIndex(axes, true);
}

int shardrt_debug_num_communicators(void) { return static_cast<int>(state.comms.size()); }

} // extern "C"
