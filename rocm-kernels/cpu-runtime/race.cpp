// The cpu backend's data-race detector (CpuOptions::race_check, rocm-kernels/src/runtime/backend/
// cpu/race.rs drives it).
//
// The build compiles every kernel a second time with the compiler's ThreadSanitizer
// instrumentation (`-fsanitize=thread`: a call before every load, store and atomic) and renames
// the instrumentation's `__tsan_*` calls to the `rk_tsan_*` functions below, and the kernel's
// barriers and collectives to the rk_race_* wrappers (rocm-kernels-build/src/cpu/race.rs). The
// runtime runs that variant on its workers, each taking a contiguous share of the blocks one after
// another with a detector state of its own ("Parallel checking" below: what cannot be decided so
// is checked again on one worker), a block's threads as region-form lane loops or fibers.
// This file is the other half: the instrumentation's calls land here and are checked against GPU
// rules rather than C++ ones:
//  * Two threads of one block race on an address when at least one writes, not both atomically,
//    and no __syncthreads() lies between them: each thread counts the barriers it has passed (its
//    phase), and since every thread must reach a barrier before any leaves it, two accesses are
//    ordered exactly when their threads' phases differ. Lanes of one wave are also ordered by a
//    collective both took part in (__shfl, __ballot...: each lane counts those too).
//  * Two blocks of one launch race on device memory when at least one writes, not both
//    atomically: blocks run in no fixed order. A block that writes, fences (__threadfence) and then
//    does an atomic releases what it wrote to whoever later does an atomic on the same address
//    (the "last block" pattern of a threadfence reduction).
//  * Volatile accesses count as atomic between blocks and between lanes of one wave (the
//    warp-synchronous code AMD's lockstep waves run correctly); between waves they are plain.
//  * Two writes of the same value race on a GPU but cannot change a result; like compute-
//    sanitizer's racecheck, they are not reported (checked at the next instrumented call, when the
//    second store has happened).
//  * A plain read racing another thread's atomic write is a formal data race (the PTX and C++
//    models), but it reads a whole value, old or new, and CAS loops seeded by a plain read are
//    built on it: reported only in strict mode (rk_race_set_strict; docs/architecture.md has the
//    table of what is reported).
//
// Memory: device allocations (registered by the Rust side), the worker's dynamic shared memory and
// static __shared__ variables (thread-locals of the worker's TLS block) are checked; everything
// else (fiber stacks, host data) is not. Shadow memory is kept per 4 KiB page, allocated on first
// touch: each 8-byte granule remembers up to four accesses (block serial, thread, phase, collective
// count, bytes, read/write/atomic, place), as ThreadSanitizer keeps four; older or superseded ones
// give way first.
//
// Summaries: lane loops of the race variant's region form that the build can describe tell the
// detector their accesses run of lanes by run ahead, and then run uninstrumented (see "Summaries"
// below, and rocm-cpu-frontend's region/codegen/summary.rs).
//
// Why not ThreadSanitizer's own runtime: it must be linked into the executable (the Rust test
// binary, which is not built with it), intercepts malloc and every libc call of the process, reports
// in its own format without GPU notions (blocks, waves, barriers, shared vs device memory), and
// would see the blocks, which run one after another on one worker, as ordered. Its compiler
// instrumentation is the part worth having, and it is a stable ABI (tsan_interface.h).

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "hip/detail/abi.h"
#include "race.h"

#if defined(__x86_64__) && defined(__linux__)

#include <emmintrin.h>
#include <link.h>
#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <deque>
#include <cstdlib>
#include <cstring>
#include <unordered_map>
#include <utility>
#include <vector>

