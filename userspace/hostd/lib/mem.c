// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* vbus-hostd: guest RAM (see mem.h). */
#include <dirent.h>
#include <stdarg.h>
#include <stdbool.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "log.h"
#include "mem.h"

#define GIB (1ull << 30)
#define FOUR_GIB (4ull << 30)

__u64 hostd_mem_lowmem(enum hostd_machine machine, __u64 ram)
{
	/* QEMU 7.2 pc_q35_init / pc_init1 */
	if (machine == HOSTD_MACHINE_PC)
		return ram >= 3 * GIB + GIB / 2 ? 3 * GIB : ram;
	return ram >= 2 * GIB + 3 * GIB / 4 ? 2 * GIB : ram;
}

void hostd_mem_layout(struct hostd_mem *m, __u64 size, __u64 lowmem)
{
	if (lowmem > size)
		lowmem = size;
	m->size = size;
	m->nblocks = 0;
	m->blk[m->nblocks++] = (struct hostd_memblock){
		.gpa = 0, .size = lowmem, .off = 0 };
	if (size > lowmem)
		m->blk[m->nblocks++] = (struct hostd_memblock){
			.gpa = FOUR_GIB, .size = size - lowmem, .off = lowmem };
}

/* ---- who holds the lock --------------------------------------------------- */

/* Does /proc/PID/fdinfo/FD show an OFD lock? */
static bool fd_has_ofd_lock(const char *pid, const char *fd)
{
	char path[600], line[256];
	bool found = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%s/fdinfo/%s", pid, fd);
	f = fopen(path, "r");
	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f))
		found = !strncmp(line, "lock:", 5) && strstr(line, "OFDLCK");
	fclose(f);
	return found;
}

/* Does process @pid have an fd on @st's file with an OFD lock? */
static bool pid_holds(const char *pid, const struct stat *st)
{
	char path[300];
	struct dirent *e;
	bool found = false;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%s/fd", pid);
	d = opendir(path);
	if (!d)
		return false;	/* gone, or not ours to look at */
	while (!found && (e = readdir(d))) {
		char fdpath[600];
		struct stat fst;

		snprintf(fdpath, sizeof(fdpath), "%s/%s", path, e->d_name);
		if (e->d_name[0] == '.' || stat(fdpath, &fst) < 0)
			continue;
		found = fst.st_dev == st->st_dev && fst.st_ino == st->st_ino &&
			fd_has_ofd_lock(pid, e->d_name);
	}
	closedir(d);
	return found;
}

/*
 * "pid N (comm)" of the process holding an OFD lock on @st's file, found
 * in /proc (F_OFD_GETLK reports no pid for OFD locks); "another process"
 * when /proc does not tell (another user's process).
 */
static void lock_holder(const struct stat *st, char *buf, size_t len)
{
	struct dirent *e;
	DIR *d = opendir("/proc");

	snprintf(buf, len, "another process");
	while (d && (e = readdir(d))) {
		char path[300], comm[32] = "?";
		FILE *f;

		if (e->d_name[0] < '0' || e->d_name[0] > '9' ||
		    !pid_holds(e->d_name, st))
			continue;
		snprintf(path, sizeof(path), "/proc/%s/comm", e->d_name);
		f = fopen(path, "r");
		if (f) {
			if (fgets(comm, sizeof(comm), f))
				comm[strcspn(comm, "\n")] = 0;
			fclose(f);
		}
		if (strtol(e->d_name, NULL, 10) == (long)getpid())
			snprintf(buf, len, "this vbus-hostd (pid %.16s)",
				 e->d_name);
		else
			snprintf(buf, len, "pid %.16s (%s)", e->d_name, comm);
		break;
	}
	if (d)
		closedir(d);
}

/* ---- open ------------------------------------------------------------------- */


/*
 * Guest RAM is the guest: whoever can open its file reads and writes the
 * guest. The daemon creates it 0660 (less its umask) for its own group,
 * the way in of QEMU's user (the unit's Group=vbus; docs/operations.md,
 * "Users"). A file it did not create so (another user got to the name
 * first, or opened it to others or to another group, or put a second
 * name on it) is refused, with what to do about it. Checked on the open
 * descriptor, so nothing can swap the file after the check.
 */
static int mem_owned(const char *path, const struct stat *st, char *err,
		     size_t errlen)
{
	uid_t me = geteuid();
	gid_t group = getegid();

	if (st->st_uid != me)
		return hostd_errf(err, errlen, -EPERM,
			    "RAM file %s is owned by uid %u, not by this daemon's user (uid %u): whoever owns it can read and write the guest's memory; remove it (the daemon creates it) or chown it",
			    path, (unsigned int)st->st_uid, (unsigned int)me);
	if ((st->st_mode & S_IRWXO) ||
	    ((st->st_mode & S_IRWXG) && st->st_gid != group))
		return hostd_errf(err, errlen, -EPERM,
			    "RAM file %s has mode %04o, group %u: other users (or a group not this daemon's, gid %u) could reach the guest's memory; chmod 600 it or remove it (the daemon creates it 0660 for its own group)",
			    path, (unsigned int)(st->st_mode & 07777),
			    (unsigned int)st->st_gid, (unsigned int)group);
	if (st->st_nlink != 1)
		return hostd_errf(err, errlen, -EPERM,
			    "RAM file %s has %lu names (hard links): another name reaches the guest's memory; remove the others or the file",
			    path, (unsigned long)st->st_nlink);
	return 0;
}

