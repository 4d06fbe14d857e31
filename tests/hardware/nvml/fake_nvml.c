/*
 * fake_nvml.c - a stand-in for libnvidia-ml.so.1 so that the real pynvml
 * runs against devices described in a text file.
 *
 * Build (the tests do it):
 *   gcc -shared -fPIC -Wl,-soname,libnvidia-ml.so.1 -o libnvidia-ml.so.1 \
 *       fake_nvml.c
 *
 * Only the functions cyborg_like's nvidia_gpu driver reaches through pynvml
 * are exported, with the exact signatures of nvml.h: ctypes checks nothing,
 * so every struct below mirrors pynvml's ``_fields_`` (the tests compare the
 * layouts through fake_nvml_layout()). Versioned structs are checked the way
 * NVML does (NVML_ERROR_ARGUMENT_VERSION_MISMATCH) and strings need a buffer
 * large enough for them (NVML_ERROR_INSUFFICIENT_SIZE).
 *
 * Data file: path in $FAKE_NVML_DATA, read again by every nvmlInit that
 * finds the library uninitialised (the library never unloads from a
 * process, so tests change devices by rewriting the file). Format:
 *
 *   # comment                    lines are "key = value"
 *   driver_version = 550.54.15   system keys come before the first section
 *   cuda_version = 12040
 *   error.nvmlInitWithFlags = DRIVER_NOT_LOADED
 *
 *   [gpu]                        one section per GPU, in NVML index order
 *   name = NVIDIA H100 80GB HBM3
 *   uuid = GPU-...
 *   bus_id = 00000000:AF:00.0
 *   pci_device_id = 0x233010DE    (device << 16 | vendor)
 *   pci_subsystem_id = 0x16C110DE
 *   memory_total / memory_reserved / memory_used = bytes
 *   numa_node = 1                 absent: NOT_SUPPORTED
 *   mig_mode = 1                  absent: NOT_SUPPORTED (not MIG capable)
 *   max_mig_devices = 7
 *   utilization_gpu / utilization_memory = percent
 *   temperature = 41              degrees C
 *   power_mw = 72000
 *   ecc_uncorrected_volatile = 0  absent: NOT_SUPPORTED (ECC off)
 *   retired_pages_pending = 0     absent: NOT_SUPPORTED (Ampere and later)
 *   remapped_rows = 0 0 0 0       corrected uncorrected pending failure;
 *                                 absent: NOT_SUPPORTED (before Ampere)
 *   lost = 1                      every query answers NVML_ERROR_GPU_IS_LOST
 *   error.<nvml function> = CODE  that function fails on this device; CODE
 *                                 is a number or a name such as NOT_SUPPORTED
 *
 *   [mig]                        a MIG device of the GPU section above it
 *   index = 0                    its slot for GetMigDeviceHandleByIndex
 *   name / uuid / memory_* / gpu_instance_id / compute_instance_id
 *
 * Unknown keys make nvmlInit fail (NVML_ERROR_UNKNOWN, message on stderr),
 * so a typo in a test's data never passes silently.
 */

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* Types and constants of nvml.h                                       */

typedef int nvmlReturn_t;

enum {
    NVML_SUCCESS = 0,
    NVML_ERROR_UNINITIALIZED = 1,
    NVML_ERROR_INVALID_ARGUMENT = 2,
    NVML_ERROR_NOT_SUPPORTED = 3,
    NVML_ERROR_NOT_FOUND = 6,
    NVML_ERROR_INSUFFICIENT_SIZE = 7,
    NVML_ERROR_DRIVER_NOT_LOADED = 9,
    NVML_ERROR_GPU_IS_LOST = 15,
    NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25,
    NVML_ERROR_UNKNOWN = 999,
};

#define NVML_STRUCT_VERSION(type, ver) \
    ((unsigned int)(sizeof(type) | ((ver) << 24U)))

