//! The AMDGPU metadata note (code object v3–v6): a MessagePack map with `amdhsa.version`,
//! `amdhsa.target` and `amdhsa.kernels`, one map per kernel (AMDGPUUsage, "Code Object V3 to
//! V6 Metadata"). Keys this reader does not know are ignored, so newer compilers still parse.

use rmpv::Value;
use serde::Serialize;

use super::error::CodeObjectError;
use rocm_kernels_core::library::ParamKind;

/// Nesting the metadata never needs more than a handful of; the limit keeps hostile input
/// from recursing deep.
const MAX_DEPTH: usize = 16;

/// The whole metadata note.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Metadata {
    /// `amdhsa.version`: `[major, minor]` (1.1 = v4, 1.2 = v5, 1.3 = v6).
    pub version: Option<(u64, u64)>,
    /// `amdhsa.target`: the full target string (`amdgcn-amd-amdhsa--gfx90a:xnack-`), v4+.
    pub target: Option<String>,
    /// `amdhsa.kernels`: one entry per kernel, in the order the compiler wrote them.
    pub kernels: Vec<KernelMetadata>,
}

/// One kernel's entry of `amdhsa.kernels`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct KernelMetadata {
    /// `.name`: the source-level (for C++, mangled) name, e.g. `_Z4axpyfPKfPfi`.
    pub name: String,
    /// `.symbol`: the kernel descriptor symbol, `<name>.kd`.
    pub symbol: String,
    /// `.args`, hidden arguments included, in kernarg order.
    pub args: Vec<KernelArg>,
    /// `.vgpr_count`: VGPRs used, AGPRs included on targets with a unified register file.
    pub vgpr_count: u32,
    /// `.agpr_count`: accumulation registers (targets with MFMA; absent elsewhere).
    pub agpr_count: Option<u32>,
    /// `.sgpr_count`: SGPRs used, VCC/flat scratch/XNACK included.
    pub sgpr_count: u32,
    /// `.vgpr_spill_count`.
    pub vgpr_spill_count: Option<u32>,
    /// `.sgpr_spill_count`.
    pub sgpr_spill_count: Option<u32>,
    /// `.group_segment_fixed_size`: static LDS (`__shared__`) bytes per work-group.
    pub group_segment_fixed_size: u32,
    /// `.private_segment_fixed_size`: scratch bytes per work-item.
    pub private_segment_fixed_size: u32,
    /// `.kernarg_segment_size`.
    pub kernarg_segment_size: u32,
    /// `.kernarg_segment_align`.
    pub kernarg_segment_align: u32,
    /// `.wavefront_size`: 32 or 64.
    pub wavefront_size: u32,
    /// `.max_flat_workgroup_size`.
    pub max_flat_workgroup_size: u32,
    /// `.uses_dynamic_stack` (v5+).
    pub uses_dynamic_stack: Option<bool>,
    /// `.workgroup_processor_mode` (v5+, gfx10 and later): the kernel was built for WGP mode
    /// (`true`, clang's default there) or CU mode (`-mcumode`). Absent before code object v5;
    /// the kernel descriptor's `WGP_MODE` bit says the same for every version.
    pub workgroup_processor_mode: Option<bool>,
}

/// One entry of `.args`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct KernelArg {
    /// `.name`: present when compiled with `-fhip-kernel-arg-name` (HIP) or kernel arg info.
    pub name: Option<String>,
    /// `.type_name`: present only with OpenCL kernel arg info.
    pub type_name: Option<String>,
    /// `.size` in bytes.
    pub size: u32,
    /// `.offset` in the kernarg segment.
    pub offset: u32,
    /// `.value_kind`: `by_value`, `global_buffer`, `dynamic_shared_pointer`, `hidden_*`, ...
    pub value_kind: String,
    /// `.address_space` of a pointer: `global`, `constant`, `local`, ...
    pub address_space: Option<String>,
}

impl KernelArg {
    /// Whether the runtime, not the caller, fills this argument (`hidden_*` value kinds).
    pub fn is_hidden(&self) -> bool {
        self.value_kind.starts_with("hidden_")
    }
}

