/*
 * granule-spawn: the node-agent's native spawn helper (ADR 0009).
 *
 * Started once by AgentProcessSpawner; it starts task processes on the agent's behalf. A fork
 * costs in proportion to the parent's memory: from this process (about 1 MB) it costs next to
 * nothing, from the agent's Node.js process tens of times more.
 *
 * It decides nothing about a task: it executes the launch plan it is handed (planLaunch in
 * src/launch-plan.ts) as Node.js's child_process executes it where this binary is not built.
 * Every task gets stdin from /dev/null, stdout and stderr piped back, no other descriptor,
 * default signal dispositions and an empty signal mask; the plan says whether it starts a new
 * session (setsid) and how long its output is drained after it exits. The frames are described
 * in src/native-helper.protocol.ts. Signals go from the agent straight to the process group. When
 * stdin closes (the agent went away) it exits and leaves the tasks' groups running, as the
 * agent's own death does.
 *
 * Linux only (signalfd, /proc). Plain C99 + POSIX, no dependencies.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CHUNK 65536
#define FLAG_NEW_SESSION 1u
#define MAX_FRAME (64u * 1024u * 1024u)

extern char **environ;

struct task {
  uint32_t id;
  pid_t pid;
  int out_fd, err_fd; /* -1 once closed */
  int exited;
  int code, sig;
  uint32_t drain_ms;
  int64_t drain_deadline; /* ms on the monotonic clock, once the leader exited */
};

static struct task *tasks;
static size_t ntasks, cap;
static unsigned char *inbuf;
static size_t inlen, incap;
static int devnull = -1;

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void put_u32(unsigned char *p, uint32_t v) {
  p[0] = v & 0xff;
  p[1] = (v >> 8) & 0xff;
  p[2] = (v >> 16) & 0xff;
  p[3] = (v >> 24) & 0xff;
}

