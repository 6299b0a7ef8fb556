/* The seed's allocation loop in plain C: the reference `clmulti run` is measured
 * against (bench/run-vs-loop.sh). It does what a clmulti scenario with the same
 * settings does, and nothing else: pick a platform by name, take its first N
 * devices, make one context over them or one per device, create COUNT buffers of
 * SIZE bytes round-robin over the devices (with `fill`, fill each with zeros on its
 * device and wait), keep them all, then release them and the contexts.
 *
 *   cc -O2 -o plain_loop bench/plain_loop.c -lOpenCL
 *   ./plain_loop --platform portable --devices 2 --context shared \
 *                --count 100000 --size 1048576 --strategy create
 *
 * Prints one JSON line: the loop's and the release's seconds, the whole process's
 * seconds so far, and the RSS it gained per buffer. Exits 1, naming the call and its
 * status, when an OpenCL call fails; 2 on bad arguments. */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

static long rss_bytes(void) {
  long pages_total = 0, pages_resident = 0;
  FILE *f = fopen("/proc/self/statm", "r");
  if (!f) return -1;
  if (fscanf(f, "%ld %ld", &pages_total, &pages_resident) != 2) pages_resident = -1;
  fclose(f);
  return pages_resident * sysconf(_SC_PAGESIZE);
}

static void fail(const char *call, cl_int status) {
  fprintf(stderr, "plain_loop: %s failed: status %d\n", call, (int)status);
  exit(1);
}

static void usage(const char *why) {
  fprintf(stderr,
          "plain_loop: %s\nusage: plain_loop --platform NAME [--devices N] [--context shared|per-device]\n"
          "                  [--count N] [--size BYTES] [--strategy create|fill]\n",
          why);
  exit(2);
}

/* Whether `haystack` contains `needle`, ignoring case. */
static int contains(const char *haystack, const char *needle) {
  size_t n = strlen(needle);
  for (const char *h = haystack; *h; ++h) {
    size_t i = 0;
    while (i < n && h[i] && tolower((unsigned char)h[i]) == tolower((unsigned char)needle[i])) ++i;
    if (i == n) return 1;
  }
  return n == 0;
}

int main(int argc, char **argv) {
  double start = now();
  const char *platform_name = NULL, *context_mode = "shared", *strategy = "create";
  long devices_wanted = 2, count = 100000;
  size_t size = 1 << 20;
  for (int i = 1; i < argc; ++i) {
    if (i + 1 >= argc) usage("every option takes a value");
    const char *key = argv[i], *value = argv[++i];
    if (!strcmp(key, "--platform")) platform_name = value;
    else if (!strcmp(key, "--devices")) devices_wanted = atol(value);
    else if (!strcmp(key, "--context")) context_mode = value;
    else if (!strcmp(key, "--count")) count = atol(value);
    else if (!strcmp(key, "--size")) size = (size_t)atoll(value);
    else if (!strcmp(key, "--strategy")) strategy = value;
    else usage("unknown option");
  }
  int shared = !strcmp(context_mode, "shared"), fill = !strcmp(strategy, "fill");
  if (!platform_name) usage("--platform is required");
  if (!shared && strcmp(context_mode, "per-device")) usage("--context: shared or per-device");
  if (!fill && strcmp(strategy, "create")) usage("--strategy: create or fill");
  if (devices_wanted < 1 || count < 1 || size < 1) usage("--devices, --count and --size must be positive");

  cl_uint platform_count = 0;
  cl_int status = clGetPlatformIDs(0, NULL, &platform_count);
  if (status != CL_SUCCESS || platform_count == 0) fail("clGetPlatformIDs", status);
  cl_platform_id *platforms = malloc(platform_count * sizeof *platforms);
  clGetPlatformIDs(platform_count, platforms, NULL);
  cl_platform_id platform = NULL;
  for (cl_uint p = 0; p < platform_count && !platform; ++p) {
    char name[256] = "";
    clGetPlatformInfo(platforms[p], CL_PLATFORM_NAME, sizeof name, name, NULL);
    if (contains(name, platform_name)) platform = platforms[p];
  }
  if (!platform) {
    fprintf(stderr, "plain_loop: no platform named like '%s'\n", platform_name);
    return 2;
  }
  cl_uint device_count = 0;
  status = clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 0, NULL, &device_count);
  if (status != CL_SUCCESS) fail("clGetDeviceIDs", status);
  if ((long)device_count < devices_wanted) {
    fprintf(stderr, "plain_loop: the platform has %u device(s), %ld wanted\n", device_count, devices_wanted);
    return 2;
  }
  cl_device_id *devices = malloc(device_count * sizeof *devices);
  clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, device_count, devices, NULL);
  cl_uint n = (cl_uint)devices_wanted;

  cl_uint context_count = shared ? 1 : n;
  cl_context *contexts = malloc(context_count * sizeof *contexts);
  cl_command_queue *queues = calloc(n, sizeof *queues);
  for (cl_uint c = 0; c < context_count; ++c) {
    contexts[c] = clCreateContext(NULL, shared ? n : 1, shared ? devices : &devices[c], NULL, NULL, &status);
    if (status != CL_SUCCESS) fail("clCreateContext", status);
  }
  if (fill) {
    for (cl_uint d = 0; d < n; ++d) {
      queues[d] = clCreateCommandQueue(contexts[shared ? 0 : d], devices[d], 0, &status);
      if (status != CL_SUCCESS) fail("clCreateCommandQueue", status);
    }
  }
  /* The widest zero pattern (<= 128 bytes) that divides the size, as clmulti's fill. */
  static const unsigned char zeros[128];
  size_t pattern = 128;
  while (size % pattern) pattern /= 2;

  cl_mem *buffers = malloc(count * sizeof *buffers);
  long rss_before = rss_bytes();
  double loop_start = now();
  for (long i = 0; i < count; ++i) {
    cl_uint d = (cl_uint)(i % n);
    buffers[i] = clCreateBuffer(contexts[shared ? 0 : d], CL_MEM_READ_WRITE, size, NULL, &status);
    if (status != CL_SUCCESS) fail("clCreateBuffer", status);
    if (fill) {
      status = clEnqueueFillBuffer(queues[d], buffers[i], zeros, pattern, 0, size, 0, NULL, NULL);
      if (status != CL_SUCCESS) fail("clEnqueueFillBuffer", status);
      status = clFinish(queues[d]);
      if (status != CL_SUCCESS) fail("clFinish", status);
    }
  }
  double loop_seconds = now() - loop_start;
  long rss_after = rss_bytes();
  double release_start = now();
  for (long i = 0; i < count; ++i) clReleaseMemObject(buffers[i]);
  for (cl_uint d = 0; d < n; ++d)
    if (queues[d]) clReleaseCommandQueue(queues[d]);
  for (cl_uint c = 0; c < context_count; ++c) clReleaseContext(contexts[c]);
  double release_seconds = now() - release_start;
  printf("{\"platform\": \"%s\", \"devices\": %u, \"context\": \"%s\", \"strategy\": \"%s\", \"count\": %ld, "
         "\"size_bytes\": %zu, \"loop_seconds\": %.6f, \"release_seconds\": %.6f, \"process_seconds\": %.6f, "
         "\"allocations_per_second\": %.1f, \"rss_per_buffer_bytes\": %.1f}\n",
         platform_name, n, context_mode, strategy, count, size, loop_seconds, release_seconds, now() - start,
         count / loop_seconds, (double)(rss_after - rss_before) / count);
  free(buffers);
  free(queues);
  free(contexts);
  free(devices);
  free(platforms);
  return 0;
}
