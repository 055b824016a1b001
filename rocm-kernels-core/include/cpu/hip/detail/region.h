/* Support for the region form of kernels (see rocm-kernels-build/src/cpu/region.rs).
 *
 * The build rewrites a kernel whose barriers and warp collectives sit in its own body into a
 * function that runs one *wave* of a block, the way a GPU runs it: the wave's lanes in lockstep
 * (the code between two barriers is a loop over the lanes), variables that live across a barrier
 * in one slot per lane, control flow that contains a barrier run once for the wave under a mask
 * of the lanes taking it, and warp collectives computed between two lane loops. The waves of a
 * block are the "threads" the cpu runtime runs (as a plain loop, then as fibers once one waits):
 * they switch only at real barriers, so a block of 256 threads at wave 64 costs 4 switches per
 * barrier instead of 256, and the waves of a block still interleave only at barriers, as on a GPU
 * (a missing barrier between waves still shows).
 *
 * Lane slots and masks come from the wave's own part of the worker's arena, released in scopes;
 * static __shared__ arrays from the block's part, the same for every wave of the block. */
#ifndef RK_CPU_REGION_H
#define RK_CPU_REGION_H

#include <new>

/* Region-form functions inline everything they call: a lane loop with the kernel body inside,
 * which the compiler can then optimise across lanes. (Also compiling them for AVX2 with
 * target_clones was measured: no kernel of the benchmark got vectorised by it, since GCC does
 * not if-convert the bounds-checked loads and stores kernels are made of, and the tiled
 * transpose got 20% slower; so one plain x86-64 version.) */
#define RK_REGION_FN __attribute__((flatten))

/* The race variant of a region form (compiled with -fsanitize=thread, rocm-cpu-frontend's
 * race.rs) tells the race detector (rocm-kernels' cpu-runtime/race.cpp) what a per-thread run
 * tells it through rk_race_syncthreads and rk_race_warp_op: which lanes of a wave reach a barrier
 * (before it, `leaving` 0: where; after it, 1: they passed it) and which take part in a
 * collective (`count` of them). `act` null: all `n` lanes from linear thread `base`. */
#ifdef __SANITIZE_THREAD__
extern "C" void rk_race_wave_barrier(uint32_t base, uint32_t n, const uint8_t *act, uint32_t leaving);
extern "C" void rk_race_wave_collective(uint32_t base, uint32_t n, const uint8_t *act, uint32_t count);
/* Summaries (race.cpp): before a lane loop whose accesses the region form can describe (subscripts
 * affine in the lane, under conditions that read no memory), it tells the detector each run of
 * lanes' accesses at each place (rk_race_sum_add: `n` lanes from linear thread `tid0`, lane j at
 * a_lo + (a_next - a_lo) j, `size_flags` the bytes and 1 << 16 for a write), then commits them
 * and runs the loop uninstrumented (RK_SUMMARY_FN); any 0 returned: the loop runs hooked. */
extern "C" uint32_t rk_race_sum_on(void);
extern "C" uint32_t rk_race_sum_add(uint64_t size_flags, uintptr_t a_lo, uintptr_t a_next, uintptr_t a_last,
                                    uint32_t n, uint32_t tid0);
extern "C" void rk_race_sum_abort(void);
extern "C" uint32_t rk_race_sum_commit(void);
namespace rk {
/* The first lane from `j` on whose byte in `g` (0 or 1 per lane) is `want`, or `n`: eight lanes a
 * step where they are alike (the summaries' runs of lanes, per condition). */
__attribute__((always_inline)) inline uint32_t sum_skip(const uint8_t *g, uint32_t j, uint32_t n, uint8_t want) {
    const uint64_t all = want ? 0x0101010101010101ull : 0;
    while (j + 8 <= n) {
        uint64_t w;
        std::memcpy(&w, g + j, 8);
        if (w != all) break;
        j += 8;
    }
    while (j < n && g[j] == want) ++j;
    return j;
}
}  // namespace rk
#if defined(__clang__)
#define RK_SUMMARY_FN __attribute__((no_sanitize("thread")))
#else
/* GCC: also the optimisation of plain code (the race variant is built at -O1), keeping the
 * build's -fno-strict-aliasing. */