#define NVML_TEMPERATURE_GPU 0
#define NVML_MEMORY_ERROR_TYPE_UNCORRECTED 1
#define NVML_VOLATILE_ECC 0

typedef struct {
    char busIdLegacy[16];
    unsigned int domain;
    unsigned int bus;
    unsigned int device;
    unsigned int pciDeviceId;
    unsigned int pciSubSystemId;
    char busId[32];
} nvmlPciInfo_t;

typedef struct {
    unsigned int version;
    unsigned long long total;
    unsigned long long reserved;
    unsigned long long free;
    unsigned long long used;
} nvmlMemory_v2_t;

typedef struct {
    unsigned int gpu;
    unsigned int memory;
} nvmlUtilization_t;

typedef struct {
    unsigned int version;
    unsigned int sensorType;
    int temperature;
} nvmlTemperature_v1_t;

#define nvmlMemory_v2 NVML_STRUCT_VERSION(nvmlMemory_v2_t, 2)
#define nvmlTemperature_v1 NVML_STRUCT_VERSION(nvmlTemperature_v1_t, 1)

/* ------------------------------------------------------------------ */
/* The fake's devices                                                   */

#define MAX_GPUS 8
#define MAX_MIGS 7
#define MAX_FAULTS 16
#define TEXT 96

typedef struct {
    char function[64];
    nvmlReturn_t code;
} fault_t;

typedef struct fake_device {
    int in_use;
    struct fake_device *parent;          /* set on MIG devices only */
    char name[TEXT], uuid[TEXT], bus_id[32];
    unsigned int pci_device_id, pci_subsystem_id;
    unsigned long long memory_total, memory_reserved, memory_used;
    int has_numa, numa_node;
    int has_mig, mig_mode;
    unsigned int max_mig_devices;
    struct fake_device *migs[MAX_MIGS];  /* by slot index */
    unsigned int slot;                   /* MIG: index in parent->migs */
    unsigned int gpu_instance_id, compute_instance_id;
    unsigned int utilization_gpu, utilization_memory;
    int temperature;
    unsigned int power_mw;
    int has_ecc;
    unsigned long long ecc_uncorrected_volatile;
    int has_retired, retired_pages_pending;
    int has_remap;
    unsigned int remapped_rows[4];
    int lost;
    fault_t faults[MAX_FAULTS];
    int fault_count;
} fake_device;

typedef struct nvmlDevice_st *nvmlDevice_t;  /* opaque, as in nvml.h */

static fake_device gpus[MAX_GPUS];
static fake_device migs[MAX_GPUS * MAX_MIGS];
static unsigned int gpu_count, mig_count;
static fake_device system_faults;   /* only .faults is used */
static char driver_version[TEXT];
static int cuda_version;
static int init_count;              /* nvmlInit minus nvmlShutdown */

/* ------------------------------------------------------------------ */
/* Reading the data file                                                */

static const struct { const char *name; nvmlReturn_t code; } codes[] = {
    {"UNINITIALIZED", 1}, {"INVALID_ARGUMENT", 2}, {"NOT_SUPPORTED", 3},
    {"NO_PERMISSION", 4}, {"NOT_FOUND", 6}, {"INSUFFICIENT_SIZE", 7},
    {"DRIVER_NOT_LOADED", 9}, {"TIMEOUT", 10}, {"GPU_IS_LOST", 15},
    {"RESET_REQUIRED", 16}, {"LIB_RM_VERSION_MISMATCH", 18},
    {"NO_DATA", 21}, {"UNKNOWN", 999},
};

static int parse_code(const char *text, nvmlReturn_t *code)
{
    char *end;
    long number = strtol(text, &end, 0);
    if (*text && !*end) {
        *code = (nvmlReturn_t)number;
        return 0;
    }
    for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++) {
        if (!strcmp(text, codes[i].name)) {
            *code = codes[i].code;
            return 0;
        }
    }
    return -1;
}

