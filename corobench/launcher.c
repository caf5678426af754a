/* corobench-launch: run one program and report its own rusage.
 *
 * Why: a child forked from the harness (a Python process with its libraries loaded) starts with
 * the harness's resident pages, and Linux records that high-water mark into the child's
 * ru_maxrss at exec. Forking from this small launcher instead keeps the figure the program's own.
 *
 * usage: corobench-launch REPORT_FD PROGRAM [ARGS...]
 * Writes "status maxrss_kb utime_s stime_s wall_ns" to REPORT_FD when the program ends, then exits
 * the way the program did (same code, or the same signal).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: corobench-launch REPORT_FD PROGRAM [ARGS...]\n");
        return 127;
    }
    int report = atoi(argv[1]);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "corobench: fork failed: %s\n", strerror(errno));
        return 127;
    }
    if (pid == 0) {
        close(report);
        execvp(argv[2], argv + 2);
        fprintf(stderr, "corobench: cannot run %s: %s\n", argv[2], strerror(errno));
        _exit(127);
    }
    int status;
    struct rusage ru;
    while (wait4(pid, &status, 0, &ru) < 0) {
        if (errno != EINTR) {
            fprintf(stderr, "corobench: wait4 failed: %s\n", strerror(errno));
            return 127;
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    long long wall = (long long)(t1.tv_sec - t0.tv_sec) * 1000000000LL + (t1.tv_nsec - t0.tv_nsec);
    dprintf(report, "%d %ld %ld.%06ld %ld.%06ld %lld\n", status, ru.ru_maxrss,
            (long)ru.ru_utime.tv_sec, (long)ru.ru_utime.tv_usec,
            (long)ru.ru_stime.tv_sec, (long)ru.ru_stime.tv_usec, wall);
    close(report);
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    signal(WTERMSIG(status), SIG_DFL);
    kill(getpid(), WTERMSIG(status));
    return 128 + WTERMSIG(status);
}
