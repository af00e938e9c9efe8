/* driver.h - the `main` of a program that shardc compiles.
 *
 * shardc emits an object file whose `main` is one call:
 *
 *   int main(int argc, char **argv) {
 *     return shardrt_main(argc, argv, manifest_json, train_entry_or_NULL, eval_entry,
 *                         grad_entry, prefill_entry_or_NULL, decode_entry_or_NULL);
 *   }
 *
 * The manifest (JSON, format in runtime/README.md) names the mesh, the parameters with
 * their initialisers, the optimizer and its state, the inputs (fed from Fashion-MNIST or
 * filled with synthetic numbers) and the results of the entries, each tensor with its
 * global shape and how its dimensions are split over the mesh axes.
 *
 * Each entry receives one pointer per buffer, in this order:
 *
 *   train  params[P], state[S*P], inputs[I], step, then new params[P], new state[S*P],
 *          train results[R]  (the loss, then metrics: f32 scalars)
 *   eval   params[P], inputs[I], then eval results[E]
 *   grad   params[P], inputs[I], then the loss (f32 scalar), grads[P]
 *   prefill params[L], tokens, then logits, caches[C]
 *   decode  params[L], tokens, positions, caches[C], then logits, new caches[C]
 *
 * P counts the manifest's params (one per layer of a scanned parameter, or one stacked
 * entry under a pipeline); state is state-kind major (all parameters' adam mu, then all
 * their nu), each state tensor of its
 * parameter's shape and split, zero at the start; `step` is one float, the 1-based
 * number of the update being made. Every buffer is this rank's block of its tensor,
 * dense and row-major (float for f32, int32_t for i32), aligned to 64 bytes. Argument
 * buffers must not be written; the entry writes every result buffer completely. The
 * driver swaps the parameter and state buffers of train's arguments and results after
 * each step. `train` is NULL exactly when the model has no optimizer. L counts the
 * parameters the manifest's `prefill` and `decode` list (a stacked one once per layer:
 * the driver passes pointers to its layers' rows), C their caches; `prefill` and
 * `decode` are NULL exactly when it has neither (--generate then recomputes with eval).
 *
 * By default the driver trains: epochs over the dataset, an evaluation on the test set
 * after each, metrics as JSON lines, a JSON summary on stdout. `--forward` runs eval
 * once on filled inputs and prints its results; `--check-gradients` compares grad with
 * finite differences of its own loss. Run it with `--help` for the flags.
 *
 * Returns the process's exit status: 0 on success, 2 for a bad command line, 1 for any
 * other error (after `shardrt: error: ...` on stderr) or a failed gradient check.
 * Errors that every rank sees alike (flags, manifest, mesh size, dataset) are printed
 * once, by rank 0, and every rank returns; an error on some ranks only ends the job
 * with MPI_Abort.
 */
#ifndef SHARDRT_DRIVER_H
#define SHARDRT_DRIVER_H

#ifdef __cplusplus
extern "C" {
#endif

#pragma GCC visibility push(default)

typedef void (*shardrt_entry_fn)(void **buffers);

int shardrt_main(int argc, char **argv, const char *manifest_json, shardrt_entry_fn train,
                 shardrt_entry_fn eval, shardrt_entry_fn grad, shardrt_entry_fn prefill,
                 shardrt_entry_fn decode);

#pragma GCC visibility pop

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* SHARDRT_DRIVER_H */
