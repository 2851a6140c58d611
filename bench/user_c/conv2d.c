#define H 1024
#define W 1024
#define K 5
#define AT(y, x) ((y) * W + (x))

/* A 5x5 filter over a float image; the border is left as it was. */
void conv2d(const float *in, const float *kernel, float *out)
{
  for (int y = K / 2; y < H - K / 2; ++y)
    for (int x = K / 2; x < W - K / 2; ++x) {
      float acc = 0.0f;
      for (int ky = 0; ky < K; ++ky)
        for (int kx = 0; kx < K; ++kx)
          acc += in[AT(y + ky - K / 2, x + kx - K / 2)] * kernel[ky * K + kx];
      out[AT(y, x)] = acc;
    }
}
