/* datasets/render/gif.h — animated GIF (GIF89a) output, so an animation can be opened by any
 * browser or image viewer without a video encoder installed. Colors are quantized to a fixed
 * 6 × 7 × 6 RGB cube (252 colors; green gets the extra level, the eye resolves it best) with 4 × 4
 * ordered (Bayer) dithering, which keeps smooth shading free of bands; pixels are LZW-compressed
 * as the GIF89a specification (§22, Appendix F) describes, and the NETSCAPE2.0 extension makes
 * the animation loop forever. The file goes to a temporary name and is renamed, every write
 * checked (base/h5file.h's policy for every writer). */
#ifndef ANIMA_DATASETS_GIF_H
#define ANIMA_DATASETS_GIF_H

#include <stddef.h>
#include <stdint.h>

/* frames: nframes × h × w × 3 floats in [0, 1] (clamped), row-major, top row first;
 * delay_cs: hundredths of a second per frame. 0, or -1 with err naming the path. */
int ds_gif_write(const char *path, const float *frames, int w, int h, int nframes, int delay_cs, char *err,
                 size_t errlen);

/* The palette index ds_gif_write gives (r, g, b) at pixel (x, y) and the palette's color of an
 * index (rgb in [0, 1]): exposed for tests and for readers that want the quantized image. */
int ds_gif_index(float r, float g, float b, int x, int y);
void ds_gif_palette(int index, float rgb[3]);

#endif
