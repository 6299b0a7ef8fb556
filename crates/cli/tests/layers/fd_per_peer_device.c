/*
 * An OpenCL layer (ocl-icd OPENCL_LAYERS) that models the leading hypothesis for the
 * seed's failure on Intel GPUs: in a context with N devices, every buffer holds one
 * exported handle (a file descriptor) per peer device, N - 1 in all, until it is
 * released. When no descriptor is left (RLIMIT_NOFILE), clCreateBuffer fails with
 * CL_OUT_OF_HOST_MEMORY, as Intel's runtime reports any failed allocation.
 *
 * It stands in for Intel's runtime, which cannot run here, so that clmulti's
 * diagnosis (fds per buffer against RLIMIT_NOFILE) is tested end to end on the real
 * loader, real PoCL devices and a real descriptor limit. Descriptors are /dev/null.
 */
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl_icd.h>
#include <CL/cl_layer.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_PEERS 16

struct held {
  cl_mem mem;
  int fds[MAX_PEERS];
  int count;
};

static struct _cl_icd_dispatch layer_dispatch;
static const struct _cl_icd_dispatch *next;
static struct held *table;
static size_t table_len, table_cap;
static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;

static void close_all(struct held *h) {
  for (int i = 0; i < h->count; i++) close(h->fds[i]);
  h->count = 0;
}

static cl_mem CL_API_CALL layer_create_buffer(cl_context context, cl_mem_flags flags, size_t size,
                                              void *host_ptr, cl_int *errcode_ret) {
  cl_uint devices = 1;
  next->clGetContextInfo(context, CL_CONTEXT_NUM_DEVICES, sizeof devices, &devices, NULL);
  cl_int status = CL_SUCCESS;
  cl_mem mem = next->clCreateBuffer(context, flags, size, host_ptr, &status);
  if (mem == NULL || devices < 2) {
    if (errcode_ret) *errcode_ret = status;
    return mem;
  }
  struct held h = {mem, {0}, 0};
  for (cl_uint peer = 1; peer < devices && h.count < MAX_PEERS; peer++) {
    int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      close_all(&h);
      next->clReleaseMemObject(mem);
      if (errcode_ret) *errcode_ret = CL_OUT_OF_HOST_MEMORY;
      return NULL;
    }
    h.fds[h.count++] = fd;
  }
  pthread_mutex_lock(&table_lock);
  if (table_len == table_cap) {
    size_t cap = table_cap ? table_cap * 2 : 1024;
    struct held *grown = realloc(table, cap * sizeof *grown);
    if (grown == NULL) {
      pthread_mutex_unlock(&table_lock);
      close_all(&h);
      next->clReleaseMemObject(mem);
      if (errcode_ret) *errcode_ret = CL_OUT_OF_HOST_MEMORY;
      return NULL;
    }
    table = grown;
    table_cap = cap;
  }
  table[table_len++] = h;
  pthread_mutex_unlock(&table_lock);
  if (errcode_ret) *errcode_ret = CL_SUCCESS;
  return mem;
}

static cl_int CL_API_CALL layer_release_mem_object(cl_mem mem) {
  pthread_mutex_lock(&table_lock);
  for (size_t i = table_len; i-- > 0;) {
    if (table[i].mem == mem) {
      close_all(&table[i]);
      table[i] = table[--table_len];
      break;
    }
  }
  pthread_mutex_unlock(&table_lock);
  return next->clReleaseMemObject(mem);
}

CL_API_ENTRY cl_int CL_API_CALL clGetLayerInfo(cl_layer_info param_name, size_t param_value_size,
                                               void *param_value, size_t *param_value_size_ret) {
  if (param_name != CL_LAYER_API_VERSION) return CL_INVALID_VALUE;
  cl_layer_api_version version = CL_LAYER_API_VERSION_100;
  if (param_value) {
    if (param_value_size < sizeof version) return CL_INVALID_VALUE;
    memcpy(param_value, &version, sizeof version);
  }
  if (param_value_size_ret) *param_value_size_ret = sizeof version;
  return CL_SUCCESS;
}

CL_API_ENTRY cl_int CL_API_CALL clInitLayer(cl_uint num_entries, const struct _cl_icd_dispatch *target_dispatch,
                                            cl_uint *num_entries_ret,
                                            const struct _cl_icd_dispatch **layer_dispatch_ret) {
  const cl_uint needed = sizeof(layer_dispatch) / sizeof(layer_dispatch.clGetPlatformIDs);
  if (!target_dispatch || !num_entries_ret || !layer_dispatch_ret || num_entries < needed) return CL_INVALID_VALUE;
  next = target_dispatch;
  memcpy(&layer_dispatch, target_dispatch, sizeof layer_dispatch);
  layer_dispatch.clCreateBuffer = layer_create_buffer;
  layer_dispatch.clReleaseMemObject = layer_release_mem_object;
  *layer_dispatch_ret = &layer_dispatch;
  *num_entries_ret = needed;
  return CL_SUCCESS;
}
