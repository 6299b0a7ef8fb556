/* The fault space: one OpenCL layer (OPENCL_LAYERS) whose every dimension is an
 * environment variable, so that a generator can make faults nobody wrote clmulti
 * for and know the truth of each (clmulti_explain::testing::fault_space writes the
 * variables and the truth; its judge holds a diagnosis against the truth).
 *
 * Each clCreateBuffer in a context the fault charges (the device multiplier m > 0)
 * goes through, in order: a raise that hurts, a deadline, chance, a second limit,
 * the layer's own budget, and what the buffer really consumes; the first that runs
 * out makes the call fail with CL_OUT_OF_HOST_MEMORY (-6), as Intel's runtime
 * reports any failure. Every other call goes to the runtime untouched.
 *
 *   CLMULTI_FS_LIMIT      the budget in units (0: none)
 *   CLMULTI_FS_UNIT       count | bytes | granules:BYTES      (what a buffer costs)
 *   CLMULTI_FS_LIFETIME   live | cumulative | delayed:MS | rate:UNITS_PER_S
 *                         | cache | leak-first:N              (when cost comes back)
 *   CLMULTI_FS_SCOPE      context | process | user | cgroup | system  (who shares it;
 *                         the last three in files under CLMULTI_FS_DIR)
 *   CLMULTI_FS_PEERS      none | linear | quadratic | device:K    (the multiplier m:
 *                         1 from CLMULTI_FS_MIN_DEVICES devices (default 2), peers,
 *                         peers squared, 1 when the context holds platform device K)
 *   CLMULTI_FS_TIME       none | delay:US | deadline:S
 *   CLMULTI_FS_DELAY_US   a delay in every charged create besides (a slow runtime)
 *   CLMULTI_FS_RANDOM     none | rate:N (1 in N) | hazard:N (chance rising with the count)
 *   CLMULTI_FS_SECOND     a second limit: buffers charged in the process (0: none)
 *   CLMULTI_FS_CONSUME    none | fds:K | maps:K | heap:BYTES | mem:BYTES | threads:K
 *                         (taken per buffer, times m: real resources, real limits)
 *   CLMULTI_FS_CALL       none | hooked | unhooked | raw: how descriptors are opened
 *                         (open, fcntl F_DUPFD, an inline syscall) and which call
 *                         fails when the budget runs out (mmap ENOMEM, statx ENOENT,
 *                         an inline openat ENOENT, none)
 *   CLMULTI_FS_RAISE_HURTS  fail every buffer when the soft RLIMIT_NOFILE is above it
 */
#define _GNU_SOURCE
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl_layer.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static struct _cl_icd_dispatch dispatch;
static const struct _cl_icd_dispatch *runtime;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

enum unit { COUNT, BYTES, GRANULES };
enum lifetime { LIVE, CUMULATIVE, DELAYED, RATE, CACHE, LEAK_FIRST };
enum scope { CONTEXT, PROCESS, USER, CGROUP, SYSTEM };
enum peers { NONE, LINEAR, QUADRATIC, DEVICE };
enum consume { NOTHING, FDS, MAPS, HEAP, MEM, THREADS };
enum call { NO_CALL, HOOKED, UNHOOKED, RAW };

static struct {
    int ready;
    double limit, granule, lifetime_arg, time_arg, random_arg, consume_arg;
    long second, raise_hurts, min_devices, device, delay_us;
    enum unit unit;
    enum lifetime lifetime;
    enum scope scope;
    enum peers peers;
    enum consume consume;
    enum call call;
    int time_kind, random_kind; /* 0 none; time 1 delay 2 deadline; random 1 rate 2 hazard */
    char dir[512];
} cfg;

static const char *env(const char *name, const char *fallback) {
    const char *v = getenv(name);
    return v && *v ? v : fallback;
}

/* "word" or "word:number": the word's index in `words`, the number in *arg. */
static int choice(const char *name, const char *fallback, const char *const *words, double *arg) {
    const char *v = env(name, fallback);
    const char *colon = strchr(v, ':');
    size_t len = colon ? (size_t)(colon - v) : strlen(v);
    if (arg) *arg = colon ? atof(colon + 1) : 0;
    for (int i = 0; words[i]; i++)
        if (strlen(words[i]) == len && !strncmp(v, words[i], len)) return i;
    fprintf(stderr, "fault space: %s=%s is not one of its words\n", name, v);
    abort();
}

