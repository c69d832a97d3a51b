/* A test fixture: a kernel with no launch block. */
extern "C" __global__ void nothing(float* y) {}
