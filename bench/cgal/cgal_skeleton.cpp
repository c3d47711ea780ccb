// bench/cgal/cgal_skeleton.cpp — the reference side of bench/run_skeleton.sh: CGAL's
// Mean_curvature_flow_skeletonization (default parameters: w_H 0.1, w_M 0.2, min edge 0.002 ×
// diagonal, 110° split, area variation 1e-4) on one OFF/PLY/OBJ mesh. Writes the skeleton in
// the harness's text format ("nodes N edges E", N lines "x y z", E lines "a b") and prints the
// wall and process CPU time of the skeletonization alone (reading and writing excluded), as
// "cgal_seconds T cpu_seconds C nodes N edges E".
// Needs Debian's libcgal-dev and libeigen3-dev (header-only); built only by the bench script.
#include <CGAL/Mean_curvature_flow_skeletonization.h>
#include <CGAL/extract_mean_curvature_flow_skeleton.h>
#include <CGAL/Simple_cartesian.h>
#include <CGAL/Surface_mesh.h>
#include <CGAL/Polygon_mesh_processing/IO/polygon_mesh_io.h>

#include <chrono>
#include <ctime>
#include <cstdio>
#include <fstream>

typedef CGAL::Simple_cartesian<double> Kernel;
typedef Kernel::Point_3 Point;
typedef CGAL::Surface_mesh<Point> Mesh;
typedef CGAL::Mean_curvature_flow_skeletonization<Mesh> Skeletonization;
typedef Skeletonization::Skeleton Skeleton;

int main(int argc, char **argv) {
    if (argc != 3) {
        std::fprintf(stderr, "usage: %s MESH OUT.skel\n", argv[0]);
        return 2;
    }
    Mesh mesh;
    if (!CGAL::Polygon_mesh_processing::IO::read_polygon_mesh(argv[1], mesh) || !CGAL::is_triangle_mesh(mesh) ||
        !CGAL::is_closed(mesh)) {
        std::fprintf(stderr, "%s: not a closed triangle mesh CGAL can read\n", argv[1]);
        return 1;
    }
    Skeleton skel;
    auto t0 = std::chrono::steady_clock::now();
    std::clock_t c0 = std::clock();
    CGAL::extract_mean_curvature_flow_skeleton(mesh, skel);
    double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    double cpu = (double)(std::clock() - c0) / CLOCKS_PER_SEC;
    std::string tmp = std::string(argv[2]) + ".tmp";
    std::ofstream out(tmp);
    out << "nodes " << boost::num_vertices(skel) << " edges " << boost::num_edges(skel) << "\n";
    for (auto v : CGAL::make_range(vertices(skel))) {
        const Point &p = skel[v].point;
        out << p.x() << " " << p.y() << " " << p.z() << "\n";
    }
    for (auto e : CGAL::make_range(edges(skel))) out << source(e, skel) << " " << target(e, skel) << "\n";
    out.close();
    if (!out || std::rename(tmp.c_str(), argv[2])) {
        std::fprintf(stderr, "%s: cannot write\n", argv[2]);
        return 1;
    }
    std::printf("cgal_seconds %.4f cpu_seconds %.4f nodes %zu edges %zu\n", dt, cpu, (size_t)boost::num_vertices(skel),
                (size_t)boost::num_edges(skel));
    return 0;
}