#define RK_SUMMARY_FN __attribute__((no_sanitize("thread"), optimize("O3", "no-strict-aliasing")))
#endif
#endif

namespace rk {

/* Lane states: running, returned from the kernel, or left the enclosing loop number d (counted
 * from the outermost loop that contains a barrier) through `break` or `continue`. */
enum : uint8_t { LANE_RUN = 0, LANE_RETURNED = 1 };
inline uint8_t lane_broke(unsigned d) { return static_cast<uint8_t>(2 + 2 * d); }
inline uint8_t lane_continued(unsigned d) { return static_cast<uint8_t>(3 + 2 * d); }

/* The arena (rk_cur.arena_cur .. arena_end, reset per block): the block's static __shared__
 * arrays first, then one segment per wave. */
constexpr std::size_t SHARED_BYTES = std::size_t(1) << 20;
constexpr std::size_t MAX_WAVES = 32;

[[noreturn]] inline void storage_exhausted() {
    rk_block_fail(RK_FAULT,
                  "the kernel's per-thread variables or __shared__ arrays need more than the cpu "
                  "backend's region storage; run it with fibers (CpuOptions::exec = "
                  "CpuExec::Fibers or ROCM_CPU_EXEC=fibers)");
}

/* Helpers the lane code calls are inlined always in the race variant: it runs lane loops that
 * touch lane storage alone uninstrumented (RK_SUMMARY_FN), and only an always-inline function is
 * inlined into them from the instrumented unit (compiled without the instrumentation there).
 * Plain code leaves the choice to the compiler (forced, the shuffle reduction in a helper
 * measured 10% slower). */
#ifdef __SANITIZE_THREAD__
#define RK_LANE_INLINE __attribute__((always_inline))
#else
#define RK_LANE_INLINE
#endif
template <class T>
RK_LANE_INLINE inline uint64_t bits(const T &v) {
    static_assert(sizeof(T) <= 8 && std::is_trivially_copyable<T>::value,
                  "warp shuffles move values of at most 8 bytes");
    uint64_t b = 0;
    std::memcpy(&b, &v, sizeof(T));
    return b;
}

template <class T>
RK_LANE_INLINE inline T from_bits(uint64_t b) {
    T out;
    std::memcpy(&out, &b, sizeof(T));
    return out;
}

/* The type of a slot holding a copy of a parameter the kernel modifies: the parameter's type
 * without its qualifiers, __restrict__ included (std::remove_cv keeps that one, and a slot of
 * type `float *__restrict__` cannot be formed as raw storage). */
template <class T>
struct unrestrict { using type = T; };
template <class T>
struct unrestrict<T *__restrict__> { using type = T *; };
template <class T>
using slot_of_t = typename unrestrict<std::remove_cv_t<T>>::type;

/* What a declaration without initializer does to a variable in a lane slot (raw storage):
 * nothing for types without a default constructor of their own, which C++ leaves
 * indeterminate, else run it (default member initialisers). */
template <class T>
inline void default_init(T &x) {
    if constexpr (std::is_array<T>::value) {
        for (auto &e : x) default_init(e);
    } else if constexpr (!std::is_trivially_default_constructible<T>::value) {
        ::new (static_cast<void *>(&x)) T;
    }
}

/* One wave of a block being run in region form. */
struct region {
    rk_uint3 dim;
    uint32_t nblock; /* threads in the block */
    uint32_t waves;  /* waves in the block */
    uint32_t wave, base, n, ws, nw;
    rk_uint3 vidx; /* the wave's coordinates as a runtime "thread" */
    /* Lane loops: `rows` runs of `cols` lanes; mode 0: one run inside one row of the block
     * (x from x0), 1: whole rows of the block (from row0), 2: coordinates from the table. */
    uint32_t rows, cols, mode, x0, row0;
    uint8_t *act; /* lanes executing the current code */
    uint8_t *st;  /* lane states (LANE_RUN, ...) */
    const rk_uint3 *idx;
    char *cur, *end;     /* the wave's arena segment */
    std::size_t shared_off;
    bool publish, reverse;
    bool whole; /* all waves of the block in this call (their lanes in one loop) */

