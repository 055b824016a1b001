/* A stand-in for libamdhip64, for testing the amd backend's Rust side on machines without an
 * AMD GPU. It exports the HIP functions the backend uses with their real C signatures, keeps
 * "device memory" in host memory, and records what it was given so the tests can check it:
 *
 * - two devices: 0 is "Fake Instinct" gfx90a:sramecc+:xnack- (wave 64), 1 is "Fake Radeon"
 *   gfx1030 (wave 32), described through hipGetDeviceProperties in the ROCm 5 struct layout;
 * - the current device is per thread, and every allocation remembers its device: memory of one
 *   device touched while another is current is an error, so the tests catch a missing
 *   hipSetDevice;
 * - hipModuleLoadData records the AMDGPU machine (EF_AMDGPU_MACH) of the ELF it was given;
 * - hipModuleLaunchKernel runs `saxpy(float a, const float* x, float* y, int n)` on the host,
 *   reading its arguments from kernelParams as the real runtime does.
 *
 * Compile-time variants (-D):
 *   FAKE_INIT_ERROR=n  hipInit returns n;
 *   FAKE_MINIMAL       only hipInit, hipGetDeviceCount and hipGetErrorString/Name exist;
 *   FAKE_NO_MALLOC     hipMalloc does not exist.
 *
 * Its bookkeeping has no locks: each test loads its own copy and uses it from one thread.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef int hipError_t;
enum { OK = 0, INVALID_VALUE = 1, NO_DEVICE = 100, INVALID_DEVICE = 101, NOT_FOUND = 500 };

const char *hipGetErrorString(hipError_t e) {
    switch (e) {
    case OK: return "no error";
    case INVALID_VALUE: return "invalid argument";
    case NO_DEVICE: return "no ROCm-capable device is detected";
    case INVALID_DEVICE: return "invalid device ordinal";
    case NOT_FOUND: return "named symbol not found";
    default: return "unknown error";
    }
}

const char *hipGetErrorName(hipError_t e) {
    switch (e) {
    case OK: return "hipSuccess";
    case INVALID_VALUE: return "hipErrorInvalidValue";
    case NO_DEVICE: return "hipErrorNoDevice";
    case INVALID_DEVICE: return "hipErrorInvalidDevice";
    case NOT_FOUND: return "hipErrorNotFound";
    default: return "hipErrorUnknown";
    }
}

hipError_t hipInit(unsigned flags) {
    (void)flags;
#ifdef FAKE_INIT_ERROR
    return FAKE_INIT_ERROR;
#else
    return OK;
#endif
}

hipError_t hipGetDeviceCount(int *count) {
    *count = 2;
    return OK;
}

#ifndef FAKE_MINIMAL

#define DEVICES 2
static const char *NAMES[DEVICES] = {"Fake Instinct", "Fake Radeon"};
static const char *ARCHS[DEVICES] = {"gfx90a:sramecc+:xnack-", "gfx1030"};
static const int WAVES[DEVICES] = {64, 32};
static __thread int current = 0;

/* Counters and records the tests read through fake_* functions. */
static int loaded_mach = -1, unloads = 0, launches = 0, device_mismatches = 0;
int fake_loaded_mach(void) { return loaded_mach; }
int fake_unloads(void) { return unloads; }
int fake_launches(void) { return launches; }
int fake_device_mismatches(void) { return device_mismatches; }

hipError_t hipSetDevice(int device) {
    if (device < 0 || device >= DEVICES) return INVALID_DEVICE;
    current = device;
    return OK;
}

hipError_t hipRuntimeGetVersion(int *v) {
    *v = 50221153;
    return OK;
}

hipError_t hipDeviceGetName(char *name, int len, int device) {
    if (device < 0 || device >= DEVICES) return INVALID_DEVICE;
    strncpy(name, NAMES[device], (size_t)len);
    return OK;
}

hipError_t hipDeviceGetAttribute(int *value, int attribute, int device) {
    if (device < 0 || device >= DEVICES) return INVALID_DEVICE;
    switch (attribute) {
    case 63: *value = device == 0 ? 104 : 60; return OK; /* MultiprocessorCount */
    case 87: *value = WAVES[device]; return OK;          /* WarpSize */
    case 67: *value = 3 + device; return OK;             /* PciBusId */
    case 68: case 69: *value = 0; return OK;             /* PciDeviceId, PciDomainID */
    default: return INVALID_VALUE;
    }
}

