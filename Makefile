# Convenience entry points; the userspace build is CMake (see README).
KVER ?= $(shell ls -1 /lib/modules 2>/dev/null | sort -V | tail -n 1)
KDIR ?= /lib/modules/$(KVER)/build

.PHONY: modules modules-check clean-modules

modules:
	$(MAKE) -C $(KDIR) M=$(CURDIR) W=1 modules

# W=1 and sparse (C=2 checks every file) must both be clean.
# -DVBUS_MODULES_CHECK is read by nobody: it changes the compiler command
# line, so every object is recompiled and its W=1 warnings show up again
# even right after `make modules` (which compiled them with the same W=1).
# pipefail: a failed build must fail the check, not just tee's status.
modules-check: SHELL := /bin/bash
modules-check:
	@mkdir -p build
	set -o pipefail; $(MAKE) -C $(KDIR) M=$(CURDIR) W=1 C=2 \
		KCFLAGS="$(KCFLAGS) -DVBUS_MODULES_CHECK" modules 2>&1 | \
		tee build/modules-check.log
	! grep -iE '(warning|error):' build/modules-check.log

clean-modules:
	$(MAKE) -C $(KDIR) M=$(CURDIR) clean
