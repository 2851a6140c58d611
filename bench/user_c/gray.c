#include <stdint.h>

/* Interleaved RGB to luma in fixed point (BT.601 weights scaled by 256). */
void rgb_to_gray(int npix, const uint8_t *rgb, uint8_t *gray)
{
  for (int i = 0; i < npix; i++) {
    unsigned r = rgb[3 * i], g = rgb[3 * i + 1], b = rgb[3 * i + 2];
    gray[i] = (uint8_t)((77 * r + 150 * g + 29 * b + 128) >> 8);
  }
}