static int add_fault(fake_device *dev, const char *function, const char *value)
{
    if (dev->fault_count == MAX_FAULTS || strlen(function) >= 64)
        return -1;
    fault_t *fault = &dev->faults[dev->fault_count++];
    strcpy(fault->function, function);
    return parse_code(value, &fault->code);
}

static void copy_text(char *dst, size_t size, const char *src)
{
    snprintf(dst, size, "%s", src);
}

/* One "key = value" of a [gpu] or [mig] section; -1 if the key is unknown. */
static int set_device_key(fake_device *dev, const char *key, const char *value)
{
    unsigned long long number = strtoull(value, NULL, 0);
    if (!strcmp(key, "name")) copy_text(dev->name, TEXT, value);
    else if (!strcmp(key, "uuid")) copy_text(dev->uuid, TEXT, value);
    else if (!strcmp(key, "bus_id")) copy_text(dev->bus_id, 32, value);
    else if (!strcmp(key, "pci_device_id")) dev->pci_device_id = number;
    else if (!strcmp(key, "pci_subsystem_id")) dev->pci_subsystem_id = number;
    else if (!strcmp(key, "memory_total")) dev->memory_total = number;
    else if (!strcmp(key, "memory_reserved")) dev->memory_reserved = number;
    else if (!strcmp(key, "memory_used")) dev->memory_used = number;
    else if (!strcmp(key, "numa_node")) {
        dev->has_numa = 1;
        dev->numa_node = atoi(value);
    } else if (!strcmp(key, "mig_mode")) {
        dev->has_mig = 1;
        dev->mig_mode = number;
    } else if (!strcmp(key, "max_mig_devices")) {
        dev->max_mig_devices = number > MAX_MIGS ? MAX_MIGS : number;
    }
    else if (!strcmp(key, "index")) dev->slot = number;
    else if (!strcmp(key, "gpu_instance_id")) dev->gpu_instance_id = number;
    else if (!strcmp(key, "compute_instance_id"))
        dev->compute_instance_id = number;
    else if (!strcmp(key, "utilization_gpu")) dev->utilization_gpu = number;
    else if (!strcmp(key, "utilization_memory"))
        dev->utilization_memory = number;
    else if (!strcmp(key, "temperature")) dev->temperature = atoi(value);
    else if (!strcmp(key, "power_mw")) dev->power_mw = number;
    else if (!strcmp(key, "ecc_uncorrected_volatile")) {
        dev->has_ecc = 1;
        dev->ecc_uncorrected_volatile = number;
    } else if (!strcmp(key, "retired_pages_pending")) {
        dev->has_retired = 1;
        dev->retired_pages_pending = number;
    } else if (!strcmp(key, "remapped_rows")) {
        unsigned int *rows = dev->remapped_rows;
        dev->has_remap = 1;
        if (sscanf(value, "%u %u %u %u",
                   &rows[0], &rows[1], &rows[2], &rows[3]) != 4)
            return -1;
    } else if (!strcmp(key, "lost")) dev->lost = number;
    else if (!strncmp(key, "error.", 6)) return add_fault(dev, key + 6, value);
    else return -1;
    return 0;
}

static int set_system_key(const char *key, const char *value)
{
    if (!strcmp(key, "driver_version"))
        copy_text(driver_version, TEXT, value);
    else if (!strcmp(key, "cuda_version"))
        cuda_version = atoi(value);
    else if (!strncmp(key, "error.", 6))
        return add_fault(&system_faults, key + 6, value);
    else
        return -1;
    return 0;
}

static char *strip(char *text)
{
    char *end;
    while (*text == ' ' || *text == '\t')
        text++;
    end = text + strlen(text);
    while (end > text && strchr(" \t\r\n", end[-1]))
        *--end = '\0';
    return text;
}

