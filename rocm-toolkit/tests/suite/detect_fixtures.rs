//! Device detection over fixture sysfs/procfs trees and captured tool outputs, all written by
//! these tests.

use std::fs;
use std::path::Path;

use rocm_kernels_core::Backend;
use rocm_toolkit::detect::{
    detect_with, parse_nvidia_proc_information, parse_nvidia_smi, parse_rocminfo, DetectOptions,
    DeviceSource,
};

const GIB: u64 = 1024 * 1024 * 1024;

fn write(path: &Path, text: &str) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

fn script(path: &Path, stdout: &str, exit: i32) {
    use std::os::unix::fs::PermissionsExt;
    let data = path.with_extension("out");
    write(&data, stdout);
    write(
        path,
        &format!("#!/bin/sh\ncat '{}'\nexit {exit}\n", data.display()),
    );
    fs::set_permissions(path, fs::Permissions::from_mode(0o755)).unwrap();
}

/// A KFD GPU node as the amdgpu driver writes it (subset of the real keys, real values).
#[allow(clippy::too_many_arguments)]
fn gpu_node(
    nodes: &Path,
    id: u32,
    gfx_target_version: u32,
    simd_count: u32,
    simd_per_cu: u32,
    wave: u32,
    device_id: u32,
    location_id: u32,
    vram: u64,
) {
    let dir = nodes.join(id.to_string());
    write(
        &dir.join("properties"),
        &format!(
            "cpu_cores_count 0\nsimd_count {simd_count}\nmem_banks_count 1\ncaches_count 0\n\
             io_links_count 1\ncpu_core_id_base 0\nsimd_id_base 2147487744\n\
             max_waves_per_simd 8\nlds_size_in_kb 64\ngds_size_in_kb 0\nnum_gws 64\n\
             wave_front_size {wave}\narray_count 8\nsimd_arrays_per_engine 1\n\
             cu_per_simd_array 13\nsimd_per_cu {simd_per_cu}\nmax_slots_scratch_cu 32\n\
             gfx_target_version {gfx_target_version}\nvendor_id 4098\ndevice_id {device_id}\n\
             location_id {location_id}\ndomain 0\ndrm_render_minor 128\nhive_id 0\n\
             num_sdma_engines 2\nlocal_mem_size 0\nfw_version 80\ncapability 746816128\n\
             max_engine_clk_ccompute 3700\n"
        ),
    );
    write(&dir.join("name"), "\n");
    write(
        &dir.join("mem_banks/0/properties"),
        &format!("heap_type 1\nsize_in_bytes {vram}\nflags 0\nwidth 4096\nmem_clk_max 1600\n"),
    );
}

fn cpu_node(nodes: &Path, id: u32) {
    write(
        &nodes.join(format!("{id}/properties")),
        "cpu_cores_count 64\nsimd_count 0\nmem_banks_count 1\ngfx_target_version 0\n\
         vendor_id 0\ndevice_id 0\nlocation_id 0\n",
    );
}

fn cpuinfo(root: &Path) {
    write(
        &root.join("proc/cpuinfo"),
        "processor\t: 0\nmodel name\t: AMD EPYC 9654 96-Core Processor\n\n\
         processor\t: 1\nmodel name\t: AMD EPYC 9654 96-Core Processor\n",
    );
    write(
        &root.join("proc/meminfo"),
        "MemTotal:       32768000 kB\nMemFree: 1 kB\n",
    );
}

