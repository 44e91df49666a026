/* Incremental queue directory scans (qmgr_scan.h). */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include "log.h"
#include "mem.h"
#include "qmgr_scan.h"

void qmgr_scan_init(qmgr_scan_t *sc, const char *queue_dir, const char *queue)
{
	memset(sc, 0, sizeof(*sc));
	str_setf(&sc->path, "%s/%s", queue_dir, queue);
	sc->dir = str_steal(&sc->path);
}

static void close_all(qmgr_scan_t *sc)
{
	while (sc->depth > 0) {
		sc->depth--;
		closedir(sc->level[sc->depth]);
		sc->level[sc->depth] = NULL;
	}
}

void qmgr_scan_free(qmgr_scan_t *sc)
{
	close_all(sc);
	free(sc->dir);
	sc->dir = NULL;
	str_release(&sc->path);
}

bool qmgr_scan_running(const qmgr_scan_t *sc)
{
	return sc->depth > 0;
}

static void start_walk(qmgr_scan_t *sc)
{
	DIR *d = opendir(sc->dir);

	sc->found = 0;
	if (d == NULL) {
		log_warning("scan %s: %s", sc->dir, strerror(errno));
		return;
	}
	str_set(&sc->path, sc->dir);
	sc->level[0] = d;
	sc->plen[0] = str_len(&sc->path);
	sc->depth = 1;
}

void qmgr_scan_request(qmgr_scan_t *sc, bool flag)
{
	if (qmgr_scan_running(sc)) {
		sc->again = true;
		sc->again_flag |= flag;
		sc->flag |= flag;
		return;
	}
	sc->flag = flag;
	start_walk(sc);
}

/* A hashed subdirectory name: one character of the queue ID alphabet. */
static bool hash_dir_name(const char *name)
{
	return name[0] != 0 && name[1] == 0 && strchr(queue_id_alphabet, name[0]);
}

static bool is_dir(const struct dirent *de, const char *path)
{
	struct stat st;
#ifdef DT_DIR
	if (de->d_type == DT_DIR)
		return true;
	if (de->d_type != DT_UNKNOWN && de->d_type != DT_LNK)
		return false;
#else
	(void)de;
#endif
	/* Never follow a symbolic link out of the queue. */
	return lstat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

bool qmgr_scan_next(qmgr_scan_t *sc, char id[QUEUE_ID_SIZE])
{
	bool restarted = false;

	for (;;) {
		struct dirent *de;
		int lv;

		if (sc->depth == 0) {
			if (!sc->again || restarted)
				return false;
			sc->again = false;
			sc->flag = sc->again_flag;
			sc->again_flag = false;
			restarted = true;
			start_walk(sc);
			continue;
		}
		lv = sc->depth - 1;
		errno = 0;
		de = readdir(sc->level[lv]);
		if (de == NULL) {
			if (errno)
				log_warning("scan %s: %s", sc->dir, strerror(errno));
			closedir(sc->level[lv]);
			sc->level[lv] = NULL;
			sc->depth--;
			continue;
		}
		str_truncate(&sc->path, sc->plen[lv]);
		str_putc(&sc->path, '/');
		str_cat(&sc->path, de->d_name);
		if (queue_id_valid(de->d_name)) {
			bcopy_str(id, QUEUE_ID_SIZE, de->d_name);
			sc->found++;
			return true;
		}
		if (sc->depth <= QUEUE_HASH_MAX_DEPTH && hash_dir_name(de->d_name)
		    && is_dir(de, str_cstr(&sc->path))) {
			DIR *d = opendir(str_cstr(&sc->path));
			if (d == NULL) {
				log_warning("scan %s: %s", str_cstr(&sc->path),
				    strerror(errno));
				continue;
			}
			sc->level[sc->depth] = d;
			sc->plen[sc->depth] = str_len(&sc->path);
			sc->depth++;
		}
	}
}