    /* `whole`: a kernel without barriers or collectives runs its whole block in one call (its
     * waves have nothing to interleave at). */
    region(bool masks, bool whole) {
        /* Once per block (per wave): a kernel of short blocks pays this as often as its lane
         * loops, so no divisions on the common paths. The wave size is a power of two (the
         * runtime accepts 32 and 64). */
        dim = rk_cur.block_dim;
        const uint32_t rows_yz = dim.y * dim.z;
        nblock = dim.x * rows_yz;
        ws = rk_cur.wave_size;
        const uint32_t lg = static_cast<uint32_t>(__builtin_ctz(ws));
        waves = (nblock + ws - 1) >> lg;
        vidx = rk_cur.thread_idx;
        wave = whole ? 0 : vidx.x + dim.x * (vidx.y + dim.y * vidx.z);
        base = wave << lg;
        n = whole ? nblock : base + ws < nblock ? ws : nblock - base;
        nw = (n + ws - 1) >> lg;
        this->whole = whole;
        idx = rk_cur.idx_table;
        if (rows_yz == 1) {
            mode = 0, rows = 1, cols = n, x0 = base, row0 = 0;
        } else if (whole) {
            mode = 1, rows = rows_yz, cols = dim.x, x0 = 0, row0 = 0;
        } else if ((dim.x & (ws - 1)) == 0) {
            mode = 0, rows = 1, cols = n, x0 = base % dim.x, row0 = base / dim.x;
        } else if (ws % dim.x == 0) {
            mode = 1, rows = n / dim.x, cols = dim.x, x0 = 0, row0 = base / dim.x;
        } else {
            /* Coordinates from the table, one lane per run. */
            mode = 2, rows = n, cols = 1, x0 = 0, row0 = 0;
        }
        const std::size_t seg = (std::size_t(rk_cur.arena_end - rk_cur.arena_cur) - SHARED_BYTES) / MAX_WAVES;
        if (wave >= MAX_WAVES) storage_exhausted();
        cur = rk_cur.arena_cur + SHARED_BYTES + wave * seg;
        end = cur + seg;
        shared_off = 0;
        act = st = nullptr;
        if (masks) {
            act = bytes();
            st = bytes();
            std::memset(act, 1, n);
            std::memset(st, LANE_RUN, n);
        }
        publish = rk_cur.checked != 0 || rk_cur.thread_order != 0;
#ifdef __SANITIZE_THREAD__
        /* The race detector takes each access's thread from rk_cur. */
        publish = true;
#endif
        reverse = rk_cur.thread_order != 0;
    }
    region(const region &) = delete;
    region &operator=(const region &) = delete;

    char *take(std::size_t bytes, std::size_t align) {
        uintptr_t p = (reinterpret_cast<uintptr_t>(cur) + align - 1) & ~uintptr_t(align - 1);
        char *e = reinterpret_cast<char *>(p + bytes);
        if (__builtin_expect(e > end, 0)) storage_exhausted();
        cur = e;
        return reinterpret_cast<char *>(p);
    }
    uint8_t *bytes() { return reinterpret_cast<uint8_t *>(take(n, 16)); }

    /* One slot per lane for a variable of type T: raw storage, where the lane code constructs
     * the variable when its declaration runs (see rk::default_init). Never destroyed. */
    template <class T>
    T *alloc() {
        static_assert(std::is_trivially_destructible<T>::value,
                      "a variable living across a barrier must be trivially destructible in the "
                      "cpu backend's region form");
        return reinterpret_cast<T *>(take(sizeof(T) * n, alignof(T) < 16 ? 16 : alignof(T)));
    }
    /* Lane slots for collective operands, with two words (ballot, active mask) after them. */
    uint64_t *xbuf() { return reinterpret_cast<uint64_t *>(take(8 * (n + 2 * nw), 16)); }

