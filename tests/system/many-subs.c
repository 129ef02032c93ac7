/* SPDX-License-Identifier: Apache-2.0 */
/*
 * many-subs: holds many subscriptions open for the reply-size tests.
 * Subscribes PER times (max_held 1) to each reorder stream the daemon
 * lists,
 * spread over connections of at most PER_CONN subscriptions each, prints
 * "subscribed=N connections=C" and waits for SIGTERM.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "daqiri_client.h"

#define MS_MAX_CONNS	4096

static volatile sig_atomic_t stop;

static void
on_term(int sig)
{
	(void)sig;
	stop = 1;
}

int
main(int argc, char **argv)
{
	static struct daqiri *conns[MS_MAX_CONNS];
	struct daqiri_sub_opts o = { .size = sizeof(o), .max_held = 1 };
	struct daqiri_sub *sub;
	struct rlimit rl;
	const cJSON *a, *e, *nm;
	cJSON *j;
	char *text = NULL;
	int per, per_conn, nconn = 0, on_conn = 0, total = 0, i, r;

	if (argc != 4 || (per = atoi(argv[2])) < 1 ||
	    (per_conn = atoi(argv[3])) < 1) {
		fprintf(stderr, "usage: many-subs SOCKET PER_STREAM PER_CONN\n");
		return 2;
	}
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	signal(SIGTERM, on_term);
	if ((r = daqiri_connect(argv[1], &conns[nconn++])) < 0 ||
	    (r = daqiri_streams(conns[0], &text)) < 0) {
		fprintf(stderr, "many-subs: streams: %s\n", strerror(-r));
		return 1;
	}
	j = cJSON_Parse(text);
	free(text);
	a = cJSON_GetObjectItemCaseSensitive(j, "streams");
	cJSON_ArrayForEach(e, a) {
		const cJSON *k = cJSON_GetObjectItemCaseSensitive(e, "kind");

		nm = cJSON_GetObjectItemCaseSensitive(e, "name");
		if (!cJSON_IsString(nm) || !cJSON_IsString(k) ||
		    strcmp(k->valuestring, "reorder") != 0)
			continue;
		for (i = 0; i < per; i++) {
			if (on_conn == per_conn) {
				if (nconn == MS_MAX_CONNS) {
					fprintf(stderr, "many-subs: too many "
					    "connections\n");
					return 1;
				}
				r = daqiri_connect(argv[1], &conns[nconn++]);
				if (r < 0) {
					fprintf(stderr, "many-subs: connect: "
					    "%s\n", strerror(-r));
					return 1;
				}
				on_conn = 0;
			}
			r = daqiri_subscribe(conns[nconn - 1], nm->valuestring,
			    &o, &sub);
			if (r < 0) {
				fprintf(stderr, "many-subs: subscribe %s (#%d): "
				    "%s: %s\n", nm->valuestring, i, strerror(-r),
				    daqiri_last_error(conns[nconn - 1]));
				return 1;
			}
			on_conn++;
			total++;
		}
	}
	cJSON_Delete(j);
	printf("subscribed=%d connections=%d\n", total, nconn);
	fflush(stdout);
	while (!stop)
		pause();
	for (i = 0; i < nconn; i++)
		daqiri_disconnect(conns[i]);
	return 0;
}
