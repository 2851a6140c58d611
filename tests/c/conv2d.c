/* conv2d: direct convolution, NCHW, valid padding, with a bias */
#ifndef BATCH
# define BATCH 8
# define CHANNELS 64
# define FILTERS 64
# define HEIGHT 58
# define WIDTH 58
# define KSIZE 3
#endif
#define OH (HEIGHT - KSIZE + 1)
#define OW (WIDTH - KSIZE + 1)

void conv2d(float unused, double input[BATCH][CHANNELS][HEIGHT][WIDTH],
            double weight[FILTERS][CHANNELS][KSIZE][KSIZE], double bias[FILTERS],
            double output[BATCH][FILTERS][OH][OW])
{
#pragma scop
  for (int n = 0; n < BATCH; n++)
    for (int f = 0; f < FILTERS; f++)
      for (int y = 0; y < OH; y++)
        for (int x = 0; x < OW; x++) {
          double acc = bias[f];
          for (int c = 0; c < CHANNELS; c++)
            for (int ky = 0; ky < KSIZE; ky++)
              for (int kx = 0; kx < KSIZE; kx++)
                acc += weight[f][c][ky][kx] * input[n][c][y + ky][x + kx];
          output[n][f][y][x] = acc;
        }
#pragma endscop
}
