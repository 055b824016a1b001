/* Support for the barrier-region form of kernels (see rocm-kernels/src/build/cpu/region.rs).
 *
 * The build rewrites a kernel whose barriers and warp collectives sit in its own body into one
 * function per block: the code between two barriers runs as a loop over the block's threads
 * ("lanes"), variables that live across a barrier get one slot per lane, and control flow that
 * contains a barrier runs once for the block with a mask of the lanes taking it, as a GPU runs a
 * wave under an execution mask. No fiber switches happen at all; a barrier is only a check that
 * every live lane reached it.
 *
 * Storage for lane slots and masks comes from a per-worker arena (rk_cur.arena_cur/arena_end),
 * released in scopes, so a block needs no heap allocation. */
#ifndef RK_CPU_REGION_H
#define RK_CPU_REGION_H

namespace rk {

/* Lane states: running, returned from the kernel, or left the enclosing loop number d (counted
 * from the outermost loop that contains a barrier) through `break` or `continue`. */
enum : uint8_t { LANE_RUN = 0, LANE_RETURNED = 1 };
inline uint8_t lane_broke(unsigned d) { return static_cast<uint8_t>(2 + 2 * d); }
inline uint8_t lane_continued(unsigned d) { return static_cast<uint8_t>(3 + 2 * d); }

inline char *arena_take(std::size_t bytes, std::size_t align) {
    uintptr_t p = (reinterpret_cast<uintptr_t>(rk_cur.arena_cur) + align - 1) & ~uintptr_t(align - 1);
    char *end = reinterpret_cast<char *>(p + bytes);
    if (__builtin_expect(end > rk_cur.arena_end, 0))
        rk_block_fail(RK_FAULT,
                      "the kernel's per-thread variables need more than the cpu backend's region "
                      "storage (64 MiB per worker); run it with fibers (CpuOptions::exec = "
                      "CpuExec::Fibers or ROCM_CPU_EXEC=fibers)");
    rk_cur.arena_cur = end;
    return reinterpret_cast<char *>(p);
}

/* A static __shared__ variable of a region-form block: uninitialised, like on a GPU. */
template <class T>
inline T &shared_slot() {
    static_assert(std::is_trivially_destructible<T>::value, "__shared__ variables are trivially destructible");
    return *reinterpret_cast<T *>(arena_take(sizeof(T), 64));
}

/* Releases what a block of generated code took from the arena. */
struct scope {
    char *mark;
    scope() : mark(rk_cur.arena_cur) {}
    ~scope() { rk_cur.arena_cur = mark; }
    scope(const scope &) = delete;
    scope &operator=(const scope &) = delete;
};

template <class T>
inline uint64_t bits(const T &v) {
    static_assert(sizeof(T) <= 8 && std::is_trivially_copyable<T>::value,
                  "warp shuffles move values of at most 8 bytes");
    uint64_t b = 0;
    std::memcpy(&b, &v, sizeof(T));
    return b;
}

template <class T>
inline T from_bits(uint64_t b) {
    T out;
    std::memcpy(&out, &b, sizeof(T));
    return out;
}

/* One block being run in region form. */
struct region {
    scope mem;
    uint32_t n, ws, nw;
    uint8_t *act;  /* lanes executing the current code */
    uint8_t *st;   /* lane states (LANE_RUN, ...) */
    rk_uint3 *idx; /* threadIdx per lane for 2-D/3-D blocks, else null */
    uint32_t first, step;
    bool publish;

    /* `masks`: the generated code tracks which lanes are active (it has control flow around
     * barriers, returns, collectives); code where every lane always runs needs none. */
    explicit region(bool masks) {
        const rk_uint3 d = rk_cur.block_dim;
        n = d.x * d.y * d.z;
        ws = rk_cur.wave_size;
        nw = (n + ws - 1) / ws;
        act = st = nullptr;
        if (masks) {
            act = bytes();
            st = bytes();
            std::memset(act, 1, n);
            std::memset(st, LANE_RUN, n);
        }
        /* The runtime keeps each launch's table of thread coordinates (2-D and 3-D blocks). */
        idx = rk_cur.idx_table;
        rk_cur.thread_idx = rk_uint3{0, 0, 0};
        /* Lanes run in order, or last to first when the launch asks for the reverse order
         * (race checking compares the two). */
        publish = rk_cur.checked != 0 || rk_cur.thread_order != 0;
        first = 0;
        step = 1;
        if (rk_cur.thread_order) {
            first = n - 1;
            step = ~0u;
        }
    }
    region(const region &) = delete;
    region &operator=(const region &) = delete;

