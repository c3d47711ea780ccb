/* models/gs4d/silhouette.c — the silhouette Chamfer term (see silhouette.h). */
#include "silhouette.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"

void gs4d_mask_make(const float *rgba, int width, int height, Gs4dMask *m) {
    memset(m, 0, sizeof *m);
    m->width = width, m->height = height;
    size_t np = (size_t)width * (size_t)height;
    m->in = base_malloc(np);
    for (size_t p = 0; p < np; p++) m->in[p] = rgba[4 * p + 3] > 0.5f;
    int nm = 0, nc = 0;
    for (int y = 0; y < height; y++)
        for (int x = 0; x < width; x++) {
            if (!m->in[(size_t)y * width + x]) continue;
            nm++;
            nc += x == 0 || y == 0 || x == width - 1 || y == height - 1 || !m->in[(size_t)y * width + x - 1] ||
                  !m->in[(size_t)y * width + x + 1] || !m->in[(size_t)(y - 1) * width + x] || !m->in[(size_t)(y + 1) * width + x];
        }
    m->n_mask = nm, m->n_contour = nc;
    m->mask = base_malloc(sizeof(float) * 2 * (size_t)(nm > 0 ? nm : 1));
    m->contour = base_malloc(sizeof(float) * 2 * (size_t)(nc > 0 ? nc : 1));
    nm = nc = 0;
    for (int y = 0; y < height; y++)
        for (int x = 0; x < width; x++) {
            if (!m->in[(size_t)y * width + x]) continue;
            m->mask[2 * nm] = x + 0.5f, m->mask[2 * nm++ + 1] = y + 0.5f;
            if (x == 0 || y == 0 || x == width - 1 || y == height - 1 || !m->in[(size_t)y * width + x - 1] ||
                !m->in[(size_t)y * width + x + 1] || !m->in[(size_t)(y - 1) * width + x] || !m->in[(size_t)(y + 1) * width + x])
                m->contour[2 * nc] = x + 0.5f, m->contour[2 * nc++ + 1] = y + 0.5f;
        }
}

void gs4d_mask_free(Gs4dMask *m) {
    free(m->in), free(m->mask), free(m->contour);
    memset(m, 0, sizeof *m);
}

/* the index of the point of q (nq × 2) nearest (x, y) */
static int nearest(const float *q, int nq, double x, double y) {
    int best = 0;
    double bd = INFINITY;
    for (int k = 0; k < nq; k++) {
        double dx = q[2 * k] - x, dy = q[2 * k + 1] - y, d = dx * dx + dy * dy;
        if (d < bd) bd = d, best = k;
    }
    return best;
}

