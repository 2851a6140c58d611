/* One level of the Haar transform along the rows: averages of pairs to lo, differences to hi. */
void haar(int h, int w, const float *x, float *lo, float *hi)
{
  for (int y = 0; y < h; y++)
    for (int i = 0; i < w; i++) {
      if (i % 2 == 0)
        lo[y * (w / 2) + i / 2] = 0.5f * (x[y * w + i] + x[y * w + i + 1]);
      else
        hi[y * (w / 2) + i / 2] = 0.5f * (x[y * w + i - 1] - x[y * w + i]);
    }
}