#[testkit::test]
fn kfd_topology_decodes_every_gpu_and_skips_cpu_and_broken_nodes() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    cpuinfo(root);
    let nodes = root.join("sys/class/kfd/kfd/topology/nodes");
    cpu_node(&nodes, 0);
    gpu_node(&nodes, 1, 90010, 416, 4, 64, 0x740f, 0x0300, 64 * GIB); // MI210
    gpu_node(&nodes, 2, 90402, 1216, 4, 64, 0x74a1, 0x1900, 192 * GIB); // MI300X
    gpu_node(&nodes, 3, 110000, 192, 2, 32, 0x744c, 0xc300, 24 * GIB); // RX 7900 XTX
    gpu_node(&nodes, 4, 110501, 80, 2, 32, 0x1586, 0xc400, 0); // Strix Halo (APU, no VRAM)
                                                               // Unreadable: `properties` is a folder (root can read any file, so a mode would not do).
    fs::create_dir_all(nodes.join("5/properties")).unwrap();
    // Malformed lines around valid ones: listed, with notes.
    gpu_node(&nodes, 6, 90008, 480, 4, 64, 0x738c, 0x0400, 32 * GIB); // MI100
    let props = nodes.join("6/properties");
    let text = fs::read_to_string(&props).unwrap();
    fs::write(&props, format!("{text}garbage\nlds_size_in_kb lots\n")).unwrap();
    // A GPU node whose version is nonsense: skipped with a note.
    write(
        &nodes.join("7/properties"),
        "simd_count 64\nsimd_per_cu 4\ngfx_target_version 91799\n",
    );
    // No simd_count at all.
    write(&nodes.join("8/properties"), "cpu_cores_count 4\n");
    // Not a node folder: ignored.
    write(&nodes.join("README"), "x");

    let found = detect_with(&DetectOptions::fixture(root));
    let amd: Vec<_> = found.devices_of(Backend::Amd).collect();
    let archs: Vec<&str> = amd.iter().map(|d| d.arch.as_deref().unwrap()).collect();
    assert_eq!(archs, ["gfx90a", "gfx942", "gfx1100", "gfx1151", "gfx908"]);
    assert!(amd
        .iter()
        .all(|d| d.source == DeviceSource::KfdSysfs && !d.guess));

    let mi210 = amd[0];
    assert_eq!(mi210.name, "AMD Instinct MI210");
    assert_eq!(mi210.compute_units, Some(104));
    assert_eq!(mi210.wave_sizes, [64]);
    assert_eq!(mi210.lds_bytes, Some(64 * 1024));
    assert_eq!(mi210.memory_bytes, Some(64 * GIB));
    assert_eq!(mi210.pci_address.as_deref(), Some("0000:03:00.0"));
    assert_eq!(amd[1].name, "AMD Instinct MI300X");
    assert_eq!(amd[1].compute_units, Some(304));
    assert_eq!(amd[1].pci_address.as_deref(), Some("0000:19:00.0"));
    assert_eq!(amd[2].compute_units, Some(96));
    assert_eq!(amd[2].wave_sizes, [32]);
    assert_eq!(amd[3].compute_units, Some(40));
    assert_eq!(amd[3].memory_bytes, None, "no VRAM heap on an APU node");
    assert_eq!(
        amd[4].lds_bytes,
        Some(64 * 1024),
        "the valid line still counts"
    );

    let notes = found.notes.join("\n");
    assert!(
        notes.contains("KFD node 5: cannot read") && notes.contains("node skipped"),
        "{notes}"
    );
    assert!(
        notes.contains("KFD node 6: ignored malformed line `garbage`"),
        "{notes}"
    );
    assert!(
        notes.contains("`lds_size_in_kb lots` (value is not a number)"),
        "{notes}"
    );
    assert!(
        notes.contains("KFD node 7: gfx_target_version 91799"),
        "{notes}"
    );
    assert!(
        notes.contains("KFD node 8") && notes.contains("no simd_count"),
        "{notes}"
    );

    // The CPU backend is always there.
    let cpu: Vec<_> = found.devices_of(Backend::Cpu).collect();
    assert_eq!(cpu.len(), 1);
    assert_eq!(cpu[0].name, "AMD EPYC 9654 96-Core Processor");
    assert_eq!(cpu[0].compute_units, Some(2));
    assert_eq!(cpu[0].memory_bytes, Some(32768000 * 1024));
}

#[testkit::test]
fn empty_machine_has_only_the_cpu_and_says_why() {
    let tmp = tempfile::tempdir().unwrap();
    let found = detect_with(&DetectOptions::fixture(tmp.path()));
    assert_eq!(found.devices.len(), 1);
    assert_eq!(found.devices[0].backend, Backend::Cpu);
    assert_eq!(found.devices[0].name, "host CPU");
    let notes = found.notes.join("\n");
    assert!(
        notes.contains("kfd/topology/nodes does not exist"),
        "{notes}"
    );
    assert!(notes.contains("cpuinfo"), "{notes}");
}

const ROCMINFO: &str = "\
ROCk module is loaded
=====================
HSA System Attributes
=====================
Runtime Version:         1.1
Machine Model:           LARGE

==========
HSA Agents
==========
*******
Agent 1
*******
  Name:                    AMD EPYC 7763 64-Core Processor
  Marketing Name:          AMD EPYC 7763 64-Core Processor
  Vendor Name:             CPU
  Device Type:             CPU
  Compute Unit:            128
  Pool Info:
    Pool 1
      Segment:                 GLOBAL; FLAGS: FINE GRAINED
      Size:                    527937640(0x1f7796e8) KB
  ISA Info:
