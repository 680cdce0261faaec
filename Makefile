# The front door: `make help` lists every target.
include labs.mk
# pytest may live in another interpreter than the first python3 (e.g. Debian's python3-pytest).
PYTEST  ?= $(shell for p in $(PYTHON) /usr/bin/python3; do $$p -c 'import pytest' 2>/dev/null && echo "$$p -m pytest" && break; done)

.PHONY: help test test-gpu grade selfcheck profile profile-check bench-class split-cost leaderboard release skeleton skeleton-check handouts figures slides slides-check charts

help: ## list the targets
	@echo "CUDA lab kit. Targets:"
	@grep -hE '^[a-zA-Z_%-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/:.*## /\t/' | awk -F'\t' '{printf "  make %-22s %s\n", $$1, $$2}'
	@echo "  make <lab>                   check your files as grading does, build one lab, run its tests, e.g. make 01-vector-add"
	@echo "  make <lab>-demo              run a lab's demo where it has one (00: your GPU's report, 02 and 10: images, 09: orbits, 13: your kernels alone, for cuda-gdb)"
	@echo "Labs: $(LABS)"
	@echo "Variables: LAB=<lab> SUBMISSION=<folder or .zip> CUDA_ARCH=<e.g. 80 or \"75;90\"> BUILD=<folder> N=<class size>"
	@echo "           VARIANT=<a slow variant of solutions/<lab>/hidden.toml, for make profile>"
	@echo "           PARALLEL=<labs self-checked at a time, default 1>"
	@echo "           GRADED=<graded class folders> NAMES=<the leaderboard's student,shown_as CSV> OUT=<folder>"

grade: ## grade your labs (or LAB=.. [SUBMISSION=..]); prints a score table
	$(PYTHON) -m grader grade $(if $(LAB),--lab $(LAB)) $(if $(SUBMISSION),--submission $(SUBMISSION))

test: build ## build everything, then run ctest (GPU tests skip without a GPU), grader tests, skeleton, handout and figure checks
	cd $(BUILD) && ctest --output-on-failure --parallel $(JOBS)
	$(if $(PYTEST),$(PYTEST) -q grader/tests,$(error no Python with pytest found: apt-get install python3-pytest))
	$(PYTHON) -m grader skeleton --check
	$(PYTHON) -m grader handouts --check
	$(PYTHON) -m grader figures --check
	$(MAKE) --no-print-directory slides-check

test-gpu: build ## only the GPU tests and self-checks (on a GPU machine)
	cd $(BUILD) && ctest --output-on-failure -L gpu

selfcheck: build ## reference full marks, skeleton zero, wrong variants caught, right ones pass (LAB="01-vector-add .." PARALLEL=..)
	$(PYTHON) -m grader selfcheck --build-dir $(BUILD) $(foreach lab,$(LAB),--lab $(lab)) $(if $(PARALLEL),--parallel $(PARALLEL))

profile: ## your build of a lab's timed kernels under Nsight Compute: metrics, hints, a roofline (LAB=.. [VARIANT=slow variant or journey step])
	$(if $(LAB),,$(error give the lab: make profile LAB=07-transpose))
	$(or $(PLOT_PYTHON),$(PYTHON)) -m grader profile --lab $(LAB) $(if $(VARIANT),--variant $(VARIANT)) $(if $(OUT),--out $(OUT))

profile-check: ## each lab's slow variants profiled beside the reference, each shows asserted (LAB="07-transpose .." [OUT=..]); on a GPU machine
	$(or $(PLOT_PYTHON),$(PYTHON)) -m grader profile --check $(foreach lab,$(LAB),--lab $(lab)) $(if $(OUT),--out $(OUT))

bench-class: ## time grade-class on a generated class (LAB="01-vector-add .." N=200 [OUT=..], each lab in OUT/<lab> when several); on a GPU machine
	$(if $(LAB),,$(error give the lab: make bench-class LAB=01-vector-add N=200))
	@failed=""; for lab in $(LAB); do \
	  out="$(OUT)"; if [ -n "$$out" ] && [ $(words $(LAB)) -gt 1 ]; then out="$$out/$$lab"; fi; \
	  $(or $(PLOT_PYTHON),$(PYTHON)) -m grader.bench.class_bench --lab $$lab --n $(or $(N),200) $${out:+--out $$out} \
	    || failed="$$failed $$lab"; \
	done; if [ -n "$$failed" ]; then echo "bench-class failed for:$$failed"; exit 1; fi

split-cost: ## the references' timings through the judge/runner split beside one process (ONE_PROCESS_BUILD=<build configured with -DKIT_ONE_PROCESS=ON> [LAB=..] [OUT=..]); on a GPU machine
	$(if $(ONE_PROCESS_BUILD),,$(error give a build configured with -DKIT_ONE_PROCESS=ON: cmake -S . -B build-one -DKIT_ONE_PROCESS=ON && cmake --build build-one, then make split-cost ONE_PROCESS_BUILD=build-one))
	$(PYTHON) -m grader.bench.split_cost --split $(BUILD) --one-process $(ONE_PROCESS_BUILD) $(foreach lab,$(LAB),--lab $(lab)) $(if $(OUT),--out $(OUT))

leaderboard: ## a static HTML leaderboard page per lab from graded classes (GRADED="graded-01 ..." [NAMES=..] [OUT=..])
	$(if $(GRADED),,$(error give the graded class folders: make leaderboard GRADED=graded/))
	$(PYTHON) -m grader leaderboard --graded $(GRADED) $(if $(NAMES),--names $(NAMES)) $(if $(OUT),--out $(OUT))

release: ## the student repository of the last commit in OUT=<folder>, checked for leaks (ALLOW_DIRTY=1, GIT_INIT=1)
	$(if $(OUT),,$(error give the release folder: make release OUT=../cuda-labs-student))
	$(PYTHON) -m grader release --out $(OUT) $(if $(filter 1,$(ALLOW_DIRTY)),--allow-dirty) $(if $(filter 1,$(GIT_INIT)),--git-init)

skeleton: ## regenerate the student skeletons in labs/ from solutions/
	$(PYTHON) -m grader skeleton

skeleton-check: ## fail if a committed skeleton differs from its reference
	$(PYTHON) -m grader skeleton --check

handouts: ## write each handout's grading section (labs/<lab>/README.md) from its lab.toml
	$(PYTHON) -m grader handouts

figures: ## write the measured figures of handouts and decks from the newest GPU run records (docs/gpu-runs/)
	$(PYTHON) -m grader figures

# Lecture decks: Markdown rendered by Marp (`npm ci --prefix slides` installs it); see slides/README.md.
slides: ## build the lecture decks into build/slides/ (HTML; PDF too where Chromium is installed)
	slides/build.sh $(BUILD)/slides

slides-check: ## check the decks: one per lab, each builds, images resolve, no reference code
	$(if $(PYTEST),$(PYTEST) -q slides/tests,$(error no Python with pytest found: apt-get install python3-pytest))

charts: ## redraw the slides' charts from the GPU run records in docs/gpu-runs/ (then make figures)
	$(if $(PLOT_PYTHON),$(PLOT_PYTHON) slides/charts/make_charts.py,$(error no Python with matplotlib found: apt-get install python3-matplotlib))
