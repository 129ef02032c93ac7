# SPDX-License-Identifier: Apache-2.0
# daqiri: the one build entry. `make` builds into build/, `make check` runs
# every test layer, `make demo` runs the whole chain on the default config.

PREFIX ?= /usr
DESTDIR ?=
BINDIR ?= $(PREFIX)/bin
SBINDIR ?= $(PREFIX)/sbin
LIBDIR ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
MANDIR ?= $(PREFIX)/share/man
PKGCONFIGDIR ?= $(LIBDIR)/pkgconfig
SYSCONFDIR ?= /etc
PKG_CONFIG ?= pkg-config
SYSTEMDUNITDIR ?= $(shell $(PKG_CONFIG) --variable=systemdsystemunitdir systemd 2>/dev/null || echo $(PREFIX)/lib/systemd/system)
SYSUSERSDIR ?= $(PREFIX)/lib/sysusers.d
TMPFILESDIR ?= $(PREFIX)/lib/tmpfiles.d

CC ?= cc
CLANG ?= clang
CUDA_HOME ?= /usr/local/cuda
NVCC ?= $(CUDA_HOME)/bin/nvcc
CUDA_ARCH ?= -gencode arch=compute_90,code=sm_90 -gencode arch=compute_80,code=sm_80

# ARCH=aarch64 on an x86-64 machine cross-builds into build/aarch64 with
# Debian's gcc-aarch64-linux-gnu and the :arm64 -dev packages
# (scripts/install-deps.sh --aarch64), without CUDA, DPDK (Debian's
# libdpdk-dev cannot be installed for two architectures at once) and the
# Python module; EMU runs its programs (qemu-user). On an aarch64 machine
# a plain make builds natively, everything included.
HOST_ARCH := $(shell uname -m)
ARCH ?= $(HOST_ARCH)
ifneq ($(ARCH),$(HOST_ARCH))
ifeq ($(ARCH),aarch64)
CROSS ?= aarch64-linux-gnu-
CC := $(CROSS)gcc
BUILD ?= build/aarch64
PKG_CONFIG := PKG_CONFIG_LIBDIR=/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig pkg-config
HAVE_CUDA := 0
HAVE_DPDK := 0
HAVE_PYTHON := 0
HAVE_RECORD := 0
HAVE_UCX := 0
else
$(error ARCH=$(ARCH): from $(HOST_ARCH) only ARCH=aarch64 cross-builds (or build on the machine itself))
endif
endif
# qemu-user finds the arm64 libc of the multiarch packages (libc6:arm64)
# itself; with -L /usr/aarch64-linux-gnu a forked child hangs in qemu 7.2
# (every Check suite forks)
EMU ?= qemu-aarch64
# The targets that run what they build run this machine's programs.
RUN_GOALS := check quick unit-run unit-standin golden system system-asan asan \
	asan-standin tsan demo run bench python-check python-asan fuzz-run aarch64
ifneq ($(ARCH),$(HOST_ARCH))
ifneq ($(filter $(RUN_GOALS),$(MAKECMDGOALS)),)
$(error ARCH=$(ARCH): '$(filter $(RUN_GOALS),$(MAKECMDGOALS))' runs programs, and these would be $(ARCH)'s; 'make aarch64' (a part of make check) runs the aarch64 build's suites under emulation)
endif
endif
HAVE_DPDK ?= 1
# daqiri-record: HDF5 (Debian names its .pc hdf5 or hdf5-serial). Not in
# the aarch64 cross build: Debian's libhdf5-dev installs for one
# architecture only (its arm64 package would remove the native one).
HAVE_RECORD ?= 1
# Remote consumers and daqiri-relay: UCX (libucx-dev) and OpenSSL's
# libcrypto (the relay's shared-secret MAC). Not in the aarch64 cross
# build (Debian's libucx-dev is not multi-arch).
HAVE_UCX ?= 1
HDF5_PC := $(or $(firstword $(foreach p,hdf5 hdf5-serial,$(if $(shell $(PKG_CONFIG) --exists $(p) && echo y),$(p)))),hdf5)
BUILD ?= build
VERSION := 0.1.0

ifeq ($(V),1)
Q :=
else
Q := @
endif

# Dependencies, all through pkg-config (targets that only print or clean
# need none).
PKGS := $(if $(filter 1,$(HAVE_DPDK)),libdpdk) yaml-0.1 libsystemd libcjson libmicrohttpd check libpcap \
	$(if $(filter 1,$(HAVE_RECORD)),$(HDF5_PC)) $(if $(filter 1,$(HAVE_UCX)),ucx libcrypto)
NODEPS_GOALS := clean deps help check demo layout
ifneq ($(filter-out $(NODEPS_GOALS),$(if $(MAKECMDGOALS),$(MAKECMDGOALS),all)),)
MISSING := $(strip $(foreach p,$(PKGS),$(if $(shell $(PKG_CONFIG) --exists $(p) && echo y),,$(p))))
ifneq ($(MISSING),)
$(error missing packages (pkg-config): $(MISSING); run $(if $(filter $(ARCH),$(HOST_ARCH)),'make deps' or scripts/install-deps.sh,scripts/install-deps.sh --aarch64))
endif
endif

