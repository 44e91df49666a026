/* plcrash: the other half of libpowerloss.so (see its head for the
 * model; doc/test-tools.md for the use).
 *
 *   plcrash sync PATH...          fsyncs every directory and regular file
 *                                 under each PATH: run with the layer
 *                                 preloaded, it makes the image's baseline
 *                                 (the state after a full sync)
 *   plcrash build IMAGE SRC DST   builds at DST (which must not exist) the
 *                                 tree that SRC (a directory the image
 *                                 covers, identified by its inode) would
 *                                 hold after a power cut now
 *
 * build: every directory gets the entries of its last published listing
 * (none if it was never fsynced); then each cross-directory rename or
 * link in the log that either side's fsync made durable (a listing taken
 * after it) is applied to the side whose listing predates it, in log
 * order; then the tree is written from SRC's listing down: a file gets
 * the content of its last published snapshot (empty if its data was
 * never fsynced), its mode and modification time; a second name of the
 * same file becomes a hard link.  It prints one summary line. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#define SEQ_LEN 21
#define KEY_MAX 96
#define MAX_DEPTH 32

struct ent {
	char type;			/* 'd' or 'f' */
	char key[KEY_MAX];
	unsigned mode;
	struct timespec mtime;
	char name[NAME_MAX + 1];
};

struct dirl {
	char key[KEY_MAX];
	unsigned long long seq;		/* 0: never published */
	struct ent *e;
	size_t n, cap;
	int on_path;			/* being written (cycle guard) */
};

static struct dirl *dirs;
static size_t ndirs, capdirs;

struct made {
	char key[KEY_MAX];
	char path[PATH_MAX];
};
static struct made *mades;
static size_t nmades, capmades;

static unsigned long n_dirs, n_files, n_empty, n_links, n_applied;

static void *xrealloc(void *p, size_t n, size_t size)
{
	void *q = reallocarray(p, n, size);
	if (q == NULL) {
		fprintf(stderr, "plcrash: out of memory\n");
		exit(1);
	}
	return q;
}

static void die(const char *what)
{
	fprintf(stderr, "plcrash: %s: %s\n", what, strerror(errno));
	exit(1);
}

static struct dirl *find_dir(const char *key, int create)
{
	for (size_t i = 0; i < ndirs; i++)
		if (strcmp(dirs[i].key, key) == 0)
			return &dirs[i];
	if (!create)
		return NULL;
	if (ndirs == capdirs) {
		capdirs = capdirs ? 2 * capdirs : 64;
		dirs = xrealloc(dirs, capdirs, sizeof(*dirs));
	}
	memset(&dirs[ndirs], 0, sizeof(dirs[ndirs]));
	snprintf(dirs[ndirs].key, KEY_MAX, "%s", key);
	return &dirs[ndirs++];
}

static struct ent *find_ent(struct dirl *d, const char *name)
{
	for (size_t i = 0; i < d->n; i++)
		if (strcmp(d->e[i].name, name) == 0)
			return &d->e[i];
	return NULL;
}

static struct ent *add_ent(struct dirl *d)
{
	if (d->n == d->cap) {
		d->cap = d->cap ? 2 * d->cap : 16;
		d->e = xrealloc(d->e, d->cap, sizeof(*d->e));
	}
	memset(&d->e[d->n], 0, sizeof(d->e[d->n]));
	return &d->e[d->n++];
}

/* Copies a key, name or similar token: fails when it does not fit. */
static int token(char *dst, size_t size, const char *src, size_t len)
{
	if (len == 0 || len >= size)
		return -1;
	memcpy(dst, src, len);
	dst[len] = '\0';
	return 0;
}

/* One listing line: "T KEY MODE SEC.NSEC NAME". */
static int parse_ent(const char *line, struct ent *e)
{
	char key[KEY_MAX];
	unsigned mode;
	long long sec;
	long nsec;
	int off = 0;

	if (sscanf(line, "%c %95s %o %lld.%ld %n", &e->type, key, &mode, &sec, &nsec, &off) < 5
	    || off == 0 || (e->type != 'd' && e->type != 'f'))
		return -1;
	snprintf(e->key, KEY_MAX, "%s", key);
	e->mode = mode;
	e->mtime.tv_sec = (time_t)sec;
	e->mtime.tv_nsec = nsec;
	return token(e->name, sizeof(e->name), line + off, strlen(line + off));
}

