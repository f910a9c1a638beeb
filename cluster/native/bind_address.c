/*
 * LD_PRELOAD shim: a socket bound to the wildcard address (0.0.0.0 or ::) is bound to
 * $HETSCHED_BIND_ADDRESS instead: an IPv4 address (the local cluster's 127.0.0.x), or the name of a
 * network interface (eth1), whose first IPv4 address is used. Operators' supervisors use it too
 * (docs/operations/security.md).
 *
 * Why: Storm 2.8 binds each worker's Netty server to every address and has no setting for it
 * (messaging/netty/Server.java: bootstrap.bind(new InetSocketAddress(port))). A supervisor's
 * workers inherit its environment, so setting this for the supervisor keeps its workers on the
 * machine's own loopback address. Other binds, and every bind when the variable is unset, or neither
 * an IPv4 address nor an interface with one, are passed on unchanged.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dlfcn.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

typedef int (*bind_fn)(int, const struct sockaddr *, socklen_t);

/* The wanted IPv4 address: the text itself, else the first IPv4 address of the interface it names. */
static int wanted_address(const char *text, struct in_addr *out) {
    if (inet_pton(AF_INET, text, out) == 1) {
        return 1;
    }
    struct ifaddrs *all;
    if (getifaddrs(&all) != 0) {
        return 0;
    }
    int found = 0;
    for (struct ifaddrs *i = all; i != NULL && !found; i = i->ifa_next) {
        if (i->ifa_addr != NULL && i->ifa_addr->sa_family == AF_INET && strcmp(i->ifa_name, text) == 0) {
            *out = ((const struct sockaddr_in *)i->ifa_addr)->sin_addr;
            found = 1;
        }
    }
    freeifaddrs(all);
    return found;
}

int bind(int fd, const struct sockaddr *addr, socklen_t len) {
    static bind_fn real_bind;
    if (real_bind == NULL) {
        real_bind = (bind_fn)dlsym(RTLD_NEXT, "bind");
    }
    const char *wanted_text = getenv("HETSCHED_BIND_ADDRESS");
    struct in_addr wanted;
    if (addr == NULL || wanted_text == NULL || !wanted_address(wanted_text, &wanted)) {
        return real_bind(fd, addr, len);
    }
    if (addr->sa_family == AF_INET && len >= (socklen_t)sizeof(struct sockaddr_in)) {
        struct sockaddr_in v4;
        memcpy(&v4, addr, sizeof v4);
        if (v4.sin_addr.s_addr == htonl(INADDR_ANY)) {
            v4.sin_addr = wanted;
            return real_bind(fd, (const struct sockaddr *)&v4, sizeof v4);
        }
    } else if (addr->sa_family == AF_INET6 && len >= (socklen_t)sizeof(struct sockaddr_in6)) {
        struct sockaddr_in6 v6;
        memcpy(&v6, addr, sizeof v6);
        if (IN6_IS_ADDR_UNSPECIFIED(&v6.sin6_addr)) {
            /* A dual-stack socket: the IPv4-mapped form ::ffff:a.b.c.d of the wanted address. */
            memset(&v6.sin6_addr, 0, sizeof v6.sin6_addr);
            v6.sin6_addr.s6_addr[10] = 0xff;
            v6.sin6_addr.s6_addr[11] = 0xff;
            memcpy(&v6.sin6_addr.s6_addr[12], &wanted, sizeof wanted);
            return real_bind(fd, (const struct sockaddr *)&v6, sizeof v6);
        }
    }
    return real_bind(fd, addr, len);
}
