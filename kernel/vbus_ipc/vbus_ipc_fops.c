// SPDX-License-Identifier: GPL-2.0
/*
 * vbus_ipc.ko, the character device: /dev/vbus-ipcN, one opener at a time.
 *
 *   open     guest_open + 1 in the header (a link's south guest:
 *            south_open), CTRL doorbell: "a process is here"; vbus-hostd
 *            starts a session once the other end (a host process, or the
 *            link's peer guest) is too
 *   ioctl    INFO (the checked layout), WAIT_SESSION (until this open's
 *            session is up, or -EPIPE/-ETIMEDOUT)
 *   mmap     the whole region, shared, offset 0
 *   write    8 bytes: DATA doorbell (what libioq's shm-signal inject does)
 *   read     8 bytes: DATA interrupts since the last read (blocks unless
 *            O_NONBLOCK); poll POLLIN on them, POLLERR once the session
 *            has ended (read/write then -EPIPE)
 *   release  guest_close = guest_open (south_close), CTRL doorbell: the
 *            session ends
 *
 * The session fields of the header are the host's (hostile): each is read
 * once and only decides what this file answers; no address comes from
 * them, and the kernel never reads the rings or the areas at all.
 */
#include <linux/fs.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/poll.h>
#include <linux/sched/signal.h>
#include <linux/uaccess.h>
#include "vbus_ipc_drv.h"

static struct vbus_ipc *file_ipc(struct file *f)
{
	return f->private_data;
}

/* Where this open's session stands. */
static enum vbus_ipc_sess vbus_ipc_sess(struct vbus_ipc *ipc)
{
	struct vbus_ipc_shm *shm = ipc->shm;
	u32 state, session, sopen;

	if (READ_ONCE(ipc->removed))
		return VBUS_IPC_ENDED;
	/*
	 * Acquire: the session number and the rings vbus-hostd formatted are
	 * read after the state; pairs with its release store of the state
	 * in session_start() (userspace/hostd/devices/vbus_ipc/vbus_ipc_dev.c).
	 * virt_: the other side is a host process, not a CPU of this kernel
	 * (a CONFIG_SMP=n guest still needs the barrier), as everywhere else
	 * the guest orders against the host.
	 */
	state = virt_load_acquire(&shm->state);
	session = READ_ONCE(shm->session);
	sopen = READ_ONCE(*ipc->served_word);
	if (READ_ONCE(ipc->served))
		return state == VBUS_IPC_STATE_ACTIVE &&
		       session == ipc->session && sopen == ipc->my_open ?
		       VBUS_IPC_UP : VBUS_IPC_ENDED;
	if (sopen != ipc->my_open)
		return VBUS_IPC_WAITING;
	if (state == VBUS_IPC_STATE_ACTIVE)
		return VBUS_IPC_UP;
	return state == VBUS_IPC_STATE_ENDED ? VBUS_IPC_ENDED :
					       VBUS_IPC_WAITING;
}

static int vbus_ipc_open(struct inode *inode, struct file *f)
{
	struct miscdevice *misc = f->private_data;
	struct vbus_ipc *ipc = container_of(misc, struct vbus_ipc, misc);
	int ret = 0;

	mutex_lock(&ipc->lock);
	if (ipc->removed) {
		ret = -ENODEV;
	} else if (ipc->busy) {
		ret = -EBUSY;
	} else {
		ipc->busy = true;
		ipc->served = false;
		ipc->mapping = f->f_mapping;
		atomic64_set(&ipc->irqs, 0);
		ipc->my_open = READ_ONCE(*ipc->open_word) + 1;
		WRITE_ONCE(*ipc->open_word, ipc->my_open);
		kref_get(&ipc->ref);
		f->private_data = ipc;
		vbus_ipc_doorbell(ipc, VBUS_IPC_VEC_CTRL);
	}
	mutex_unlock(&ipc->lock);
	if (!ret)
		nonseekable_open(inode, f);
	return ret;
}

