# Convenience entry points; the userspace build is CMake (see README).
KVER ?= $(shell ls -1 /lib/modules 2>/dev/null | sort -V | tail -n 1)
KDIR ?= /lib/modules/$(KVER)/build

.PHONY: modules modules-check clean-modules

modules:
	$(MAKE) -C $(KDIR) M=$(CURDIR) W=1 modules

# W=1 and sparse (C=2 checks every file) must both be clean.
modules-check:
	$(MAKE) -C $(KDIR) M=$(CURDIR) W=1 C=2 modules 2>&1 | tee build/modules-check.log
	! grep -E 'warning:|error:' build/modules-check.log

clean-modules:
	$(MAKE) -C $(KDIR) M=$(CURDIR) clean