namespace {

constexpr uint8_t F_WRITE = 1, F_ATOMIC = 2, F_VOLATILE = 4;

// One remembered access to a granule.
struct Access {
    uint32_t serial;  // the block's serial number (0: empty)
    uint32_t phase;   // barriers its thread had passed
    uint32_t wsync;   // collectives its thread had taken part in
    uint16_t tid;     // linear thread id in the block
    uint8_t mask;     // bytes of the granule
    uint8_t flags;    // F_*
    uint64_t pc;
};
static_assert(sizeof(Access) == 24, "four accesses per granule");

// Who makes an access: its block's serial, its thread, and where that thread stands (barriers
// passed, collectives taken part in). The hooks take it from the running thread; replaying a
// summary (below) from the summary.
struct Who {
    uint32_t serial, phase, wsync, tid;
};

constexpr unsigned SLOTS = 4;
struct Cell {
    Access a[SLOTS];
};
constexpr unsigned PAGE_BITS = 12;
constexpr uintptr_t PAGE = uintptr_t(1) << PAGE_BITS;
constexpr unsigned GRANULE = 8;
constexpr unsigned CELLS = PAGE / GRANULE;
struct alignas(16) Shadow {
    Cell cell[CELLS];
    // Parallel checking: the bytes of a device page this worker's hooked accesses touched this
    // launch (`stamp` the launch's first serial), as bit masks: plain writes, plain reads, atomic
    // (or volatile) accesses.
    uint32_t stamp;
    uint64_t wbits[PAGE / 64], rbits[PAGE / 64], abits[PAGE / 64];
};

// Page table over 47-bit addresses: an entry is a Shadow pointer (16-byte aligned, or null until
// the page is first touched) with the page's space (rk_race_space, 0: not checked) in its low bits.
constexpr unsigned L2_BITS = 18;
constexpr unsigned L1_BITS = 47 - PAGE_BITS - L2_BITS;
constexpr uintptr_t SPACE_MASK = 3;
// Set where summaries (rk_race_sum_add) cover part of the page; the rest of an entry's low bits.
constexpr uintptr_t SUM_BIT = 4;
// Set where this worker knows the page's bytes from before the launch are saved (parallel
// checking: save_page).
constexpr uintptr_t SAVED_BIT = 8;
constexpr uintptr_t LOW_MASK = 15;

uintptr_t *entry_of(uintptr_t addr, bool create);

struct Race {
    uintptr_t address;
    uint8_t space;
    Access earlier, later;
    uint32_t count;
};

// A write over another thread's unordered write, checked once the store has happened: a race only
// if it changed the bytes.
struct Pending {
    uintptr_t granule;
    uint8_t mask;
    uint8_t space;
    uint64_t before;
    Race race;
};

// A page accessed lately: its shadow (null: nothing of it is checked) and checked window.
struct PageCache {
    uintptr_t page = ~uintptr_t(0);
    Shadow *shadow = nullptr;
    uintptr_t lo = 0, hi = 0;
    uintptr_t skip_lo = 0, skip_hi = 0;  // bytes of the window never checked (rk_cur)
    uint8_t space = 0;
    bool saved = false;  // writes need no save_page first (parallel checking: before_write)
};

constexpr uint32_t MAX_THREADS = 1024;

// A summary: what the lanes of one run of a lane loop (or several, merged) accessed at one place
// of the source, told ahead by code the region form generated (rk_race_sum_add) instead of one
// hook call per access: lane j touched `size` bytes at a0 + s * j, as thread g0 + j (global
// memory: the launch's linear thread, block * threads + thread; shared memory: the thread in the
// block).
// Runs of the same lanes of consecutive rows of one lane loop merge into one summary of `m`
// rows: lane j of row k touched a0 + s * j + s2 * k as thread g0 + j + gs2 * k.
struct Summary {
    uintptr_t lo, hi;  // the bytes between the first and last lane's
    uintptr_t a0;
    intptr_t s;  // 0 when n == 1
    intptr_t s2;
    uint64_t g0;
    uint64_t lin0;  // the block of lane 0 (global memory), and its serial
    uint32_t serial0;
    uint32_t n, m, gs2, size;
    uint32_t phase, wsync;
    uint64_t pc;
    uint8_t flags, space;
    // The bytes of one row: [row_lo(k), row_lo(k) + row_bytes()).
    uintptr_t row_lo(uint32_t k) const { return a0 + uintptr_t(s2) * k + (s < 0 ? uintptr_t(s) * (n - 1) : 0); }
    uintptr_t row_bytes() const { return uintptr_t(s < 0 ? -s : s) * (n - 1) + size; }
};
constexpr unsigned CACHED_PAGE_BITS = 9;
constexpr unsigned CACHED_PAGES = 1u << CACHED_PAGE_BITS;
// Shadow pages kept between launches: up to MAX_SPARE of them as they are (a launch over two
// 16M-float buffers uses 1.5 GiB; the next launch of the same kernel then faults nothing in), up
// to MAX_KEPT in all, those past MAX_SPARE handed to the kernel to take back when it needs the
// memory (MADV_FREE). A launch's own peak is the same either way.
constexpr size_t MAX_SPARE = (size_t(2048) << 20) / sizeof(Shadow);
constexpr size_t MAX_KEPT = (size_t(4096) << 20) / sizeof(Shadow);
constexpr size_t MAX_RACES = 64;

// The summaries that touch one page, writes and reads apart (a read need not be checked against
// reads); for shared memory, of one phase (earlier phases of the block are ordered before it).
struct PageList {
    uint32_t phase = 0;
    std::vector<uint32_t> w, r;
    // The bytes the writes and the reads span: a summary beyond them meets none of them
    // (rows of a tile written in order).
    uintptr_t w_lo = ~uintptr_t(0), w_hi = 0, r_lo = ~uintptr_t(0), r_hi = 0;
    void clear(uint32_t ph) {
        w.clear();
        r.clear();
        w_lo = r_lo = ~uintptr_t(0);
        w_hi = r_hi = 0;
        phase = ph;
    }
};
PageList **plist_slot(uintptr_t addr);

struct State {
    // The page table's (entry_of) and the summaries' page lists' (plist_slot) first levels,
    // mapped on first use (zero, and resident only where touched: one per worker).
    uintptr_t **l1 = nullptr;
    PageList ***plists = nullptr;
    PageList *no_plist = nullptr;
    bool armed = false;
    // Parallel checking: the device pages with hooked accesses this launch (Shadow::stamp).
    std::vector<uintptr_t> foot;
    bool strict = false;  // report plain reads racing atomic writes too (rk_race_set_strict)
    uint32_t wave_size = 64;
    // Block serial numbers: first_serial + the block's linear id (this launch's are all at least
    // first_serial: lower ones in reused shadow pages are empty slots).
    uint32_t first_serial = 1;
    uint32_t cur_serial = 0;
    uint64_t cur_block = ~uint64_t(0);
    rk_uint3 grid{}, block{};
    uint32_t phase[MAX_THREADS];
    uint32_t wsync[MAX_THREADS];
    uint8_t fenced[MAX_THREADS];
    // Where each thread of the current block last called a barrier (kept after the launch, to
    // name the barrier of a partial-barrier fault).
    uint64_t barrier_pc[MAX_THREADS];
    std::vector<uintptr_t *> entries;  // page-table entries set for this launch
    bool locals_registered = false;
    uintptr_t tls_lo = 0, tls_hi = 0;
    uintptr_t dyn_lo = 0, dyn_hi = 0;
    // Releases (a fence, then an atomic) per address: block serial -> (phase, sequence number).
    uint64_t release_seq = 0;
    std::unordered_map<uintptr_t, std::unordered_map<uint32_t, std::pair<uint32_t, uint64_t>>> releases;
    // What the current block acquired: (address, release sequence number at the time).
    std::vector<std::pair<uintptr_t, uint64_t>> acquired;
    std::vector<Race> races;
    uint64_t total = 0;
    // Buffers whose pages hold nothing else (rk_race_bound), sorted by start: accesses to their
    // pages outside them are out of bounds. The first such access, and how many there were.
    std::vector<std::pair<uintptr_t, uintptr_t>> bounds;
    uint64_t oob_count = 0;
    uintptr_t oob_address = 0;
    uint64_t oob_size = 0;
    Access oob{};
    std::vector<Pending> pending;
    unsigned rotor = 0;
    // Pages accessed lately, direct-mapped by page number: fiber stacks (never checked) and the
    // buffers a thread works on stay here across the fiber switches between them.
    PageCache cache[CACHED_PAGES];
    // Shadow pages kept from earlier launches (see MAX_SPARE): the next launch takes them without
    // clearing or faulting in fresh memory.
    std::vector<Shadow *> spare;
    // Where shadow pages come from: chunks of CHUNK_BYTES, handed out in order (`used` bytes of
    // each so far). They were single callocs, freed past MAX_SPARE at the end of a launch: a
    // launch over 16M floats touches 1.5 GiB of shadow, most of which the next one then faulted
    // in and zeroed again.
    struct Chunk {
        char *base;
        size_t used;
    };
    std::vector<Chunk> chunks;
    // Summaries (rk_race_sum_*): on for the launch until one conflicts with another or meets a
    // hooked access, when all of them are replayed as hooked accesses (materialize) and the rest
    // of the launch is checked access by access. Global memory's for the launch, shared memory's
    // for the current block; by page, the summaries that touch it.
    bool sum_on = false;
    bool sum_allowed = true;
    std::vector<Summary> grecs, srecs, stage;
    // By page, the summaries that touch it (PageList), kept by a radix table like the page
    // table's (`plists`) from a pool kept between launches (their vectors keep their capacity);
    // `touched` the pages that have one.
    struct Pages {
        std::vector<uintptr_t> touched;
        std::deque<PageList> pool;
        size_t used = 0;
        PageList *find(uintptr_t p) { return *plist_slot(p); }
        PageList &get(uintptr_t p, bool &created) {
            PageList **slot = plist_slot(p);
            created = *slot == nullptr;
            if (created) {
                if (used == pool.size()) pool.emplace_back();
                PageList *l = &pool[used++];
                l->clear(0);
                *slot = l;
                touched.push_back(p);
            }
            return **slot;
        }
        void clear() {
            for (uintptr_t p : touched) *plist_slot(p) = nullptr;
            touched.clear();
            used = 0;
        }
    };
    Pages gpages, spages;
    // The summary each place of the source added last (to extend it): few places, a short list.
    std::vector<std::pair<uint64_t, uint32_t>> glast, slast;
    // The block whose threads last made a hooked access to shared memory (such a block takes no
    // shared-memory summaries: they would not be checked against those accesses).
    uint32_t gen_shared_serial = 0;
    // Some barrier or collective of the current block counted only some lanes of a wave.
    bool nonuniform = false;
    // This launch's summaries taken (rk_race_sum_add calls committed), and whether they were
    // replayed as hooked accesses (rk_race_summary_stats).
    uint64_t sum_taken = 0;
    uint32_t sum_replayed = 0;
};

constexpr size_t CHUNK_BYTES = size_t(64) << 20;

// The state of one worker's checking (a launch checked on several workers keeps one per worker:
// see "Parallel checking" below); `tS` is the running thread's. Threads that run no checked
// launch see `idle`, never armed.
State idle;
thread_local State *tS = &idle;
inline State &st() { return *tS; }
// `S` was the one global state when a launch was checked on one worker; the code reads it as
// before, now the running worker's.
#define S st()

// How many workers check the launch armed (or last armed). With several, each saves a device
// page before its first write (save_page) and keeps what it touched (`foot`, Shadow's masks).
uint32_t workers = 1;
inline bool parallel() { return workers > 1; }

// One level of a radix table over pages: a slot per page, `L1_BITS` then `L2_BITS` of the page
// number, second levels mapped (zero) on first use.
template <class T>
__attribute__((always_inline)) inline T *radix_slot(T **&top, uintptr_t addr, bool create) {
    const uintptr_t page = addr >> PAGE_BITS;
    const uintptr_t i1 = page >> L2_BITS;
    if (i1 >= (uintptr_t(1) << L1_BITS)) return nullptr;
    if (!top) {
        if (!create) return nullptr;
        void *m = mmap(nullptr, sizeof(T *) << L1_BITS, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                       -1, 0);
        if (m == MAP_FAILED) return nullptr;
        top = static_cast<T **>(m);
    }
    T *l2 = top[i1];
    if (!l2) {
        if (!create) return nullptr;
        void *m = mmap(nullptr, sizeof(T) << L2_BITS, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                       -1, 0);
        if (m == MAP_FAILED) return nullptr;
        l2 = top[i1] = static_cast<T *>(m);
    }
    return &l2[page & ((uintptr_t(1) << L2_BITS) - 1)];
}

uintptr_t *entry_of(uintptr_t addr, bool create) { return radix_slot(S.l1, addr, create); }

// The summaries' page lists by page: the page table's shape, one pointer per page.
PageList **plist_slot(uintptr_t addr) {
    PageList **slot = radix_slot(S.plists, addr, true);
    if (slot) return slot;
    S.no_plist = nullptr;
    return &S.no_plist;
}

void forget_pages() {
    for (PageCache &c : S.cache) c = PageCache{};
}

// Fiber stacks lie a power of two apart: hash the page number rather than take its low bits.
inline PageCache &cached(uintptr_t page) {
    return S.cache[((page >> PAGE_BITS) * 0x9E3779B97F4A7C15ull) >> (64 - CACHED_PAGE_BITS)];
}

inline uint32_t cur_tid() {
    const rk_uint3 &i = rk_cur.thread_idx, &d = rk_cur.block_dim;
    return i.x + d.x * (i.y + d.y * i.z);
}

void set_space(uintptr_t lo, uintptr_t hi, uint8_t space) {
    forget_pages();
    if (hi <= lo) return;
    for (uintptr_t p = lo & ~(PAGE - 1); p < hi; p += PAGE) {
        uintptr_t *e = entry_of(p, true);
        if (!e || (*e & SPACE_MASK)) continue;  // device memory keeps its space
        *e = space;
        S.entries.push_back(e);
    }
}

// The TLS block of the module that holds this file (static __shared__ variables of the kernels
// linked beside it are thread-locals there), for the calling thread.
int find_tls(struct dl_phdr_info *info, size_t, void *data) {
    const uintptr_t self = reinterpret_cast<uintptr_t>(&find_tls);
    bool mine = false;
    const ElfW(Phdr) *tls = nullptr;
    for (int i = 0; i < info->dlpi_phnum; ++i) {
        const ElfW(Phdr) &ph = info->dlpi_phdr[i];
        if (ph.p_type == PT_LOAD) {
            const uintptr_t lo = info->dlpi_addr + ph.p_vaddr;
            if (self >= lo && self < lo + ph.p_memsz) mine = true;
        } else if (ph.p_type == PT_TLS) {
            tls = &ph;
        }
    }
    if (!mine) return 0;
    if (tls && info->dlpi_tls_data) {
        auto *range = static_cast<uintptr_t *>(data);
        range[0] = reinterpret_cast<uintptr_t>(info->dlpi_tls_data);
        range[1] = range[0] + tls->p_memsz;
    }
    return 1;
}

// On the launch's worker, at its first block: its TLS block and dynamic shared memory.
void register_locals() {
    S.locals_registered = true;
    uintptr_t range[2] = {0, 0};
    dl_iterate_phdr(find_tls, range);
    S.tls_lo = range[0];
    S.tls_hi = range[1];
    set_space(S.tls_lo, S.tls_hi, RK_RACE_STATIC_SHARED);
    S.dyn_lo = reinterpret_cast<uintptr_t>(rk_cur.dyn_shared);
    S.dyn_hi = S.dyn_lo ? S.dyn_lo + rk_cur.dyn_shared_bytes : 0;
    set_space(S.dyn_lo, S.dyn_hi, RK_RACE_SHARED);
}

// Forget the summaries of shared memory (which belong to one block) and, with `global`, of
// device memory and those staged: their pages' bits, page lists and records.
void forget_summaries(bool global) {
    auto forget = [](State::Pages &pages) {
        for (uintptr_t pg : pages.touched) {
            uintptr_t *e = entry_of(pg, false);
            if (e) *e &= ~SUM_BIT;
        }
        pages.clear();
    };
    forget(S.spages);
    S.srecs.clear();
    S.slast.clear();
    if (!global) return;
    forget(S.gpages);
    S.grecs.clear();
    S.glast.clear();
    S.stage.clear();
}

__attribute__((noinline)) void new_block(uint64_t linear) {
    S.cur_block = linear;
    S.cur_serial = uint32_t(S.first_serial + linear);
    S.grid = rk_cur.grid_dim;
    S.block = rk_cur.block_dim;
    uint64_t n = uint64_t(S.block.x) * S.block.y * S.block.z;
    if (n > MAX_THREADS) n = MAX_THREADS;
    memset(S.phase, 0, n * sizeof S.phase[0]);
    memset(S.wsync, 0, n * sizeof S.wsync[0]);
    memset(S.fenced, 0, n);
    memset(S.barrier_pc, 0, n * sizeof S.barrier_pc[0]);
    S.acquired.clear();
    forget_summaries(false);
    S.nonuniform = false;
    if (!S.locals_registered) register_locals();
}

inline void sync_block() {
    const rk_uint3 &b = rk_cur.block_idx, &g = rk_cur.grid_dim;
    const uint64_t linear = b.x + uint64_t(g.x) * (b.y + uint64_t(g.y) * b.z);
    if (__builtin_expect(linear != S.cur_block, 0)) new_block(linear);
}

void record(const Race &r) {
    ++S.total;
    for (Race &known : S.races) {
        if (known.earlier.pc == r.earlier.pc && known.later.pc == r.later.pc && known.space == r.space) {
            ++known.count;
            return;
        }
    }
    if (S.races.size() < MAX_RACES) {
        S.races.push_back(r);
        S.races.back().count = 1;
    }
}

uint64_t granule_bytes(uintptr_t granule) {
    uint64_t v;
    memcpy(&v, reinterpret_cast<const void *>(granule), sizeof v);
    return v;
}

uint64_t byte_mask(uint8_t mask) {
    uint64_t m = 0;
    for (unsigned i = 0; i < 8; ++i)
        if (mask & (1u << i)) m |= uint64_t(0xff) << (8 * i);
    return m;
}

__attribute__((noinline)) void flush_pending() {
    for (const Pending &p : S.pending) {
        const uint64_t m = byte_mask(p.mask);
        if ((granule_bytes(p.granule) & m) != (p.before & m)) record(p.race);
    }
    S.pending.clear();
}

// Did the current block acquire what block `serial` released by phase `phase`?
bool acquired_from(uint32_t serial, uint32_t phase) {
    for (const auto &[addr, seq] : S.acquired) {
        auto it = S.releases.find(addr);
        if (it == S.releases.end()) continue;
        auto jt = it->second.find(serial);
        if (jt != it->second.end() && jt->second.second <= seq && jt->second.first >= phase) return true;
    }
    return false;
}

// Check one granule's access against what it remembers, then remember it.
void check_cell(Cell &c, uintptr_t granule, uint8_t mask, uint8_t space, uint8_t flags, uint64_t pc,
                const Who &who) {
    const uint32_t phase = who.phase, wsync = who.wsync, tid = who.tid, serial = who.serial;
    const uint32_t ws = S.wave_size;
    const bool write = flags & F_WRITE;
    const uint8_t sync_like = F_ATOMIC | F_VOLATILE;
    int reuse = -1, rank = 0;
    for (unsigned i = 0; i < SLOTS; ++i) {
        Access &r = c.a[i];
        const bool live = r.serial >= S.first_serial && r.serial != 0 &&
                          (space == RK_RACE_GLOBAL || r.serial == serial);
        if (!live) {
            if (rank < 3) rank = 3, reuse = int(i);
            continue;
        }
        const bool same_block = r.serial == serial;
        if (same_block && r.tid == tid) {
            // This thread's own earlier access: one that covers this one and is at least as strong
            // was already checked against everything this one would be.
            if (r.phase == phase && r.wsync == wsync && (r.mask & mask) == mask &&
                ((r.flags & F_WRITE) || !write) && (!(r.flags & sync_like) || (flags & sync_like)))
                return;
            if ((r.mask & mask) == r.mask && rank < 4) rank = 4, reuse = int(i);
            continue;
        }
        if (!(r.mask & mask)) continue;
        const bool r_write = r.flags & F_WRITE;
        const bool ordered = same_block
                                 ? r.phase != phase || (r.tid / ws == tid / ws && wsync > r.wsync)
                                 : acquired_from(r.serial, r.phase);
        if (ordered || (!write && !r_write)) {
            if (same_block && rank < 2 && !(r_write && !write)) rank = 2, reuse = int(i);
            continue;
        }
        if ((r.flags & F_ATOMIC) && (flags & F_ATOMIC)) continue;
        if ((r.flags & sync_like) && (flags & sync_like) && (!same_block || r.tid / ws == tid / ws))
            continue;
        // A plain read racing an atomic write reads a whole value some thread published
        // atomically, the old one or the new: a formal data race, but the idioms built on it are
        // correct (a CAS loop seeded by a plain read validates it; a monotone update's early exit
        // is right with either value). Reported in strict mode only; a plain write never passes.
        if (!S.strict && ((!write && (r.flags & F_ATOMIC) && r_write) || (write && (flags & F_ATOMIC) && !r_write)))
            continue;
        Race race;
        race.address = granule + __builtin_ctz(unsigned(r.mask & mask));
        race.space = space;
        race.earlier = r;
        race.later = Access{serial, phase, wsync, uint16_t(tid), mask, flags, pc};
        race.count = 0;
        if (write && r_write) {
            S.pending.push_back(Pending{granule, uint8_t(r.mask & mask), space, granule_bytes(granule), race});
        } else {
            record(race);
        }
    }
    if (reuse < 0) reuse = int(S.rotor++ % SLOTS);
    c.a[reuse] = Access{serial, phase, wsync, uint16_t(tid), mask, flags, pc};
}

Shadow *shadow_of(uintptr_t *e) {
    uintptr_t v = *e;
    if (v & ~LOW_MASK) return reinterpret_cast<Shadow *>(v & ~LOW_MASK);
    // A page of an earlier launch needs no clearing: its accesses have serials below
    // first_serial, which check_cell takes for empty slots.
    void *mem = nullptr;
    if (!S.spare.empty()) {
        mem = S.spare.back();
        S.spare.pop_back();
    } else {
        if (S.chunks.empty() || S.chunks.back().used + sizeof(Shadow) > CHUNK_BYTES) {
            // Fresh memory is zero: every slot empty.
            void *m = mmap(nullptr, CHUNK_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
            if (m == MAP_FAILED) return nullptr;
            S.chunks.push_back(State::Chunk{static_cast<char *>(m), 0});
        }
        State::Chunk &c = S.chunks.back();
        mem = c.base + c.used;
        c.used += sizeof(Shadow);
    }
    *e = reinterpret_cast<uintptr_t>(mem) | (v & LOW_MASK);
    return static_cast<Shadow *>(mem);
}

// Bits [lo, hi) (offsets in a page) set in `bits`.
void set_bits(uint64_t *bits, uintptr_t lo, uintptr_t hi) {
    for (uintptr_t b = lo; b < hi;) {
        const uintptr_t word = b / 64, end = hi < (word + 1) * 64 ? hi : (word + 1) * 64;
        const unsigned n = unsigned(end - b);
        bits[word] |= (n == 64 ? ~uint64_t(0) : ((uint64_t(1) << n) - 1)) << (b % 64);
        b = end;
    }
}

// Parallel checking: remember the bytes [lo, stop) of device page `sh` this worker touched.
void mark_foot(Shadow *sh, uintptr_t lo, uintptr_t stop, uint8_t flags) {
    if (sh->stamp != S.first_serial) {
        sh->stamp = S.first_serial;
        memset(sh->wbits, 0, sizeof sh->wbits);
        memset(sh->rbits, 0, sizeof sh->rbits);
        memset(sh->abits, 0, sizeof sh->abits);
        S.foot.push_back(lo & ~(PAGE - 1));
    }
    uint64_t *bits = (flags & (F_ATOMIC | F_VOLATILE)) ? sh->abits : (flags & F_WRITE) ? sh->wbits : sh->rbits;
    set_bits(bits, lo & (PAGE - 1), ((stop - 1) & (PAGE - 1)) + 1);
}

void save_page(uintptr_t page);

// Parallel checking: save device page `page` (entry `e`) before this worker first writes it.
inline void before_write(uintptr_t page, uintptr_t *e) {
    if (!(*e & SAVED_BIT)) {
        save_page(page);
        *e |= SAVED_BIT;
    }
}

// Check [lo, stop), within one page whose shadow is `sh`, granule by granule.
inline void check_in_page(Shadow *sh, uintptr_t lo, uintptr_t stop, uint8_t space, uint8_t flags, uint64_t pc,
                          const Who &tid) {
    if (space != RK_RACE_GLOBAL) S.gen_shared_serial = tid.serial;
    else if (parallel()) mark_foot(sh, lo, stop, flags);
    for (uintptr_t a = lo; a < stop;) {
        const uintptr_t granule = a & ~uintptr_t(GRANULE - 1);
        const uintptr_t gend = granule + GRANULE < stop ? granule + GRANULE : stop;
        const uint8_t mask = uint8_t(((1u << (gend - a)) - 1) << (a - granule));
        check_cell(sh->cell[(granule & (PAGE - 1)) / GRANULE], granule, mask, space, flags, pc, tid);
        a = gend;
    }
}

// The part of page `page` (an address in it) that is checked, and its space: all of a device
// memory page, the worker's TLS block or dynamic shared memory clipped to their bounds, nothing
// elsewhere. `whole` is false where a page holds bytes never checked inside its window (rk_cur).
struct Window {
    uintptr_t lo, hi;
    uintptr_t skip_lo, skip_hi;
    uint8_t space;
    bool bounded;  // the page belongs to one bounded buffer: bytes outside [lo, hi) are out of it
};
Window window_of(uintptr_t page, uintptr_t *e) {
    const uint8_t space = e ? uint8_t(*e & SPACE_MASK) : 0;
    Window w{page, page + PAGE, 0, 0, space, false};
    if (space == RK_RACE_GLOBAL && !S.bounds.empty()) {
        // The last bounded buffer starting before the page's end: if the page overlaps it, the
        // page is its alone.
        auto it = std::upper_bound(S.bounds.begin(), S.bounds.end(), std::make_pair(page + PAGE, uintptr_t(0)));
        if (it != S.bounds.begin()) {
            --it;
            if (it->second > page || (it->first == it->second && it->first >= page)) {
                w.bounded = true;
                if (w.lo < it->first) w.lo = it->first;
                if (w.hi > it->second) w.hi = it->second;
                if (w.hi < w.lo) w.hi = w.lo;
            }
        }
    } else if (space == RK_RACE_STATIC_SHARED) {
        if (w.lo < S.tls_lo) w.lo = S.tls_lo;
        if (w.hi > S.tls_hi) w.hi = S.tls_hi;
        // The TLS block holds rk_cur too, which the entry loop writes for every thread.
        const uintptr_t cur = reinterpret_cast<uintptr_t>(&rk_cur);
        if (cur < w.hi && cur + sizeof rk_cur > w.lo) w.skip_lo = cur, w.skip_hi = cur + sizeof rk_cur;
    } else if (space == RK_RACE_SHARED) {
        if (w.lo < S.dyn_lo) w.lo = S.dyn_lo;
        if (w.hi > S.dyn_hi) w.hi = S.dyn_hi;
    } else if (!space) {
        w.hi = w.lo;
    }
    return w;
}

// An access to a bounded buffer's pages outside it (the first byte outside at `address`).
__attribute__((noinline, cold)) void note_out_of_bounds(uintptr_t address, uintptr_t size, uint8_t flags, uint64_t pc,
                                                        const Who &who) {
    if (S.oob_count++ == 0) {
        S.oob_address = address;
        S.oob_size = size;
        S.oob = Access{who.serial, who.phase, who.wsync, uint16_t(who.tid), 0, flags, pc};
    }
}

void materialize();

void check_range(uintptr_t addr, uintptr_t end, uint8_t flags, uint64_t pc, const Who &tid) {
    while (addr < end) {
        const uintptr_t page = addr & ~(PAGE - 1);
        const uintptr_t page_end = page + PAGE;
        uintptr_t stop = end < page_end ? end : page_end;
        uintptr_t *e = entry_of(addr, false);
        // Summaries cover this page: they become shadow first, then this access is checked
        // against them like any other.
        if (e && (*e & SUM_BIT)) materialize();
        const Window w = window_of(page, e);
        if (w.bounded && (addr < w.lo || stop > w.hi)) note_out_of_bounds(addr < w.lo ? addr : w.hi, end - addr, flags, pc, tid);
        uintptr_t lo = addr;
        if (lo < w.skip_hi && stop > w.skip_lo) lo = stop;
        if (lo < w.lo) lo = w.lo;
        if (stop > w.hi) stop = w.hi;
        Shadow *sh = nullptr;
        if (w.space && w.lo < w.hi) {
            sh = shadow_of(e);
            if (!sh) return;
            if (parallel() && w.space == RK_RACE_GLOBAL && (flags & F_WRITE)) before_write(page, e);
        }
        // Remember the page for the next access (most land on the page of the one before).
        const bool saved = !parallel() || w.space != RK_RACE_GLOBAL || (e && (*e & SAVED_BIT));
        cached(page) = PageCache{page, sh, w.lo, w.hi, w.skip_lo, w.skip_hi, w.space, saved};
        if (sh && lo < stop) check_in_page(sh, lo, stop, w.space, flags, pc, tid);
        addr = page_end;
    }
}

// The part of on_access past its quick exits (kept out of line so that the hooks' exits cost no
// register saves).
__attribute__((noinline)) void access_checked(uintptr_t addr, uintptr_t size, uint8_t flags, uint64_t pc) {
    if (__builtin_expect(!S.pending.empty(), 0)) flush_pending();
    sync_block();
    const uintptr_t end = addr + size;
    uint32_t t = cur_tid();
    if (t >= MAX_THREADS) t = MAX_THREADS - 1;
    const Who tid{S.cur_serial, S.phase[t], S.wsync[t], t};
    // Fast path: a page accessed lately, checked wholly inside its window.
    const PageCache &c = cached(addr & ~(PAGE - 1));
    if ((addr & ~(PAGE - 1)) == c.page && ((end - 1) & ~(PAGE - 1)) == c.page && c.shadow && addr >= c.lo &&
        end <= c.hi && (end <= c.skip_lo || addr >= c.skip_hi) && (c.saved || !(flags & F_WRITE))) {
        check_in_page(c.shadow, addr, end, c.space, flags, pc, tid);
        return;
    }
    check_range(addr, end, flags, pc, tid);
}

__attribute__((always_inline)) inline void on_access(const volatile void *p, uintptr_t size, uint8_t flags,
                                                     uint64_t pc) {
    const uintptr_t addr = reinterpret_cast<uintptr_t>(p);
    // Most instrumented loads of a kernel are its reads of rk_cur (threadIdx, blockIdx, blockDim:
    // the worker's TLS, never checked): leave at once.
    if (addr - reinterpret_cast<uintptr_t>(&rk_cur) < sizeof rk_cur) return;
    if (!S.armed) return;
    // A page accessed lately of which nothing is checked (a fiber stack, the launch's arguments):
    // nothing to do (a pending write check waits for the next checked access, which comes before
    // any other store to device memory; a new block is noticed there, or at its first barrier,
    // collective, fence or atomic).
    const PageCache &c = cached(addr & ~(PAGE - 1));
    if ((addr & ~(PAGE - 1)) == c.page && ((addr + size - 1) & ~(PAGE - 1)) == c.page && !c.shadow) return;
    access_checked(addr, size, flags, pc);
}

// ---- Summaries ---------------------------------------------------------------------------------
// The race variant's region form tells the detector, before a lane loop whose memory accesses
// it can describe (rocm-cpu-frontend's region/codegen/summary.rs: subscripts affine in the lane
// of kernel pointers and __shared__ arrays, under conditions that read no memory), what each run
// of lanes will access, and then runs that loop uninstrumented. The summaries are checked against
// each other as they come: no two threads' bytes may meet with a write between them unless a
// barrier orders them (shared memory, different phases). What cannot be shown that way (the
// first conflict, a hooked access to memory summaries cover) turns every summary into the hooked
// accesses it stands for, in order (materialize), and the launch goes on hook by hook: the result
// is what hooks alone would have found, since no two summaries had met.

inline uint64_t caller(void *ra);

inline uint64_t sum_thread(const Summary &r, uint32_t j, uint32_t k = 0) { return r.g0 + j + uint64_t(r.gs2) * k; }

// Of `count` intervals [base + st k, + size) (k from 0), those that meet [a, a + len): k in
// [klo, khi]. Any stride, overlapping intervals included.
inline bool meeting(uintptr_t base, intptr_t st, uintptr_t size, uint32_t count, uintptr_t a, uintptr_t len,
                    uint32_t &klo, uint32_t &khi) {
    if (count == 1 || st == 0) {
        if (base < a + len && base + size > a) {
            klo = 0, khi = count - 1;
            return true;
        }
        return false;
    }
    // Work with the intervals in increasing address order.
    const bool down = st < 0;
    const intptr_t step = down ? -st : st;
    const intptr_t b = intptr_t(down ? base + uintptr_t(st) * (count - 1) : base);
    // k with b + step k < a + len and b + step k + size > a.
    const intptr_t lo_num = intptr_t(a) - intptr_t(size) - b;  // step k > lo_num
    const intptr_t hi_num = intptr_t(a) + intptr_t(len) - b;   // step k < hi_num
    intptr_t k0 = lo_num < 0 ? 0 : lo_num / step + 1;
    intptr_t k1 = hi_num <= 0 ? -1 : (hi_num - 1) / step;
    if (k1 > intptr_t(count) - 1) k1 = intptr_t(count) - 1;
    if (k0 > k1) return false;
    if (down) {
        klo = uint32_t(intptr_t(count) - 1 - k1), khi = uint32_t(intptr_t(count) - 1 - k0);
    } else {
        klo = uint32_t(k0), khi = uint32_t(k1);
    }
    return true;
}

// Whether two summaries of the same kind of memory may race: some byte both touch, by two
// threads, one writing, and (shared memory) in the same phase. Exact, or true where too costly.
bool sum_conflict(const Summary &a, const Summary &b) {
    if (!((a.flags | b.flags) & F_WRITE)) return false;
    if (a.hi <= b.lo || b.hi <= a.lo) return false;
    if (a.space != RK_RACE_GLOBAL && a.phase != b.phase) return false;
    // The same place for the same thread in both: only a thread meets itself (a write summary's
    // lanes never meet each other, rk_race_sum_add checks).
    const bool wide = a.s >= intptr_t(a.size) || -a.s >= intptr_t(a.size);
    if (a.m == 1 && b.m == 1 && a.n > 1 && b.n > 1 && a.s == b.s && a.size == b.size && wide &&
        a.a0 - uintptr_t(a.s) * a.g0 == b.a0 - uintptr_t(b.s) * b.g0)
        return false;
    if (a.a0 == b.a0 && a.s == b.s && a.s2 == b.s2 && a.n == b.n && a.m == b.m && a.gs2 == b.gs2 && a.g0 == b.g0 &&
        a.size == b.size && (a.n == 1 || wide))
        return false;
    const Summary &x = uint64_t(a.n) * a.m <= uint64_t(b.n) * b.m ? a : b;
    const Summary &y = &x == &a ? b : a;
    if (uint64_t(x.n) * x.m > 4096) return true;
    for (uint32_t kx = 0; kx < x.m; ++kx) {
        // The rows of y that meet this row of x, then their lanes that meet each lane.
        uint32_t rlo, rhi;
        if (!meeting(y.row_lo(0), y.s2, y.row_bytes(), y.m, x.row_lo(kx), x.row_bytes(), rlo, rhi)) continue;
        for (uint32_t ky = rlo; ky <= rhi; ++ky) {
            const uintptr_t ybase = y.a0 + uintptr_t(y.s2) * ky;
            for (uint32_t j = 0; j < x.n; ++j) {
                uint32_t klo, khi;
                if (!meeting(ybase, y.s, y.size, y.n, x.a0 + uintptr_t(x.s) * j + uintptr_t(x.s2) * kx, x.size, klo, khi))
                    continue;
                const uint64_t t = sum_thread(x, j, kx);
                for (uint32_t k = klo; k <= khi; ++k)
                    if (sum_thread(y, k, ky) != t) return true;
            }
        }
    }
    return false;
}

// The pages summary `r` touches, with the bytes it spans on each (rows or lanes far apart:
// theirs alone, not every page between them): f(page, lo, hi), false to stop. A page may come
// more than once (several rows on it).
template <class F>
void for_pages(const Summary &r, F f) {
    auto range = [&](uintptr_t lo, uintptr_t hi) {
        for (uintptr_t p = lo & ~(PAGE - 1); p < hi; p += PAGE)
            if (!f(p, lo > p ? lo : p, hi < p + PAGE ? hi : p + PAGE)) return false;
        return true;
    };
    const bool far_rows = r.m > 1 && uintptr_t(r.s2 < 0 ? -r.s2 : r.s2) >= PAGE;
    const bool far_lanes = r.n > 1 && uintptr_t(r.s < 0 ? -r.s : r.s) >= PAGE;
    if (!far_rows && !far_lanes) {
        range(r.lo, r.hi);
        return;
    }
    for (uint32_t k = 0; k < r.m; ++k) {
        if (!far_lanes) {
            if (!range(r.row_lo(k), r.row_lo(k) + r.row_bytes())) return;
            continue;
        }
        for (uint32_t j = 0; j < r.n; ++j) {
            const uintptr_t a = r.a0 + uintptr_t(r.s) * j + uintptr_t(r.s2) * k;
            if (!range(a, a + r.size)) return;
        }
    }
}

// The pages [lo, hi) touches, and whether each satisfies `ok`.
template <class F>
bool pages_all(uintptr_t lo, uintptr_t hi, F ok) {
    for (uintptr_t p = lo & ~(PAGE - 1); p < hi; p += PAGE)
        if (!ok(p)) return false;
    return true;
}

// Replay summary `r` as the hooked accesses it stands for.
void replay(const Summary &r) {
    const uint64_t nb = uint64_t(S.block.x) * S.block.y * S.block.z;
    for (uint32_t k = 0; k < r.m; ++k)
        for (uint32_t j = 0; j < r.n; ++j) {
            const uintptr_t a = r.a0 + uintptr_t(r.s) * j + uintptr_t(r.s2) * k;
            const uint64_t g = sum_thread(r, j, k);
            Who who{S.cur_serial, r.phase, r.wsync, uint32_t(g)};
            if (r.space == RK_RACE_GLOBAL) {
                const uint64_t lin = nb ? g / nb : 0;
                who.tid = uint32_t(nb ? g % nb : 0);
                who.serial = uint32_t(r.serial0 + (lin - r.lin0));
            }
            check_range(a, a + r.size, r.flags, r.pc, who);
        }
}

void materialize() {
    S.sum_on = false;
    S.sum_replayed = 1;
    std::vector<Summary> g = std::move(S.grecs), sh = std::move(S.srecs);
    forget_summaries(true);
    forget_pages();
    for (const Summary &r : g) replay(r);
    for (const Summary &r : sh) replay(r);
}

// Whether [lo, hi) lies in device memory the summaries may describe: inside one bounded buffer
// (or allocations without bounds), on pages no hooked access has touched this launch.
bool global_ok(uintptr_t lo, uintptr_t hi) {
    if (!S.bounds.empty()) {
        auto it = std::upper_bound(S.bounds.begin(), S.bounds.end(), std::make_pair(lo, ~uintptr_t(0)));
        if (it != S.bounds.begin() && std::prev(it)->first <= lo && lo < std::prev(it)->second) {
            if (hi > std::prev(it)->second) return false;
        } else {
            uintptr_t *e = entry_of(lo, false);
            if (window_of(lo & ~(PAGE - 1), e).bounded) return false;
        }
    }
    return pages_all(lo, hi, [](uintptr_t p) {
        uintptr_t *e = entry_of(p, false);
        return e && (*e & SPACE_MASK) == RK_RACE_GLOBAL && !(*e & ~LOW_MASK);
    });
}

// Where summary `r` (rows merged) lies, and whether the summaries may describe it: 1 yes (its
// space set, its threads made the launch's for device memory), 0 no, 2 memory nobody checks (a
// local array: nothing to tell).
int settle(Summary &r) {
    uintptr_t *e = entry_of(r.lo, false);
    const uint8_t space = e ? uint8_t(*e & SPACE_MASK) : 0;
    if (!space) {
        return pages_all(r.lo, r.hi, [](uintptr_t p) {
                   uintptr_t *pe = entry_of(p, false);
                   return !pe || !(*pe & SPACE_MASK);
               })
                   ? 2
                   : 0;
    }
    r.space = space;
    if (space == RK_RACE_GLOBAL) {
        if (!global_ok(r.lo, r.hi)) return 0;
        const uint64_t nb = uint64_t(S.block.x) * S.block.y * S.block.z;
        r.g0 += r.lin0 * nb;
        return 1;
    }
    const uintptr_t lo = space == RK_RACE_SHARED ? S.dyn_lo : S.tls_lo;
    const uintptr_t hi = space == RK_RACE_SHARED ? S.dyn_hi : S.tls_hi;
    const uintptr_t cur = reinterpret_cast<uintptr_t>(&rk_cur);
    if (r.lo < lo || r.hi > hi || (r.lo < cur + sizeof rk_cur && r.hi > cur)) return 0;
    if (S.gen_shared_serial == S.cur_serial) return 0;
    return 1;
}

}  // namespace

extern "C" uint32_t rk_race_sum_on(void) { return S.armed && S.sum_on; }

extern "C" void rk_race_sum_abort(void) { S.stage.clear(); }

// One run of lanes' accesses at the caller's place: `n` lanes from linear thread `tid0`, lane j
// at a_lo + (a_next - a_lo) j (a_last the last lane's, to check that), `size_flags` the bytes
// accessed and F_WRITE << 16. Returns 0 where it cannot be taken (then the lane loop runs hooked).
extern "C" uint32_t rk_race_sum_add(uint64_t size_flags, uintptr_t a_lo, uintptr_t a_next, uintptr_t a_last, uint32_t n,
                                    uint32_t tid0) {
    if (!S.armed || !S.sum_on) return 0;
    if (!S.pending.empty()) flush_pending();
    sync_block();
    if (n == 0) return 1;
    const uint32_t size = uint32_t(size_flags & 0xffff);
    const uint8_t flags = uint8_t((size_flags >> 16) & F_WRITE);
    if (size == 0 || size > PAGE || tid0 + uint64_t(n) > MAX_THREADS) return 0;
    const intptr_t s = n > 1 ? intptr_t(a_next - a_lo) : 0;
    if (n > 1 && a_last != a_lo + uintptr_t(s) * (n - 1)) return 0;
    if ((flags & F_WRITE) && n > 1 && (s < intptr_t(size) && -s < intptr_t(size))) return 0;
    Summary r{};
    r.lo = s >= 0 ? a_lo : a_last;
    r.hi = (s >= 0 ? a_last : a_lo) + size;
    if (r.hi < r.lo) return 0;
    r.a0 = a_lo, r.s = s, r.n = n, r.m = 1, r.s2 = 0, r.gs2 = 0, r.size = size, r.flags = flags;
    r.phase = S.phase[tid0], r.wsync = S.wsync[tid0];
    if (S.nonuniform)
        for (uint32_t j = 1; j < n; ++j)
            if (S.phase[tid0 + j] != r.phase || S.wsync[tid0 + j] != r.wsync) return 0;
    r.pc = caller(__builtin_return_address(0));
    // The thread in the block for now (rk_race_sum_commit makes it the launch's for device
    // memory, once it knows which memory the summary is of).
    r.g0 = tid0;
    r.lin0 = S.cur_block;
    r.serial0 = S.cur_serial;
    // The same lanes of the next row at the same place: one more row of that summary.
    for (size_t i = S.stage.size(); i-- > 0;) {
        Summary &p = S.stage[i];
        if (p.pc != r.pc) continue;
        if (p.flags == r.flags && p.size == r.size && p.space == r.space && p.n == r.n && p.s == r.s &&
            p.phase == r.phase && p.wsync == r.wsync && r.g0 > p.g0) {
            const intptr_t s2 = p.m > 1 ? p.s2 : intptr_t(r.a0 - p.a0);
            const uint64_t gs2 = p.m > 1 ? p.gs2 : r.g0 - p.g0;
            // Rows of a write apart (its lanes never meet), threads of rows apart.
            const bool apart = !(flags & F_WRITE) || uintptr_t(s2 < 0 ? -s2 : s2) >= p.row_bytes();
            if (gs2 >= p.n && gs2 <= 0xffffffffu && apart && r.a0 == p.a0 + uintptr_t(s2) * p.m &&
                r.g0 == p.g0 + gs2 * p.m) {
                p.s2 = s2;
                p.gs2 = uint32_t(gs2);
                ++p.m;
                if (r.lo < p.lo) p.lo = r.lo;
                if (r.hi > p.hi) p.hi = r.hi;
                return 1;
            }
        }
        break;
    }
    S.stage.push_back(r);
    return 1;
}

// Check the staged summaries and keep them (1), or (0) leave them: the lane loop then runs hooked.
extern "C" uint32_t rk_race_sum_commit(void) {
    if (!S.armed || !S.sum_on) {
        S.stage.clear();
        return 0;
    }
    // Where each lies, and whether it may be described.
    size_t kept = 0;
    for (size_t i = 0; i < S.stage.size(); ++i) {
        const int how = settle(S.stage[i]);
        if (how == 0) {
            S.stage.clear();
            return 0;
        }
        if (how == 1) S.stage[kept++] = S.stage[i];
    }
    S.stage.resize(kept);
    bool conflict = false;
    for (size_t i = 0; i < S.stage.size() && !conflict; ++i) {
        Summary &r = S.stage[i];
        for (size_t k = 0; k < i && !conflict; ++k)
            // Of the same kind of memory (device, or the block's shared memory).
            if ((S.stage[k].space == RK_RACE_GLOBAL) == (r.space == RK_RACE_GLOBAL))
                conflict = sum_conflict(S.stage[k], r);
        const bool global = r.space == RK_RACE_GLOBAL;
        auto &pages = global ? S.gpages : S.spages;
        const auto &recs = global ? S.grecs : S.srecs;
        for_pages(r, [&](uintptr_t p, uintptr_t lo, uintptr_t hi) {
            PageList *l = pages.find(p);
            if (!l) return true;
            // Earlier phases of the block are ordered before this one.
            if (!global && l->phase != r.phase) l->clear(r.phase);
            if (lo < l->w_hi && hi > l->w_lo)
                for (uint32_t id : l->w)
                    if (sum_conflict(recs[id], r)) {
                        conflict = true;
                        break;
                    }
            if (!conflict && (r.flags & F_WRITE) && lo < l->r_hi && hi > l->r_lo)
                for (uint32_t id : l->r)
                    if (sum_conflict(recs[id], r)) {
                        conflict = true;
                        break;
                    }
            return !conflict;
        });
    }
    if (conflict) {
        S.stage.clear();
        materialize();
        return 0;
    }
    S.sum_taken += S.stage.size();
    for (const Summary &r : S.stage) {
        const bool global = r.space == RK_RACE_GLOBAL;
        auto &recs = global ? S.grecs : S.srecs;
        auto &pages = global ? S.gpages : S.spages;
        auto &last = global ? S.glast : S.slast;
        // Parallel checking: device pages a write summary covers are saved before the loop runs.
        const bool save = global && parallel() && (r.flags & F_WRITE);
        uint32_t id;
        auto lt = std::find_if(last.begin(), last.end(), [&](const std::pair<uint64_t, uint32_t> &e) { return e.first == r.pc; });
        bool merged = false;
        if (lt != last.end()) {
            Summary &p = recs[lt->second];
            const intptr_t st = p.n > 1 ? p.s : intptr_t(r.a0 - p.a0);
            if (p.m == 1 && r.m == 1 && p.flags == r.flags && p.size == r.size && p.space == r.space && p.phase == r.phase &&
                p.wsync == r.wsync && (r.n == 1 || r.s == st) && r.a0 == p.a0 + uintptr_t(st) * p.n &&
                r.g0 == p.g0 + p.n && (!(r.flags & F_WRITE) || st >= intptr_t(r.size) || -st >= intptr_t(r.size))) {
                p.s = st;
                p.n += r.n;
                if (r.lo < p.lo) p.lo = r.lo;
                if (r.hi > p.hi) p.hi = r.hi;
                id = lt->second;
                merged = true;
            }
        }
        if (!merged) {
            id = uint32_t(recs.size());
            recs.push_back(r);
            if (lt != last.end())
                lt->second = id;
            else
                last.emplace_back(r.pc, id);
        }
        for_pages(r, [&](uintptr_t p, uintptr_t lo, uintptr_t hi) {
            bool created;
            PageList &l = pages.get(p, created);
            uintptr_t *e = created || save ? entry_of(p, false) : nullptr;
            if (e && save) before_write(p, e);
            if (created) {
                if (e) *e |= SUM_BIT;
                // A hooked access to the page must see the bit (pages it has cached skip it).
                if (!global) cached(p) = PageCache{};
                l.phase = r.phase;
            } else if (!global && l.phase != r.phase) {
                l.clear(r.phase);
            }
            const bool w = r.flags & F_WRITE;
            auto &ids = w ? l.w : l.r;
            if (ids.empty() || ids.back() != id) ids.push_back(id);
            uintptr_t &blo = w ? l.w_lo : l.r_lo, &bhi = w ? l.w_hi : l.r_hi;
            if (lo < blo) blo = lo;
            if (hi > bhi) bhi = hi;
            return true;
        });
    }
    S.stage.clear();
    return 1;
}

namespace {

// An atomic (or volatile) access to `p`: after a fence (or with release order) it releases what
// the block wrote before; any such access acquires what others released to the same address.
void on_sync(const volatile void *p, int mo) {
    if (!S.armed) return;
    // The access before it may have left on_access early (a __device__ variable: nothing of its
    // page is checked) without noticing that a new block began.
    sync_block();
    const uintptr_t addr = reinterpret_cast<uintptr_t>(p);
    uint32_t tid = cur_tid();
    if (tid >= MAX_THREADS) tid = MAX_THREADS - 1;
    const int order = mo & 0xffff;
    if (S.fenced[tid] || order >= __ATOMIC_RELEASE) {
        S.releases[addr][S.cur_serial] = {S.phase[tid], ++S.release_seq};
        S.fenced[tid] = 0;
    }
    if (!S.releases.empty() && S.releases.count(addr)) {
        if (!S.acquired.empty() && S.acquired.back().first == addr)
            S.acquired.back().second = S.release_seq;
        else
            S.acquired.emplace_back(addr, S.release_seq);
    }
}

inline uint64_t caller(void *ra) { return reinterpret_cast<uint64_t>(ra); }

void fill(rk_race_access &out, const Access &a) {
    const uint64_t linear = a.serial >= S.first_serial ? a.serial - S.first_serial : 0;
    const uint64_t gx = S.grid.x ? S.grid.x : 1, gy = S.grid.y ? S.grid.y : 1;
    out.block[0] = uint32_t(linear % gx);
    out.block[1] = uint32_t((linear / gx) % gy);
    out.block[2] = uint32_t(linear / (gx * gy));
    const uint32_t bx = S.block.x ? S.block.x : 1, by = S.block.y ? S.block.y : 1;
    out.thread[0] = a.tid % bx;
    out.thread[1] = (a.tid / bx) % by;
    out.thread[2] = a.tid / (bx * by);
    out.pc = a.pc;
    out.write = (a.flags & F_WRITE) ? 1 : 0;
    out.atomic = (a.flags & (F_ATOMIC | F_VOLATILE)) ? 1 : 0;
}

}  // namespace

namespace {

// ---- Parallel checking ---------------------------------------------------------------------------
// A launch is checked on several workers (rk_race_set_workers), each taking a contiguous share of
// its blocks with a State of its own: that is the same check as on one worker for the blocks of
// each. Blocks of two workers can only meet through device memory, so the launch is race-free if
// no worker found anything and no byte one worker wrote was touched by another (atomic accesses
// of both apart). Anything else (a race, an out-of-bounds access, a fault, or bytes two workers
// met on, which may be a race, blocks an atomic ordered, or two writes of one value) puts device
// memory back as it was before the launch and checks it again on one worker (rk_race_rerun): what
// is reported never depends on how many workers checked. For that, each device page is saved
// before its first write (save_page: the first worker to write it copies it, others wait).

struct Saved {
    // Device memory: its bytes (what is put back: other bytes of its pages may be the host's) and
    // its pages, each disjoint and sorted.
    std::vector<std::pair<uintptr_t, uintptr_t>> bytes;
    std::vector<std::pair<uintptr_t, uintptr_t>> spans;
    std::vector<size_t> first;                          // index of each span's first page
    size_t pages = 0;
    uint8_t *state = nullptr;  // per page: 0 not saved, 1 being saved, 2 saved
    size_t state_cap = 0;
    char *backup = nullptr;  // the saved pages, by index
    size_t backup_pages = 0;
};
Saved saved;

// Device memory [ranges] to save pages of: false when the copies cannot be had.
// Sort and merge overlapping (or touching) intervals.
void merge_spans(std::vector<std::pair<uintptr_t, uintptr_t>> &v) {
    std::sort(v.begin(), v.end());
    size_t kept = 0;
    for (const auto &sp : v) {
        if (kept && sp.first <= v[kept - 1].second) {
            if (sp.second > v[kept - 1].second) v[kept - 1].second = sp.second;
        } else {
            v[kept++] = sp;
        }
    }
    v.resize(kept);
}

bool prepare_saved(const rk_race_range *ranges, uint32_t count) {
    saved.bytes.clear();
    saved.spans.clear();
    saved.first.clear();
    for (uint32_t i = 0; i < count; ++i) {
        if (!ranges[i].len) continue;
        const uintptr_t lo = uintptr_t(ranges[i].start), hi = uintptr_t(ranges[i].start + ranges[i].len);
        saved.bytes.emplace_back(lo, hi);
        saved.spans.emplace_back(lo & ~(PAGE - 1), (hi + PAGE - 1) & ~(PAGE - 1));
    }
    merge_spans(saved.bytes);
    merge_spans(saved.spans);
    saved.pages = 0;
    for (const auto &sp : saved.spans) {
        saved.first.push_back(saved.pages);
        saved.pages += (sp.second - sp.first) / PAGE;
    }
    if (saved.pages > saved.state_cap) {
        free(saved.state);
        saved.state_cap = saved.pages;
        saved.state = static_cast<uint8_t *>(malloc(saved.state_cap));
        if (!saved.state) {
            saved.state_cap = 0;
            return false;
        }
    }
    if (saved.pages) memset(saved.state, 0, saved.pages);
    if (saved.pages > saved.backup_pages) {
        // Kept between launches (the next one's copies fault nothing in), mapped as needed.
        if (saved.backup) munmap(saved.backup, saved.backup_pages * PAGE);
        saved.backup_pages = 0;
        void *m = mmap(nullptr, saved.pages * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                       -1, 0);
        saved.backup = m == MAP_FAILED ? nullptr : static_cast<char *>(m);
        if (!saved.backup) return false;
        saved.backup_pages = saved.pages;
    }
    return true;
}

// The index of device page `page` among the saved ones, or SIZE_MAX.
size_t saved_index(uintptr_t page) {
    auto it = std::upper_bound(saved.spans.begin(), saved.spans.end(), std::make_pair(page, ~uintptr_t(0)));
    if (it == saved.spans.begin()) return SIZE_MAX;
    --it;
    if (page >= it->second) return SIZE_MAX;
    return saved.first[size_t(it - saved.spans.begin())] + (page - it->first) / PAGE;
}

void save_page(uintptr_t page) {
    const size_t i = saved_index(page);
    if (i == SIZE_MAX) return;
    uint8_t *state = &saved.state[i];
    for (;;) {
        uint8_t v = __atomic_load_n(state, __ATOMIC_ACQUIRE);
        if (v == 2) return;
        if (v == 0 && __atomic_compare_exchange_n(state, &v, uint8_t(1), false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
            // Streaming stores: the copy is read back only if the launch is checked again, and
            // should not take the cache from the kernel (nor read the copy's lines first).
            const __m128i *from = reinterpret_cast<const __m128i *>(page);
            __m128i *to = reinterpret_cast<__m128i *>(saved.backup + i * PAGE);
            for (size_t k = 0; k < PAGE / sizeof(__m128i); k += 4) {
                const __m128i a = _mm_load_si128(from + k), b = _mm_load_si128(from + k + 1),
                              c = _mm_load_si128(from + k + 2), d = _mm_load_si128(from + k + 3);
                _mm_stream_si128(to + k, a);
                _mm_stream_si128(to + k + 1, b);
                _mm_stream_si128(to + k + 2, c);
                _mm_stream_si128(to + k + 3, d);
            }
            _mm_sfence();
            __atomic_store_n(state, uint8_t(2), __ATOMIC_RELEASE);
            return;
        }
        __builtin_ia32_pause();
    }
}

// Put the device memory of every saved page back.
void restore_saved() {
    for (const auto &[lo, hi] : saved.bytes)
        for (uintptr_t p = lo & ~(PAGE - 1); p < hi; p += PAGE) {
            const size_t i = saved_index(p);
            if (i == SIZE_MAX || saved.state[i] != 2) continue;
            const uintptr_t a = lo > p ? lo : p, b = hi < p + PAGE ? hi : p + PAGE;
            memcpy(reinterpret_cast<void *>(a), saved.backup + i * PAGE + (a - p), b - a);
        }
}

// After a launch: past a quarter GiB, the kernel may take the saved copies' memory back (it then
// reads as zero; the next launch copies over it either way).
void release_saved() {
#ifdef MADV_FREE
    if (saved.backup && saved.backup_pages * PAGE > (size_t(256) << 20))
        madvise(saved.backup, saved.backup_pages * PAGE, MADV_FREE);
#endif
}

// The workers' states (states[0] checks launches on one worker), and the launch armed.
std::vector<State *> states;
uint32_t next_workers = 1;  // of the next launch armed (rk_race_set_workers)
const void *next_pool = nullptr;
std::atomic<const void *> armed_pool{nullptr};  // the pool whose workers check the armed launch
bool armed = false;
bool cfg_strict = false, cfg_summaries = true;
uint32_t next_serial = 1;

// Every access (hooked, or of a summary) of the current state to device page `page`, as bit masks.
struct Foot {
    uint64_t w[PAGE / 64] = {}, r[PAGE / 64] = {}, a[PAGE / 64] = {};
};

// The bytes of page `page` summary `r` touched.
void summary_foot(const Summary &r, uintptr_t page, uint64_t *bits) {
    uint32_t klo, khi;
    if (!meeting(r.row_lo(0), r.s2, r.row_bytes(), r.m, page, PAGE, klo, khi)) return;
    for (uint32_t k = klo; k <= khi; ++k) {
        const uintptr_t base = r.a0 + uintptr_t(r.s2) * k;
        uint32_t jlo, jhi;
        if (!meeting(base, r.s, r.size, r.n, page, PAGE, jlo, jhi)) continue;
        for (uint32_t j = jlo; j <= jhi; ++j) {
            const uintptr_t a = base + uintptr_t(r.s) * j;
            const uintptr_t lo = a > page ? a : page, hi = a + r.size < page + PAGE ? a + r.size : page + PAGE;
            if (lo < hi) set_bits(bits, lo - page, hi - page);
        }
    }
}

void state_foot(uintptr_t page, Foot &f) {
    uintptr_t *e = entry_of(page, false);
    if (e && (*e & ~LOW_MASK)) {
        const Shadow *sh = reinterpret_cast<const Shadow *>(*e & ~LOW_MASK);
        if (sh->stamp == S.first_serial) {
            memcpy(f.w, sh->wbits, sizeof f.w);
            memcpy(f.r, sh->rbits, sizeof f.r);
            memcpy(f.a, sh->abits, sizeof f.a);
        }
    }
    if (const PageList *l = S.gpages.find(page)) {
        for (uint32_t id : l->w) summary_foot(S.grecs[id], page, f.w);
        for (uint32_t id : l->r) summary_foot(S.grecs[id], page, f.r);
    }
}

// Whether two workers met on any byte: one wrote it and the other touched it, or one accessed it
// atomically and the other plainly.
bool workers_met() {
    std::vector<std::pair<uintptr_t, uint32_t>> pages;
    for (uint32_t i = 0; i < workers; ++i) {
        for (uintptr_t p : states[i]->foot) pages.emplace_back(p, i);
        for (uintptr_t p : states[i]->gpages.touched) pages.emplace_back(p, i);
    }
    std::sort(pages.begin(), pages.end());
    pages.erase(std::unique(pages.begin(), pages.end()), pages.end());
    std::vector<Foot> feet;
    bool met = false;
    for (size_t i = 0; i < pages.size() && !met;) {
        size_t j = i;
        while (j < pages.size() && pages[j].first == pages[i].first) ++j;
        if (j - i > 1) {
            feet.assign(j - i, Foot{});
            for (size_t k = i; k < j; ++k) {
                tS = states[pages[k].second];
                state_foot(pages[i].first, feet[k - i]);
            }
            for (size_t x = 0; x < feet.size() && !met; ++x)
                for (size_t y = x + 1; y < feet.size() && !met; ++y) {
                    const Foot &a = feet[x], &b = feet[y];
                    for (unsigned q = 0; q < PAGE / 64 && !met; ++q)
                        met = ((a.w[q] & (b.w[q] | b.r[q] | b.a[q])) | (b.w[q] & (a.r[q] | a.a[q])) | (a.a[q] & b.r[q]) |
                               (b.a[q] & a.r[q])) != 0;
                }
        }
        i = j;
    }
    tS = &idle;
    return met;
}

// Disarm the current state, keeping its findings (races, out-of-bounds access) for the reports.
void disarm_state() {
    if (!S.pending.empty()) flush_pending();
    S.armed = false;
    S.sum_on = false;
    forget_summaries(true);
    forget_pages();
    for (uintptr_t *e : S.entries) *e = 0;
    S.entries.clear();
    S.foot.clear();
    // Every shadow page handed out is free again: keep the chunks that hold at most MAX_KEPT of
    // them (the next launch takes those without clearing), give the rest back; with several
    // workers, their share each.
    const size_t max_kept = MAX_KEPT / workers, max_spare = MAX_SPARE / workers;
    S.spare.clear();
    size_t kept = 0, shadows = 0;
    while (kept < S.chunks.size() && shadows + S.chunks[kept].used / sizeof(Shadow) <= max_kept) {
        const State::Chunk &c = S.chunks[kept++];
        shadows += c.used / sizeof(Shadow);
#ifdef MADV_FREE
        // Past max_spare: the kernel may take these pages back (they then read as zero, empty
        // slots, like pages it never took: either way the next launch needs no clearing).
        if (shadows > max_spare) madvise(c.base, (c.used + 4095) & ~size_t(4095), MADV_FREE);
#endif
    }
    for (size_t i = kept; i < S.chunks.size(); ++i) munmap(S.chunks[i].base, CHUNK_BYTES);
    S.chunks.resize(kept);
    for (const State::Chunk &c : S.chunks)
        for (size_t off = 0; off + sizeof(Shadow) <= c.used; off += sizeof(Shadow))
            S.spare.push_back(reinterpret_cast<Shadow *>(c.base + off));
}

// After a launch: the next one's serials start past its blocks' (and every shadow page is
// dropped before they would wrap).
void advance_serials() {
    uint64_t blocks = 0;
    for (uint32_t i = 0; i < workers; ++i) {
        const State &w = *states[i];
        const uint64_t b = uint64_t(w.grid.x) * w.grid.y * w.grid.z;
        if (b > blocks) blocks = b;
    }
    const uint64_t next = uint64_t(next_serial) + blocks + 1;
    if (next < 0xF0000000u) {
        next_serial = uint32_t(next);
        return;
    }
    for (State *w : states) {
        for (const State::Chunk &c : w->chunks) munmap(c.base, CHUNK_BYTES);
        w->chunks.clear();
        w->spare.clear();
    }
    next_serial = 1;
}

// Disarm every worker's state (keeping what each found, for the reports) and end the launch.
void disarm_launch() {
    for (uint32_t w = 0; w < workers; ++w) {
        tS = states[w];
        disarm_state();
    }
    tS = &idle;
    if (parallel()) release_saved();
    advance_serials();
    armed = false;
    armed_pool.store(nullptr, std::memory_order_release);
}

}  // namespace

extern "C" void rk_race_set_workers(const void *pool, uint32_t n) {
    next_pool = pool;
    next_workers = n ? n : 1;
}

extern "C" uint32_t rk_race_worker(const void *pool, uint32_t index, uint64_t blocks, uint64_t *lo, uint64_t *hi) {
    tS = &idle;
    if (pool == nullptr || armed_pool.load(std::memory_order_acquire) != pool) return 0;
    *lo = *hi = 0;
    if (index >= workers) return 1;  // a worker more than the launch has states for: no blocks
    tS = states[index];
    if (workers == 1) return 0;
    *lo = blocks * index / workers;
    *hi = blocks * (index + 1) / workers;
    return 1;
}

extern "C" uint32_t rk_race_begin(const rk_race_range *ranges, uint32_t count, uint32_t wave_size) {
    if (armed) return 1;
    uint32_t n = next_workers;
    if (n > 1 && !prepare_saved(ranges, count)) n = 1;
    while (states.size() < n) states.push_back(new State());
    workers = n;
    for (uint32_t w = 0; w < n; ++w) {
        tS = states[w];
        S.wave_size = wave_size ? wave_size : 64;
        S.first_serial = next_serial;
        S.grid = rk_uint3{0, 0, 0};
        S.cur_block = ~uint64_t(0);
        S.cur_serial = 0;
        S.locals_registered = false;
        S.releases.clear();
        S.acquired.clear();
        S.races.clear();
        S.pending.clear();
        S.total = 0;
        S.release_seq = 0;
        S.bounds.clear();
        S.oob_count = 0;
        forget_summaries(true);
        S.gen_shared_serial = 0;
        S.nonuniform = false;
        S.sum_taken = 0;
        S.sum_replayed = 0;
        S.strict = cfg_strict;
        S.sum_allowed = cfg_summaries;
        S.sum_on = S.sum_allowed;
        S.foot.clear();
        forget_pages();
        for (uint32_t i = 0; i < count; ++i) set_space(ranges[i].start, ranges[i].start + ranges[i].len, RK_RACE_GLOBAL);
        S.armed = true;
    }
    tS = &idle;
    armed = true;
    armed_pool.store(next_pool, std::memory_order_release);
    return 0;
}

extern "C" void rk_race_set_strict(uint32_t strict) { cfg_strict = strict != 0; }

extern "C" void rk_race_set_summaries(uint32_t on) { cfg_summaries = on != 0; }

extern "C" uint64_t rk_race_summary_stats(uint32_t *replayed) {
    uint64_t taken = 0;
    uint32_t any = 0;
    for (uint32_t i = 0; i < workers && i < states.size(); ++i) {
        taken += states[i]->sum_taken;
        any |= states[i]->sum_replayed;
    }
    if (replayed) *replayed = any;
    return taken;
}

extern "C" void rk_race_bound(const rk_race_range *ranges, uint32_t count) {
    for (uint32_t w = 0; w < workers && armed; ++w) {
        tS = states[w];
        S.bounds.clear();
        for (uint32_t i = 0; i < count; ++i)
            S.bounds.emplace_back(uintptr_t(ranges[i].start), uintptr_t(ranges[i].start + ranges[i].len));
        std::sort(S.bounds.begin(), S.bounds.end());
        forget_pages();
    }
    tS = &idle;
}

extern "C" uint32_t rk_race_rerun(uint32_t failed) {
    if (!armed || workers < 2) return 0;
    bool again = failed != 0;
    for (uint32_t w = 0; w < workers; ++w) {
        tS = states[w];
        if (!S.pending.empty()) flush_pending();
        if (!S.races.empty() || S.oob_count) again = true;
    }
    tS = &idle;
    if (!again) again = workers_met();
    if (!again) return 0;
    restore_saved();
    disarm_launch();
    return 1;
}

extern "C" uint32_t rk_race_out_of_bounds(rk_race_report *out) {
    // One worker's (a launch checked on several found none, or was checked again on one).
    if (states.empty() || states[0]->oob_count == 0) return 0;
    tS = states[0];
    memset(out, 0, sizeof *out);
    out->address = S.oob_address;
    out->space = RK_RACE_GLOBAL;
    out->count = S.oob_count > 0xffffffffu ? 0xffffffffu : uint32_t(S.oob_count);
    out->offset = S.oob_size;
    fill(out->later, S.oob);
    tS = &idle;
    return 1;
}

extern "C" uint32_t rk_race_end(rk_race_report *out, uint32_t max, uint64_t *total) {
    if (!armed) {
        if (total) *total = 0;
        return 0;
    }
    disarm_launch();
    uint32_t n = 0;
    uint64_t all = 0;
    for (uint32_t w = 0; w < workers; ++w) {
        tS = states[w];
        for (const Race &r : S.races) {
            if (n >= max) break;
            rk_race_report &o = out[n++];
            memset(&o, 0, sizeof o);
            o.address = r.address;
            o.space = r.space;
            o.count = r.count;
            o.offset = r.space == RK_RACE_SHARED          ? r.address - S.dyn_lo
                       : r.space == RK_RACE_STATIC_SHARED ? r.address - S.tls_lo
                                                          : 0;
            fill(o.earlier, r.earlier);
            fill(o.later, r.later);
        }
        all += S.total;
        S.races.clear();
        S.releases.clear();
    }
    tS = &idle;
    if (total) *total = all;
    return n;
}

// ---- Barriers and collectives, as the race variant of a kernel calls them ------------------------

namespace {
void note_barrier(void *ra) {
    if (!S.armed) return;
    sync_block();
    const uint32_t tid = cur_tid();
    if (tid < MAX_THREADS) S.barrier_pc[tid] = caller(ra);
}
}  // namespace

extern "C" uint64_t rk_race_barrier_pc(uint32_t thread) {
    // Of the last launch, checked on one worker (a failed one on several is checked again so).
    return thread < MAX_THREADS && !states.empty() ? states[0]->barrier_pc[thread] : 0;
}

extern "C" void rk_race_syncthreads(void) {
    if (S.armed && !S.pending.empty()) flush_pending();
    note_barrier(__builtin_return_address(0));
    rk_syncthreads();
    if (!S.armed) return;
    sync_block();
    const uint32_t tid = cur_tid();
    if (tid < MAX_THREADS) ++S.phase[tid];
}

extern "C" int rk_race_syncthreads_op(int op, int pred) {
    if (S.armed && !S.pending.empty()) flush_pending();
    note_barrier(__builtin_return_address(0));
    const int r = rk_syncthreads_op(op, pred);
    if (S.armed) {
        sync_block();
        const uint32_t tid = cur_tid();
        if (tid < MAX_THREADS) ++S.phase[tid];
    }
    return r;
}

extern "C" uint64_t rk_race_warp_op(int op, uint64_t value, int32_t arg, int32_t width) {
    if (S.armed && !S.pending.empty()) flush_pending();
    const uint64_t r = rk_warp_op(op, value, arg, width);
    if (S.armed) {
        sync_block();
        const uint32_t tid = cur_tid();
        if (tid < MAX_THREADS) ++S.wsync[tid];
    }
    return r;
}

// ---- The same for a region form's wave (detail/region.h): its lanes as loops, one call each -------
// Lane t of the wave is linear thread base + t; `act` null: all n lanes take part.

extern "C" void rk_race_wave_barrier(uint32_t base, uint32_t n, const uint8_t *act, uint32_t leaving) {
    if (!S.armed) return;
    if (!S.pending.empty()) flush_pending();
    sync_block();
    const uint32_t end = base + n < MAX_THREADS ? base + n : MAX_THREADS;
    if (act) S.nonuniform = true;
    if (!leaving) {
        const uint64_t pc = caller(__builtin_return_address(0));
        for (uint32_t t = base; t < end; ++t)
            if (!act || act[t - base]) S.barrier_pc[t] = pc;
        return;
    }
    for (uint32_t t = base; t < end; ++t)
        if (!act || act[t - base]) ++S.phase[t];
}

extern "C" void rk_race_wave_collective(uint32_t base, uint32_t n, const uint8_t *act, uint32_t count) {
    if (!S.armed) return;
    if (!S.pending.empty()) flush_pending();
    sync_block();
    const uint32_t end = base + n < MAX_THREADS ? base + n : MAX_THREADS;
    if (act) S.nonuniform = true;
    for (uint32_t t = base; t < end; ++t)
        if (!act || act[t - base]) S.wsync[t] += count;
}

// ---- The ThreadSanitizer instrumentation ABI, renamed __tsan_* -> rk_tsan_* by the build ----------
// (the list the build accepts is rocm-kernels-build/src/cpu/race.rs's HOOKS).

extern "C" {

void rk_tsan_init(void) {}
void rk_tsan_func_entry(void *) {}
void rk_tsan_func_exit(void) {}
void rk_tsan_vptr_update(void **, void *) {}
void rk_tsan_vptr_read(void **) {}
void rk_tsan_acquire(void *) {}
void rk_tsan_release(void *) {}

#define RK_PLAIN(N)                                                                                  \
    void rk_tsan_read##N(void *a) { on_access(a, N, 0, caller(__builtin_return_address(0))); }       \
    void rk_tsan_write##N(void *a) { on_access(a, N, F_WRITE, caller(__builtin_return_address(0))); } \
    void rk_tsan_unaligned_read##N(void *a) { on_access(a, N, 0, caller(__builtin_return_address(0))); } \
    void rk_tsan_unaligned_write##N(void *a) {                                                      \
        on_access(a, N, F_WRITE, caller(__builtin_return_address(0)));                               \
    }                                                                                                \
    void rk_tsan_volatile_read##N(void *a) {                                                         \
        on_access(a, N, F_VOLATILE, caller(__builtin_return_address(0)));                            \
        on_sync(a, 0);                                                                               \
    }                                                                                                \
    void rk_tsan_volatile_write##N(void *a) {                                                        \
        on_access(a, N, F_VOLATILE | F_WRITE, caller(__builtin_return_address(0)));                  \
        on_sync(a, 0);                                                                               \
    }                                                                                                \
    void rk_tsan_unaligned_volatile_read##N(void *a) {                                               \
        on_access(a, N, F_VOLATILE, caller(__builtin_return_address(0)));                            \
        on_sync(a, 0);                                                                               \
    }                                                                                                \
    void rk_tsan_unaligned_volatile_write##N(void *a) {                                              \
        on_access(a, N, F_VOLATILE | F_WRITE, caller(__builtin_return_address(0)));                  \
        on_sync(a, 0);                                                                               \
    }
