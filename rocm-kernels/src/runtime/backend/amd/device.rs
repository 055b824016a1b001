//! [`AmdDevice`] (one HIP device ordinal), its streams and events.
//!
//! HIP's current device is per host thread, so every call that touches a device first makes it
//! current (`hipSetDevice`): devices can be used from any thread in any order.

use std::any::Any;
use std::ffi::c_void;
use std::path::Path;
use std::sync::Arc;

use super::arch::{self, PciAddress};
use super::library::HipLibrary;
use super::module::AmdModule;
use super::sys::*;
use super::TargetId;
use crate::library::{Backend, KernelLibrary};
use crate::runtime::backend::{
    DeviceBackend, DevicePtr, EventBackend, ModuleBackend, StreamBackend,
};
use crate::runtime::{DeviceInfo, Result, RuntimeError};

/// A HIP handle shared between threads. HIP's handles are safe to use from any thread.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Handle(pub *mut c_void);
// Safety: stream, event, module and function handles are thread-safe in HIP.
unsafe impl Send for Handle {}
unsafe impl Sync for Handle {}

/// One AMD GPU, as HIP device `ordinal`.
#[derive(Debug)]
pub struct AmdDevice {
    pub(crate) hip: &'static HipLibrary,
    pub(crate) ordinal: i32,
    pub(crate) target: TargetId,
    info: DeviceInfo,
}

impl AmdDevice {
    /// Open HIP device `ordinal` (after `hipInit`): its name, wave size, memory and gfx target.
    pub(crate) fn open(hip: &'static HipLibrary, ordinal: i32) -> Result<AmdDevice> {
        hip.set_device(ordinal)?;
        let name = hip.device_name(ordinal)?;
        let wave_size = hip.device_attribute(ATTR_WARP_SIZE, ordinal)?;
        let compute_units = hip.device_attribute(ATTR_MULTIPROCESSOR_COUNT, ordinal)?;
        let total_memory = hip.total_memory(ordinal)?;
        let wave_size = u32::try_from(wave_size).unwrap_or(0);
        let target = device_target(hip, ordinal, &name, wave_size)?;
        let info = DeviceInfo {
            backend: Backend::Amd,
            // The full target id (with xnack/sramecc) is for people; `arch` is what matches.
            name: if name.is_empty() {
                format!("AMD GPU {ordinal} ({target})")
            } else {
                format!("{name} ({target})")
            },
            arch: target.processor.clone(),
            wave_size,
            total_memory,
            compute_units: u32::try_from(compute_units).unwrap_or(0),
        };
        Ok(AmdDevice {
            hip,
            ordinal,
            target,
            info,
        })
    }

    pub(crate) fn make_current(&self) -> Result<()> {
        self.hip.set_device(self.ordinal)
    }

    /// The HIP stream behind `stream`, if it is a stream of this device.
    fn raw_stream(&self, stream: &dyn StreamBackend) -> Result<hipStream_t> {
        amd_stream_of(stream, self.hip, self.ordinal).map(|s| s.raw.0)
    }
}

/// `stream` as a stream of HIP device `ordinal` of library `hip`, or a `WrongDevice` error.
pub(crate) fn amd_stream_of<'a>(
    stream: &'a dyn StreamBackend,
    hip: &'static HipLibrary,
    ordinal: i32,
) -> Result<&'a AmdStream> {
    match stream.as_any().downcast_ref::<AmdStream>() {
        Some(s) if s.ordinal == ordinal && std::ptr::eq(s.hip, hip) => Ok(s),
        Some(s) => Err(RuntimeError::WrongDevice(format!(
            "a stream of AMD device {} was used with AMD device {ordinal}",
            s.ordinal
        ))),
        None => Err(RuntimeError::WrongDevice(
            "a stream of another backend was used with an AMD device".into(),
        )),
    }
}

/// The target id of a device: `gcnArchName` from the device properties, else the KFD topology
/// (see [`arch`] for why both).
fn device_target(
    hip: &'static HipLibrary,
    ordinal: i32,
    name: &str,
    wave_size: u32,
) -> Result<TargetId> {
    let from_props = hip
        .device_properties_raw(ordinal)
        .map_err(|e| e.to_string())
        .and_then(|props| arch::target_from_properties(&props, name, wave_size));
    let props_error = match from_props {
        Ok(target) => return Ok(target),
        Err(error) => error,
    };
    let pci = (|| -> Result<PciAddress> {
        Ok(PciAddress {
            domain: hip.device_attribute(ATTR_PCI_DOMAIN_ID, ordinal)? as u32,
            bus: hip.device_attribute(ATTR_PCI_BUS_ID, ordinal)? as u32,
            device: hip.device_attribute(ATTR_PCI_DEVICE_ID, ordinal)? as u32,
        })
    })();
    let kfd_error = match pci {
        Ok(pci) => {
            match arch::target_from_kfd(Path::new("/sys/class/kfd/kfd/topology/nodes"), pci) {
                Ok(target) => return Ok(target),
                Err(error) => error,
            }
        }
        Err(error) => error.to_string(),
    };
    Err(RuntimeError::Api {
        backend: Backend::Amd,
        call: "gcnArchName".into(),
        message: format!(
            "cannot tell which gfx target HIP device {ordinal} is: from \
             hipGetDeviceProperties: {props_error}; from KFD: {kfd_error}"
        ),
    })
}