static void configure(void) {
    static const char *const units[] = {"count", "bytes", "granules", 0};
    static const char *const lifetimes[] = {"live", "cumulative", "delayed", "rate", "cache", "leak-first", 0};
    static const char *const scopes[] = {"context", "process", "user", "cgroup", "system", 0};
    static const char *const peer_words[] = {"none", "linear", "quadratic", "device", 0};
    static const char *const times[] = {"none", "delay", "deadline", 0};
    static const char *const randoms[] = {"none", "rate", "hazard", 0};
    static const char *const consumes[] = {"none", "fds", "maps", "heap", "mem", "threads", 0};
    static const char *const calls[] = {"none", "hooked", "unhooked", "raw", 0};
    double device = 0;
    cfg.limit = atof(env("CLMULTI_FS_LIMIT", "0"));
    cfg.unit = choice("CLMULTI_FS_UNIT", "count", units, &cfg.granule);
    cfg.lifetime = choice("CLMULTI_FS_LIFETIME", "live", lifetimes, &cfg.lifetime_arg);
    cfg.scope = choice("CLMULTI_FS_SCOPE", "process", scopes, NULL);
    cfg.peers = choice("CLMULTI_FS_PEERS", "none", peer_words, &device);
    cfg.device = (long)device;
    cfg.time_kind = choice("CLMULTI_FS_TIME", "none", times, &cfg.time_arg);
    cfg.random_kind = choice("CLMULTI_FS_RANDOM", "none", randoms, &cfg.random_arg);
    cfg.consume = choice("CLMULTI_FS_CONSUME", "none", consumes, &cfg.consume_arg);
    cfg.call = choice("CLMULTI_FS_CALL", "none", calls, NULL);
    cfg.second = atol(env("CLMULTI_FS_SECOND", "0"));
    cfg.raise_hurts = atol(env("CLMULTI_FS_RAISE_HURTS", "0"));
    cfg.min_devices = atol(env("CLMULTI_FS_MIN_DEVICES", "2"));
    cfg.delay_us = atol(env("CLMULTI_FS_DELAY_US", "0"));
    snprintf(cfg.dir, sizeof cfg.dir, "%s", env("CLMULTI_FS_DIR", "/tmp"));
    cfg.ready = 1;
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static double wall(void) {
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

/* ---- Ledgers: a used amount (and, for a rate, when it was last drained). ---- */

struct ledger { double used, at; };
static struct ledger process_ledger;

/* The file holding a shared ledger, or "" for one kept in this process. */
static void ledger_file(char *path, size_t size) {
    char key[256] = "all";
    if (cfg.scope == USER) {
        snprintf(key, sizeof key, "uid-%u", (unsigned)getuid());
    } else if (cfg.scope == CGROUP) {
        /* The cgroup this process is in, as a name: /proc/self/cgroup's lines joined. */
        unsigned long hash = 5381;
        FILE *f = fopen("/proc/self/cgroup", "r");
        int c;
        while (f && (c = fgetc(f)) != EOF) hash = hash * 33 + (unsigned char)c;
        if (f) fclose(f);
        snprintf(key, sizeof key, "cgroup-%lx", hash);
    }
    snprintf(path, size, "%s/ledger-%s", cfg.dir, key);
}

static int shared_scope(void) { return cfg.scope == USER || cfg.scope == CGROUP || cfg.scope == SYSTEM; }

/* Applies `delta` to the ledger `l` (or the shared file) if the result stays within the
 * limit (or always, for a release: `force`); returns whether it did. */
static int ledger_take(struct ledger *l, double delta, int force) {
    int fd = -1;
    struct ledger shared = {0, 0};
    if (shared_scope()) {
        char path[600];
        ledger_file(path, sizeof path);
        fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
        if (fd < 0) return force;
        fchmod(fd, 0666);
        flock(fd, LOCK_EX);
        char text[128] = {0};
        if (pread(fd, text, sizeof text - 1, 0) > 0) sscanf(text, "%lf %lf", &shared.used, &shared.at);
        l = &shared;
    }
    if (cfg.lifetime == RATE) {
        double t = wall();
        if (l->at > 0) l->used = fmax(0, l->used - cfg.lifetime_arg * (t - l->at));
        l->at = t;
    }
    int ok = force || l->used + delta <= cfg.limit;
    if (ok) l->used = fmax(0, l->used + delta);
    if (fd >= 0) {
        char text[128];
        int n = snprintf(text, sizeof text, "%.3f %.6f\n", l->used, l->at);
        if (ftruncate(fd, 0) == 0 && pwrite(fd, text, n, 0) != n) ok = ok && force;
        flock(fd, LOCK_UN);
        close(fd);
    }
    return ok;
}

/* ---- Contexts and buffers. ---- */

#define SLOTS (1 << 17)
struct context_info { cl_context context; int devices; double m; struct ledger ledger; };
static struct context_info contexts[256];
static int n_contexts;

struct held {
    cl_mem mem;
    struct ledger *ledger;
    double cost;
    int n;          /* resources taken */
    intptr_t *what; /* fds, mappings, blocks or threads */
};
static struct held buffers[SLOTS];

static struct held *slot(cl_mem mem, int insert) {
    size_t i = ((uintptr_t)mem >> 4) & (SLOTS - 1);
    for (size_t k = 0; k < SLOTS; k++, i = (i + 1) & (SLOTS - 1)) {
        if (buffers[i].mem == mem) return &buffers[i];
        if (!buffers[i].mem) return insert ? &buffers[i] : NULL;
    }
    return NULL;
}

static struct context_info *context_of(cl_context context) {
    for (int i = 0; i < n_contexts; i++)
        if (contexts[i].context == context) return &contexts[i];
    if (n_contexts == (int)(sizeof contexts / sizeof *contexts)) return NULL;
    struct context_info *c = &contexts[n_contexts++];
    memset(c, 0, sizeof *c);
    c->context = context;
    cl_uint devices = 0;
    runtime->clGetContextInfo(context, CL_CONTEXT_NUM_DEVICES, sizeof devices, &devices, NULL);
    c->devices = (int)devices;
    double peers = devices > 0 ? devices - 1 : 0;
    switch (cfg.peers) {
    case NONE: c->m = devices >= (cl_uint)cfg.min_devices ? 1 : 0; break;
    case LINEAR: c->m = peers; break;
    case QUADRATIC: c->m = peers * peers; break;
    case DEVICE: {
        /* Whether the context holds the platform's device K. */
        cl_device_id ids[64], all[64];
        cl_platform_id platform;
        cl_uint n_all = 0;
        c->m = 0;
        if (devices > 64 || runtime->clGetContextInfo(context, CL_CONTEXT_DEVICES, sizeof ids, ids, NULL) ||
            runtime->clGetDeviceInfo(ids[0], CL_DEVICE_PLATFORM, sizeof platform, &platform, NULL) ||
            runtime->clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 64, all, &n_all))
            break;
        for (cl_uint i = 0; i < devices; i++)
            if (cfg.device < (long)n_all && ids[i] == all[cfg.device]) c->m = 1;
        break;
    }
    }
    return c;
}

/* ---- What a buffer consumes. ---- */

static long raw_syscall(long n, long a, long b, long c) {
    long ret;
    __asm__ volatile("syscall" : "=a"(ret) : "a"(n), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
    return ret;
}

static int open_descriptor(void) {
    switch (cfg.call) {
    case UNHOOKED: {
        /* fcntl is no call the libc tracer hooks; inotify_init1 would meet the
         * per-user inotify limit (128) long before RLIMIT_NOFILE. */
        static int base = -1;
        if (base < 0) base = open("/dev/null", O_RDONLY | O_CLOEXEC);
        return base < 0 ? -1 : fcntl(base, F_DUPFD_CLOEXEC, 0);
    }
    case RAW: {
        long fd = raw_syscall(SYS_openat, AT_FDCWD, (long)"/dev/null", O_RDONLY | O_CLOEXEC);
        if (fd < 0) { errno = (int)-fd; return -1; }
        return (int)fd;
    }
    default: return open("/dev/null", O_RDONLY | O_CLOEXEC);
    }
}

static pthread_mutex_t park_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t park_cond = PTHREAD_COND_INITIALIZER;
static long released_threads;

static void *parked(void *arg) {
    (void)arg;
    pthread_mutex_lock(&park_lock);
    long seen = released_threads;
    while (released_threads == seen) pthread_cond_wait(&park_cond, &park_lock);
    pthread_mutex_unlock(&park_lock);
    return NULL;
}

/* Blocks of a cache lifetime, freed by released buffers, reused by new ones. */
static intptr_t cache[SLOTS];
static int cached;
static long leaked_first;

static intptr_t take_one(size_t bytes) {
    switch (cfg.consume) {
    case FDS: { int fd = open_descriptor(); return fd < 0 ? -1 : fd; }
    case MAPS: {
        long page = sysconf(_SC_PAGESIZE);
        char *span = mmap(NULL, 2 * page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (span == MAP_FAILED) return -1;
        if (mprotect(span, page, PROT_READ) != 0) { munmap(span, 2 * page); return -1; }
        return (intptr_t)span;
    }
    case HEAP:
    case MEM: {
        if (cfg.lifetime == CACHE && cached > 0) return cache[--cached];
        void *block = cfg.consume == HEAP ? malloc(bytes)
                                          : mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (!block || block == MAP_FAILED) return -1;
        memset(block, 1, bytes);
        return (intptr_t)block;
    }
    case THREADS: {
        pthread_t t;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setstacksize(&attr, 64 * 1024);
        int rc = pthread_create(&t, &attr, parked, NULL);
        pthread_attr_destroy(&attr);
        if (rc) { errno = rc; return -1; }
        return (intptr_t)t;
    }
    default: return 0;
    }
}

static void give_one(intptr_t what, size_t bytes) {
    switch (cfg.consume) {
    case FDS: close((int)what); break;
    case MAPS: munmap((void *)what, 2 * sysconf(_SC_PAGESIZE)); break;
    case HEAP:
    case MEM:
        if (cfg.lifetime == CACHE && cached < SLOTS) { cache[cached++] = what; break; }
        if (cfg.consume == HEAP) free((void *)what);
        else munmap((void *)what, bytes);
        break;
    case THREADS:
        pthread_mutex_lock(&park_lock);
        released_threads++;
        pthread_cond_broadcast(&park_cond);
        pthread_mutex_unlock(&park_lock);
        pthread_join((pthread_t)what, NULL);
        break;
    default: break;
    }
}

/* ---- Release, at once or later. ---- */

struct pending { double due; struct held h; };
static struct pending *pendings;
static int n_pending, cap_pending;

static void give_back(struct held *h) {
    size_t bytes = (size_t)cfg.consume_arg;
    int keep = cfg.lifetime == CUMULATIVE || (cfg.lifetime == LEAK_FIRST && leaked_first < (long)cfg.lifetime_arg);
    if (cfg.lifetime == LEAK_FIRST && keep) leaked_first++;
    if (!keep) {
        for (int i = 0; i < h->n; i++) give_one(h->what[i], bytes);
        if (cfg.lifetime != RATE && h->cost > 0) ledger_take(h->ledger, -h->cost, 1);
    }
    free(h->what);
}

static void reclaim_due(void) {
    double t = now();
    for (int i = 0; i < n_pending;) {
        if (pendings[i].due <= t) {
            give_back(&pendings[i].h);
            pendings[i] = pendings[--n_pending];
        } else {
            i++;
        }
    }
}

/* A process that ends gives back what the kernel would: everything live. */
__attribute__((destructor)) static void at_exit(void) {
    if (!cfg.ready || !shared_scope() || cfg.lifetime == CUMULATIVE || cfg.lifetime == RATE) return;
    double live = 0;
    for (size_t i = 0; i < SLOTS; i++)
        if (buffers[i].mem) live += buffers[i].cost;
    for (int i = 0; i < n_pending; i++) live += pendings[i].h.cost;
    if (live > 0) ledger_take(&process_ledger, -live, 1);
}

/* ---- The failing call when the budget runs out. ---- */

static void fail_call(void) {
    struct statx st;
    switch (cfg.call) {
    case HOOKED: mmap(NULL, (size_t)1 << 62, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0); break;
    case UNHOOKED: statx(AT_FDCWD, "/clmulti-fault-space-budget", 0, STATX_BASIC_STATS, &st); break;
    case RAW: raw_syscall(SYS_openat, AT_FDCWD, (long)"/clmulti-fault-space-budget", O_RDONLY); break;
    default: break;
    }
}

static double started = -1;
static long charged;

static cl_mem fail(cl_int *error) {
    if (error) *error = CL_OUT_OF_HOST_MEMORY;
    return NULL;
}

static double cost_of(size_t size, double m) {
    switch (cfg.unit) {
    case BYTES: return (double)size * m;
    case GRANULES: return ceil((double)size / cfg.granule) * cfg.granule * m;
    default: return m;
    }
}

static cl_mem CL_API_CALL create_buffer(cl_context context, cl_mem_flags flags, size_t size,
                                        void *host, cl_int *error) {
    pthread_mutex_lock(&lock);
    if (!cfg.ready) configure();
    struct context_info *c = context_of(context);
    if (!c || c->m <= 0) {
        pthread_mutex_unlock(&lock);
        return runtime->clCreateBuffer(context, flags, size, host, error);
    }
    reclaim_due();
    double t = now();
    if (started < 0) started = t;
    struct rlimit nofile;
    int refused =
        (cfg.raise_hurts && getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur > (rlim_t)cfg.raise_hurts) ||
        (cfg.time_kind == 2 && t - started > cfg.time_arg) ||
        (cfg.random_kind == 1 && drand48() * cfg.random_arg < 1) ||
        (cfg.random_kind == 2 && drand48() < (double)charged / (cfg.random_arg * cfg.random_arg / 2)) ||
        (cfg.second && charged >= cfg.second);
    if (refused) {
        pthread_mutex_unlock(&lock);
        return fail(error);
    }
    struct ledger *ledger = cfg.scope == CONTEXT ? &c->ledger : &process_ledger;
    double cost = cost_of(size, c->m);
    if (cfg.limit > 0 && !ledger_take(ledger, cost, 0)) {
        fail_call();
        pthread_mutex_unlock(&lock);
        return fail(error);
    }
    int n = cfg.consume == NOTHING ? 0 : (int)llround(cfg.consume_arg > 0 && cfg.consume != HEAP && cfg.consume != MEM ? cfg.consume_arg * c->m : c->m);
    intptr_t *what = n ? calloc((size_t)n, sizeof *what) : NULL;
    for (int i = 0; i < n; i++) {
        what[i] = take_one((size_t)cfg.consume_arg);
        if (what[i] < 0) {
            int saved = errno;
            for (int k = 0; k < i; k++) give_one(what[k], (size_t)cfg.consume_arg);
            free(what);
            if (cfg.limit > 0 && cfg.lifetime != RATE) ledger_take(ledger, -cost, 1);
            errno = saved;
            pthread_mutex_unlock(&lock);
            return fail(error);
        }
    }
    charged++;
    pthread_mutex_unlock(&lock);
    if (cfg.time_kind == 1) usleep((useconds_t)cfg.time_arg);
    if (cfg.delay_us) usleep((useconds_t)cfg.delay_us);
    cl_mem mem = runtime->clCreateBuffer(context, flags, size, host, error);
    pthread_mutex_lock(&lock);
    struct held *h = mem ? slot(mem, 1) : NULL;
    if (h) {
        *h = (struct held){mem, cfg.limit > 0 ? ledger : NULL, cfg.limit > 0 ? cost : 0, n, what};
    } else {
        for (int i = 0; i < n; i++) give_one(what[i], (size_t)cfg.consume_arg);
        free(what);
        if (cfg.limit > 0) ledger_take(ledger, -cost, 1);
    }
    pthread_mutex_unlock(&lock);
    return mem;
}

static cl_int CL_API_CALL release(cl_mem mem) {
    pthread_mutex_lock(&lock);
    struct held *h = cfg.ready ? slot(mem, 0) : NULL;
    if (h) {
        struct held copy = *h;
        /* Open addressing: take it out and put back the rest of its run. */
        h->mem = NULL;
        size_t i = (size_t)(h - buffers);
        for (size_t k = (i + 1) & (SLOTS - 1); buffers[k].mem; k = (k + 1) & (SLOTS - 1)) {
            struct held moved = buffers[k];
            buffers[k].mem = NULL;
            *slot(moved.mem, 1) = moved;
        }
        if (!copy.ledger) copy.ledger = &process_ledger, copy.cost = 0;
        if (cfg.lifetime == DELAYED) {
            if (n_pending == cap_pending) {
                cap_pending = cap_pending ? 2 * cap_pending : 1024;
                pendings = realloc(pendings, (size_t)cap_pending * sizeof *pendings);
            }
            pendings[n_pending++] = (struct pending){now() + cfg.lifetime_arg / 1000.0, copy};
        } else {
            give_back(&copy);
        }
    }
    pthread_mutex_unlock(&lock);
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

CL_API_ENTRY cl_int CL_API_CALL clInitLayer(cl_uint entries, const struct _cl_icd_dispatch *target,
                                            cl_uint *entries_ret, const struct _cl_icd_dispatch **layer) {
    size_t count = sizeof dispatch / sizeof(void *);
    if (entries < count) count = entries;
    runtime = target;
    memcpy(&dispatch, target, count * sizeof(void *));
    dispatch.clCreateBuffer = create_buffer;
    dispatch.clReleaseMemObject = release;
    srand48((long)getpid() ^ (long)(wall() * 1e6));
    *entries_ret = (cl_uint)count;
    *layer = &dispatch;
    return CL_SUCCESS;
}
