/* Where an allocation loop's time goes, call by call, from outside: preloaded, it
 * times every clCreateBuffer (inside the call) and the gap before the next one (the
 * program's own work between calls), and at exit appends one JSON line per process
 * that made two or more to $CALL_GAPS_OUT (a file, by its absolute path: clmulti's
 * run child starts in a folder of its own). A gap over 5 us is a pause (a sample, a
 * guard's reading); the calls are binned by how many came since the last pause, so
 * a pause's aftermath (cold caches after a sample) shows as slower calls right after
 * it, and a per-call cost as slower calls everywhere (the first call is in no bin). Two programs doing the same
 * loop (bench/plain_loop.c and `clmulti run`, or `clmulti bench`'s two arms) compare
 * line by line: bench/call-gaps.py summarizes the lines by program.
 *
 *   cc -O2 -shared -fPIC -o call_gaps.so bench/call_gaps.c -ldl
 *   CALL_GAPS_OUT=$PWD/gaps.jsonl LD_PRELOAD=$PWD/call_gaps.so bench/run-vs-loop.sh
 *
 * With CALL_GAPS_TIMELINE set, every process that loads it appends a line of when it
 * started (this library's constructor; a fork keeps its parent's, and the calls its
 * parent had made), made its first and last call, and reached its exit (the
 * destructor; the kernel's teardown after it is not seen), CLOCK_MONOTONIC ns, with
 * its pid and parent's: bench/call-gaps.py --timeline puts `clmulti run`'s process
 * chain (watcher, worker and run child) beside the plain loop's one process.
 *
 * It costs each call two clock reads (~40 ns), both programs alike. It keeps one
 * thread's calls: a loop on one thread, as both programs' are. */
#define _GNU_SOURCE
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_CALLS (1u << 22)
#define PAUSE_NS 5000
#define BINS 7

typedef cl_mem (*create_fn)(cl_context, cl_mem_flags, size_t, void *, cl_int *);
static create_fn real_create;
static uint64_t *starts, *ends;
static uint32_t calls;
static uint64_t started;

static uint64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

cl_mem clCreateBuffer(cl_context context, cl_mem_flags flags, size_t size, void *host, cl_int *status) {
  if (!real_create) {
    real_create = (create_fn)dlsym(RTLD_NEXT, "clCreateBuffer");
    starts = calloc(MAX_CALLS, sizeof *starts);
    ends = calloc(MAX_CALLS, sizeof *ends);
  }
  uint64_t start = now_ns();
  cl_mem mem = real_create(context, flags, size, host, status);
  uint64_t end = now_ns();
  if (calls < MAX_CALLS && starts && ends) {
    starts[calls] = start;
    ends[calls] = end;
    ++calls;
  }
  return mem;
}

__attribute__((constructor)) static void start(void) { started = now_ns(); }

static void command_line(char *cmd, size_t len) {
  int fd = open("/proc/self/cmdline", O_RDONLY);
  cmd[0] = '\0';
  if (fd < 0) return;
  ssize_t n = read(fd, cmd, len - 1);
  close(fd);
  if (n < 0) n = 0;
  cmd[n] = '\0';
  for (ssize_t i = 0; i < n; ++i)
    if (cmd[i] == '\0' || cmd[i] == '"' || cmd[i] == '\\' || (unsigned char)cmd[i] < 32) cmd[i] = ' ';
}

/* One line of this process's times, for bench/call-gaps.py --timeline. */
static void timeline(const char *path) {
  char cmd[256];
  command_line(cmd, sizeof cmd);
  FILE *out = fopen(path, "a");
  if (!out) return;
  fprintf(out, "{\"timeline\":1,\"pid\":%d,\"ppid\":%d,\"cmd\":\"%s\",\"start_ns\":%llu,\"exit_ns\":%llu,\"calls\":%u,\"first_call_ns\":%llu,\"last_call_ns\":%llu}\n",
          (int)getpid(), (int)getppid(), cmd, (unsigned long long)started, (unsigned long long)now_ns(), calls,
          (unsigned long long)(calls ? starts[0] : 0), (unsigned long long)(calls ? ends[calls - 1] : 0));
  fclose(out);
}

static int by_value(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

/* The bin of the call `since` calls after the last pause: 0, 1, 2-3, 4-7, 8-15, 16-63, 64+. */
static int bin_of(uint32_t since) {
  static const uint32_t upper[BINS - 1] = {0, 1, 3, 7, 15, 63};
  for (int b = 0; b < BINS - 1; ++b)
    if (since <= upper[b]) return b;
  return BINS - 1;
}

__attribute__((destructor)) static void report(void) {
  const char *path = getenv("CALL_GAPS_OUT");
  if (path && path[0] != '/') {
    if (calls > 1 || getenv("CALL_GAPS_TIMELINE"))
      fprintf(stderr, "call_gaps: CALL_GAPS_OUT must be an absolute path, not '%s': nothing written\n", path);
    return;
  }
  if (path && getenv("CALL_GAPS_TIMELINE")) timeline(path);
  if (!path || calls < 2) return;
  uint64_t *inside = malloc(calls * sizeof *inside), *between = malloc(calls * sizeof *between);
  if (!inside || !between) return;
  double bin_inside[BINS] = {0}, bin_gap[BINS] = {0};
  uint64_t bin_count[BINS] = {0}, pauses = 0, pause_ns = 0, small_gaps = 0, gap_ns = 0, inside_ns = 0;
  uint32_t since = 0, n_between = 0;
  for (uint32_t i = 0; i < calls; ++i) {
    inside[i] = ends[i] - starts[i];
    inside_ns += inside[i];
    if (i > 0) {
      uint64_t gap = starts[i] - ends[i - 1];
      if (gap > PAUSE_NS) {
        ++pauses;
        pause_ns += gap;
        since = 0;
      } else {
        ++since;
        ++small_gaps;
        gap_ns += gap;
        between[n_between++] = gap;
      }
      int b = bin_of(since);
      bin_inside[b] += inside[i];
      bin_gap[b] += gap > PAUSE_NS ? 0 : gap;
      ++bin_count[b];
    }
  }
  qsort(inside, calls, sizeof *inside, by_value);
  qsort(between, n_between, sizeof *between, by_value);
  char cmd[256];
  command_line(cmd, sizeof cmd);
  FILE *out = fopen(path, "a");
  if (!out) return;
  fprintf(out,
          "{\"cmd\":\"%s\",\"calls\":%u,\"window_ms\":%.3f,\"inside_ms\":%.3f,\"inside_median_ns\":%llu,"
          "\"between_ms\":%.3f,\"between_median_ns\":%llu,\"pauses\":%llu,\"pause_ms\":%.3f,\"bins\":[",
          cmd, calls, (ends[calls - 1] - starts[0]) / 1e6, inside_ns / 1e6,
          (unsigned long long)inside[calls / 2], gap_ns / 1e6,
          (unsigned long long)(n_between ? between[n_between / 2] : 0), (unsigned long long)pauses, pause_ns / 1e6);
  for (int b = 0; b < BINS; ++b)
    fprintf(out, "%s[%llu,%.1f,%.1f]", b ? "," : "", (unsigned long long)bin_count[b],
            bin_count[b] ? bin_inside[b] / bin_count[b] : 0.0, bin_count[b] ? bin_gap[b] / bin_count[b] : 0.0);
  fprintf(out, "]}\n");
  fclose(out);
  (void)small_gaps;
}
