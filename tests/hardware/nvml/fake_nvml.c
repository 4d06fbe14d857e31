/*
 * fake_nvml.c - a stand-in for libnvidia-ml.so.1 so that the real pynvml
 * runs against devices described in a text file.
 *
 * Build (the tests do it):
 *   gcc -shared -fPIC -Wl,-soname,libnvidia-ml.so.1 -o libnvidia-ml.so.1 \
 *       fake_nvml.c
 *
 * With -DFAKE_NVML_OLD_DRIVER it is a driver from before Ampere (R450): the
 * functions later drivers added are not exported at all, so pynvml raises
 * NVMLError_FunctionNotFound for them (nvmlDeviceGetMemoryInfo_v2,
 * nvmlDeviceGetRemappedRows, nvmlDeviceGetTemperatureV,
 * nvmlDeviceGetGpuInstanceProfileInfoV and
 * nvmlGpuInstanceGetComputeInstanceProfileInfoV; MIG management itself is
 * there, R450 has it).
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
 *   minor_number = 3              N of /dev/nvidiaN; absent: NOT_SUPPORTED
 *   mig_mode = 1                  absent: NOT_SUPPORTED (not MIG capable)
 *   max_mig_devices = 7           default 7 when mig_profiles is given
 *   mig_profiles = a100-80gb      the GPU-instance profiles it offers (MIG
 *                                 management, below): a100-40gb, a100-80gb
 *                                 or h100-80gb; absent: every profile and
 *                                 instance call answers NOT_SUPPORTED
 *   mig_reset_required = 1        nvmlDeviceSetMigMode only makes the mode
 *                                 pending (activationStatus RESET_REQUIRED)
 *   utilization_gpu / utilization_memory = percent
 *   temperature = 41              degrees C
 *   power_mw = 72000
 *   ecc_uncorrected_volatile = 0  absent: NOT_SUPPORTED (ECC off)
 *   ecc_uncorrected_aggregate = 0 lifetime count; absent: NOT_SUPPORTED
 *   clock_sm / clock_mem = 1410   current clocks in MHz; absent:
 *                                 NOT_SUPPORTED
 *   retired_pages_pending = 0     absent: NOT_SUPPORTED (Ampere and later)
 *   remapped_rows = 0 0 0 0       corrected uncorrected pending failure;
 *                                 absent: NOT_SUPPORTED (before Ampere)
 *   lost = 1                      every query answers NVML_ERROR_GPU_IS_LOST
 *   vgpu_max_instances = 1157:10 1158:5
 *                                 the vGPU types (ids of nvidia-<id>) the
 *                                 GPU's vGPU manager makes, each with the
 *                                 most instances one GPU holds, which
 *                                 nvmlVgpuTypeGetMaxInstances answers
 *                                 (another type: INVALID_ARGUMENT);
 *                                 absent: no vGPU manager, NOT_SUPPORTED
 *   error.<nvml function> = CODE  that function fails on this device; CODE
 *                                 is a number or a name such as NOT_SUPPORTED
 *
 *   [mig]                        a MIG device of the GPU section above it
 *   index = 0                    its slot for GetMigDeviceHandleByIndex
 *   name / uuid / memory_* / gpu_instance_id / compute_instance_id
 *                                 on a GPU with mig_profiles the name must
 *                                 end in "MIG <profile>" (e.g. "MIG 3g.40gb"):
 *                                 the device is then a GPU instance of that
 *                                 profile holding one compute instance
 *
 * Unknown keys make nvmlInit fail (NVML_ERROR_UNKNOWN, message on stderr),
 * so a typo in a test's data never passes silently.
 *
 * MIG management, as an A100 / H100 answers it (GPUs with mig_profiles):
 * nvmlDeviceSetMigMode; GPU instances (GI) made from the profile table
 * (nvmlDeviceGetGpuInstanceProfileInfo[V], nvmlDeviceCreateGpuInstance,
 * ...GetGpuInstances, ...GetGpuInstanceById, nvmlGpuInstanceGetInfo,
 * nvmlGpuInstanceDestroy) and one compute instance (CI) per GI over all of
 * its slices (nvmlGpuInstanceGetComputeInstanceProfileInfo[V], ...Create
 * ComputeInstance, ...GetComputeInstances, nvmlComputeInstanceDestroy).
 *   - GIs need MIG mode on (else NOT_SUPPORTED, as nvml.h documents); a GI
 *     needs a free instance of its profile and its compute slices (7 in
 *     all) and memory slices (8) free, else INSUFFICIENT_RESOURCES. Only
 *     those sums are checked: the placement GetInfo reports is the first
 *     fit over the 8 memory slices, for show. GI ids: 0 for the 7-slice
 *     profile, else the lowest unused id from 1.
 *   - A GI's one compute profile is the one with its slice count (engine
 *     profile 0, shared); other compute profiles answer NOT_SUPPORTED, a
 *     second CI INSUFFICIENT_RESOURCES. CI ids are 0.
 *   - A GI becomes a MIG device (GetMigDeviceHandleByIndex, the lowest free
 *     slot) once its CI exists: name "<GPU name> MIG <profile>", uuid
 *     "MIG-...-5...-..." derived from GPU uuid, GI id and CI id, memory
 *     that of the profile. Destroying the CI takes the MIG device away.
 *   - Destroying a GI that still has its CI, or turning MIG mode off while
 *     GIs exist: IN_USE.
 *   - error.<function> on a GPU also fails that function called with one
 *     of the GPU's GI or CI handles.
 *
 * State file: MIG changes outlive the process, as on a real GPU. After
 * every change that succeeds (mode, GI or CI created or destroyed) the fake
 * writes the MIG state of the GPUs it changed to $FAKE_NVML_STATE, or
 * $FAKE_NVML_DATA + ".state" when that is unset (never to the data file,
 * which tests rewrite). Every nvmlInit that reads the data file then reads
 * the state file when there is one: for each GPU it names (by uuid; a GPU
 * not in the data file, or not MIG capable there, is skipped) its MIG mode
 * and all of its GIs, CIs and MIG devices replace those of the data file
 * (a GPU without mig_profiles has no instances: only its mode is kept).
 * Format, one item a line, a GPU's "gpu" line before its other lines:
 *
 *   # comment
 *   gpu <gpu uuid> <current mode> <pending mode>
 *   gi <gpu uuid> <gi id> <NVML_GPU_INSTANCE_PROFILE_* index> <start slice>
 *   ci <gpu uuid> <gi id> <ci id> <MIG device slot> <MIG device uuid>
 *
 * A line it cannot use makes nvmlInit fail as a bad data line does.
 * fake_nvml_mig_changes() counts the changes this process made.
 *
 * Events (nvmlEventSetCreate, nvmlDeviceGetSupportedEventTypes,
 * nvmlDeviceRegisterEvents, nvmlEventSetWait_v2, nvmlEventSetFree): a test
 * injects an event from any process by appending a line to the events
 * file, $FAKE_NVML_EVENTS, or $FAKE_NVML_DATA + ".events" when that is
 * unset (beside the state file). One event a line, written whole:
 *
 *   # comment
 *   xid <gpu uuid> <Xid number> [<gpu instance id> <compute instance id>]
 *   dbe <gpu uuid>                double-bit ECC error (eventData 0)
 *   sbe <gpu uuid>                single-bit ECC error (eventData 0)
 *
 * Each event set reads the file from where it stood when the set was
 * created, so every set gets each later event once, and only the events
 * of the types it registered on that GPU (the others are passed over). A
 * blocked nvmlEventSetWait_v2 polls the file every few milliseconds until
 * its timeout, then answers NVML_ERROR_TIMEOUT. A line it cannot use makes
 * the wait answer NVML_ERROR_UNKNOWN (message on stderr); a line naming a
 * GPU not in the data file is passed over.
 * GPU key "event_types = 0x..." sets the event types a GPU supports;
 * absent: Xid critical errors, P-state and clock changes, plus single-
 * and double-bit ECC errors when ecc_uncorrected_volatile is given (ECC
 * on). Registering a type the GPU lacks answers NOT_SUPPORTED, as do
 * MIG device handles (events are registered on the GPU).
 * nvmlInit, nvmlShutdown and the event calls hold one lock, so an agent's
 * threads may call them at once (the listener waits outside it).
 */

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

/* ------------------------------------------------------------------ */
/* Types and constants of nvml.h                                       */

typedef int nvmlReturn_t;

enum {
    NVML_SUCCESS = 0,
    NVML_ERROR_UNINITIALIZED = 1,
    NVML_ERROR_INVALID_ARGUMENT = 2,
    NVML_ERROR_NOT_SUPPORTED = 3,
    NVML_ERROR_NO_PERMISSION = 4,
    NVML_ERROR_NOT_FOUND = 6,
    NVML_ERROR_INSUFFICIENT_SIZE = 7,
    NVML_ERROR_DRIVER_NOT_LOADED = 9,
    NVML_ERROR_TIMEOUT = 10,
    NVML_ERROR_GPU_IS_LOST = 15,
    NVML_ERROR_RESET_REQUIRED = 16,
    NVML_ERROR_IN_USE = 19,
    NVML_ERROR_INSUFFICIENT_RESOURCES = 23,
    NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25,
    NVML_ERROR_UNKNOWN = 999,
};