/* A "[gpu]" or "[mig]" line: start the device it announces. */
static fake_device *start_section(const char *line)
{
    if (!strcmp(line, "[gpu]") && gpu_count < MAX_GPUS) {
        fake_device *gpu = &gpus[gpu_count++];
        gpu->in_use = 1;
        return gpu;
    }
    if (!strcmp(line, "[mig]") && gpu_count > 0
        && mig_count < MAX_GPUS * MAX_MIGS) {
        fake_device *mig = &migs[mig_count++];
        mig->in_use = 1;
        mig->parent = &gpus[gpu_count - 1];
        return mig;
    }
    return NULL;
}

/* Put each MIG device in its parent's slot, once all are read. */
static int place_migs(void)
{
    for (unsigned int i = 0; i < mig_count; i++) {
        fake_device *mig = &migs[i];
        if (mig->slot >= MAX_MIGS || mig->parent->migs[mig->slot])
            return -1;
        mig->parent->migs[mig->slot] = mig;
    }
    return 0;
}

static int parse_line(char *line, fake_device **section)
{
    char *equals, *key, *value;
    line = strip(line);
    if (!*line || *line == '#')
        return 0;
    if (*line == '[') {
        *section = start_section(line);
        return *section ? 0 : -1;
    }
    equals = strchr(line, '=');
    if (!equals)
        return -1;
    *equals = '\0';
    key = strip(line);
    value = strip(equals + 1);
    return *section ? set_device_key(*section, key, value)
                    : set_system_key(key, value);
}

static nvmlReturn_t load_data(void)
{
    const char *path = getenv("FAKE_NVML_DATA");
    char line[512];
    int number = 0;
    fake_device *section = NULL;
    FILE *file;

    memset(gpus, 0, sizeof(gpus));
    memset(migs, 0, sizeof(migs));
    memset(&system_faults, 0, sizeof(system_faults));
    gpu_count = mig_count = 0;
    copy_text(driver_version, TEXT, "550.54.15");
    cuda_version = 12040;

    if (!path || !(file = fopen(path, "r"))) {
        fprintf(stderr, "fake_nvml: cannot read $FAKE_NVML_DATA (%s)\n",
                path ? path : "unset");
        return NVML_ERROR_UNKNOWN;
    }
    while (fgets(line, sizeof(line), file)) {
        number++;
        if (parse_line(line, &section)) {
            fprintf(stderr, "fake_nvml: %s:%d: cannot use this line\n",
                    path, number);
            fclose(file);
            return NVML_ERROR_UNKNOWN;
        }
    }
    fclose(file);
    if (place_migs()) {
        fprintf(stderr, "fake_nvml: %s: bad or duplicate MIG index\n", path);
        return NVML_ERROR_UNKNOWN;
    }
    return NVML_SUCCESS;
}

/* ------------------------------------------------------------------ */
/* Checks every entry point makes                                      */

static nvmlReturn_t fault_for(const fake_device *dev, const char *function)
{
    for (int i = 0; i < dev->fault_count; i++)
        if (!strcmp(dev->faults[i].function, function))
            return dev->faults[i].code;
    return NVML_SUCCESS;
}

static int is_device(const fake_device *dev)
{
    int in_gpus = dev >= gpus && dev < gpus + gpu_count;
    int in_migs = dev >= migs && dev < migs + mig_count;
    return (in_gpus || in_migs) && dev->in_use;
}

/* Initialised, a real handle, not lost, no fault asked for this call. */
static nvmlReturn_t enter(nvmlDevice_t handle, const char *function,
                          fake_device **out)
{
    fake_device *dev = (fake_device *)handle;
    const fake_device *gpu;
    nvmlReturn_t fault;

    if (init_count == 0)
        return NVML_ERROR_UNINITIALIZED;
    if (!handle || !is_device(dev))
        return NVML_ERROR_INVALID_ARGUMENT;
    gpu = dev->parent ? dev->parent : dev;
    if (gpu->lost)
        return NVML_ERROR_GPU_IS_LOST;
    if ((fault = fault_for(dev, function)) != NVML_SUCCESS)
        return fault;
    *out = dev;
    return NVML_SUCCESS;
}