RK_PLAIN(1)
RK_PLAIN(2)
RK_PLAIN(4)
RK_PLAIN(8)
RK_PLAIN(16)
#undef RK_PLAIN

void rk_tsan_read_range(void *a, unsigned long size) {
    on_access(a, size, 0, caller(__builtin_return_address(0)));
}
void rk_tsan_write_range(void *a, unsigned long size) {
    on_access(a, size, F_WRITE, caller(__builtin_return_address(0)));
}
void *rk_tsan_memcpy(void *dst, const void *src, unsigned long size) {
    on_access(src, size, 0, caller(__builtin_return_address(0)));
    on_access(dst, size, F_WRITE, caller(__builtin_return_address(0)));
    return memcpy(dst, src, size);
}
void *rk_tsan_memmove(void *dst, const void *src, unsigned long size) {
    on_access(src, size, 0, caller(__builtin_return_address(0)));
    on_access(dst, size, F_WRITE, caller(__builtin_return_address(0)));
    return memmove(dst, src, size);
}
void *rk_tsan_memset(void *dst, int value, unsigned long size) {
    on_access(dst, size, F_WRITE, caller(__builtin_return_address(0)));
    return memset(dst, value, size);
}

void rk_tsan_atomic_thread_fence(int) {
    if (!S.armed) return;
    sync_block();
    const uint32_t tid = cur_tid();
    if (tid < MAX_THREADS) S.fenced[tid] = 1;
}
void rk_tsan_atomic_signal_fence(int) {}

}  // extern "C"

