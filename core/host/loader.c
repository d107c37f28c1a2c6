#include "host/loader.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h> /* ElfW */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Under AddressSanitizer drivers stay mapped until exit: a leak report then
 * names their frames, and the memory a driver's library still tracks (paho
 * 1.3.12 keeps, in its own heap records, the publishes a destroy forgot,
 * fixed in 1.3.14) is not reported as lost because its records were unmapped. */
#ifdef __SANITIZE_ADDRESS__
#define OBX_DLOPEN_FLAGS (RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE)
#else
#define OBX_DLOPEN_FLAGS (RTLD_NOW | RTLD_LOCAL)
#endif

#ifndef OBX_DRIVERS_INSTALL_PATH
#define OBX_DRIVERS_INSTALL_PATH "/usr/local/lib/outbox-relay/drivers"
#endif

static int is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

const char *loader_default_dir(void)
{
    static char dir[PATH_MAX + 64];
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash) {
            *slash = '\0';
            /* build tree: drivers/ beside the executable */
            snprintf(dir, sizeof dir, "%s/drivers", exe);
            if (is_dir(dir))
                return dir;
            /* relocated install: bin/../lib/outbox-relay/drivers */
            snprintf(dir, sizeof dir, "%s/../lib/outbox-relay/drivers", exe);
            if (is_dir(dir))
                return dir;
        }
    }
    return OBX_DRIVERS_INSTALL_PATH;
}

static const char *missing_callback(const obx_driver_def *def)
{
    if (!def->create)
        return "create";
    if (!def->publish_batch)
        return "publish_batch";
    if (!def->flush)
        return "flush";
    if (!def->close)
        return "close";
    if (!def->destroy)
        return "destroy";
    if (!def->name)
        return "name";
    return NULL;
}

int loader_insecure_allowed(void)
{
    const char *v = getenv(LOADER_INSECURE_ENV);
    return v && strcmp(v, "1") == 0;
}

/* Who may replace what we load: a file or directory writable by group or
 * others, or owned by someone other than root or us. */
static int check_owner_mode(const char *what, const char *path, const struct stat *st, char *why,
                            size_t why_size)
{
    if (st->st_mode & (S_IWGRP | S_IWOTH)) {
        snprintf(why, why_size,
                 "%s %s is writable by %s (mode %03o): anyone there could replace the driver; "
                 "chmod go-w it, or set " LOADER_INSECURE_ENV "=1 to load it anyway",
                 what, path, st->st_mode & S_IWOTH ? "others" : "its group",
                 (unsigned)(st->st_mode & 0777));
        return -1;
    }
    if (st->st_uid != 0 && st->st_uid != geteuid()) {
        snprintf(why, why_size,
                 "%s %s is owned by uid %u, neither root nor the relay's user (uid %u); "
                 "chown it, or set " LOADER_INSECURE_ENV "=1 to load it anyway",
                 what, path, (unsigned)st->st_uid, (unsigned)geteuid());
        return -1;
    }
    return 0;
}

static int check_dir_of(const char *file, char *why, size_t why_size)
{
    char dir[PATH_MAX];
    const char *slash = strrchr(file, '/');
    snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - file) : 1, slash ? file : ".");
    if (!dir[0])
        strcpy(dir, "/");
    struct stat st;
    if (stat(dir, &st) != 0) {
        snprintf(why, why_size, "directory %s: %s", dir, strerror(errno));
        return -1;
    }
    return check_owner_mode("directory", dir, &st, why, why_size);
}

#if defined(__x86_64__)
#define LOADER_MACHINE EM_X86_64
#elif defined(__aarch64__)
#define LOADER_MACHINE EM_AARCH64
#endif

/* dlopen maps the file as it is: a truncated or corrupt one kills the
 * process with SIGBUS or SIGSEGV. Checks the header, and that every program
 * and section header and every segment lies inside the file. */
static int check_elf(int fd, off_t size, char *why, size_t why_size)
{
    ElfW(Ehdr) eh;
    if (size < (off_t)sizeof eh || pread(fd, &eh, sizeof eh, 0) != (ssize_t)sizeof eh ||
        memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0) {
        snprintf(why, why_size, "not an ELF shared object (%lld bytes)", (long long)size);
        return -1;
    }
    if (eh.e_ident[EI_CLASS] != (sizeof(void *) == 8 ? ELFCLASS64 : ELFCLASS32) ||
        eh.e_type != ET_DYN
#ifdef LOADER_MACHINE
        || eh.e_machine != LOADER_MACHINE
#endif
    ) {
        snprintf(why, why_size, "ELF file for another machine or not a shared object (type %u)",
                 (unsigned)eh.e_type);
        return -1;
    }
    uint64_t file = (uint64_t)size;
    if (eh.e_phentsize != sizeof(ElfW(Phdr)) || eh.e_phnum == 0 || eh.e_phoff > file ||
        (uint64_t)eh.e_phnum * sizeof(ElfW(Phdr)) > file - eh.e_phoff ||
        (eh.e_shnum &&
         (eh.e_shoff > file || (uint64_t)eh.e_shnum * eh.e_shentsize > file - eh.e_shoff))) {
        snprintf(why, why_size, "truncated or corrupt: its headers lie beyond its %lld bytes",
                 (long long)size);
        return -1;
    }
    for (unsigned i = 0; i < eh.e_phnum; i++) {
        ElfW(Phdr) ph;
        if (pread(fd, &ph, sizeof ph, (off_t)(eh.e_phoff + i * sizeof ph)) != (ssize_t)sizeof ph)
            return snprintf(why, why_size, "cannot read program header %u", i), -1;
        if (ph.p_type != PT_NULL && (ph.p_offset > file || ph.p_filesz > file - ph.p_offset)) {
            snprintf(why, why_size,
                     "truncated or corrupt: segment %u ends at byte %llu, the file has %lld", i,
                     (unsigned long long)ph.p_offset + ph.p_filesz, (long long)size);
            return -1;
        }
    }
    return 0;
}

