/* Faults no one wrote clmulti for, as an OpenCL layer (OPENCL_LAYERS): each buffer of a
 * context of CLMULTI_FAULT_MIN_DEVICES or more devices (default 2) takes what the
 * fault named by CLMULTI_FAULT takes, and creation fails with CL_OUT_OF_HOST_MEMORY
 * (-6) when that runs out, as Intel's runtime reports any failure. Every other call
 * goes to the runtime untouched.
 *
 *   maps        CLMULTI_FAULT_MAPS (64) separate one-page mappings per buffer:
 *               mmap fails at vm.max_map_count (ENOMEM)
 *   as          CLMULTI_FAULT_BYTES (1 MiB) of address space reserved per buffer:
 *               mmap fails at RLIMIT_AS (ENOMEM)
 *   random      fails each buffer with chance 1/CLMULTI_FAULT_ONE_IN (500)
 *   timed       fails every buffer after CLMULTI_FAULT_SECONDS (0.4) from the first
 *   two-limits  one descriptor per buffer, and a counter failing after
 *               CLMULTI_FAULT_COUNT buffers (two limits close together)
 *   cache       CLMULTI_FAULT_BYTES touched per buffer, kept on release and reused
 *               by later buffers (memory a runtime caches: no growth across rounds)
 *   leak        CLMULTI_FAULT_BYTES touched per buffer, never freed (a slow leak)
 *   persistent  a count of buffers kept in the file CLMULTI_FAULT_FILE, across
 *               processes, failing after CLMULTI_FAULT_COUNT in all (a limit kept
 *               outside the process)
 *   counter     fails after CLMULTI_FAULT_COUNT buffers, no call failing */
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl_layer.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static struct _cl_icd_dispatch dispatch;
static const struct _cl_icd_dispatch *runtime;
static long buffers;
static double started = -1;
static void *cache[1 << 16];
static int cached;
/* cache: each live buffer's block, returned to the cache on release. */
static struct { cl_mem mem; void *block; } held[1 << 16];
static int holding;
static void *pending;

static double knob(const char *name, double fallback) {
    const char *v = getenv(name);
    return v && *v ? atof(v) : fallback;
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

/* What the fault takes for one buffer; 0 when it ran out. */
static int take(const char *fault) {
    size_t bytes = (size_t)knob("CLMULTI_FAULT_BYTES", 1 << 20);
    long count = (long)knob("CLMULTI_FAULT_COUNT", 1000);
    if (!strcmp(fault, "maps")) {
        long pages = (long)knob("CLMULTI_FAULT_MAPS", 64), page = sysconf(_SC_PAGESIZE);
        char *span = mmap(NULL, 2 * pages * page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (span == MAP_FAILED) return 0;
        for (long i = 0; i < pages; i++)  /* every other page readable: no two merge */
            if (mprotect(span + 2 * i * page, page, PROT_READ) != 0) return 0;
        return 1;
    }
    if (!strcmp(fault, "as"))
        return mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0) != MAP_FAILED;
    if (!strcmp(fault, "random")) {
        static int seeded;
        if (!seeded) { srand((unsigned)(getpid() ^ (long)(now() * 1e6))); seeded = 1; }
        return rand() % (int)knob("CLMULTI_FAULT_ONE_IN", 500) != 0;
    }
    if (!strcmp(fault, "timed")) {
        if (started < 0) started = now();
        return now() - started < knob("CLMULTI_FAULT_SECONDS", 0.4);
    }
    if (!strcmp(fault, "two-limits"))
        return open("/dev/null", O_RDONLY | O_CLOEXEC) >= 0 && buffers < count;
    if (!strcmp(fault, "cache") || !strcmp(fault, "leak")) {
        void *block = cached > 0 && !strcmp(fault, "cache") ? cache[--cached] : malloc(bytes);
        if (!block) return 0;
        memset(block, 1, bytes);
        if (!strcmp(fault, "cache")) pending = block;
        return 1;
    }
    if (!strcmp(fault, "persistent")) {
        const char *file = getenv("CLMULTI_FAULT_FILE");
        if (!file) return 1;
        FILE *f = fopen(file, "r+");
        long total = 0;
        if (!f) f = fopen(file, "w+");
        if (!f) return 0;
        if (fscanf(f, "%ld", &total) != 1) total = 0;
        rewind(f);
        fprintf(f, "%ld\n", total + 1);
        fclose(f);
        return total < count;
    }
    if (!strcmp(fault, "counter")) return buffers < count;
    return 1;
}

static cl_mem CL_API_CALL create_buffer(cl_context context, cl_mem_flags flags, size_t size,
                                        void *host, cl_int *error) {
    const char *fault = getenv("CLMULTI_FAULT");
    cl_uint devices = 0;
    runtime->clGetContextInfo(context, CL_CONTEXT_NUM_DEVICES, sizeof devices, &devices, NULL);
    if (fault && devices >= (cl_uint)knob("CLMULTI_FAULT_MIN_DEVICES", 2)) {
        if (!take(fault)) {
            if (error) *error = CL_OUT_OF_HOST_MEMORY;
            return NULL;
        }
        buffers++;
    }
    cl_mem mem = runtime->clCreateBuffer(context, flags, size, host, error);
    if (pending && mem && holding < (int)(sizeof held / sizeof *held)) {
        held[holding].mem = mem;
        held[holding++].block = pending;
    }
    pending = NULL;
    return mem;
}

static cl_int CL_API_CALL release(cl_mem mem) {
    for (int i = holding - 1; i >= 0; i--) {
        if (held[i].mem == mem) {
            if (cached < (int)(sizeof cache / sizeof *cache)) cache[cached++] = held[i].block;
            held[i] = held[--holding];
            break;
        }
    }
    return runtime->clReleaseMemObject(mem);
}

CL_API_ENTRY cl_int CL_API_CALL clGetLayerInfo(cl_layer_info name, size_t size, void *value,
                                               size_t *size_ret) {
    cl_layer_api_version version = CL_LAYER_API_VERSION_100;
    if (name != CL_LAYER_API_VERSION) return CL_INVALID_VALUE;
    if (value) {
        if (size < sizeof version) return CL_INVALID_VALUE;
        memcpy(value, &version, sizeof version);
    }
    if (size_ret) *size_ret = sizeof version;
    return CL_SUCCESS;
}

CL_API_ENTRY cl_int CL_API_CALL clInitLayer(cl_uint entries,
                                            const struct _cl_icd_dispatch *target,
                                            cl_uint *entries_ret,
                                            const struct _cl_icd_dispatch **layer) {
    size_t count = sizeof dispatch / sizeof(void *);
    if (entries < count) count = entries;
    runtime = target;
    memcpy(&dispatch, target, count * sizeof(void *));
    dispatch.clCreateBuffer = create_buffer;
    dispatch.clReleaseMemObject = release;
    *entries_ret = (cl_uint)count;
    *layer = &dispatch;
    return CL_SUCCESS;
}
