/* The host side of the cpu backend's race detector (race.cpp): what the Rust runtime calls around
 * a race-checked launch (rocm-kernels/src/runtime/backend/cpu/race.rs mirrors these structs, and
 * the layout test in ffi.rs holds them to it through abi_layout.cpp). Kernels never include this.
 */
#ifndef RK_CPU_RACE_H
#define RK_CPU_RACE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A range of device memory the launch may reach (every live allocation of the device). */
typedef struct rk_race_range {
    uint64_t start;
    uint64_t len;
} rk_race_range;

/* Where racing accesses went (rk_race_report::space). */
enum rk_race_space {
    RK_RACE_GLOBAL = 1,      /* device memory: a buffer the device allocated */
    RK_RACE_SHARED = 2,      /* dynamic shared memory (extern __shared__) */
    RK_RACE_STATIC_SHARED = 3 /* a static __shared__ variable */
};

/* One of the two accesses of a race. */
typedef struct rk_race_access {
    uint32_t block[3];
    uint32_t thread[3];
    /* Return address into the instrumented kernel code: the access's place in the source. */
    uint64_t pc;
    uint32_t write;  /* 1 write, 0 read */
    uint32_t atomic; /* 1 atomic (or volatile) access */
} rk_race_access;

/* A race: `earlier` and `later` touched overlapping bytes at `address` (the first byte both
 * touched), at least one wrote and not both atomically, and nothing ordered them: the same block
 * with no barrier (or, for lanes of one wave, no collective) between them, or two blocks of one
 * launch. `count` races had this pair of places. */
typedef struct rk_race_report {
    uint64_t address;
    uint32_t space; /* rk_race_space */
    uint32_t count;
    /* Byte offset into dynamic shared memory (RK_RACE_SHARED), or into the worker's TLS block
     * (RK_RACE_STATIC_SHARED: the TLS symbols of the binary name the variable); 0 otherwise. */
    uint64_t offset;
    rk_race_access earlier;
    rk_race_access later;
} rk_race_report;

/* The next launch armed runs on the workers of `pool` (an rk_pool), `n` of them, each checking a
 * contiguous share of its blocks (race.cpp, "Parallel checking"); 1 (the default): all on one. */
void rk_race_set_workers(const void *pool, uint32_t n);
/* Called by worker `index` of `pool` as it starts on a launch of `blocks` blocks: binds the
 * worker to its share of the detector if this is the armed launch's pool. Returns 1 when the
 * worker must run blocks [*lo, *hi) only (in order), 0 when it takes blocks as usual. */
uint32_t rk_race_worker(const void *pool, uint32_t index, uint64_t blocks, uint64_t *lo, uint64_t *hi);
/* After a launch checked on several workers (`failed`: it faulted): 1 when it must be checked
 * again on one worker, because a worker found something, the workers' blocks met on some byte of
 * device memory, or it failed; device memory has then been put back as it was before the launch
 * and the detector disarmed without reports (arm it again with one worker and run the launch
 * again). 0: nothing was found and nothing could be missed; take the (empty) reports with
 * rk_race_end as usual. */
uint32_t rk_race_rerun(uint32_t failed);
/* Arm the detector for one launch (rk_race_set_workers: on how many workers): `ranges` are the device's allocations,
 * `wave_size` the launch's. Returns 0, or 1 when it is already armed (launches must not overlap). */
uint32_t rk_race_begin(const rk_race_range *ranges, uint32_t count, uint32_t wave_size);
/* Device buffers whose pages hold nothing else (checked allocations: each has its own pages, the
 * buffer 256-byte aligned inside them, guard pages around): an access to those pages outside its
 * range (the slack before its start or after its end) is an out-of-bounds access, which
 * rk_race_out_of_bounds reports. Call after rk_race_begin, for that launch. */
void rk_race_bound(const rk_race_range *ranges, uint32_t count);
/* The first out-of-bounds access of the launch armed last (rk_race_bound), in `out`: `address` its
 * first byte outside, `count` how many such accesses there were, `offset` its size in bytes,
 * `later` the access. Returns 1 if there was one, else 0 (and leaves `out` alone). */
uint32_t rk_race_out_of_bounds(rk_race_report *out);
/* Strict mode for the launches armed after it (nonzero): a plain read racing another thread's
 * atomic write is reported too (by default it is not: race.cpp says why). */
void rk_race_set_strict(uint32_t strict);
/* Whether the launches armed after it take summaries from the region form's lane loops
 * (rk_race_sum_add in detail/region.h; nonzero, the default) or check every access hooked. */
void rk_race_set_summaries(uint32_t on);
/* How many summaries the launch armed last took, and (in *replayed, 1 or 0) whether they were
 * replayed as hooked accesses (a conflict, or a hooked access to memory they covered). */
uint64_t rk_race_summary_stats(uint32_t *replayed);
/* Disarm it and take the races found: up to `max` distinct pairs of places into `out`; returns
 * how many were written, and the number of racing access pairs seen in all in *total. */
uint32_t rk_race_end(rk_race_report *out, uint32_t max, uint64_t *total);
/* Where linear thread `thread` of the last block the detector saw last called a barrier (a return
 * address into the kernel; 0 if none): names the barrier of a partial-barrier fault. */
uint64_t rk_race_barrier_pc(uint32_t thread);

#ifdef __cplusplus
}
#endif
#endif
