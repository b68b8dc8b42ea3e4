// SPDX-License-Identifier: GPL-2.0
/*
 * Fault injection for the tests: events a broken host could send, fed to
 * the same handler the eventq uses, in the eventq tasklet (where the real
 * ones are handled: the SHMCLOSE/SHMSIGNAL code relies on that context).
 *
 *   /sys/kernel/debug/vbus-pcibridge/<pci name>/inject_event  (write)
 *     devadd ID TYPE        DEVADD (TYPE "-" = empty)
 *     devadd-unterm ID      DEVADD whose type fills all 128 bytes, no NUL
 *     devdrop ID            DEVDROP
 *     shmsignal COOKIE      SHMSIGNAL
 *     shmclose COOKIE       SHMCLOSE
 *     raw EVENTID           an event with this id and a zero body
 */
#include <linux/module.h>
#include <linux/debugfs.h>
#include <linux/uaccess.h>
#include <linux/slab.h>
#include "pci_bridge.h"

static struct dentry *vbus_pci_debugfs_root;

static int parse_event(const char *cmd, struct vbus_pci_event *ev)
{
	char word[16], type[VBUS_MAX_DEVTYPE_LEN];
	unsigned long long v;
	unsigned int id;

	memset(ev, 0, sizeof(*ev));
	if (sscanf(cmd, "%15s %llu", word, &v) != 2)
		return -EINVAL;

	if (!strcmp(word, "devadd")) {
		if (sscanf(cmd, "%*s %*u %127s", type) != 1)
			return -EINVAL;
		ev->eventid = VBUS_PCI_EVENT_DEVADD;
		ev->data.add.id = v;
		if (strcmp(type, "-"))
			strscpy(ev->data.add.type, type,
				sizeof(ev->data.add.type));
	} else if (!strcmp(word, "devadd-unterm")) {
		ev->eventid = VBUS_PCI_EVENT_DEVADD;
		ev->data.add.id = v;
		memset(ev->data.add.type, 'A', sizeof(ev->data.add.type));
	} else if (!strcmp(word, "devdrop")) {
		ev->eventid = VBUS_PCI_EVENT_DEVDROP;
		ev->data.handle.handle = v;
	} else if (!strcmp(word, "shmsignal")) {
		ev->eventid = VBUS_PCI_EVENT_SHMSIGNAL;
		ev->data.handle.handle = v;
	} else if (!strcmp(word, "shmclose")) {
		ev->eventid = VBUS_PCI_EVENT_SHMCLOSE;
		ev->data.handle.handle = v;
	} else if (!strcmp(word, "raw")) {
		id = v;
		ev->eventid = id;
	} else {
		return -EINVAL;
	}
	return 0;
}

static ssize_t inject_write(struct file *file, const char __user *ubuf,
			    size_t count, loff_t *ppos)
{
	struct vbus_pci_bridge *b = file->private_data;
	struct vbus_pci_event ev;
	char cmd[192];
	size_t n = min(count, sizeof(cmd) - 1);
	int ret;

	if (copy_from_user(cmd, ubuf, n))
		return -EFAULT;
	cmd[n] = '\0';
	ret = parse_event(cmd, &ev);
	if (ret)
		return ret;

	spin_lock_bh(&b->inject_lock);
	if (b->ninject == ARRAY_SIZE(b->inject)) {
		spin_unlock_bh(&b->inject_lock);
		return -EBUSY;
	}
	b->inject[b->ninject++] = ev;
	spin_unlock_bh(&b->inject_lock);

	tasklet_schedule(&b->eventq_tasklet);
	return count;
}

static const struct file_operations inject_fops = {
	.owner = THIS_MODULE,
	.open = simple_open,
	.write = inject_write,
	.llseek = noop_llseek,
};

/* In the eventq tasklet, before the ring. */
void vbus_pci_inject_drain(struct vbus_pci_bridge *b,
			   void (*handle)(struct vbus_pci_bridge *,
					  const struct vbus_pci_event *))
{
	struct vbus_pci_event ev;

	for (;;) {
		spin_lock(&b->inject_lock);
		if (!b->ninject) {
			spin_unlock(&b->inject_lock);
			return;
		}
		ev = b->inject[0];
		b->ninject--;
		memmove(&b->inject[0], &b->inject[1],
			b->ninject * sizeof(b->inject[0]));
		spin_unlock(&b->inject_lock);
		handle(b, &ev);
	}
}

void vbus_pci_debugfs_add(struct vbus_pci_bridge *b)
{
	if (IS_ERR_OR_NULL(vbus_pci_debugfs_root))
		return;
	b->debugfs = debugfs_create_dir(pci_name(b->pdev),
					vbus_pci_debugfs_root);
	debugfs_create_file("inject_event", 0200, b->debugfs, b, &inject_fops);
}

void vbus_pci_debugfs_remove(struct vbus_pci_bridge *b)
{
	/* waits for writers in progress; none can start afterwards */
	debugfs_remove_recursive(b->debugfs);
	b->debugfs = NULL;
}

void vbus_pci_debugfs_init(void)
{
	vbus_pci_debugfs_root = debugfs_create_dir(VBUS_PCI_DRV_NAME, NULL);
}

void vbus_pci_debugfs_exit(void)
{
	debugfs_remove_recursive(vbus_pci_debugfs_root);
}
