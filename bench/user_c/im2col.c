/* im2col for a 3x3 convolution: each (channel, kernel row, kernel column) gives one row of col, filled in
   order by a running index. */
void im2col(int c, int h, int w, const float *img, float *col)
{
  int row = 0;
  for (int ch = 0; ch < c; ch++)
    for (int kh = 0; kh < 3; kh++)
      for (int kw = 0; kw < 3; kw++) {
        int idx = row * (h - 2) * (w - 2);
        for (int y = 0; y < h - 2; y++)
          for (int x = 0; x < w - 2; x++)
            col[idx++] = img[(ch * h + y + kh) * w + x + kw];
        row++;
      }
}