#define NVML_STRUCT_VERSION(type, ver) \
    ((unsigned int)(sizeof(type) | ((ver) << 24U)))

#define NVML_TEMPERATURE_GPU 0
#define NVML_MEMORY_ERROR_TYPE_UNCORRECTED 1
#define NVML_VOLATILE_ECC 0
#define NVML_AGGREGATE_ECC 1
#define NVML_CLOCK_SM 1
#define NVML_CLOCK_MEM 2

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
    unsigned long long total;
    unsigned long long free;
    unsigned long long used;
} nvmlMemory_t;

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

/* MIG management */
#define NVML_DEVICE_MIG_DISABLE 0
#define NVML_DEVICE_MIG_ENABLE 1
#define NVML_DEVICE_NAME_V2_BUFFER_SIZE 96
#define NVML_GPU_INSTANCE_PROFILE_1_SLICE 0
#define NVML_GPU_INSTANCE_PROFILE_2_SLICE 1
#define NVML_GPU_INSTANCE_PROFILE_3_SLICE 2
#define NVML_GPU_INSTANCE_PROFILE_4_SLICE 3
#define NVML_GPU_INSTANCE_PROFILE_7_SLICE 4
#define NVML_GPU_INSTANCE_PROFILE_8_SLICE 5
#define NVML_GPU_INSTANCE_PROFILE_6_SLICE 6
#define NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1 7
#define NVML_GPU_INSTANCE_PROFILE_2_SLICE_REV1 8
#define NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV2 9
#define NVML_GPU_INSTANCE_PROFILE_COUNT 0x12      /* pynvml's, R570 */
#define NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE 0
#define NVML_COMPUTE_INSTANCE_PROFILE_2_SLICE 1
#define NVML_COMPUTE_INSTANCE_PROFILE_3_SLICE 2
#define NVML_COMPUTE_INSTANCE_PROFILE_4_SLICE 3
#define NVML_COMPUTE_INSTANCE_PROFILE_7_SLICE 4
#define NVML_COMPUTE_INSTANCE_PROFILE_8_SLICE 5
#define NVML_COMPUTE_INSTANCE_PROFILE_6_SLICE 6
#define NVML_COMPUTE_INSTANCE_PROFILE_COUNT 9
#define NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED 0
#define NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_COUNT 1

typedef struct nvmlGpuInstance_st *nvmlGpuInstance_t;          /* opaque */
typedef struct nvmlComputeInstance_st *nvmlComputeInstance_t;  /* opaque */

typedef struct {
    unsigned int start;
    unsigned int size;
} nvmlGpuInstancePlacement_t;

typedef struct {
    unsigned int id;
    unsigned int isP2pSupported;
    unsigned int sliceCount;
    unsigned int instanceCount;
    unsigned int multiprocessorCount;
    unsigned int copyEngineCount;
    unsigned int decoderCount;
    unsigned int encoderCount;
    unsigned int jpegCount;
    unsigned int ofaCount;
    unsigned long long memorySizeMB;
} nvmlGpuInstanceProfileInfo_t;

typedef struct {
    unsigned int version;
    unsigned int id;
    unsigned int isP2pSupported;
    unsigned int sliceCount;
    unsigned int instanceCount;
    unsigned int multiprocessorCount;
    unsigned int copyEngineCount;
    unsigned int decoderCount;
    unsigned int encoderCount;
    unsigned int jpegCount;
    unsigned int ofaCount;
    unsigned long long memorySizeMB;
    char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
} nvmlGpuInstanceProfileInfo_v2_t;

typedef struct {
    struct nvmlDevice_st *device;
    unsigned int id;
    unsigned int profileId;
    nvmlGpuInstancePlacement_t placement;
} nvmlGpuInstanceInfo_t;

typedef struct {
    unsigned int id;
    unsigned int sliceCount;
    unsigned int instanceCount;
    unsigned int multiprocessorCount;
    unsigned int sharedCopyEngineCount;
    unsigned int sharedDecoderCount;
    unsigned int sharedEncoderCount;
    unsigned int sharedJpegCount;
    unsigned int sharedOfaCount;
} nvmlComputeInstanceProfileInfo_t;

typedef struct {
    unsigned int version;
    unsigned int id;
    unsigned int sliceCount;
    unsigned int instanceCount;
    unsigned int multiprocessorCount;
    unsigned int sharedCopyEngineCount;
    unsigned int sharedDecoderCount;
    unsigned int sharedEncoderCount;
    unsigned int sharedJpegCount;
    unsigned int sharedOfaCount;
    char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
} nvmlComputeInstanceProfileInfo_v2_t;

#define nvmlGpuInstanceProfileInfo_v2 \
    NVML_STRUCT_VERSION(nvmlGpuInstanceProfileInfo_v2_t, 2)
#define nvmlComputeInstanceProfileInfo_v2 \
    NVML_STRUCT_VERSION(nvmlComputeInstanceProfileInfo_v2_t, 2)

/* ------------------------------------------------------------------ */
/* GPU-instance profiles (mig_profiles)                                 */

/* One row of "nvidia-smi mig -lgip". */
typedef struct {
    unsigned int index;          /* NVML_GPU_INSTANCE_PROFILE_* */
    unsigned int id;             /* the profile id NVML and nvidia-smi use */
    const char *name;            /* "1g.10gb"; NVML names it "MIG 1g.10gb" */
    unsigned int slices;         /* compute slices, of 7 */
    unsigned int memory_slices;  /* of 8 */
    unsigned int instances;      /* at most this many at once */
    unsigned int sms, copy_engines, decoders, encoders, jpegs, ofas;
    unsigned long long memory_mb;
} gi_profile;

#define ALL_COMPUTE_SLICES 7
#define ALL_MEMORY_SLICES 8

/* Profile ids are the real ones (19, 20, 15, 14, 9, 5, 0, as "nvidia-smi
 * mig -lgip" lists them); shapes (slices, instances, SMs and engines) after
 * NVIDIA's MIG user guide. Memory sizes are those nvidia-smi reports for
 * the A100s; the H100's are plausible values of the same kind (GiB as
 * nvidia-smi rounds them, times 1024), not read off a card. */
static const gi_profile a100_40gb[] = {
    {NVML_GPU_INSTANCE_PROFILE_1_SLICE, 19, "1g.5gb", 1, 1, 7,
     14, 1, 0, 0, 0, 0, 4864},
    {NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1, 20, "1g.5gb+me", 1, 1, 1,
     14, 1, 1, 0, 1, 1, 4864},
    {NVML_GPU_INSTANCE_PROFILE_2_SLICE, 14, "2g.10gb", 2, 2, 3,
     28, 2, 1, 0, 0, 0, 9856},
    {NVML_GPU_INSTANCE_PROFILE_3_SLICE, 9, "3g.20gb", 3, 4, 2,
     42, 3, 2, 0, 0, 0, 19968},
    {NVML_GPU_INSTANCE_PROFILE_4_SLICE, 5, "4g.20gb", 4, 4, 1,
     56, 4, 2, 0, 0, 0, 19968},
    {NVML_GPU_INSTANCE_PROFILE_7_SLICE, 0, "7g.40gb", 7, 8, 1,
     98, 7, 5, 0, 1, 1, 40192},
};

static const gi_profile a100_80gb[] = {
    {NVML_GPU_INSTANCE_PROFILE_1_SLICE, 19, "1g.10gb", 1, 1, 7,
     14, 1, 0, 0, 0, 0, 9856},
    {NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1, 20, "1g.10gb+me", 1, 1, 1,
     14, 1, 1, 0, 1, 1, 9856},
    {NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV2, 15, "1g.20gb", 1, 2, 4,
     14, 1, 1, 0, 0, 0, 19968},
    {NVML_GPU_INSTANCE_PROFILE_2_SLICE, 14, "2g.20gb", 2, 2, 3,
     28, 2, 1, 0, 0, 0, 19968},
    {NVML_GPU_INSTANCE_PROFILE_3_SLICE, 9, "3g.40gb", 3, 4, 2,
     42, 3, 2, 0, 0, 0, 40192},
    {NVML_GPU_INSTANCE_PROFILE_4_SLICE, 5, "4g.40gb", 4, 4, 1,
     56, 4, 2, 0, 0, 0, 40192},
    {NVML_GPU_INSTANCE_PROFILE_7_SLICE, 0, "7g.80gb", 7, 8, 1,
     98, 7, 5, 0, 1, 1, 80384},
};

static const gi_profile h100_80gb[] = {
    {NVML_GPU_INSTANCE_PROFILE_1_SLICE, 19, "1g.10gb", 1, 1, 7,
     16, 1, 1, 0, 1, 0, 9984},
    {NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1, 20, "1g.10gb+me", 1, 1, 1,
     16, 1, 1, 0, 1, 1, 9984},
    {NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV2, 15, "1g.20gb", 1, 2, 4,
     26, 1, 1, 0, 1, 0, 20096},
    {NVML_GPU_INSTANCE_PROFILE_2_SLICE, 14, "2g.20gb", 2, 2, 3,
     32, 2, 2, 0, 2, 0, 20096},
    {NVML_GPU_INSTANCE_PROFILE_3_SLICE, 9, "3g.40gb", 3, 4, 2,
     60, 3, 3, 0, 3, 0, 40448},
    {NVML_GPU_INSTANCE_PROFILE_4_SLICE, 5, "4g.40gb", 4, 4, 1,
     64, 4, 4, 0, 4, 0, 40448},
    {NVML_GPU_INSTANCE_PROFILE_7_SLICE, 0, "7g.80gb", 7, 8, 1,
     132, 8, 7, 0, 7, 1, 81152},
};

