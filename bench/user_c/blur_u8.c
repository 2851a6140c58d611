#include <stdint.h>
#include <stdlib.h>

/* 3x3 box blur of an 8-bit image, and how far each pixel moved. */
void blur_u8(int h, int w, const uint8_t *src, uint8_t *dst, uint8_t *delta)
{
  for (int y = 1; y < h - 1; y++)
    for (int x = 1; x < w - 1; x++) {
      int sum = 0;
      for (int dy = -1; dy <= 1; dy++)
        for (int dx = -1; dx <= 1; dx++)
          sum += src[(y + dy) * w + (x + dx)];
      int at = y * w + x;
      dst[at] = (uint8_t)(sum / 9);
      delta[at] = (uint8_t)abs(src[at] - dst[at]);
    }
}
