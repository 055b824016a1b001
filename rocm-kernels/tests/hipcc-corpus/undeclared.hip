// expect: error
// A kernel no compiler takes (an undeclared name): both must refuse it, or the comparison
// would pass a test whose compilers accept everything.
#include <hip/hip_runtime.h>
__global__ void broken(float* x) { x[0] = not_declared_anywhere; }
