/* A tiny CPU-only program with NVTX ranges and OS runtime calls, profiled by
 * scripts/capture_cpu_nvtx.sh to make a fixture on a machine without a GPU.
 *
 * What it records (all deterministic in shape; the times vary per run):
 *   main thread: push/pop "main" > "setup", "work" > "step_0".."step_2" (default domain),
 *                a start/end range "load" on the same thread, one start/end range "handoff"
 *                started here and ended by worker 0 (cross-thread), a mark, and pushes in the
 *                "cpu_demo" domain with a registered string (textId) and a plain one.
 *   2 workers:   "cpu_demo" domain "worker" > "compute" / "io" ranges, named threads.
 *   OS runtime:  usleep, nanosleep, poll, pipe read/write, file write/read, fsync,
 *                pthread_cond_timedwait, pthread_create/join; each long enough (> 1 us) for
 *                nsys's default OS runtime threshold.
 *
 * Build: gcc -O1 -pthread -I<nsys>/target-linux-x64/nvtx/include capture_cpu_nvtx.c -ldl
 * (NVTX v3 is header-only: nothing to link but libdl.)
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <nvtx3/nvToolsExt.h>

static nvtxDomainHandle_t demo_domain;
static nvtxStringHandle_t compute_name;  /* registered string: exported through textId */
static nvtxRangeId_t handoff;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;

static void domain_push(const char *ascii, nvtxStringHandle_t registered) {
    nvtxEventAttributes_t a;
    memset(&a, 0, sizeof a);
    a.version = NVTX_VERSION;
    a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    if (registered) {
        a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
        a.message.registered = registered;
    } else {
        a.messageType = NVTX_MESSAGE_TYPE_ASCII;
        a.message.ascii = ascii;
    }
    nvtxDomainRangePushEx(demo_domain, &a);
}

static void spin_us(long us) {  /* CPU work that no OS runtime call covers */
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do {
        clock_gettime(CLOCK_MONOTONIC, &t);
    } while ((t.tv_sec - t0.tv_sec) * 1000000L + (t.tv_nsec - t0.tv_nsec) / 1000 < us);
}

static void *worker(void *arg) {
    long id = (long)arg;
    char name[16], path[64], buf[4096];
    snprintf(name, sizeof name, "worker_%ld", id);
    pthread_setname_np(pthread_self(), name);
    nvtxNameOsThreadA((uint32_t)gettid(), name);  /* what nsys shows in ThreadNames */
    memset(buf, 'x', sizeof buf);

    domain_push("worker", 0);
    for (int i = 0; i < 2; i++) {
        domain_push(NULL, compute_name);
        spin_us(300 + 100 * id);
        nvtxDomainRangePop(demo_domain);

        domain_push("io", 0);
        snprintf(path, sizeof path, "/tmp/nsysql-cpu-nvtx-%d-%ld.bin", getpid(), id);
        int fd = open(path, O_CREAT | O_TRUNC | O_RDWR, 0600);
        for (int k = 0; k < 8; k++)
            write(fd, buf, sizeof buf);
        fsync(fd);
        lseek(fd, 0, SEEK_SET);
        while (read(fd, buf, sizeof buf) > 0) {
        }
        close(fd);
        unlink(path);
        usleep(1000 + 500 * id);
        nvtxDomainRangePop(demo_domain);
    }
    if (id == 0)
        nvtxRangeEnd(handoff);  /* a start/end range that ends on another thread */
    nvtxDomainRangePop(demo_domain);
    return NULL;
}

int main(void) {
    demo_domain = nvtxDomainCreateA("cpu_demo");
    compute_name = nvtxDomainRegisterStringA(demo_domain, "compute");
    nvtxNameOsThreadA((uint32_t)gettid(), "main");

    nvtxRangePushA("main");

    nvtxRangePushA("setup");
    int fds[2];
    pipe(fds);
    usleep(2000);
    nvtxRangePop();

    nvtxRangeId_t load = nvtxRangeStartA("load");
    struct timespec ts = {0, 3000000};
    nanosleep(&ts, NULL);
    nvtxRangeEnd(load);
    nvtxMarkA("loaded");

    handoff = nvtxRangeStartA("handoff");
    nvtxRangePushA("work");
    pthread_t threads[2];
    for (long id = 0; id < 2; id++)
        pthread_create(&threads[id], NULL, worker, (void *)id);
    for (int step = 0; step < 3; step++) {
        char label[16];
        snprintf(label, sizeof label, "step_%d", step);
        nvtxRangePushA(label);
        struct pollfd p = {fds[0], POLLIN, 0};
        poll(&p, 1, 2);  /* nothing to read: times out after 2 ms */
        write(fds[1], "ab", 2);
        char got[2];
        read(fds[0], got, 2);
        spin_us(200);
        nvtxRangePop();
    }
    pthread_mutex_lock(&lock);
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_nsec += 1500000;
    if (until.tv_nsec >= 1000000000) {
        until.tv_sec += 1;
        until.tv_nsec -= 1000000000;
    }
    pthread_cond_timedwait(&cond, &lock, &until);  /* nobody signals: times out */
    pthread_mutex_unlock(&lock);
    for (int id = 0; id < 2; id++)
        pthread_join(threads[id], NULL);
    nvtxRangePop();  /* work */

    domain_push("teardown", 0);
    usleep(500);
    nvtxDomainRangePop(demo_domain);

    nvtxRangePop();  /* main */
    close(fds[0]);
    close(fds[1]);
    return 0;
}