    /* A static __shared__ variable: the block's, the same in every wave (they all declare the
     * block's shared variables in the same order). Uninitialised, like on a GPU. */
    template <class T>
    T &shared() {
        static_assert(std::is_trivially_destructible<T>::value, "__shared__ variables are trivially destructible");
        std::size_t at = (shared_off + 63) & ~std::size_t(63);
        if (at + sizeof(T) > SHARED_BYTES) storage_exhausted();
        shared_off = at + sizeof(T);
        return *reinterpret_cast<T *>(rk_cur.arena_cur + at);
    }

    /* ---- lanes ---- */
    /* Position (i, j) of the lane loop, in reverse when the launch asks for it (race checking
     * compares the two; only the publishing variant P does it). */
    template <bool P>
    __attribute__((always_inline)) uint32_t run_of(uint32_t i) const {
        return P && reverse ? rows - 1 - i : i;
    }
    template <bool P>
    __attribute__((always_inline)) uint32_t step_of(uint32_t j) const {
        return P && reverse ? cols - 1 - j : j;
    }
    /* threadIdx of the first lane of run i: a run's lanes differ only in x (x + j). */
    __attribute__((always_inline)) rk_uint3 run_coords(uint32_t i) const {
        if (mode == 2) return idx[base + i];
        const uint32_t row = row0 + i;
        /* 2-D blocks: no division. */
        if (row < dim.y) return rk_uint3{x0, row, 0};
        return rk_uint3{x0, row % dim.y, row / dim.y};
    }
    /* Make lane l the current thread. P (checked launches and reversed order): store its
     * coordinates in rk_cur ahead of the lane's memory accesses, so a fault names the right
     * thread. Otherwise only when functions the kernel calls read them (TLS), and the compiler
     * may optimise across lanes (vectorise a loop over them). */
    template <bool P, bool TLS>
    __attribute__((always_inline)) void lane(const rk_uint3 &i) {
        if (P || TLS) {
#ifdef __SANITIZE_THREAD__
            RK_RAW_SET(rk_cur.thread_idx.x, i.x);
            RK_RAW_SET(rk_cur.thread_idx.y, i.y);
            RK_RAW_SET(rk_cur.thread_idx.z, i.z);
#else
            rk_cur.thread_idx = i;
#endif
        }
        if (P) RK_PUBLISH_THREAD_IDX();
    }

    /* ---- masks ---- */
    uint8_t *save() {
        uint8_t *m = bytes();
        std::memcpy(m, act, n);
        return m;
    }
    bool any() const {
        for (uint32_t t = 0; t < n; ++t)
            if (RK_RAW(act[t])) return true;
        return false;
    }
    /* Lanes of `m` whose condition `c` equals `want`. */
    void take_branch(const uint8_t *m, const uint8_t *c, uint8_t want) {
        for (uint32_t t = 0; t < n; ++t)
            RK_RAW_SET(act[t], uint8_t(RK_RAW(m[t]) && RK_RAW(c[t]) == want && RK_RAW(st[t]) == LANE_RUN));
    }
    void restore(const uint8_t *m) {
        for (uint32_t t = 0; t < n; ++t) RK_RAW_SET(act[t], uint8_t(RK_RAW(m[t]) && RK_RAW(st[t]) == LANE_RUN));
    }
    void keep_if(const uint8_t *c) {
        for (uint32_t t = 0; t < n; ++t) RK_RAW_SET(act[t], uint8_t(RK_RAW(act[t]) && RK_RAW(c[t])));
    }
    void end_iteration(const uint8_t *it, unsigned d) {
        const uint8_t c = lane_continued(d);
        for (uint32_t t = 0; t < n; ++t) {
            if (RK_RAW(st[t]) == c) RK_RAW_SET(st[t], uint8_t(LANE_RUN));
            RK_RAW_SET(act[t], uint8_t(RK_RAW(it[t]) && RK_RAW(st[t]) == LANE_RUN));
        }
    }
    void end_loop(const uint8_t *m, unsigned d) {
        const uint8_t b = lane_broke(d);
        for (uint32_t t = 0; t < n; ++t) {
            if (RK_RAW(st[t]) == b) RK_RAW_SET(st[t], uint8_t(LANE_RUN));
            RK_RAW_SET(act[t], uint8_t(RK_RAW(m[t]) && RK_RAW(st[t]) == LANE_RUN));
        }
    }
    void ret(uint32_t t) {
        RK_RAW_SET(st[t], uint8_t(LANE_RETURNED));
        RK_RAW_SET(act[t], uint8_t(0));
    }
    void brk(uint32_t t, unsigned d) {
        RK_RAW_SET(st[t], lane_broke(d));
        RK_RAW_SET(act[t], uint8_t(0));
    }
    void cont(uint32_t t, unsigned d) {
        RK_RAW_SET(st[t], lane_continued(d));
        RK_RAW_SET(act[t], uint8_t(0));
    }