# DPDK's .pc file drags in -march flags of the build machine; keep its -I and
# -D only so the binaries run on any x86-64.
ifeq ($(HAVE_DPDK),1)
DPDK_CFLAGS := $(filter -I% -D%,$(shell $(PKG_CONFIG) --cflags libdpdk 2>/dev/null))
DPDK_LIBS := $(shell $(PKG_CONFIG) --libs libdpdk 2>/dev/null)
else ifeq ($(filter $(NODEPS_GOALS),$(MAKECMDGOALS)),)
$(info note: HAVE_DPDK=0: building without the DPDK engine (stream_type dpdk refused at start))
endif
YAML_CFLAGS := $(shell $(PKG_CONFIG) --cflags yaml-0.1 2>/dev/null)
YAML_LIBS := $(shell $(PKG_CONFIG) --libs yaml-0.1 2>/dev/null)
SD_CFLAGS := $(shell $(PKG_CONFIG) --cflags libsystemd 2>/dev/null)
SD_LIBS := $(shell $(PKG_CONFIG) --libs libsystemd 2>/dev/null)
CJSON_CFLAGS := $(shell $(PKG_CONFIG) --cflags libcjson 2>/dev/null)
CJSON_LIBS := $(shell $(PKG_CONFIG) --libs libcjson 2>/dev/null)
MHD_CFLAGS := $(shell $(PKG_CONFIG) --cflags libmicrohttpd 2>/dev/null)
MHD_LIBS := $(shell $(PKG_CONFIG) --libs libmicrohttpd 2>/dev/null)
HDF5_CFLAGS := $(shell $(PKG_CONFIG) --cflags $(HDF5_PC) 2>/dev/null)
HDF5_LIBS := $(shell $(PKG_CONFIG) --libs $(HDF5_PC) 2>/dev/null)
PCAP_CFLAGS := $(shell $(PKG_CONFIG) --cflags libpcap 2>/dev/null)
PCAP_LIBS := $(shell $(PKG_CONFIG) --libs libpcap 2>/dev/null)
ifeq ($(HAVE_UCX),1)
UCX_CFLAGS := -DDAQIRI_HAVE_UCX=1 $(shell $(PKG_CONFIG) --cflags ucx libcrypto 2>/dev/null)
UCX_LIBS := $(shell $(PKG_CONFIG) --libs ucx libcrypto 2>/dev/null)
endif
CHECK_CFLAGS := $(shell $(PKG_CONFIG) --cflags check 2>/dev/null)
CHECK_LIBS := $(shell $(PKG_CONFIG) --libs check 2>/dev/null)
PCAP_LIBS := $(shell $(PKG_CONFIG) --libs libpcap 2>/dev/null)

# CUDA: built when nvcc is there, left out (one line says so) otherwise.
HAVE_CUDA ?= $(if $(wildcard $(NVCC)),1,0)
ifeq ($(HAVE_CUDA),1)
CUDA_CFLAGS := -DDAQIRI_HAVE_CUDA=1 -I$(CUDA_HOME)/include
CUDA_LIBS := -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 -lcudart -lstdc++
else
CUDA_CFLAGS :=
CUDA_LIBS :=
ifeq ($(filter $(NODEPS_GOALS),$(MAKECMDGOALS)),)
$(info note: $(if $(wildcard $(NVCC)),HAVE_CUDA=0,$(NVCC) not found): building without CUDA (no gpu reorder, no device regions))
endif
endif

# The Python module (client/python/): built with Debian's interpreter (the
# python3 first on PATH may be another one that cannot see Debian's numpy
# and torch) when its headers and DLPack's (libdlpack-dev) are there.
PYTHON ?= /usr/bin/python3
PY_VARS := $(shell $(PYTHON) -c 'import sysconfig as s; print(s.get_paths()["include"], s.get_config_var("EXT_SUFFIX"), s.get_python_version())' 2>/dev/null)
PY_INCLUDE := $(word 1,$(PY_VARS))
PY_EXT := $(word 2,$(PY_VARS))
PY_VERSION := $(word 3,$(PY_VARS))
DLPACK_H ?= /usr/include/dlpack/dlpack.h
HAVE_PYTHON ?= $(if $(and $(PY_EXT),$(wildcard $(PY_INCLUDE)/Python.h),$(wildcard $(DLPACK_H))),1,0)
# Where Debian's interpreter finds a module of this prefix.
PYTHONDIR ?= $(if $(filter /usr,$(PREFIX)),$(PREFIX)/lib/python3/dist-packages,$(PREFIX)/lib/python$(PY_VERSION)/dist-packages)
ifneq ($(HAVE_PYTHON),1)
ifeq ($(filter $(NODEPS_GOALS),$(MAKECMDGOALS)),)
$(info note: $(if $(filter $(ARCH),$(HOST_ARCH)),no Python.h for $(PYTHON) or no $(DLPACK_H): building without the Python module (scripts/install-deps.sh installs python3-dev and libdlpack-dev),ARCH=$(ARCH): building without the Python module))
endif
endif

WARN := -Wall -Wextra -Wstrict-prototypes -Wmissing-prototypes -Wshadow \
	-Wpointer-arith -Wno-unused-parameter
OPT ?= -O2 -g
CFLAGS ?= $(OPT)
ifeq ($(SANITIZE),1)
CFLAGS += -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
LDFLAGS += -fsanitize=address,undefined
# the host side of .cu files too (the kernels' CPU bodies, the backend)
NVCC_SAN := -Xcompiler -fsanitize=address -Xcompiler -fsanitize=undefined \
	-Xcompiler -fno-omit-frame-pointer -Xcompiler -fno-sanitize-recover=all
endif
ALL_CFLAGS := -std=c11 -D_GNU_SOURCE -MMD -MP -pthread -fPIC $(WARN) $(CFLAGS) \
	-DDAQIRI_VERSION=\"$(VERSION)\" -Iproto -Idaemon -Iclient \
	$(YAML_CFLAGS) $(SD_CFLAGS) $(CJSON_CFLAGS) $(CUDA_CFLAGS) $(UCX_CFLAGS) \
	$(if $(filter 1,$(HAVE_DPDK)),-DDAQIRI_HAVE_DPDK=1)
NVCC_FLAGS ?= -O2 -std=c++17 $(CUDA_ARCH) -Xcompiler -fPIC -DDAQIRI_HAVE_CUDA=1 -MMD -MP \
	-Iproto -Idaemon

