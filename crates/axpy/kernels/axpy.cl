// Kernels of clmulti's dAxpy runner (crates/axpy). Float data throughout.

// The seed's kernel, unchanged (OpenCLKernels.cl): y[yOffset + i*incY] += alpha *
// x[xOffset + i*incX] for i < elements, with 2D group indexing. `int elements` and
// int index arithmetic cap it at 2^31 - 1 elements.
__kernel void dAxpy(int elements, float alpha, __global float *xData, int xOffset, int incX, __global float *yData, int yOffset, int incY) {
  long idx;
  int threadId, blockIdx, blockIdy, blockDim, gridDim;

  threadId = get_local_id(0); blockIdx = get_group_id(0); blockIdy = get_group_id(1); blockDim = get_local_size(0); gridDim = get_num_groups(0);
  idx = (blockIdx + blockIdy * gridDim) * blockDim + threadId;
  if (idx < elements) {
    yData[yOffset + idx * incY] += alpha * xData[xOffset + idx * incX];
  }
}

// Contiguous fast path (incX = incY = 1, offsets multiples of 4): float4 loads and
// stores, `per_item` float4s per work-item strided by the global size so that
// neighbouring work-items touch neighbouring addresses. 64-bit counts: no 2^31 cap.
// Work-item 0 also does the n % 4 tail.
__kernel void axpy_fast(ulong n, float alpha,
                        __global const float4 *restrict x, ulong x_offset4,
                        __global float4 *restrict y, ulong y_offset4, uint per_item) {
  const ulong n4 = n / 4;
  const ulong stride = get_global_size(0);
  ulong i = get_global_id(0);
  x += x_offset4;
  y += y_offset4;
  for (uint k = 0; k < per_item && i < n4; ++k, i += stride) {
    y[i] = alpha * x[i] + y[i];
  }
  if (get_global_id(0) == 0) {
    __global const float *xs = (__global const float *)x;
    __global float *ys = (__global float *)y;
    for (ulong t = n4 * 4; t < n; ++t) {
      ys[t] = alpha * xs[t] + ys[t];
    }
  }
}

// BabelStream's copy, float4-wide: the device's achievable bandwidth reference.
__kernel void copy_float4(__global const float4 *restrict a, __global float4 *restrict c, ulong n4) {
  const ulong i = get_global_id(0);
  if (i < n4) {
    c[i] = a[i];
  }
}
