//! AMD GPUs from `rocminfo` output: one `Agent N` block per HSA agent, `  Key:   value` lines
//! (two spaces of indent at the agent level, deeper inside `Pool Info` and `ISA Info`).

use super::lspci::amd_pci_device;
use super::{Device, DeviceSource};
use crate::toolchain::base_target;
use rocm_kernels_core::library::Backend;

#[derive(Default)]
struct Agent {
    name: Option<String>,
    marketing_name: Option<String>,
    device_type: Option<String>,
    chip_id: Option<u64>,
    compute_units: Option<u64>,
    wave_size: Option<u64>,
    bdfid: Option<u64>,
    isa: Option<String>,
    vram_kb: Option<u64>,
    lds_kb: Option<u64>,
    /// The `Segment:` of the pool whose fields are being read.
    segment: Option<String>,
}

/// The GPU agents of `rocminfo` output (CPU agents are skipped). Output without agents (ROCm
/// not able to open `/dev/kfd`) gives an empty list.
pub fn parse_rocminfo(text: &str) -> Vec<Device> {
    let mut agents: Vec<Agent> = Vec::new();
    for line in text.lines() {
        let trimmed = line.trim();
        if trimmed
            .strip_prefix("Agent ")
            .is_some_and(|n| n.trim().parse::<u32>().is_ok())
        {
            agents.push(Agent::default());
            continue;
        }
        let Some(agent) = agents.last_mut() else {
            continue;
        };
        let Some((key, value)) = trimmed.split_once(':') else {
            continue;
        };
        let (key, value) = (key.trim(), value.trim());
        let indent = line.len() - line.trim_start().len();
        if indent <= 2 {
            match key {
                "Name" => agent.name = Some(value.to_owned()),
                "Marketing Name" => agent.marketing_name = Some(value.to_owned()),
                "Device Type" => agent.device_type = Some(value.to_owned()),
                "Chip ID" => agent.chip_id = leading_number(value),
                "Compute Unit" => agent.compute_units = leading_number(value),
                "Wavefront Size" => agent.wave_size = leading_number(value),
                "BDFID" => agent.bdfid = leading_number(value),
                _ => {}
            }
            continue;
        }
        match key {
            "Segment" => agent.segment = Some(value.to_owned()),
            "Size" => {
                let segment = agent.segment.as_deref().unwrap_or("");
                let size = leading_number(value);
                if segment.starts_with("GROUP") && agent.lds_kb.is_none() {
                    agent.lds_kb = size;
                } else if segment.starts_with("GLOBAL")
                    && segment.contains("COARSE GRAINED")
                    && agent.vram_kb.is_none()
                {
                    agent.vram_kb = size;
                }
            }
            // ISA names look like `amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-`.
            "Name" if value.starts_with("amdgcn-") && agent.isa.is_none() => {
                agent.isa = value.rsplit("--").next().map(|t| base_target(t).to_owned());
            }
            _ => {}
        }
    }
    agents
        .into_iter()
        .filter(|a| a.device_type.as_deref() == Some("GPU"))
        .map(into_device)
        .collect()
}

fn into_device(agent: Agent) -> Device {
    let arch = agent
        .name
        .as_deref()
        .filter(|n| n.starts_with("gfx"))
        .map(|n| base_target(n).to_owned())
        .or(agent.isa);
    let name = agent
        .marketing_name
        .filter(|n| !n.is_empty())
        .or_else(|| {
            let id = u16::try_from(agent.chip_id?).ok()?;
            amd_pci_device(id).map(|(_, name)| name.to_owned())
        })
        .unwrap_or_else(|| format!("AMD {}", arch.as_deref().unwrap_or("GPU")));
    let mut device = Device::new(Backend::Amd, name, DeviceSource::Rocminfo);
    device.arch = arch;
    device.compute_units = agent.compute_units.map(|n| n as u32);
    device.wave_sizes = agent.wave_size.map(|w| vec![w as u32]).unwrap_or_default();
    device.lds_bytes = agent.lds_kb.map(|kb| kb * 1024);
    device.memory_bytes = agent.vram_kb.map(|kb| kb * 1024);
    device.pci_address = agent.bdfid.map(|bdf| {
        format!(
            "0000:{:02x}:{:02x}.{:x}",
            (bdf >> 8) & 0xff,
            (bdf >> 3) & 0x1f,
            bdf & 7
        )
    });
    device
}

/// `64(0x40)` → 64, `16760832(0xffc000) KB` → 16760832.
fn leading_number(value: &str) -> Option<u64> {
    let digits: String = value.chars().take_while(|c| c.is_ascii_digit()).collect();
    digits.parse().ok()
}
