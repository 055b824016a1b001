// expect: compiles
// printf and assert without <cstdio>/<cassert>.
#include <hip/hip_runtime.h>
__global__ void report(const int* x, int n) {
    assert(n > 0);
    if (threadIdx.x == 0) printf("first %d of %d, %f\n", x[0], n, 1.5);
}
