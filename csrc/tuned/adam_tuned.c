/* tuned/adam_tuned.c — the Adam / AdamW step (csrc/adam.c) at the speed of its memory.
 *
 * The reference's loop (adam_update.h) compiled once per ISA level, so that GCC vectorizes it
 * with that level's registers: at baseline x86-64 the square root and division of every
 * element, 4 floats at a time, made the update compute-bound. Every operation is the same
 * IEEE operation on the same values in the same order (no FMA contraction), so the results
 * are the reference's bit for bit. Compiled once per ISA level and element type (each_isa.h);
 * this file is its own body.
 */
#ifndef ISA
/* Contracting a * b + c into one FMA would round once where PyTorch rounds twice. */
#pragma GCC optimize("fp-contract=off")
#include <math.h>
#include "mt_internal.h"
#define MT_BODY "tuned/adam_tuned.c"
#include "each_isa.h"
#else
#define ADAM_NAME(name) V(tuned_##name)
#include "../adam_update.h"
#undef ADAM_NAME
#endif
