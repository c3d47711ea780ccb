# tools/cuemu/cuemu.mk — the emulated CUDA build (docs/cuemu.md), included by the Makefile right
# after LIB_OBJ is known; active only with CUEMU=1 (the Makefile's test-cuda-emu targets set it,
# with CUDA=1 and BUILD=build-emu). The .cu files go through tools/cuemu/rewrite.py and g++
# instead of nvcc, the C files see tools/cuemu/include/ instead of the toolkit's headers, and
# every tools/cuemu/*.cpp (runtime, cuBLAS, NCCL) takes the place of -lcudart -lcublas -lnccl.
ifeq ($(CUEMU),1)
comma := ,
# tiny grid caps: grid-stride and task loops really loop (tensor/cuda/cuda_kernels.h, attention, Gram)
CUEMU_CAPS ?= -DCU_MAX_BLOCKS=3 -DAT_MAX_GRID=3 -DGRAM_MAX_BLOCKS=3
CUEMU_OPT  ?= -O1
CUEMU_BASE := -std=c++17 $(CUEMU_OPT) -g $(ARCH) -fPIC -ffp-contract=off -Wall -Wextra -Werror -Wno-unknown-pragmas \
              -D_GNU_SOURCE -MMD -MP -I. -Itools/cuemu/include $(CUEMU_EXTRA) $(SAN_FLAGS)
# the kernels are instrumented by ThreadSanitizer in the tsan build; the runtime is not (its
# scheduler state is only touched between fibers) but announces the fibers; nor is the C
# library (TSan cannot instrument its target_clones resolvers, which run before TSan starts)
ifeq ($(CUEMU_TSAN),1)
CUEMU_TSAN_FLAGS := -fsanitize=thread
LDLIBS   += -fsanitize=thread
CUEMU_RT_DEFS := -DCUEMU_TSAN
endif
CUEMU_CXXFLAGS := $(CUEMU_BASE) $(CUEMU_TSAN_FLAGS) -DTENSOR_NO_SITE $(CUEMU_CAPS)
CFLAGS   := $(filter-out -I/usr/local/cuda/include,$(CFLAGS)) -Itools/cuemu/include $(CUEMU_EXTRA)
LDLIBS   := $(filter-out -L/usr/local/cuda/lib64 -Wl$(comma)-rpath$(comma)/usr/local/cuda/lib64 -lnccl -lcublas -lcudart,$(LDLIBS))
CUEMU_OBJ := $(patsubst tools/cuemu/%.cpp,$(BUILD)/cuemu/%.o,$(wildcard tools/cuemu/*.cpp))
CUDA_OBJ := $(CUDA_SRC:%.cu=$(BUILD)/%.cu.o) $(CUEMU_OBJ)
LIB_OBJ  := $(LIB_SRC:%.c=$(BUILD)/%.o) $(CUDA_OBJ)
# headers that contain launches are rewritten too (found before the originals: -I$(BUILD)/cuemu-src)
CUEMU_HDR := $(BUILD)/cuemu-src/tensor/cuda/cuda_kernels.h
# ... and their relative includes ("../backend.h") resolve against the originals' directories
CUEMU_HDR_DIRS := $(addprefix -I,$(sort $(dir $(CUEMU_HDR:$(BUILD)/cuemu-src/%=%))))
CUEMU_TEST_OBJ := $(patsubst %.cu,$(BUILD)/%.cu.o,$(wildcard tests/cuemu/*.cu)) \
                  $(patsubst %.cpp,$(BUILD)/%.o,$(wildcard tests/cuemu/*.cpp))

.PRECIOUS: $(BUILD)/cuemu-src/%.cu.cpp $(BUILD)/cuemu-src/%.h
$(BUILD)/cuemu-src/%.cu.cpp: %.cu tools/cuemu/rewrite.py
	@mkdir -p $(dir $@)
	python3 tools/cuemu/rewrite.py $< $@

$(BUILD)/cuemu-src/%.h: %.h tools/cuemu/rewrite.py
	@mkdir -p $(dir $@)
	python3 tools/cuemu/rewrite.py $< $@

$(BUILD)/%.cu.o: $(BUILD)/cuemu-src/%.cu.cpp $(CUEMU_HDR)
	@mkdir -p $(dir $@)
	$(CXX) $(CUEMU_CXXFLAGS) -iquote $(BUILD)/cuemu-src -I$(dir $*) $(CUEMU_HDR_DIRS) -c $< -o $@

$(BUILD)/cuemu/%.o: tools/cuemu/%.cpp
	@mkdir -p $(dir $@)
	$(CXX) $(CUEMU_BASE) -O2 $(CUEMU_RT_DEFS) -c $< -o $@

$(BUILD)/tests/cuemu/%.o: tests/cuemu/%.cpp
	@mkdir -p $(dir $@)
	$(CXX) $(CUEMU_CXXFLAGS) -c $< -o $@

# the checks' own tests: small kernels with injected bugs (tests/cuemu/)
$(BUILD)/cuemu-tests: $(CUEMU_TEST_OBJ) $(CUEMU_OBJ)
	$(CXX) $(CUEMU_CXXFLAGS) -o $@ $^ $(LDLIBS)
endif
