# anima — build, test, bench. `make` builds libanima.a and ./anima; `make test` and `make demo`
# first install what is missing (tools/install-deps.sh, Debian packages).
CC      ?= gcc
NVCC    ?= /usr/local/cuda/bin/nvcc
BUILD   ?= build
ARCH    ?= -march=x86-64-v3
SANITIZE ?= 0
# CUDA: on by default when nvcc is found
ifeq ($(origin CUDA), undefined)
CUDA := $(shell test -x $(NVCC) && echo 1 || echo 0)
endif

MPI_INC  := $(shell mpicc --showme:compile 2>/dev/null)
MPI_LIB  := $(shell mpicc --showme:link 2>/dev/null)
BLAS_DIR := $(firstword $(wildcard /usr/lib/x86_64-linux-gnu/openblas-openmp) /usr/lib/x86_64-linux-gnu)
BLAS_INC := $(firstword $(wildcard /usr/include/x86_64-linux-gnu/openblas-openmp) /usr/include/x86_64-linux-gnu)
# the one include dir the public headers need (base/h5file.h includes <hdf5.h>); anima.pc has it
HDF5_INC := -I/usr/include/hdf5/serial

CFLAGS  := -std=c11 -O2 $(ARCH) -g -Wall -Wextra -Werror -Wno-missing-field-initializers -fopenmp -D_GNU_SOURCE -MMD -MP -I. -I$(BLAS_INC) $(HDF5_INC) -I/usr/include/suitesparse $(MPI_INC)
LDLIBS  := -L$(BLAS_DIR) -Wl,-rpath,$(BLAS_DIR) -lopenblas -L/usr/lib/x86_64-linux-gnu/hdf5/serial -lhdf5 -lcjson -lpng -lcholmod -lassimp $(MPI_LIB) -fopenmp -lm
ifeq ($(SANITIZE),1)
override BUILD := $(BUILD)-san
SAN_FLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
CFLAGS  += $(SAN_FLAGS)
LDLIBS  += -fsanitize=address,undefined
endif

LIB_DIRS := base tensor tensor/cpu autograd nn optim datasets datasets/mesh datasets/geometry datasets/render datasets/corpus datasets/motion sim $(wildcard models/*)
LIB_SRC  := $(foreach d,$(LIB_DIRS),$(wildcard $(d)/*.c))
ifeq ($(CUDA),1)
CUDA_SRC := $(wildcard tensor/cuda/*.cu) $(wildcard models/*/*.cu)
CUDA_OBJ := $(CUDA_SRC:%.cu=$(BUILD)/%.o)
CFLAGS   += -DANIMA_CUDA -I/usr/local/cuda/include
LDLIBS   += -L/usr/local/cuda/lib64 -Wl,-rpath,/usr/local/cuda/lib64 -lnccl -lcublas -lcudart -lstdc++
# sm_89 (RTX 4090) and sm_90 (H200) machine code, plus compute_90 PTX for newer GPUs to JIT
CUDA_ARCH ?= -gencode arch=compute_89,code=sm_89 -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90
NVCCFLAGS := -O2 -std=c++17 -I. -DTENSOR_NO_SITE $(CUDA_ARCH) -Xcompiler -fPIC,-Wall,-Wextra -Werror all-warnings -MMD -MP
else
LIB_SRC  += tensor/cuda/cuda_none.c
endif
LIB_OBJ  := $(LIB_SRC:%.c=$(BUILD)/%.o) $(CUDA_OBJ)
# CUEMU=1: the CUDA build compiled for the CPU emulator instead (make test-cuda-emu)
include tools/cuemu/cuemu.mk

