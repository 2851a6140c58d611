/* blur: two-stage 3x3 box blur */
#ifndef HEIGHT
# define HEIGHT 6000
# define WIDTH 8000
#endif

void blur(double input[HEIGHT][WIDTH], double bx[HEIGHT][WIDTH], double by[HEIGHT][WIDTH])
{
#pragma scop
  for (int y = 0; y < HEIGHT; y++)
    for (int x = 1; x < WIDTH - 1; x++)
      bx[y][x] = (input[y][x - 1] + input[y][x] + input[y][x + 1]) / 3.0;
  for (int y = 1; y < HEIGHT - 1; y++)
    for (int x = 1; x < WIDTH - 1; x++)
      by[y][x] = (bx[y - 1][x] + bx[y][x] + bx[y + 1][x]) / 3.0;
#pragma endscop
}