static uint32_t get_u32(const unsigned char *p) {
  return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

static void write_all(const unsigned char *p, size_t n) {
  while (n > 0) {
    ssize_t w = write(STDOUT_FILENO, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      _exit(0); /* the agent is gone */
    }
    p += w;
    n -= (size_t)w;
  }
}

/* One reply frame: header, then `a` and `b` (either may be empty). */
static void reply(unsigned char type, uint32_t id, const void *a, size_t alen, const void *b, size_t blen) {
  unsigned char head[9];
  put_u32(head, (uint32_t)(5 + alen + blen));
  head[4] = type;
  put_u32(head + 5, id);
  write_all(head, sizeof head);
  if (alen) write_all(a, alen);
  if (blen) write_all(b, blen);
}

static uint64_t start_time_of(pid_t pid) {
  char path[64], buf[1024];
  snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return UINT64_MAX;
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return UINT64_MAX;
  buf[n] = 0;
  char *p = strrchr(buf, ')'); /* comm may hold spaces and parentheses */
  if (!p) return UINT64_MAX;
  p += 2; /* field 3, the state */
  for (int field = 3; field < 22; field++) {
    p = strchr(p, ' ');
    if (!p) return UINT64_MAX;
    p++;
  }
  return strtoull(p, NULL, 10);
}

/* An 'X' for a task that ended (e == 0) or could not be started (errno e). */
static void reply_exit(uint32_t id, int code, int sig, int e) {
  unsigned char nums[12];
  put_u32(nums, (uint32_t)code);
  put_u32(nums + 4, (uint32_t)sig);
  put_u32(nums + 8, (uint32_t)e);
  reply('X', id, nums, sizeof nums, NULL, 0);
}

static void reset_child_signals(void) {
  sigset_t none;
  sigemptyset(&none);
  for (int s = 1; s < NSIG; s++) signal(s, SIG_DFL); /* invalid numbers just fail */
  sigprocmask(SIG_SETMASK, &none, NULL);
}

static void start_task(uint32_t id, const unsigned char *p, size_t n) {
  /* A malformed request is answered, never dropped: the agent waits for every id it sent. */
  if (n < 16) {
    reply_exit(id, -1, 0, EINVAL);
    return;
  }
  uint32_t flags = get_u32(p), drain_ms = get_u32(p + 4), argc = get_u32(p + 8), envc = get_u32(p + 12);
  p += 16;
  n -= 16;
  if (argc > n || envc > n) { /* every string takes at least its NUL */
    reply_exit(id, -1, 0, EINVAL);
    return;
  }
  size_t count = 2 + (size_t)argc + envc;
  char **strs = calloc(count, sizeof *strs);
  char **argv = calloc((size_t)argc + 1, sizeof *argv);
  char **envp = calloc((size_t)envc + 1, sizeof *envp);
  if (!strs || !argv || !envp) {
    free(strs), free(argv), free(envp);
    reply_exit(id, -1, 0, ENOMEM);
    return;
  }
  size_t at = 0;
  for (size_t i = 0; i < count; i++) {
    const unsigned char *end = memchr(p + at, 0, n - at);
    if (!end) {
      free(strs), free(argv), free(envp);
      reply_exit(id, -1, 0, EINVAL);
      return;
    }
    strs[i] = (char *)(p + at);
    at = (size_t)(end - p) + 1;
  }
  const char *file = strs[0], *cwd = strs[1];
  for (uint32_t i = 0; i < argc; i++) argv[i] = strs[2 + i];
  for (uint32_t i = 0; i < envc; i++) envp[i] = strs[2 + argc + i];

  int out[2] = {-1, -1}, err[2] = {-1, -1}, report[2] = {-1, -1};
  if (pipe2(out, O_CLOEXEC) || pipe2(err, O_CLOEXEC) || pipe2(report, O_CLOEXEC)) {
    int e = errno;
    int fds[] = {out[0], out[1], err[0], err[1], report[0], report[1]};
    for (int i = 0; i < 6; i++) if (fds[i] >= 0) close(fds[i]);
    free(strs), free(argv), free(envp);
    reply_exit(id, -1, 0, e);
    return;
  }
  pid_t pid = fork();
  if (pid == 0) {
    reset_child_signals();
    if (flags & FLAG_NEW_SESSION) setsid();
    int e = 0;
    if (dup2(devnull, 0) < 0 || dup2(out[1], 1) < 0 || dup2(err[1], 2) < 0) e = errno;
    else if (chdir(cwd) != 0) e = errno;
    else {
      environ = envp; /* execvp looks the file up in the task's own PATH, as Node.js does */
      execvp(file, argv);
      e = errno;
    }
    ssize_t ignored = write(report[1], &e, sizeof e);
    (void)ignored;
    _exit(127);
  }
  int fork_errno = errno;
  close(out[1]);
  close(err[1]);
  close(report[1]);
  if (pid < 0) {
    close(out[0]), close(err[0]), close(report[0]);
    free(strs), free(argv), free(envp);
    reply_exit(id, -1, 0, fork_errno);
    return;
  }
  /* The report pipe closes on a successful exec; otherwise it carries the errno. */
  int child_errno = 0;
  ssize_t got;
  do got = read(report[0], &child_errno, sizeof child_errno);
  while (got < 0 && errno == EINTR);
  close(report[0]);
  if (got == (ssize_t)sizeof child_errno) {
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {}
    close(out[0]), close(err[0]);
    reply_exit(id, -1, 0, child_errno);
    free(strs), free(argv), free(envp);
    return;
  }
  free(strs), free(argv), free(envp);

  unsigned char spawned[12];
  uint64_t st = start_time_of(pid);
  put_u32(spawned, (uint32_t)pid);
  put_u32(spawned + 4, (uint32_t)(st & 0xffffffffu));
  put_u32(spawned + 8, (uint32_t)(st >> 32));
  reply('P', id, spawned, sizeof spawned, NULL, 0);

  if (ntasks == cap) {
    size_t ncap = cap ? cap * 2 : 8;
    struct task *grown = realloc(tasks, ncap * sizeof *tasks);
    if (!grown) _exit(70); /* the agent sees the helper die and settles its tasks */
    tasks = grown;
    cap = ncap;
  }
  tasks[ntasks++] = (struct task){.id = id, .pid = pid, .out_fd = out[0], .err_fd = err[0], .exited = 0, .code = -1, .sig = 0, .drain_ms = drain_ms, .drain_deadline = 0};
}

static void handle_frames(void) {
  size_t at = 0;
  while (inlen - at >= 4) {
    uint32_t len = get_u32(inbuf + at);
    if (len < 5 || len > MAX_FRAME) _exit(65); /* not our agent speaking */
    if (inlen - at - 4 < len) break;
    const unsigned char *f = inbuf + at + 4;
    if (f[0] == 'S') start_task(get_u32(f + 1), f + 5, len - 5);
    at += 4 + (size_t)len;
  }
  memmove(inbuf, inbuf + at, inlen - at);
  inlen -= at;
}

static void read_requests(void) {
  if (incap - inlen < CHUNK) {
    size_t ncap = incap ? incap * 2 : CHUNK * 2;
    unsigned char *grown = realloc(inbuf, ncap);
    if (!grown) _exit(70);
    inbuf = grown;
    incap = ncap;
  }
  ssize_t n = read(STDIN_FILENO, inbuf + inlen, incap - inlen);
  if (n == 0) _exit(0); /* the agent went away: leave the tasks' groups running */
  if (n < 0) {
    if (errno == EINTR || errno == EAGAIN) return;
    _exit(0);
  }
  inlen += (size_t)n;
  handle_frames();
}

static void reap(void) {
  for (;;) {
    int status;
    pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid <= 0) return;
    for (size_t i = 0; i < ntasks; i++) {
      if (tasks[i].pid != pid) continue;
      tasks[i].exited = 1;
      tasks[i].code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      tasks[i].sig = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
      tasks[i].drain_deadline = now_ms() + tasks[i].drain_ms;
    }
  }
}

