/* A runtime that aborts mid-run, as an OpenCL layer (OPENCL_LAYERS): it passes the
 * first CLMULTI_ABORT_AFTER calls of clCreateBuffer to the runtime and aborts on the
 * next, saying so on stderr first (a runtime's last words). Every other call goes to
 * the runtime untouched. */
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl_layer.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct _cl_icd_dispatch dispatch;
static const struct _cl_icd_dispatch *runtime;
static long calls;

static cl_mem CL_API_CALL create_buffer(cl_context context, cl_mem_flags flags, size_t size,
                                        void *host, cl_int *error) {
    const char *after = getenv("CLMULTI_ABORT_AFTER");
    if (after && ++calls > atol(after)) {
        fprintf(stderr, "abort_after: clCreateBuffer call %ld: aborting\n", calls);
        abort();
    }
    return runtime->clCreateBuffer(context, flags, size, host, error);
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
    *entries_ret = (cl_uint)count;
    *layer = &dispatch;
    return CL_SUCCESS;
}
