/* Warp (wave) collectives. Each lane deposits its value and waits; when every active lane of the
 * wave has arrived the runtime computes the result (rk_warp_op). The wave size is chosen per
 * launch (warpSize is 32 or 64); lane masks are 64-bit as on AMD. */
#ifndef RK_CPU_WARP_H
#define RK_CPU_WARP_H

namespace rk {
template <class T>
inline T warp_value(int op, T var, int arg, int width) {
    static_assert(sizeof(T) <= 8 && std::is_trivially_copyable<T>::value,
                  "warp shuffles move values of at most 8 bytes");
    uint64_t bits = 0;
    std::memcpy(&bits, &var, sizeof(T));
    bits = rk_warp_op(op, bits, arg, width);
    T out;
    std::memcpy(&out, &bits, sizeof(T));
    return out;
}
}  // namespace rk

inline unsigned int __lane_id() { return rk_linear_tid() % rk_cur.wave_size; }

template <class T>
inline T __shfl(T var, int src_lane, int width = warpSize) {
    return rk::warp_value(RK_WARP_SHFL, var, src_lane, width);
}
template <class T>
inline T __shfl_up(T var, unsigned int delta, int width = warpSize) {
    return rk::warp_value(RK_WARP_SHFL_UP, var, static_cast<int>(delta), width);
}
template <class T>
inline T __shfl_down(T var, unsigned int delta, int width = warpSize) {
    return rk::warp_value(RK_WARP_SHFL_DOWN, var, static_cast<int>(delta), width);
}
template <class T>
inline T __shfl_xor(T var, int lane_mask, int width = warpSize) {
    return rk::warp_value(RK_WARP_SHFL_XOR, var, lane_mask, width);
}
inline unsigned long long __ballot(int pred) { return rk_warp_op(RK_WARP_BALLOT, pred != 0, 0, 0); }
inline unsigned long long __ballot64(int pred) { return __ballot(pred); }
inline int __any(int pred) { return static_cast<int>(rk_warp_op(RK_WARP_ANY, pred != 0, 0, 0)); }
inline int __all(int pred) { return static_cast<int>(rk_warp_op(RK_WARP_ALL, pred != 0, 0, 0)); }
inline unsigned long long __activemask() { return rk_warp_op(RK_WARP_ACTIVEMASK, 1, 0, 0); }
/* The lanes of the wave that are active here wait for each other (memory they wrote before is
 * then seen by the others). The mask is not checked. */
inline void __syncwarp() { (void)rk_warp_op(RK_WARP_ACTIVEMASK, 1, 0, 0); }
template <class M>
inline void __syncwarp(M) { __syncwarp(); }
namespace rk {
/* The bits of a wave-wide lane mask that belong to the tile of `width` lanes (a power of two)
 * holding lane `lane`, as the tile's own mask (bit i for the tile's lane i). */
inline unsigned long long tile_bits(unsigned long long mask, unsigned int width, unsigned int lane) {
    const unsigned long long low = width >= 64 ? ~0ull : (1ull << width) - 1;
    return (mask >> (lane & ~(width - 1))) & low;
}
}  // namespace rk

/* The value of the wave's first active lane (AMD's readfirstlane); a collective of its own in the
 * region form. */
template <class T>
inline T __rk_readfirstlane(T var) {
    const unsigned long long active = __activemask();
    return __shfl(var, __builtin_ctzll(active));
}

/* The *_sync forms (HIP 6.2+): the mask is not checked. */
template <class M, class T>
inline T __shfl_sync(M, T var, int src_lane, int width = warpSize) { return __shfl(var, src_lane, width); }
template <class M, class T>
inline T __shfl_up_sync(M, T var, unsigned int delta, int width = warpSize) { return __shfl_up(var, delta, width); }
template <class M, class T>
inline T __shfl_down_sync(M, T var, unsigned int delta, int width = warpSize) { return __shfl_down(var, delta, width); }
template <class M, class T>
inline T __shfl_xor_sync(M, T var, int lane_mask, int width = warpSize) { return __shfl_xor(var, lane_mask, width); }
template <class M>
inline unsigned long long __ballot_sync(M, int pred) { return __ballot(pred); }
template <class M>
inline int __any_sync(M, int pred) { return __any(pred); }
template <class M>
inline int __all_sync(M, int pred) { return __all(pred); }

#endif
