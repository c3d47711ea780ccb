// bench/dembones_harness.cpp — runs Electronic Arts' Dem Bones (github.com/electronicarts/dem-bones,
// BSD-3; not part of anima and not committed here) on an anima trajectories HDF5 (positions F x N x 3,
// rest N x 3, optional faces T x 3; `anima skelebones ... --export-traj FILE` writes one), for
// bench/skelebones_dembones.sh. Build it OUTSIDE the repository, beside a Dem Bones checkout and
// Eigen 3.3 (Debian: libeigen3-dev):
//   g++ -O2 -march=x86-64-v3 -fopenmp -std=c++14 -I<eigen> -I<dem-bones>/include \
//       -I/usr/include/hdf5/serial dembones_harness.cpp -o harness -L/usr/lib/x86_64-linux-gnu/hdf5/serial -lhdf5
// usage: harness FILE BONES [ITERS NNZ SMOOTH]; prints
//   "bones B rmse R rmse_check R' time_s T init_s I"
// rmse is Dem Bones' own rmse(); rmse_check recomputes it from the returned weights and transforms
// (the two agree), so the comparison does not rest on either side's bookkeeping. Point clouds (no
// faces) get the 8 nearest rest neighbours as edges (2-gons), which Dem Bones' Laplacian accepts.
#include <hdf5.h>
#include <DemBones/DemBones.h>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
using namespace Dem;
static std::vector<float> rd(hid_t f, const char *name, std::vector<hsize_t> &dims) {
    std::vector<float> out;
    if (H5Lexists(f, name, H5P_DEFAULT) <= 0) return out;
    hid_t d = H5Dopen2(f, name, H5P_DEFAULT), s = H5Dget_space(d);
    int r = H5Sget_simple_extent_ndims(s);
    dims.resize(r);
    H5Sget_simple_extent_dims(s, dims.data(), NULL);
    size_t n = 1;
    for (auto x : dims) n *= x;
    out.resize(n);
    H5Dread(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, out.data());
    H5Sclose(s), H5Dclose(d);
    return out;
}
int main(int argc, char **argv) {
    if (argc < 3) return 2;
    hid_t f = H5Fopen(argv[1], H5F_ACC_RDONLY, H5P_DEFAULT);
    if (f < 0) return 1;
    std::vector<hsize_t> dp, dr, df;
    std::vector<float> P = rd(f, "positions", dp), R = rd(f, "rest", dr), Fc = rd(f, "faces", df);
    H5Fclose(f);
    int F = (int)dp[0], N = (int)dp[1];
    DemBones<double, float> db;
    db.nV = N, db.nF = F, db.nS = 1, db.nB = atoi(argv[2]);
    if (argc > 3) db.nIters = atoi(argv[3]);
    if (argc > 4) db.nnz = atoi(argv[4]);
    if (argc > 5) db.weightsSmooth = atof(argv[5]);
    db.fStart.resize(2); db.fStart << 0, F;
    db.subjectID = Eigen::VectorXi::Zero(F);
    db.u.resize(3, N);
    for (int i = 0; i < N; i++) for (int c = 0; c < 3; c++) db.u(c, i) = R.empty() ? P[i * 3 + c] : R[i * 3 + c];
    db.v.resize(3 * F, N);
    for (int t = 0; t < F; t++) for (int i = 0; i < N; i++) for (int c = 0; c < 3; c++) db.v(3 * t + c, i) = P[((size_t)t * N + i) * 3 + c];
    if (!Fc.empty()) {
        for (size_t k = 0; k < df[0]; k++) db.fv.push_back({(int)Fc[k * 3], (int)Fc[k * 3 + 1], (int)Fc[k * 3 + 2]});
    } else { // points: the 8 nearest rest neighbours as 2-gons (edges)
        for (int i = 0; i < N; i++) {
            std::vector<std::pair<double, int>> d;
            for (int j = 0; j < N; j++) if (j != i) d.push_back({(db.u.col(i) - db.u.col(j)).squaredNorm(), j});
            int k = std::min(8, (int)d.size());
            std::partial_sort(d.begin(), d.begin() + k, d.end());
            for (int a = 0; a < k; a++) db.fv.push_back({i, d[a].second});
        }
    }
    auto t0 = std::chrono::steady_clock::now();
    db.init();
    auto t1 = std::chrono::steady_clock::now();
    db.compute();
    auto t2 = std::chrono::steady_clock::now();
    // an independent check of rmse(): LBS of the returned weights and transforms
    double e = 0;
    Eigen::MatrixXd W = Eigen::MatrixXd(db.w);
    for (int t = 0; t < F; t++)
        for (int i = 0; i < N; i++) {
            Eigen::Vector4d u4(db.u(0, i), db.u(1, i), db.u(2, i), 1), acc = Eigen::Vector4d::Zero();
            for (int j = 0; j < db.nB; j++)
                if (W(j, i) != 0) acc += W(j, i) * (db.m.block<4, 4>(4 * t, 4 * j) * u4);
            for (int c = 0; c < 3; c++) e += pow(acc(c) - db.v(3 * t + c, i), 2);
        }
    printf("bones %d rmse %.6g rmse_check %.6g time_s %.3f init_s %.3f\n", db.nB, db.rmse(), sqrt(e / F / N), std::chrono::duration<double>(t2 - t0).count(),
           std::chrono::duration<double>(t1 - t0).count());
    return 0;
}
