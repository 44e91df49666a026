/* qmgr-sim: run the queue manager's scheduler core against a scenario of
 * simulated destinations and message arrivals on a virtual clock
 * (man/qmgr-sim.1, doc/qmgr-sim.md). */
#include <stdio.h>
#include <string.h>
#include "sim.h"
#include "log.h"

static void usage(void)
{
	fprintf(stderr, "usage: qmgr-sim [-v] [--csv] [--latency] [--order] "
	    "[--summary] [--check] SCENARIO\n");
}

int main(int argc, char **argv)
{
	sim_opts_t o;
	const char *path = NULL;
	str_t err = STR_INIT;
	sim_t *sim;

	log_init("qmgr-sim");
	memset(&o, 0, sizeof(o));
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "--csv") == 0)
			o.csv = true;
		else if (strcmp(a, "--latency") == 0)
			o.latency = true;
		else if (strcmp(a, "--order") == 0)
			o.order = true;
		else if (strcmp(a, "--summary") == 0)
			o.summary = true;
		else if (strcmp(a, "--check") == 0)
			o.check = true;
		else if (strcmp(a, "-v") == 0)
			log_verbose++;
		else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			usage();
			return 0;
		} else if (a[0] == '-' && a[1] != 0) {
			fprintf(stderr, "qmgr-sim: unknown option %s\n", a);
			usage();
			return 2;
		} else if (path == NULL)
			path = a;
		else {
			usage();
			return 2;
		}
	}
	if (path == NULL) {
		usage();
		return 2;
	}
	if ((sim = sim_load(path, &err)) == NULL) {
		fprintf(stderr, "qmgr-sim: %s\n", str_cstr(&err));
		str_release(&err);
		return 2;
	}
	str_release(&err);
	sim_run(sim, &o, stdout);
	sim_free(sim);
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, "qmgr-sim: write error on standard output\n");
		return 1;
	}
	return 0;
}