impl DeviceBackend for AmdDevice {
    fn info(&self) -> &DeviceInfo {
        &self.info
    }

    fn alloc(&self, bytes: usize) -> Result<DevicePtr> {
        self.make_current()?;
        self.hip.malloc(bytes)
    }

    unsafe fn free(&self, ptr: DevicePtr, _bytes: usize) {
        // Nothing to report to: the buffer is being dropped. hipFree waits for work using it.
        if self.make_current().is_ok() {
            let _ = self.hip.free(ptr);
        }
    }

    fn alloc_host(&self, bytes: usize) -> Result<*mut u8> {
        self.make_current()?;
        self.hip.host_malloc(bytes)
    }

    unsafe fn free_host(&self, ptr: *mut u8, _bytes: usize) {
        // As `free`: nothing to report to. hipHostFree waits for copies using it.
        if self.make_current().is_ok() {
            let _ = self.hip.host_free(ptr);
        }
    }

    fn new_stream(&self) -> Result<Box<dyn StreamBackend>> {
        self.make_current()?;
        let raw = self.hip.stream_create()?;
        Ok(Box::new(AmdStream {
            hip: self.hip,
            ordinal: self.ordinal,
            raw: Handle(raw),
        }))
    }

    fn new_event(&self) -> Result<Box<dyn EventBackend>> {
        self.make_current()?;
        let raw = self.hip.event_create()?;
        Ok(Box::new(AmdEvent {
            hip: self.hip,
            ordinal: self.ordinal,
            raw: Handle(raw),
        }))
    }

    unsafe fn copy_to_device(
        &self,
        dst: DevicePtr,
        src: *const u8,
        bytes: usize,
        stream: &dyn StreamBackend,
    ) -> Result<()> {
        let stream = self.raw_stream(stream)?;
        self.make_current()?;
        self.hip.memcpy_htod_async(dst, src, bytes, stream)
    }

    unsafe fn copy_to_host(
        &self,
        dst: *mut u8,
        src: DevicePtr,
        bytes: usize,
        stream: &dyn StreamBackend,
    ) -> Result<()> {
        let stream = self.raw_stream(stream)?;
        self.make_current()?;
        self.hip.memcpy_dtoh_async(dst, src, bytes, stream)
    }

    unsafe fn copy_on_device(
        &self,
        dst: DevicePtr,
        src: DevicePtr,
        bytes: usize,
        stream: &dyn StreamBackend,
    ) -> Result<()> {
        let stream = self.raw_stream(stream)?;
        self.make_current()?;
        self.hip.memcpy_dtod_async(dst, src, bytes, stream)
    }

    unsafe fn fill(
        &self,
        dst: DevicePtr,
        pattern: &[u8],
        count: usize,
        stream: &dyn StreamBackend,
    ) -> Result<()> {
        let raw = self.raw_stream(stream)?;
        self.make_current()?;
        let total = pattern.len() * count;
        if total == 0 {
            return Ok(());
        }
        match fill_plan(pattern, dst) {
            FillPlan::Bytes(value) => self.hip.memset_d8_async(dst, value, total, raw),
            FillPlan::Halves(value) => self.hip.memset_d16_async(dst, value, count, raw),
            FillPlan::Words(value) => self.hip.memset_d32_async(dst, value, count, raw),
            FillPlan::Doubling => {
                // One copy of the pattern from the host, then copies of what is already filled
                // onto what follows it: log2(count) device copies and no host staging buffer.
                self.hip
                    .memcpy_htod_async(dst, pattern.as_ptr(), pattern.len(), raw)?;
                // `pattern` is only borrowed for this call: wait for HIP to have read it.
                self.hip.stream_synchronize(raw)?;
                let mut filled = pattern.len();
                while filled < total {
                    let chunk = filled.min(total - filled);
                    self.hip
                        .memcpy_dtod_async(dst + filled as u64, dst, chunk, raw)?;
                    filled += chunk;
                }
                Ok(())
            }
        }
    }

