/* sim/material.c — stable neo-Hookean (physskin.md §2) and the 9×9 PSD projection. */
#include <math.h>
#include <string.h>

#include "base/mat3.h"
#include "base/neohookean.h"
#include "sim/material.h"

void sim_lame(const SimMaterial *m, double *mu, double *lam_psi) {
    base_lame(m->E, m->nu, true, mu, lam_psi);
}

/* Levi-Civita ε_abc for indices in {0, 1, 2} */
static int eps3(int a, int b, int c) {
    if (a == b || b == c || a == c) return 0;
    return ((a + 1) % 3 == b) ? 1 : -1;
}

double sim_snh(const double F[9], double mu, double lam, double P[9], double H[81]) {
    double C[9]; /* cof F: C_ij = ½ ε_imn ε_jpq F_mp F_nq */
    C[0] = F[4] * F[8] - F[5] * F[7], C[1] = F[5] * F[6] - F[3] * F[8], C[2] = F[3] * F[7] - F[4] * F[6];
    C[3] = F[2] * F[7] - F[1] * F[8], C[4] = F[0] * F[8] - F[2] * F[6], C[5] = F[1] * F[6] - F[0] * F[7];
    C[6] = F[1] * F[5] - F[2] * F[4], C[7] = F[2] * F[3] - F[0] * F[5], C[8] = F[0] * F[4] - F[1] * F[3];
    double J = F[0] * C[0] + F[1] * C[1] + F[2] * C[2];
    double trc = 0;
    for (int a = 0; a < 9; a++) trc += F[a] * F[a];
    double s = lam * (J - 1) - mu;
    if (P)
        for (int a = 0; a < 9; a++) P[a] = mu * F[a] + s * C[a];
    if (H) {
        for (int a = 0; a < 9; a++)
            for (int b = 0; b < 9; b++) H[9 * a + b] = (a == b ? mu : 0) + lam * C[a] * C[b];
        /* s · ε_ikn ε_jlq F_nq: nonzero only for i ≠ k and j ≠ l, where n and q are the third
         * index of each pair */
        for (int i = 0; i < 3; i++)
            for (int k = 0; k < 3; k++) {
                if (i == k) continue;
                int n = 3 - i - k;
                for (int j = 0; j < 3; j++)
                    for (int l = 0; l < 3; l++) {
                        if (j == l) continue;
                        int q = 3 - j - l;
                        H[9 * (3 * i + j) + 3 * k + l] += s * eps3(i, k, n) * eps3(j, l, q) * F[3 * n + q];
                    }
            }
    }
    return base_neohookean_psi(trc, J, mu, lam);
}

void sim_jacobi_eigen(int n, double *A, double *lam, double *Q) {
    if (Q)
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++) Q[n * i + j] = i == j;
    for (int sweep = 0; sweep < 50; sweep++) {
        double off = 0, diag = 0;
        for (int i = 0; i < n; i++) {
            diag += A[n * i + i] * A[n * i + i];
            for (int j = i + 1; j < n; j++) off += A[n * i + j] * A[n * i + j];
        }
        if (off <= 1e-30 * diag || off == 0) break;
        for (int p = 0; p < n; p++)
            for (int q = p + 1; q < n; q++) {
                double apq = A[n * p + q];
                if (fabs(apq) < 1e-300) continue;
                /* the rotation that zeroes A_pq (Golub & Van Loan, Alg. 8.5.1) */
                double tau = (A[n * q + q] - A[n * p + p]) / (2 * apq);
                double t = (tau >= 0 ? 1 : -1) / (fabs(tau) + sqrt(1 + tau * tau));
                double c = 1 / sqrt(1 + t * t), sn = t * c;
                for (int k = 0; k < n; k++) { /* columns p, q */
                    double akp = A[n * k + p], akq = A[n * k + q];
                    A[n * k + p] = c * akp - sn * akq, A[n * k + q] = sn * akp + c * akq;
                }
                for (int k = 0; k < n; k++) { /* rows p, q */
                    double apk = A[n * p + k], aqk = A[n * q + k];
                    A[n * p + k] = c * apk - sn * aqk, A[n * q + k] = sn * apk + c * aqk;
                }
                if (Q)
                    for (int k = 0; k < n; k++) {
                        double qkp = Q[n * k + p], qkq = Q[n * k + q];
                        Q[n * k + p] = c * qkp - sn * qkq, Q[n * k + q] = sn * qkp + c * qkq;
                    }
            }
    }
    for (int i = 0; i < n; i++) lam[i] = A[n * i + i];
}

