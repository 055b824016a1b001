//! The numbers the amd backend hard-codes (enum values, the legacy `hipDeviceProp_t` offsets)
//! against HIP's own headers, by compiling a C program with them. Debian's libamdhip64-dev puts
//! the ROCm 5.2 headers in /usr/include/hip; set ROCM_KERNELS_TEST_HIP_INCLUDE to check others.

use std::path::PathBuf;
use std::process::Command;

use rocm_kernels::runtime::amd::sys;

const PROGRAM: &str = r#"
#define __HIP_PLATFORM_AMD__
#include <hip/hip_runtime_api.h>
#include <stddef.h>
#include <stdio.h>
int main(void) {
    printf("%d %d %d %d %d %d %d\n", (int)hipDeviceAttributeMultiprocessorCount,
           (int)hipDeviceAttributePciBusId, (int)hipDeviceAttributePciDeviceId,
           (int)hipDeviceAttributePciDomainID, (int)hipDeviceAttributeWarpSize,
           (int)hipErrorNotFound, (int)hipSuccess);
    printf("%zu %zu %zu %zu %zu\n", offsetof(hipDeviceProp_t, name),
           offsetof(hipDeviceProp_t, warpSize), offsetof(hipDeviceProp_t, gcnArchName),
           sizeof(((hipDeviceProp_t *)0)->gcnArchName), sizeof(hipDeviceProp_t));
    return 0;
}
"#;

fn hip_include() -> PathBuf {
    std::env::var_os("ROCM_KERNELS_TEST_HIP_INCLUDE")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/include"))
}

const HIP_HEADERS: testkit::Need = testkit::Need::check(
    "HIP headers (hip/hip_runtime_api.h)",
    "apt-get install libamdhip64-dev, or set ROCM_KERNELS_TEST_HIP_INCLUDE",
    testkit::Kind::Tool,
    || {
        let header = hip_include().join("hip/hip_runtime_api.h");
        if header.exists() {
            Ok(())
        } else {
            Err(format!("{} does not exist", header.display()))
        }
    },
);

#[testkit::test(needs = [HIP_HEADERS])]
fn hard_coded_values_match_the_hip_headers() {
    let include = hip_include();
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("abi.c");
    std::fs::write(&source, PROGRAM).unwrap();
    let exe = dir.path().join("abi");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let built = Command::new(&cc)
        .arg("-I")
        .arg(&include)
        .arg(&source)
        .arg("-o")
        .arg(&exe)
        .output()
        .unwrap();
    assert!(
        built.status.success(),
        "{}",
        String::from_utf8_lossy(&built.stderr)
    );
    let out = Command::new(&exe).output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let numbers: Vec<Vec<i64>> = text
        .lines()
        .map(|l| l.split_whitespace().map(|n| n.parse().unwrap()).collect())
        .collect();
    assert_eq!(
        numbers[0],
        [
            sys::ATTR_MULTIPROCESSOR_COUNT,
            sys::ATTR_PCI_BUS_ID,
            sys::ATTR_PCI_DEVICE_ID,
            sys::ATTR_PCI_DOMAIN_ID,
            sys::ATTR_WARP_SIZE,
            sys::HIP_ERROR_NOT_FOUND,
            sys::HIP_SUCCESS,
        ]
        .map(i64::from)
    );
    use sys::props_r0000 as p;
    assert_eq!(
        numbers[1],
        [
            p::NAME_OFFSET,
            p::WARP_SIZE_OFFSET,
            p::GCN_ARCH_NAME_OFFSET,
            p::STRING_LEN,
            p::STRUCT_SIZE
        ]
        .map(|n| n as i64)
    );
}
