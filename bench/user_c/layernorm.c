#include <math.h>

/* Layer normalization of each row: mean, variance, then scale and shift. */
void layernorm(int rows, int d, const float *x, const float *gamma, const float *beta, float *y)
{
  const float eps = 1e-5f;
  for (int r = 0; r < rows; r++) {
    const float *xr = x + r * d;
    float *yr = y + r * d;
    float mean = 0.0f;
    for (int j = 0; j < d; j++)
      mean += xr[j];
    mean /= d;
    float var = 0.0f;
    for (int j = 0; j < d; j++) {
      float c = xr[j] - mean;
      var += c * c;
    }
    var /= d;
    float inv = 1.0f / sqrtf(var + eps);
    for (int j = 0; j < d; j++)
      yr[j] = (xr[j] - mean) * inv * gamma[j] + beta[j];
  }
}