static int vbus_ipc_release_file(struct inode *inode, struct file *f)
{
	struct vbus_ipc *ipc = file_ipc(f);

	mutex_lock(&ipc->lock);
	if (!ipc->removed) {
		WRITE_ONCE(*ipc->close_word, ipc->my_open);
		vbus_ipc_doorbell(ipc, VBUS_IPC_VEC_CTRL);
	}
	ipc->busy = false;
	ipc->mapping = NULL;
	mutex_unlock(&ipc->lock);
	kref_put(&ipc->ref, vbus_ipc_release);
	return 0;
}

static long vbus_ipc_wait_session(struct vbus_ipc *ipc, unsigned long ms)
{
	long t = ms == 0xffffffffUL ? MAX_SCHEDULE_TIMEOUT :
				      (long)msecs_to_jiffies(ms);
	enum vbus_ipc_sess s;

	t = wait_event_interruptible_timeout(ipc->wq,
					     vbus_ipc_sess(ipc) != VBUS_IPC_WAITING,
					     t);
	if (t < 0)
		return t;
	mutex_lock(&ipc->lock);
	s = vbus_ipc_sess(ipc);
	if (s == VBUS_IPC_UP && !ipc->served) {
		ipc->session = READ_ONCE(ipc->shm->session);
		WRITE_ONCE(ipc->served, true);
	}
	mutex_unlock(&ipc->lock);
	if (s == VBUS_IPC_WAITING)
		return -ETIMEDOUT;
	return s == VBUS_IPC_UP ? 0 : -EPIPE;
}

static long vbus_ipc_info(struct vbus_ipc *ipc, void __user *arg)
{
	struct vbus_ipc_info info;

	memset(&info, 0, sizeof(info));
	info.size = ipc->size;
	info.region_id = ipc->region_id;
	info.layout = ipc->lay;
	info.session = ipc->session;
	info.side = ipc->side;
	memcpy(info.service, ipc->service, sizeof(info.service));
	return copy_to_user(arg, &info, sizeof(info)) ? -EFAULT : 0;
}

static long vbus_ipc_ioctl(struct file *f, unsigned int cmd, unsigned long arg)
{
	struct vbus_ipc *ipc = file_ipc(f);

	switch (cmd) {
	case VBUS_IPC_IOC_INFO:
		return vbus_ipc_info(ipc, (void __user *)arg);
	case VBUS_IPC_IOC_WAIT_SESSION:
		return vbus_ipc_wait_session(ipc, arg);
	default:
		return -ENOTTY;
	}
}

static ssize_t vbus_ipc_read(struct file *f, char __user *buf, size_t len,
			     loff_t *pos)
{
	struct vbus_ipc *ipc = file_ipc(f);
	u64 n;
	int ret;

	if (len < sizeof(n))
		return -EINVAL;
	for (;;) {
		if (vbus_ipc_sess(ipc) != VBUS_IPC_UP)
			return -EPIPE;
		n = atomic64_xchg(&ipc->irqs, 0);
		if (n)
			break;
		if (f->f_flags & O_NONBLOCK)
			return -EAGAIN;
		ret = wait_event_interruptible(ipc->wq,
					       atomic64_read(&ipc->irqs) ||
					       vbus_ipc_sess(ipc) != VBUS_IPC_UP);
		if (ret)
			return ret;
	}
	return copy_to_user(buf, &n, sizeof(n)) ? -EFAULT : sizeof(n);
}

static ssize_t vbus_ipc_write(struct file *f, const char __user *buf,
			      size_t len, loff_t *pos)
{
	struct vbus_ipc *ipc = file_ipc(f);
	ssize_t ret = sizeof(u64);

	if (len < sizeof(u64))
		return -EINVAL;
	mutex_lock(&ipc->lock);
	if (vbus_ipc_sess(ipc) != VBUS_IPC_UP)
		ret = -EPIPE;
	else
		vbus_ipc_doorbell(ipc, VBUS_IPC_VEC_DATA);
	mutex_unlock(&ipc->lock);
	return ret;
}

static __poll_t vbus_ipc_poll(struct file *f, poll_table *wait)
{
	struct vbus_ipc *ipc = file_ipc(f);
	__poll_t mask = 0;

	poll_wait(f, &ipc->wq, wait);
	if (atomic64_read(&ipc->irqs))
		mask |= EPOLLIN | EPOLLRDNORM;
	if (READ_ONCE(ipc->served) && vbus_ipc_sess(ipc) != VBUS_IPC_UP)
		mask |= EPOLLERR | EPOLLHUP;
	return mask;
}