# Sources by process boundary. A new file in a directory is picked up.
PROTO_SRC := $(wildcard proto/*.c)
DAEMON_MAIN := daemon/daqirid.c
DAEMON_SRC := $(filter-out $(DAEMON_MAIN) $(if $(filter 1,$(HAVE_DPDK)),,daemon/engine_dpdk%.c),\
	$(wildcard daemon/*.c))
DAEMON_CU := $(if $(filter 1,$(HAVE_CUDA)),$(wildcard daemon/*.cu))
CLIENT_LIB_SRC := client/client_conn.c client/client_sub.c \
	client/client_reconnect.c client/client_tx.c client/client_tap.c \
	$(if $(filter 1,$(HAVE_UCX)),client/client_remote.c client/relay_wire.c)
CLIENT_TOOLS := daqirictl daqiri-consume $(if $(filter 1,$(HAVE_RECORD)),daqiri-record) \
	$(if $(filter 1,$(HAVE_UCX)),daqiri-relay)
# check_standin tests the CUDA stand-in, which needs CUDA's headers.
UNIT_SRC := $(filter-out $(if $(filter 1,$(HAVE_CUDA)),,tests/unit/check_standin.c) \
	$(if $(filter 1,$(HAVE_DPDK)),,tests/unit/check_engine_dpdk.c) \
	$(if $(filter 1,$(HAVE_UCX)),,tests/unit/check_relay_wire.c),\
	$(wildcard tests/unit/check_*.c))
UNIT_BIN := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(UNIT_SRC))

obj = $(patsubst %.c,$(BUILD)/obj/%.o,$(1))
PROTO_OBJ := $(call obj,$(PROTO_SRC))
DAEMON_OBJ := $(call obj,$(DAEMON_SRC)) $(patsubst %.cu,$(BUILD)/obj/%.cu.o,$(DAEMON_CU))
CLIENT_OBJ := $(call obj,$(CLIENT_LIB_SRC))

DAEMON_LIBS := $(YAML_LIBS) $(SD_LIBS) $(CJSON_LIBS) $(MHD_LIBS) $(PCAP_LIBS) $(DPDK_LIBS) $(CUDA_LIBS) -lm -pthread
CLIENT_LIBS := $(CJSON_LIBS) $(CUDA_LIBS) $(UCX_LIBS) -lm -pthread

LIBCORE := $(BUILD)/libdaqirid-core.a
LIBCLIENT_A := $(BUILD)/libdaqiri-client.a
LIBCLIENT_SO := $(BUILD)/libdaqiri-client.so

PROGS := $(BUILD)/daqirid $(addprefix $(BUILD)/,$(CLIENT_TOOLS)) $(BUILD)/daqiri-sim \
	$(BUILD)/bench_reorder
PYMOD := $(BUILD)/python/daqiri$(PY_EXT)
STANDIN := $(BUILD)/standin/libcudart.so.13

.PHONY: all check quick layout unit unit-run unit-standin asan-standin golden system system-tools system-asan fuzz fuzz-run asan tsan aarch64 demo run bench \
	python python-check python-asan \
	install uninstall clean deps help
.DEFAULT_GOAL := all

all: $(PROGS) $(LIBCLIENT_A) $(LIBCLIENT_SO) $(BUILD)/daqiri-client.pc \
	$(if $(filter 1,$(HAVE_PYTHON)),$(PYMOD)) $(if $(filter 1,$(HAVE_CUDA)),$(STANDIN))

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $<")
	$(Q)$(CC) $(ALL_CFLAGS) -c $< -o $@

# Only the DPDK engine sees DPDK's headers, only the HTTP endpoint
# libmicrohttpd's, only the replay engine libpcap's.
$(BUILD)/obj/daemon/engine_dpdk.o: ALL_CFLAGS += $(DPDK_CFLAGS)
$(BUILD)/obj/daemon/engine_dpdk_tx.o: ALL_CFLAGS += $(DPDK_CFLAGS)
$(BUILD)/obj/daemon/engine_dpdk_eal.o: ALL_CFLAGS += $(DPDK_CFLAGS)
$(BUILD)/obj/daemon/engine_dpdk_flow.o: ALL_CFLAGS += $(DPDK_CFLAGS)
$(BUILD)/obj/daemon/engine_dpdk_vdev.o: ALL_CFLAGS += $(DPDK_CFLAGS)
$(BUILD)/obj/daemon/http.o: ALL_CFLAGS += $(MHD_CFLAGS)
$(BUILD)/obj/daemon/engine_replay.o: ALL_CFLAGS += $(PCAP_CFLAGS)

$(BUILD)/obj/%.cu.o: %.cu
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  NVCC    $<")
	$(Q)$(NVCC) $(NVCC_FLAGS) $(NVCC_SAN) -c $< -o $@

# The default config is embedded in the daemon as text.
$(BUILD)/obj/default_config.c: etc/daqirid.yaml
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  GEN     $@")
	$(Q){ echo '/* generated from etc/daqirid.yaml */'; echo '#include <stddef.h>'; \
	  echo 'const char cfg_default_text[] = {'; od -An -v -tx1 $< | \
	  sed -e 's/ \([0-9a-f][0-9a-f]\)/0x\1,/g'; echo '0 };'; \
	  echo 'const size_t cfg_default_len = sizeof(cfg_default_text) - 1;'; } > $@
$(BUILD)/obj/default_config.o: $(BUILD)/obj/default_config.c
	$(Q)$(CC) $(ALL_CFLAGS) -c $< -o $@

$(LIBCORE): $(DAEMON_OBJ) $(PROTO_OBJ) $(BUILD)/obj/default_config.o
	@$(if $(Q),echo "  AR      $@")
	$(Q)rm -f $@ && ar rcs $@ $^

$(LIBCLIENT_A): $(CLIENT_OBJ) $(PROTO_OBJ)
	@$(if $(Q),echo "  AR      $@")
	$(Q)rm -f $@ && ar rcs $@ $^

$(LIBCLIENT_SO): $(CLIENT_OBJ) $(PROTO_OBJ)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) -shared -Wl,-soname,libdaqiri-client.so.0 $(LDFLAGS) -o $@ $^ $(CLIENT_LIBS)
	$(Q)ln -sf libdaqiri-client.so $(BUILD)/libdaqiri-client.so.0	# the soname, so programs run uninstalled

