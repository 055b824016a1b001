// The cpu backend's runtime: runs the blocks of a launch on a pool of worker threads and the
// threads of each block as cooperative fibers. Compiled once by rocm-kernels' build.rs and linked
// into every binary that uses rocm-kernels; kernels compiled by `rocm_kernels::Build` call into it
// (barriers, warp collectives, faults) through include/cpu/hip/detail/abi.h.
//
// Execution of one block:
//  * Fiber 0 runs the kernel for threads 0, 1, 2, ... one after another (a plain loop). A block
//    whose threads never wait finishes this way with two context switches in total.
//  * The first time a thread t waits (barrier or warp collective), the block switches to fiber
//    mode: threads < t have finished, t keeps fiber 0, and every later thread gets its own fiber.
//    Fibers run in rounds (each until it waits again or returns), switching directly from one to
//    the next; after a round the scheduler resolves warp collectives wave by wave, then releases a
//    barrier that every live thread has reached. A barrier reached while some threads of the
//    block have already returned is a partial barrier and is reported, not waited on forever.
//  * Faults (SIGSEGV/SIGBUS in kernel code, a failed assert, the watchdog's SIGURG after the time
//    limit) abandon the block: the signal handler rewrites the interrupted context to continue in
//    `rk_abort_trampoline` on the fiber's own stack, which switches back to the scheduler. Unlike
//    siglongjmp this never jumps between stacks inside the handler, and the signal mask is
//    restored by the normal return from the handler.
//
// Static `__shared__` variables are `thread_local` (per worker): correct because a worker runs one
// block at a time, from start to end, and all fibers of a block run on that worker.

#undef _FORTIFY_SOURCE
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "hip/detail/abi.h"
#include "race.h"

#if defined(__x86_64__) && defined(__linux__)

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <thread>
#include <vector>

#include <pthread.h>
#include <time.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

__thread rk_ctx rk_cur;

// ---------------------------------------------------------------------------------------------
// Context switch. A hand-written switch rather than ucontext (swapcontext makes a sigprocmask
// system call on every switch, ~100x slower) or a Rust coroutine crate (every barrier would cross
// into Rust and back, and the kernel side is C++): it saves only the callee-saved registers of the
// SysV x86-64 ABI, which is all a function call may assume preserved. MXCSR and the x87 control
// word are left alone: kernels do not change rounding modes.
//
// rk_switch(void **save_sp, void *load_sp): push callee-saved registers, store rsp in *save_sp,
// load rsp from load_sp, pop, return into the other context.
// rk_fiber_boot: first "return address" of a new fiber: calls r13(r12) with an aligned stack.
#if defined(__x86_64__)
extern "C" void rk_switch(void **save_sp, void *load_sp);
extern "C" void rk_fiber_boot();
extern "C" char rk_switch_begin[], rk_switch_end[];
asm(R"(
    .text
    .globl rk_switch
    .type rk_switch,@function
    .globl rk_switch_begin
    .globl rk_switch_end
rk_switch:
rk_switch_begin:
    pushq %rbp
    pushq %rbx
    pushq %r12
    pushq %r13
    pushq %r14
    pushq %r15
    movq %rsp, (%rdi)
    movq %rsi, %rsp
    popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %rbx
    popq %rbp
    ret
rk_switch_end:
    .size rk_switch, .-rk_switch

    .globl rk_fiber_boot
    .type rk_fiber_boot,@function
rk_fiber_boot:
    movq %r12, %rdi
    callq *%r13
    ud2
    .size rk_fiber_boot, .-rk_fiber_boot
)");
#endif