static int vbus_ipc_mmap(struct file *f, struct vm_area_struct *vma)
{
	struct vbus_ipc *ipc = file_ipc(f);
	int ret;

	if (!(vma->vm_flags & VM_SHARED))
		return -EINVAL;
	mutex_lock(&ipc->lock);
	/* the whole region only: offsets into it are the processes' business */
	ret = ipc->removed ? -ENODEV :
	      vm_iomap_memory(vma, ipc->bar2, ipc->size);
	mutex_unlock(&ipc->lock);
	return ret;
}

static const struct file_operations vbus_ipc_fops = {
	.owner = THIS_MODULE,
	.open = vbus_ipc_open,
	.release = vbus_ipc_release_file,
	.unlocked_ioctl = vbus_ipc_ioctl,
	.read = vbus_ipc_read,
	.write = vbus_ipc_write,
	.poll = vbus_ipc_poll,
	.mmap = vbus_ipc_mmap,
	.llseek = no_llseek,
};

/*
 * /sys/class/misc/vbus-ipcN/{service,side}: what the channel is, without
 * opening it (an open starts a session): libioq's ioq_vchan_*_init find
 * a channel by name with them. Both are our probe-time copies.
 */
static struct vbus_ipc *dev_ipc(struct device *dev)
{
	struct miscdevice *misc = dev_get_drvdata(dev);

	return container_of(misc, struct vbus_ipc, misc);
}

static ssize_t service_show(struct device *dev, struct device_attribute *attr,
			    char *buf)
{
	return sysfs_emit(buf, "%s\n", dev_ipc(dev)->service);
}
static DEVICE_ATTR_RO(service);

static ssize_t side_show(struct device *dev, struct device_attribute *attr,
			 char *buf)
{
	return sysfs_emit(buf, "%s\n", dev_ipc(dev)->side == VBUS_IPC_SIDE_SOUTH ?
			  "south" : "north");
}
static DEVICE_ATTR_RO(side);

static struct attribute *vbus_ipc_attrs[] = {
	&dev_attr_service.attr,
	&dev_attr_side.attr,
	NULL,
};
ATTRIBUTE_GROUPS(vbus_ipc);

int vbus_ipc_chardev_add(struct vbus_ipc *ipc)
{
	int ret;

	snprintf(ipc->name, sizeof(ipc->name), "vbus-ipc%d", ipc->index);
	ipc->misc.minor = MISC_DYNAMIC_MINOR;
	ipc->misc.name = ipc->name;
	ipc->misc.fops = &vbus_ipc_fops;
	ipc->misc.parent = &ipc->pdev->dev;
	ipc->misc.groups = vbus_ipc_groups;
	ret = misc_register(&ipc->misc);
	if (!ret)
		ipc->misc_registered = true;
	return ret;
}

/*
 * Shutdown (reboot, poweroff, kexec): a file still open will never be
 * released, so end its session now as release would (guest_close, CTRL
 * doorbell): the host process learns the guest side is gone instead of
 * waiting on a peer that vanished with the kernel. The file then answers
 * as after remove (-EPIPE, -ENODEV); nothing is freed.
 */
void vbus_ipc_chardev_quiesce(struct vbus_ipc *ipc)
{
	mutex_lock(&ipc->lock);
	if (ipc->busy && !ipc->removed) {
		WRITE_ONCE(*ipc->close_word, ipc->my_open);
		vbus_ipc_doorbell(ipc, VBUS_IPC_VEC_CTRL);
	}
	WRITE_ONCE(ipc->removed, true);
	mutex_unlock(&ipc->lock);
	wake_up_interruptible_all(&ipc->wq);
}

void vbus_ipc_chardev_remove(struct vbus_ipc *ipc)
{
	if (ipc->misc_registered)
		misc_deregister(&ipc->misc);
	ipc->misc_registered = false;
	mutex_lock(&ipc->lock);
	WRITE_ONCE(ipc->removed, true);
	/* the region is about to stop being ours to hand out */
	if (ipc->mapping)
		unmap_mapping_range(ipc->mapping, 0, 0, 1);
	mutex_unlock(&ipc->lock);
	wake_up_interruptible_all(&ipc->wq);
}
