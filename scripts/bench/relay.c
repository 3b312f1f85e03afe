/* A minimal TCP relay on one epoll loop: the floor cost of any userspace proxy, to measure
 * idgate's relayed statements against (scripts/bench-relay). Each accepted connection gets a
 * connection to the upstream; bytes read on one side are written to the other, what the peer
 * cannot take yet waits in a buffer (reading that side pauses until it drains).
 * Usage: relay LISTEN_PORT UPSTREAM_PORT (both on 127.0.0.1). */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#define BUF 65536

struct side {
    int fd;
    struct side *peer;
    char pending[BUF]; /* bytes read from the peer that this fd has not taken yet */
    size_t len, off;
};

static int ep;

static void nonblock(int fd) {
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

static void watch(struct side *s, int op, unsigned events) {
    struct epoll_event ev = {.events = events, .data.ptr = s};
    epoll_ctl(ep, op, s->fd, &ev);
}

/* Read s's fd only while its peer owes nothing; wait for writability while s owes bytes. */
static void rearm(struct side *s) {
    watch(s, EPOLL_CTL_MOD, (s->peer->len ? 0 : EPOLLIN) | (s->len ? EPOLLOUT : 0));
}

/* Both fds closed; the pair is not freed, as an event for it may still follow in this batch
 * (a bench tool serves a bounded number of connections). */
static void close_pair(struct side *s) {
    struct side *p = s->peer;
    if (s->fd < 0) return;
    close(s->fd);
    close(p->fd);
    s->fd = p->fd = -1;
}

/* Writes what `s` still owes its fd; 1 when all is written, 0 when it must wait, -1 on error. */
static int drain(struct side *s) {
    while (s->off < s->len) {
        ssize_t n = write(s->fd, s->pending + s->off, s->len - s->off);
        if (n < 0) return (errno == EAGAIN || errno == EWOULDBLOCK) ? 0 : -1;
        s->off += (size_t)n;
    }
    s->len = s->off = 0;
    return 1;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: relay LISTEN_PORT UPSTREAM_PORT\n");
        return 2;
    }
    struct sockaddr_in la = {.sin_family = AF_INET, .sin_port = htons(atoi(argv[1]))};
    struct sockaddr_in ua = {.sin_family = AF_INET, .sin_port = htons(atoi(argv[2]))};
    inet_pton(AF_INET, "127.0.0.1", &la.sin_addr);
    inet_pton(AF_INET, "127.0.0.1", &ua.sin_addr);
    int lfd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(lfd, (struct sockaddr *)&la, sizeof la) || listen(lfd, 512)) {
        perror("relay: listen");
        return 1;
    }
    ep = epoll_create1(0);
    struct epoll_event lev = {.events = EPOLLIN, .data.ptr = NULL};
    epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &lev);
    struct epoll_event evs[256];
    for (;;) {
        int n = epoll_wait(ep, evs, 256, -1);
        for (int i = 0; i < n; i++) {
            struct side *s = evs[i].data.ptr;
            if (!s) { /* a new client */
                int c = accept(lfd, NULL, NULL);
                if (c < 0) continue;
                int u = socket(AF_INET, SOCK_STREAM, 0);
                if (connect(u, (struct sockaddr *)&ua, sizeof ua)) {
                    close(c);
                    close(u);
                    continue;
                }
                nonblock(c);
                nonblock(u);
                struct side *a = calloc(1, sizeof *a), *b = calloc(1, sizeof *b);
                a->fd = c, b->fd = u, a->peer = b, b->peer = a;
                watch(a, EPOLL_CTL_ADD, EPOLLIN);
                watch(b, EPOLL_CTL_ADD, EPOLLIN);
                continue;
            }
            if (s->fd < 0) continue;
            if (evs[i].events & EPOLLOUT) { /* s's fd takes bytes again */
                int d = drain(s);
                if (d < 0) { close_pair(s); continue; }
                rearm(s);
                rearm(s->peer);
                continue;
            }
            /* readable: move what s's fd sent to its peer */
            struct side *p = s->peer;
            if (p->len) { rearm(s); continue; }
            ssize_t r = read(s->fd, p->pending, BUF);
            if (r <= 0) {
                if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) continue;
                close_pair(s);
                continue;
            }
            p->len = (size_t)r, p->off = 0;
            int d = drain(p);
            if (d < 0) { close_pair(s); continue; }
            if (d == 0) { /* the peer is full: stop reading s until it drains */
                rearm(s);
                rearm(p);
            }
        }
    }
}