int hostd_file_lock(int fd, bool exclusive, char *holder, size_t len)
{
	struct flock fl = { .l_type = exclusive ? F_WRLCK : F_RDLCK,
			    .l_whence = SEEK_SET };
	struct stat st;
	int e;

	if (fcntl(fd, F_OFD_SETLK, &fl) == 0)
		return 0;
	e = errno;
	if (e != EAGAIN && e != EACCES)
		return -e;
	if (fstat(fd, &st) < 0)
		snprintf(holder, len, "another process");
	else
		lock_holder(&st, holder, len);
	return -EBUSY;
}

/* The whole file, for our life: a second daemon gets EAGAIN. */
static int mem_lock(int fd, const char *path, char *err, size_t errlen)
{
	char holder[96];
	int ret = hostd_file_lock(fd, true, holder, sizeof(holder));

	if (ret == -EBUSY)
		return hostd_errf(err, errlen, ret,
			    "RAM file %s is in use: locked by %s (one vbus-hostd per RAM file)",
			    path, holder);
	if (ret < 0)
		return hostd_errf(err, errlen, ret, "RAM file %s: cannot lock it: %s",
			    path, strerror(-ret));
	return 0;
}

/* Grow to @size; a larger file is refused, never shrunk. */
static int mem_size(int fd, const char *path, const struct stat *st,
		    __u64 size, char *err, size_t errlen)
{
	if ((__u64)st->st_size > size)
		return hostd_errf(err, errlen, -EFBIG,
			    "RAM file %s is %llu bytes, larger than size=%llu: refusing to shrink it (QEMU's -m and its memory-backend size must equal size=)",
			    path, (unsigned long long)st->st_size,
			    (unsigned long long)size);
	if ((__u64)st->st_size < size && ftruncate(fd, (off_t)size) < 0)
		return hostd_errf(err, errlen, -errno, "RAM file %s: cannot size it to %llu bytes: %s",
			    path, (unsigned long long)size, strerror(errno));
	return 0;
}

int hostd_mem_open(struct hostd_mem *m, const char *path, int fd, __u64 size,
		   enum hostd_machine machine, char *err, size_t errlen)
{
	struct stat st;
	void *p;
	bool by_path = fd < 0;
	int ret;

	memset(m, 0, sizeof(*m));
	m->fd = -1;
	if (fd >= 0 && (!path || !*path))
		path = "(fd)";
	if (by_path) {
		fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0660);
		if (fd < 0)
			return hostd_errf(err, errlen, -errno, "RAM file %s: %s", path,
				    strerror(errno));
	}
	ret = fstat(fd, &st) < 0 ? -errno : 0;
	if (ret)
		hostd_errf(err, errlen, ret, "RAM file %s: %s", path, strerror(-ret));
	else if (!S_ISREG(st.st_mode))
		ret = hostd_errf(err, errlen, -EINVAL, "RAM file %s is not a regular file", path);
	else if (by_path)
		ret = mem_owned(path, &st, err, errlen);
	if (!ret)
		ret = mem_lock(fd, path, err, errlen);
	if (!ret)
		ret = mem_size(fd, path, &st, size, err, errlen);
	if (ret)
		goto out_close;
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE,
		 fd, 0);
	if (p == MAP_FAILED) {
		ret = hostd_errf(err, errlen, -errno, "RAM file %s: mmap: %s", path,
			   strerror(errno));
		goto out_close;
	}
	m->fd = fd;
	m->base = p;
	hostd_mem_layout(m, size, hostd_mem_lowmem(machine, size));
	return 0;

out_close:
	close(fd);	/* drops the lock with the last fd of its description */
	return ret;
}

void hostd_mem_close(struct hostd_mem *m)
{
	if (m->base)
		munmap(m->base, m->size);
	if (m->fd >= 0)
		close(m->fd);
	m->base = NULL;
	m->fd = -1;
}

void *hostd_mem_gpa(const struct hostd_mem *m, __u64 gpa, __u64 len)
{
	unsigned int i;

	if (!len || !m->base)
		return NULL;
	for (i = 0; i < m->nblocks; i++) {
		const struct hostd_memblock *b = &m->blk[i];
		__u64 rel;

		if (gpa < b->gpa)
			continue;
		rel = gpa - b->gpa;
		/* written so that nothing can overflow */
		if (rel >= b->size || len > b->size - rel)
			continue;
		return m->base + b->off + rel;
	}
	return NULL;
}