static void load_listing(const char *image, const char *fname)
{
	char path[PATH_MAX], line[PATH_MAX + 2 * KEY_MAX];
	FILE *f;
	struct dirl *d;
	unsigned long lines = 0;

	snprintf(path, sizeof(path), "%s/%s", image, fname);
	if ((f = fopen(path, "r")) == NULL)
		die(path);
	d = find_dir(fname + 2, 1);
	if (fgets(line, sizeof(line), f) == NULL) {
		fclose(f);
		return;
	}
	d->seq = strtoull(line, NULL, 10);
	while (fgets(line, sizeof(line), f) != NULL && lines++ < 100000000UL) {
		struct ent e;
		line[strcspn(line, "\n")] = '\0';
		if (parse_ent(line, &e) == 0)
			*add_ent(d) = e;
		else
			fprintf(stderr, "plcrash: %s: bad line ignored: %s\n", path, line);
	}
	fclose(f);
}

/* A template for a file or directory known by key only. */
static const struct ent *any_ent(const char *key)
{
	for (size_t i = 0; i < ndirs; i++)
		for (size_t j = 0; j < dirs[i].n; j++)
			if (strcmp(dirs[i].e[j].key, key) == 0)
				return &dirs[i].e[j];
	return NULL;
}

/* "R|L SEQ SKEY DKEY IKEY T /SNAME/DNAME" */
static void apply_log(const char *image)
{
	char path[PATH_MAX], line[PATH_MAX + 4 * KEY_MAX];
	FILE *f;
	unsigned long lines = 0;

	snprintf(path, sizeof(path), "%s/renames", image);
	if ((f = fopen(path, "r")) == NULL) {
		if (errno == ENOENT)
			return;
		die(path);
	}
	while (fgets(line, sizeof(line), f) != NULL && lines++ < 100000000UL) {
		char op, type, skey[KEY_MAX], dkey[KEY_MAX], ikey[KEY_MAX];
		char sname[NAME_MAX + 1], dname[NAME_MAX + 1];
		unsigned long long seq, qs, qe;
		struct dirl *s, *d;
		struct ent tmpl, *old, *e;
		char *names, *mid;
		int off = 0;

		line[strcspn(line, "\n")] = '\0';
		if (sscanf(line, "%c %llu %95s %95s %95s %c %n", &op, &seq, skey, dkey, ikey,
		    &type, &off) < 6 || off == 0 || line[off] != '/'
		    || (mid = strchr(line + off + 1, '/')) == NULL) {
			fprintf(stderr, "plcrash: %s: bad line ignored: %s\n", path, line);
			continue;
		}
		names = line + off + 1;
		if (token(sname, sizeof(sname), names, (size_t)(mid - names)) < 0
		    || token(dname, sizeof(dname), mid + 1, strlen(mid + 1)) < 0)
			continue;
		s = find_dir(skey, 0);
		d = find_dir(dkey, 0);
		qs = s ? s->seq : 0;
		qe = d ? d->seq : 0;
		if (qs <= seq && qe <= seq)
			continue;	/* neither side fsynced since: not durable */
		n_applied++;
		memset(&tmpl, 0, sizeof(tmpl));
		tmpl.type = type;
		tmpl.mode = type == 'd' ? 0700 : 0600;
		snprintf(tmpl.key, KEY_MAX, "%s", ikey);
		old = s ? find_ent(s, sname) : NULL;
		if (old != NULL && strcmp(old->key, ikey) == 0)
			tmpl = *old;
		else if (any_ent(ikey) != NULL)
			tmpl = *any_ent(ikey);
		if (op == 'R' && s != NULL && qs < seq && old != NULL
		    && strcmp(old->key, ikey) == 0) {
			*old = s->e[s->n - 1];	/* the source side goes too */
			s->n--;
		}
		if (qe < seq) {
			if (d == NULL)
				d = find_dir(dkey, 1);
			if ((e = find_ent(d, dname)) == NULL)
				e = add_ent(d);
			*e = tmpl;
			snprintf(e->name, sizeof(e->name), "%s", dname);
		}
	}
	fclose(f);
}

static const char *made_path(const char *key)
{
	for (size_t i = 0; i < nmades; i++)
		if (strcmp(mades[i].key, key) == 0)
			return mades[i].path;
	return NULL;
}

