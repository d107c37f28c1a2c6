#include "telemetry/process_metrics.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "obx/driver.h"
#include "telemetry/exposition.h"

/* Open descriptors: the entries of /proc/self/fd, less the one reading it. */
static long open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return -1;
    long n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        n += e->d_name[0] != '.';
    closedir(d);
    return n - 1;
}

/* Seconds since the Unix epoch at which the process started: its start in
 * clock ticks after boot (/proc/self/stat, field 22) plus the boot time. */
static double start_time(void)
{
    char buf[1024];
    FILE *f = fopen("/proc/self/stat", "r");
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f)
        fclose(f);
    buf[n] = '\0';
    const char *p = strrchr(buf, ')'); /* the command name may hold spaces */
    unsigned long long ticks = 0;
    for (int field = 2; p && *p && field < 22; p++)
        field += *p == ' ';
    if (p)
        ticks = strtoull(p, NULL, 10);
    long long btime = 0;
    FILE *s = fopen("/proc/stat", "r");
    while (s && fgets(buf, sizeof buf, s))
        if (sscanf(buf, "btime %lld", &btime) == 1)
            break;
    if (s)
        fclose(s);
    return (double)btime + (double)ticks / (double)sysconf(_SC_CLK_TCK);
}

void process_metrics_render(FILE *f)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    expo_total_f(f, "process_cpu_seconds_total", "User and system CPU time spent, in seconds.",
                 (double)ru.ru_utime.tv_sec + (double)ru.ru_stime.tv_sec +
                     (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6);
    long pages_total = 0, pages_resident = 0;
    FILE *m = fopen("/proc/self/statm", "r");
    if (m && fscanf(m, "%ld %ld", &pages_total, &pages_resident) != 2)
        pages_total = pages_resident = 0;
    if (m)
        fclose(m);
    long page = sysconf(_SC_PAGESIZE);
    expo_gauge(f, "process_resident_memory_bytes", "Resident memory size in bytes.",
               (double)pages_resident * (double)page);
    expo_gauge(f, "process_virtual_memory_bytes", "Virtual memory size in bytes.",
               (double)pages_total * (double)page);
    struct rlimit lim;
    expo_gauge(f, "process_open_fds", "Number of open file descriptors.", (double)open_fds());
    if (getrlimit(RLIMIT_NOFILE, &lim) == 0)
        expo_gauge(f, "process_max_fds", "Maximum number of open file descriptors.",
                   (double)lim.rlim_cur);
    expo_gauge(f, "process_start_time_seconds",
               "Start time of the process since the Unix epoch, in seconds.", start_time());
    expo_family(f, "outbox_relay_build_info", "gauge",
                "The relay's version, commit and driver ABI, as labels; always 1.");
    fprintf(f, "outbox_relay_build_info{version=\"%s\",commit=\"%s\",abi=\"%d.%d\"} 1\n",
            OBX_VERSION, OBX_COMMIT, OBX_ABI_MAJOR, OBX_ABI_MINOR);
}
