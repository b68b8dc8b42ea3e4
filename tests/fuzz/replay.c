// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Runs fuzz inputs (files, or every file of a directory) through the fuzz
 * target once each, without libFuzzer: the regression test for the kept
 * reproducers (corpus/) and seeds (seeds/) in any build, with or without
 * sanitizers.
 */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
void fuzz_guest_report(FILE *f);
static int verbose;

static int run_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf;
	long n;

	if (!f) {
		perror(path);
		return -1;
	}
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc(n > 0 ? (size_t)n : 1);
	if (!buf || (n > 0 && fread(buf, 1, (size_t)n, f) != (size_t)n)) {
		fprintf(stderr, "%s: read error\n", path);
		fclose(f);
		free(buf);
		return -1;
	}
	fclose(f);
	LLVMFuzzerTestOneInput(buf, n > 0 ? (size_t)n : 0);
	free(buf);
	if (verbose) {
		printf("== %s\n", path);
		fuzz_guest_report(stdout);
	}
	return 0;
}

int main(int argc, char **argv)
{
	int i, ran = 0, errs = 0;

	/* absolute: some targets run in a private directory of their own */
	for (i = 1; i < argc; i++) {
		char *abs = realpath(argv[i], NULL);

		if (abs)
			argv[i] = abs;	/* for the life of the program */
	}
	for (i = 1; i < argc; i++) {
		struct stat st;

		if (!strcmp(argv[i], "-v")) {
			verbose = 1;
			continue;
		}
		if (stat(argv[i], &st) < 0) {
			/* corpus/NAME exists once a crash was kept */
			if (errno == ENOENT && strstr(argv[i], "/corpus/"))
				continue;
			perror(argv[i]);
			errs++;
			continue;
		}
		if (S_ISDIR(st.st_mode)) {
			struct dirent **names;
			int n = scandir(argv[i], &names, NULL, alphasort), j;

			for (j = 0; j < n; j++) {
				char path[4096];

				if (names[j]->d_name[0] != '.') {
					snprintf(path, sizeof(path), "%s/%s", argv[i],
						 names[j]->d_name);
					errs += run_file(path) < 0;
					ran++;
				}
				free(names[j]);
			}
			free(names);
		} else {
			errs += run_file(argv[i]) < 0;
			ran++;
		}
	}
	printf("replayed %d input(s), %d error(s)\n", ran, errs);
	/* no input at all: a wrong path, not a pass */
	return errs || !ran ? 1 : 0;
}
