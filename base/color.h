/* base/color.h — HSV to RGB, header only: the hue palettes of bones and skinning weights (the
 * datasets' textures and colorings, the Gaussian fits' vertex colors) each used to carry a copy. */
#ifndef ANIMA_BASE_COLOR_H
#define ANIMA_BASE_COLOR_H

#include <math.h>

/* rgb of hue h (turns: only h − ⌊h⌋ matters), saturation s and value v, each in [0, 1] */
static inline void base_hsv_rgb(double h, double s, double v, double rgb[3]) {
    h = 6 * (h - floor(h));
    int i = (int)h;
    double f = h - i, p = v * (1 - s), q = v * (1 - s * f), t = v * (1 - s * (1 - f));
    const double tab[6][3] = {{v, t, p}, {q, v, p}, {p, v, t}, {p, q, v}, {t, p, v}, {v, p, q}};
    for (int k = 0; k < 3; k++) rgb[k] = tab[i % 6][k];
}

/* base_hsv_rgb rounded to float */
static inline void base_hsv_rgbf(double h, double s, double v, float rgb[3]) {
    double c[3];
    base_hsv_rgb(h, s, v, c);
    for (int k = 0; k < 3; k++) rgb[k] = (float)c[k];
}

#endif