static int chol9_ok(const double *H, double shift) {
    double L[81];
    for (int i = 0; i < 9; i++)
        for (int j = 0; j <= i; j++) {
            double s = H[9 * i + j] + (i == j ? shift : 0);
            for (int k = 0; k < j; k++) s -= L[9 * i + k] * L[9 * j + k];
            if (i == j) {
                if (!(s > 0)) return 0;
                L[9 * i + i] = sqrt(s);
            } else
                L[9 * i + j] = s / L[9 * j + j];
        }
    return 1;
}

int sim_psd_project9(double H[81]) {
    double tr = 0;
    for (int i = 0; i < 9; i++) tr += H[10 * i];
    if (tr > 0 && chol9_ok(H, 1e-10 * tr / 9)) return 0;
    double A[81], lam[9], Q[81];
    for (int i = 0; i < 9; i++) /* symmetrize: roundoff in the assembled H is not the model's */
        for (int j = 0; j < 9; j++) A[9 * i + j] = 0.5 * (H[9 * i + j] + H[9 * j + i]);
    sim_jacobi_eigen(9, A, lam, Q);
    for (int k = 0; k < 9; k++) lam[k] = lam[k] > 0 ? lam[k] : 0;
    for (int i = 0; i < 9; i++)
        for (int j = i; j < 9; j++) {
            double s = 0;
            for (int k = 0; k < 9; k++) s += Q[9 * i + k] * lam[k] * Q[9 * j + k];
            H[9 * i + j] = H[9 * j + i] = s;
        }
    return 1;
}

void sim_svd3_signed(const double F[9], double U[9], double sig[3], double V[9]) {
    double A[9], lam[3], Q[9];
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) {
            A[3 * i + j] = 0;
            for (int k = 0; k < 3; k++) A[3 * i + j] += F[3 * k + i] * F[3 * k + j];
        }
    sim_jacobi_eigen(3, A, lam, Q);
    int ord[3] = {0, 1, 2};
    for (int a = 0; a < 3; a++)
        for (int b = a + 1; b < 3; b++)
            if (lam[ord[b]] > lam[ord[a]]) {
                int t = ord[a];
                ord[a] = ord[b], ord[b] = t;
            }
    for (int i = 0; i < 3; i++)
        for (int c = 0; c < 3; c++) V[3 * i + c] = Q[3 * i + ord[c]];
    /* V a rotation */
    if (base_mat3_det(V) < 0)
        for (int i = 0; i < 3; i++) V[3 * i + 2] = -V[3 * i + 2];
    /* u_c = F v_c / |F v_c| for the two largest; u₂ = u₀ × u₁ makes U a rotation, and σ₂ = u₂ᵀ F v₂
     * then carries the sign of det F */
    double FV[9];
    for (int i = 0; i < 3; i++)
        for (int c = 0; c < 3; c++) {
            FV[3 * i + c] = 0;
            for (int k = 0; k < 3; k++) FV[3 * i + c] += F[3 * i + k] * V[3 * k + c];
        }
    double n0 = sqrt(FV[0] * FV[0] + FV[3] * FV[3] + FV[6] * FV[6]);
    double u0[3], u1[3], u2[3];
    if (n0 > 1e-300)
        for (int i = 0; i < 3; i++) u0[i] = FV[3 * i] / n0;
    else
        u0[0] = 1, u0[1] = 0, u0[2] = 0;
    double t[3] = {FV[1], FV[4], FV[7]}, d = t[0] * u0[0] + t[1] * u0[1] + t[2] * u0[2];
    for (int i = 0; i < 3; i++) t[i] -= d * u0[i]; /* Gram-Schmidt guards a nearly rank-1 F */
    double n1 = sqrt(t[0] * t[0] + t[1] * t[1] + t[2] * t[2]);
    if (n1 > 1e-12 * (n0 > 0 ? n0 : 1)) {
        for (int i = 0; i < 3; i++) u1[i] = t[i] / n1;
    } else { /* any unit vector orthogonal to u0 */
        double e[3] = {fabs(u0[0]) < 0.9 ? 1 : 0, fabs(u0[0]) < 0.9 ? 0 : 1, 0};
        double dd = e[0] * u0[0] + e[1] * u0[1];
        for (int i = 0; i < 3; i++) e[i] -= dd * u0[i];
        double ne = sqrt(e[0] * e[0] + e[1] * e[1] + e[2] * e[2]);
        for (int i = 0; i < 3; i++) u1[i] = e[i] / ne;
    }
    base_vec3_cross(u0, u1, u2);
    for (int i = 0; i < 3; i++) U[3 * i] = u0[i], U[3 * i + 1] = u1[i], U[3 * i + 2] = u2[i];
    for (int c = 0; c < 3; c++) {
        sig[c] = 0;
        for (int i = 0; i < 3; i++) sig[c] += U[3 * i + c] * FV[3 * i + c];
    }
}