/// A caller-visible kernel parameter, shaped like [`rocm_kernels_core::library::ParamDecl`] but owned,
/// for a build script to write out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ParamInfo {
    /// The source name; `arg<i>` when the compiler did not record names (build with
    /// `-fhip-kernel-arg-name` to get them).
    pub name: String,
    /// The source type when recorded, else empty (HIP compilers do not record it).
    pub type_name: String,
    /// Size in bytes as passed.
    pub size: u32,
    /// Offset in the kernarg segment.
    pub offset: u32,
    /// [`ParamKind::GlobalBuffer`] for `global_buffer`, [`ParamKind::ByValue`] for every other
    /// visible kind (the bytes are copied into the kernarg segment as they are).
    pub kind: ParamKind,
}

impl KernelMetadata {
    /// The parameters a caller passes, in order: `.args` without the hidden ones.
    pub fn params(&self) -> Vec<ParamInfo> {
        self.args
            .iter()
            .filter(|a| !a.is_hidden())
            .enumerate()
            .map(|(i, a)| ParamInfo {
                name: a.name.clone().unwrap_or_else(|| format!("arg{i}")),
                type_name: a.type_name.clone().unwrap_or_default(),
                size: a.size,
                offset: a.offset,
                kind: if a.value_kind == "global_buffer" {
                    ParamKind::GlobalBuffer
                } else {
                    ParamKind::ByValue
                },
            })
            .collect()
    }
}

fn bad(msg: impl Into<String>) -> CodeObjectError {
    CodeObjectError::Metadata(msg.into())
}

/// A MessagePack map's entries by string key.
struct Map<'a> {
    entries: &'a [(Value, Value)],
    /// For error messages: where this map is (`kernel 2 (\`foo\`)`).
    context: String,
}

impl<'a> Map<'a> {
    fn new(value: &'a Value, context: String) -> Result<Self, CodeObjectError> {
        match value {
            Value::Map(entries) => Ok(Map { entries, context }),
            other => Err(bad(format!(
                "{context}: expected a map, found {}",
                kind_of(other)
            ))),
        }
    }

    fn get(&self, key: &str) -> Option<&'a Value> {
        self.entries
            .iter()
            .find(|(k, _)| k.as_str() == Some(key))
            .map(|(_, v)| v)
    }

    fn str(&self, key: &str) -> Result<Option<String>, CodeObjectError> {
        self.get(key)
            .map(|v| {
                v.as_str()
                    .map(str::to_owned)
                    .ok_or_else(|| self.wrong(key, "a UTF-8 string", v))
            })
            .transpose()
    }

    fn u32(&self, key: &str) -> Result<Option<u32>, CodeObjectError> {
        self.get(key)
            .map(|v| {
                v.as_u64()
                    .and_then(|n| u32::try_from(n).ok())
                    .ok_or_else(|| self.wrong(key, "an unsigned 32-bit integer", v))
            })
            .transpose()
    }

    fn bool(&self, key: &str) -> Result<Option<bool>, CodeObjectError> {
        self.get(key)
            .map(|v| v.as_bool().ok_or_else(|| self.wrong(key, "a boolean", v)))
            .transpose()
    }

    /// A boolean the compiler writes either as a boolean or as 0/1.
    fn flag(&self, key: &str) -> Result<Option<bool>, CodeObjectError> {
        self.get(key)
            .map(|v| {
                v.as_bool()
                    .or_else(|| v.as_u64().filter(|n| *n <= 1).map(|n| n == 1))
                    .ok_or_else(|| self.wrong(key, "a boolean or 0/1", v))
            })
            .transpose()
    }

    fn required<T>(&self, key: &str, value: Option<T>) -> Result<T, CodeObjectError> {
        value.ok_or_else(|| bad(format!("{}: required key `{key}` is missing", self.context)))
    }

    fn wrong(&self, key: &str, expected: &str, found: &Value) -> CodeObjectError {
        bad(format!(
            "{}: `{key}` should be {expected}, found {}",
            self.context,
            kind_of(found)
        ))
    }
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Nil => "nil",
        Value::Boolean(_) => "a boolean",
        Value::Integer(_) => "an integer",
        Value::F32(_) | Value::F64(_) => "a float",
        Value::String(_) => "a string",
        Value::Binary(_) => "binary data",
        Value::Array(_) => "an array",
        Value::Map(_) => "a map",
        Value::Ext(..) => "an extension value",
    }
}

