// What the C++ compiler makes of the host side of the cpu runtime's ABI (include/cpu/hip/detail/
// abi.h): the size, alignment and field offsets of every struct the Rust side mirrors, and the
// value of every constant it declares (those only C++ reads, like RK_CALL_RUN, stay out), as a
// table of (name, value). The test in
// src/runtime/backend/cpu/ffi.rs compares it with `size_of`, `align_of`, `offset_of!` and the
// constants there, so a change on one side without the other fails a test instead of a launch.
// Compiled into the runtime's archive by build.rs with the runtime's own compiler and flags;
// nothing else refers to it, so the linker leaves it out of other binaries.
#include <cstddef>
#include <cstdint>

#include "hip/detail/abi.h"
#include "race.h"
#include "hip/detail/vector_types.h"

namespace {
struct fact {
    const char *name;
    uint64_t value;
};
}  // namespace

#define RK_STRUCT(s) {"sizeof(" #s ")", sizeof(s)}, {"alignof(" #s ")", alignof(s)}
#define RK_FIELD(s, f) {"offsetof(" #s ", " #f ")", offsetof(s, f)}
#define RK_CONST(c) {#c, static_cast<uint64_t>(c)}

extern "C" const fact rk_abi_layout[] = {
    RK_STRUCT(rk_param_info),
    RK_FIELD(rk_param_info, abi_version),
    RK_FIELD(rk_param_info, count),
    RK_FIELD(rk_param_info, size),
    RK_FIELD(rk_param_info, is_pointer),
    RK_FIELD(rk_param_info, align),
    RK_FIELD(rk_param_info, block_entry),

    RK_STRUCT(rk_call),
    RK_FIELD(rk_call, op),
    RK_FIELD(rk_call, begin),
    RK_FIELD(rk_call, end),
    RK_FIELD(rk_call, args),
    RK_FIELD(rk_call, info),

    RK_STRUCT(rk_launch_desc),
    RK_FIELD(rk_launch_desc, entry),
    RK_FIELD(rk_launch_desc, args),
    RK_FIELD(rk_launch_desc, grid),
    RK_FIELD(rk_launch_desc, block),
    RK_FIELD(rk_launch_desc, shared_bytes),
    RK_FIELD(rk_launch_desc, wave_size),
    RK_FIELD(rk_launch_desc, checked),
    RK_FIELD(rk_launch_desc, has_seed),
    RK_FIELD(rk_launch_desc, seed),
    RK_FIELD(rk_launch_desc, time_limit_ns),
    RK_FIELD(rk_launch_desc, exec_fibers),
    RK_FIELD(rk_launch_desc, region_waves),
    RK_FIELD(rk_launch_desc, thread_order),
    RK_FIELD(rk_launch_desc, whole_blocks),
    RK_FIELD(rk_launch_desc, exec_blocks),
    RK_FIELD(rk_launch_desc, publish),
    RK_FIELD(rk_launch_desc, watch_len),
    RK_FIELD(rk_launch_desc, watch_addr),

    RK_STRUCT(rk_launch_result),
    RK_FIELD(rk_launch_result, status),
    RK_FIELD(rk_launch_result, block),
    RK_FIELD(rk_launch_result, thread),
    RK_FIELD(rk_launch_result, access),
    RK_FIELD(rk_launch_result, address),
    RK_FIELD(rk_launch_result, message),
    RK_FIELD(rk_launch_result, watch_changes),
    RK_FIELD(rk_launch_result, watch_block),
    RK_FIELD(rk_launch_result, watch_thread),

    RK_CONST(RK_ABI_VERSION),
    RK_CONST(RK_MAX_PARAMS),
    RK_CONST(RK_CALL_DESCRIBE),
    RK_CONST(RK_ENTRY_THREADS),
    RK_CONST(RK_ENTRY_WAVES),
    RK_CONST(RK_ENTRY_WHOLE_BLOCKS),
    RK_CONST(RK_ORDER_FORWARD),
    RK_CONST(RK_ORDER_REVERSED),
    RK_CONST(RK_OK),
    RK_CONST(RK_FAULT),
    RK_CONST(RK_MEMORY_FAULT),
    RK_CONST(RK_PARTIAL_BARRIER),
    RK_CONST(RK_TIMEOUT),
    RK_CONST(RK_INVALID),
    RK_CONST(RK_STACK_OVERFLOW),

    // race.h: the race detector's host side.
    RK_STRUCT(rk_race_range),
    RK_FIELD(rk_race_range, start),
    RK_FIELD(rk_race_range, len),
    RK_STRUCT(rk_race_access),
    RK_FIELD(rk_race_access, block),
    RK_FIELD(rk_race_access, thread),
    RK_FIELD(rk_race_access, pc),
    RK_FIELD(rk_race_access, write),
    RK_FIELD(rk_race_access, atomic),
    RK_STRUCT(rk_race_report),
    RK_FIELD(rk_race_report, address),
    RK_FIELD(rk_race_report, space),
    RK_FIELD(rk_race_report, count),
    RK_FIELD(rk_race_report, offset),
    RK_FIELD(rk_race_report, earlier),
    RK_FIELD(rk_race_report, later),
    RK_CONST(RK_RACE_GLOBAL),
    RK_CONST(RK_RACE_SHARED),
    RK_CONST(RK_RACE_STATIC_SHARED),

    // HIP vector types (rocm_kernels::vector mirrors them; its test compares).
    RK_STRUCT(char2),
    RK_STRUCT(char3),
    RK_STRUCT(char4),
    RK_STRUCT(uchar2),
    RK_STRUCT(uchar3),
    RK_STRUCT(uchar4),
    RK_STRUCT(short2),
    RK_STRUCT(short3),
    RK_STRUCT(short4),
    RK_STRUCT(ushort2),
    RK_STRUCT(ushort3),
    RK_STRUCT(ushort4),
    RK_STRUCT(int2),
    RK_STRUCT(int3),
    RK_STRUCT(int4),
    RK_STRUCT(uint2),
    RK_STRUCT(uint3),
    RK_STRUCT(uint4),
    RK_STRUCT(long2),
    RK_STRUCT(long3),
    RK_STRUCT(long4),
    RK_STRUCT(ulong2),
    RK_STRUCT(ulong3),
    RK_STRUCT(ulong4),
    RK_STRUCT(float2),
    RK_STRUCT(float3),
    RK_STRUCT(float4),
    RK_STRUCT(double2),
    RK_STRUCT(double3),
    RK_STRUCT(double4),
};

extern "C" const uint64_t rk_abi_layout_len = sizeof(rk_abi_layout) / sizeof(rk_abi_layout[0]);