int sim_snh_hessian_psd(const double F[9], double mu, double lam, double H[81]) {
    double U[9], s[3], V[9];
    sim_svd3_signed(F, U, s, V);
    double J = s[0] * s[1] * s[2], sc = lam * (J - 1) - mu;
    double lamk[9], Dm[9][9]; /* eigenvalues and the D matrices (row-major 3×3) in the SVD frame */
    memset(Dm, 0, sizeof Dm);
    int k = 0;
    const double r = 1 / sqrt(2.0);
    static const int PI[3] = {1, 0, 0}, PJ[3] = {2, 2, 1}; /* pair (i, j) with third index l */
    for (int l = 0; l < 3; l++) {
        int i = PI[l], j = PJ[l];
        lamk[k] = mu + sc * s[l], Dm[k][3 * i + j] = r, Dm[k][3 * j + i] = -r, k++; /* twist */
        lamk[k] = mu - sc * s[l], Dm[k][3 * i + j] = r, Dm[k][3 * j + i] = r, k++;  /* flip */
    }
    double g[3] = {s[1] * s[2], s[0] * s[2], s[0] * s[1]}, A[9], a3[3], Q[9];
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) A[3 * i + j] = (i == j ? mu : sc * s[3 - i - j]) + lam * g[i] * g[j];
    sim_jacobi_eigen(3, A, a3, Q);
    for (int e = 0; e < 3; e++, k++) {
        lamk[k] = a3[e];
        for (int i = 0; i < 3; i++) Dm[k][4 * i] = Q[3 * i + e];
    }
    int clamped = 0;
    memset(H, 0, sizeof(double) * 81);
    for (k = 0; k < 9; k++) {
        if (lamk[k] <= 0) {
            clamped++;
            continue;
        }
        /* q = vec(U D Vᵀ) */
        double UD[9], q[9];
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 3; j++) {
                UD[3 * i + j] = 0;
                for (int m = 0; m < 3; m++) UD[3 * i + j] += U[3 * i + m] * Dm[k][3 * m + j];
            }
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 3; j++) {
                q[3 * i + j] = 0;
                for (int m = 0; m < 3; m++) q[3 * i + j] += UD[3 * i + m] * V[3 * j + m];
            }
        for (int a = 0; a < 9; a++)
            for (int b = a; b < 9; b++) H[9 * a + b] += lamk[k] * q[a] * q[b];
    }
    for (int a = 0; a < 9; a++)
        for (int b = 0; b < a; b++) H[9 * a + b] = H[9 * b + a];
    return clamped;
}