// Atomics: real ones, since a launch may be checked on several workers at once (16-byte ones under
// one lock: no libatomic, and no cmpxchg16b assumed).
namespace {
std::atomic_flag wide_lock = ATOMIC_FLAG_INIT;
struct WideGuard {
    WideGuard() {
        while (wide_lock.test_and_set(std::memory_order_acquire)) __builtin_ia32_pause();
    }
    ~WideGuard() { wide_lock.clear(std::memory_order_release); }
};
template <class T>
T a_load(const volatile T *a) {
    if constexpr (sizeof(T) <= 8) {
        return __atomic_load_n(a, __ATOMIC_SEQ_CST);
    } else {
        WideGuard g;
        return *a;
    }
}
template <class T>
void a_store(volatile T *a, T v) {
    if constexpr (sizeof(T) <= 8) {
        __atomic_store_n(a, v, __ATOMIC_SEQ_CST);
    } else {
        WideGuard g;
        *a = v;
    }
}
// Compare and exchange: `expected` becomes the value found.
template <class T>
bool a_cas(volatile T *a, T &expected, T v) {
    if constexpr (sizeof(T) <= 8) {
        return __atomic_compare_exchange_n(a, &expected, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
    } else {
        WideGuard g;
        const T old = *a;
        if (old == expected) {
            *a = v;
            return true;
        }
        expected = old;
        return false;
    }
}
template <class T>
T atomic_rmw(volatile T *a, T v, int mo, uint64_t pc, T (*op)(T, T)) {
    on_access(a, sizeof(T), F_ATOMIC | F_WRITE, pc);
    on_sync(a, mo);
    T old = a_load(a);
    while (!a_cas(a, old, op(old, v))) {
    }
    return old;
}
template <class T>
int atomic_cas(volatile T *a, T *c, T v, int mo, uint64_t pc) {
    on_access(a, sizeof(T), F_ATOMIC | F_WRITE, pc);
    on_sync(a, mo);
    T expected = *c;
    if (a_cas(a, expected, v)) return 1;
    *c = expected;
    return 0;
}
template <class T> T op_xchg(T, T v) { return v; }
template <class T> T op_add(T o, T v) { return T(o + v); }
template <class T> T op_sub(T o, T v) { return T(o - v); }
template <class T> T op_and(T o, T v) { return T(o & v); }
template <class T> T op_or(T o, T v) { return T(o | v); }
template <class T> T op_xor(T o, T v) { return T(o ^ v); }
template <class T> T op_nand(T o, T v) { return T(~(o & v)); }
}  // namespace

extern "C" {
#define RK_ATOMIC(N, T)                                                                                \
    T rk_tsan_atomic##N##_load(const volatile T *a, int mo) {                                          \
        on_access(a, sizeof(T), F_ATOMIC, caller(__builtin_return_address(0)));                        \
        on_sync(a, mo);                                                                                \
        return a_load(a);                                                                              \
    }                                                                                                  \
    void rk_tsan_atomic##N##_store(volatile T *a, T v, int mo) {                                       \
        on_access(a, sizeof(T), F_ATOMIC | F_WRITE, caller(__builtin_return_address(0)));              \
        on_sync(a, mo);                                                                                \
        a_store(a, v);                                                                                 \
    }                                                                                                  \
    T rk_tsan_atomic##N##_exchange(volatile T *a, T v, int mo) {                                       \
        return atomic_rmw<T>(a, v, mo, caller(__builtin_return_address(0)), op_xchg<T>);               \
    }                                                                                                  \
    T rk_tsan_atomic##N##_fetch_add(volatile T *a, T v, int mo) {                                      \
        return atomic_rmw<T>(a, v, mo, caller(__builtin_return_address(0)), op_add<T>);                \
    }                                                                                                  \
    T rk_tsan_atomic##N##_fetch_sub(volatile T *a, T v, int mo) {                                      \
        return atomic_rmw<T>(a, v, mo, caller(__builtin_return_address(0)), op_sub<T>);                \
    }                                                                                                  \
    T rk_tsan_atomic##N##_fetch_and(volatile T *a, T v, int mo) {                                      \
        return atomic_rmw<T>(a, v, mo, caller(__builtin_return_address(0)), op_and<T>);                \
    }                                                                                                  \
    T rk_tsan_atomic##N##_fetch_or(volatile T *a, T v, int mo) {                                       \
        return atomic_rmw<T>(a, v, mo, caller(__builtin_return_address(0)), op_or<T>);                 \
    }                                                                                                  \
    T rk_tsan_atomic##N##_fetch_xor(volatile T *a, T v, int mo) {                                      \
        return atomic_rmw<T>(a, v, mo, caller(__builtin_return_address(0)), op_xor<T>);                \
    }                                                                                                  \
    T rk_tsan_atomic##N##_fetch_nand(volatile T *a, T v, int mo) {                                     \
        return atomic_rmw<T>(a, v, mo, caller(__builtin_return_address(0)), op_nand<T>);               \
    }                                                                                                  \
    int rk_tsan_atomic##N##_compare_exchange_strong(volatile T *a, T *c, T v, int mo, int) {           \
        return atomic_cas<T>(a, c, v, mo, caller(__builtin_return_address(0)));                        \
    }                                                                                                  \
    int rk_tsan_atomic##N##_compare_exchange_weak(volatile T *a, T *c, T v, int mo, int) {             \
        return atomic_cas<T>(a, c, v, mo, caller(__builtin_return_address(0)));                        \
    }                                                                                                  \
    T rk_tsan_atomic##N##_compare_exchange_val(volatile T *a, T c, T v, int mo, int) {                 \
        on_access(a, sizeof(T), F_ATOMIC | F_WRITE, caller(__builtin_return_address(0)));              \
        on_sync(a, mo);                                                                                \
        T expected = c;                                                                                \
        a_cas(a, expected, v);                                                                         \
        return expected;                                                                               \
    }