typedef struct {
    const char *key;             /* the value of mig_profiles */
    const gi_profile *rows;
    size_t count;
} profile_table;

#define TABLE(key, rows) {key, rows, sizeof(rows) / sizeof(rows[0])}
static const profile_table profile_tables[] = {
    TABLE("a100-40gb", a100_40gb),
    TABLE("a100-80gb", a100_80gb),
    TABLE("h100-80gb", h100_80gb),
};

/* ------------------------------------------------------------------ */
/* The fake's devices                                                   */

#define MAX_GPUS 8
#define MAX_MIGS 7
#define MAX_FAULTS 16
#define MAX_VGPU_TYPES 16
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
    int has_minor, minor_number;
    int has_mig, mig_mode;
    unsigned int max_mig_devices;
    int mig_pending;                     /* mode after the next reset */
    int mig_reset_required;
    const profile_table *profiles;       /* NULL: no mig_profiles */
    int stateful;                        /* MIG state kept in the state file */
    struct fake_device *migs[MAX_MIGS];  /* by slot index */
    unsigned int slot;                   /* MIG: index in parent->migs */
    unsigned int gpu_instance_id, compute_instance_id;
    unsigned int utilization_gpu, utilization_memory;
    int temperature;
    unsigned int power_mw;
    int has_ecc;
    unsigned long long ecc_uncorrected_volatile;
    int has_ecc_aggregate;
    unsigned long long ecc_uncorrected_aggregate;
    int has_clock_sm, has_clock_mem;
    unsigned int clock_sm, clock_mem;
    int has_retired, retired_pages_pending;
    int has_remap;
    unsigned int remapped_rows[4];
    int lost;
    int has_event_types;
    unsigned long long event_types;      /* supported, when has_event_types */
    int has_vgpu;                        /* vgpu_max_instances given */
    unsigned int vgpu_type_count;
    unsigned int vgpu_types[MAX_VGPU_TYPES], vgpu_max[MAX_VGPU_TYPES];
    fault_t faults[MAX_FAULTS];
    int fault_count;
} fake_device;

typedef struct nvmlDevice_st *nvmlDevice_t;  /* opaque, as in nvml.h */

/* A GPU instance; its compute instance is cis[] at the same index. */
typedef struct {
    int in_use;
    fake_device *gpu;
    unsigned int id;
    const gi_profile *profile;
    unsigned int start;                  /* placement, in memory slices */
} fake_gi;

typedef struct {
    int in_use;
    unsigned int id;
    fake_device *mig;                    /* the MIG device it makes */
} fake_ci;

#define MAX_GIS (MAX_GPUS * MAX_MIGS)

static fake_gi gis[MAX_GIS];
static fake_ci cis[MAX_GIS];
static int mig_changes;             /* this process's, never reset */

static fake_device gpus[MAX_GPUS];
static fake_device migs[MAX_GPUS * MAX_MIGS];
static unsigned int gpu_count, mig_count;
static fake_device system_faults;   /* only .faults is used */
static char driver_version[TEXT];
static int cuda_version;
static int init_count;              /* nvmlInit minus nvmlShutdown */
static int event_polls;             /* waits that found nothing yet */

/* ------------------------------------------------------------------ */
/* Reading the data file                                                */