*******
Agent 2
*******
  Name:                    gfx90a
  Uuid:                    GPU-6f2a4a2d3a5b7c11
  Marketing Name:          AMD Instinct MI210
  Vendor Name:             AMD
  Feature:                 KERNEL_DISPATCH
  Device Type:             GPU
  Chip ID:                 29711(0x740f)
  BDFID:                   25344
  Compute Unit:            104
  SIMDs per CU:            4
  Wavefront Size:          64(0x40)
  Workgroup Max Size:      1024(0x400)
  Pool Info:
    Pool 1
      Segment:                 GLOBAL; FLAGS: COARSE GRAINED
      Size:                    67092480(0x3ffc000) KB
      Allocatable:             TRUE
    Pool 2
      Segment:                 GROUP
      Size:                    64(0x40) KB
  ISA Info:
    ISA 1
      Name:                    amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-
      Workgroup Max Size:      1024(0x400)
*******
Agent 3
*******
  Name:                    gfx1100
  Marketing Name:
  Device Type:             GPU
  Chip ID:                 29772(0x744c)
  Compute Unit:            96
  Wavefront Size:          32(0x20)
  ISA Info:
    ISA 1
      Name:                    amdgcn-amd-amdhsa--gfx1100
";

#[testkit::test]
fn rocminfo_output_is_parsed() {
    let gpus = parse_rocminfo(ROCMINFO);
    assert_eq!(gpus.len(), 2);
    let mi210 = &gpus[0];
    assert_eq!(mi210.name, "AMD Instinct MI210");
    assert_eq!(mi210.arch.as_deref(), Some("gfx90a"));
    assert_eq!(mi210.compute_units, Some(104));
    assert_eq!(mi210.wave_sizes, [64]);
    assert_eq!(mi210.lds_bytes, Some(64 * 1024));
    assert_eq!(mi210.memory_bytes, Some(67092480 * 1024));
    assert_eq!(mi210.pci_address.as_deref(), Some("0000:63:00.0"));
    assert_eq!(mi210.source, DeviceSource::Rocminfo);
    // Empty marketing name: named from the chip ID.
    assert_eq!(gpus[1].name, "AMD Radeon RX 7900 XT/XTX");
    assert_eq!(gpus[1].arch.as_deref(), Some("gfx1100"));
    assert_eq!(gpus[1].wave_sizes, [32]);

    // rocminfo on a machine without /dev/kfd access.
    assert!(parse_rocminfo("ROCk module is NOT loaded, possibly no GPU devices\n").is_empty());
    assert!(parse_rocminfo("").is_empty());
}

#[testkit::test]
fn rocminfo_is_used_when_kfd_sysfs_is_absent_and_lspci_last() {
    let tmp = tempfile::tempdir().unwrap();
    let rocminfo = tmp.path().join("bin/rocminfo");
    script(&rocminfo, ROCMINFO, 0);
    let found = detect_with(&DetectOptions {
        rocminfo: Some(rocminfo),
        ..DetectOptions::fixture(tmp.path())
    });
    let amd: Vec<_> = found.devices_of(Backend::Amd).collect();
    assert_eq!(amd.len(), 2);
    assert!(amd.iter().all(|d| d.source == DeviceSource::Rocminfo));

    // rocminfo sees nothing; lspci sees an MI300X: listed, flagged a guess, with a note.
    let rocminfo = tmp.path().join("bin/rocminfo-empty");
    script(
        &rocminfo,
        "ROCk module is NOT loaded, possibly no GPU devices\n",
        0,
    );
    let lspci = tmp.path().join("bin/lspci");
    script(
        &lspci,
        "00:00.0 Host bridge [0600]: Intel Corporation Device [8086:0d57]\n\
         0000:19:00.0 Processing accelerators [1200]: Advanced Micro Devices, Inc. [AMD/ATI] \
         Aqua Vanjaram [Instinct MI300X] [1002:74a1]\n",
        0,
    );
    let found = detect_with(&DetectOptions {
        rocminfo: Some(rocminfo),
        lspci: Some(lspci),
        ..DetectOptions::fixture(tmp.path())
    });
    let amd: Vec<_> = found.devices_of(Backend::Amd).collect();
    assert_eq!(amd.len(), 1);
    assert!(amd[0].guess);
    assert_eq!(amd[0].arch.as_deref(), Some("gfx942"));
    assert_eq!(amd[0].source, DeviceSource::Lspci);
    assert!(
        found
            .notes
            .iter()
            .any(|n| n.contains("found by lspci only") && n.contains("guess")),
        "{:?}",
        found.notes
    );
}

