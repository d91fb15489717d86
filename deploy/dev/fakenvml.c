/* A stand-in NVIDIA management library (libnvidia-ml.so.1) for the dev cluster's virtual GPUs.
 *
 * The dev nodes have no GPUs: Slurm hands out stand-in character devices,
 * /dev/dsportal-dev/<node>-nvidia<N> (deploy/dev/slurmconf.py).  This library answers the NVML calls the
 * portal makes (spawner/jupyter/session/gpus.py, through nvidia-ml-py) for those GPUs,
 * four per node, with readings the tests set: the file
 * /var/lib/dsportal-nvml/<node>-<N> holds "<utilisation %> <MiB used> <processes>"
 * (no file: idle).  The node is the caller's SLURMD_NODENAME, as in a Slurm job.
 * As NVML in a job of a node with ConstrainDevices, it counts only the GPUs whose device the
 * job's cgroup lets it open (EPERM: another job's), numbered from 0 as CUDA_VISIBLE_DEVICES is;
 * the readings and the UUID are the device's own (its N); its energy counter grows at a steady 60 W.
 * Only the dev cluster installs it (/usr/local/lib, by deploy/devcluster up).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define GPUS 4
#define SUCCESS 0
#define INVALID_ARGUMENT 2
#define UNKNOWN_ERROR 999
#define INSUFFICIENT_SIZE 7
#define MIB (1024ULL * 1024ULL)

typedef struct { unsigned long long total, free, used; } memory_t;
typedef struct { unsigned int gpu, memory; } utilization_t;
typedef struct { unsigned int pid; unsigned long long usedGpuMemory; unsigned int gpuInstanceId, computeInstanceId; } process_t;

static const char *node(void) {
    const char *name = getenv("SLURMD_NODENAME");
    return name ? name : "none";
}

static unsigned index_of(void *handle) { return (unsigned)((uintptr_t)handle - 1); }

static unsigned visible[GPUS], visible_count;

/* The GPUs the caller's device cgroup allows: an open that fails with EPERM is another job's GPU
 * (no driver stands behind the devices, so an allowed open fails with ENXIO instead). */
static void find_visible(void) {
    char path[256];
    visible_count = 0;
    for (unsigned i = 0; i < GPUS; i++) {
        snprintf(path, sizeof path, "/dev/dsportal-dev/%s-nvidia%u", node(), i);
        int fd = open(path, O_RDONLY);
        if (fd >= 0) close(fd);
        if (fd >= 0 || errno != EPERM) visible[visible_count++] = i;
    }
}

static void reading(void *handle, unsigned *util, unsigned long long *used_mib, unsigned *processes) {
    char path[256];
    *util = 0, *used_mib = 300, *processes = 0;
    snprintf(path, sizeof path, "/var/lib/dsportal-nvml/%s-%u", node(), index_of(handle));
    FILE *f = fopen(path, "r");
    if (!f) return;
    if (fscanf(f, "%u %llu %u", util, used_mib, processes) != 3) *util = 0, *used_mib = 300, *processes = 0;
    fclose(f);
}

int nvmlInitWithFlags(unsigned int flags) { (void)flags; find_visible(); return SUCCESS; }
int nvmlInit_v2(void) { find_visible(); return SUCCESS; }
int nvmlShutdown(void) { return SUCCESS; }
const char *nvmlErrorString(int result) { (void)result; return "dev stand-in NVML error"; }

int nvmlDeviceGetCount_v2(unsigned int *count) { *count = visible_count; return SUCCESS; }

int nvmlDeviceGetHandleByIndex_v2(unsigned int index, void **handle) {
    if (index >= visible_count) return INVALID_ARGUMENT;
    *handle = (void *)(uintptr_t)(visible[index] + 1);
    return SUCCESS;
}

int nvmlDeviceGetName(void *handle, char *name, unsigned int length) {
    (void)handle;
    snprintf(name, length, "DS Portal dev GPU (stand-in)");
    return SUCCESS;
}

int nvmlDeviceGetUUID(void *handle, char *uuid, unsigned int length) {
    snprintf(uuid, length, "GPU-dsportal-dev-%s-%u", node(), index_of(handle));
    return SUCCESS;
}

int nvmlDeviceGetMemoryInfo(void *handle, memory_t *memory) {
    unsigned util, processes;
    unsigned long long used;
    reading(handle, &util, &used, &processes);
    memory->total = 32768ULL * MIB;
    memory->used = used * MIB;
    memory->free = memory->total - memory->used;
    return SUCCESS;
}

int nvmlDeviceGetUtilizationRates(void *handle, utilization_t *utilization) {
    unsigned processes;
    unsigned long long used;
    reading(handle, &utilization->gpu, &used, &processes);
    utilization->memory = 0;
    return SUCCESS;
}

int nvmlDeviceGetComputeRunningProcesses_v3(void *handle, unsigned int *count, process_t *infos) {
    unsigned util, processes;
    unsigned long long used;
    reading(handle, &util, &used, &processes);
    if (processes == 0) { *count = 0; return SUCCESS; }
    if (*count < processes || !infos) { *count = processes; return INSUFFICIENT_SIZE; }
    for (unsigned i = 0; i < processes; i++) {
        infos[i].pid = 0;
        infos[i].usedGpuMemory = used * MIB / processes;
        infos[i].gpuInstanceId = infos[i].computeInstanceId = 0xFFFFFFFF;
    }
    *count = processes;
    return SUCCESS;
}

/* The energy counter (mJ since the "driver" loaded), as Volta and later report it: the stand-in draws a steady
 * IDLE_WATTS since the node booted, so a session's energy is its GPUs' time times that. */
#define IDLE_WATTS 60ULL
int nvmlDeviceGetTotalEnergyConsumption(void *handle, unsigned long long *energy) {
    (void)handle;
    struct timespec up;
    if (clock_gettime(CLOCK_BOOTTIME, &up) != 0) return UNKNOWN_ERROR;
    *energy = ((unsigned long long)up.tv_sec * 1000ULL + (unsigned long long)up.tv_nsec / 1000000ULL) * IDLE_WATTS;
    return SUCCESS;
}
