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
 * The launcher is a child subreaper: whatever the program starts and orphans — a daemon that
 * double-forks, calls setsid or moves itself out of the run's cgroup — becomes the launcher's
 * child. When the program ends, and when the launcher gets SIGTERM (from the harness stopping
 * the run, or PDEATHSIG when the harness dies, even by SIGKILL), the launcher kills every
 * descendant it has and reaps them before it exits: nothing of the run outlives it, and no
 * leftover keeps the program's stdout open.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
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

/* SIGKILL every direct child (orphans re-parented to us included); how many there were. Only
 * async-signal-safe calls: it also runs in the SIGTERM handler. The launcher has one thread, so
 * /proc/self/task/<pid>/children lists all its children. */
static int kill_children(void) {
    char path[64], buf[4096];
    int len = 0, killed = 0;
    const char *prefix = "/proc/self/task/";
    for (const char *c = prefix; *c; c++)
        path[len++] = *c;
    char digits[16];
    int nd = 0;
    for (long v = (long)getpid(); v > 0; v /= 10)
        digits[nd++] = (char)('0' + v % 10);
    while (nd > 0)
        path[len++] = digits[--nd];
    for (const char *c = "/children"; *c; c++)
        path[len++] = *c;
    path[len] = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = 0;
    long pid = 0;
    for (ssize_t i = 0; i <= n; i++) {
        if (buf[i] >= '0' && buf[i] <= '9') {
            pid = pid * 10 + (buf[i] - '0');
        } else if (pid > 0) {
            kill((pid_t)pid, SIGKILL);
            killed++;
            pid = 0;
        }
    }
    return killed;
}

/* Kill and reap every descendant: a killed child's own children are re-parented to us, so repeat
 * until there is no child left (a full list: more than the 4 KiB read shows come next round). */
static void kill_descendants(void) {
    for (;;) {
        kill_children();
        pid_t r = waitpid(-1, NULL, 0);
        if (r < 0 && errno == ECHILD)
            return;
    }
}

static volatile sig_atomic_t stop_requested = 0;

/* SIGTERM: the run is over. The handler only notes it; the main loop (its wait4 interrupted, no
 * SA_RESTART) kills every descendant, reaps the program with its own status and rusage, reports
 * them and ends the way the program did. */
static void on_stop(int sig) {
    (void)sig;
    stop_requested = 1;
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

    /* The harness going away (even by SIGKILL) must not leave the program running; orphans of
     * the program become our children, so that we can end them too. */
    struct sigaction stop = {0};
    stop.sa_handler = on_stop;
    sigemptyset(&stop.sa_mask);
    sigaction(SIGTERM, &stop, NULL); /* no SA_RESTART: wait4 returns EINTR */
    signal(SIGPIPE, SIG_IGN); /* a harness gone mid-report must not stop the cleanup */
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    if (getppid() == 1)
        return 128 + SIGTERM; /* the harness already died before prctl */

    /* The wall time is the program's own, from its exec to its end: the child notes the moment just
     * before execvp in a page it shares with us. Joining the cgroup (a cgroup migration waits for an
     * RCU grace period: 10-20 ms on this VM) and pinning happen before it, outside the figure; an
     * outside whole-process timer (hyperfine) pays only its own fork and exec. */
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    struct timespec *exec_at = mmap(NULL, sizeof *exec_at, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (exec_at == MAP_FAILED)
        exec_at = NULL;
    else
        *exec_at = t0;
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "corobench: fork failed: %s\n", strerror(errno));
        return 127;
    }
    if (pid == 0) {
        signal(SIGTERM, SIG_DFL);
        signal(SIGPIPE, SIG_DFL); /* an ignored signal would stay ignored across exec */
        prctl(PR_SET_PDEATHSIG, 0);
        for (int k = 0; k < n_cgroups; k++)
            join_cgroup(cgroups[k]);
        if (cpus && sched_setaffinity(0, sizeof set, &set) != 0) {
            say("pin-failed %s%s\n", strerror(errno), "");
            _exit(126);
        }
        close(report);
        if (exec_at)
            clock_gettime(CLOCK_MONOTONIC, exec_at);
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
    /* Reap any child: orphans that end before the program are re-parented to us and reaped here
     * (no zombies pile up); the program's own rusage comes with its own reaping. */
    for (;;) {
        if (stop_requested)
            kill_children();
        pid_t r = wait4(-1, &status, 0, &ru);
        if (r == pid)
            break;
        if (r < 0 && errno != EINTR) {
            fprintf(stderr, "corobench: wait4 failed: %s\n", strerror(errno));
            return 127;
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (exec_at)
        t0 = *exec_at; /* set by the child just before exec (still the fork time if exec never came) */
    long long wall = (long long)(t1.tv_sec - t0.tv_sec) * 1000000000LL + (t1.tv_nsec - t0.tv_nsec);
    dprintf(report, "exit %d %ld %ld.%06ld %ld.%06ld %lld\n", status, ru.ru_maxrss,
            (long)ru.ru_utime.tv_sec, (long)ru.ru_utime.tv_usec,
            (long)ru.ru_stime.tv_sec, (long)ru.ru_stime.tv_usec, wall);
    close(report);
    kill_descendants(); /* whatever the program left behind ends with it */
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    signal(WTERMSIG(status), SIG_DFL);
    kill(getpid(), WTERMSIG(status));
    return 128 + WTERMSIG(status);
}
