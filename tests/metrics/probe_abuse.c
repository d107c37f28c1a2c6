/*
 * probe_abuse: the probes under idle and slow clients.
 *
 *   probe_abuse PORT IDLE SLOW SECONDS
 *       keeps IDLE connections to 127.0.0.1:PORT open that send nothing (one
 *       the server closes is opened again) and SLOW ones that send a request
 *       one header line every 3 s, never finishing it; meanwhile, once a
 *       second for SECONDS, GETs /healthz and /readyz on a fresh connection.
 *       Prints the figures; exits 0 when every probe got a 200 within 10 s.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define PROBE_CEILING_MS 10000
#define SLOW_LINE_MS 3000

static long long now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000LL + t.tv_nsec / 1000000;
}

/* A connected socket (blocking connect, bounded by the kernel), or -1. */
static int dial(int port)
{
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return -1;
    struct timeval tv = {PROBE_CEILING_MS / 1000, 0};
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* One GET on a fresh connection: its status (0: none) and how long it took. */
static int probe(int port, const char *path, long long *took_ms)
{
    long long start = now_ms();
    int fd = dial(port), status = 0;
    if (fd >= 0) {
        char req[256], buf[4096];
        int n = snprintf(req, sizeof req,
                         "GET %s HTTP/1.1\r\nHost: relay\r\nConnection: close\r\n\r\n", path);
        size_t len = 0;
        ssize_t got;
        if (send(fd, req, (size_t)n, MSG_NOSIGNAL) == n)
            while (len < sizeof buf - 1 && (got = recv(fd, buf + len, sizeof buf - 1 - len, 0)) > 0)
                len += (size_t)got;
        buf[len] = '\0';
        if (sscanf(buf, "HTTP/1.%*d %d", &status) != 1)
            status = 0;
        close(fd);
    }
    *took_ms = now_ms() - start;
    return status;
}

/* Has the server closed fd (EOF or error)? Never blocks. */
static int closed_by_server(int fd)
{
    struct pollfd p = {fd, POLLIN, 0};
    if (poll(&p, 1, 0) != 1)
        return 0;
    char c;
    ssize_t got = recv(fd, &c, 1, MSG_DONTWAIT);
    return got == 0 || (got < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: probe_abuse PORT IDLE SLOW SECONDS\n");
        return 2;
    }
    int port = atoi(argv[1]), idle = atoi(argv[2]), slow = atoi(argv[3]);
    int seconds = atoi(argv[4]), n = idle + slow;
    struct rlimit rl = {(rlim_t)n + 64, (rlim_t)n + 64};
    if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
        perror("setrlimit");
    int *fds = calloc((size_t)n, sizeof *fds);
    long long *next_line = calloc((size_t)n, sizeof *next_line);
    long long reopened = 0, worst_ms = 0, total_ms = 0;
    int probes = 0, failures = 0, connected = 0;
    for (int i = 0; i < n; i++)
        fds[i] = -1;
    long long end = now_ms() + seconds * 1000LL, next_probe = 0;
    while (now_ms() < end) {
        connected = 0;
        for (int i = 0; i < n; i++) {
            if (fds[i] >= 0 && closed_by_server(fds[i])) {
                close(fds[i]);
                fds[i] = -1;
                reopened++;
            }
            if (fds[i] < 0 && (fds[i] = dial(port)) >= 0 && i >= idle) {
                static const char start[] = "GET /healthz HTTP/1.1\r\nHost: relay\r\n";
                send(fds[i], start, sizeof start - 1, MSG_NOSIGNAL);
                next_line[i] = now_ms() + SLOW_LINE_MS;
            }
            if (fds[i] >= 0 && i >= idle && now_ms() >= next_line[i]) {
                static const char line[] = "X-Slow: 1\r\n";
                send(fds[i], line, sizeof line - 1, MSG_NOSIGNAL);
                next_line[i] = now_ms() + SLOW_LINE_MS;
            }
            connected += fds[i] >= 0;
        }
        if (now_ms() >= next_probe && connected == n) {
            next_probe = now_ms() + 1000;
            for (int k = 0; k < 2; k++) {
                long long took;
                const char *path = k ? "/readyz" : "/healthz";
                int status = probe(port, path, &took);
                probes++;
                total_ms += took;
                worst_ms = took > worst_ms ? took : worst_ms;
                if (status != 200 || took > PROBE_CEILING_MS) {
                    failures++;
                    fprintf(stderr, "%s: status %d after %lld ms\n", path, status, took);
                }
            }
        }
        usleep(20000);
    }
    printf("idle %d slow %d connected %d reopened %lld probes %d failures %d worst_ms %lld "
           "mean_ms %.1f\n",
           idle, slow, connected, reopened, probes, failures, worst_ms,
           probes ? (double)total_ms / probes : 0.0);
    for (int i = 0; i < n; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    free(fds);
    free(next_line);
    return probes > 0 && failures == 0 ? 0 : 1;
}
