/* The generic entry point the build instantiates once per kernel:
 *   extern "C" void SYMBOL(const rk_call *c) { rk::entry<&kernel>(c); }
 * It unpacks the argument array into the kernel's own parameter types (no per-kernel glue) and
 * runs a range of threads of the current block as a plain loop, so the kernel body can be inlined
 * into the loop. */
#ifndef RK_CPU_ENTRY_H
#define RK_CPU_ENTRY_H

/* The store of thread_idx must happen before the thread's first memory access: a fault (out of
 * bounds, null pointer) is reported with the thread the runtime reads from rk_cur, and without
 * this compiler barrier the store can be sunk to the end of the loop once the kernel is inlined. */
#define RK_PUBLISH_THREAD_IDX() __asm__ __volatile__("" ::: "memory")

namespace rk {
/* Threads [begin, end) of the block in the order rk_cur.thread_order says (see abi.h), each with
 * its own threadIdx, telling the runtime after each one returns when it watches a word for the
 * race check (rk_cur.watch). The runtime's fiber scheduler (runtime.cpp, `order_of`) follows the
 * same order once the block waits at a barrier. */
template <class Body>
__attribute__((noinline, cold)) void run_ordered(uint32_t begin, uint32_t end, Body body) {
    const rk_uint3 dim = rk_cur.block_dim;
    const bool reversed = rk_cur.thread_order == RK_ORDER_REVERSED;
    for (uint32_t k = begin; k < end; ++k) {
        const uint32_t i = reversed ? end - 1 - (k - begin) : k;
        rk_cur.thread_idx = rk_uint3{i % dim.x, (i / dim.x) % dim.y, i / (dim.x * dim.y)};
        RK_PUBLISH_THREAD_IDX();
        body();
        if (rk_cur.watch) rk_watch_point();
        if (rk_cur.fiber_mode) return;
    }
}

/* The arguments of the call, unpacked, run by run_ordered. Out of line: a tuple captured by
 * reference for the loop above lives on the stack, and would, inlined into `run`, have the
 * in-order loop reload every argument from memory after each thread's compiler barrier. */
template <auto K, class... P, std::size_t... I>
__attribute__((noinline, cold)) void run_ordered_entry(const rk_call *c, std::index_sequence<I...>) {
    std::tuple<std::decay_t<P>...> args{*static_cast<const std::decay_t<P> *>(c->args[I])...};
    (void)args;
    run_ordered(c->begin, c->end, [&] { K(std::get<I>(args)...); });
}

/* `flatten` inlines the kernel (and what it calls) into the thread loop: kernels are ordinary
 * external functions the compiler would otherwise call once per GPU thread. */
template <auto K, class... P, std::size_t... I>
__attribute__((flatten)) inline void run(void (*)(P...), const rk_call *c, std::index_sequence<I...>) {
    if (c->op == RK_CALL_DESCRIBE) {
        static_assert(sizeof...(P) <= RK_MAX_PARAMS, "too many kernel parameters");
        rk_param_info *info = c->info;
        info->abi_version = RK_ABI_VERSION;
        info->count = sizeof...(P);
        ((info->size[I] = static_cast<uint32_t>(sizeof(std::decay_t<P>)),
          info->align[I] = static_cast<uint32_t>(alignof(std::decay_t<P>)),
          info->is_pointer[I] = std::is_pointer<std::decay_t<P>>::value ? 1 : 0),
         ...);
        return;
    }
    if (__builtin_expect(rk_cur.thread_order != RK_ORDER_FORWARD || rk_cur.watch, 0)) {
        // Race-check mode only: one test per call, before the arguments are unpacked, so the
        // in-order loops below keep them in registers as before.
        run_ordered_entry<K, P...>(c, std::index_sequence<I...>{});
        return;
    }
    std::tuple<std::decay_t<P>...> args{*static_cast<const std::decay_t<P> *>(c->args[I])...};
    (void)args;
    const rk_uint3 dim = rk_cur.block_dim;
    uint32_t t = c->begin;
    if (dim.y == 1 && dim.z == 1) {
        // 1-D blocks: one counter, the common case.
        rk_cur.thread_idx = rk_uint3{t, 0, 0};
        for (; t < c->end; ++t) {
            rk_cur.thread_idx.x = t;
            RK_PUBLISH_THREAD_IDX();
            K(std::get<I>(args)...);
            if (rk_cur.fiber_mode) break;
        }
        return;
    }
    uint32_t x = t % dim.x, y = (t / dim.x) % dim.y, z = t / (dim.x * dim.y);
    for (; t < c->end; ++t) {
        rk_cur.thread_idx = rk_uint3{x, y, z};
        RK_PUBLISH_THREAD_IDX();
        K(std::get<I>(args)...);
        if (rk_cur.fiber_mode) break;
        if (++x == dim.x) {
            x = 0;
            if (++y == dim.y) {
                y = 0;
                ++z;
            }
        }
    }
}

template <class F>
struct arity;
template <class... P>
struct arity<void (*)(P...)> {
    static constexpr std::size_t value = sizeof...(P);
};

template <auto K>
inline void entry(const rk_call *c) {
    run<K>(K, c, std::make_index_sequence<arity<decltype(K)>::value>{});
}

/* The entry of a kernel that also has a region form B, which runs one wave of the block (see
 * detail/region.h): the runtime then treats the block's waves as its threads (runs [begin, end)
 * of them in a plain loop until one waits at a barrier, then as fibers). With rk_cur.exec_fibers
 * the kernel runs one fiber per thread instead, for comparison. */
template <auto K, auto B, bool WHOLE, class... P, std::size_t... I>
inline void run_block(void (*)(P...), const rk_call *c, std::index_sequence<I...> seq) {
    if (c->op == RK_CALL_DESCRIBE || rk_cur.exec_fibers) {
        run<K>(K, c, seq);
        if (c->op == RK_CALL_DESCRIBE) c->info->block_entry = WHOLE ? RK_ENTRY_WHOLE_BLOCKS : RK_ENTRY_WAVES;
        return;
    }
    std::tuple<std::decay_t<P>...> args{*static_cast<const std::decay_t<P> *>(c->args[I])...};
    (void)args;
    if (WHOLE || rk_cur.exec_blocks) {
        /* Never waits in the runtime (no barriers, or CpuExec::Blocks, where barriers are
         * checks): one call runs the whole block, or a chunk of blocks. */
        rk_cur.region = 1;
        if (c->op == RK_CALL_RUN_BLOCKS) {
            /* Block coordinates counted up rather than divided out per block. */
            const rk_uint3 g = rk_cur.grid_dim;
            rk_uint3 b{c->begin % g.x, (c->begin / g.x) % g.y, c->begin / (g.x * g.y)};
            for (uint32_t p = c->begin; p < c->end; ++p) {
                rk_cur.block_idx = b;
                B(std::get<I>(args)...);
                if (++b.x == g.x) {
                    b.x = 0;
                    if (++b.y == g.y) {
                        b.y = 0;
                        ++b.z;
                    }
                }
            }
        } else {
            B(std::get<I>(args)...);
        }
        rk_cur.region = 0;
        return;
    }
    const rk_uint3 dim = rk_cur.block_dim;
    for (uint32_t w = c->begin; w < c->end; ++w) {
        /* The runtime knows a wave by these coordinates (its linear id is w). */
        rk_cur.thread_idx = rk_uint3{w % dim.x, (w / dim.x) % dim.y, w / (dim.x * dim.y)};
        RK_PUBLISH_THREAD_IDX();
        rk_cur.region = 1;
        B(std::get<I>(args)...);
        rk_cur.region = 0;
        if (rk_cur.fiber_mode) break;
    }
}

template <auto K, auto B, bool WHOLE = false>
inline void entry_block(const rk_call *c) {
    run_block<K, B, WHOLE>(K, c, std::make_index_sequence<arity<decltype(K)>::value>{});
}
}  // namespace rk

#endif