    uint8_t *bytes() { return reinterpret_cast<uint8_t *>(arena_take(n, 16)); }

    /* One slot per lane for a variable of type T. */
    template <class T>
    T *alloc() {
        static_assert(std::is_trivially_destructible<T>::value,
                      "a variable living across a barrier must be trivially destructible in the "
                      "cpu backend's region form");
        T *p = reinterpret_cast<T *>(arena_take(sizeof(T) * n, alignof(T) < 16 ? 16 : alignof(T)));
        if constexpr (!std::is_trivially_default_constructible<T>::value)
            for (uint32_t t = 0; t < n; ++t) ::new (static_cast<void *>(p + t)) T();
        return p;
    }
    /* Lane slots for collective operands, with two words per wave after them. */
    uint64_t *xbuf() { return reinterpret_cast<uint64_t *>(arena_take(8 * (n + 2 * nw), 16)); }

    /* The i-th lane to run. Lanes run in order, or last to first when the launch asks for
     * the reverse (race checking compares the two; that uses the publishing variant). */
    template <bool P>
    __attribute__((always_inline)) uint32_t lane_at(uint32_t i) const {
        return P ? first + i * step : i;
    }
    /* Make lane t the current thread. P (checked launches and reversed order): store its
     * coordinates in rk_cur ahead of the lane's memory accesses, so a fault names the right
     * thread. Otherwise only when functions the kernel calls read them (TLS), and the compiler
     * may optimise across lanes (vectorise a loop over them). */
    template <bool P, bool TLS>
    __attribute__((always_inline)) void lane(uint32_t t) {
        if (P || TLS) {
            if (idx)
                rk_cur.thread_idx = idx[t];
            else
                rk_cur.thread_idx.x = t;
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
            if (act[t]) return true;
        return false;
    }
    /* Lanes of `m` whose condition `c` equals `want`. */
    void take_branch(const uint8_t *m, const uint8_t *c, uint8_t want) {
        for (uint32_t t = 0; t < n; ++t) act[t] = m[t] && c[t] == want && st[t] == LANE_RUN;
    }
    void restore(const uint8_t *m) {
        for (uint32_t t = 0; t < n; ++t) act[t] = m[t] && st[t] == LANE_RUN;
    }
    void keep_if(const uint8_t *c) {
        for (uint32_t t = 0; t < n; ++t) act[t] = act[t] && c[t];
    }
    void end_iteration(const uint8_t *it, unsigned d) {
        const uint8_t c = lane_continued(d);
        for (uint32_t t = 0; t < n; ++t) {
            if (st[t] == c) st[t] = LANE_RUN;
            act[t] = it[t] && st[t] == LANE_RUN;
        }
    }
    void end_loop(const uint8_t *m, unsigned d) {
        const uint8_t b = lane_broke(d);
        for (uint32_t t = 0; t < n; ++t) {
            if (st[t] == b) st[t] = LANE_RUN;
            act[t] = m[t] && st[t] == LANE_RUN;
        }
    }
    void ret(uint32_t t) {
        st[t] = LANE_RETURNED;
        act[t] = 0;
    }
    void brk(uint32_t t, unsigned d) {
        st[t] = lane_broke(d);
        act[t] = 0;
    }
    void cont(uint32_t t, unsigned d) {
        st[t] = lane_continued(d);
        act[t] = 0;
    }

    /* ---- barriers ---- */
    rk_uint3 coords(uint32_t t) const { return idx ? idx[t] : rk_uint3{t, 0, 0}; }

    /* Every lane that has not returned must be here; a barrier that some lanes reach and others
     * skip (they returned, or control flow around it diverged) is reported, as on a GPU it
     * would hang or be undefined. */
    void barrier() {
        uint32_t returned = 0, off = 0, on = 0;
        uint32_t first_returned = n, first_off = n, first_on = n;
        for (uint32_t t = 0; t < n; ++t) {
            if (act[t]) {
                if (!on++) first_on = t;
            } else if (st[t] == LANE_RETURNED) {
                if (!returned++) first_returned = t;
            } else if (!off++) {
                first_off = t;
            }
        }
        if (!on || (!returned && !off)) return;
        rk_cur.thread_idx = coords(first_on);
        char msg[400];
        if (returned) {
            const rk_uint3 e = coords(first_returned);
            std::snprintf(msg, sizeof msg,
                          "%u thread(s) wait at __syncthreads() but %u thread(s) of the block "
                          "returned without reaching it (the first: thread (%u,%u,%u)); every "
                          "thread of a block must reach every barrier",
                          on, returned, e.x, e.y, e.z);
        } else {
            const rk_uint3 e = coords(first_off);
            std::snprintf(msg, sizeof msg,
                          "%u thread(s) wait at __syncthreads() but %u thread(s) of the block "
                          "skip it in divergent control flow (the first: thread (%u,%u,%u)); every "
                          "thread of a block must reach every barrier",
                          on, off, e.x, e.y, e.z);
        }
        rk_block_fail(RK_PARTIAL_BARRIER, msg);
    }
    /* __syncthreads_count over the lanes' predicates in x. */
    uint32_t count(const uint64_t *x) const {
        uint32_t c = 0;
        for (uint32_t t = 0; t < n; ++t) c += act[t] && x[t];
        return c;
    }

    /* ---- warp collectives ---- */
    /* Per wave: the ballot of x over active lanes and the active mask, stored after the lanes. */
    void reduce(uint64_t *x) const {
        for (uint32_t w = 0; w < nw; ++w) {
            uint64_t ballot = 0, active = 0;
            const uint32_t base = w * ws, end = base + ws < n ? base + ws : n;
            for (uint32_t t = base; t < end; ++t) {
                if (!act[t]) continue;
                active |= uint64_t(1) << (t - base);
                if (x[t]) ballot |= uint64_t(1) << (t - base);
            }
            x[n + 2 * w] = ballot;
            x[n + 2 * w + 1] = active;
        }
    }
    uint64_t ballot(const uint64_t *x, uint32_t t) const { return x[n + 2 * (t / ws)]; }
    int all(const uint64_t *x, uint32_t t) const {
        return x[n + 2 * (t / ws)] == x[n + 2 * (t / ws) + 1];
    }
    uint64_t activemask(uint32_t t) const {
        const uint32_t base = t & ~(ws - 1), end = base + ws < n ? base + ws : n;
        uint64_t m = 0;
        for (uint32_t l = base; l < end; ++l)
            if (act[l]) m |= uint64_t(1) << (l - base);
        return m;
    }
    /* The value lane t reads in a shuffle, as the fiber runtime resolves it (rk_warp_op): a
     * source lane outside the wave, the segment or not taking part gives the lane its own. */
    template <class T>
    T shfl(const uint64_t *x, uint32_t t, int op, int arg, int width) const {
        const uint32_t base = t & ~(ws - 1);
        const uint32_t lane = t - base;
        const uint32_t end = base + ws < n ? base + ws : n;
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
        if (src < 0 || from >= ws || base + from >= end || !act[base + from]) from = lane;
        return from_bits<T>(x[base + from]);
    }
};

}  // namespace rk

/* Every lane, where the build knows all are active (nothing masked, nobody returned). */
#define RK_ALL_LANES(r)                                        \
    for (uint32_t rk_i = 0; rk_i < (r).n; ++rk_i)              \
        if (const uint32_t rk_t = (r).template lane_at<rk_pub>(rk_i); false) {  \
        } else

/* The lanes of the current region code: `rk_t` is the lane, inactive lanes are skipped. */
#define RK_LANES(r)                                               \
    for (uint32_t rk_i = 0; rk_i < (r).n; ++rk_i)                 \
        if (const uint32_t rk_t = (r).template lane_at<rk_pub>(rk_i); !(r).act[rk_t]) \
            continue;                                             \
        else

#endif