/* Reads what a pipe has; closes it at end of file. */
static void drain_pipe(struct task *t, int *fd, unsigned char type) {
  static unsigned char buf[CHUNK];
  ssize_t n = read(*fd, buf, sizeof buf);
  if (n > 0) {
    reply(type, t->id, buf, (size_t)n, NULL, 0);
  } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
    close(*fd);
    *fd = -1;
  }
}

/* Sends 'X' for tasks that are done (or whose drain time is up) and forgets them. */
static void settle(void) {
  int64_t now = now_ms();
  for (size_t i = 0; i < ntasks;) {
    struct task *t = &tasks[i];
    int closed = t->out_fd < 0 && t->err_fd < 0;
    if (t->exited && (closed || now >= t->drain_deadline)) {
      if (t->out_fd >= 0) close(t->out_fd);
      if (t->err_fd >= 0) close(t->err_fd);
      reply_exit(t->id, t->code, t->sig, 0);
      tasks[i] = tasks[--ntasks];
    } else {
      i++;
    }
  }
}

int main(void) {
  signal(SIGPIPE, SIG_IGN);
  sigset_t chld;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  sigprocmask(SIG_BLOCK, &chld, NULL);
  int sfd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
  devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (sfd < 0 || devnull < 0) {
    perror("granule-spawn");
    return 71;
  }
  reply('R', 0, NULL, 0, NULL, 0);

  struct pollfd *fds = NULL;
  size_t fdcap = 0;
  for (;;) {
    size_t want = 2 + 2 * ntasks;
    if (want > fdcap) {
      struct pollfd *grown = realloc(fds, want * sizeof *fds);
      if (!grown) _exit(70);
      fds = grown;
      fdcap = want;
    }
    size_t nfds = 0;
    fds[nfds++] = (struct pollfd){.fd = STDIN_FILENO, .events = POLLIN};
    fds[nfds++] = (struct pollfd){.fd = sfd, .events = POLLIN};
    int timeout = -1;
    int64_t now = now_ms();
    for (size_t i = 0; i < ntasks; i++) {
      /* A closed pipe is polled as fd -1, which poll ignores, so slots stay in task order. */
      fds[nfds++] = (struct pollfd){.fd = tasks[i].out_fd, .events = POLLIN};
      fds[nfds++] = (struct pollfd){.fd = tasks[i].err_fd, .events = POLLIN};
      if (tasks[i].exited) {
        int64_t left = tasks[i].drain_deadline - now;
        int ms = left < 0 ? 0 : (int)left;
        if (timeout < 0 || ms < timeout) timeout = ms;
      }
    }
    int ready = poll(fds, (nfds_t)nfds, timeout);
    if (ready < 0 && errno != EINTR) {
      perror("granule-spawn: poll");
      return 71;
    }
    if (ready > 0) {
      size_t polled = ntasks; /* read pipes first: a reap below must not reorder the slots */
      for (size_t i = 0; i < polled; i++) {
        if (fds[2 + 2 * i].revents & (POLLIN | POLLHUP | POLLERR)) drain_pipe(&tasks[i], &tasks[i].out_fd, 'O');
        if (fds[3 + 2 * i].revents & (POLLIN | POLLHUP | POLLERR)) drain_pipe(&tasks[i], &tasks[i].err_fd, 'E');
      }
      if (fds[1].revents & POLLIN) {
        struct signalfd_siginfo info;
        while (read(sfd, &info, sizeof info) == (ssize_t)sizeof info) {}
        reap();
      }
    }
    settle();
    /* New requests last: start_task may grow `tasks`, which the slots above point into. */
    if (ready > 0 && (fds[0].revents & (POLLIN | POLLHUP | POLLERR))) read_requests();
  }
}
