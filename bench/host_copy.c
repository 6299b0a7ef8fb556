// Where a buffer shared by several GPUs costs host memory, phase by phase: COUNT
// buffers of SIZE in one context over DEVICES GPUs of the first platform, then each
// filled on device 0, then each filled on device 1 (data that must move between GPUs:
// Intel's NEO moves it through the buffer's host copy, MigrationSyncData). After each
// phase, one line of the process's own readings:
//   phase=create buffers=3000 rss_anon=... rss_shmem=... rss_file=... heap=... vm=... data=...
// (bytes; rss_* from /proc/self/status, heap from mallinfo2: in use, vm VmSize, data
// VmData; under clmulti's emulated driver also kernel_system0: the system-memory GEM
// objects' resident bytes its counts give, the process's own userptr pages left out:
// pages a real kernel takes for them and charges to the process's memory cgroup, which
// the emulation counts without allocating). A phase that fails prints `failed=... at=INDEX` and the program exits 1; a
// line `progress=PHASE INDEX` on stderr every 100 buffers says how far a run that was
// killed (a memory cgroup's OOM killer) got.
//
//   gcc -O2 -o host_copy host_copy.c -lOpenCL
//   clmulti emulate --devices 2 -- ./host_copy 2 3000 1048576
#define CL_TARGET_OPENCL_VERSION 220
#include <CL/cl.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned long long status_kib(const char *key) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  unsigned long long value = 0;
  size_t n = strlen(key);
  while (f && fgets(line, sizeof line, f)) {
    if (strncmp(line, key, n) == 0 && line[n] == ':') {
      value = strtoull(line + n + 1, NULL, 10);
      break;
    }
  }
  if (f) fclose(f);
  return value * 1024;
}

// The emulated driver's resident system-memory bytes, userptr pages left out; -1
// without the emulation (its counts file exists only inside an emulated process).
static long long kernel_system0(void) {
  FILE *f = fopen("/run/clmulti-kmd-emu/counts", "r");
  char line[256];
  long long total = 0, userptr = 0, value;
  int device;
  if (!f) return -1;
  while (fgets(line, sizeof line, f)) {
    if (sscanf(line, "resident-bytes-%d-system0: %lld", &device, &value) == 2) total += value;
    if (sscanf(line, "userptr-bytes: %lld", &value) == 1) userptr = value;
  }
  fclose(f);
  return total - userptr;
}

static void reading(const char *phase, int buffers) {
  struct mallinfo2 m = mallinfo2();
  printf("phase=%s buffers=%d rss_anon=%llu rss_shmem=%llu rss_file=%llu heap=%zu vm=%llu data=%llu kernel_system0=%lld\n",
         phase, buffers, status_kib("RssAnon"), status_kib("RssShmem"), status_kib("RssFile"),
         m.uordblks + m.hblkhd, status_kib("VmSize"), status_kib("VmData"), kernel_system0());
  fflush(stdout);
}

static int fill_all(cl_command_queue queue, cl_mem *buffers, int count, size_t size, const char *phase) {
  cl_uchar pattern = 0x5a;
  for (int i = 0; i < count; i++) {
    cl_int err = clEnqueueFillBuffer(queue, buffers[i], &pattern, 1, 0, size, 0, NULL, NULL);
    if (err == CL_SUCCESS) err = clFinish(queue);
    if (err != CL_SUCCESS) {
      printf("phase=%s failed=%d at=%d\n", phase, err, i);
      return 1;
    }
    if (i % 100 == 0) fprintf(stderr, "progress=%s %d\n", phase, i);
  }
  reading(phase, count);
  return 0;
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: %s DEVICES COUNT SIZE\n", argv[0]);
    return 2;
  }
  cl_uint want = (cl_uint)atoi(argv[1]);
  int count = atoi(argv[2]);
  size_t size = (size_t)strtoull(argv[3], NULL, 10);
  cl_platform_id platform;
  cl_device_id devices[8];
  cl_uint found = 0;
  if (want < 2 || want > 8 || count < 1 || size == 0 ||
      clGetPlatformIDs(1, &platform, NULL) != CL_SUCCESS ||
      clGetDeviceIDs(platform, CL_DEVICE_TYPE_GPU, 8, devices, &found) != CL_SUCCESS || found < want) {
    fprintf(stderr, "need 2 to 8 GPUs of the first platform (found %u), a count and a size\n", found);
    return 2;
  }
  cl_int err;
  reading("start", 0);
  cl_context context = clCreateContext(NULL, want, devices, NULL, NULL, &err);
  if (err != CL_SUCCESS) {
    printf("phase=context failed=%d at=0\n", err);
    return 1;
  }
  cl_command_queue first = clCreateCommandQueueWithProperties(context, devices[0], NULL, &err);
  cl_command_queue second = clCreateCommandQueueWithProperties(context, devices[1], NULL, &err);
  cl_mem *buffers = calloc((size_t)count, sizeof *buffers);
  reading("context", 0);
  for (int i = 0; i < count; i++) {
    buffers[i] = clCreateBuffer(context, CL_MEM_READ_WRITE, size, NULL, &err);
    if (err != CL_SUCCESS) {
      printf("phase=create failed=%d at=%d\n", err, i);
      return 1;
    }
    if (i % 100 == 0) fprintf(stderr, "progress=create %d\n", i);
  }
  reading("create", count);
  if (fill_all(first, buffers, count, size, "fill-device-0") ||
      fill_all(second, buffers, count, size, "fill-device-1"))
    return 1;
  for (int i = 0; i < count; i++) clReleaseMemObject(buffers[i]);
  reading("release", count);
  return 0;
}
