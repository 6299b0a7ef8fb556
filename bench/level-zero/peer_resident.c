/* What a device allocation made resident on a peer costs, through Level Zero: the
 * calls SYCL's Level Zero adapter makes for a multi-GPU context (zeMemAllocDevice on one
 * GPU, zeContextMakeMemoryResident on the other when zeDeviceCanAccessPeer says yes),
 * counted per allocation.
 *
 *   gcc -O2 -o peer_resident peer_resident.c -lze_loader
 *   ./peer_resident [--count N] [--size BYTES] [--no-resident]
 *
 * Output: key=value lines. Descriptors and RSS are the process's own (/proc/self); the
 * kernel-driver counts (exports, imports, GEM objects per device and region, VM binds)
 * come from clmulti's emulated kernel driver when the process runs under it
 * (`clmulti emulate`: its /run/clmulti-kmd-emu/counts), and are absent on a real
 * driver. What a real kernel adds on import (xe's GTT mirror of a VRAM object a peer
 * maps without PCIe peer-to-peer) is not modelled: an emulated import is counted only.
 * Exit status: 0 done, 1 a Level Zero call failed, 2 bad arguments. */
#include <dirent.h>
#include <level_zero/ze_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_DEVICES 8

static const char *const keys[] = {
    "exports", "exports-created", "imports", "imports-created", "maps", "vm-binds",
    "vm-binds-created", "execs", "objects-0-vram0", "objects-1-vram0", "objects-0-gtt",
    "objects-1-gtt", "deferred-objects-0-vram0", "deferred-objects-1-vram0",
    "objects-0-local0", "objects-1-local0", "objects-0-system0", "objects-1-system0",
    "resident-bytes-0-vram0", "resident-bytes-1-vram0", "execbuffers",
};
#define NKEYS (sizeof keys / sizeof keys[0])

struct snapshot {
  long fds, rss_kib, counts[NKEYS];
  int have_counts;
};

static long open_descriptors(void) {
  DIR *d = opendir("/proc/self/fd");
  long n = 0;
  if (!d) return -1;
  for (struct dirent *e; (e = readdir(d));)
    if (e->d_name[0] != '.') n++;
  closedir(d);
  return n - 1; /* the folder's own descriptor */
}

static long rss_kib(void) {
  long pages = 0, resident = 0;
  FILE *f = fopen("/proc/self/statm", "r");
  if (!f) return -1;
  if (fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = -1;
  fclose(f);
  return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

static void take(struct snapshot *s) {
  char line[256];
  FILE *f = fopen("/run/clmulti-kmd-emu/counts", "r");
  memset(s, 0, sizeof *s);
  s->fds = open_descriptors();
  s->rss_kib = rss_kib();
  if (!f) return;
  s->have_counts = 1;
  while (fgets(line, sizeof line, f)) {
    char *colon = strchr(line, ':');
    if (!colon || line[0] == '#') continue;
    *colon = 0;
    for (size_t k = 0; k < NKEYS; k++)
      if (strcmp(line, keys[k]) == 0) s->counts[k] = atol(colon + 1);
  }
  fclose(f);
}

static void per_allocation(const char *when, const struct snapshot *a, const struct snapshot *b, int n) {
  printf("%s.descriptors_per_allocation=%.3f\n", when, (double)(b->fds - a->fds) / n);
  printf("%s.rss_kib_per_allocation=%.3f\n", when, (double)(b->rss_kib - a->rss_kib) / n);
  if (!a->have_counts) return;
  for (size_t k = 0; k < NKEYS; k++)
    if (b->counts[k] != a->counts[k])
      printf("%s.%s_per_allocation=%.3f\n", when, keys[k], (double)(b->counts[k] - a->counts[k]) / n);
}

#define CHECK(call)                                                                   \
  do {                                                                                \
    ze_result_t r_ = (call);                                                          \
    if (r_ != ZE_RESULT_SUCCESS) {                                                    \
      printf("error=%s returned 0x%x\n", #call, (unsigned)r_);                        \
      return 1;                                                                       \
    }                                                                                 \
  } while (0)

int main(int argc, char **argv) {
  int count = 200, resident = 1;
  size_t size = 1 << 20;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--count") == 0 && i + 1 < argc) count = atoi(argv[++i]);
    else if (strcmp(argv[i], "--size") == 0 && i + 1 < argc) size = strtoull(argv[++i], NULL, 0);
    else if (strcmp(argv[i], "--no-resident") == 0) resident = 0;
    else {
      fprintf(stderr, "usage: %s [--count N] [--size BYTES] [--no-resident]\n", argv[0]);
      return 2;
    }
  }
  if (count < 1 || size == 0) {
    fprintf(stderr, "peer_resident: --count must be at least 1 and --size more than 0\n");
    return 2;
  }
  CHECK(zeInit(ZE_INIT_FLAG_GPU_ONLY));
  uint32_t drivers = 1;
  ze_driver_handle_t driver;
  CHECK(zeDriverGet(&drivers, &driver));
  uint32_t n = MAX_DEVICES;
  ze_device_handle_t dev[MAX_DEVICES];
  CHECK(zeDeviceGet(driver, &n, dev));
  ze_device_properties_t props = {.stype = ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES};
  CHECK(zeDeviceGetProperties(dev[0], &props));
  printf("devices=%u\ndevice_name=%s\n", n, props.name);
  if (n < 2) {
    printf("error=two devices needed, %u found\n", n);
    return 1;
  }
  ze_context_desc_t cdesc = {.stype = ZE_STRUCTURE_TYPE_CONTEXT_DESC};
  ze_context_handle_t ctx;
  CHECK(zeContextCreate(driver, &cdesc, &ctx));
  ze_bool_t can = 0;
  CHECK(zeDeviceCanAccessPeer(dev[0], dev[1], &can));
  printf("can_access_peer=%d\nmake_resident=%d\ncount=%d\nsize=%zu\n", can, resident && can, count, size);
  void **ptr = calloc(count, sizeof *ptr);
  struct snapshot before, allocated, released;
  take(&before);
  printf("kernel_counts=%s\n", before.have_counts ? "clmulti-kmd-emu (emulated kernel driver)" : "none (a real kernel driver)");
  ze_device_mem_alloc_desc_t ddesc = {.stype = ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC};
  for (int i = 0; i < count; i++) {
    CHECK(zeMemAllocDevice(ctx, &ddesc, size, 0, dev[0], &ptr[i]));
    if (resident && can) CHECK(zeContextMakeMemoryResident(ctx, dev[1], ptr[i], size));
  }
  take(&allocated);
  per_allocation("allocated", &before, &allocated, count);
  for (int i = 0; i < count; i++) CHECK(zeMemFree(ctx, ptr[i]));
  take(&released);
  per_allocation("released", &before, &released, count);
  CHECK(zeContextDestroy(ctx));
  free(ptr);
  return 0;
}
