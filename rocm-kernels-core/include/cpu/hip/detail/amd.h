/* AMD's device intrinsics, with the meaning they have on an AMD GPU, for code written against
 * HIP on AMD that does not guard them by platform. Bit-field ones follow HIP's definitions
 * (amd_device_functions.h); lane ones use the wave the cpu backend runs (warpSize lanes, 64-bit
 * masks). `__builtin_amdgcn_*` names are macros onto these functions, so the kernel text the
 * build reads names the collectives the region form knows (__shfl, __activemask, ...). Inline
 * assembly has no portable meaning: the build refuses it, naming the kernel and the line. */
#ifndef RK_CPU_AMD_H
#define RK_CPU_AMD_H

/* ---- bit fields ---- */
/* `width` bits of src0 from bit `offset` (both modulo the word size); 0 for width 0. */
inline unsigned int __bitextract_u32(unsigned int src0, unsigned int offset, unsigned int width) {
    offset &= 31;
    width &= 31;
    return width == 0 ? 0u : (src0 >> offset) & ((1u << width) - 1u);
}
inline uint64_t __bitextract_u64(uint64_t src0, unsigned int offset, unsigned int width) {
    offset &= 63;
    width &= 63;
    return width == 0 ? uint64_t(0) : (src0 >> offset) & ((uint64_t(1) << width) - 1);
}
/* src0 with `width` bits from bit `offset` replaced by the low bits of src1. */
inline unsigned int __bitinsert_u32(unsigned int src0, unsigned int src1, unsigned int offset, unsigned int width) {
    offset &= 31;
    width &= 31;
    const unsigned int mask = (1u << width) - 1u;
    return (src0 & ~(mask << offset)) | ((src1 & mask) << offset);
}
inline uint64_t __bitinsert_u64(uint64_t src0, uint64_t src1, unsigned int offset, unsigned int width) {
    offset &= 63;
    width &= 63;
    const uint64_t mask = (uint64_t(1) << width) - 1;
    return (src0 & ~(mask << offset)) | ((src1 & mask) << offset);
}

/* ---- bit positions ---- */
/* The lowest set bit, or ~0u (-1) for 0. (__lastbit_u32_u64 is in bits.h.) */
inline unsigned int __lastbit_u32_u32(unsigned int x) { return x ? static_cast<unsigned int>(__builtin_ctz(x)) : ~0u; }
inline unsigned int __lastbit_u32_s32(int x) { return __lastbit_u32_u32(static_cast<unsigned int>(x)); }
inline unsigned int __lastbit_u32_s64(long long x) { return __lastbit_u32_u64(static_cast<unsigned long long>(x)); }

namespace rk {
/* The position of the `offset`-th set bit of `mask` counting from bit `base` upwards (offset >
 * 0, `base` itself counting as the first) or downwards (offset < 0); offset 0: `base` if that
 * bit is set. -1 when there is no such bit. */
inline int find_nth_set(uint64_t mask, unsigned int bits, unsigned int base, int offset) {
    if (base >= bits) return -1;
    if (offset == 0) return (mask >> base) & 1 ? static_cast<int>(base) : -1;
    const int step = offset > 0 ? 1 : -1;
    int left = offset > 0 ? offset : -offset;
    for (int b = static_cast<int>(base); b >= 0 && b < static_cast<int>(bits); b += step)
        if (((mask >> b) & 1) && --left == 0) return b;
    return -1;
}
}  // namespace rk
inline int __fns64(unsigned long long mask, unsigned int base, int offset) { return rk::find_nth_set(mask, 64, base, offset); }
inline int __fns32(unsigned long long mask, unsigned int base, int offset) {
    return rk::find_nth_set(mask & 0xffffffffull, 32, base, offset);
}
inline int __fns(unsigned int mask, unsigned int base, int offset) { return __fns32(mask, base, offset); }

/* ---- lanes ---- */
namespace rk {
/* Set bits of `mask` below lane `lane` (mbcnt). */
inline unsigned int bits_below(uint64_t mask, unsigned int lane) {
    return static_cast<unsigned int>(__builtin_popcountll(lane >= 64 ? mask : mask & ((uint64_t(1) << lane) - 1)));
}
inline unsigned int amdgcn_mbcnt_lo(unsigned int mask, unsigned int add) {
    const unsigned int lane = __lane_id();
    return add + bits_below(mask, lane < 32 ? lane : 32);
}
inline unsigned int amdgcn_mbcnt_hi(unsigned int mask, unsigned int add) {
    const unsigned int lane = __lane_id();
    return add + (lane < 32 ? 0u : bits_below(mask, lane - 32));
}
}  // namespace rk

/* Coordinates. */
#define __builtin_amdgcn_workitem_id_x() (threadIdx.x)
#define __builtin_amdgcn_workitem_id_y() (threadIdx.y)
#define __builtin_amdgcn_workitem_id_z() (threadIdx.z)
#define __builtin_amdgcn_workgroup_id_x() (blockIdx.x)
#define __builtin_amdgcn_workgroup_id_y() (blockIdx.y)
#define __builtin_amdgcn_workgroup_id_z() (blockIdx.z)
#define __builtin_amdgcn_workgroup_size_x() (static_cast<unsigned short>(blockDim.x))
#define __builtin_amdgcn_workgroup_size_y() (static_cast<unsigned short>(blockDim.y))
#define __builtin_amdgcn_workgroup_size_z() (static_cast<unsigned short>(blockDim.z))
#define __builtin_amdgcn_wavefrontsize() (warpSize)
/* Bit fields and bit counts. */
#define __builtin_amdgcn_ubfe(x, offset, width) __bitextract_u32((x), (offset), (width))
#define __builtin_amdgcn_mbcnt_lo(mask, add) rk::amdgcn_mbcnt_lo((mask), (add))
#define __builtin_amdgcn_mbcnt_hi(mask, add) rk::amdgcn_mbcnt_hi((mask), (add))
/* Lane collectives: the value of one lane, the active lanes, a wave's barrier, a block's. */
#define __builtin_amdgcn_readfirstlane(x) __rk_readfirstlane(x)
#define __builtin_amdgcn_readlane(x, lane) __shfl((x), (lane))
#define __builtin_amdgcn_ds_bpermute(addr, x) __shfl((x), ((addr) >> 2) & (warpSize - 1))
#define __builtin_amdgcn_read_exec() __activemask()
#define __builtin_amdgcn_wave_barrier() __syncwarp()
#define __builtin_amdgcn_s_barrier() __syncthreads()
/* Time and scheduling. */
#define __builtin_amdgcn_s_memtime() (static_cast<unsigned long long>(clock64()))
#define __builtin_amdgcn_s_memrealtime() (static_cast<unsigned long long>(wall_clock64()))
#define __builtin_amdgcn_s_sleep(n) ((void)(n))
#define __builtin_amdgcn_s_trap(n) __trap()

#endif
