/* The generic entry point the build instantiates once per kernel:
 *   extern "C" void SYMBOL(const rk_call *c) { rk::entry<&kernel>(c); }
 * It unpacks the argument array into the kernel's own parameter types (no per-kernel glue) and
 * runs a range of threads of the current block as a plain loop, so the kernel body can be inlined
 * into the loop. */
#ifndef RK_CPU_ENTRY_H
#define RK_CPU_ENTRY_H

namespace rk {
template <auto K, class... P, std::size_t... I>
inline void run(void (*)(P...), const rk_call *c, std::index_sequence<I...>) {
    if (c->op == RK_CALL_DESCRIBE) {
        static_assert(sizeof...(P) <= RK_MAX_PARAMS, "too many kernel parameters");
        rk_param_info *info = c->info;
        info->abi_version = RK_ABI_VERSION;
        info->count = sizeof...(P);
        ((info->size[I] = static_cast<uint32_t>(sizeof(std::decay_t<P>)),
          info->is_pointer[I] = std::is_pointer<std::decay_t<P>>::value ? 1 : 0),
         ...);
        return;
    }
    std::tuple<std::decay_t<P>...> args{*static_cast<const std::decay_t<P> *>(c->args[I])...};
    (void)args;
    const rk_uint3 dim = rk_cur.block_dim;
    uint32_t t = c->begin;
    uint32_t x = t % dim.x, y = (t / dim.x) % dim.y, z = t / (dim.x * dim.y);
    for (; t < c->end; ++t) {
        rk_cur.thread_idx = rk_uint3{x, y, z};
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
}  // namespace rk

#endif