    fn load_module(&self, library: &'static KernelLibrary) -> Result<Arc<dyn ModuleBackend>> {
        self.make_current()?;
        Ok(Arc::new(AmdModule::load(self, library)?))
    }

    fn synchronize(&self) -> Result<()> {
        self.make_current()?;
        self.hip.device_synchronize()
    }
}

/// How to fill memory with copies of a pattern.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FillPlan {
    /// Every byte of the pattern is this value: `hipMemsetD8`.
    Bytes(u8),
    /// A 2-byte pattern at a 2-byte aligned address: `hipMemsetD16`.
    Halves(u16),
    /// A 4-byte pattern at a 4-byte aligned address: `hipMemsetD32`.
    Words(u32),
    /// Anything else: write one copy, then double it with device-to-device copies.
    Doubling,
}

pub(crate) fn fill_plan(pattern: &[u8], dst: u64) -> FillPlan {
    match pattern {
        [first, rest @ ..] if rest.iter().all(|b| b == first) => FillPlan::Bytes(*first),
        [a, b] if dst.is_multiple_of(2) => FillPlan::Halves(u16::from_ne_bytes([*a, *b])),
        [a, b, c, d] if dst.is_multiple_of(4) => {
            FillPlan::Words(u32::from_ne_bytes([*a, *b, *c, *d]))
        }
        _ => FillPlan::Doubling,
    }
}

/// A HIP stream of one device.
#[derive(Debug)]
pub struct AmdStream {
    pub(crate) hip: &'static HipLibrary,
    pub(crate) ordinal: i32,
    pub(crate) raw: Handle,
}

impl StreamBackend for AmdStream {
    fn synchronize(&self) -> Result<()> {
        self.hip.stream_synchronize(self.raw.0)
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

impl Drop for AmdStream {
    fn drop(&mut self) {
        // Safety: created by hipStreamCreate, destroyed once. HIP lets queued work finish.
        if self.hip.set_device(self.ordinal).is_ok() {
            let _ = unsafe { self.hip.stream_destroy(self.raw.0) };
        }
    }
}

/// A HIP event of one device.
#[derive(Debug)]
pub struct AmdEvent {
    hip: &'static HipLibrary,
    ordinal: i32,
    raw: Handle,
}

impl EventBackend for AmdEvent {
    fn record(&self, stream: &dyn StreamBackend) -> Result<()> {
        let stream = amd_stream_of(stream, self.hip, self.ordinal)?;
        self.hip.set_device(self.ordinal)?;
        self.hip.event_record(self.raw.0, stream.raw.0)
    }

    fn synchronize(&self) -> Result<()> {
        self.hip.event_synchronize(self.raw.0)
    }

    fn elapsed_ms(&self, end: &dyn EventBackend) -> Result<f32> {
        let end = end
            .as_any()
            .downcast_ref::<AmdEvent>()
            .filter(|e| e.ordinal == self.ordinal && std::ptr::eq(e.hip, self.hip))
            .ok_or_else(|| {
                RuntimeError::WrongDevice(format!(
                    "timing an event of AMD device {} against one of another device",
                    self.ordinal
                ))
            })?;
        self.hip.event_elapsed_ms(self.raw.0, end.raw.0)
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

impl Drop for AmdEvent {
    fn drop(&mut self) {
        // Safety: created by hipEventCreate, destroyed once.
        if self.hip.set_device(self.ordinal).is_ok() {
            let _ = unsafe { self.hip.event_destroy(self.raw.0) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fills_use_the_widest_memset_the_pattern_and_alignment_allow() {
        assert_eq!(fill_plan(&[7], 0x1001), FillPlan::Bytes(7));
        assert_eq!(fill_plan(&[0; 8], 0x1000), FillPlan::Bytes(0));
        assert_eq!(
            fill_plan(&[1, 2], 0x1000),
            FillPlan::Halves(u16::from_ne_bytes([1, 2]))
        );
        assert_eq!(fill_plan(&[1, 2], 0x1001), FillPlan::Doubling);
        assert_eq!(
            fill_plan(&1.5f32.to_ne_bytes(), 0x1000),
            FillPlan::Words(1.5f32.to_bits())
        );
        assert_eq!(fill_plan(&1.5f32.to_ne_bytes(), 0x1002), FillPlan::Doubling);
        assert_eq!(fill_plan(&1.5f64.to_ne_bytes(), 0x1000), FillPlan::Doubling);
        assert_eq!(fill_plan(&[1, 2, 3], 0x1000), FillPlan::Doubling);
    }
}