Tensor *gs4d_silhouette_loss(Tensor *means, const DsCamera *cam, const Gs4dMask *mask) {
    int64_t n = means->shape[0];
    TensorDType dt = means->dtype;
    TensorDevice dev = tensor_device(means);
    /* the projection as tensor ops: p = R μ + t, π = (fx p_x / p_z + cx, fy p_y / p_z + cy) */
    double Rt[9], cxy[2] = {cam->cx, cam->cy}, fxy[2] = {cam->fx, cam->fy};
    for (int r = 0; r < 3; r++)
        for (int c = 0; c < 3; c++) Rt[3 * c + r] = cam->R[3 * r + c];
    Tensor *tR = tensor_to(tensor_from_f64(2, (int64_t[]){3, 3}, dt, Rt), dev);
    Tensor *tt = tensor_to(tensor_from_f64(1, (int64_t[]){3}, dt, cam->t), dev);
    Tensor *p = tensor_add(tensor_matmul(means, tR), tt);
    Tensor *xy = tensor_div(tensor_narrow(p, 1, 0, 2), tensor_narrow(p, 1, 2, 1));
    Tensor *c = tensor_to(tensor_from_f64(1, (int64_t[]){2}, dt, cxy), dev);
    Tensor *uv = tensor_add(tensor_mul(xy, tensor_to(tensor_from_f64(1, (int64_t[]){2}, dt, fxy), dev)), c);
    /* the argmins on the host, from a copy */
    double *h = base_malloc(sizeof(double) * 3 * (size_t)(n > 0 ? n : 1));
    double *z = h + 2 * n;
    {
        bool prev = ag_no_grad_begin();
        tensor_to_f64_array(tensor_contiguous(tensor_to(tensor_detach(uv), TENSOR_CPU)), h);
        Tensor *pz = tensor_contiguous(tensor_to(tensor_narrow(tensor_detach(p), 1, 2, 1), TENSOR_CPU));
        tensor_to_f64_array(pz, z);
        ag_no_grad_end(prev);
    }
    int64_t nfront = 0;
    float *front = base_malloc(sizeof(float) * 2 * (size_t)(n > 0 ? n : 1));
    int64_t *front_id = base_malloc(sizeof(int64_t) * (size_t)(n > 0 ? n : 1));
    for (int64_t i = 0; i < n; i++)
        if (z[i] > 0 && isfinite(h[2 * i]) && isfinite(h[2 * i + 1]))
            front[2 * nfront] = (float)h[2 * i], front[2 * nfront + 1] = (float)h[2 * i + 1], front_id[nfront++] = i;
    double S = mask->width > mask->height ? mask->width : mask->height;
    Tensor *loss = NULL;
    if (nfront > 0 && mask->n_mask > 0) {
        /* contour → nearest center */
        int nc = mask->n_contour;
        int64_t *ia = base_malloc(sizeof(int64_t) * (size_t)nc);
        double *qa = base_malloc(sizeof(double) * 2 * (size_t)nc);
        for (int k = 0; k < nc; k++) {
            ia[k] = front_id[nearest(front, (int)nfront, mask->contour[2 * k], mask->contour[2 * k + 1])];
            qa[2 * k] = mask->contour[2 * k], qa[2 * k + 1] = mask->contour[2 * k + 1];
        }
        Tensor *ta = tensor_to(tensor_from_data(1, (int64_t[]){nc}, TENSOR_I64, ia), dev);
        Tensor *da = tensor_sub(tensor_index_select(uv, 0, ta), tensor_to(tensor_from_f64(2, (int64_t[]){nc, 2}, dt, qa), dev));
        loss = tensor_mul_scalar(tensor_sum_all(tensor_mul(da, da)), 1.0 / ((double)nc * S * S));
        free(qa);
        /* centers outside the mask → nearest mask pixel */
        int64_t no = 0;
        int64_t *ib = base_malloc(sizeof(int64_t) * (size_t)nfront);
        double *qb = base_malloc(sizeof(double) * 2 * (size_t)nfront);
        for (int64_t k = 0; k < nfront; k++) {
            double x = front[2 * k], y = front[2 * k + 1];
            int px = (int)floor(x), py = (int)floor(y);
            if (px >= 0 && py >= 0 && px < mask->width && py < mask->height && mask->in[(size_t)py * mask->width + px]) continue;
            int j = nearest(mask->mask, mask->n_mask, x, y);
            ib[no] = front_id[k], qb[2 * no] = mask->mask[2 * j], qb[2 * no + 1] = mask->mask[2 * j + 1], no++;
        }
        if (no > 0) {
            Tensor *tb = tensor_to(tensor_from_data(1, (int64_t[]){no}, TENSOR_I64, ib), dev);
            Tensor *db = tensor_sub(tensor_index_select(uv, 0, tb), tensor_to(tensor_from_f64(2, (int64_t[]){no, 2}, dt, qb), dev));
            loss = tensor_add(loss, tensor_mul_scalar(tensor_sum_all(tensor_mul(db, db)), 1.0 / ((double)n * S * S)));
        }
        free(ia), free(ib), free(qb);
    }
    free(h), free(front), free(front_id);
    if (!loss) loss = tensor_mul_scalar(tensor_sum_all(means), 0.0);
    return loss;
}
