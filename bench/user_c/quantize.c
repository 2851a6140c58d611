#include <math.h>
#include <stdint.h>

/* Symmetric int8 quantization: scale, saturate, round to nearest. */
void quantize(int n, const float *x, float scale, int8_t *q)
{
  for (int i = 0; i < n; i++) {
    float v = x[i] * scale;
    if (v > 127.0f)
      v = 127.0f;
    else if (v < -128.0f)
      v = -128.0f;
    q[i] = (int8_t)lrintf(v);
  }
}