#define ENTER(handle, dev)                                       \
    fake_device *dev;                                            \
    do {                                                         \
        nvmlReturn_t entered_ = enter(handle, __func__, &dev);   \
        if (entered_ != NVML_SUCCESS)                            \
            return entered_;                                     \
    } while (0)

static nvmlReturn_t put_text(char *buffer, unsigned int length,
                             const char *text)
{
    if (!buffer)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (strlen(text) + 1 > length)
        return NVML_ERROR_INSUFFICIENT_SIZE;
    strcpy(buffer, text);
    return NVML_SUCCESS;
}

/* ------------------------------------------------------------------ */
/* Library and system                                                  */

nvmlReturn_t nvmlInitWithFlags(unsigned int flags)
{
    nvmlReturn_t result;
    (void)flags;
    if (init_count == 0 && (result = load_data()) != NVML_SUCCESS)
        return result;
    if ((result = fault_for(&system_faults, __func__)) != NVML_SUCCESS)
        return result;
    init_count++;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlInit_v2(void)
{
    return nvmlInitWithFlags(0);
}

nvmlReturn_t nvmlShutdown(void)
{
    if (init_count == 0)
        return NVML_ERROR_UNINITIALIZED;
    init_count--;
    return NVML_SUCCESS;
}

const char *nvmlErrorString(nvmlReturn_t result)
{
    switch (result) {
    case NVML_SUCCESS: return "Success";
    case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
    case NVML_ERROR_NOT_FOUND: return "Not Found";
    case NVML_ERROR_INSUFFICIENT_SIZE: return "Insufficient Size";
    case NVML_ERROR_DRIVER_NOT_LOADED: return "Driver Not Loaded";
    case NVML_ERROR_GPU_IS_LOST: return "GPU is lost";
    case NVML_ERROR_ARGUMENT_VERSION_MISMATCH:
        return "Argument version mismatch";
    default: return "Unknown Error";
    }
}

nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length)
{
    if (init_count == 0)
        return NVML_ERROR_UNINITIALIZED;
    return put_text(version, length, driver_version);
}

nvmlReturn_t nvmlSystemGetCudaDriverVersion(int *version)
{
    if (!version)
        return NVML_ERROR_INVALID_ARGUMENT;
    *version = cuda_version;
    return NVML_SUCCESS;
}

/* ------------------------------------------------------------------ */
/* Enumeration and identity                                            */

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *count)
{
    if (init_count == 0)
        return NVML_ERROR_UNINITIALIZED;
    if (!count)
        return NVML_ERROR_INVALID_ARGUMENT;
    *count = gpu_count;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index,
                                           nvmlDevice_t *device)
{
    nvmlReturn_t fault;
    if (init_count == 0)
        return NVML_ERROR_UNINITIALIZED;
    if (index >= gpu_count || !device)
        return NVML_ERROR_INVALID_ARGUMENT;
    /* A lost GPU still has a handle: its queries are what fail. */
    if ((fault = fault_for(&gpus[index], __func__)) != NVML_SUCCESS)
        return fault;
    *device = (nvmlDevice_t)&gpus[index];
    return NVML_SUCCESS;
}

/* NOT_FOUND for a GPU that is not on the bus (not in the data file);
 * a lost one is found, and says so, as NVML documents. */
nvmlReturn_t nvmlDeviceGetHandleByUUID(const char *uuid, nvmlDevice_t *device)
{
    unsigned int i;
    nvmlReturn_t fault;
    if (init_count == 0)
        return NVML_ERROR_UNINITIALIZED;
    if (!uuid || !device)
        return NVML_ERROR_INVALID_ARGUMENT;
    for (i = 0; i < gpu_count; i++) {
        if (strcmp(gpus[i].uuid, uuid))
            continue;
        if (gpus[i].lost)
            return NVML_ERROR_GPU_IS_LOST;
        if ((fault = fault_for(&gpus[i], __func__)) != NVML_SUCCESS)
            return fault;
        *device = (nvmlDevice_t)&gpus[i];
        return NVML_SUCCESS;
    }
    return NVML_ERROR_NOT_FOUND;
}

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char *name,
                               unsigned int length)
{
    ENTER(device, dev);
    return put_text(name, length, dev->name);
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid,
                               unsigned int length)
{
    ENTER(device, dev);
    return put_text(uuid, length, dev->uuid);
}

nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t *pci)
{
    unsigned int domain, bus, slot, function;
    ENTER(device, dev);
    if (!pci || dev->parent)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (sscanf(dev->bus_id, "%x:%x:%x.%x",
               &domain, &bus, &slot, &function) != 4)
        return NVML_ERROR_UNKNOWN;
    memset(pci, 0, sizeof(*pci));
    /* NVML's own formats: 4-digit domain in the legacy field, 8 in busId. */
    snprintf(pci->busIdLegacy, sizeof(pci->busIdLegacy), "%04X:%02X:%02X.%X",
             domain, bus, slot, function);
    snprintf(pci->busId, sizeof(pci->busId), "%08X:%02X:%02X.%X",
             domain, bus, slot, function);
    pci->domain = domain;
    pci->bus = bus;
    pci->device = slot;
    pci->pciDeviceId = dev->pci_device_id;
    pci->pciSubSystemId = dev->pci_subsystem_id;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device,
                                        nvmlMemory_v2_t *memory)
{
    ENTER(device, dev);
    if (!memory)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (memory->version != nvmlMemory_v2)
        return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    memory->total = dev->memory_total;
    memory->reserved = dev->memory_reserved;
    memory->used = dev->memory_used;
    memory->free = dev->memory_total - dev->memory_reserved - dev->memory_used;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetNumaNodeId(nvmlDevice_t device, unsigned int *node)
{
    ENTER(device, dev);
    if (!node)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (!dev->has_numa)
        return NVML_ERROR_NOT_SUPPORTED;
    *node = (unsigned int)dev->numa_node;
    return NVML_SUCCESS;
}

/* ------------------------------------------------------------------ */
/* MIG                                                                  */

nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device,
                                  unsigned int *current, unsigned int *pending)
{
    ENTER(device, dev);
    if (!current || !pending || dev->parent)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (!dev->has_mig)
        return NVML_ERROR_NOT_SUPPORTED;
    *current = *pending = dev->mig_mode;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t device,
                                            unsigned int *count)
{
    ENTER(device, dev);
    if (!count || dev->parent)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (!dev->has_mig)
        return NVML_ERROR_NOT_SUPPORTED;
    *count = dev->mig_mode ? dev->max_mig_devices : 0;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t device,
                                                 unsigned int index,
                                                 nvmlDevice_t *mig)
{
    ENTER(device, dev);
    if (!mig || dev->parent || index >= dev->max_mig_devices)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (!dev->mig_mode || !dev->migs[index])
        return NVML_ERROR_NOT_FOUND;   /* an empty slot */
    *mig = (nvmlDevice_t)dev->migs[index];
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t device, unsigned int *id)
{
    ENTER(device, dev);
    if (!id)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (!dev->parent)
        return NVML_ERROR_NOT_SUPPORTED;
    *id = dev->gpu_instance_id;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetComputeInstanceId(nvmlDevice_t device,
                                            unsigned int *id)
{
    ENTER(device, dev);
    if (!id)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (!dev->parent)
        return NVML_ERROR_NOT_SUPPORTED;
    *id = dev->compute_instance_id;
    return NVML_SUCCESS;
}

/* ------------------------------------------------------------------ */
/* Health                                                               */

nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device,
                                           nvmlUtilization_t *utilization)
{
    ENTER(device, dev);
    if (!utilization)
        return NVML_ERROR_INVALID_ARGUMENT;
    /* As on real GPUs: no whole-GPU utilization in MIG mode. */
    if (dev->parent || (dev->has_mig && dev->mig_mode))
        return NVML_ERROR_NOT_SUPPORTED;
    utilization->gpu = dev->utilization_gpu;
    utilization->memory = dev->utilization_memory;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetTemperatureV(nvmlDevice_t device,
                                       nvmlTemperature_v1_t *temperature)
{
    ENTER(device, dev);
    if (!temperature || dev->parent)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (temperature->version != nvmlTemperature_v1)
        return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    if (temperature->sensorType != NVML_TEMPERATURE_GPU)
        return NVML_ERROR_NOT_SUPPORTED;
    temperature->temperature = dev->temperature;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned int *power)
{
    ENTER(device, dev);
    if (!power || dev->parent)
        return NVML_ERROR_INVALID_ARGUMENT;
    *power = dev->power_mw;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t device,
                                         unsigned int errorType,
                                         unsigned int counterType,
                                         unsigned long long *count)
{
    ENTER(device, dev);
    if (!count || dev->parent)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (!dev->has_ecc)
        return NVML_ERROR_NOT_SUPPORTED;
    /* Only the counter the driver reads is modelled. */
    if (errorType != NVML_MEMORY_ERROR_TYPE_UNCORRECTED
        || counterType != NVML_VOLATILE_ECC)
        return NVML_ERROR_NOT_SUPPORTED;
    *count = dev->ecc_uncorrected_volatile;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetRetiredPagesPendingStatus(nvmlDevice_t device,
                                                    int *pending)
{
    ENTER(device, dev);
    if (!pending || dev->parent)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (!dev->has_retired)
        return NVML_ERROR_NOT_SUPPORTED;
    *pending = dev->retired_pages_pending;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t device,
                                       unsigned int *corrected,
                                       unsigned int *uncorrected,
                                       unsigned int *pending,
                                       unsigned int *failure)
{
    ENTER(device, dev);
    if (!corrected || !uncorrected || !pending || !failure || dev->parent)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (!dev->has_remap)
        return NVML_ERROR_NOT_SUPPORTED;
    *corrected = dev->remapped_rows[0];
    *uncorrected = dev->remapped_rows[1];
    *pending = dev->remapped_rows[2];
    *failure = dev->remapped_rows[3];
    return NVML_SUCCESS;
}

/* ------------------------------------------------------------------ */
/* For the tests only: not part of NVML                                 */

/* How many nvmlInit calls no nvmlShutdown has matched yet. */
int fake_nvml_init_count(void)
{
    return init_count;
}

#define LAYOUT(type, member)                                   \
    if (!strcmp(structure, #type)) {                           \
        if (!field) return (long)sizeof(type);                 \
        if (!strcmp(field, #member)) return (long)offsetof(type, member); \
    }

/* sizeof(structure) when field is NULL, else offsetof; -1 if unknown. */
long fake_nvml_layout(const char *structure, const char *field)
{
    LAYOUT(nvmlPciInfo_t, busIdLegacy)
    LAYOUT(nvmlPciInfo_t, domain)
    LAYOUT(nvmlPciInfo_t, bus)
    LAYOUT(nvmlPciInfo_t, device)
    LAYOUT(nvmlPciInfo_t, pciDeviceId)
    LAYOUT(nvmlPciInfo_t, pciSubSystemId)
    LAYOUT(nvmlPciInfo_t, busId)
    LAYOUT(nvmlMemory_v2_t, version)
    LAYOUT(nvmlMemory_v2_t, total)
    LAYOUT(nvmlMemory_v2_t, reserved)
    LAYOUT(nvmlMemory_v2_t, free)
    LAYOUT(nvmlMemory_v2_t, used)
    LAYOUT(nvmlUtilization_t, gpu)
    LAYOUT(nvmlUtilization_t, memory)
    LAYOUT(nvmlTemperature_v1_t, version)
    LAYOUT(nvmlTemperature_v1_t, sensorType)
    LAYOUT(nvmlTemperature_v1_t, temperature)
    return -1;
}
