/*
 * metrics_client: a hostile and a polite client of the metrics socket.
 *
 *   metrics_client flood PORT N HOLD_FILE
 *       opens N connections to 127.0.0.1:PORT, each sending an unfinished
 *       request (no blank line), prints "connected K", then holds them open
 *       until HOLD_FILE is removed.
 *   metrics_client get PORT METHOD PATH
 *       one request; prints the status code and then the body.
 *   metrics_client freeport
 *       prints a loopback port that was free a moment ago.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define FREEPORT_LOW 20000
#define FREEPORT_HIGH 32768

static int dial(int port, int timeout_ms)
{
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return -1;
    if (connect(fd, (struct sockaddr *)&a, sizeof a) == 0)
        return fd;
    struct pollfd p = {fd, POLLOUT, 0};
    int err = 0;
    socklen_t len = sizeof err;
    if (errno != EINPROGRESS || poll(&p, 1, timeout_ms) != 1 ||
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static int flood(int port, int n, const char *hold)
{
    struct rlimit rl = {(rlim_t)n + 64, (rlim_t)n + 64};
    if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
        perror("setrlimit");
    int *fds = calloc((size_t)n, sizeof *fds), connected = 0;
    static const char part[] = "GET /metrics HTTP/1.1\r\nHost: relay\r\nX-Slow: ";
    for (int i = 0; i < n; i++) {
        fds[i] = dial(port, 2000);
        if (fds[i] >= 0) {
            connected++;
            if (send(fds[i], part, sizeof part - 1, MSG_NOSIGNAL) < 0) {
                /* the server may already have closed it: still a connection made */
            }
        }
    }
    printf("connected %d\n", connected);
    fflush(stdout);
    while (access(hold, F_OK) == 0)
        usleep(50000);
    for (int i = 0; i < n; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    free(fds);
    return 0;
}

static int get(int port, const char *method, const char *path)
{
    int fd = dial(port, 5000);
    if (fd < 0) {
        printf("connect failed\n");
        return 1;
    }
    fcntl(fd, F_SETFL, 0);
    static char buf[1 << 20]; /* the whole /metrics body */
    char req[512];
    int n = snprintf(req, sizeof req,
                     "%s %s HTTP/1.1\r\nHost: relay\r\nConnection: close\r\n"
                     "Content-Length: 0\r\n\r\n",
                     method, path);
    if (send(fd, req, (size_t)n, MSG_NOSIGNAL) != n) {
        printf("send failed\n");
        return 1;
    }
    size_t len = 0;
    ssize_t got;
    struct timeval tv = {10, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    while (len < sizeof buf - 1 && (got = recv(fd, buf + len, sizeof buf - 1 - len, 0)) > 0)
        len += (size_t)got;
    buf[len] = '\0';
    close(fd);
    int status = 0;
    if (sscanf(buf, "HTTP/1.%*d %d", &status) != 1) {
        printf("no answer\n");
        return 1;
    }
    const char *body = strstr(buf, "\r\n\r\n");
    printf("%d\n%s", status, body ? body + 4 : "");
    return 0;
}

/* A random port below the ephemeral range (where nothing connecting out
 * takes one, and where the services' fixed ports are not): the kernel's own
 * choice (bind to port 0) hands two tests asking at once the same port. */
static int freeport(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    srand((unsigned)(getpid() ^ now.tv_nsec ^ now.tv_sec));
    for (int tries = 0; tries < 200; tries++) {
        int port = FREEPORT_LOW + rand() % (FREEPORT_HIGH - FREEPORT_LOW);
        struct sockaddr_in a = {.sin_family = AF_INET,
                                .sin_port = htons((uint16_t)port),
                                .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        if (fd < 0)
            return 1;
        int ok = bind(fd, (struct sockaddr *)&a, sizeof a) == 0;
        close(fd);
        if (ok) {
            printf("%d\n", port);
            return 0;
        }
    }
    return 1;
}

int main(int argc, char **argv)
{
    if (argc == 2 && !strcmp(argv[1], "freeport"))
        return freeport();
    if (argc == 5 && !strcmp(argv[1], "flood"))
        return flood(atoi(argv[2]), atoi(argv[3]), argv[4]);
    if (argc == 5 && !strcmp(argv[1], "get"))
        return get(atoi(argv[2]), argv[3], argv[4]);
    fprintf(stderr, "usage: metrics_client flood PORT N HOLD_FILE | get PORT METHOD PATH\n");
    return 2;
}
