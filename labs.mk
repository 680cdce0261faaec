# What the instructor's Makefile and the students' (release/Makefile) share: building, a lab's
# public tests and demo, cleaning. Each includes it and adds its own help, grade and test.
BUILD   ?= build
JOBS    ?= $(shell nproc 2>/dev/null || echo 2)
PYTHON  ?= python3
PLOT_PYTHON ?= $(shell for p in $(PYTHON) /usr/bin/python3; do $$p -c 'import matplotlib' 2>/dev/null && echo "$$p" && break; done)
LABS    := $(sort $(notdir $(patsubst %/lab.toml,%,$(wildcard labs/*/lab.toml))))
CMAKE_FLAGS ?=
ifneq ($(CUDA_ARCH),)
CMAKE_FLAGS += -DCUDA_ARCH="$(CUDA_ARCH)"
endif
GENERATOR := $(if $(shell command -v ninja),-G Ninja,)
.DEFAULT_GOAL := help

.PHONY: build clean cluster $(LABS)

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) $(GENERATOR) $(CMAKE_FLAGS)

build: $(BUILD)/CMakeCache.txt ## build every lab
	cmake --build $(BUILD) --parallel $(JOBS)

# A lab with something to look at (images, trajectories) defines a CMake target <lab>-demo in
# labs/<lab>/CMakeLists.txt; it writes into build/<lab>/demo/, and labs/<lab>/demo.py, where
# present, turns that into pictures (matplotlib: sudo apt-get install python3-matplotlib).
%-demo: $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) --parallel $(JOBS) --target $@
	mkdir -p $(BUILD)/$*/demo
	$(BUILD)/$*/$@ $(BUILD)/$*/demo
	if [ -f labs/$*/demo.py ]; then $(PLOT_PYTHON) labs/$*/demo.py $(BUILD)/$*/demo; fi
	@echo "Output in $(BUILD)/$*/demo/"

# Intake's check first (python3 -m grader check): what grading refuses before building, said here too.
$(LABS): $(BUILD)/CMakeCache.txt
	$(PYTHON) -m grader check --lab $@
	cmake --build $(BUILD) --parallel $(JOBS) --target $@-tests
	$(BUILD)/$@/$@-tests

# Students without a GPU run a lab on the course's Slurm cluster; the instructor's settings are in cluster.toml.
cluster: ## run LAB=<lab>'s public tests on the course's Slurm cluster (cluster.toml; GRADE=1: make grade too)
	@if [ -z "$(LAB)" ]; then echo "give the lab: make cluster LAB=01-vector-add" >&2; exit 2; fi
	$(PYTHON) -m grader cluster --lab $(LAB) --build $(BUILD) --python $(PYTHON) $(if $(filter 1,$(GRADE)),--grade) $(if $(CLUSTER_CONFIG),--config $(CLUSTER_CONFIG))

clean: ## remove the build folder
	rm -rf $(BUILD)