hipError_t hipDeviceTotalMem(size_t *bytes, int device) {
    if (device < 0 || device >= DEVICES) return INVALID_DEVICE;
    *bytes = (size_t)(device == 0 ? 64 : 16) << 30;
    return OK;
}

/* The ROCm 4.2-5.x hipDeviceProp_t: name at 0, warpSize at 276, gcnArchName at 396. */
hipError_t hipGetDeviceProperties(void *props, int device) {
    if (device < 0 || device >= DEVICES) return INVALID_DEVICE;
    char *p = props;
    memset(p, 0, 792);
    strcpy(p, NAMES[device]);
    memcpy(p + 276, &WAVES[device], 4);
    strcpy(p + 396, ARCHS[device]);
    return OK;
}

hipError_t hipDeviceSynchronize(void) { return OK; }

/* Allocations, in a list so that pointers into the middle of one are recognised. */
struct alloc { char *base; size_t bytes; int device; struct alloc *next; };
static struct alloc *allocations = 0;

static struct alloc *owner(const void *ptr) {
    for (struct alloc *a = allocations; a; a = a->next)
        if ((const char *)ptr >= a->base && (const char *)ptr < a->base + a->bytes) return a;
    return 0;
}

/* 0 if `ptr` is memory of the current device, else an error (and a recorded mismatch). */
static hipError_t check_device_ptr(const void *ptr) {
    struct alloc *a = owner(ptr);
    if (!a) return INVALID_VALUE;
    if (a->device != current) {
        device_mismatches++;
        return INVALID_DEVICE;
    }
    return OK;
}

#ifndef FAKE_NO_MALLOC
hipError_t hipMalloc(void **ptr, size_t bytes) {
    struct alloc *a = malloc(sizeof *a);
    a->base = malloc(bytes);
    a->bytes = bytes;
    a->device = current;
    a->next = allocations;
    allocations = a;
    *ptr = a->base;
    return OK;
}
#endif

/* Pinned host memory: counted, and freed only through hipHostFree with the pointer it gave. */
struct host_alloc { void *base; struct host_alloc *next; };
static struct host_alloc *host_allocations = 0;
static int host_live = 0, host_flags = -1;
int fake_host_live(void) { return host_live; }
int fake_host_flags(void) { return host_flags; }

hipError_t hipHostMalloc(void **ptr, size_t bytes, unsigned flags) {
    struct host_alloc *a = malloc(sizeof *a);
    if (posix_memalign(&a->base, 4096, bytes)) { free(a); return INVALID_VALUE; }
    a->next = host_allocations;
    host_allocations = a;
    host_live++;
    host_flags = (int)flags;
    *ptr = a->base;
    return OK;
}

hipError_t hipHostFree(void *ptr) {
    for (struct host_alloc **link = &host_allocations; *link; link = &(*link)->next)
        if ((*link)->base == ptr) {
            struct host_alloc *a = *link;
            *link = a->next;
            free(a->base);
            free(a);
            host_live--;
            return OK;
        }
    return INVALID_VALUE;
}

hipError_t hipFree(void *ptr) {
    hipError_t e = check_device_ptr(ptr);
    if (e) return e;
    for (struct alloc **link = &allocations; *link; link = &(*link)->next)
        if ((*link)->base == ptr) {
            struct alloc *a = *link;
            *link = a->next;
            free(a->base);
            free(a);
            return OK;
        }
    return INVALID_VALUE; /* not the start of an allocation */
}

struct stream { int device; };

static hipError_t check_stream(void *stream) {
    if (!stream) return INVALID_VALUE; /* the backend always uses its own streams */
    if (((struct stream *)stream)->device != current) {
        device_mismatches++;
        return INVALID_DEVICE;
    }
    return OK;
}

hipError_t hipStreamCreate(void **stream) {
    struct stream *s = malloc(sizeof *s);
    s->device = current;
    *stream = s;
    return OK;
}
hipError_t hipStreamSynchronize(void *stream) { return stream ? OK : INVALID_VALUE; }
hipError_t hipStreamDestroy(void *stream) {
    free(stream);
    return OK;
}