const NVIDIA_SMI: &str = "\
0, NVIDIA H100 80GB HBM3, 9.0, 81559, 00000000:19:00.0
1, NVIDIA A100-SXM4-40GB, 8.0, 40960, 00000000:3B:00.0
";

#[testkit::test]
fn nvidia_smi_csv_is_parsed() {
    let gpus = parse_nvidia_smi(NVIDIA_SMI);
    assert_eq!(gpus.len(), 2);
    assert_eq!(gpus[0].name, "NVIDIA H100 80GB HBM3");
    assert_eq!(gpus[0].compute_capability.as_deref(), Some("9.0"));
    assert_eq!(gpus[0].arch.as_deref(), Some("sm_90"));
    assert_eq!(gpus[0].memory_bytes, Some(81559 * 1024 * 1024));
    assert_eq!(gpus[0].pci_address.as_deref(), Some("0000:19:00.0"));
    assert_eq!(gpus[0].wave_sizes, [32]);
    assert!(!gpus[0].guess);
    assert_eq!(gpus[1].arch.as_deref(), Some("sm_80"));
    assert_eq!(gpus[1].pci_address.as_deref(), Some("0000:3b:00.0"));
    // A field nvidia-smi could not fill (`[N/A]`) leaves that value unknown, not a panic.
    let odd = parse_nvidia_smi("0, Some GPU, [N/A], [N/A], 00000000:01:00.0\nnot csv\n");
    assert_eq!(odd.len(), 1);
    assert_eq!(odd[0].compute_capability, None);
    assert_eq!(odd[0].memory_bytes, None);
}

#[testkit::test]
fn nvidia_smi_is_run_and_proc_is_the_fallback() {
    let tmp = tempfile::tempdir().unwrap();
    let smi = tmp.path().join("bin/nvidia-smi");
    script(&smi, NVIDIA_SMI, 0);
    let found = detect_with(&DetectOptions {
        nvidia_smi: Some(smi),
        ..DetectOptions::fixture(tmp.path())
    });
    assert_eq!(found.devices_of(Backend::Nvidia).count(), 2);

    // nvidia-smi fails (driver/library mismatch): /proc/driver/nvidia is read instead.
    let smi = tmp.path().join("bin/nvidia-smi-broken");
    script(
        &smi,
        "Failed to initialize NVML: Driver/library version mismatch\n",
        18,
    );
    write(
        &tmp.path()
            .join("proc/driver/nvidia/gpus/0000:19:00.0/information"),
        "Model: \t\t NVIDIA H100 80GB HBM3\nIRQ:   \t\t 139\nGPU UUID: \t GPU-1234\n\
         Bus Type: \t PCIe\nBus Location: \t 0000:19:00.0\nDevice Minor: \t 0\n",
    );
    write(
        &tmp.path()
            .join("proc/driver/nvidia/gpus/0000:3b:00.0/information"),
        "IRQ: 140\n",
    );
    let found = detect_with(&DetectOptions {
        nvidia_smi: Some(smi),
        ..DetectOptions::fixture(tmp.path())
    });
    let nv: Vec<_> = found.devices_of(Backend::Nvidia).collect();
    assert_eq!(nv.len(), 1);
    assert_eq!(nv[0].source, DeviceSource::NvidiaProc);
    assert_eq!(nv[0].compute_capability.as_deref(), Some("9.0"));
    assert!(nv[0].guess, "compute capability from the name is a guess");
    let notes = found.notes.join("\n");
    assert!(
        notes.contains("nvidia-smi failed") && notes.contains("mismatch"),
        "{notes}"
    );
    assert!(notes.contains("no `Model:` line"), "{notes}");
}

#[testkit::test]
fn proc_information_parses_model_and_bus() {
    let dev =
        parse_nvidia_proc_information("Model: \t\t Tesla T4\nBus Location: \t 0000:AF:00.0\n")
            .unwrap();
    assert_eq!(dev.name, "Tesla T4");
    assert_eq!(dev.arch.as_deref(), Some("sm_75"));
    assert_eq!(dev.pci_address.as_deref(), Some("0000:af:00.0"));
    assert_eq!(parse_nvidia_proc_information("garbage"), None);
}