static void write_file(const char *image, const struct ent *e, const char *path)
{
	char src[PATH_MAX], buf[65536];
	const char *first = made_path(e->key);
	struct timespec ts[2];
	int in, out;

	if (first != NULL) {
		if (link(first, path) < 0)
			die(path);
		n_links++;
		return;
	}
	snprintf(src, sizeof(src), "%s/f.%s", image, e->key);
	if ((out = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600)) < 0)
		die(path);
	in = open(src, O_RDONLY);
	if (in < 0) {
		if (errno != ENOENT)
			die(src);
		n_empty++;
	} else if (lseek(in, SEQ_LEN, SEEK_SET) != SEQ_LEN) {
		die(src);
	} else {
		for (int i = 0; i < (1 << 24); i++) {
			ssize_t n = read(in, buf, sizeof(buf));
			if (n < 0)
				die(src);
			if (n == 0)
				break;
			if (write(out, buf, (size_t)n) != n)
				die(path);
		}
	}
	if (in >= 0)
		close(in);
	if (fchmod(out, e->mode & 07777) < 0)
		die(path);
	ts[0] = e->mtime;
	ts[1] = e->mtime;
	if (futimens(out, ts) < 0 || close(out) < 0)
		die(path);
	n_files++;
	if (nmades == capmades) {
		capmades = capmades ? 2 * capmades : 256;
		mades = xrealloc(mades, capmades, sizeof(*mades));
	}
	snprintf(mades[nmades].key, KEY_MAX, "%s", e->key);
	snprintf(mades[nmades].path, PATH_MAX, "%s", path);
	nmades++;
}

static void write_dir(const char *image, const char *key, const char *path,
    unsigned mode, int depth)
{
	struct dirl *d = find_dir(key, 0);
	char sub[PATH_MAX];

	if (mkdir(path, 0700) < 0)
		die(path);
	n_dirs++;
	if (d != NULL && !d->on_path && depth < MAX_DEPTH) {
		d->on_path = 1;
		for (size_t i = 0; i < d->n; i++) {
			const struct ent *e = &d->e[i];
			if ((size_t)snprintf(sub, sizeof(sub), "%s/%s", path, e->name) >= sizeof(sub))
				continue;
			if (e->type == 'd')
				write_dir(image, e->key, sub, e->mode, depth + 1);
			else
				write_file(image, e, sub);
		}
		d->on_path = 0;
	}
	if (chmod(path, mode & 07777) < 0)
		die(path);
}

static int build(const char *image, const char *src, const char *dst)
{
	DIR *dir = opendir(image);
	struct dirent *de;
	struct statx sx;
	char key[KEY_MAX];
	unsigned long long bs = 0, bn = 0;

	if (dir == NULL)
		die(image);
	while ((de = readdir(dir)) != NULL)
		if (strncmp(de->d_name, "d.", 2) == 0)
			load_listing(image, de->d_name);
	closedir(dir);
	apply_log(image);
	if (statx(AT_FDCWD, src, 0, STATX_INO | STATX_BTIME | STATX_MODE, &sx) < 0)
		die(src);
	if (sx.stx_mask & STATX_BTIME) {
		bs = (unsigned long long)sx.stx_btime.tv_sec;
		bn = sx.stx_btime.tv_nsec;
	}
	snprintf(key, sizeof(key), "%x.%x.%llx.%llx.%llx", sx.stx_dev_major,
	    sx.stx_dev_minor, (unsigned long long)sx.stx_ino, bs, bn);
	if (find_dir(key, 0) == NULL) {
		fprintf(stderr, "plcrash: %s was never fsynced under the layer "
		    "(no baseline?)\n", src);
		return 1;
	}
	write_dir(image, key, dst, sx.stx_mode, 0);
	printf("plcrash: %s: %lu directories, %lu files (%lu with no synced data), "
	    "%lu more links; %lu renames/links between directories kept by one side's fsync\n",
	    dst, n_dirs, n_files, n_empty, n_links, n_applied);
	return 0;
}

static int sync_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	int fd;
	(void)ftw;
	if (flag != FTW_F && flag != FTW_D && flag != FTW_DP)
		return 0;
	if (!S_ISREG(st->st_mode) && !S_ISDIR(st->st_mode))
		return 0;
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "plcrash: %s: %s\n", path, strerror(errno));
		return 1;
	}
	if (fsync(fd) < 0 && errno != EINVAL) {
		fprintf(stderr, "plcrash: fsync %s: %s\n", path, strerror(errno));
		close(fd);
		return 1;
	}
	close(fd);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 3 && strcmp(argv[1], "sync") == 0) {
		for (int i = 2; i < argc; i++)
			if (nftw(argv[i], sync_one, 32, FTW_PHYS | FTW_DEPTH) != 0)
				return 1;
		return 0;
	}
	if (argc == 5 && strcmp(argv[1], "build") == 0)
		return build(argv[2], argv[3], argv[4]);
	fprintf(stderr, "usage: plcrash sync PATH...\n"
	    "       plcrash build IMAGE SRC DST\n");
	return 2;
}