/// Parse the descriptor of an `NT_AMDGPU_METADATA` note.
pub fn parse_metadata(note: &[u8]) -> Result<Metadata, CodeObjectError> {
    let mut reader = note;
    let root = rmpv::decode::read_value_with_max_depth(&mut reader, MAX_DEPTH)
        .map_err(|e| bad(format!("not MessagePack: {e}")))?;
    let root = Map::new(&root, "metadata root".into())?;
    let version = match root.get("amdhsa.version") {
        None => None,
        Some(Value::Array(v)) if v.len() == 2 => match (v[0].as_u64(), v[1].as_u64()) {
            (Some(major), Some(minor)) => Some((major, minor)),
            _ => return Err(bad("`amdhsa.version` should be two integers")),
        },
        Some(_) => return Err(bad("`amdhsa.version` should be a [major, minor] array")),
    };
    let target = root.str("amdhsa.target")?;
    let kernels = match root.get("amdhsa.kernels") {
        None => Vec::new(),
        Some(Value::Array(list)) => list
            .iter()
            .enumerate()
            .map(|(i, k)| parse_kernel(i, k))
            .collect::<Result<_, _>>()?,
        Some(other) => {
            return Err(bad(format!(
                "`amdhsa.kernels` should be an array, found {}",
                kind_of(other)
            )))
        }
    };
    Ok(Metadata {
        version,
        target,
        kernels,
    })
}

fn parse_kernel(index: usize, value: &Value) -> Result<KernelMetadata, CodeObjectError> {
    let mut map = Map::new(value, format!("kernel {index}"))?;
    let name = map.str(".name")?;
    let name = map.required(".name", name)?;
    map.context = format!("kernel {index} (`{name}`)");
    let args = match map.get(".args") {
        None => Vec::new(),
        Some(Value::Array(args)) => args
            .iter()
            .enumerate()
            .map(|(i, a)| parse_arg(&map.context, i, a))
            .collect::<Result<_, _>>()?,
        Some(other) => return Err(map.wrong(".args", "an array", other)),
    };
    let u32_required = |key: &str| -> Result<u32, CodeObjectError> {
        let v = map.u32(key)?;
        map.required(key, v)
    };
    Ok(KernelMetadata {
        symbol: {
            let s = map.str(".symbol")?;
            map.required(".symbol", s)?
        },
        args,
        vgpr_count: u32_required(".vgpr_count")?,
        agpr_count: map.u32(".agpr_count")?,
        sgpr_count: u32_required(".sgpr_count")?,
        vgpr_spill_count: map.u32(".vgpr_spill_count")?,
        sgpr_spill_count: map.u32(".sgpr_spill_count")?,
        group_segment_fixed_size: u32_required(".group_segment_fixed_size")?,
        private_segment_fixed_size: u32_required(".private_segment_fixed_size")?,
        kernarg_segment_size: u32_required(".kernarg_segment_size")?,
        kernarg_segment_align: u32_required(".kernarg_segment_align")?,
        wavefront_size: u32_required(".wavefront_size")?,
        max_flat_workgroup_size: u32_required(".max_flat_workgroup_size")?,
        uses_dynamic_stack: map.bool(".uses_dynamic_stack")?,
        workgroup_processor_mode: map.flag(".workgroup_processor_mode")?,
        name,
    })
}