    /* ---- barriers ---- */
    /* The wave reaches barrier `site` with `active` lanes there, `returned` lanes returned and
     * `skipped` lanes elsewhere (divergent control flow). A GPU would hang or misbehave unless
     * every thread of the block is there: the runtime checks it across waves (and that they
     * wait at the same barrier) and reports it, naming the threads. Returns the block's sum of
     * `value` (__syncthreads_count). */
    uint32_t sync(uint32_t site, uint32_t active, uint32_t returned, uint32_t skipped,
                  uint32_t first_active, uint32_t first_off, uint32_t value) {
#ifdef __SANITIZE_THREAD__
        /* The lanes at the barrier: all of the wave's, or the active ones. */
        const uint8_t *at = active == n ? nullptr : act;
        rk_race_wave_barrier(base, n, at, 0);
        const uint32_t r = wait(site, active, returned, skipped, first_active, first_off, value);
        rk_race_wave_barrier(base, n, at, 1);
        return r;
    }
    uint32_t wait(uint32_t site, uint32_t active, uint32_t returned, uint32_t skipped,
                  uint32_t first_active, uint32_t first_off, uint32_t value) {
#endif
        rk_region_wait w{};
        w.site = site;
        w.active = active;
        w.returned = returned;
        w.skipped = skipped;
        w.first_active = first_active;
        w.first_off = first_off;
        w.value = value;
        if (whole || waves == 1) {
            /* Every wave of the block is here: check locally. */
            if ((!returned && !skipped) || !active) return value;
            rk_region_fail(&w);
        }
        /* The runtime knows this wave as the thread at vidx. */
        rk_cur.thread_idx = vidx;
        return rk_region_barrier(&w);
    }
    /* Every lane of the wave is known to be here (nothing masked, nobody returned). */
    uint32_t barrier_full(uint32_t site, uint32_t value = 0) {
        return sync(site, n, 0, 0, base, base, value);
    }
    uint32_t barrier(uint32_t site, uint32_t value = 0) {
        uint32_t returned = 0, skipped = 0, active = 0;
        uint32_t first_returned = n, first_skipped = n, first_active = n;
        for (uint32_t t = 0; t < n; ++t) {
            if (RK_RAW(act[t])) {
                if (!active++) first_active = t;
            } else if (RK_RAW(st[t]) == LANE_RETURNED) {
                if (!returned++) first_returned = t;
            } else if (!skipped++) {
                first_skipped = t;
            }
        }
        const uint32_t first_off = base + (first_skipped < first_returned ? first_skipped : first_returned);
        return sync(site, active, returned, skipped, base + first_active, first_off, value);
    }
    /* __syncthreads_count over the active lanes' predicates in x. */
    uint32_t count(const uint64_t *x) const {
        uint32_t c = 0;
        for (uint32_t t = 0; t < n; ++t) c += (!act || RK_RAW(act[t])) && RK_RAW(x[t]);
        return c;
    }