static const struct { const char *name; nvmlReturn_t code; } codes[] = {
    {"UNINITIALIZED", 1}, {"INVALID_ARGUMENT", 2}, {"NOT_SUPPORTED", 3},
    {"NO_PERMISSION", 4}, {"NOT_FOUND", 6}, {"INSUFFICIENT_SIZE", 7},
    {"DRIVER_NOT_LOADED", 9}, {"TIMEOUT", 10}, {"GPU_IS_LOST", 15},
    {"RESET_REQUIRED", 16}, {"LIB_RM_VERSION_MISMATCH", 18},
    {"IN_USE", 19}, {"NO_DATA", 21}, {"INSUFFICIENT_RESOURCES", 23},
    {"ARGUMENT_VERSION_MISMATCH", 25}, {"UNKNOWN", 999},
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

/* "1157:10 1158:5": vGPU type ids and their max instances. */
static int set_vgpu_max(fake_device *dev, const char *value)
{
    unsigned int type, most;
    int used;

    dev->has_vgpu = 1;
    while (sscanf(value, " %u:%u%n", &type, &most, &used) == 2) {
        if (dev->vgpu_type_count == MAX_VGPU_TYPES)
            return -1;
        dev->vgpu_types[dev->vgpu_type_count] = type;
        dev->vgpu_max[dev->vgpu_type_count++] = most;
        value += used;
    }
    return strspn(value, " \t") == strlen(value) ? 0 : -1;
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
    } else if (!strcmp(key, "minor_number")) {
        dev->has_minor = 1;
        dev->minor_number = atoi(value);
    } else if (!strcmp(key, "mig_mode")) {
        dev->has_mig = 1;
        dev->mig_mode = dev->mig_pending = number;
    } else if (!strcmp(key, "max_mig_devices")) {
        dev->max_mig_devices = number > MAX_MIGS ? MAX_MIGS : number;
    } else if (!strcmp(key, "mig_profiles")) {
        size_t i, count = sizeof(profile_tables) / sizeof(profile_tables[0]);
        for (i = 0; i < count && strcmp(profile_tables[i].key, value); i++)
            ;
        if (i == count)
            return -1;
        dev->profiles = &profile_tables[i];
    } else if (!strcmp(key, "mig_reset_required")) {
        dev->mig_reset_required = number;
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
    else if (!strcmp(key, "ecc_uncorrected_aggregate")) {
        dev->has_ecc_aggregate = 1;
        dev->ecc_uncorrected_aggregate = number;
    } else if (!strcmp(key, "clock_sm")) {
        dev->has_clock_sm = 1;
        dev->clock_sm = number;
    } else if (!strcmp(key, "clock_mem")) {
        dev->has_clock_mem = 1;
        dev->clock_mem = number;
    } else if (!strcmp(key, "ecc_uncorrected_volatile")) {
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
    else if (!strcmp(key, "event_types")) {
        dev->has_event_types = 1;
        dev->event_types = number;
    }
    else if (!strcmp(key, "vgpu_max_instances"))
        return set_vgpu_max(dev, value);
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

/* ------------------------------------------------------------------ */
/* GPU instances, compute instances and the MIG devices they make      */

static const gi_profile *profile_by_index(const fake_device *gpu,
                                          unsigned int index)
{
    for (size_t i = 0; gpu->profiles && i < gpu->profiles->count; i++)
        if (gpu->profiles->rows[i].index == index)
            return &gpu->profiles->rows[i];
    return NULL;
}

static const gi_profile *profile_by_id(const fake_device *gpu,
                                       unsigned int id)
{
    for (size_t i = 0; gpu->profiles && i < gpu->profiles->count; i++)
        if (gpu->profiles->rows[i].id == id)
            return &gpu->profiles->rows[i];
    return NULL;
}

/* The profile a MIG device's name ends in: "... MIG 3g.40gb". */
static const gi_profile *profile_by_mig_name(const fake_device *gpu,
                                             const char *name)
{
    const char *mark = strstr(name, " MIG ");
    while (mark && strstr(mark + 1, " MIG "))
        mark = strstr(mark + 1, " MIG ");
    for (size_t i = 0; mark && gpu->profiles && i < gpu->profiles->count;
         i++)
        if (!strcmp(mark + 5, gpu->profiles->rows[i].name))
            return &gpu->profiles->rows[i];
    return NULL;
}

/* The compute profile over all of a GPU instance's slices. */
static unsigned int whole_compute_profile(const gi_profile *profile)
{
    switch (profile->slices) {
    case 1: return NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE;
    case 2: return NVML_COMPUTE_INSTANCE_PROFILE_2_SLICE;
    case 3: return NVML_COMPUTE_INSTANCE_PROFILE_3_SLICE;
    case 4: return NVML_COMPUTE_INSTANCE_PROFILE_4_SLICE;
    case 6: return NVML_COMPUTE_INSTANCE_PROFILE_6_SLICE;
    case 7: return NVML_COMPUTE_INSTANCE_PROFILE_7_SLICE;
    default: return NVML_COMPUTE_INSTANCE_PROFILE_8_SLICE;
    }
}

static fake_gi *gi_by_id(const fake_device *gpu, unsigned int id)
{
    for (size_t i = 0; i < MAX_GIS; i++)
        if (gis[i].in_use && gis[i].gpu == gpu && gis[i].id == id)
            return &gis[i];
    return NULL;
}

/* The memory slices the GPU's instances take, one bit each. */
static unsigned int used_memory_slices(const fake_device *gpu)
{
    unsigned int used = 0;
    for (size_t i = 0; i < MAX_GIS; i++)
        if (gis[i].in_use && gis[i].gpu == gpu)
            used |= ((1U << gis[i].profile->memory_slices) - 1)
                    << gis[i].start;
    return used;
}

/* Where a GI of this many memory slices goes: the first free run that
 * fits, else the first free slice (placement is only shown, not checked).
 */
static unsigned int first_fit(const fake_device *gpu, unsigned int size)
{
    unsigned int used = used_memory_slices(gpu), mask = (1U << size) - 1;
    for (unsigned int start = 0; start + size <= ALL_MEMORY_SLICES; start++)
        if (!(used & (mask << start)))
            return start;
    for (unsigned int start = 0; start < ALL_MEMORY_SLICES; start++)
        if (!(used & (1U << start)))
            return start;
    return 0;
}

static fake_gi *new_gi(fake_device *gpu, const gi_profile *profile,
                       unsigned int id, unsigned int start)
{
    for (size_t i = 0; i < MAX_GIS; i++) {
        if (gis[i].in_use)
            continue;
        memset(&gis[i], 0, sizeof(gis[i]));
        memset(&cis[i], 0, sizeof(cis[i]));
        gis[i].in_use = 1;
        gis[i].gpu = gpu;
        gis[i].id = id;
        gis[i].profile = profile;
        gis[i].start = start;
        return &gis[i];
    }
    return NULL;
}

static unsigned long long fnv1a(const char *text, unsigned long long hash)
{
    while (*text) {
        hash ^= (unsigned char)*text++;
        hash *= 0x100000001b3ULL;
    }
    return hash;
}

/* "MIG-xxxxxxxx-xxxx-5xxx-yxxx-xxxxxxxxxxxx", the same for the same GPU,
 * GI and CI in every process. */
static void derive_mig_uuid(char *uuid, size_t size, const char *gpu_uuid,
                            unsigned int gi_id, unsigned int ci_id)
{
    char seed[TEXT + 32];
    unsigned long long high, low;
    snprintf(seed, sizeof(seed), "%s/%u/%u", gpu_uuid, gi_id, ci_id);
    high = fnv1a(seed, 0xcbf29ce484222325ULL);
    low = fnv1a(seed, high ^ 0x9e3779b97f4a7c15ULL);
    snprintf(uuid, size, "MIG-%08llx-%04llx-5%03llx-%04llx-%012llx",
             high >> 32, (high >> 16) & 0xffff, high & 0xfff,
             0x8000 | ((low >> 48) & 0x3fff), low & 0xffffffffffffULL);
}

/* The MIG device of GPU instance gis[i] and its compute instance cis[i],
 * in MIG slot ``slot``; its uuid derived unless given. -1: no room. */
static int make_mig_device(size_t i, unsigned int slot, const char *uuid)
{
    fake_gi *gi = &gis[i];
    fake_device *gpu = gi->gpu, *mig = NULL;
    char name[TEXT];
    unsigned int n;

    if (slot >= MAX_MIGS || gpu->migs[slot])
        return -1;
    if (snprintf(name, sizeof(name), "%s MIG %s", gpu->name,
                 gi->profile->name) >= (int)sizeof(name))
        return -1;
    for (n = 0; n < mig_count && migs[n].in_use; n++)
        ;
    if (n == MAX_GPUS * MAX_MIGS)
        return -1;
    if (n == mig_count)
        mig_count++;
    mig = &migs[n];
    memset(mig, 0, sizeof(*mig));
    mig->in_use = 1;
    mig->parent = gpu;
    mig->slot = slot;
    copy_text(mig->name, TEXT, name);
    if (uuid)
        copy_text(mig->uuid, TEXT, uuid);
    else
        derive_mig_uuid(mig->uuid, TEXT, gpu->uuid, gi->id, cis[i].id);
    mig->memory_total = gi->profile->memory_mb << 20;
    mig->gpu_instance_id = gi->id;
    mig->compute_instance_id = cis[i].id;
    gpu->migs[slot] = mig;
    cis[i].mig = mig;
    return 0;
}

static void drop_mig_device(fake_ci *ci)
{
    if (!ci->mig)
        return;
    ci->mig->parent->migs[ci->mig->slot] = NULL;
    ci->mig->in_use = 0;
    ci->mig = NULL;
}

/* Everything MIG a GPU has, gone: the state file replaces it. A GPU
 * without mig_profiles keeps the MIG devices of the data file (it has no
 * instances to save), only its mode comes from the state file. */
static void forget_instances(fake_device *gpu)
{
    if (!gpu->profiles)
        return;
    for (size_t i = 0; i < MAX_GIS; i++) {
        if (!gis[i].in_use || gis[i].gpu != gpu)
            continue;
        drop_mig_device(&cis[i]);
        cis[i].in_use = 0;
        gis[i].in_use = 0;
    }
    for (unsigned int n = 0; n < mig_count; n++) {
        if (migs[n].in_use && migs[n].parent == gpu) {
            gpu->migs[migs[n].slot] = NULL;
            migs[n].in_use = 0;
        }
    }
}

/* The [mig] sections of a GPU with mig_profiles are its instances. */
static int adopt_data_migs(void)
{
    for (unsigned int n = 0; n < mig_count; n++) {
        fake_device *mig = &migs[n], *gpu = mig->parent;
        const gi_profile *profile;
        fake_gi *gi;
        if (!mig->in_use || !gpu->profiles)
            continue;
        profile = profile_by_mig_name(gpu, mig->name);
        if (!profile || gi_by_id(gpu, mig->gpu_instance_id))
            return -1;
        gi = new_gi(gpu, profile, mig->gpu_instance_id,
                    first_fit(gpu, profile->memory_slices));
        if (!gi)
            return -1;
        cis[gi - gis].in_use = 1;
        cis[gi - gis].id = mig->compute_instance_id;
        cis[gi - gis].mig = mig;
    }
    return 0;
}

/* ------------------------------------------------------------------ */
/* The state file                                                       */

static void state_path(char *path, size_t size)
{
    const char *state = getenv("FAKE_NVML_STATE");
    const char *data = getenv("FAKE_NVML_DATA");
    if (state && *state)
        snprintf(path, size, "%s", state);
    else
        snprintf(path, size, "%s.state", data ? data : "fake-nvml");
}

static fake_device *gpu_by_uuid(const char *uuid)
{
    for (unsigned int i = 0; i < gpu_count; i++)
        if (!strcmp(gpus[i].uuid, uuid))
            return &gpus[i];
    return NULL;
}

/* Written whole after every change, for the GPUs this process or an
 * earlier one changed (the others keep what the data file says). */
static nvmlReturn_t save_state(void)
{
    char path[4096], temporary[4100];
    FILE *file;

    state_path(path, sizeof(path));
    snprintf(temporary, sizeof(temporary), "%s.tmp", path);
    if (!(file = fopen(temporary, "w")))
        goto failed;
    fprintf(file, "# fake_nvml MIG state (format: fake_nvml.c)\n");
    for (unsigned int g = 0; g < gpu_count; g++) {
        const fake_device *gpu = &gpus[g];
        if (!gpu->stateful)
            continue;
        fprintf(file, "gpu %s %d %d\n", gpu->uuid, gpu->mig_mode,
                gpu->mig_pending);
        for (size_t i = 0; i < MAX_GIS; i++) {
            if (!gis[i].in_use || gis[i].gpu != gpu)
                continue;
            fprintf(file, "gi %s %u %u %u\n", gpu->uuid, gis[i].id,
                    gis[i].profile->index, gis[i].start);
            if (cis[i].in_use && cis[i].mig)
                fprintf(file, "ci %s %u %u %u %s\n", gpu->uuid, gis[i].id,
                        cis[i].id, cis[i].mig->slot, cis[i].mig->uuid);
        }
    }
    if (fclose(file) != 0 || rename(temporary, path) != 0)
        goto failed;
    return NVML_SUCCESS;
failed:
    fprintf(stderr, "fake_nvml: cannot write the MIG state to %s\n", path);
    return NVML_ERROR_UNKNOWN;
}

/* After a change that succeeded: count it and keep it. */
static nvmlReturn_t record_change(fake_device *gpu)
{
    gpu->stateful = 1;
    mig_changes++;
    return save_state();
}

/* One line of the state file; -1 if it cannot be used. */
static int state_line(char *line)
{
    char uuid[TEXT], mig_uuid[TEXT];
    unsigned int a, b, c;
    int end = -1;
    fake_device *gpu;

    line = strip(line);
    if (!*line || *line == '#')
        return 0;
    if (sscanf(line, "gpu %95s %u %u %n", uuid, &a, &b, &end) == 3
        && end > 0 && !line[end]) {
        if (a > 1 || b > 1)
            return -1;
        if (!(gpu = gpu_by_uuid(uuid)) || !gpu->has_mig)
            return 0;                    /* not here (any more): skipped */
        forget_instances(gpu);
        gpu->mig_mode = a;
        gpu->mig_pending = b;
        gpu->stateful = 1;
        return 0;
    }
    if (sscanf(line, "gi %95s %u %u %u %n", uuid, &a, &b, &c, &end) == 4
        && end > 0 && !line[end]) {
        const gi_profile *profile;
        if (!(gpu = gpu_by_uuid(uuid)) || !gpu->stateful || !gpu->profiles)
            return 0;
        profile = profile_by_index(gpu, b);
        if (!profile || gi_by_id(gpu, a) || c >= ALL_MEMORY_SLICES)
            return -1;
        return new_gi(gpu, profile, a, c) ? 0 : -1;
    }
    if (sscanf(line, "ci %95s %u %u %u %95s %n", uuid, &a, &b, &c,
               mig_uuid, &end) == 5 && end > 0 && !line[end]) {
        fake_gi *gi;
        size_t i;
        if (!(gpu = gpu_by_uuid(uuid)) || !gpu->stateful || !gpu->profiles)
            return 0;
        if (!(gi = gi_by_id(gpu, a)) || cis[i = gi - gis].in_use)
            return -1;
        cis[i].in_use = 1;
        cis[i].id = b;
        if (make_mig_device(i, c, mig_uuid)) {
            cis[i].in_use = 0;
            return -1;
        }
        return 0;
    }
    return -1;
}

static nvmlReturn_t load_state(void)
{
    char path[4096], line[512];
    int number = 0;
    FILE *file;

    state_path(path, sizeof(path));
    if (!(file = fopen(path, "r")))
        return NVML_SUCCESS;             /* nothing changed yet */
    while (fgets(line, sizeof(line), file)) {
        number++;
        if (state_line(line)) {
            fprintf(stderr, "fake_nvml: %s:%d: cannot use this line\n",
                    path, number);
            fclose(file);
            return NVML_ERROR_UNKNOWN;
        }
    }
    fclose(file);
    return NVML_SUCCESS;
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
    memset(gis, 0, sizeof(gis));
    memset(cis, 0, sizeof(cis));
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
    for (unsigned int i = 0; i < gpu_count; i++)
        if (gpus[i].profiles && !gpus[i].max_mig_devices)
            gpus[i].max_mig_devices = MAX_MIGS;
    if (adopt_data_migs()) {
        fprintf(stderr, "fake_nvml: %s: a [mig] of a GPU with mig_profiles "
                "needs a name ending in \"MIG <profile>\" of its table and "
                "a gpu_instance_id of its own\n", path);
        return NVML_ERROR_UNKNOWN;
    }
    return load_state();
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

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static void forget_event_sets(void);

nvmlReturn_t nvmlInitWithFlags(unsigned int flags)
{
    nvmlReturn_t result = NVML_SUCCESS;
    (void)flags;
    pthread_mutex_lock(&lock);
    if (init_count == 0 && (result = load_data()) != NVML_SUCCESS)
        goto out;
    if ((result = fault_for(&system_faults, __func__)) != NVML_SUCCESS)
        goto out;
    init_count++;
out:
    pthread_mutex_unlock(&lock);
    return result;
}

nvmlReturn_t nvmlInit_v2(void)
{
    return nvmlInitWithFlags(0);
}

nvmlReturn_t nvmlShutdown(void)
{
    nvmlReturn_t result = NVML_SUCCESS;
    pthread_mutex_lock(&lock);
    if (init_count == 0)
        result = NVML_ERROR_UNINITIALIZED;
    else if (--init_count == 0)
        forget_event_sets();        /* the last shutdown frees them all */
    pthread_mutex_unlock(&lock);
    return result;
}

const char *nvmlErrorString(nvmlReturn_t result)
{
    switch (result) {
    case NVML_SUCCESS: return "Success";
    case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
    case NVML_ERROR_NO_PERMISSION: return "Insufficient Permissions";
    case NVML_ERROR_NOT_FOUND: return "Not Found";
    case NVML_ERROR_INSUFFICIENT_SIZE: return "Insufficient Size";
    case NVML_ERROR_DRIVER_NOT_LOADED: return "Driver Not Loaded";
    case NVML_ERROR_TIMEOUT: return "Timeout";
    case NVML_ERROR_GPU_IS_LOST: return "GPU is lost";
    case NVML_ERROR_RESET_REQUIRED: return "GPU requires restart";
    case NVML_ERROR_IN_USE: return "In use by another client";
    case NVML_ERROR_INSUFFICIENT_RESOURCES: return "Insufficient resources";
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

/* The first version: "used" counts what the driver reserves. */
nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device,
                                     nvmlMemory_t *memory)
{
    ENTER(device, dev);
    if (!memory)
        return NVML_ERROR_INVALID_ARGUMENT;
    memory->total = dev->memory_total;
    memory->used = dev->memory_reserved + dev->memory_used;
    memory->free = dev->memory_total - memory->used;
    return NVML_SUCCESS;
}

#ifndef FAKE_NVML_OLD_DRIVER
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
#endif

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

nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t device,
                                      unsigned int *minor)
{
    ENTER(device, dev);
    if (!minor)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (!dev->has_minor)
        return NVML_ERROR_NOT_SUPPORTED;
    *minor = (unsigned int)dev->minor_number;
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
    *current = dev->mig_mode;
    *pending = dev->mig_pending;
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
/* MIG management                                                       */

/* Where a handle points in an array of ``count`` items; count if nowhere. */
static size_t index_in(const void *handle, const void *array, size_t size,
                       size_t count)
{
    uintptr_t at = (uintptr_t)handle, start = (uintptr_t)array;
    if (!handle || at < start || (at - start) % size
        || (at - start) / size >= count)
        return count;
    return (at - start) / size;
}

/* A GI or CI handle is checked as enter() checks a device, against its
 * GPU: lost, or a fault asked for this function. */
static nvmlReturn_t enter_instance(const void *handle, int compute,
                                   const char *function, size_t *out)
{
    size_t i;
    nvmlReturn_t fault;
    if (init_count == 0)
        return NVML_ERROR_UNINITIALIZED;
    i = compute ? index_in(handle, cis, sizeof(cis[0]), MAX_GIS)
                : index_in(handle, gis, sizeof(gis[0]), MAX_GIS);
    if (i == MAX_GIS || !gis[i].in_use || (compute && !cis[i].in_use))
        return NVML_ERROR_INVALID_ARGUMENT;
    if (gis[i].gpu->lost)
        return NVML_ERROR_GPU_IS_LOST;
    if ((fault = fault_for(gis[i].gpu, function)) != NVML_SUCCESS)
        return fault;
    *out = i;
    return NVML_SUCCESS;
}

/* gi: the GPU instance behind ``handle``, index its index in gis/cis. */
#define ENTER_GI(handle, gi, index)                                       \
    size_t index;                                                         \
    fake_gi *gi;                                                          \
    do {                                                                  \
        nvmlReturn_t entered_ = enter_instance(handle, 0, __func__,       \
                                               &index);                   \
        if (entered_ != NVML_SUCCESS)                                     \
            return entered_;                                              \
        gi = &gis[index];                                                 \
    } while (0)

#define ENTER_CI(handle, gi, index)                                       \
    size_t index;                                                         \
    fake_gi *gi;                                                          \
    do {                                                                  \
        nvmlReturn_t entered_ = enter_instance(handle, 1, __func__,       \
                                               &index);                   \
        if (entered_ != NVML_SUCCESS)                                     \
            return entered_;                                              \
        gi = &gis[index];                                                 \
    } while (0)

static unsigned int instance_count(const fake_device *gpu,
                                   const gi_profile *profile)
{
    unsigned int count = 0;
    for (size_t i = 0; i < MAX_GIS; i++)
        if (gis[i].in_use && gis[i].gpu == gpu
            && (!profile || gis[i].profile == profile))
            count++;
    return count;
}

/* Instances need a MIG capable GPU with its profiles, MIG mode on. */
static nvmlReturn_t check_mig_on(const fake_device *dev)
{
    if (dev->parent)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (!dev->has_mig || !dev->profiles || dev->mig_mode != 1)
        return NVML_ERROR_NOT_SUPPORTED;
    return NVML_SUCCESS;
}

/* Profile info answers in either MIG mode, as NVML's does. */
static nvmlReturn_t find_profile(const fake_device *dev, unsigned int index,
                                 const gi_profile **profile)
{
    if (dev->parent || index >= NVML_GPU_INSTANCE_PROFILE_COUNT)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (!dev->has_mig || !dev->profiles
        || !(*profile = profile_by_index(dev, index)))
        return NVML_ERROR_NOT_SUPPORTED;
    return NVML_SUCCESS;
}

/* The one compute profile of a GPU instance: all of its slices. */
static nvmlReturn_t check_compute_profile(const fake_gi *gi,
                                          unsigned int profile)
{
    if (profile >= NVML_COMPUTE_INSTANCE_PROFILE_COUNT)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (profile != whole_compute_profile(gi->profile))
        return NVML_ERROR_NOT_SUPPORTED;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceSetMigMode(nvmlDevice_t device, unsigned int mode,
                                  nvmlReturn_t *activationStatus)
{
    int mode_was, pending_was;
    ENTER(device, dev);
    if (!activationStatus || dev->parent || mode > NVML_DEVICE_MIG_ENABLE)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (!dev->has_mig)
        return NVML_ERROR_NOT_SUPPORTED;
    if (mode == NVML_DEVICE_MIG_DISABLE && instance_count(dev, NULL))
        return NVML_ERROR_IN_USE;
    mode_was = dev->mig_mode;
    pending_was = dev->mig_pending;
    if (dev->mig_reset_required) {
        /* Pending until the GPU is reset, which nothing here does. */
        dev->mig_pending = (int)mode;
        *activationStatus = (int)mode == dev->mig_mode
            ? NVML_SUCCESS : NVML_ERROR_RESET_REQUIRED;
    } else {
        dev->mig_mode = dev->mig_pending = (int)mode;
        *activationStatus = NVML_SUCCESS;
    }
    if (dev->mig_mode == mode_was && dev->mig_pending == pending_was)
        return NVML_SUCCESS;
    return record_change(dev);
}

static void fill_gi_profile(const gi_profile *profile,
                            nvmlGpuInstanceProfileInfo_t *info)
{
    info->id = profile->id;
    info->isP2pSupported = 0;
    info->sliceCount = profile->slices;
    info->instanceCount = profile->instances;
    info->multiprocessorCount = profile->sms;
    info->copyEngineCount = profile->copy_engines;
    info->decoderCount = profile->decoders;
    info->encoderCount = profile->encoders;
    info->jpegCount = profile->jpegs;
    info->ofaCount = profile->ofas;
    info->memorySizeMB = profile->memory_mb;
}

nvmlReturn_t nvmlDeviceGetGpuInstanceProfileInfo(
    nvmlDevice_t device, unsigned int profile,
    nvmlGpuInstanceProfileInfo_t *info)
{
    const gi_profile *found;
    nvmlReturn_t result;
    ENTER(device, dev);
    if (!info)
        return NVML_ERROR_INVALID_ARGUMENT;
    if ((result = find_profile(dev, profile, &found)) != NVML_SUCCESS)
        return result;
    fill_gi_profile(found, info);
    return NVML_SUCCESS;
}

#ifndef FAKE_NVML_OLD_DRIVER
nvmlReturn_t nvmlDeviceGetGpuInstanceProfileInfoV(
    nvmlDevice_t device, unsigned int profile,
    nvmlGpuInstanceProfileInfo_v2_t *info)
{
    const gi_profile *found;
    nvmlGpuInstanceProfileInfo_t v1;
    nvmlReturn_t result;
    ENTER(device, dev);
    if (!info)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (info->version != nvmlGpuInstanceProfileInfo_v2)
        return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    if ((result = find_profile(dev, profile, &found)) != NVML_SUCCESS)
        return result;
    fill_gi_profile(found, &v1);
    info->id = v1.id;
    info->isP2pSupported = v1.isP2pSupported;
    info->sliceCount = v1.sliceCount;
    info->instanceCount = v1.instanceCount;
    info->multiprocessorCount = v1.multiprocessorCount;
    info->copyEngineCount = v1.copyEngineCount;
    info->decoderCount = v1.decoderCount;
    info->encoderCount = v1.encoderCount;
    info->jpegCount = v1.jpegCount;
    info->ofaCount = v1.ofaCount;
    info->memorySizeMB = v1.memorySizeMB;
    snprintf(info->name, sizeof(info->name), "MIG %s", found->name);
    return NVML_SUCCESS;
}
#endif

nvmlReturn_t nvmlDeviceCreateGpuInstance(nvmlDevice_t device,
                                         unsigned int profileId,
                                         nvmlGpuInstance_t *gpuInstance)
{
    const gi_profile *profile;
    unsigned int slices = 0, memory = 0, id;
    nvmlReturn_t result;
    fake_gi *gi;
    ENTER(device, dev);
    if (!gpuInstance)
        return NVML_ERROR_INVALID_ARGUMENT;
    if ((result = check_mig_on(dev)) != NVML_SUCCESS)
        return result;
    if (!(profile = profile_by_id(dev, profileId)))
        return NVML_ERROR_INVALID_ARGUMENT;
    for (size_t i = 0; i < MAX_GIS; i++) {
        if (gis[i].in_use && gis[i].gpu == dev) {
            slices += gis[i].profile->slices;
            memory += gis[i].profile->memory_slices;
        }
    }
    if (instance_count(dev, profile) >= profile->instances
        || slices + profile->slices > ALL_COMPUTE_SLICES
        || memory + profile->memory_slices > ALL_MEMORY_SLICES)
        return NVML_ERROR_INSUFFICIENT_RESOURCES;
    /* As drivers number them: 0 is the whole GPU, the rest from 1. */
    id = profile->slices == ALL_COMPUTE_SLICES ? 0 : 1;
    while (gi_by_id(dev, id))
        id++;
    gi = new_gi(dev, profile, id, first_fit(dev, profile->memory_slices));
    if (!gi)
        return NVML_ERROR_INSUFFICIENT_RESOURCES;
    *gpuInstance = (nvmlGpuInstance_t)gi;
    return record_change(dev);
}

nvmlReturn_t nvmlDeviceGetGpuInstances(nvmlDevice_t device,
                                       unsigned int profileId,
                                       nvmlGpuInstance_t *gpuInstances,
                                       unsigned int *count)
{
    const gi_profile *profile;
    unsigned int found = 0;
    nvmlReturn_t result;
    ENTER(device, dev);
    if (!gpuInstances || !count)
        return NVML_ERROR_INVALID_ARGUMENT;
    if ((result = check_mig_on(dev)) != NVML_SUCCESS)
        return result;
    if (!(profile = profile_by_id(dev, profileId)))
        return NVML_ERROR_INVALID_ARGUMENT;
    /* The caller's array holds the profile's instanceCount. */
    for (size_t i = 0; i < MAX_GIS; i++)
        if (gis[i].in_use && gis[i].gpu == dev && gis[i].profile == profile)
            gpuInstances[found++] = (nvmlGpuInstance_t)&gis[i];
    *count = found;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetGpuInstanceById(nvmlDevice_t device,
                                          unsigned int id,
                                          nvmlGpuInstance_t *gpuInstance)
{
    nvmlReturn_t result;
    fake_gi *gi;
    ENTER(device, dev);
    if (!gpuInstance)
        return NVML_ERROR_INVALID_ARGUMENT;
    if ((result = check_mig_on(dev)) != NVML_SUCCESS)
        return result;
    if (!(gi = gi_by_id(dev, id)))
        return NVML_ERROR_NOT_FOUND;
    *gpuInstance = (nvmlGpuInstance_t)gi;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlGpuInstanceGetInfo(nvmlGpuInstance_t gpuInstance,
                                    nvmlGpuInstanceInfo_t *info)
{
    ENTER_GI(gpuInstance, gi, index);
    (void)index;
    if (!info)
        return NVML_ERROR_INVALID_ARGUMENT;
    info->device = (nvmlDevice_t)gi->gpu;
    info->id = gi->id;
    info->profileId = gi->profile->id;
    info->placement.start = gi->start;
    info->placement.size = gi->profile->memory_slices;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlGpuInstanceDestroy(nvmlGpuInstance_t gpuInstance)
{
    ENTER_GI(gpuInstance, gi, index);
    if (cis[index].in_use)
        return NVML_ERROR_IN_USE;
    gi->in_use = 0;
    return record_change(gi->gpu);
}

static void fill_ci_profile(const fake_gi *gi, unsigned int profile,
                            nvmlComputeInstanceProfileInfo_t *info)
{
    info->id = profile;
    info->sliceCount = gi->profile->slices;
    info->instanceCount = 1;
    info->multiprocessorCount = gi->profile->sms;
    info->sharedCopyEngineCount = gi->profile->copy_engines;
    info->sharedDecoderCount = gi->profile->decoders;
    info->sharedEncoderCount = gi->profile->encoders;
    info->sharedJpegCount = gi->profile->jpegs;
    info->sharedOfaCount = gi->profile->ofas;
}

nvmlReturn_t nvmlGpuInstanceGetComputeInstanceProfileInfo(
    nvmlGpuInstance_t gpuInstance, unsigned int profile,
    unsigned int engProfile, nvmlComputeInstanceProfileInfo_t *info)
{
    nvmlReturn_t result;
    ENTER_GI(gpuInstance, gi, index);
    (void)index;
    if (!info || engProfile >= NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_COUNT)
        return NVML_ERROR_INVALID_ARGUMENT;
    if ((result = check_compute_profile(gi, profile)) != NVML_SUCCESS)
        return result;
    fill_ci_profile(gi, profile, info);
    return NVML_SUCCESS;
}

#ifndef FAKE_NVML_OLD_DRIVER
nvmlReturn_t nvmlGpuInstanceGetComputeInstanceProfileInfoV(
    nvmlGpuInstance_t gpuInstance, unsigned int profile,
    unsigned int engProfile, nvmlComputeInstanceProfileInfo_v2_t *info)
{
    nvmlComputeInstanceProfileInfo_t v1;
    nvmlReturn_t result;
    ENTER_GI(gpuInstance, gi, index);
    (void)index;
    if (!info || engProfile >= NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_COUNT)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (info->version != nvmlComputeInstanceProfileInfo_v2)
        return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    if ((result = check_compute_profile(gi, profile)) != NVML_SUCCESS)
        return result;
    fill_ci_profile(gi, profile, &v1);
    info->id = v1.id;
    info->sliceCount = v1.sliceCount;
    info->instanceCount = v1.instanceCount;
    info->multiprocessorCount = v1.multiprocessorCount;
    info->sharedCopyEngineCount = v1.sharedCopyEngineCount;
    info->sharedDecoderCount = v1.sharedDecoderCount;
    info->sharedEncoderCount = v1.sharedEncoderCount;
    info->sharedJpegCount = v1.sharedJpegCount;
    info->sharedOfaCount = v1.sharedOfaCount;
    /* A compute instance over the whole GI is named like the GI. */
    snprintf(info->name, sizeof(info->name), "MIG %s", gi->profile->name);
    return NVML_SUCCESS;
}
#endif

nvmlReturn_t nvmlGpuInstanceCreateComputeInstance(
    nvmlGpuInstance_t gpuInstance, unsigned int profileId,
    nvmlComputeInstance_t *computeInstance)
{
    unsigned int slot;
    nvmlReturn_t result;
    ENTER_GI(gpuInstance, gi, index);
    if (!computeInstance)
        return NVML_ERROR_INVALID_ARGUMENT;
    if ((result = check_compute_profile(gi, profileId)) != NVML_SUCCESS)
        return result;
    if (cis[index].in_use)
        return NVML_ERROR_INSUFFICIENT_RESOURCES;
    for (slot = 0; slot < gi->gpu->max_mig_devices && gi->gpu->migs[slot];
         slot++)
        ;
    if (slot == gi->gpu->max_mig_devices)
        return NVML_ERROR_INSUFFICIENT_RESOURCES;
    cis[index].in_use = 1;
    cis[index].id = 0;
    if (make_mig_device(index, slot, NULL)) {
        cis[index].in_use = 0;
        return NVML_ERROR_INSUFFICIENT_RESOURCES;
    }
    *computeInstance = (nvmlComputeInstance_t)&cis[index];
    return record_change(gi->gpu);
}

nvmlReturn_t nvmlGpuInstanceGetComputeInstances(
    nvmlGpuInstance_t gpuInstance, unsigned int profileId,
    nvmlComputeInstance_t *computeInstances, unsigned int *count)
{
    nvmlReturn_t result;
    ENTER_GI(gpuInstance, gi, index);
    if (!computeInstances || !count)
        return NVML_ERROR_INVALID_ARGUMENT;
    if ((result = check_compute_profile(gi, profileId)) != NVML_SUCCESS)
        return result;
    *count = 0;
    if (cis[index].in_use)
        computeInstances[(*count)++] = (nvmlComputeInstance_t)&cis[index];
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlComputeInstanceDestroy(nvmlComputeInstance_t computeInstance)
{
    ENTER_CI(computeInstance, gi, index);
    drop_mig_device(&cis[index]);
    cis[index].in_use = 0;
    return record_change(gi->gpu);
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

/* Deprecated since R570 (nvmlDeviceGetTemperatureV), still exported. */
nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t device,
                                      unsigned int sensorType,
                                      unsigned int *temperature)
{
    ENTER(device, dev);
    if (!temperature || dev->parent)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (sensorType != NVML_TEMPERATURE_GPU)
        return NVML_ERROR_NOT_SUPPORTED;
    *temperature = (unsigned int)dev->temperature;
    return NVML_SUCCESS;
}

#ifndef FAKE_NVML_OLD_DRIVER
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
#endif

/* The most vGPUs of a type one GPU makes (nvidia-smi vgpu -s -v). */
nvmlReturn_t nvmlVgpuTypeGetMaxInstances(nvmlDevice_t device,
                                         unsigned int vgpuTypeId,
                                         unsigned int *vgpuInstanceCount)
{
    ENTER(device, dev);
    if (!vgpuInstanceCount || dev->parent)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (!dev->has_vgpu)
        return NVML_ERROR_NOT_SUPPORTED;
    for (unsigned int i = 0; i < dev->vgpu_type_count; i++) {
        if (dev->vgpu_types[i] == vgpuTypeId) {
            *vgpuInstanceCount = dev->vgpu_max[i];
            return NVML_SUCCESS;
        }
    }
    return NVML_ERROR_INVALID_ARGUMENT;
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
    /* Only the uncorrected counters the driver reads are modelled. */
    if (errorType != NVML_MEMORY_ERROR_TYPE_UNCORRECTED)
        return NVML_ERROR_NOT_SUPPORTED;
    if (counterType == NVML_AGGREGATE_ECC) {
        if (!dev->has_ecc_aggregate)
            return NVML_ERROR_NOT_SUPPORTED;
        *count = dev->ecc_uncorrected_aggregate;
        return NVML_SUCCESS;
    }
    if (counterType != NVML_VOLATILE_ECC)
        return NVML_ERROR_NOT_SUPPORTED;
    *count = dev->ecc_uncorrected_volatile;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t device, unsigned int type,
                                    unsigned int *clock)
{
    ENTER(device, dev);
    if (!clock || dev->parent)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (type == NVML_CLOCK_SM && dev->has_clock_sm)
        *clock = dev->clock_sm;
    else if (type == NVML_CLOCK_MEM && dev->has_clock_mem)
        *clock = dev->clock_mem;
    else
        return NVML_ERROR_NOT_SUPPORTED;
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

#ifndef FAKE_NVML_OLD_DRIVER
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
#endif

/* ------------------------------------------------------------------ */
/* Events                                                              */

#define nvmlEventTypeSingleBitEccError 0x0000000000000001ULL
#define nvmlEventTypeDoubleBitEccError 0x0000000000000002ULL
#define nvmlEventTypePState 0x0000000000000004ULL
#define nvmlEventTypeXidCriticalError 0x0000000000000008ULL
#define nvmlEventTypeClock 0x0000000000000010ULL
#define NO_INSTANCE 0xFFFFFFFFU
#define MAX_EVENT_SETS 16
#define EVENT_POLL_NS 5000000L              /* 5 ms */

typedef struct {
    nvmlDevice_t device;
    unsigned long long eventType;
    unsigned long long eventData;
    unsigned int gpuInstanceId;
    unsigned int computeInstanceId;
} nvmlEventData_t;

typedef struct nvmlEventSet_st *nvmlEventSet_t;  /* opaque, as in nvml.h */

typedef struct {
    int in_use;
    char path[4096];
    long offset;                         /* where its next event starts */
    unsigned long long registered[MAX_GPUS];    /* types, by GPU index */
} fake_event_set;

static fake_event_set event_sets[MAX_EVENT_SETS];

static void forget_event_sets(void)
{
    memset(event_sets, 0, sizeof(event_sets));
}

static void events_path(char *path, size_t size)
{
    const char *events = getenv("FAKE_NVML_EVENTS");
    const char *data = getenv("FAKE_NVML_DATA");
    if (events && *events)
        snprintf(path, size, "%s", events);
    else
        snprintf(path, size, "%s.events", data ? data : "fake-nvml");
}

static unsigned long long supported_events(const fake_device *gpu)
{
    unsigned long long types = nvmlEventTypeXidCriticalError
        | nvmlEventTypePState | nvmlEventTypeClock;
    if (gpu->has_event_types)
        return gpu->event_types;
    if (gpu->has_ecc)
        types |= nvmlEventTypeSingleBitEccError
            | nvmlEventTypeDoubleBitEccError;
    return types;
}

static fake_event_set *event_set(nvmlEventSet_t set)
{
    fake_event_set *found = (fake_event_set *)set;
    if (found < event_sets || found >= event_sets + MAX_EVENT_SETS
        || !found->in_use)
        return NULL;
    return found;
}

nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t *set)
{
    nvmlReturn_t result = NVML_ERROR_INSUFFICIENT_RESOURCES;
    struct stat status;
    if (!set)
        return NVML_ERROR_INVALID_ARGUMENT;
    pthread_mutex_lock(&lock);
    if (init_count == 0) {
        result = NVML_ERROR_UNINITIALIZED;
    } else {
        for (int i = 0; i < MAX_EVENT_SETS; i++) {
            fake_event_set *created = &event_sets[i];
            if (created->in_use)
                continue;
            memset(created, 0, sizeof(*created));
            created->in_use = 1;
            events_path(created->path, sizeof(created->path));
            /* Only what happens from now on reaches this set. */
            created->offset = stat(created->path, &status) == 0
                ? (long)status.st_size : 0;
            *set = (nvmlEventSet_t)created;
            result = NVML_SUCCESS;
            break;
        }
    }
    pthread_mutex_unlock(&lock);
    return result;
}

nvmlReturn_t nvmlDeviceGetSupportedEventTypes(nvmlDevice_t device,
                                              unsigned long long *types)
{
    ENTER(device, dev);
    if (!types)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (dev->parent)
        return NVML_ERROR_NOT_SUPPORTED;
    *types = supported_events(dev);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t device,
                                      unsigned long long types,
                                      nvmlEventSet_t set)
{
    fake_event_set *found;
    nvmlReturn_t result = NVML_SUCCESS;
    ENTER(device, dev);
    if (dev->parent || (types & ~supported_events(dev)))
        return NVML_ERROR_NOT_SUPPORTED;
    pthread_mutex_lock(&lock);
    if (!(found = event_set(set)))
        result = NVML_ERROR_INVALID_ARGUMENT;
    else
        found->registered[dev - gpus] |= types;
    pthread_mutex_unlock(&lock);
    return result;
}

/* The next event of the file for this set: NVML_SUCCESS with *data filled,
 * NVML_ERROR_TIMEOUT when none is there yet, NVML_ERROR_UNKNOWN for a
 * line it cannot use. */
static nvmlReturn_t next_event(fake_event_set *set, nvmlEventData_t *data)
{
    char line[512], kind[16], uuid[TEXT];
    unsigned long long number;
    unsigned int gi, ci;
    struct stat status;
    FILE *file;
    nvmlReturn_t result = NVML_ERROR_TIMEOUT;

    if (stat(set->path, &status) != 0)
        return NVML_ERROR_TIMEOUT;
    if ((long)status.st_size < set->offset)
        set->offset = 0;                /* the test wrote the file anew */
    if (!(file = fopen(set->path, "r")))
        return NVML_ERROR_TIMEOUT;
    fseek(file, set->offset, SEEK_SET);
    while (fgets(line, sizeof(line), file)) {
        size_t length = strlen(line);
        char *text;
        int fields;
        fake_device *gpu;
        unsigned long long type;
        if (!length || line[length - 1] != '\n')
            break;                      /* half written: next time */
        set->offset += (long)length;
        text = strip(line);
        if (!*text || *text == '#')
            continue;
        number = 0;
        gi = ci = NO_INSTANCE;
        fields = sscanf(text, "%15s %95s %llu %u %u", kind, uuid, &number,
                        &gi, &ci);
        if (!strcmp(kind, "xid") && (fields == 3 || fields == 5))
            type = nvmlEventTypeXidCriticalError;
        else if (!strcmp(kind, "dbe") && fields == 2)
            type = nvmlEventTypeDoubleBitEccError;
        else if (!strcmp(kind, "sbe") && fields == 2)
            type = nvmlEventTypeSingleBitEccError;
        else {
            fprintf(stderr, "fake_nvml: %s: cannot use event \"%s\"\n",
                    set->path, text);
            result = NVML_ERROR_UNKNOWN;
            break;
        }
        if (!(gpu = gpu_by_uuid(uuid))
            || !(set->registered[gpu - gpus] & type))
            continue;                   /* not asked for by this set */
        data->device = (nvmlDevice_t)gpu;
        data->eventType = type;
        data->eventData = number;
        data->gpuInstanceId = gi;
        data->computeInstanceId = ci;
        result = NVML_SUCCESS;
        break;
    }
    fclose(file);
    return result;
}

static long long now_ns(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (long long)now.tv_sec * 1000000000LL + now.tv_nsec;
}

nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t *data,
                                 unsigned int timeoutms)
{
    long long deadline = now_ns() + (long long)timeoutms * 1000000LL;
    nvmlReturn_t result;

    for (;;) {
        fake_event_set *found;
        pthread_mutex_lock(&lock);
        if (init_count == 0)
            result = NVML_ERROR_UNINITIALIZED;
        else if (!(found = event_set(set)) || !data)
            result = NVML_ERROR_INVALID_ARGUMENT;
        else if ((result = fault_for(&system_faults, __func__))
                 == NVML_SUCCESS)
            result = next_event(found, data);
        if (result == NVML_ERROR_TIMEOUT)
            event_polls++;
        pthread_mutex_unlock(&lock);
        if (result != NVML_ERROR_TIMEOUT)
            return result;
        long long left = deadline - now_ns();
        if (left <= 0)
            return NVML_ERROR_TIMEOUT;
        struct timespec pause = {0, left < EVENT_POLL_NS ? left
                                                         : EVENT_POLL_NS};
        nanosleep(&pause, NULL);
    }
}

nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set)
{
    fake_event_set *found;
    nvmlReturn_t result = NVML_SUCCESS;
    pthread_mutex_lock(&lock);
    if (init_count == 0)
        result = NVML_ERROR_UNINITIALIZED;
    else if (!(found = event_set(set)))
        result = NVML_ERROR_INVALID_ARGUMENT;
    else
        found->in_use = 0;
    pthread_mutex_unlock(&lock);
    return result;
}

/* ------------------------------------------------------------------ */
/* For the tests only: not part of NVML                                 */

/* How many nvmlInit calls no nvmlShutdown has matched yet. */
int fake_nvml_init_count(void)
{
    return init_count;
}

/* How often a blocked nvmlEventSetWait_v2 looked and found no event, all
 * sets together: a test sees a wait blocked before it injects an event. */
int fake_nvml_event_polls(void)
{
    int polls;
    pthread_mutex_lock(&lock);
    polls = event_polls;
    pthread_mutex_unlock(&lock);
    return polls;
}

/* MIG changes (mode, GI or CI created or destroyed) this process made. */
int fake_nvml_mig_changes(void)
{
    return mig_changes;
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
    LAYOUT(nvmlMemory_t, total)
    LAYOUT(nvmlMemory_t, free)
    LAYOUT(nvmlMemory_t, used)
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
    LAYOUT(nvmlEventData_t, device)
    LAYOUT(nvmlEventData_t, eventType)
    LAYOUT(nvmlEventData_t, eventData)
    LAYOUT(nvmlEventData_t, gpuInstanceId)
    LAYOUT(nvmlEventData_t, computeInstanceId)
    LAYOUT(nvmlGpuInstancePlacement_t, start)
    LAYOUT(nvmlGpuInstancePlacement_t, size)
    LAYOUT(nvmlGpuInstanceProfileInfo_t, id)
    LAYOUT(nvmlGpuInstanceProfileInfo_t, isP2pSupported)
    LAYOUT(nvmlGpuInstanceProfileInfo_t, sliceCount)
    LAYOUT(nvmlGpuInstanceProfileInfo_t, instanceCount)
    LAYOUT(nvmlGpuInstanceProfileInfo_t, multiprocessorCount)
    LAYOUT(nvmlGpuInstanceProfileInfo_t, copyEngineCount)
    LAYOUT(nvmlGpuInstanceProfileInfo_t, decoderCount)
    LAYOUT(nvmlGpuInstanceProfileInfo_t, encoderCount)
    LAYOUT(nvmlGpuInstanceProfileInfo_t, jpegCount)
    LAYOUT(nvmlGpuInstanceProfileInfo_t, ofaCount)
    LAYOUT(nvmlGpuInstanceProfileInfo_t, memorySizeMB)
    LAYOUT(nvmlGpuInstanceProfileInfo_v2_t, version)
    LAYOUT(nvmlGpuInstanceProfileInfo_v2_t, id)
    LAYOUT(nvmlGpuInstanceProfileInfo_v2_t, isP2pSupported)
    LAYOUT(nvmlGpuInstanceProfileInfo_v2_t, sliceCount)
    LAYOUT(nvmlGpuInstanceProfileInfo_v2_t, instanceCount)
    LAYOUT(nvmlGpuInstanceProfileInfo_v2_t, multiprocessorCount)
    LAYOUT(nvmlGpuInstanceProfileInfo_v2_t, copyEngineCount)
    LAYOUT(nvmlGpuInstanceProfileInfo_v2_t, decoderCount)
    LAYOUT(nvmlGpuInstanceProfileInfo_v2_t, encoderCount)
    LAYOUT(nvmlGpuInstanceProfileInfo_v2_t, jpegCount)
    LAYOUT(nvmlGpuInstanceProfileInfo_v2_t, ofaCount)
    LAYOUT(nvmlGpuInstanceProfileInfo_v2_t, memorySizeMB)
    LAYOUT(nvmlGpuInstanceProfileInfo_v2_t, name)
    LAYOUT(nvmlGpuInstanceInfo_t, device)
    LAYOUT(nvmlGpuInstanceInfo_t, id)
    LAYOUT(nvmlGpuInstanceInfo_t, profileId)
    LAYOUT(nvmlGpuInstanceInfo_t, placement)
    LAYOUT(nvmlComputeInstanceProfileInfo_t, id)
    LAYOUT(nvmlComputeInstanceProfileInfo_t, sliceCount)
    LAYOUT(nvmlComputeInstanceProfileInfo_t, instanceCount)
    LAYOUT(nvmlComputeInstanceProfileInfo_t, multiprocessorCount)
    LAYOUT(nvmlComputeInstanceProfileInfo_t, sharedCopyEngineCount)
    LAYOUT(nvmlComputeInstanceProfileInfo_t, sharedDecoderCount)
    LAYOUT(nvmlComputeInstanceProfileInfo_t, sharedEncoderCount)
    LAYOUT(nvmlComputeInstanceProfileInfo_t, sharedJpegCount)
    LAYOUT(nvmlComputeInstanceProfileInfo_t, sharedOfaCount)
    LAYOUT(nvmlComputeInstanceProfileInfo_v2_t, version)
    LAYOUT(nvmlComputeInstanceProfileInfo_v2_t, id)
    LAYOUT(nvmlComputeInstanceProfileInfo_v2_t, sliceCount)
    LAYOUT(nvmlComputeInstanceProfileInfo_v2_t, instanceCount)
    LAYOUT(nvmlComputeInstanceProfileInfo_v2_t, multiprocessorCount)
    LAYOUT(nvmlComputeInstanceProfileInfo_v2_t, sharedCopyEngineCount)
    LAYOUT(nvmlComputeInstanceProfileInfo_v2_t, sharedDecoderCount)
    LAYOUT(nvmlComputeInstanceProfileInfo_v2_t, sharedEncoderCount)
    LAYOUT(nvmlComputeInstanceProfileInfo_v2_t, sharedJpegCount)
    LAYOUT(nvmlComputeInstanceProfileInfo_v2_t, sharedOfaCount)
    LAYOUT(nvmlComputeInstanceProfileInfo_v2_t, name)
    return -1;
}