hipError_t hipMemcpyHtoDAsync(void *dst, void *src, size_t bytes, void *stream) {
    hipError_t e = check_stream(stream);
    if (!e) e = check_device_ptr(dst);
    if (!e) memcpy(dst, src, bytes);
    return e;
}
hipError_t hipMemcpyDtoHAsync(void *dst, void *src, size_t bytes, void *stream) {
    hipError_t e = check_stream(stream);
    if (!e) e = check_device_ptr(src);
    if (!e) memcpy(dst, src, bytes);
    return e;
}
hipError_t hipMemcpyDtoDAsync(void *dst, void *src, size_t bytes, void *stream) {
    hipError_t e = check_stream(stream);
    if (!e) e = check_device_ptr(dst);
    if (!e) e = check_device_ptr(src);
    if (!e) memmove(dst, src, bytes);
    return e;
}
hipError_t hipMemsetD8Async(void *dst, unsigned char v, size_t n, void *stream) {
    hipError_t e = check_stream(stream);
    if (!e) e = check_device_ptr(dst);
    if (!e) memset(dst, v, n);
    return e;
}
hipError_t hipMemsetD16Async(void *dst, unsigned short v, size_t n, void *stream) {
    hipError_t e = check_stream(stream);
    if (!e) e = check_device_ptr(dst);
    for (size_t i = 0; !e && i < n; i++) ((unsigned short *)dst)[i] = v;
    return e;
}
hipError_t hipMemsetD32Async(void *dst, int v, size_t n, void *stream) {
    hipError_t e = check_stream(stream);
    if (!e) e = check_device_ptr(dst);
    for (size_t i = 0; !e && i < n; i++) ((int *)dst)[i] = v;
    return e;
}

/* Events hold the value of a clock that advances by 1.5 "ms" per record. */
static float clock_ms = 0;
hipError_t hipEventCreate(void **event) {
    *event = calloc(1, sizeof(float));
    return OK;
}
hipError_t hipEventRecord(void *event, void *stream) {
    hipError_t e = check_stream(stream);
    if (!e) *(float *)event = (clock_ms += 1.5f);
    return e;
}
hipError_t hipEventSynchronize(void *event) { return event ? OK : INVALID_VALUE; }
hipError_t hipEventElapsedTime(float *ms, void *start, void *end) {
    *ms = *(float *)end - *(float *)start;
    return OK;
}
hipError_t hipEventDestroy(void *event) {
    free(event);
    return OK;
}

/* A module is the ELF machine it was loaded for; functions are names it knows. */
hipError_t hipModuleLoadData(void **module, const void *image) {
    const unsigned char *elf = image;
    if (memcmp(elf, "\x7f" "ELF", 4) != 0) return 200; /* hipErrorInvalidImage */
    uint32_t flags;
    memcpy(&flags, elf + 48, 4);
    loaded_mach = (int)(flags & 0xff);
    int *m = malloc(sizeof(int));
    *m = loaded_mach;
    *module = m;
    return OK;
}
hipError_t hipModuleUnload(void *module) {
    free(module);
    unloads++;
    return OK;
}

static const char *KNOWN[] = {"saxpy", "_Z5scaleIfEvPT_S0_", "_Z5plainPi"};
hipError_t hipModuleGetFunction(void **function, void *module, const char *name) {
    (void)module;
    for (size_t i = 0; i < sizeof KNOWN / sizeof *KNOWN; i++)
        if (strcmp(name, KNOWN[i]) == 0) {
            *function = (void *)KNOWN[i];
            return OK;
        }
    return NOT_FOUND;
}

hipError_t hipModuleLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                 unsigned by, unsigned bz, unsigned shared, void *stream,
                                 void **params, void **extra) {
    (void)gy; (void)gz; (void)by; (void)bz; (void)shared;
    hipError_t e = check_stream(stream);
    if (e) return e;
    if (extra) return INVALID_VALUE;
    launches++;
    if (strcmp((const char *)f, "saxpy") == 0) {
        float a = *(float *)params[0];
        const float *x = *(const float **)params[1];
        float *y = *(float **)params[2];
        int n = *(int *)params[3];
        if ((e = check_device_ptr(x)) || (e = check_device_ptr(y))) return e;
        for (unsigned i = 0; i < gx * bx && (int)i < n; i++) y[i] = a * x[i] + y[i];
    }
    return OK;
}

#endif /* FAKE_MINIMAL */
