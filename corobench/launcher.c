/* corobench-launch: start one program pinned and inside its cgroup; report its own rusage.
 *
 * Why a launcher: a child forked from the harness (a Python process with its libraries loaded)
 * starts with the harness's resident pages, and Linux records that high-water mark into the
 * child's ru_maxrss at exec. Forking from this small program keeps the figure the program's own,
 * and keeps Python out of the code between fork and exec (pinning and the cgroup join happen
 * here, in the child, before exec).
 *
 * usage: corobench-launch REPORT_FD [-c CPU,CPU,...] [-g CGROUP_DIR]... -- PROGRAM [ARGS...]
 *
 * Report lines written to REPORT_FD (each under PIPE_BUF, so lines never interleave):
 *   pid PID                      the program's pid, as soon as it is forked
 *   cgroup-failed DIR: MESSAGE   the program could not join that cgroup (it runs without it)
 *   pin-failed MESSAGE           sched_setaffinity failed (the program does not run: exit 126)
 *   exec-failed MESSAGE          exec failed (exit 127)
 *   exit STATUS MAXRSS_KB UTIME_S STIME_S WALL_NS   when the program ended
 * Then the launcher exits the way the program did (same code, or the same signal).
 *
 * If the harness dies (even by SIGKILL) the kernel sends this launcher SIGTERM (PDEATHSIG); it
 * then kills its whole process group (it leads it; the program is in it), so nothing of the run
 * is left behind.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_CGROUPS 4

static int report = -1;
static pid_t child = 0;

static void say(const char *fmt, const char *a, const char *b) {
    char line[512];
    int n = snprintf(line, sizeof line, fmt, a, b);
    if (n > (int)sizeof line - 1) {
        n = sizeof line - 1;
        line[n - 1] = '\n';
    }
    if (report >= 0 && write(report, line, n) < 0) {
        /* nothing to do: the harness treats a missing line as "not measured" */
    }
}

static void on_parent_death(int sig) {
    (void)sig;
    /* The harness started us as the leader of a new session and process group, which the
     * program and its children share: kill all of it, ourselves included. */
    kill(0, SIGKILL);
    _exit(128 + SIGTERM);
}

static int parse_cpus(const char *text, cpu_set_t *set) {
    CPU_ZERO(set);
    const char *p = text;
    while (*p) {
        char *end;
        long cpu = strtol(p, &end, 10);
        if (end == p || cpu < 0 || cpu >= CPU_SETSIZE)
            return -1;
        CPU_SET((int)cpu, set);
        p = end;
        if (*p == ',')
            p++;
        else if (*p)
            return -1;
    }
    return 0;
}

/* In the child, before exec: join each cgroup (writing our pid to cgroup.procs). */
static void join_cgroup(const char *dir) {
    char path[4096], pid[32];
    snprintf(path, sizeof path, "%s/cgroup.procs", dir);
    snprintf(pid, sizeof pid, "%d", (int)getpid());
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0 || write(fd, pid, strlen(pid)) < 0) {
        char msg[256];
        snprintf(msg, sizeof msg, "%s", strerror(errno));
        say("cgroup-failed %s: %s\n", dir, msg);
    }
    if (fd >= 0)
        close(fd);
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: corobench-launch REPORT_FD [-c CPUS] [-g CGROUP]... -- PROGRAM [ARGS...]\n");
        return 127;
    }
    report = atoi(argv[1]);
    const char *cpus = NULL;
    const char *cgroups[MAX_CGROUPS];
    int n_cgroups = 0;
    int i = 2;
    for (; i < argc && strcmp(argv[i], "--") != 0; i++) {
        if (strcmp(argv[i], "-c") == 0 && i + 1 < argc)
            cpus = argv[++i];
        else if (strcmp(argv[i], "-g") == 0 && i + 1 < argc && n_cgroups < MAX_CGROUPS)
            cgroups[n_cgroups++] = argv[++i];
        else {
            fprintf(stderr, "corobench-launch: bad option %s\n", argv[i]);
            return 127;
        }
    }
    if (i + 1 >= argc) {
        fprintf(stderr, "corobench-launch: no program after --\n");
        return 127;
    }
    char **program = argv + i + 1;
    cpu_set_t set;
    if (cpus && parse_cpus(cpus, &set) != 0) {
        fprintf(stderr, "corobench-launch: bad CPU list %s\n", cpus);
        return 127;
    }

    /* The harness going away (even by SIGKILL) must not leave the program running. */
    signal(SIGTERM, on_parent_death);
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() == 1)
        return 128 + SIGTERM; /* the harness already died before prctl */

    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "corobench: fork failed: %s\n", strerror(errno));
        return 127;
    }
    if (pid == 0) {
        signal(SIGTERM, SIG_DFL);
        prctl(PR_SET_PDEATHSIG, 0);
        for (int k = 0; k < n_cgroups; k++)
            join_cgroup(cgroups[k]);
        if (cpus && sched_setaffinity(0, sizeof set, &set) != 0) {
            say("pin-failed %s%s\n", strerror(errno), "");
            _exit(126);
        }
        close(report);
        execvp(program[0], program);
        char msg[300];
        snprintf(msg, sizeof msg, "cannot run %s: %s", program[0], strerror(errno));
        fprintf(stderr, "corobench: %s\n", msg);
        say("exec-failed %s%s\n", msg, "");
        _exit(127);
    }
    child = pid;
    char pidtext[32];
    snprintf(pidtext, sizeof pidtext, "%d", (int)pid);
    say("pid %s%s\n", pidtext, "");

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
    dprintf(report, "exit %d %ld %ld.%06ld %ld.%06ld %lld\n", status, ru.ru_maxrss,
            (long)ru.ru_utime.tv_sec, (long)ru.ru_utime.tv_usec,
            (long)ru.ru_stime.tv_sec, (long)ru.ru_stime.tv_usec, wall);
    close(report);
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    signal(WTERMSIG(status), SIG_DFL);
    kill(getpid(), WTERMSIG(status));
    return 128 + WTERMSIG(status);
}