fn parse_arg(kernel: &str, index: usize, value: &Value) -> Result<KernelArg, CodeObjectError> {
    let map = Map::new(value, format!("{kernel}, argument {index}"))?;
    let size = map.u32(".size")?;
    let offset = map.u32(".offset")?;
    let value_kind = map.str(".value_kind")?;
    Ok(KernelArg {
        name: map.str(".name")?,
        type_name: map.str(".type_name")?,
        size: map.required(".size", size)?,
        offset: map.required(".offset", offset)?,
        value_kind: map.required(".value_kind", value_kind)?,
        address_space: map.str(".address_space")?,
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    fn s(x: &str) -> Value {
        Value::from(x)
    }

    /// A metadata document with one kernel, as the compiler writes it.
    pub(crate) fn sample_kernel(name: &str) -> Value {
        let arg = |name: Option<&str>, kind: &str, size: u64, offset: u64| {
            let mut m = vec![
                (s(".size"), Value::from(size)),
                (s(".offset"), Value::from(offset)),
                (s(".value_kind"), s(kind)),
            ];
            if let Some(n) = name {
                m.push((s(".name"), s(n)));
            }
            if kind == "global_buffer" {
                m.push((s(".address_space"), s("global")));
            }
            Value::Map(m)
        };
        Value::Map(vec![
            (s(".name"), s(name)),
            (s(".symbol"), s(&format!("{name}.kd"))),
            (
                s(".args"),
                Value::Array(vec![
                    arg(Some("a"), "by_value", 4, 0),
                    arg(None, "global_buffer", 8, 8),
                    arg(None, "hidden_block_count_x", 4, 16),
                ]),
            ),
            (s(".vgpr_count"), Value::from(12)),
            (s(".agpr_count"), Value::from(4)),
            (s(".sgpr_count"), Value::from(20)),
            (s(".vgpr_spill_count"), Value::from(0)),
            (s(".sgpr_spill_count"), Value::from(0)),
            (s(".group_segment_fixed_size"), Value::from(4096)),
            (s(".private_segment_fixed_size"), Value::from(16)),
            (s(".kernarg_segment_size"), Value::from(280)),
            (s(".kernarg_segment_align"), Value::from(8)),
            (s(".wavefront_size"), Value::from(64)),
            (s(".max_flat_workgroup_size"), Value::from(1024)),
            (s(".uses_dynamic_stack"), Value::Boolean(false)),
            (s(".workgroup_processor_mode"), Value::from(1)),
            (s(".some_future_key"), Value::from(1)),
        ])
    }

    pub(crate) fn document(kernels: Vec<Value>) -> Vec<u8> {
        let root = Value::Map(vec![
            (
                s("amdhsa.version"),
                Value::Array(vec![Value::from(1), Value::from(2)]),
            ),
            (s("amdhsa.target"), s("amdgcn-amd-amdhsa--gfx90a:xnack-")),
            (s("amdhsa.kernels"), Value::Array(kernels)),
        ]);
        let mut out = Vec::new();
        rmpv::encode::write_value(&mut out, &root).unwrap();
        out
    }

    #[test]
    fn reads_every_documented_kernel_field() {
        let m = parse_metadata(&document(vec![sample_kernel("k")])).unwrap();
        assert_eq!(m.version, Some((1, 2)));
        assert_eq!(
            m.target.as_deref(),
            Some("amdgcn-amd-amdhsa--gfx90a:xnack-")
        );
        let k = &m.kernels[0];
        assert_eq!((k.name.as_str(), k.symbol.as_str()), ("k", "k.kd"));
        assert_eq!(
            (k.vgpr_count, k.agpr_count, k.sgpr_count),
            (12, Some(4), 20)
        );
        assert_eq!((k.vgpr_spill_count, k.sgpr_spill_count), (Some(0), Some(0)));
        assert_eq!(
            (k.group_segment_fixed_size, k.private_segment_fixed_size),
            (4096, 16)
        );
        assert_eq!(
            (
                k.kernarg_segment_size,
                k.wavefront_size,
                k.max_flat_workgroup_size
            ),
            (280, 64, 1024)
        );
        assert_eq!(k.workgroup_processor_mode, Some(true));
        assert_eq!(k.args.len(), 3);
        assert_eq!(k.args[1].address_space.as_deref(), Some("global"));
        assert!(k.args[2].is_hidden());
    }

    #[test]
    fn params_skip_hidden_args_and_name_the_unnamed() {
        let m = parse_metadata(&document(vec![sample_kernel("k")])).unwrap();
        let p = m.kernels[0].params();
        assert_eq!(p.len(), 2);
        assert_eq!(
            (p[0].name.as_str(), p[0].kind, p[0].size),
            ("a", ParamKind::ByValue, 4)
        );
        assert_eq!(
            (p[1].name.as_str(), p[1].kind, p[1].offset),
            ("arg1", ParamKind::GlobalBuffer, 8)
        );
    }

    #[test]
    fn missing_or_mistyped_fields_are_named_in_the_error() {
        let Value::Map(mut k) = sample_kernel("k") else {
            unreachable!()
        };
        k.retain(|(key, _)| key.as_str() != Some(".sgpr_count"));
        let err = parse_metadata(&document(vec![Value::Map(k.clone())])).unwrap_err();
        assert!(
            err.to_string().contains("`.sgpr_count` is missing"),
            "{err}"
        );
        k.push((s(".sgpr_count"), s("many")));
        let err = parse_metadata(&document(vec![Value::Map(k)])).unwrap_err();
        assert!(err.to_string().contains("kernel 0 (`k`)"), "{err}");
        assert!(matches!(
            parse_metadata(b"\xc1"),
            Err(CodeObjectError::Metadata(_))
        ));
        assert!(matches!(
            parse_metadata(&[0x91; 100]),
            Err(CodeObjectError::Metadata(_))
        ));
    }
}