RK_ATOMIC(8, unsigned char)
RK_ATOMIC(16, unsigned short)
RK_ATOMIC(32, unsigned int)
RK_ATOMIC(64, unsigned long long)
RK_ATOMIC(128, unsigned __int128)
#undef RK_ATOMIC
}  // extern "C"

#else  // not x86-64 Linux: the cpu backend does not run kernels at all (runtime.cpp).

extern "C" uint32_t rk_race_begin(const rk_race_range *, uint32_t, uint32_t) { return 1; }
extern "C" uint32_t rk_race_end(rk_race_report *, uint32_t, uint64_t *total) {
    if (total) *total = 0;
    return 0;
}
extern "C" uint64_t rk_race_barrier_pc(uint32_t) { return 0; }
extern "C" void rk_race_set_strict(uint32_t) {}
extern "C" void rk_race_set_summaries(uint32_t) {}
extern "C" uint64_t rk_race_summary_stats(uint32_t *replayed) {
    if (replayed) *replayed = 0;
    return 0;
}
extern "C" void rk_race_bound(const rk_race_range *, uint32_t) {}
extern "C" uint32_t rk_race_out_of_bounds(rk_race_report *) { return 0; }
extern "C" void rk_race_set_workers(const void *, uint32_t) {}
extern "C" uint32_t rk_race_worker(const void *, uint32_t, uint64_t, uint64_t *, uint64_t *) { return 0; }
extern "C" uint32_t rk_race_rerun(uint32_t) { return 0; }

#endif