/* Everything checked before the file is handed to dlopen. */
static int check_driver_file(const char *path, char *why, size_t why_size)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(why, why_size, "cannot open: %s", strerror(errno));
        return -1;
    }
    struct stat st;
    int rc = fstat(fd, &st);
    if (rc != 0)
        snprintf(why, why_size, "cannot stat: %s", strerror(errno));
    else if (!S_ISREG(st.st_mode))
        rc = -1, snprintf(why, why_size, "not a regular file");
    int insecure = loader_insecure_allowed();
    if (rc == 0 && !insecure)
        rc = check_owner_mode("driver file", path, &st, why, why_size);
    if (rc == 0)
        rc = check_elf(fd, st.st_size, why, why_size);
    close(fd);
    char real[PATH_MAX];
    if (rc == 0 && !insecure) {
        rc = check_dir_of(path, why, why_size);
        /* a symlink: the directory the file really lives in matters too */
        if (rc == 0 && realpath(path, real))
            rc = check_dir_of(real, why, why_size);
    }
    return rc;
}

loaded_driver *loader_open(const char *dir, const char *name, char *err, size_t err_size)
{
    char path[PATH_MAX + 64];
    if (strchr(name, '/'))
        snprintf(path, sizeof path, "%s", name);
    else
        snprintf(path, sizeof path, "%s/%s.so", dir ? dir : loader_default_dir(), name);

    if (access(path, R_OK) != 0) {
        snprintf(err, err_size, "%s: driver file not found (driver \"%s\")", path, name);
        return NULL;
    }
    char file_why[PATH_MAX + 256];
    if (check_driver_file(path, file_why, sizeof file_why) < 0) {
        snprintf(err, err_size, "%s: refused: %s", path, file_why);
        return NULL;
    }
    void *handle = dlopen(path, OBX_DLOPEN_FLAGS);
    if (!handle) {
        snprintf(err, err_size, "%s: cannot load: %s", path, dlerror());
        return NULL;
    }
    obx_driver_entry_fn entry;
    *(void **)&entry = dlsym(handle, OBX_DRIVER_ENTRY_SYMBOL);
    if (!entry) {
        snprintf(err, err_size, "%s: not an outbox-relay driver: no %s symbol", path,
                 OBX_DRIVER_ENTRY_SYMBOL);
        dlclose(handle);
        return NULL;
    }
    const obx_driver_def *def = entry();
    const char *why = NULL;
    char buf[160];
    if (!def) {
        why = "entry returned no definition";
    } else if (def->magic != OBX_DRIVER_MAGIC) {
        snprintf(buf, sizeof buf, "wrong magic 0x%08x (expected 0x%08x)", def->magic,
                 OBX_DRIVER_MAGIC);
        why = buf;
    } else if (def->abi_major != OBX_ABI_MAJOR) {
        snprintf(buf, sizeof buf, "driver ABI %u.%u, relay ABI %d.%d: major versions differ",
                 def->abi_major, def->abi_minor, OBX_ABI_MAJOR, OBX_ABI_MINOR);
        why = buf;
    } else if (def->struct_size < offsetof(obx_driver_def, destroy) + sizeof def->destroy) {
        snprintf(buf, sizeof buf, "definition too small (%u bytes)", def->struct_size);
        why = buf;
    }
    loaded_driver *drv = NULL;
    if (!why) {
        drv = calloc(1, sizeof *drv);
        size_t n = def->struct_size < sizeof drv->def ? def->struct_size : sizeof drv->def;
        memcpy(&drv->def, def, n); /* newer fields we do not know stay unread; older ones zero */
        const char *missing = missing_callback(&drv->def);
        if (missing) {
            snprintf(buf, sizeof buf, "driver \"%s\" lacks required callback %s",
                     drv->def.name ? drv->def.name : name, missing);
            why = buf;
            free(drv);
            drv = NULL;
        }
    }
    if (why) {
        snprintf(err, err_size, "%s: refused: %s", path, why);
        dlclose(handle);
        return NULL;
    }
    drv->path = strdup(path);
    drv->handle = handle;
    return drv;
}

void loader_close(loaded_driver *drv)
{
    if (!drv)
        return;
    dlclose(drv->handle);
    free(drv->path);
    free(drv);
}
