#include <stddef.h>
static inline void saxpy2d(const size_t n, const size_t m, const float a, const float *restrict X, float *restrict Y)
{
  for (size_t i = 0; i < n; ++i)
    for (size_t j = 0; j < m; ++j)
      Y[i * m + j] = fmaf(a, X[i * m + j], Y[i * m + j]);
}