    /* ---- warp collectives: lanes grouped by wave (one wave, or all of the block's) ---- */
    /* The active lanes took part in a collective (the generated code calls this between the
     * operand and result loops; it counts for the race variant only, as `count` collectives). */
    void collective(uint32_t count) const {
#ifdef __SANITIZE_THREAD__
        rk_race_wave_collective(base, n, act, count);
#else
        (void)count;
#endif
    }
    /* The first lane of lane t's wave (ws is a power of two), and the end of that wave's lanes. */
    __attribute__((always_inline)) uint32_t wave_begin(uint32_t t) const { return t & ~(ws - 1); }
    __attribute__((always_inline)) uint32_t wave_end(uint32_t b) const { return b + ws < n ? b + ws : n; }
    /* Where reduce() keeps the ballot (and, after it, the active mask) of lane t's wave. */
    __attribute__((always_inline)) uint32_t wave_words(uint32_t t) const {
        return n + 2 * (wave_begin(t) >> __builtin_ctz(ws));
    }
    /* Per wave: the ballot of x over active lanes and the active mask, after the lanes. */
    void reduce(uint64_t *x) const {
        for (uint32_t b = 0; b < n; b += ws) {
            uint64_t ballot = 0, active = 0;
            const uint32_t e = wave_end(b);
            for (uint32_t t = b; t < e; ++t) {
                if (act && !RK_RAW(act[t])) continue;
                active |= uint64_t(1) << (t - b);
                if (RK_RAW(x[t])) ballot |= uint64_t(1) << (t - b);
            }
            RK_RAW_SET(x[wave_words(b)], ballot);
            RK_RAW_SET(x[wave_words(b) + 1], active);
        }
    }
    RK_LANE_INLINE uint64_t ballot(const uint64_t *x, uint32_t t) const { return RK_RAW(x[wave_words(t)]); }
    RK_LANE_INLINE int all(const uint64_t *x, uint32_t t) const { return RK_RAW(x[wave_words(t)]) == RK_RAW(x[wave_words(t) + 1]); }
    RK_LANE_INLINE uint64_t activemask(uint32_t t) const {
        const uint32_t b = wave_begin(t), e = wave_end(b);
        uint64_t m = 0;
        for (uint32_t l = b; l < e; ++l)
            if (!act || RK_RAW(act[l])) m |= uint64_t(1) << (l - b);
        return m;
    }
    /* Lane t's position in its wave (the lanes of a call start at a wave's first lane). */
    __attribute__((always_inline)) uint32_t lane_in_wave(uint32_t t) const { return (base + t) & (ws - 1); }
    /* The value of the first active lane of lane t's wave (readfirstlane), after reduce(x). */
    template <class T>
    RK_LANE_INLINE T first_active(const uint64_t *x, uint32_t t) const {
        const uint64_t active = RK_RAW(x[wave_words(t) + 1]);
        return from_bits<T>(RK_RAW(x[wave_begin(t) + (active ? __builtin_ctzll(active) : t - wave_begin(t))]));
    }
    /* Cooperative groups' reduce over lane t's tile of `width` lanes: the butterfly of
     * `v = op(v, shfl_xor(v, o, width))` for o = 1, 2, 4... that the header runs on fibers, with
     * the same results (a partner outside the wave or not taking part gives a lane its own
     * value). The first lane of a tile the result loop reaches computes the whole tile into x;
     * `done` marks it. */
    template <class T, class Op>
    T tile_reduce(uint64_t *x, uint8_t *done, uint32_t t, int width, Op op) const {
        if (width <= 0 || width > static_cast<int>(ws) || (width & (width - 1))) width = static_cast<int>(ws);
        const uint32_t w = static_cast<uint32_t>(width);
        const uint32_t b = wave_begin(t), e = wave_end(b);
        const uint32_t first = b + ((t - b) & ~(w - 1));
        if (!RK_RAW(done[first])) {
            RK_RAW_SET(done[first], uint8_t(1));
            const uint32_t last = first + w < e ? first + w : e;
            uint64_t cur[64], next[64];
            for (uint32_t l = first; l < last; ++l) cur[l - first] = RK_RAW(x[l]);
            for (uint32_t o = 1; o < w; o <<= 1) {
                for (uint32_t l = first; l < last; ++l) {
                    next[l - first] = cur[l - first];
                    if (act && !RK_RAW(act[l])) continue;
                    uint32_t from = ((l - first) ^ o) + first;
                    if (from >= last || (act && !RK_RAW(act[from]))) from = l;
                    next[l - first] = bits(static_cast<T>(op(from_bits<T>(cur[l - first]), from_bits<T>(cur[from - first]))));
                }
                for (uint32_t l = first; l < last; ++l) cur[l - first] = next[l - first];
            }
            for (uint32_t l = first; l < last; ++l) RK_RAW_SET(x[l], cur[l - first]);
        }
        return from_bits<T>(RK_RAW(x[t]));
    }
    /* The value lane t reads in a shuffle, as the fiber runtime resolves it (rk_warp_op): a
     * source lane outside the wave, the segment or not taking part gives the lane its own.
     * FULL: every lane of the wave takes part (the generated code runs it where nothing is
     * masked and no lane returned), so the active mask need not be read. */
    template <class T, bool FULL = false>
    RK_LANE_INLINE T shfl(const uint64_t *x, uint32_t t, int op, int arg, int width) const {
        const uint32_t b = wave_begin(t);
        const uint32_t lane = t - b;
        const uint32_t e = wave_end(b);
        if (width <= 0 || width > static_cast<int>(ws) || (width & (width - 1))) width = static_cast<int>(ws);
        const uint32_t seg = lane & ~uint32_t(width - 1);
        const uint32_t in_seg = lane & uint32_t(width - 1);
        int64_t src = lane;
        switch (op) {
            case RK_WARP_SHFL: src = seg + (uint32_t(arg) & uint32_t(width - 1)); break;
            case RK_WARP_SHFL_UP: src = in_seg >= uint32_t(arg) ? int64_t(lane) - arg : int64_t(lane); break;
            case RK_WARP_SHFL_DOWN:
                src = in_seg + uint32_t(arg) < uint32_t(width) ? int64_t(lane) + arg : int64_t(lane);
                break;
            case RK_WARP_SHFL_XOR: {
                const uint32_t x2 = lane ^ uint32_t(arg);
                src = x2 >= seg + uint32_t(width) ? lane : x2;
                break;
            }
            default: break;
        }
        uint32_t from = static_cast<uint32_t>(src);
        if (src < 0 || from >= ws || b + from >= e || (!FULL && act && !RK_RAW(act[b + from]))) from = lane;
        return from_bits<T>(RK_RAW(x[b + from]));
    }
};

/* The split lane loop (RK_RUN_SPAN): narrow the lanes [lo, hi) of a run to those where
 * `x OP r` holds, x being an `int` lane variable worth x0 + j in lane j (no overflow: the caller
 * checked x0 + cols - 1 <= INT_MAX) and r the same in every lane of the run. Exact only for a
 * signed comparison of integers (x converted to the common type keeps its value): false for any
 * other type, and the caller keeps the lane loop with its test. */
enum { SPLIT_LT, SPLIT_LE, SPLIT_GT, SPLIT_GE };
template <int OP, class R>
RK_LANE_INLINE inline bool split_cmp(long long &lo, long long &hi, int x0, const R &r) {
    using C = decltype(x0 + r);
    if constexpr (std::is_integral<R>::value && std::is_integral<C>::value && std::is_signed<C>::value) {
        /* x0 + j OP r  <=>  j OP d */
        const __int128 d = static_cast<__int128>(static_cast<C>(r)) - x0;
        __int128 l = lo, h = hi;
        if (OP == SPLIT_LT) h = d < h ? d : h;
        else if (OP == SPLIT_LE) h = d + 1 < h ? d + 1 : h;
        else if (OP == SPLIT_GT) l = d + 1 > l ? d + 1 : l;
        else l = d > l ? d : l;
        if (h < l) h = l;
        lo = static_cast<long long>(l);
        hi = static_cast<long long>(h);
        return true;
    } else {
        (void)lo, (void)hi, (void)x0, (void)r;
        return false;
    }
}

/* Releases what a block of generated code took from the wave's arena segment. */
struct scope {
    region &r;
    char *mark;
    explicit scope(region &r_) : r(r_), mark(r_.cur) {}
    ~scope() { r.cur = mark; }
    scope(const scope &) = delete;
    scope &operator=(const scope &) = delete;
};

}  // namespace rk

