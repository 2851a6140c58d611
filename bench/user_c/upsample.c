/* Nearest-neighbour 2x upsampling of a float image. */
void upsample(int h, int w, const float *in, float *out)
{
  for (int y = 0; y < 2 * h; y++)
    for (int x = 0; x < 2 * w; x++)
      out[y * 2 * w + x] = in[(y / 2) * w + x / 2];
}