namespace {

using Clock = std::chrono::steady_clock;

long page_size() {
    static const long size = sysconf(_SC_PAGESIZE);
    return size;
}

size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

struct Worker;

struct Fiber {
    void *sp = nullptr;
    char *map = nullptr;  // mapping start (guard page)
    size_t map_len = 0;
    char *lo = nullptr;   // usable stack [lo, hi)
    char *hi = nullptr;
    Worker *worker = nullptr;
    uint32_t begin = 0, end = 0;  // threads the entry runs
    uint32_t tid = 0;             // the thread currently on this fiber (fiber mode)
    uint32_t op = RK_CALL_RUN;    // what the entry is asked (RK_CALL_RUN_BLOCKS: a chunk)
    // Its thread returned and it waits at the end of fiber_main's loop to run another one
    // (no fresh start needed). False for a new fiber or one abandoned by a fault.
    bool parked = false;
};

enum SlotState : uint8_t { NOT_STARTED, RUNNABLE, AT_BARRIER, AT_WARP, DONE };

struct Slot {
    void *sp;       // saved stack pointer while the thread waits
    Fiber *fiber;   // the fiber it runs on (fiber mode)
    rk_uint3 idx;  // threadIdx of this thread
    uint8_t op;
    int32_t arg;
    int32_t width;
    int32_t pred;
    uint64_t value;
    uint64_t result;
};

struct Launch {
    const rk_launch_desc *desc = nullptr;
    uint64_t blocks = 0;
    std::vector<uint64_t> order;  // empty: in order
    std::atomic<uint64_t> next{0};
    std::atomic<bool> stop{false};
    std::atomic<bool> timed_out{false};
    std::mutex error_lock;
    bool has_error = false;
    uint64_t error_pos = 0;
    rk_launch_result error{};
    // The race check's watch (rk_launch_desc::watch_addr), under error_lock.
    uint32_t watch_changes = 0;
    rk_uint3 watch_block{}, watch_thread{};
};

struct Pool;

struct Worker {
    Pool *pool = nullptr;
    pthread_t thread{};
    std::thread handle;
    size_t stack_size = 0;
    uint64_t pool_size = 1;
    uint32_t index = 0;  // in the pool
    std::vector<Fiber *> fibers;
    std::vector<Slot> slots;
    std::vector<uint8_t> states;  // SlotState per thread, dense: scanned on every switch
    void *sched_sp = nullptr;
    Launch *launch = nullptr;
    uint32_t nthreads = 0;
    uint32_t fiber0_tid = 0;
    bool fiber_mode = false;
    uint32_t barrier_result = 0;
    uint32_t warp_waiting = 0;  // threads waiting in a collective
    uint32_t cur_tid = 0;       // the running thread (fiber mode)
    uint32_t done_count = 0;    // threads of the block that returned (fiber mode)
    bool slots_ready = false;   // slots hold every thread's idx and fiber for this launch
    uint32_t pred_count = 0;    // true predicates of the current barrier
    // Region form (the block's waves are its threads): what the waves at the current barrier
    // reported (rk_region_barrier).
    bool region_waves = false;
    uint32_t block_threads = 0;
    uint32_t rg_waiting = 0, rg_site = 0;
    bool rg_mixed_sites = false;
    uint32_t rg_active = 0, rg_returned = 0, rg_skipped = 0;
    uint32_t rg_first_active = 0, rg_first_off = 0, rg_other_site_thread = 0;
    // Set while a fiber of this worker runs; read by the signal handler.
    volatile sig_atomic_t on_fiber = 0;
    Fiber *volatile cur_fiber = nullptr;
    // Why the current block was abandoned.
    uint32_t abort_status = RK_OK;
    uint64_t fault_address = 0;
    uint32_t fault_access = 0;
    char message[512];
    // Dynamic shared memory of the current launch.
    void *dyn_shared = nullptr;
    size_t dyn_shared_len = 0;
    bool dyn_shared_guarded = false;
    void *altstack = nullptr;
    // Bump storage for region-form blocks (lane slots, masks): reserved once, committed as used.
    char *arena = nullptr;
    // threadIdx per linear thread id of the current launch's blocks (2-D and 3-D).
    std::vector<rk_uint3> idx_table;
    // RK_ORDER_REVERSED (race check): the order threads run in, as positions. run_order[p] is the
    // thread at position p, run_pos[t] the position of thread t. Unused in the forward order,
    // where position and thread id coincide. (Last, so the fields the block loop touches keep
    // their places: moving them measurably slowed region-form blocks.)
    bool reordered = false;
    std::vector<uint32_t> run_order, run_pos;
    // The race check's watch: the watched bytes as this worker last saw them.
    bool watching = false;
    unsigned char watch_last[8] = {};
};

constexpr size_t ARENA_BYTES = size_t(64) << 20;

__thread Worker *tls_worker = nullptr;

// ---------------------------------------------------------------------------------------------
// Memory: checked allocations are placed so that they end exactly where a guard page begins.

struct Mapping {
    char *map;
    size_t len;
};

// Device buffers of 2 MiB and more ask for transparent huge pages (where the kernel has them set
// to `madvise`): kernels index them as GPUs do, with strides of whole rows and columns, and with
// 4 KiB pages a tiled transpose misses the TLB on nearly every row it touches.
constexpr size_t HUGE_PAGE = size_t(2) << 20;

void advise_huge(void *p, size_t len) {
#ifdef MADV_HUGEPAGE
    if (len >= HUGE_PAGE) madvise(p, len, MADV_HUGEPAGE);
#else
    (void)p;
    (void)len;
#endif
}

// Unchecked allocations of at least HUGE_PAGE: 2 MiB-aligned mappings (zero-filled).
void *huge_alloc(size_t bytes) {
    const size_t len = round_up(bytes, HUGE_PAGE);
    void *map = mmap(nullptr, len + HUGE_PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (map == MAP_FAILED) return nullptr;
    char *base = static_cast<char *>(map);
    char *aligned = reinterpret_cast<char *>(round_up(reinterpret_cast<uintptr_t>(base), HUGE_PAGE));
    if (aligned > base) munmap(base, static_cast<size_t>(aligned - base));
    char *end = base + len + HUGE_PAGE;
    if (end > aligned + len) munmap(aligned + len, static_cast<size_t>(end - (aligned + len)));
    advise_huge(aligned, len);
    return aligned;
}

// A checked allocation of `bytes` starts `align`-aligned (device buffers: 256 bytes, as hipMalloc
// and cudaMalloc align them) and ends at most `align - 1` bytes before the guard page above it:
// the slack between is filled with canaries by the Rust side (RK_CANARY, checked after each
// launch, rocm-kernels/src/runtime/backend/cpu.rs). With `align` 1 it ends exactly at the guard.
constexpr size_t RK_ALLOC_ALIGN = 256;  // ALLOC_ALIGN in cpu.rs

size_t padded_size(size_t bytes, size_t align) { return round_up(bytes, align); }

void *guarded_alloc(size_t bytes, size_t align) {
    const size_t page = static_cast<size_t>(page_size());
    const size_t padded = padded_size(bytes, align);
    const size_t data_pages = round_up(padded ? padded : 1, page);
    const size_t len = data_pages + 2 * page;
    void *map = mmap(nullptr, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (map == MAP_FAILED) return nullptr;
    char *base = static_cast<char *>(map);
    if (mprotect(base + page, data_pages, PROT_READ | PROT_WRITE) != 0) {
        munmap(map, len);
        return nullptr;
    }
    advise_huge(base + page, data_pages);
    return base + page + data_pages - padded;
}

void guarded_free(void *ptr, size_t bytes, size_t align) {
    const size_t page = static_cast<size_t>(page_size());
    const size_t padded = padded_size(bytes, align);
    const size_t data_pages = round_up(padded ? padded : 1, page);
    char *data_end = static_cast<char *>(ptr) + padded;
    char *map = data_end - data_pages - page;
    munmap(map, data_pages + 2 * page);
}

// ---------------------------------------------------------------------------------------------
// Fibers.

Fiber *new_fiber(Worker *w) {
    const size_t page = static_cast<size_t>(page_size());
    const size_t usable = round_up(w->stack_size, page);
    const size_t len = usable + page;
    void *map = mmap(nullptr, len, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
    if (map == MAP_FAILED) return nullptr;
    char *base = static_cast<char *>(map);
    mprotect(base, page, PROT_NONE);  // guard below the stack: overflow faults
    Fiber *f = new (std::nothrow) Fiber();
    if (!f) {
        munmap(map, len);
        return nullptr;
    }
    f->map = base;
    f->map_len = len;
    f->lo = base + page;
    // Stagger the top of each stack over 64 cache lines: stacks are page-aligned mappings, so
    // their hot top frames would otherwise all map to the same cache sets and evict each other
    // on every switch of a block's fibers.
    f->hi = base + len - (w->fibers.size() * 7 % 64) * 64;
    f->worker = w;
    return f;
}

void fiber_main(Fiber *f);

// Make `f` start running fiber_main(f) at its next switch.
void prepare(Fiber *f) {
    uintptr_t top = reinterpret_cast<uintptr_t>(f->hi) & ~uintptr_t(15);
    void **sp = reinterpret_cast<void **>(top - 72);
    sp[0] = nullptr;                                   // r15
    sp[1] = nullptr;                                   // r14
    sp[2] = reinterpret_cast<void *>(&fiber_main);     // r13: function
    sp[3] = f;                                         // r12: argument
    sp[4] = nullptr;                                   // rbx
    sp[5] = nullptr;                                   // rbp
    sp[6] = reinterpret_cast<void *>(&rk_fiber_boot);  // return address
    f->sp = sp;
}

[[noreturn]] void abandon_block(Worker *w) {
    Fiber *self = w->cur_fiber;
    rk_switch(&self->sp, w->sched_sp);
    __builtin_unreachable();
}

[[noreturn]] void fail(Worker *w, uint32_t status, const char *fmt, ...) {
    w->abort_status = status;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w->message, sizeof w->message, fmt, ap);
    va_end(ap);
    abandon_block(w);
}

inline uint32_t linear(const rk_uint3 &i, const rk_uint3 &d) { return i.x + d.x * (i.y + d.y * i.z); }

inline rk_uint3 unlinear(uint32_t t, const rk_uint3 &d) {
    return rk_uint3{t % d.x, (t / d.x) % d.y, t / (d.x * d.y)};
}


bool ensure_fibers(Worker *w, uint32_t n) {
    while (w->fibers.size() < n) {
        Fiber *f = new_fiber(w);
        if (!f) return false;
        w->fibers.push_back(f);
    }
    return true;
}

// Switch from the current context (saved in *save) to thread `tid` of the block.
__attribute__((always_inline)) inline void resume(Worker *w, uint32_t tid, void **save) {
    Slot &s = w->slots[tid];
    if (w->states[tid] == NOT_STARTED) {
        Fiber *f = s.fiber;
        f->begin = tid;
        f->end = tid + 1;
        f->tid = tid;
        if (!f->parked) prepare(f);
        f->parked = false;
        s.sp = f->sp;
        w->states[tid] = RUNNABLE;
    }
    rk_cur.thread_idx = s.idx;
    w->cur_tid = tid;
    w->cur_fiber = s.fiber;
    rk_switch(save, s.sp);
}

__attribute__((always_inline)) inline uint32_t next_runnable(Worker *w, uint32_t from) {
    for (uint32_t t = from; t < w->nthreads; ++t) {
        uint8_t st = w->states[t];
        if (st == RUNNABLE || st == NOT_STARTED) return t;
    }
    return w->nthreads;
}

// Leave the current fiber: on to the next thread of this round, or back to the scheduler.
bool resolve_wave(Worker *w, uint32_t base, uint32_t end);

void leave_reordered(Worker *w, uint32_t tid, void **save);

__attribute__((always_inline)) inline void leave(Worker *w, uint32_t tid, void **save) {
    if (__builtin_expect(w->reordered, 0)) return leave_reordered(w, tid, save);
    uint32_t from = tid + 1;
    // The last lane of a wave has stopped: every lane of the wave has run since the wave's last
    // collective, so one pending now can be resolved at once and the wave run on. Keeping a wave
    // on the CPU through a run of shuffles keeps its fibers' stacks in cache.
    const uint32_t ws = rk_cur.wave_size;
    const uint32_t base = tid & ~(ws - 1);  // wave sizes are powers of two
    const uint32_t end = base + ws < w->nthreads ? base + ws : w->nthreads;
    if (tid + 1 == end && w->warp_waiting && resolve_wave(w, base, end)) from = base;
    uint32_t next = next_runnable(w, from);
    if (next == tid) return;  // its own wave's collective, resolved: it runs on (see resume)
    if (next < w->nthreads)
        resume(w, next, save);
    else
        rk_switch(save, w->sched_sp);
}

// The same in RK_ORDER_REVERSED, where the round goes by position (run_order) instead of thread
// id: a wave's lanes still hold consecutive positions, in one direction or the other, so a wave
// is resolved when the last of its lanes in the round has stopped.
uint32_t next_runnable_position(Worker *w, uint32_t from) {
    for (uint32_t p = from; p < w->nthreads; ++p) {
        uint8_t st = w->states[w->run_order[p]];
        if (st == RUNNABLE || st == NOT_STARTED) return p;
    }
    return w->nthreads;
}

__attribute__((noinline)) void leave_reordered(Worker *w, uint32_t tid, void **save) {
    const uint32_t at = w->run_pos[tid];
    uint32_t from = at + 1;
    const uint32_t ws = rk_cur.wave_size;
    const uint32_t base = tid & ~(ws - 1);
    const uint32_t end = base + ws < w->nthreads ? base + ws : w->nthreads;
    const uint32_t a = w->run_pos[base], b = w->run_pos[end - 1];
    const uint32_t first = a < b ? a : b, last = a < b ? b : a;
    if (at == last && w->warp_waiting && resolve_wave(w, base, end)) from = first;
    const uint32_t next = next_runnable_position(w, from);
    if (next < w->nthreads && w->run_order[next] == tid) return;  // as in `leave`
    if (next < w->nthreads)
        resume(w, w->run_order[next], save);
    else
        rk_switch(save, w->sched_sp);
}

// The thread a round starts with in RK_ORDER_REVERSED; nthreads if none.
__attribute__((noinline)) uint32_t first_runnable_reordered(Worker *w) {
    const uint32_t p = next_runnable_position(w, 0);
    return p < w->nthreads ? w->run_order[p] : w->nthreads;
}

// The order of RK_ORDER_REVERSED (abi.h; entry.h's run_ordered runs the plain loop in it).
// Kept as a table: the scheduler only needs each wave's lanes at consecutive positions.
void order_of(Worker *w) {
    const uint32_t n = w->nthreads;
    if (w->run_order.size() < n) w->run_order.resize(n);
    if (w->run_pos.size() < n) w->run_pos.resize(n);
    for (uint32_t p = 0; p < n; ++p) {
        w->run_order[p] = n - 1 - p;
        w->run_pos[n - 1 - p] = p;
    }
}

// First wait of the block: threads before `tid` (in the run order) have returned; `tid` keeps
// fiber 0, every other thread gets its own fiber.
__attribute__((noinline)) void enter_fiber_mode(Worker *w, uint32_t tid) {
    w->fiber_mode = true;
    rk_cur.fiber_mode = 1;
    if (!w->slots_ready) {
        // Once per launch: every thread's coordinates and fiber.
        if (!ensure_fibers(w, w->nthreads))
            fail(w, RK_FAULT, "could not allocate %u fiber stacks of %zu bytes", w->nthreads,
                 w->stack_size);
        const rk_uint3 dim = rk_cur.block_dim;
        rk_uint3 idx{0, 0, 0};
        for (uint32_t t = 0; t < w->nthreads; ++t) {
            Slot &s = w->slots[t];
            s.idx = idx;
            s.fiber = w->fibers[t];
            if (++idx.x == dim.x) {
                idx.x = 0;
                if (++idx.y == dim.y) {
                    idx.y = 0;
                    ++idx.z;
                }
            }
        }
        w->slots_ready = true;
    } else {
        // Undo the last block's exchange of fibers 0 and fiber0_tid.
        w->slots[w->fiber0_tid].fiber = w->fibers[w->fiber0_tid];
        w->slots[0].fiber = w->fibers[0];
    }
    // `tid` keeps fiber 0; thread 0 takes fiber `tid` (in the forward order it has returned and
    // never runs again).
    w->fiber0_tid = tid;
    w->slots[tid].fiber = w->fibers[0];
    if (tid != 0) w->slots[0].fiber = w->fibers[tid];
    if (__builtin_expect(w->reordered, 0)) {
        const uint32_t at = w->run_pos[tid];
        for (uint32_t p = 0; p < w->nthreads; ++p) w->states[w->run_order[p]] = p < at ? DONE : NOT_STARTED;
        w->done_count = at;
    } else {
        memset(w->states.data(), DONE, tid);
        memset(w->states.data() + tid, NOT_STARTED, w->nthreads - tid);
        w->done_count = tid;
    }
    w->cur_fiber->tid = tid;
    w->cur_tid = tid;
}

// The current thread's index in the block: kept by the scheduler in fiber mode, computed from
// threadIdx (set by the plain loop) otherwise.
__attribute__((always_inline)) inline uint32_t current_tid(Worker *w) {
    if (__builtin_expect(w->fiber_mode, 1)) return w->cur_tid;
    return linear(rk_cur.thread_idx, rk_cur.block_dim);
}

// The race check's watch run: if the watched bytes changed since the last look, the current
// thread changed them (threads run one at a time on one worker between the points this is called
// at: a thread returning, or waiting at a barrier or collective).
// The bytes the race check's watch run looks at.
inline const void *watched(const rk_launch_desc *d) {
    return reinterpret_cast<const void *>(static_cast<uintptr_t>(d->watch_addr));
}

__attribute__((noinline, cold)) void watch_point(Worker *w) {
    const rk_launch_desc *d = w->launch->desc;
    if (memcmp(w->watch_last, watched(d), d->watch_len) == 0) return;
    memcpy(w->watch_last, watched(d), d->watch_len);
    Launch *l = w->launch;
    std::lock_guard<std::mutex> g(l->error_lock);
    ++l->watch_changes;
    l->watch_block = rk_cur.block_idx;
    l->watch_thread = rk_cur.thread_idx;
}

// The current thread waits (barrier or collective) until the scheduler releases it.
__attribute__((always_inline)) inline void wait_here(Worker *w, uint32_t tid, uint8_t state) {
    if (__builtin_expect(w->watching, 0)) watch_point(w);
    if (__builtin_expect(!w->fiber_mode, 0)) enter_fiber_mode(w, tid);
    w->states[tid] = state;
    leave(w, tid, &w->slots[tid].sp);
    // Resumed by `resume`, which restored rk_cur.thread_idx and w->cur_tid (or never left: a
    // collective of its own wave that `leave` resolved at once).
}

void fiber_main(Fiber *f) {
    Worker *w = f->worker;
    for (;;) {
        rk_call call{f->op, f->begin, f->end, w->launch->desc->args, nullptr};
        w->launch->desc->entry(&call);
        if (!w->fiber_mode) {
            // The whole block ran as a plain loop (on fiber 0, which is prepared afresh).
            rk_switch(&f->sp, w->sched_sp);
            __builtin_unreachable();
        }
        const uint32_t tid = f->tid;
        w->states[tid] = DONE;
        ++w->done_count;
        // Park: `resume` continues here with the next thread this fiber runs.
        f->parked = true;
        leave(w, tid, &f->sp);
    }
}

// ---------------------------------------------------------------------------------------------
// Collectives.

uint64_t lane_mask_bit(uint32_t lane) { return uint64_t(1) << lane; }

// Resolve the collective lanes [base, end) of one wave wait in, if any; returns whether it did.
bool resolve_wave(Worker *w, uint32_t base, uint32_t end) {
    const uint32_t ws = rk_cur.wave_size;
    bool any = false;
    {
        // The op of the first waiting lane; lanes waiting in another op go next round.
        int op = -1;
        uint64_t active = 0;
        for (uint32_t t = base; t < end; ++t) {
            Slot &s = w->slots[t];
            if (w->states[t] != AT_WARP) continue;
            if (op < 0) op = s.op;
            if (s.op == op) active |= lane_mask_bit(t - base);
        }
        if (op < 0) return false;
        any = true;
        uint64_t ballot = 0;
        for (uint32_t t = base; t < end; ++t)
            if ((active & lane_mask_bit(t - base)) && w->slots[t].value) ballot |= lane_mask_bit(t - base);
        for (uint32_t t = base; t < end; ++t) {
            const uint32_t lane = t - base;
            if (!(active & lane_mask_bit(lane))) continue;
            Slot &s = w->slots[t];
            int32_t width = s.width;
            if (width <= 0 || width > static_cast<int32_t>(ws) || (width & (width - 1)))
                width = static_cast<int32_t>(ws);
            const uint32_t seg = lane & ~uint32_t(width - 1);
            const uint32_t in_seg = lane & uint32_t(width - 1);
            int64_t src = lane;
            switch (s.op) {
                case RK_WARP_SHFL: src = seg + (uint32_t(s.arg) & uint32_t(width - 1)); break;
                case RK_WARP_SHFL_UP:
                    src = in_seg >= uint32_t(s.arg) ? int64_t(lane) - s.arg : int64_t(lane);
                    break;
                case RK_WARP_SHFL_DOWN:
                    src = in_seg + uint32_t(s.arg) < uint32_t(width) ? int64_t(lane) + s.arg : int64_t(lane);
                    break;
                case RK_WARP_SHFL_XOR: {
                    uint32_t x = lane ^ uint32_t(s.arg);
                    src = x >= seg + uint32_t(width) ? lane : x;
                    break;
                }
                default: break;
            }
            switch (s.op) {
                case RK_WARP_SHFL:
                case RK_WARP_SHFL_UP:
                case RK_WARP_SHFL_DOWN:
                case RK_WARP_SHFL_XOR: {
                    // A lane outside the wave or not taking part reads its own value.
                    uint32_t from = static_cast<uint32_t>(src);
                    if (src < 0 || from >= ws || base + from >= end || !(active & lane_mask_bit(from)))
                        from = lane;
                    s.result = w->slots[base + from].value;
                    break;
                }
                case RK_WARP_BALLOT: s.result = ballot; break;
                case RK_WARP_ANY: s.result = ballot != 0; break;
                case RK_WARP_ALL: s.result = ballot == active; break;
                case RK_WARP_ACTIVEMASK: s.result = active; break;
                default: s.result = 0; break;
            }
            w->states[t] = RUNNABLE;
            --w->warp_waiting;
        }
    }
    return any;
}

// Resolve every wave's pending collective. Returns whether any was.
bool resolve_warps(Worker *w) {
    const uint32_t ws = rk_cur.wave_size;
    bool any = false;
    for (uint32_t base = 0; base < w->nthreads; base += ws)
        any |= resolve_wave(w, base, base + ws < w->nthreads ? base + ws : w->nthreads);
    return any;
}

// ---------------------------------------------------------------------------------------------
// Blocks.

void record_error(Worker *w, uint64_t pos, uint32_t status) {
    Launch *l = w->launch;
    std::lock_guard<std::mutex> g(l->error_lock);
    if (l->has_error && l->error_pos <= pos) return;
    l->has_error = true;
    l->error_pos = pos;
    rk_launch_result &r = l->error;
    memset(&r, 0, sizeof r);
    r.status = status;
    r.block[0] = rk_cur.block_idx.x;
    r.block[1] = rk_cur.block_idx.y;
    r.block[2] = rk_cur.block_idx.z;
    r.thread[0] = rk_cur.thread_idx.x;
    r.thread[1] = rk_cur.thread_idx.y;
    r.thread[2] = rk_cur.thread_idx.z;
    r.address = w->fault_address;
    r.access = w->fault_access;
    snprintf(r.message, sizeof r.message, "%s", w->message);
}

// Reset the worker's per-block state for block `block` (the first of a chunk for
// RK_CALL_RUN_BLOCKS) and start fiber 0 on the entry with `op` over [begin, end). Returns when
// fiber 0 first switches back: the block (or chunk) is done, waits, or failed.
void start_block(Worker *w, uint64_t block, uint32_t op, uint32_t begin, uint32_t end) {
    const rk_launch_desc *d = w->launch->desc;
    rk_cur.block_idx = rk_uint3{uint32_t(block % d->grid[0]), uint32_t((block / d->grid[0]) % d->grid[1]),
                                uint32_t(block / (uint64_t(d->grid[0]) * d->grid[1]))};
    w->fiber_mode = false;
    rk_cur.fiber_mode = 0;
    w->warp_waiting = 0;
    w->done_count = 0;
    w->pred_count = 0;
    w->rg_waiting = 0;
    w->abort_status = RK_OK;
    w->message[0] = 0;
    w->fault_address = 0;
    w->fault_access = 0;
    // A block abandoned by a fault leaves these behind.
    rk_cur.region = 0;
    rk_cur.arena_cur = w->arena;
    Fiber *f0 = w->fibers[0];
    f0->op = op;
    f0->begin = begin;
    f0->end = end;
    f0->tid = 0;
    f0->parked = false;
    prepare(f0);
    rk_cur.thread_idx = rk_uint3{0, 0, 0};
    w->cur_fiber = f0;
    w->on_fiber = 1;
    rk_switch(&w->sched_sp, f0->sp);
}

// A chunk of blocks [first, end) of a kernel that never waits (region form, whole blocks): one
// fiber start for the chunk instead of one per block. False when a block failed (recorded).
bool run_blocks(Worker *w, uint64_t first, uint64_t end) {
    const rk_launch_desc *d = w->launch->desc;
    start_block(w, first, RK_CALL_RUN_BLOCKS, static_cast<uint32_t>(first), static_cast<uint32_t>(end));
    w->on_fiber = 0;
    w->cur_fiber = nullptr;
    if (w->abort_status != RK_OK) {
        const rk_uint3 b = rk_cur.block_idx;
        record_error(w, b.x + uint64_t(d->grid[0]) * (b.y + uint64_t(d->grid[1]) * b.z), w->abort_status);
        return false;
    }
    return true;
}

// A barrier that not every thread of the block reaches: `active` threads wait at it; of the
// others, `returned` returned, `skipped` skip it in divergent control flow and `finished` finished
// the kernel without it. The block fails naming the first waiting thread (linear id
// first_active) and the first one not there (first_off).
void partial_barrier(Worker *w, uint32_t active, uint32_t returned, uint32_t skipped, uint32_t finished,
                     uint32_t first_active, uint32_t first_off) {
    rk_cur.thread_idx = unlinear(first_active, rk_cur.block_dim);
    const rk_uint3 e = unlinear(first_off, rk_cur.block_dim);
    if (!skipped && !finished) {
        snprintf(w->message, sizeof w->message,
                 "%u thread(s) wait at __syncthreads() but %u thread(s) of the block "
                 "returned without reaching it (the first: thread (%u,%u,%u)); every "
                 "thread of a block must reach every barrier",
                 active, returned, e.x, e.y, e.z);
    } else {
        snprintf(w->message, sizeof w->message,
                 "%u thread(s) wait at __syncthreads() but %u thread(s) of the block do not "
                 "reach it (%u returned, %u skip it in divergent control flow, %u finished "
                 "the kernel without it; the first: thread (%u,%u,%u)); every thread of a "
                 "block must reach every barrier",
                 active, returned + skipped + finished, returned, skipped, finished, e.x, e.y, e.z);
    }
    w->abort_status = RK_PARTIAL_BARRIER;
}

// Region form, every live wave at a barrier: were all threads of the block there, at the same
// barrier? If not, the block fails with a message counting threads (not waves).
bool region_barrier_ok(Worker *w) {
    const uint32_t ws = rk_cur.wave_size;
    uint32_t finished = 0, first_finished = w->block_threads;
    for (uint32_t t = 0; t < w->nthreads; ++t) {
        if (w->states[t] != DONE) continue;
        const uint32_t base = t * ws;
        finished += base + ws < w->block_threads ? ws : w->block_threads - base;
        if (base < first_finished) first_finished = base;
    }
    const uint32_t others = w->rg_returned + w->rg_skipped + finished;
    if (w->rg_mixed_sites) {
        rk_cur.thread_idx = unlinear(w->rg_first_active, rk_cur.block_dim);
        const rk_uint3 e = unlinear(w->rg_other_site_thread, rk_cur.block_dim);
        snprintf(w->message, sizeof w->message,
                 "threads of the block wait at different __syncthreads() calls (thread (%u,%u,%u) "
                 "at another one than this thread): control flow around barriers diverges; every "
                 "thread of a block must reach every barrier",
                 e.x, e.y, e.z);
        w->abort_status = RK_PARTIAL_BARRIER;
        return false;
    }
    if (others && w->rg_active) {
        partial_barrier(w, w->rg_active, w->rg_returned, w->rg_skipped, finished, w->rg_first_active,
                        w->rg_first_off < first_finished ? w->rg_first_off : first_finished);
        return false;
    }
    w->rg_waiting = 0;
    return true;
}

// Run one block; false when it failed (the error is recorded).
bool run_block(Worker *w, uint64_t pos, uint64_t block) {
    start_block(w, block, RK_CALL_RUN, 0, w->nthreads);
    while (w->abort_status == RK_OK && w->fiber_mode) {
        // End of a round: every live thread waits in a barrier or a collective.
        if (w->launch->timed_out.load(std::memory_order_relaxed)) {
            w->abort_status = RK_TIMEOUT;
            break;
        }
        if (w->warp_waiting == 0 || !resolve_warps(w)) {
            // No collective pending: every live thread waits at the barrier.
            const uint32_t done = w->done_count;
            if (done == w->nthreads) break;  // all returned
            if (w->region_waves) {
                if (!region_barrier_ok(w)) break;
            } else if (done) {
                uint32_t first_done = 0, first_waiting = 0;
                while (w->states[first_done] != DONE) ++first_done;
                while (w->states[first_waiting] == DONE) ++first_waiting;
                partial_barrier(w, w->nthreads - done, done, 0, 0, first_waiting, first_done);
                break;
            }
            w->barrier_result = w->pred_count;
            w->pred_count = 0;
            if (w->region_waves) {
                // Waves that finished the kernel stay finished.
                for (uint32_t t = 0; t < w->nthreads; ++t)
                    if (w->states[t] == AT_BARRIER) w->states[t] = RUNNABLE;
            } else {
                memset(w->states.data(), RUNNABLE, w->nthreads);
            }
        }
        const uint32_t first =
            __builtin_expect(w->reordered, 0) ? first_runnable_reordered(w) : next_runnable(w, 0);
        if (first >= w->nthreads) break;
        w->on_fiber = 1;
        resume(w, first, &w->sched_sp);
    }
    w->on_fiber = 0;
    w->cur_fiber = nullptr;
    if (w->abort_status != RK_OK) {
        record_error(w, pos, w->abort_status);
        return false;
    }
    return true;
}

// ---------------------------------------------------------------------------------------------
// Signals.

struct sigaction old_segv, old_bus, old_urg;

extern "C" [[noreturn]] void rk_abort_trampoline() { abandon_block(tls_worker); }

bool in_switch(uintptr_t ip) {
    return ip >= reinterpret_cast<uintptr_t>(rk_switch_begin) &&
           ip < reinterpret_cast<uintptr_t>(rk_switch_end);
}

void chain(int sig, siginfo_t *info, void *uctx, const struct sigaction &old) {
    if (old.sa_flags & SA_SIGINFO) {
        if (old.sa_sigaction) old.sa_sigaction(sig, info, uctx);
        return;
    }
    if (old.sa_handler == SIG_IGN) return;
    if (old.sa_handler == SIG_DFL) {
        if (sig == SIGURG) return;  // default: ignore
        // Restore the default action; returning re-runs the faulting instruction, which then
        // terminates the process as it would have without us.
        signal(sig, SIG_DFL);
        return;
    }
    old.sa_handler(sig);
}

void on_signal(int sig, siginfo_t *info, void *uctx) {
    Worker *w = tls_worker;
    ucontext_t *uc = static_cast<ucontext_t *>(uctx);
    if (w && w->on_fiber) {
        Fiber *f = w->cur_fiber;
        const uintptr_t sp = static_cast<uintptr_t>(uc->uc_mcontext.gregs[REG_RSP]);
        const uintptr_t ip = static_cast<uintptr_t>(uc->uc_mcontext.gregs[REG_RIP]);
        if (f && sp >= reinterpret_cast<uintptr_t>(f->map) && sp < reinterpret_cast<uintptr_t>(f->hi) &&
            !in_switch(ip)) {
            if (sig == SIGURG) {
                if (!w->launch || !w->launch->timed_out.load(std::memory_order_relaxed)) return;
                w->abort_status = RK_TIMEOUT;
            } else {
                const uintptr_t addr = reinterpret_cast<uintptr_t>(info->si_addr);
                if (addr >= reinterpret_cast<uintptr_t>(f->map) && addr < reinterpret_cast<uintptr_t>(f->lo)) {
                    w->abort_status = RK_STACK_OVERFLOW;
                    snprintf(w->message, sizeof w->message,
                             "stack overflow in a kernel thread (its stack is %zu bytes; raise "
                             "CpuOptions::stack_size, or look for deep recursion or large local arrays)",
                             w->stack_size);
                } else {
                    w->abort_status = RK_MEMORY_FAULT;
                    w->fault_address = addr;
                    if (sig == SIGSEGV && info->si_code == SI_KERNEL) {
                        // A general-protection fault, not a page fault: no address is known
                        // (an aligned vector access to a misaligned address, most often).
                        w->fault_access = 3;
                    } else {
                        // x86 page-fault error code: bit 1 set for a write.
                        w->fault_access =
                            sig == SIGSEGV ? ((uc->uc_mcontext.gregs[REG_ERR] & 2) ? 2 : 1) : 0;
                    }
                }
            }
            // Continue in rk_abort_trampoline at the top of this fiber's stack (it is abandoned).
            uintptr_t top = (reinterpret_cast<uintptr_t>(f->hi) - 256) & ~uintptr_t(15);
            uc->uc_mcontext.gregs[REG_RSP] = static_cast<greg_t>(top - 8);
            uc->uc_mcontext.gregs[REG_RIP] = reinterpret_cast<greg_t>(&rk_abort_trampoline);
            return;
        }
    }
    chain(sig, info, uctx, sig == SIGSEGV ? old_segv : sig == SIGBUS ? old_bus : old_urg);
}

struct sigaction our_action() {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_signal;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    return sa;
}

std::atomic<bool> handlers_installed{false};

void install_handlers() {
    static std::once_flag once;
    std::call_once(once, [] {
        struct sigaction sa = our_action();
        sigaction(SIGSEGV, &sa, &old_segv);
        sigaction(SIGBUS, &sa, &old_bus);
        sigaction(SIGURG, &sa, &old_urg);
        handlers_installed.store(true);
    });
}

}  // namespace

// A library loaded later may install its own handlers in front of ours (hipRTC brings LLVM's):
// a kernel's guard-page fault then reaches that handler first, which knows nothing of fibers and
// crashes the process. Put ours back in front, still chaining to what was there before ours —
// not to the newcomer: LLVM's handler restores its predecessor (ours) and returns, so chaining to
// it from ours would fault forever. Called after every hipRTC load and compile.
extern "C" void rk_signal_handlers_first(void) {
    if (!handlers_installed.load()) return;  // installed in front when the first pool starts
    struct sigaction sa = our_action();
    for (int sig : {SIGSEGV, SIGBUS, SIGURG}) {
        struct sigaction current;
        if (sigaction(sig, nullptr, &current) != 0) continue;
        if ((current.sa_flags & SA_SIGINFO) && current.sa_sigaction == on_signal) continue;
        sigaction(sig, &sa, nullptr);
    }
}

namespace {

// ---------------------------------------------------------------------------------------------
// The pool.

struct Pool {
    std::vector<Worker *> workers;
    std::mutex launch_lock;  // one launch at a time
    std::mutex lock;
    std::condition_variable wake, finished;
    uint64_t generation = 0;
    uint32_t busy = 0;
    bool shutdown = false;
    Launch *launch = nullptr;
};

bool prepare_launch(Worker *w, Launch *l) {
    const rk_launch_desc *d = l->desc;
    w->launch = l;
    w->slots_ready = false;
    w->fiber0_tid = 0;
    w->block_threads = d->block[0] * d->block[1] * d->block[2];
    w->region_waves = d->region_waves != 0;
    // Region form: the entry runs waves, and they are what the runtime schedules.
    w->nthreads = w->region_waves ? (w->block_threads + d->wave_size - 1) / d->wave_size : w->block_threads;
    if (w->slots.size() < w->nthreads) w->slots.resize(w->nthreads);
    if (w->states.size() < w->nthreads) w->states.resize(w->nthreads);
    memset(w->slots.data(), 0, sizeof(Slot) * w->nthreads);
    if (!ensure_fibers(w, 1)) return false;
    rk_cur.block_dim = rk_uint3{d->block[0], d->block[1], d->block[2]};
    rk_cur.grid_dim = rk_uint3{d->grid[0], d->grid[1], d->grid[2]};
    rk_cur.wave_size = d->wave_size;
    rk_cur.thread_order = d->thread_order == RK_ORDER_REVERSED ? RK_ORDER_REVERSED : RK_ORDER_FORWARD;
    w->reordered = rk_cur.thread_order == RK_ORDER_REVERSED;
    if (w->reordered) order_of(w);
    w->watching = d->watch_addr != 0 && d->watch_len != 0 && d->watch_len <= sizeof w->watch_last;
    rk_cur.watch = w->watching;
    if (w->watching)
        memcpy(w->watch_last, watched(d), d->watch_len);
    rk_cur.dyn_shared_bytes = d->shared_bytes;
    w->dyn_shared = nullptr;
    w->dyn_shared_guarded = d->checked != 0;
    w->dyn_shared_len = d->shared_bytes;
    if (d->shared_bytes) {
        w->dyn_shared = w->dyn_shared_guarded ? guarded_alloc(d->shared_bytes, 1)
                                              : aligned_alloc(256, round_up(d->shared_bytes, 256));
        if (!w->dyn_shared) return false;
        // Zeroed, as guarded memory is: a kernel reading it before writing then sees the same
        // values in every launch (the race check compares two).
        if (!w->dyn_shared_guarded) memset(w->dyn_shared, 0, d->shared_bytes);
    }
    rk_cur.dyn_shared = w->dyn_shared;
    rk_cur.exec_fibers = d->exec_fibers;
    rk_cur.exec_blocks = d->exec_blocks;
    rk_cur.checked = d->publish;
    rk_cur.idx_table = nullptr;
    if (d->block[1] != 1 || d->block[2] != 1) {
        // Indexed by the block's linear thread ids (region forms look up their lanes' there),
        // not by the runtime's threads, which are waves in region form.
        w->idx_table.resize(w->block_threads);
        rk_uint3 i{0, 0, 0};
        for (uint32_t t = 0; t < w->block_threads; ++t) {
            w->idx_table[t] = i;
            if (++i.x == d->block[0]) {
                i.x = 0;
                if (++i.y == d->block[1]) {
                    i.y = 0;
                    ++i.z;
                }
            }
        }
        rk_cur.idx_table = w->idx_table.data();
    }
    rk_cur.region = 0;
    if (!w->arena) {
        void *a = mmap(nullptr, ARENA_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (a == MAP_FAILED) return false;
        w->arena = static_cast<char *>(a);
    }
    rk_cur.arena_cur = w->arena;
    rk_cur.arena_end = w->arena + ARENA_BYTES;
    return true;
}

void finish_launch(Worker *w) {
    if (w->dyn_shared) {
        if (w->dyn_shared_guarded)
            guarded_free(w->dyn_shared, w->dyn_shared_len, 1);
        else
            free(w->dyn_shared);
    }
    w->dyn_shared = nullptr;
    rk_cur.dyn_shared = nullptr;
    w->launch = nullptr;
}

void work(Worker *w, Launch *l) {
    if (!prepare_launch(w, l)) {
        snprintf(w->message, sizeof w->message, "out of memory preparing a worker (fiber stack or shared memory)");
        rk_cur.block_idx = rk_uint3{0, 0, 0};
        rk_cur.thread_idx = rk_uint3{0, 0, 0};
        record_error(w, 0, RK_FAULT);
        l->stop = true;
        finish_launch(w);
        return;
    }
    // Blocks are taken a few at a time: one shared counter update per block would bounce its
    // cache line between workers for grids of many small blocks.
    const uint64_t workers = w->pool_size;
    uint64_t chunk = l->blocks / (workers * 64);
    chunk = chunk < 1 ? 1 : (chunk > 16 ? 16 : chunk);
    // A launch the race detector checks on several workers: this worker's share, in order.
    uint64_t share_lo = 0, share_hi = 0;
    const bool share = rk_race_worker(w->pool, w->index, l->blocks, &share_lo, &share_hi) != 0;
    const uint64_t limit = share ? share_hi : l->blocks;
    while (!l->stop.load(std::memory_order_relaxed)) {
        const uint64_t first = share ? share_lo : l->next.fetch_add(chunk, std::memory_order_relaxed);
        if (first >= limit) break;
        const uint64_t end = first + chunk < limit ? first + chunk : limit;
        share_lo = end;
        if (l->desc->whole_blocks && l->order.empty()) {
            if (!run_blocks(w, first, end)) l->stop = true;
            continue;
        }
        for (uint64_t pos = first; pos < end && !l->stop.load(std::memory_order_relaxed); ++pos) {
            const uint64_t block = l->order.empty() ? pos : l->order[pos];
            if (!run_block(w, pos, block)) l->stop = true;
        }
    }
    finish_launch(w);
}

void worker_loop(Worker *w) {
    tls_worker = w;
    w->thread = pthread_self();
    // Faults on a fiber stack's guard page need another stack to run the handler on.
    const size_t alt = 64 * 1024;
    w->altstack = mmap(nullptr, alt, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (w->altstack != MAP_FAILED) {
        stack_t ss;
        ss.ss_sp = w->altstack;
        ss.ss_size = alt;
        ss.ss_flags = 0;
        sigaltstack(&ss, nullptr);
    }
    Pool *p = w->pool;
    uint64_t seen = 0;
    for (;;) {
        Launch *l;
        {
            std::unique_lock<std::mutex> g(p->lock);
            p->wake.wait(g, [&] { return p->shutdown || p->generation != seen; });
            if (p->shutdown) break;
            seen = p->generation;
            l = p->launch;
        }
        work(w, l);
        {
            std::lock_guard<std::mutex> g(p->lock);
            if (--p->busy == 0) p->finished.notify_all();
        }
    }
    for (Fiber *f : w->fibers) {
        munmap(f->map, f->map_len);
        delete f;
    }
    w->fibers.clear();
    if (w->arena) munmap(w->arena, ARENA_BYTES);
    w->arena = nullptr;
}

uint64_t splitmix(uint64_t &s) {
    uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Kernel-side entry points.

namespace {
// A barrier or collective reached in a region-form block (which has no fibers to wait on): only
// possible through code the build's transform did not see, such as a call through a pointer.
[[noreturn]] void unseen_collective(Worker *w, const char *what) {
    fail(w, RK_FAULT,
         "%s was reached through code the cpu backend's region form of this kernel does not "
         "contain (a call through a function pointer?); run it with per-thread fibers: "
         "CpuOptions::exec = CpuExec::Fibers, or ROCM_CPU_EXEC=fibers",
         what);
}
}  // namespace

extern "C" void rk_syncthreads(void) {
    Worker *w = tls_worker;
    if (__builtin_expect(!w || !w->on_fiber, 0)) return;  // not in a kernel launched by this runtime
    if (__builtin_expect(rk_cur.region, 0)) unseen_collective(w, "__syncthreads()");
    wait_here(w, current_tid(w), AT_BARRIER);
}

extern "C" void rk_watch_point(void) {
    Worker *w = tls_worker;
    if (w && w->on_fiber && w->watching) watch_point(w);
}

extern "C" int rk_syncthreads_op(int op, int pred) {
    Worker *w = tls_worker;
    if (!w || !w->on_fiber) return pred;
    if (rk_cur.region) unseen_collective(w, "__syncthreads_count/and/or()");
    w->pred_count += pred != 0;
    wait_here(w, current_tid(w), AT_BARRIER);
    const uint32_t count = w->barrier_result;
    switch (op) {
        case RK_BARRIER_COUNT: return static_cast<int>(count);
        case RK_BARRIER_AND: return count == w->nthreads;
        case RK_BARRIER_OR: return count != 0;
        default: return 0;
    }
}

extern "C" uint64_t rk_warp_op(int op, uint64_t value, int32_t arg, int32_t width) {
    Worker *w = tls_worker;
    if (!w || !w->on_fiber) return value;
    if (rk_cur.region) unseen_collective(w, "a warp collective (__shfl, __ballot, ...)");
    const uint32_t tid = current_tid(w);
    Slot &s = w->slots[tid];
    s.op = static_cast<uint8_t>(op);
    s.value = value;
    s.arg = arg;
    s.width = width;
    s.pred = 0;
    ++w->warp_waiting;
    wait_here(w, tid, AT_WARP);
    return w->slots[tid].result;
}

extern "C" void rk_kernel_fault(const char *message) {
    Worker *w = tls_worker;
    if (!w || !w->on_fiber) {
        fprintf(stderr, "kernel fault outside a kernel launch: %s\n", message);
        abort();
    }
    fail(w, RK_FAULT, "%s", message);
}

extern "C" uint32_t rk_region_barrier(const rk_region_wait *r) {
    Worker *w = tls_worker;
    if (!w || !w->on_fiber) return r->value;
    if (w->rg_waiting++ == 0) {
        w->rg_site = r->site;
        w->rg_mixed_sites = false;
        w->rg_active = w->rg_returned = w->rg_skipped = 0;
        w->rg_first_active = w->block_threads;
        w->rg_first_off = w->block_threads;
    } else if (r->site != w->rg_site && r->active) {
        w->rg_mixed_sites = true;
        w->rg_other_site_thread = r->first_active;
    }
    w->rg_active += r->active;
    w->rg_returned += r->returned;
    w->rg_skipped += r->skipped;
    if (r->active && r->first_active < w->rg_first_active) w->rg_first_active = r->first_active;
    if ((r->returned || r->skipped) && r->first_off < w->rg_first_off) w->rg_first_off = r->first_off;
    w->pred_count += r->value;
    wait_here(w, current_tid(w), AT_BARRIER);
    rk_cur.region = 1;
    return w->barrier_result;
}

extern "C" void rk_region_fail(const rk_region_wait *r) {
    Worker *w = tls_worker;
    if (!w || !w->on_fiber) {
        fprintf(stderr, "partial barrier outside a kernel launch\n");
        abort();
    }
    partial_barrier(w, r->active, r->returned, r->skipped, 0, r->first_active, r->first_off);
    abandon_block(w);
}

extern "C" void rk_block_fail(uint32_t status, const char *message) {
    Worker *w = tls_worker;
    if (!w || !w->on_fiber) {
        fprintf(stderr, "kernel fault outside a kernel launch: %s\n", message);
        abort();
    }
    fail(w, status, "%s", message);
}

extern "C" void rk_assert_fail(const char *assertion, const char *file, unsigned int line,
                               const char *function) noexcept {
    Worker *w = tls_worker;
    if (!w || !w->on_fiber) {
        fprintf(stderr, "%s:%u: %s: Assertion `%s' failed.\n", file, line, function, assertion);
        abort();
    }
    fail(w, RK_FAULT, "assertion `%s` failed at %s:%u in %s", assertion, file, line, function);
}

// ---------------------------------------------------------------------------------------------
// Host-side API.

extern "C" rk_pool *rk_pool_create(uint32_t threads, uint64_t stack_size, char *error, uint64_t error_len) {
    install_handlers();
    Pool *p = new (std::nothrow) Pool();
    if (!p) {
        snprintf(error, error_len, "out of memory");
        return nullptr;
    }
    if (threads == 0) threads = 1;
    try {
        for (uint32_t i = 0; i < threads; ++i) {
            Worker *w = new Worker();
            w->pool = p;
            w->stack_size = stack_size;
            w->pool_size = threads;
            w->index = i;
            p->workers.push_back(w);
            w->handle = std::thread(worker_loop, w);
        }
    } catch (const std::exception &e) {
        snprintf(error, error_len, "could not start worker threads: %s", e.what());
        rk_pool_destroy(reinterpret_cast<rk_pool *>(p));
        return nullptr;
    }
    return reinterpret_cast<rk_pool *>(p);
}

extern "C" void rk_pool_destroy(rk_pool *pool) {
    Pool *p = reinterpret_cast<Pool *>(pool);
    {
        std::lock_guard<std::mutex> g(p->lock);
        p->shutdown = true;
    }
    p->wake.notify_all();
    for (Worker *w : p->workers) {
        if (w->handle.joinable()) w->handle.join();
        if (w->altstack && w->altstack != MAP_FAILED) munmap(w->altstack, 64 * 1024);
        delete w;
    }
    delete p;
}

extern "C" uint32_t rk_launch(rk_pool *pool, const rk_launch_desc *desc, rk_launch_result *result) {
    Pool *p = reinterpret_cast<Pool *>(pool);
    memset(result, 0, sizeof *result);
    std::lock_guard<std::mutex> one_at_a_time(p->launch_lock);
    Launch l;
    l.desc = desc;
    l.blocks = uint64_t(desc->grid[0]) * desc->grid[1] * desc->grid[2];
    if (desc->has_seed) {
        l.order.resize(l.blocks);
        for (uint64_t i = 0; i < l.blocks; ++i) l.order[i] = i;
        uint64_t s = desc->seed;
        for (uint64_t i = l.blocks; i > 1; --i) std::swap(l.order[i - 1], l.order[splitmix(s) % i]);
    }
    const auto start = Clock::now();
    {
        std::lock_guard<std::mutex> g(p->lock);
        p->launch = &l;
        p->busy = static_cast<uint32_t>(p->workers.size());
        ++p->generation;
    }
    p->wake.notify_all();
    {
        std::unique_lock<std::mutex> g(p->lock);
        if (desc->time_limit_ns) {
            const auto deadline = start + std::chrono::nanoseconds(desc->time_limit_ns);
            if (!p->finished.wait_until(g, deadline, [&] { return p->busy == 0; })) {
                l.timed_out = true;
                l.stop = true;
                // Kick every worker until all have left their blocks: a worker spinning in kernel
                // code is stopped by the SIGURG handler, one between fibers by the round check.
                while (p->busy != 0) {
                    for (Worker *w : p->workers) pthread_kill(w->thread, SIGURG);
                    p->finished.wait_for(g, std::chrono::milliseconds(10), [&] { return p->busy == 0; });
                }
            }
        } else {
            p->finished.wait(g, [&] { return p->busy == 0; });
        }
        p->launch = nullptr;
    }
    if (l.has_error) *result = l.error;
    result->watch_changes = l.watch_changes;
    const rk_uint3 wb = l.watch_block, wt = l.watch_thread;
    memcpy(result->watch_block, &wb, sizeof result->watch_block);
    memcpy(result->watch_thread, &wt, sizeof result->watch_thread);
    return result->status;
}

extern "C" void *rk_mem_alloc(uint64_t bytes, uint32_t guarded) {
    if (guarded) return guarded_alloc(bytes, RK_ALLOC_ALIGN);
    if (bytes >= HUGE_PAGE) return huge_alloc(bytes);
    void *p = aligned_alloc(256, round_up(bytes ? bytes : 1, 256));
    if (p) memset(p, 0, bytes);
    return p;
}

extern "C" void rk_mem_free(void *ptr, uint64_t bytes, uint32_t guarded) {
    if (!ptr) return;
    if (guarded)
        guarded_free(ptr, bytes, RK_ALLOC_ALIGN);
    else if (bytes >= HUGE_PAGE)
        munmap(ptr, round_up(bytes, HUGE_PAGE));
    else
        free(ptr);
}

namespace {
struct PingPong {
    void *main_sp = nullptr;
    Fiber *fiber = nullptr;
    uint64_t iterations = 0;
};
PingPong *ping_pong = nullptr;
void ping_pong_main() {
    for (;;) rk_switch(&ping_pong->fiber->sp, ping_pong->main_sp);
}
}  // namespace

extern "C" double rk_measure_switch_ns(uint64_t iterations) {
    Worker w;
    w.stack_size = 64 * 1024;
    Fiber *f = new_fiber(&w);
    if (!f) return -1.0;
    PingPong pp;
    pp.fiber = f;
    ping_pong = &pp;
    // A fiber whose body only switches back: fiber_main is not used, so boot straight into it.
    uintptr_t top = reinterpret_cast<uintptr_t>(f->hi) & ~uintptr_t(15);
    void **sp = reinterpret_cast<void **>(top - 72);
    memset(sp, 0, 72);
    sp[2] = reinterpret_cast<void *>(+[](void *) { ping_pong_main(); });
    sp[6] = reinterpret_cast<void *>(&rk_fiber_boot);
    f->sp = sp;
    rk_switch(&pp.main_sp, f->sp);  // warm up: start the fiber
    // CPU time of this thread, not wall time: on a loaded machine the thread is descheduled.
    struct timespec t0, t1;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
    for (uint64_t i = 0; i < iterations; ++i) rk_switch(&pp.main_sp, f->sp);
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t1);
    const double ns = double(t1.tv_sec - t0.tv_sec) * 1e9 + double(t1.tv_nsec - t0.tv_nsec);
    munmap(f->map, f->map_len);
    delete f;
    ping_pong = nullptr;
    return ns / (2.0 * double(iterations));
}

extern "C" uint32_t rk_runtime_supported(void) { return 1; }

#else  // not x86-64 Linux

// The fiber switch and the fault handling (ucontext register names) are written for x86-64
// Linux. Elsewhere the runtime still links, so crates build, and reports itself unsupported.
#include <cstdio>
#include <cstdlib>

__thread rk_ctx rk_cur;

static const char *const unsupported =
    "the cargo-rocm cpu backend runs kernels on x86-64 Linux only";

extern "C" uint32_t rk_runtime_supported(void) { return 0; }
extern "C" void rk_signal_handlers_first(void) {}
extern "C" void rk_syncthreads(void) {}
extern "C" void rk_watch_point(void) {}
extern "C" int rk_syncthreads_op(int, int pred) { return pred; }
extern "C" uint64_t rk_warp_op(int, uint64_t value, int32_t, int32_t) { return value; }
extern "C" void rk_kernel_fault(const char *message) {
    std::fprintf(stderr, "kernel fault: %s\n", message);
    std::abort();
}
extern "C" void rk_block_fail(uint32_t, const char *message) { rk_kernel_fault(message); }
extern "C" uint32_t rk_region_barrier(const rk_region_wait *r) { return r->value; }
extern "C" void rk_region_fail(const rk_region_wait *) { rk_kernel_fault("partial barrier"); }
extern "C" void rk_assert_fail(const char *assertion, const char *file, unsigned int line,
                               const char *function) noexcept {
    std::fprintf(stderr, "%s:%u: %s: Assertion `%s' failed.\n", file, line, function, assertion);
    std::abort();
}
extern "C" rk_pool *rk_pool_create(uint32_t, uint64_t, char *error, uint64_t error_len) {
    std::snprintf(error, error_len, "%s", unsupported);
    return nullptr;
}
extern "C" void rk_pool_destroy(rk_pool *) {}
extern "C" uint32_t rk_launch(rk_pool *, const rk_launch_desc *, rk_launch_result *result) {
    result->status = RK_INVALID;
    std::snprintf(result->message, sizeof result->message, "%s", unsupported);
    return RK_INVALID;
}
extern "C" void *rk_mem_alloc(uint64_t bytes, uint32_t) { return std::calloc(1, bytes ? bytes : 1); }
extern "C" void rk_mem_free(void *ptr, uint64_t, uint32_t) { std::free(ptr); }
extern "C" double rk_measure_switch_ns(uint64_t) { return -1.0; }

#endif