/* Loops over the lanes of the wave: `rk_t` is the lane (0 .. wave size), `rk_tidx` its
 * threadIdx. Runs of lanes along x are inner loops with affine coordinates (streamed through
 * memory; GCC does not vectorise their bounds-checked stores). RK_ALL_LANES is for code every lane runs (nothing masked, nobody returned);
 * RK_LANES skips inactive lanes. */
/* Lane loops unrolled four times: the generated code sets RK_LANE_UNROLL to RK_UNROLL_4 before
 * the block functions of kernels indexed by threadIdx.x alone (region.rs), where it saves a
 * third of the loop overhead of scalar lane loops (saxpy 7.5 -> 6.4 ms, the block and warp
 * reductions 15%); for 2-D blocks (the tiled transpose) it measured 60% slower. */
#if defined(__clang__)
#define RK_UNROLL_4 _Pragma("clang loop unroll_count(4)")
#elif defined(__GNUC__)
#define RK_UNROLL_4 _Pragma("GCC unroll 4")
#else
#define RK_UNROLL_4
#endif
#define RK_LANE_UNROLL
/* What the generated code calls after a collective's operand loop (rk::region::collective): the
 * race variant's only; nothing at all in plain code. */
#ifdef __SANITIZE_THREAD__
#define RK_COLLECTIVE(r, count) (r).collective(count)
#else
#define RK_COLLECTIVE(r, count) (void)0
#endif
/* The runs of a lane loop (RK_RUNS: rk_i, and rk_run, the coordinates of the run's first lane)
 * and the lanes of one run (RK_RUN_LANES: rk_j, rk_t and rk_tidx). Split so that the region form
 * can put code between them (see RK_RUN_SPAN). */
