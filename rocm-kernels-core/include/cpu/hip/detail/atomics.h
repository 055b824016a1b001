/* Atomics: real atomics, since blocks run in parallel on several worker threads. Relaxed order,
 * as on the GPU; __threadfence orders. */
#ifndef RK_CPU_ATOMICS_H
#define RK_CPU_ATOMICS_H

namespace rk {
template <class T, class F>
inline T atomic_update(T *address, F f) {
    T old;
    __atomic_load(address, &old, __ATOMIC_RELAXED);
    T desired;
    do {
        desired = f(old);
    } while (!__atomic_compare_exchange(address, &old, &desired, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
    return old;
}
}  // namespace rk

#define RK_ATOMIC_INT(T)                                                                                 \
    inline T atomicAdd(T *a, T v) { return __atomic_fetch_add(a, v, __ATOMIC_RELAXED); }                 \
    inline T atomicSub(T *a, T v) { return __atomic_fetch_sub(a, v, __ATOMIC_RELAXED); }                 \
    inline T atomicAnd(T *a, T v) { return __atomic_fetch_and(a, v, __ATOMIC_RELAXED); }                 \
    inline T atomicOr(T *a, T v) { return __atomic_fetch_or(a, v, __ATOMIC_RELAXED); }                   \
    inline T atomicXor(T *a, T v) { return __atomic_fetch_xor(a, v, __ATOMIC_RELAXED); }                 \
    inline T atomicExch(T *a, T v) { return __atomic_exchange_n(a, v, __ATOMIC_RELAXED); }               \
    inline T atomicMin(T *a, T v) { return rk::atomic_update(a, [v](T o) { return v < o ? v : o; }); }   \
    inline T atomicMax(T *a, T v) { return rk::atomic_update(a, [v](T o) { return v > o ? v : o; }); }   \
    inline T atomicCAS(T *a, T compare, T v) {                                                           \
        __atomic_compare_exchange_n(a, &compare, v, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);          \
        return compare;                                                                                  \
    }                                                                                                    \
    inline T atomicAdd_system(T *a, T v) { return atomicAdd(a, v); }                                     \
    inline T atomicAdd_block(T *a, T v) { return atomicAdd(a, v); }

RK_ATOMIC_INT(int)
RK_ATOMIC_INT(unsigned int)
RK_ATOMIC_INT(unsigned long)
RK_ATOMIC_INT(unsigned long long)
RK_ATOMIC_INT(long long)
#undef RK_ATOMIC_INT

#define RK_ATOMIC_FLOAT(T)                                                                             \
    inline T atomicAdd(T *a, T v) { return rk::atomic_update(a, [v](T o) { return o + v; }); }        \
    inline T atomicSub(T *a, T v) { return rk::atomic_update(a, [v](T o) { return o - v; }); }        \
    inline T atomicExch(T *a, T v) {                                                                   \
        T old;                                                                                         \
        __atomic_exchange(a, &v, &old, __ATOMIC_RELAXED);                                              \
        return old;                                                                                    \
    }                                                                                                  \
    inline T atomicMin(T *a, T v) { return rk::atomic_update(a, [v](T o) { return v < o ? v : o; }); } \
    inline T atomicMax(T *a, T v) { return rk::atomic_update(a, [v](T o) { return v > o ? v : o; }); } \
    inline T atomicAdd_system(T *a, T v) { return atomicAdd(a, v); }                                   \
    inline T atomicAdd_block(T *a, T v) { return atomicAdd(a, v); }                                    \
    inline T unsafeAtomicAdd(T *a, T v) { return atomicAdd(a, v); }                                    \
    inline T safeAtomicAdd(T *a, T v) { return atomicAdd(a, v); }

RK_ATOMIC_FLOAT(float)
RK_ATOMIC_FLOAT(double)
#undef RK_ATOMIC_FLOAT

/* ((old >= limit) ? 0 : old + 1) and (((old == 0) || (old > limit)) ? limit : old - 1), as HIP. */
inline unsigned int atomicInc(unsigned int *a, unsigned int limit) {
    return rk::atomic_update(a, [limit](unsigned int o) { return o >= limit ? 0u : o + 1u; });
}
inline unsigned int atomicDec(unsigned int *a, unsigned int limit) {
    return rk::atomic_update(a, [limit](unsigned int o) { return (o == 0 || o > limit) ? limit : o - 1u; });
}

#endif