APP_SRC  := $(wildcard tools/anima*.c tools/cmd_*.c tools/view_*.c)
TEST_SRC := $(wildcard tests/*.c)
# bench/bench_sim.c is a program of its own (bench/run_sim.sh), not one of anima-bench's cases
BENCH_SRC := $(filter-out bench/bench_sim.c bench/bench_rig.c,$(wildcard bench/*.c))

.PHONY: all test demo demo-gaussianimate bench bench-skeleton valgrind clean deps test-cuda bench-cuda install uninstall shared FORCE test-cuda-emu test-cuda-emu-tsan
all: $(BUILD)/libanima.a anima

$(BUILD)/libanima.a: $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -DTENSOR_NO_SITE -c $< -o $@

$(BUILD)/%.o: %.cu
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCCFLAGS) -c $< -o $@

# programs: the user-facing files compile without TENSOR_NO_SITE (errors name their lines)
$(BUILD)/app/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

# `anima view`'s HTTP + WebSocket server (tools/view_server.c) is the program's alone: libwebsockets
# links into ./anima only, not into the library
$(BUILD)/anima: $(APP_SRC:%.c=$(BUILD)/app/%.o) $(BUILD)/libanima.a
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS) -lwebsockets -lpthread

# ./anima is a copy of the last build's program, refreshed whenever it differs: a SANITIZE=1
# build (ASan, which cannot run under valgrind) and a plain one each keep theirs in $(BUILD),
# and a newer ./anima from the other build must not pass for up to date
anima: $(BUILD)/anima FORCE
	@cmp -s $< $@ || { cp $< $@.tmp && mv -f $@.tmp $@; }

# with the live viewer's message parser and file listing (tools/view_cmd.c, view_files.c, view_h5.c;
# tests/test_view_cmd.c)
$(BUILD)/anima-tests: $(TEST_SRC:%.c=$(BUILD)/app/%.o) $(BUILD)/app/tools/view_cmd.o $(BUILD)/app/tools/view_files.o \
                      $(BUILD)/app/tools/view_h5.o $(BUILD)/libanima.a
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)

# the data-parallel suites, with `anima fit`'s command function (tests/mpi/test_fit_dp.c)
$(BUILD)/anima-mpi-tests: $(patsubst %.c,$(BUILD)/app/%.o,$(wildcard tests/mpi/*.c)) $(BUILD)/app/tools/cmd_fit.o $(BUILD)/app/tools/cmd_util.o $(BUILD)/app/tools/cmd_args.o $(BUILD)/libanima.a
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)

# the full-disk shim tests/test_faults.c preloads (tests/faults/fullshim.c): not part of libanima,
# and built without the sanitizers (it runs inside processes that may or may not have them)
$(BUILD)/fullshim.so: tests/faults/fullshim.c
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -O2 -g -Wall -Wextra -Werror -D_GNU_SOURCE -shared -fPIC -o $@ $< -ldl

$(BUILD)/anima-bench: $(BENCH_SRC:%.c=$(BUILD)/app/%.o) $(BUILD)/libanima.a
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/anima-bench-sim: $(BUILD)/app/bench/bench_sim.o $(BUILD)/libanima.a
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)

# the rig-driven frame against the same object without its rig (bench/bench_rig.c, issue 21)
$(BUILD)/anima-bench-rig: $(BUILD)/app/bench/bench_rig.o $(BUILD)/libanima.a
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)

# anima vs PyTorch on the GPU (bench/cuda/): a CUDA=1 build in its own directory (objects
# differ with and without CUDA), then bench/cuda/run.sh, which prints "skipped: no CUDA device"
# and exits 0 on a machine without a GPU.
BUILD_CUDA ?= $(BUILD)-cuda
$(BUILD)/anima-bench-cuda: $(BUILD)/app/bench/cuda/bench_cuda.o $(BUILD)/libanima.a
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)

bench-cuda:
	@if [ ! -x $(NVCC) ]; then echo "skipped: no CUDA device (no nvcc at $(NVCC) to build with)"; exit 0; fi; \
	  $(MAKE) --no-print-directory CUDA=1 BUILD=$(BUILD_CUDA) $(BUILD_CUDA)/anima-bench-cuda && \
	  bash bench/cuda/run.sh ./$(BUILD_CUDA)/anima-bench-cuda

deps:
	@bash tools/install-deps.sh

# the viewer page's and the browser/glTF checks' JavaScript (tools/web/package.json, versions pinned
# by its package-lock.json) from npm into $(BUILD)/web/node_modules; reinstalled when the lock changes
.PHONY: web-deps
web-deps: $(BUILD)/web/node_modules/.stamp
$(BUILD)/web/node_modules/.stamp: tools/web/package.json tools/web/package-lock.json
	@mkdir -p $(BUILD)/web && cp tools/web/package.json tools/web/package-lock.json $(BUILD)/web/
	@cd $(BUILD)/web && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
	@touch $@

# the multi-view motion benchmark (issue 18, datasets/motion/bench.h): each character a training
# and a held-out motion, 24 views x 48 frames at 128x128, into $(MOTION_DATA)/<category>; the CMU
# clips come from assimp-testmodels (datasets/fetch-real.sh installs it when missing).
# MOTION_ARGS adds options, e.g. "--motion repertoire --frames 300" (the character's repertoire as
# the training motion, PartMM's database; datasets/motion/motion.h, docs/partmm.md)
# The same four characters with their repertoire (every motion of the category, 300 frames) as the
# training motion and the same held-out clip go to $(MOTION_REP_DATA)/<category>: PartMM's database
# (docs/partmm.md; the 48-frame gait is too narrow a database). MOTION_REP_DATA= skips it.
MOTION_DATA ?= data/motion
MOTION_ARGS ?=
MOTION_REP_DATA ?= data/motion-repertoire
MOTION_CATEGORIES ?= humanoid quadruped bird snake
.PHONY: motion-data
motion-data: deps
	@$(MAKE) --no-print-directory all
	@test -r /usr/share/assimp/models/BVH/01_01.bvh || bash datasets/fetch-real.sh
	@t0=$$(date +%s); for c in $(MOTION_CATEGORIES); do \
	  OMP_NUM_THREADS=$${OMP_NUM_THREADS:-2} ./anima dataset motion --category $$c --out $(MOTION_DATA)/$$c $(MOTION_ARGS) || exit 1; \
	  if [ -n "$(MOTION_REP_DATA)" ]; then OMP_NUM_THREADS=$${OMP_NUM_THREADS:-2} ./anima dataset motion --category $$c \
	    --out $(MOTION_REP_DATA)/$$c --motion repertoire --frames 300 || exit 1; fi; done; \
	  echo "motion-data: $(words $(MOTION_CATEGORIES)) characters in $(MOTION_DATA)$(if $(MOTION_REP_DATA), and $(MOTION_REP_DATA)) in $$(( $$(date +%s) - t0 )) s"

# the installed tree at $(BUILD)/install-test is what tests/examples.sh builds examples/ against
test: deps web-deps
	@$(MAKE) --no-print-directory all $(BUILD)/anima-tests $(BUILD)/anima-mpi-tests $(BUILD)/libanima.so $(BUILD)/fullshim.so
	@rm -rf $(BUILD)/install-test && $(MAKE) --no-print-directory install PREFIX=$(abspath $(BUILD)/install-test) \
	  > $(BUILD)/install-test.log 2>&1 || { cat $(BUILD)/install-test.log; exit 1; }
	@bash datasets/fetch-real.sh > $(BUILD)/fetch-real.log 2>&1 || echo "note: datasets/fetch-real.sh failed (see $(BUILD)/fetch-real.log); tests that need real meshes skip" 
	@BUILD=$(BUILD) CUDA_EMU=$(if $(wildcard tools/cuemu/include/cublas_v2.h),1,0) EMU_SANITIZE=$(EMU_SAN) bash tests/run.sh

demo: deps
	@$(MAKE) --no-print-directory all
	./anima demo

# the GaussiAnimate chain from video on a small benchmark it makes itself (a procedural
# quadruped's 120-frame repertoire seen by 12 cameras at 64 px): anima gaussianimate with
# configs/gs4d-demo.json, ~3 CPU-min; a rerun resumes; it ends with where the video is
DEMO_GZ := runs/demo-gaussianimate
demo-gaussianimate: deps
	@$(MAKE) --no-print-directory all
	@[ -f $(DEMO_GZ)/bench/transforms_train.json ] || ./anima dataset motion --category quadruped --out $(DEMO_GZ)/bench \
	  --motion repertoire --frames 120 --heldout-frames 24 --views 12 --size 64 --grid 64
	./anima gaussianimate --data $(DEMO_GZ)/bench --out $(DEMO_GZ)/run --config configs/gs4d-demo.json --bones 16

bench: deps
	@$(MAKE) --no-print-directory $(BUILD)/anima-bench $(BUILD)/anima-bench-sim $(BUILD)/anima-bench-rig
	@bash -o pipefail -c "bash bench/run.sh ./$(BUILD)/anima-bench | awk -f bench/annotate.awk bench/targets -"
	@bash -o pipefail -c "bash bench/run_sim.sh ./$(BUILD)/anima-bench-sim | awk -f bench/annotate.awk bench/targets -"
	@OMP_NUM_THREADS=$${BENCH_SIM_THREADS:-1} OMP_WAIT_POLICY=passive ./$(BUILD)/anima-bench-rig
	@OMP_NUM_THREADS=$${BENCH_THREADS:-2} ./$(BUILD)/anima-bench partmm_q300_db300_b50 | \
	  awk '$$1 == "case" { printf "partmm %s: %.0f ms per 300 poses (median of %d), %.0f poses/s (target 60)\n", $$2, $$3, $$4, 300000 / $$3 }'
	@OMP_NUM_THREADS=$${BENCH_THREADS:-2} ./$(BUILD)/anima-bench gs4d_step_mlp gs4d_step_nodes gs4d_step_nodes_codes | \
	  awk '$$1 == "case" { printf "gs4d %s: %.1f ms per step (median of %d)\n", $$2, $$3, $$4 } $$1 != "case" { print }'

# the GaussiAnimate full path from video on the 300-frame repertoire (issue 37 item 4): gs4d with
# control nodes → Skelebones → PartMM per character, one table (bench/gaussianimate_table.sh;
# about 30 CPU-min per character, most of it the gs4d fit)
.PHONY: gaussianimate-table
gaussianimate-table: all
	@test -f $(MOTION_REP_DATA)/quadruped/transforms_train.json || $(MAKE) --no-print-directory motion-data
	@bash bench/gaussianimate_table.sh $(MOTION_REP_DATA) runs/gaussianimate

# the mean curvature skeleton beside CGAL's (bench/cgal/; CGAL is only needed here)
bench-skeleton: $(BUILD)/libanima.a
	LDLIBS="$(LDLIBS)" bash bench/run_skeleton.sh

# also builds ./anima: the `anima fit` tests run it (traced by --trace-children) and skip without it;
# of the system programs the tests start, grep, python3, ffmpeg/ffprobe (the videos) and the coreutils (cp, mkdir,
# rm, head, cat, ls: cp leaks by design, freeing nothing before exit) are not traced (sh is: the programs
# it starts, ./anima among them, are only traced through it). A CUDA=0 build of its own: the
# CUDA runtime's device probe loads the driver, which memcheck does not support (ld.so's reads
# while loading it are reported in every test); kernels are checked by compute-sanitizer on a GPU.
BUILD_VG ?= $(BUILD)-vg
valgrind: deps
	@$(MAKE) --no-print-directory CUDA=0 BUILD=$(BUILD_VG) all $(BUILD_VG)/anima-tests
	OMP_NUM_THREADS=1 ANIMA_TEST_QUICK=1 valgrind --leak-check=full --error-exitcode=1 --errors-for-leak-kinds=definite,possible \
	  --suppressions=tests/valgrind.supp --trace-children=yes \
	  --trace-children-skip='*/grep,*/python3*,*/cp,*/mkdir,*/rm,*/head,*/cat,*/ls,*/ffmpeg,*/ffprobe' -q ./$(BUILD_VG)/anima-tests

test-cuda: deps
	@$(MAKE) --no-print-directory all $(BUILD)/anima-tests
	@./$(BUILD)/anima-tests --cuda

# ---- cuemu: every CUDA kernel run on the CPU (docs/cuemu.md) ---------------------------------
# test-cuda-emu: the checks' own tests (tests/cuemu/), then the CUDA parity suite (--cuda) under
# forward, reverse and seeded random thread order; SANITIZE=address adds ASan (build-emu-san) and
# runs the suite in forward order only (ASan's checks do not depend on the order, and each order
# costs ~4 minutes under it; CUEMU_ORDERS="forward reverse random" runs all three).
# test-cuda-emu-tsan: ThreadSanitizer over the small cases (tests/cuemu/ race cases).
EMU_BUILD   ?= build-emu
CUEMU_SEED  ?= $(shell od -An -N4 -tu4 /dev/urandom | tr -d ' ')
EMU_SAN     := $(if $(filter 1 address,$(SANITIZE)),1,0)
EMU_DIR     := $(EMU_BUILD)$(if $(filter 1,$(EMU_SAN)),-san)
CUEMU_ORDERS ?= $(if $(filter 1,$(EMU_SAN)),forward,forward reverse random)
test-cuda-emu:
	@$(MAKE) --no-print-directory CUEMU=1 CUDA=1 BUILD=$(EMU_BUILD) SANITIZE=$(EMU_SAN) $(EMU_DIR)/anima-tests $(EMU_DIR)/cuemu-tests \
	  $(EMU_DIR)/anima cuemu-lib-tests
	@BUILD=$(EMU_DIR) CUEMU_ORDERS="$(CUEMU_ORDERS)" bash tests/cuemu/run.sh $(CUEMU_SEED)
test-cuda-emu-tsan:
	@$(MAKE) --no-print-directory CUEMU=1 CUEMU_TSAN=1 CUDA=1 BUILD=$(EMU_BUILD)-tsan $(EMU_BUILD)-tsan/cuemu-tests
	@BUILD=$(EMU_BUILD)-tsan bash tests/cuemu/run.sh --tsan
# the emulated cuBLAS/cub/NCCL's own tests (tests/cuemu/lib/, one program each; run with the GPU-only
# paths of ./anima, tests/cuemu/paths.sh, by tests/cuemu/lib/run.sh). nccl.cpp speaks MPI.
$(BUILD)/cuemu/nccl.o: CUEMU_BASE += $(MPI_INC)
$(BUILD)/tests/cuemu/lib/test_emu_nccl.o: CUEMU_CXXFLAGS += $(MPI_INC)
.PRECIOUS: $(BUILD)/tests/cuemu/lib/%.o
$(BUILD)/cuemu-lib/%: $(BUILD)/tests/cuemu/lib/%.o $(CUEMU_OBJ)
	@mkdir -p $(dir $@)
	$(CXX) $(CUEMU_CXXFLAGS) -o $@ $^ $(LDLIBS)
.PHONY: cuemu-lib-tests
cuemu-lib-tests: $(patsubst tests/cuemu/lib/%.cpp,$(BUILD)/cuemu-lib/%,$(wildcard tests/cuemu/lib/*.cpp))

clean:
	rm -rf build build-san build-vg build-cuda build-emu build-emu-san build-emu-tsan anima

# test-cuda-emu-tsan also runs a few of the parity suite's tests with the kernels under TSan
test-cuda-emu-tsan: cuemu-tsan-anima-tests
.PHONY: cuemu-tsan-anima-tests
cuemu-tsan-anima-tests:
	@$(MAKE) --no-print-directory CUEMU=1 CUEMU_TSAN=1 CUDA=1 BUILD=$(EMU_BUILD)-tsan $(EMU_BUILD)-tsan/anima-tests

# ---- install: using anima from one's own program (examples/) -------------------------------
# $(DESTDIR)$(PREFIX)/lib/libanima.{a,so}, lib/pkgconfig/anima.pc, bin/anima and the public
# headers under include/anima/ in the repository's layout (they include each other as
# "tensor/tensor.h"; anima.pc's Cflags point there). The shared library is built from the same
# sources compiled position-independent into $(BUILD)/pic/, so libanima.a, the tests and the
# benches keep non-PIC code; the CUDA objects are PIC already and are shared by both.
PREFIX  ?= /usr/local
PIC_OBJ := $(LIB_SRC:%.c=$(BUILD)/pic/%.o) $(CUDA_OBJ)

$(BUILD)/pic/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -fPIC -DTENSOR_NO_SITE -c $< -o $@

# linked against every library it uses (--no-undefined checks that), so a program needs only
# -lanima (anima.pc's Libs)
$(BUILD)/libanima.so: $(PIC_OBJ)
	$(CC) $(CFLAGS) -shared -Wl,-soname,libanima.so -Wl,--no-undefined -o $@ $^ $(LDLIBS)

shared: $(BUILD)/libanima.so

# Headers are public unless listed here: the op front-ends' and backends' seams (tensor/
# internal.h, backend.h, cpu/, cuda/), the sources' shared internals, the LAPACK declarations
# and the Gaussian rasterizer's kernel-side math. base/ is the layer below tensor/.
HDR_DIRS    := base tensor autograd nn optim datasets datasets/mesh datasets/geometry datasets/render datasets/corpus datasets/motion sim $(wildcard models/*)
HDR_PRIVATE := %internal.h tensor/backend.h sim/lapack.h models/gaussians/gs_math.h models/gaussians/raster_core.h datasets/mesh/mesh_formats.h
PUBLIC_HDR  := $(filter-out $(HDR_PRIVATE),$(foreach d,$(HDR_DIRS),$(wildcard $(d)/*.h)))

# anima.pc is written from the variables the build itself compiles and links with: Libs.private
# is LDLIBS (a static link needs all of it), Cflags the HDF5 include dir the headers need (and
# the sanitizers, in a SANITIZE=1 build, whose libraries need them in the program too); the
# variable cuda says whether the library was built with CUDA.
define ANIMA_PC
prefix=$(PREFIX)
exec_prefix=$${prefix}
libdir=$${exec_prefix}/lib
includedir=$${prefix}/include
cuda=$(CUDA)

Name: anima
Description: tensors with autograd, neural nets, optimizers, PhysSkin and Gaussian models, a reduced elastic simulator
Version: 0.1.0
Cflags: -I$${includedir}/anima $(HDF5_INC) $(SAN_FLAGS)
Libs: -L$${libdir} -lanima
Libs.private: $(LDLIBS)
endef
export ANIMA_PC

install: $(BUILD)/libanima.a $(BUILD)/libanima.so $(BUILD)/anima
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib/pkgconfig $(DESTDIR)$(PREFIX)/include/anima
	install -m 644 $(BUILD)/libanima.a $(DESTDIR)$(PREFIX)/lib/libanima.a
	install -m 755 $(BUILD)/libanima.so $(DESTDIR)$(PREFIX)/lib/libanima.so
	install -m 755 $(BUILD)/anima $(DESTDIR)$(PREFIX)/bin/anima
	@for h in $(PUBLIC_HDR); do install -D -m 644 $$h $(DESTDIR)$(PREFIX)/include/anima/$$h || exit 1; done
	@echo "installed $(words $(PUBLIC_HDR)) headers under $(DESTDIR)$(PREFIX)/include/anima"
	printf '%s\n' "$$ANIMA_PC" > $(DESTDIR)$(PREFIX)/lib/pkgconfig/anima.pc

uninstall:
	rm -f $(DESTDIR)$(PREFIX)/lib/libanima.a $(DESTDIR)$(PREFIX)/lib/libanima.so \
	  $(DESTDIR)$(PREFIX)/lib/pkgconfig/anima.pc $(DESTDIR)$(PREFIX)/bin/anima
	rm -rf $(DESTDIR)$(PREFIX)/include/anima

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)

# fuzz: libFuzzer harnesses for the file readers (tests/fuzz/fuzz_*.c), built with clang,
# ASan and UBSan against the reader sources alone (the mesh readers need only libc; a harness
# names what else it links below). Run them with tests/fuzz/run.sh [seconds]; crashers go into
# tests/fuzz/corpus/<reader>/.
FUZZ_CC    ?= clang
FUZZ_LIB   := $(wildcard base/errbuf.c base/alloc.c datasets/mesh/mesh_io.c datasets/mesh/mesh_file.c datasets/mesh/mesh_obj.c datasets/mesh/mesh_ply.c datasets/mesh/mesh_ply_format.c \
                datasets/mesh/mesh_off.c datasets/mesh/mesh_stl.c datasets/mesh/gaussian_ply.c datasets/mesh/bvh.c)
FUZZ_BIN   := $(patsubst tests/fuzz/%.c,$(BUILD)/fuzz/%,$(wildcard tests/fuzz/fuzz_*.c))
FUZZ_FLAGS := -std=c11 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
              -fno-omit-frame-pointer -D_GNU_SOURCE -DTENSOR_NO_SITE -I.
.PHONY: fuzz
fuzz:
	@dpkg-query -W -f='$${Status}' libclang-rt-14-dev 2>/dev/null | grep -q "install ok installed" || \
	  { SUDO=""; [ "$$(id -u)" -ne 0 ] && SUDO=sudo; $$SUDO apt-get install -y -qq clang libclang-rt-14-dev >/dev/null; }
	@$(MAKE) --no-print-directory $(FUZZ_BIN)

# a harness for another reader names its sources, flags and libraries here (FUZZ_SRC_<harness>)
FUZZ_SRC_fuzz_png    := datasets/render/image.c
FUZZ_LDLIBS_fuzz_png := -lpng
# the skinning file (HDF5): the reader and what its previews link (camera, raster, PNG)
FUZZ_SRC_fuzz_skinning    := datasets/corpus/skinning_file.c base/h5file.c base/par.c base/clock.c datasets/render/camera.c datasets/render/raster.c datasets/render/image.c
FUZZ_CFLAGS_fuzz_skinning := -I/usr/include/hdf5/serial -fopenmp
FUZZ_LDLIBS_fuzz_skinning := -L/usr/lib/x86_64-linux-gnu/hdf5/serial -lhdf5 -lpng
# the D-NeRF / nerfstudio transforms reader (issue 18) and the PNG reader it calls
FUZZ_SRC_fuzz_dnerf    := datasets/motion/dnerf.c datasets/render/image.c datasets/render/camera.c
FUZZ_LDLIBS_fuzz_dnerf := -lcjson -lpng

.SECONDEXPANSION:
$(BUILD)/fuzz/%: tests/fuzz/%.c $(FUZZ_LIB) $$(FUZZ_SRC_$$*) datasets/mesh/mesh_internal.h datasets/mesh/mesh_formats.h datasets/mesh/mesh.h
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_FLAGS) $(FUZZ_CFLAGS_$*) -o $@ $< $(FUZZ_LIB) $(FUZZ_SRC_$*) -lm $(FUZZ_LDLIBS_$*)