#define RK_RUNS(r)                                                                               \
    for (uint32_t rk_ii = 0; rk_ii < (r).rows; ++rk_ii)                                          \
        if (const uint32_t rk_i = (r).template run_of<rk_pub>(rk_ii); false) {                   \
        } else if (const rk_uint3 rk_run = (r).run_coords(rk_i); false) {                        \
        } else
#define RK_RUN_LANES(r)                                                                          \
    RK_LANE_UNROLL for (uint32_t rk_jj = 0; rk_jj < (r).cols; ++rk_jj)                           \
        if (const uint32_t rk_j = (r).template step_of<rk_pub>(rk_jj),                           \
            rk_t = rk_i * (r).cols + rk_j;                                                       \
            false) {                                                                             \
        } else if (const rk_uint3 rk_tidx{rk_run.x + rk_j, rk_run.y, rk_run.z}; false) {          \
        } else
/* Lanes [lo, hi) of the current run, in order, with an `int` counter rk_jn: the region form's
 * split lane loop (codegen/split.rs), where a bounds check affine in the lane was taken out of
 * the loop and the lane's `int` indices are rk_jn plus a value of the run, so that the compiler
 * sees affine indices and can vectorise. Only in the variant that does not publish (lanes in
 * order). */
#define RK_RUN_SPAN(r, lo, hi)                                                                   \
    for (int rk_jn = (lo); rk_jn < (hi); ++rk_jn)                                                \
        if (const uint32_t rk_j = static_cast<uint32_t>(rk_jn), rk_t = rk_i * (r).cols + rk_j;   \
            false) {                                                                             \
        } else if (const rk_uint3 rk_tidx{rk_run.x + rk_j, rk_run.y, rk_run.z}; false) {          \
        } else
#define RK_LANES_ALONG(r) RK_RUNS(r) RK_RUN_LANES(r)
#define RK_ALL_LANES(r) RK_LANES_ALONG(r)
#define RK_LANES(r) RK_LANES_ALONG(r) if (!RK_RAW((r).act[rk_t])) continue; else

#endif