# The module links the client library in (its objects are PIC), so it
# needs no libdaqiri-client.so at run time; it exports PyInit_daqiri only.
PY_OBJ := $(call obj,$(wildcard client/python/*.c))
$(PY_OBJ): ALL_CFLAGS += -I$(PY_INCLUDE) -fvisibility=hidden
$(PYMOD): $(PY_OBJ) $(LIBCLIENT_A)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) -shared $(LDFLAGS) -Wl,--exclude-libs,ALL -o $@ $^ $(CLIENT_LIBS)

# The CUDA stand-in (tests/standin/): libcudart.so.13 on the CPU, built
# against CUDA's headers, every symbol under the real library's version
# node; scripts/cuda-standin runs a program with it.
STANDIN_OBJ := $(call obj,$(wildcard tests/standin/*.c))
$(STANDIN): $(STANDIN_OBJ) tests/standin/cudart.map
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) -shared -Wl,-soname,libcudart.so.13 -Wl,--version-script,tests/standin/cudart.map \
	  -Wl,-z,defs $(LDFLAGS) -o $@ $(STANDIN_OBJ) -pthread
	$(Q)ln -sf libcudart.so.13 $(BUILD)/standin/libcudart.so

# Its suite links the stand-in itself, found next to it at run time.
$(BUILD)/tests/check_standin: $(BUILD)/obj/tests/unit/check_standin.o $(STANDIN)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) -o $@ $< $(STANDIN) -Wl,-rpath,'$$ORIGIN/../standin' $(CHECK_LIBS) -pthread

python: $(if $(filter 1,$(HAVE_PYTHON)),$(PYMOD))
	$(Q)$(if $(filter 1,$(HAVE_PYTHON)),:,echo "python: needs python3-dev and libdlpack-dev" >&2; exit 1)

$(BUILD)/daqiri-client.pc: client/daqiri-client.pc.in
	$(Q)sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@LIBDIR@|$(LIBDIR)|g' -e 's|@CUDA_LIBS@|$(CUDA_LIBS)|g' -e 's|@UCX_LIBS@|$(UCX_LIBS)|g' \
	  -e 's|@INCLUDEDIR@|$(INCLUDEDIR)|g' -e 's|@VERSION@|$(VERSION)|g' $< > $@

$(BUILD)/daqirid: $(call obj,$(DAEMON_MAIN)) $(LIBCORE)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(DAEMON_LIBS)

$(addprefix $(BUILD)/,$(CLIENT_TOOLS)): $(BUILD)/%: $(BUILD)/obj/client/%.o $(LIBCLIENT_A)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) -o $@ $(filter %.o,$^) $(filter %.a,$^) $(CLIENT_LIBS) $(PCAP_LIBS) -lm
# daqirictl's send and learn commands are files of their own; learn's
# inference (client/learn.c) is unit-tested alone.
$(BUILD)/daqirictl: $(BUILD)/obj/client/daqirictl_send.o \
	$(BUILD)/obj/client/daqirictl_learn.o $(BUILD)/obj/client/learn.o \
	$(BUILD)/obj/client/daqirictl_capture.o $(BUILD)/obj/client/pcap_out.o
$(BUILD)/tests/check_learn: $(BUILD)/obj/client/learn.o
# The tools' shared consumer loop (client/tool.c) is theirs, not the
# library's; daqiri-record adds its HDF5 and pcap writers.
$(BUILD)/daqiri-consume: $(BUILD)/obj/client/tool.o
$(BUILD)/daqiri-record: $(BUILD)/obj/client/tool.o $(BUILD)/obj/client/h5_out.o \
	$(BUILD)/obj/client/pcap_out.o
$(BUILD)/daqiri-record: CLIENT_LIBS += $(HDF5_LIBS) $(PCAP_LIBS)
$(BUILD)/obj/client/h5_out.o $(BUILD)/obj/client/daqiri-record.o: ALL_CFLAGS += $(HDF5_CFLAGS)
$(BUILD)/obj/client/pcap_out.o: ALL_CFLAGS += $(PCAP_CFLAGS)
$(BUILD)/tests/check_pcap_out: $(BUILD)/obj/client/pcap_out.o
# the tests' capture maker writes through the same writer
$(BUILD)/tests/mkpcap: $(BUILD)/obj/client/pcap_out.o
$(BUILD)/tests/mkpcap: CLIENT_LIBS += $(PCAP_LIBS)
$(BUILD)/tests/check_pcap_out: CHECK_LIBS += $(PCAP_LIBS)
$(BUILD)/obj/tests/unit/check_pcap_out.o: ALL_CFLAGS += $(PCAP_CFLAGS)

# daqiri-relay's files; only its HTTP endpoint sees libmicrohttpd.
RELAY_OBJ := $(call obj,client/relay_peer.c client/relay_sub.c client/relay_stats.c)
$(BUILD)/daqiri-relay: $(RELAY_OBJ)
$(BUILD)/daqiri-relay: CLIENT_LIBS += $(MHD_LIBS)
$(BUILD)/obj/client/relay_stats.o: ALL_CFLAGS += $(MHD_CFLAGS)

# The simulator reads the same YAML as the daemon.
$(BUILD)/daqiri-sim: $(BUILD)/obj/scripts/daqiri-sim.o $(LIBCORE)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(DAEMON_LIBS)

$(BUILD)/bench_%: $(BUILD)/obj/tests/bench/bench_%.o $(LIBCORE) $(LIBCLIENT_A)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(DAEMON_LIBS) $(UCX_LIBS)

# Unit tests link the daemon core and the client library like the programs do.
$(BUILD)/tests/check_%: $(BUILD)/obj/tests/unit/check_%.o $(LIBCORE) $(LIBCLIENT_A)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(CHECK_LIBS) $(DAEMON_LIBS) $(UCX_LIBS)
$(BUILD)/obj/tests/unit/%.o: ALL_CFLAGS += $(CHECK_CFLAGS)

unit: $(UNIT_BIN)

# Each suite prints Check's closing line ("100%: Checks: N, Failures: 0,
# Errors: 0"); a failing suite fails the target after all have run.
unit-run: unit
	@rc=0; for t in $(UNIT_BIN); do \
	  echo "== $$t"; CK_FORK=yes CK_DEFAULT_TIMEOUT=$${CK_DEFAULT_TIMEOUT:-60} $$t || rc=1; \
	done; exit $$rc

golden: $(BUILD)/daqirid
	$(Q)DAQIRID=$(BUILD)/daqirid sh tests/config/run.sh
	$(Q)DAQIRID=$(BUILD)/daqirid sh tests/config/man-examples.sh

# The layout rules of README.md "Layout": maps complete, proto/ alone,
# no source file over 1500 lines without a reason.
layout:
	$(Q)sh tests/layout.sh

# Small helper programs of the system tests (tests/system/*.c).
SYS_TOOLS := $(patsubst tests/system/%.c,$(BUILD)/tests/%,$(filter-out \
	$(if $(filter 1,$(HAVE_DPDK)),,tests/system/dpdk-tx-tool.c) \
	$(if $(filter 1,$(HAVE_UCX)),,tests/system/relay-hostile.c),$(wildcard tests/system/*.c)))
$(BUILD)/tests/%: $(BUILD)/obj/tests/system/%.o $(LIBCLIENT_A)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(CLIENT_LIBS)

# The DPDK tx tool drives the engine alone: it links the daemon's core.
$(BUILD)/tests/dpdk-tx-tool: $(BUILD)/obj/tests/system/dpdk-tx-tool.o $(LIBCORE)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(DAEMON_LIBS)

system: all $(SYS_TOOLS)
	$(Q)BUILD=$(BUILD) sh tests/system/run.sh $(T)

# The edit-compile-test loop: the build, the unit suites and the golden
# configs (a minute or two; make system T="NN ..." adds system tests).
quick: layout all unit
	$(Q)$(MAKE) --no-print-directory unit-run
	$(Q)$(MAKE) --no-print-directory golden

system-tools: $(SYS_TOOLS)
# The closed-loop consumer builds the simulator's control packets.
$(BUILD)/obj/tests/system/closed-loop.o: ALL_CFLAGS += -Iscripts

# The Python module's tests (client/python/tests/, pytest) against the
# daemon and simulator of $(BUILD). test_cuda.py's device tensors need the
# daemon and the interpreter on the CUDA stand-in (built with CUDA's
# headers): a second run of its own under scripts/cuda-standin. Without
# the stand-in it skips itself in the first run.
PYTEST := PYTHONDONTWRITEBYTECODE=1 $(PYTHON) -m pytest -q -p no:cacheprovider
PY_CUDA_TEST := client/python/tests/test_cuda.py
python-check: all python $(SYS_TOOLS)
	$(Q)PYTHONPATH=$(BUILD)/python DAQIRI_BUILD=$(BUILD) $(PYTEST) \
	  $(if $(filter 1,$(HAVE_CUDA)),--ignore=$(PY_CUDA_TEST)) client/python/tests
	$(if $(filter 1,$(HAVE_CUDA)),$(Q)PYTHONPATH=$(BUILD)/python DAQIRI_BUILD=$(BUILD) \
	  BUILD=$(BUILD) scripts/cuda-standin env $(PYTEST) $(PY_CUDA_TEST))

# The tests marked asan once more, the module and client library built
# with ASan and UBSan, their runtimes preloaded into the interpreter (the
# tests take LD_PRELOAD out of the environment of what they start).
python-asan:
	$(Q)$(MAKE) --no-print-directory BUILD=$(BUILD)/asan SANITIZE=1 HAVE_CUDA=0 OPT='-O1 -g' all python system-tools
	$(Q)LD_PRELOAD="$$($(CC) -print-file-name=libasan.so) $$($(CC) -print-file-name=libubsan.so)" \
	  ASAN_OPTIONS=detect_leaks=0 PYTHONPATH=$(BUILD)/asan/python DAQIRI_BUILD=$(BUILD)/asan \
	  $(PYTEST) -m asan --ignore=$(PY_CUDA_TEST) client/python/tests

# The hostile-consumer tests once more against a daemon built with ASan and
# UBSan: the attacks reach its message decoding, ring and fd handling; and
# direct placement's scatter, gather and copies on shuffled and malformed
# traffic (41). (The replay engine's pcap reading and buffer landing run
# under ASan in check_replay, with the unit suites: test 53 here too put
# make check over its 30 minutes.)
system-asan:
	$(Q)$(MAKE) --no-print-directory BUILD=$(BUILD)/asan SANITIZE=1 HAVE_CUDA=0 OPT='-O1 -g' all system-tools
	$(Q)rc=0; BUILD=$(BUILD)/asan sh tests/system/18-hostile.sh || rc=$$?; \
	  if [ $$rc -eq 77 ]; then echo "system-asan: 18-hostile skipped"; else exit $$rc; fi
	$(Q)rc=0; BUILD=$(BUILD)/asan sh tests/system/36-tx-hostile.sh || rc=$$?; \
	  if [ $$rc -eq 77 ]; then echo "system-asan: 36-tx-hostile skipped"; else exit $$rc; fi
	$(Q)BUILD=$(BUILD)/asan sh tests/system/41-direct-placement.sh
	$(Q)BUILD=$(BUILD)/asan sh tests/system/46-sw-loopback.sh
	$(Q)BUILD=$(BUILD)/asan sh tests/system/48-spread-stream.sh
	$(Q)BUILD=$(BUILD)/asan sh tests/system/28-metrics-abuse.sh

# The suites that use CUDA once more on the CUDA stand-in: unit-run ran
# their no-device paths, here their GPU cases run (kernels as CPU bodies,
# device memory the host cannot read, streams that run only when waited on).
STANDIN_UNIT := check_reorder_cuda check_mem check_client check_tx
unit-standin: unit $(STANDIN)
	@rc=0; for t in $(STANDIN_UNIT); do \
	  echo "== $(BUILD)/tests/$$t on the CUDA stand-in"; \
	  CK_FORK=yes CK_DEFAULT_TIMEOUT=$${CK_DEFAULT_TIMEOUT:-60} BUILD=$(BUILD) \
	    sh scripts/cuda-standin $(BUILD)/tests/$$t || rc=1; \
	done; exit $$rc

# The kernel body, the CUDA backend's host code, the stand-in and its
# suite once more with ASan and UBSan, in a tree of their own. The stand-in
# suite makes host reads of device memory fault on purpose: ASan must let
# that SIGSEGV through.
asan-standin:
	$(Q)$(MAKE) --no-print-directory BUILD=$(BUILD)/asan-cuda SANITIZE=1 HAVE_CUDA=1 \
	  OPT='-O1 -g' $(addprefix $(BUILD)/asan-cuda/tests/,$(STANDIN_UNIT) check_standin \
	  check_reorder_kernel) $(BUILD)/asan-cuda/standin/libcudart.so.13
	$(Q)CK_FORK=yes $(BUILD)/asan-cuda/tests/check_reorder_kernel
	$(Q)CK_FORK=yes ASAN_OPTIONS=handle_segv=0 $(BUILD)/asan-cuda/tests/check_standin
	$(Q)$(MAKE) --no-print-directory BUILD=$(BUILD)/asan-cuda SANITIZE=1 HAVE_CUDA=1 \
	  OPT='-O1 -g' unit-standin UNIT_BIN='$(addprefix $(BUILD)/asan-cuda/tests/,$(STANDIN_UNIT))'

# The same unit tests built again with AddressSanitizer and UBSan in their
# own tree, without CUDA (asan-standin runs the CUDA parts on the stand-in).
asan:
	$(Q)$(MAKE) --no-print-directory BUILD=$(BUILD)/asan SANITIZE=1 HAVE_CUDA=0 OPT='-O1 -g' unit-run

# A shared plan's lock discipline (reorder.c "Shared plans") under
# ThreadSanitizer: the unit test whose threads feed one plan at once.
TSAN_SRC := tests/unit/check_shared.c daemon/reorder.c daemon/convert_cpu.c \
	daemon/geometry.c daemon/log.c
tsan: $(BUILD)/tsan/check_shared
	$(Q)CK_FORK=no $(BUILD)/tsan/check_shared
$(BUILD)/tsan/check_shared: $(TSAN_SRC) $(wildcard daemon/*.h proto/*.h)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  TSAN    $@")
	$(Q)$(CC) -std=c11 -D_GNU_SOURCE -O1 -g -fsanitize=thread -Iproto -Idaemon \
	  $(CHECK_CFLAGS) -o $@ $(TSAN_SRC) $(CHECK_LIBS) -pthread

# aarch64 on an x86-64 machine (README "ARM64"): the cross build, every
# unit suite under qemu-aarch64 (its default CPU has FP16 and BF16: every
# NEON kernel runs; convert_fast once more on a Cortex-A53, which has
# neither, so the run-time choice falls back to plain NEON), and daqirid
# -n on every shipped config. Not run under emulation: check_engine_socket
# (qemu-user has no SO_RXQ_OVFL and no SO_ATTACH_REUSEPORT_CBPF) and
# check_direct (over two minutes emulated; it is not architecture code),
# and in check_client the one test that makes and reads 16 MiB of JSON
# within the reply's 10 s (DAQIRI_TEST_EMULATED). Not built:
# daqiri-record (Debian's libhdf5-dev installs for one architecture only,
# so the cross build leaves the recorder out).
# Skipped, saying so, only where install-deps cannot install the packages.
AARCH64_SKIP := check_engine_socket check_direct check_engine_dpdk check_standin \
	check_relay_wire
AARCH64_UNIT := $(filter-out $(AARCH64_SKIP),$(patsubst tests/unit/%.c,%,$(wildcard tests/unit/check_*.c)))
AARCH64_BUILD := $(BUILD)/aarch64
# (No line below both runs $(MAKE) and does work: make -n runs such lines.)
aarch64:
	$(Q)rm -f $(BUILD)/aarch64-skip; mkdir -p $(BUILD); \
	sh scripts/install-deps.sh --aarch64 || \
	  echo "its packages could not be installed (above)" > $(BUILD)/aarch64-skip
	$(Q)[ -f $(BUILD)/aarch64-skip ] || $(MAKE) --no-print-directory ARCH=aarch64 \
	  BUILD=$(AARCH64_BUILD) all $(addprefix $(AARCH64_BUILD)/tests/,$(AARCH64_UNIT))
	$(Q)if [ -f $(BUILD)/aarch64-skip ]; then \
	  echo "aarch64: skipped: $$(cat $(BUILD)/aarch64-skip)"; exit 0; fi; \
	rc=0; for t in $(AARCH64_UNIT); do \
	  echo "== $(AARCH64_BUILD)/tests/$$t (qemu-aarch64)"; \
	  CK_FORK=yes CK_DEFAULT_TIMEOUT=$${CK_DEFAULT_TIMEOUT:-60} CK_TIMEOUT_MULTIPLIER=10 \
	    DAQIRI_TEST_EMULATED=1 $(EMU) $(AARCH64_BUILD)/tests/$$t || rc=1; \
	done; \
	echo "== $(AARCH64_BUILD)/tests/check_convert_fast (qemu-aarch64 -cpu cortex-a53)"; \
	CK_FORK=yes $(EMU) -cpu cortex-a53 $(AARCH64_BUILD)/tests/check_convert_fast \
	  > $(AARCH64_BUILD)/a53.log 2>&1 || rc=1; cat $(AARCH64_BUILD)/a53.log; \
	grep -q "^note: auto implementation: neon$$" $(AARCH64_BUILD)/a53.log || \
	  { echo "aarch64: on a Cortex-A53 the choice is not plain neon"; rc=1; }; \
	echo "== daqirid -n on the shipped configs (qemu-aarch64)"; \
	for c in etc/daqirid.yaml etc/examples/*.yaml; do \
	  $(EMU) $(AARCH64_BUILD)/daqirid -n -c $$c || rc=1; done; \
	exit $$rc

# libFuzzer targets (clang), seeded from the golden configs.
FUZZ_SRC := $(filter-out $(if $(filter 1,$(HAVE_UCX)),,tests/fuzz/fuzz_relay.c),\
	$(wildcard tests/fuzz/fuzz_*.c))
FUZZ_BIN := $(patsubst tests/fuzz/%.c,$(BUILD)/fuzz/%,$(FUZZ_SRC))
# Each target's time in make check: 20 s (five targets) keeps the whole check under its
# 30 minutes on a 2-core machine (FUZZ_SECONDS=600 make fuzz-run to dig).
FUZZ_SECONDS ?= 20
# Each target names the sources it exercises: FUZZ_SRC_<target>.
FUZZ_SRC_fuzz_config := $(wildcard daemon/cfg_*.c) daemon/geometry.c $(PROTO_SRC) $(BUILD)/obj/default_config.c
FUZZ_SRC_fuzz_proto := $(PROTO_SRC)
FUZZ_SRC_fuzz_client := $(CLIENT_LIB_SRC) $(PROTO_SRC)
FUZZ_SRC_fuzz_cfgdiff := $(FUZZ_SRC_fuzz_config)
FUZZ_SRC_fuzz_relay := client/relay_wire.c $(PROTO_SRC)
# ... and the libraries beyond cJSON it needs, FUZZ_LIBS_<target>, with
# their flags, FUZZ_CFLAGS_<target>.
FUZZ_LIBS_fuzz_relay := -lcrypto
FUZZ_LIBS_fuzz_client := $(UCX_LIBS)
FUZZ_CFLAGS_fuzz_client := $(UCX_CFLAGS)
.SECONDARY:
.SECONDEXPANSION:
$(BUILD)/fuzz/%: tests/fuzz/%.c $$(FUZZ_SRC_$$*)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  FUZZ    $@")
	$(Q)$(CLANG) -std=c11 -D_GNU_SOURCE -g -O1 -fsanitize=fuzzer,address,undefined \
	  -Iproto -Idaemon -Iclient $(YAML_CFLAGS) $(CJSON_CFLAGS) $(FUZZ_CFLAGS_$*) \
	  -o $@ $< $(FUZZ_SRC_$*) $(YAML_LIBS) $(CJSON_LIBS) $(FUZZ_LIBS_$*) -lm -pthread
fuzz: $(FUZZ_BIN)
fuzz-run: fuzz
	$(Q)BUILD=$(BUILD) FUZZ_SECONDS=$(FUZZ_SECONDS) sh tests/fuzz/run.sh $(FUZZ_BIN)

check: deps
	$(Q)$(MAKE) --no-print-directory layout
	$(Q)$(MAKE) --no-print-directory all unit
	$(Q)$(MAKE) --no-print-directory unit-run
	$(Q)$(if $(filter 1,$(HAVE_CUDA)),$(MAKE) --no-print-directory unit-standin,echo "unit-standin: not run: no nvcc, so no CUDA code and no stand-in")
	$(Q)$(MAKE) --no-print-directory golden
	$(Q)$(MAKE) --no-print-directory system
	$(Q)$(MAKE) --no-print-directory asan
	$(Q)$(MAKE) --no-print-directory tsan
	$(Q)$(MAKE) --no-print-directory aarch64
	$(Q)$(if $(filter 1,$(HAVE_CUDA)),$(MAKE) --no-print-directory asan-standin,echo "asan-standin: not run: no nvcc")
	$(Q)$(MAKE) --no-print-directory system-asan
	$(Q)$(MAKE) --no-print-directory python-check
	$(Q)$(MAKE) --no-print-directory python-asan
	$(Q)$(MAKE) --no-print-directory fuzz-run

deps:
	$(Q)sh scripts/install-deps.sh

demo: deps
	$(Q)$(MAKE) --no-print-directory all
	$(Q)BUILD=$(BUILD) sh scripts/demo.sh

run: all
	$(Q)BUILD=$(BUILD) $(if $(CONFIG),CONFIG=$(CONFIG)) sh scripts/run.sh

BENCH_BIN := $(patsubst tests/bench/%.c,$(BUILD)/%,$(wildcard tests/bench/bench_*.c))
bench: all $(BENCH_BIN) $(BUILD)/tests/closed-loop $(BUILD)/tests/mkpcap
	$(Q)BUILD=$(BUILD) BENCH_PYTHON=$(PYTHON) sh scripts/bench.sh

install: all
	install -d "$(DESTDIR)"$(SBINDIR) "$(DESTDIR)"$(BINDIR) "$(DESTDIR)"$(LIBDIR) \
	  "$(DESTDIR)"$(INCLUDEDIR) "$(DESTDIR)"$(PKGCONFIGDIR) "$(DESTDIR)"$(SYSCONFDIR)/daqiri \
	  "$(DESTDIR)"$(SYSTEMDUNITDIR) "$(DESTDIR)"$(SYSUSERSDIR) "$(DESTDIR)"$(TMPFILESDIR) \
	  "$(DESTDIR)"$(MANDIR)/man1 "$(DESTDIR)"$(MANDIR)/man3 "$(DESTDIR)"$(MANDIR)/man5 \
	  "$(DESTDIR)"$(MANDIR)/man8
	install -m 0755 $(BUILD)/daqirid "$(DESTDIR)"$(SBINDIR)/daqirid
	install -m 0755 $(BUILD)/daqirictl $(BUILD)/daqiri-consume $(BUILD)/daqiri-sim "$(DESTDIR)"$(BINDIR)/
	install -m 0644 $(LIBCLIENT_A) "$(DESTDIR)"$(LIBDIR)/
	install -m 0755 $(LIBCLIENT_SO) "$(DESTDIR)"$(LIBDIR)/libdaqiri-client.so.0
	ln -sf libdaqiri-client.so.0 "$(DESTDIR)"$(LIBDIR)/libdaqiri-client.so
	install -m 0644 client/daqiri_client.h proto/daqiri_types.h "$(DESTDIR)"$(INCLUDEDIR)/
	install -m 0644 $(BUILD)/daqiri-client.pc "$(DESTDIR)"$(PKGCONFIGDIR)/
	test -e "$(DESTDIR)"$(SYSCONFDIR)/daqiri/daqirid.yaml || \
	  install -m 0644 etc/daqirid.yaml "$(DESTDIR)"$(SYSCONFDIR)/daqiri/daqirid.yaml
	install -d "$(DESTDIR)"$(PREFIX)/share/doc/daqiri/examples
	install -m 0644 etc/examples/*.yaml "$(DESTDIR)"$(PREFIX)/share/doc/daqiri/examples/
	install -d "$(DESTDIR)"$(PREFIX)/share/doc/daqiri/examples/python
	install -m 0755 client/python/examples/*.py "$(DESTDIR)"$(PREFIX)/share/doc/daqiri/examples/python/
	install -d "$(DESTDIR)"$(PREFIX)/share/daqiri/grafana
	install -m 0644 etc/grafana/daqiri.json "$(DESTDIR)"$(PREFIX)/share/daqiri/grafana/
	install -m 0644 systemd/daqirid.service systemd/daqirid.socket "$(DESTDIR)"$(SYSTEMDUNITDIR)/
	install -m 0644 systemd/daqiri.sysusers "$(DESTDIR)"$(SYSUSERSDIR)/daqiri.conf
	install -m 0644 systemd/daqiri.tmpfiles "$(DESTDIR)"$(TMPFILESDIR)/daqiri.conf
	install -m 0644 scripts/daqiri-sim.1 client/daqiri-consume.1 "$(DESTDIR)"$(MANDIR)/man1/
	$(if $(filter 1,$(HAVE_RECORD)),install -m 0755 $(BUILD)/daqiri-record "$(DESTDIR)"$(BINDIR)/ && \
	  install -m 0644 client/daqiri-record.1 "$(DESTDIR)"$(MANDIR)/man1/)
	$(if $(filter 1,$(HAVE_UCX)),install -m 0755 $(BUILD)/daqiri-relay "$(DESTDIR)"$(BINDIR)/ && \
	  install -m 0644 client/daqiri-relay.8 "$(DESTDIR)"$(MANDIR)/man8/ && \
	  install -m 0644 systemd/daqiri-relay.service "$(DESTDIR)"$(SYSTEMDUNITDIR)/ && \
	  install -m 0644 systemd/daqiri-relay.sysusers "$(DESTDIR)"$(SYSUSERSDIR)/daqiri-relay.conf)
	install -m 0644 client/libdaqiri-client.3 client/python/daqiri-python.3 "$(DESTDIR)"$(MANDIR)/man3/
	install -m 0644 daemon/daqirid.yaml.5 "$(DESTDIR)"$(MANDIR)/man5/
	install -m 0644 daemon/daqirid.8 client/daqirictl.8 "$(DESTDIR)"$(MANDIR)/man8/
	install -d "$(DESTDIR)"$(PREFIX)/share/bash-completion/completions
	install -m 0644 client/daqirictl.bash-completion "$(DESTDIR)"$(PREFIX)/share/bash-completion/completions/daqirictl
	$(if $(filter 1,$(HAVE_PYTHON)),install -d "$(DESTDIR)"$(PYTHONDIR) && \
	  install -m 0644 $(PYMOD) "$(DESTDIR)"$(PYTHONDIR)/)

uninstall:
	rm -f "$(DESTDIR)"$(SBINDIR)/daqirid "$(DESTDIR)"$(BINDIR)/daqirictl \
	  "$(DESTDIR)"$(BINDIR)/daqiri-consume "$(DESTDIR)"$(BINDIR)/daqiri-sim \
	  "$(DESTDIR)"$(BINDIR)/daqiri-record "$(DESTDIR)"$(MANDIR)/man1/daqiri-record.1 \
	  "$(DESTDIR)"$(BINDIR)/daqiri-relay "$(DESTDIR)"$(MANDIR)/man8/daqiri-relay.8 \
	  "$(DESTDIR)"$(SYSTEMDUNITDIR)/daqiri-relay.service "$(DESTDIR)"$(SYSUSERSDIR)/daqiri-relay.conf \
	  "$(DESTDIR)"$(LIBDIR)/libdaqiri-client.* "$(DESTDIR)"$(INCLUDEDIR)/daqiri_client.h "$(DESTDIR)"$(INCLUDEDIR)/daqiri_types.h \
	  "$(DESTDIR)"$(PKGCONFIGDIR)/daqiri-client.pc \
	  "$(DESTDIR)"$(SYSTEMDUNITDIR)/daqirid.service "$(DESTDIR)"$(SYSTEMDUNITDIR)/daqirid.socket \
	  "$(DESTDIR)"$(SYSUSERSDIR)/daqiri.conf \
	  "$(DESTDIR)"$(TMPFILESDIR)/daqiri.conf "$(DESTDIR)"$(MANDIR)/man3/libdaqiri-client.3 \
	  "$(DESTDIR)"$(MANDIR)/man3/daqiri-python.3 \
	  "$(DESTDIR)"$(MANDIR)/man1/daqiri-sim.1 "$(DESTDIR)"$(MANDIR)/man1/daqiri-consume.1 \
	  "$(DESTDIR)"$(MANDIR)/man5/daqirid.yaml.5 "$(DESTDIR)"$(MANDIR)/man8/daqirid.8 \
	  "$(DESTDIR)"$(MANDIR)/man8/daqirictl.8 \
	  "$(DESTDIR)"$(PREFIX)/share/bash-completion/completions/daqirictl \
	  "$(DESTDIR)"$(PYTHONDIR)/daqiri$(PY_EXT)
	rm -rf "$(DESTDIR)"$(PREFIX)/share/doc/daqiri

clean:
	rm -rf $(BUILD)

help:
	@echo 'targets: all check quick demo run bench install uninstall clean deps fuzz'
	@echo '         system T="NN ..." (some system tests), aarch64 (the cross build'
	@echo '         and its unit suites under qemu-aarch64; ARCH=aarch64 only builds)'

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)
