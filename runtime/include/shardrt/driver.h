/* driver.h - the `main` of a program that shardc compiles.
 *
 * shardc emits an object file whose `main` is one call:
 *
 *   int main(int argc, char **argv) {
 *     return shardrt_main(argc, argv, manifest_json, entry);
 *   }
 *
 * The manifest (JSON, format in runtime/README.md) names the mesh, the program's
 * arguments (parameters with their initialisers, inputs with their synthetic fills) and
 * its results, each with its global shape and how its dimensions are split over the
 * mesh axes. The driver parses the command line and the manifest, sets the mesh up,
 * allocates and fills this rank's block of every argument, calls `entry` once, gathers
 * the results to rank 0 and writes them as JSON. Run it with `--help` for the flags.
 *
 * `entry` receives one pointer per buffer, the arguments in manifest order and then the
 * results in manifest order; each points to this rank's block of the tensor, dense and
 * row-major (float for f32, int32_t for i32), aligned to 64 bytes. Arguments must not
 * be written; results start zeroed.
 *
 * Returns the process's exit status: 0 on success, 2 for a bad command line, 1 for any
 * other error (after `shardrt: error: ...` on stderr). Errors that every rank sees
 * alike (flags, manifest, mesh size) are printed once, by rank 0, and every rank
 * returns; an error on some ranks only ends the job with MPI_Abort.
 */
#ifndef SHARDRT_DRIVER_H
#define SHARDRT_DRIVER_H

#ifdef __cplusplus
extern "C" {
#endif

#pragma GCC visibility push(default)

typedef void (*shardrt_entry_fn)(void **buffers);

int shardrt_main(int argc, char **argv, const char *manifest_json, shardrt_entry_fn entry);

#pragma GCC visibility pop

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* SHARDRT_DRIVER_H */
