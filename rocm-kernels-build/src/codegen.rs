//! From what the backends built to the library's description: [`manifest`] joins every backend's
//! kernels under one name each (the objects' demangled symbols and the cpu build's scan go through
//! the same canonical spelling), and [`render`] writes it as `$OUT_DIR/<name>.rs`: one
//! `pub static KERNELS: rocm_kernels::KernelLibrary` with the code objects embedded by
//! `include_bytes!` of absolute paths, the kernels with their symbol per object, and the cpu entry
//! points (declared `extern "C"` and linked by the cpu build). The manifest JSON for tools is the
//! same data.

use std::fmt::Write;

use rocm_kernels_core::library::canonical_kernel_name;
use rocm_kernels_core::library::{CpuExecution, ParamKind};
use rocm_kernels_core::manifest::{
    BuildManifest, ManifestCpu, ManifestGlobal, ManifestKernel, ManifestObject, ManifestParam,
    ManifestSymbol,
};

use crate::contract::ParamGen;
use crate::error::BuildError;
use crate::ObjectOut;
use rocm_cpu_frontend::{CpuGlobalGen, CpuKernelGen};

const K: &str = "::rocm_kernels";

/// The library `name` as built: `objects` in order, and one kernel per name with its symbol in
/// every object that holds it, its cpu entry, and the most informative parameter list (the cpu
/// build knows source types; AMD metadata knows names and sizes). A kernel name defined by two
/// sources is refused, naming both: the runtime and the harness could not tell them apart.
pub(crate) fn manifest(
    name: &str,
    objects: &[ObjectOut],
    cpu: &[CpuKernelGen],
    cpu_globals: &[CpuGlobalGen],
) -> Result<BuildManifest, BuildError> {
    let mut join = Join {
        library: name,
        kernels: Vec::new(),
    };
    for (index, object) in objects.iter().enumerate() {
        for k in &object.kernels {
            let i = join.kernel(&k.name, &object.source.rel)?;
            join.kernels[i].0.symbols.push(ManifestSymbol {
                object: index as u32,
                symbol: k.symbol.clone(),
            });
            join.offer(i, k.params.clone());
        }
    }
    for c in cpu {
        let i = join.kernel(&canonical_kernel_name(&c.name), &c.source_rel)?;
        join.kernels[i].0.cpu = Some(ManifestCpu {
            symbol: c.symbol.clone(),
            execution: c.execution(),
            race_symbol: c.race_symbol.clone(),
        });
        let params = c
            .params
            .iter()
            .map(|p| ParamGen {
                name: p.name.clone(),
                type_name: p.type_name.clone(),
                size: p.size,
                kind: if p.is_pointer {
                    ParamKind::GlobalBuffer
                } else {
                    ParamKind::ByValue
                },
            })
            .collect();
        join.offer(i, params);
    }
    let kernels = join
        .kernels
        .into_iter()
        .map(|(mut k, params)| {
            k.params = params
                .into_iter()
                .map(|p| ManifestParam {
                    name: p.name,
                    type_name: p.type_name,
                    size: p.size,
                    kind: p.kind,
                })
                .collect();
            k
        })
        .collect();
    Ok(BuildManifest {
        name: name.to_owned(),
        objects: objects
            .iter()
            .map(|o| ManifestObject {
                backend: o.backend,
                format: o.format,
                target: o.target.clone(),
                source: o.source.rel.clone(),
                path: o.path.clone(),
            })
            .collect(),
        kernels,
        globals: cpu_globals
            .iter()
            .map(|g| ManifestGlobal {
                name: g.name.clone(),
                constant: g.constant,
                source: g.source_rel.clone(),
                line: g.line,
                symbol: rocm_kernels_core::library::variable_symbol(&g.name),
                cpu_symbol: Some(g.symbol.clone()),
                cpu_race_symbol: g.race_symbol.clone(),
            })
            .collect(),
    })
}

/// The kernels gathered so far, each with the best parameter list offered for it.
struct Join<'a> {
    library: &'a str,
    kernels: Vec<(ManifestKernel, Vec<ParamGen>)>,
}

impl Join<'_> {
    /// The index of kernel `name`, added when new; `source` must be the one it came from.
    fn kernel(&mut self, name: &str, source: &str) -> Result<usize, BuildError> {
        match self.kernels.iter().position(|(k, _)| k.name == name) {
            Some(i) if self.kernels[i].0.source != source => Err(BuildError::config(format!(
                "kernel `{name}` is defined in both `{}` and `{source}` of library `{}`: rename \
                 one, or build them as two libraries (two Build::compile calls)",
                self.kernels[i].0.source, self.library
            ))),
            Some(i) => Ok(i),
            None => {
                self.kernels.push((
                    ManifestKernel {
                        name: name.to_owned(),
                        source: source.to_owned(),
                        params: Vec::new(),
                        symbols: Vec::new(),
                        cpu: None,
                    },
                    Vec::new(),
                ));
                Ok(self.kernels.len() - 1)
            }
        }
    }

    /// Keeps `params` for kernel `i` when they say more (more source types) than what it has,
    /// and fills sizes one list lacks (0: a struct the cpu build cannot size) from the other
    /// (AMD metadata knows every argument's size).
    fn offer(&mut self, i: usize, mut params: Vec<ParamGen>) {
        let typed = |ps: &[ParamGen]| ps.iter().filter(|p| !p.type_name.is_empty()).count();
        let current = &mut self.kernels[i].1;
        if current.is_empty() || typed(&params) > typed(current) {
            std::mem::swap(current, &mut params);
        }
        if current.len() == params.len() {
            for (kept, other) in current.iter_mut().zip(&params) {
                if kept.size == 0 && other.size != 0 && kept.kind == other.kind {
                    kept.size = other.size;
                }
            }
        }
    }
}

/// Rust source for the library.
pub(crate) fn render(m: &BuildManifest) -> String {
    let mut s = String::new();
    render_header(&mut s, &m.name);
    render_cpu_entry_declarations(&mut s, m);
    render_cpu_global_declarations(&mut s, m);
    let _ = writeln!(s, "    {K}::KernelLibrary {{\n        name: {:?},", m.name);
    render_code_objects(&mut s, m);
    render_kernels(&mut s, m);
    render_globals(&mut s, m);
    s.push_str("        ],\n    }\n};\n");
    s
}

/// The `@generated` comment and the opening of `pub static KERNELS`.
fn render_header(s: &mut String, name: &str) {
    let _ = writeln!(
        s,
        "// @generated by rocm_kernels_build::Build::compile({name:?}); do not edit.\n\
         // Use it with `rocm_kernels::include_kernels!({name:?})`.\n\n\
         /// The kernels of `{name}`, as built for this crate.\n\
         pub static KERNELS: {K}::KernelLibrary = {{"
    );
}

/// An `extern "C"` block declaring each cpu kernel's entry (and race entry), numbered in the
/// order of the kernels that have one.
fn render_cpu_entry_declarations(s: &mut String, m: &BuildManifest) {
    let cpu: Vec<&ManifestCpu> = m.kernels.iter().filter_map(|k| k.cpu.as_ref()).collect();
    if cpu.is_empty() {
        return;
    }
    s.push_str("    unsafe extern \"C\" {\n");
    for (i, c) in cpu.iter().enumerate() {
        let _ = writeln!(
            s,
            "        #[link_name = {:?}]\n        fn __rocm_kernels_cpu_entry_{i}();",
            c.symbol
        );
        if let Some(race) = &c.race_symbol {
            let _ = writeln!(
                s,
                "        #[link_name = {race:?}]\n        fn __rocm_kernels_cpu_race_{i}();"
            );
        }
    }
    s.push_str("    }\n");
}

/// An `extern "C"` block declaring each cpu global's accessor (and race accessor), numbered by
/// the global's index.
fn render_cpu_global_declarations(s: &mut String, m: &BuildManifest) {
    let accessors: Vec<(usize, &str, Option<&str>)> = m
        .globals
        .iter()
        .enumerate()
        .filter_map(|(i, g)| Some((i, g.cpu_symbol.as_deref()?, g.cpu_race_symbol.as_deref())))
        .collect();
    if accessors.is_empty() {
        return;
    }
    s.push_str("    unsafe extern \"C\" {\n");
    for (i, symbol, race) in &accessors {
        let _ = writeln!(
            s,
            "        #[link_name = {symbol:?}]\n        fn __rocm_kernels_cpu_global_{i}();"
        );
        if let Some(race) = race {
            let _ = writeln!(
                s,
                "        #[link_name = {race:?}]\n        fn __rocm_kernels_cpu_global_race_{i}();"
            );
        }
    }
    s.push_str("    }\n");
}

/// `code_objects: &[...]`, each embedded with `include_bytes!`.
fn render_code_objects(s: &mut String, m: &BuildManifest) {
    s.push_str("        code_objects: &[\n");
    for o in &m.objects {
        let _ = writeln!(
            s,
            "            {K}::library::CodeObject {{\n                backend: {K}::Backend::{:?},\n                format: {K}::library::ObjectFormat::{:?},\n                target: {:?},\n                source: {:?},\n                bytes: include_bytes!({:?}),\n            }},",
            o.backend,
            o.format,
            o.target,
            o.source,
            o.path.display().to_string()
        );
    }
}

/// Closes `code_objects` and writes `kernels: &[...]`, one `KernelDecl` per kernel.
fn render_kernels(s: &mut String, m: &BuildManifest) {
    s.push_str("        ],\n        kernels: &[\n");
    // The number of the next cpu entry, as `render_cpu_entry_declarations` counted them.
    let mut entry = 0;
    for k in &m.kernels {
        let symbols: Vec<String> = k
            .symbols
            .iter()
            .map(|sym| {
                format!(
                    "{K}::library::ObjectSymbol {{ object: {}, symbol: {:?} }}",
                    sym.object, sym.symbol
                )
            })
            .collect();
        let cpu = match &k.cpu {
            Some(c) => {
                let text = cpu_entry(c, entry);
                entry += 1;
                text
            }
            None => "None".to_owned(),
        };
        let _ = writeln!(
            s,
            "            {K}::library::KernelDecl {{\n                name: {:?},\n                source: {:?},\n                params: &[{}],\n                symbols: &[{}],\n                cpu: {cpu},\n            }},",
            k.name,
            k.source,
            params(&k.params),
            symbols.join(", "),
        );
    }
}

/// A kernel's `Some(CpuEntry { ... })`, naming its entry declaration number `entry`.
fn cpu_entry(c: &ManifestCpu, entry: usize) -> String {
    let execution = match CpuExecution::parse(&c.execution) {
        CpuExecution::Regions => "Regions".to_owned(),
        CpuExecution::PerThreadLoop => "PerThreadLoop".to_owned(),
        CpuExecution::Fibers(why) => format!("Fibers({why:?})"),
    };
    let race = if c.race_symbol.is_some() {
        format!("Some(__rocm_kernels_cpu_race_{entry} as *const ())")
    } else {
        "None".to_owned()
    };
    format!(
        "Some({K}::library::CpuEntry {{ entry: __rocm_kernels_cpu_entry_{entry} as *const (), execution: {K}::library::CpuExecution::{execution}, race: {race} }})"
    )
}

/// Closes `kernels` and writes `globals: &[...]`, one `GlobalDecl` per variable.
fn render_globals(s: &mut String, m: &BuildManifest) {
    s.push_str("        ],\n        globals: &[\n");
    for (i, g) in m.globals.iter().enumerate() {
        let cpu = match &g.cpu_symbol {
            Some(_) => {
                let race = if g.cpu_race_symbol.is_some() {
                    format!("Some(__rocm_kernels_cpu_global_race_{i} as *const ())")
                } else {
                    "None".to_owned()
                };
                format!(
                    "Some({K}::library::CpuGlobal {{ accessor: __rocm_kernels_cpu_global_{i} as *const (), race: {race} }})"
                )
            }
            None => "None".to_owned(),
        };
        let _ = writeln!(
            s,
            "            {K}::library::GlobalDecl {{ name: {:?}, constant: {}, source: {:?}, symbol: {:?}, cpu: {cpu} }},",
            g.name, g.constant, g.source, g.symbol
        );
    }
}

fn params(ps: &[ManifestParam]) -> String {
    let items: Vec<String> = ps
        .iter()
        .map(|p| {
            let kind = match p.kind {
                ParamKind::GlobalBuffer => "GlobalBuffer",
                ParamKind::ByValue => "ByValue",
            };
            format!(
                "\n                    {K}::library::ParamDecl {{ name: {:?}, type_name: {:?}, size: {}, kind: {K}::library::ParamKind::{kind} }},",
                p.name, p.type_name, p.size
            )
        })
        .collect();
    if items.is_empty() {
        String::new()
    } else {
        format!("{}\n                ", items.concat())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::SourceFile;
    use crate::ObjectKernel;
    use rocm_kernels_core::{Backend, ObjectFormat};

    fn object(target: &str, kernels: Vec<ObjectKernel>) -> ObjectOut {
        ObjectOut {
            backend: Backend::Amd,
            source: SourceFile::new("/c/k/a.hip".into(), std::path::Path::new("/c")),
            target: target.into(),
            format: ObjectFormat::AmdgpuElf,
            path: format!("/out/a \"q\".{target}.co").into(),
            kernels,
            inputs: vec![],
            fresh: false,
            warnings: vec![],
            millis: 0,
        }
    }

    fn cpu_kernel(name: &str, source: &str) -> CpuKernelGen {
        CpuKernelGen {
            name: name.into(),
            symbol: format!("rocm_cpu_{}", name.len()),
            source_rel: source.into(),
            params: vec![rocm_cpu_frontend::ParamGen {
                name: "x".into(),
                type_name: "const float*".into(),
                size: 8,
                is_pointer: true,
            }],
            region_form: Ok(false),
            race_symbol: None,
        }
    }

    #[test]
    fn one_kernel_per_name_with_a_symbol_per_object_and_its_cpu_entry() {
        let amd = |target| {
            object(
                target,
                vec![ObjectKernel {
                    name: "k<16>".into(),
                    symbol: "_Z1kILj16EEvPKf".into(),
                    params: vec![ParamGen {
                        name: "x".into(),
                        type_name: String::new(),
                        size: 8,
                        kind: ParamKind::GlobalBuffer,
                    }],
                }],
            )
        };
        let objects = [amd("gfx90a"), amd("gfx1030")];
        // The cpu scan spells the instantiation as the source does.
        let cpu = [cpu_kernel("k<16u>", "k/a.hip")];
        let globals = [rocm_cpu_frontend::CpuGlobalGen {
            name: "ns::mask".into(),
            constant: true,
            symbol: "rk_g0".into(),
            race_symbol: Some("rkrace_rk_g0".into()),
            source_rel: "k/a.hip".into(),
            line: 3,
        }];
        let m = manifest("demo", &objects, &cpu, &globals).unwrap();
        assert_eq!(m.globals[0].symbol, "_ZN2ns4maskE");
        assert_eq!(m.kernels.len(), 1, "{m:#?}");
        let k = &m.kernels[0];
        assert_eq!(k.name, "k<16>");
        assert_eq!(
            k.symbols.iter().map(|s| s.object).collect::<Vec<_>>(),
            [0, 1]
        );
        // The cpu build's typed parameters win over the metadata's untyped ones.
        assert_eq!(k.params[0].type_name, "const float*");
        assert_eq!(k.cpu.as_ref().unwrap().execution, "per-thread loop");

        let s = render(&m);
        assert!(s.contains("pub static KERNELS: ::rocm_kernels::KernelLibrary"));
        assert!(
            s.contains(r#"include_bytes!("/out/a \"q\".gfx90a.co")"#),
            "{s}"
        );
        assert!(s.contains(r#"target: "gfx1030""#), "{s}");
        assert!(s.contains("ObjectFormat::AmdgpuElf"), "{s}");
        assert!(
            s.contains(r#"ObjectSymbol { object: 1, symbol: "_Z1kILj16EEvPKf" }"#),
            "{s}"
        );
        assert!(s.contains(r#"#[link_name = "rocm_cpu_6"]"#), "{s}");
        assert!(s.contains(r#"#[link_name = "rkrace_rk_g0"]"#), "{s}");
        assert!(
            s.contains(r#"GlobalDecl { name: "ns::mask", constant: true, source: "k/a.hip", symbol: "_ZN2ns4maskE", cpu: Some(::rocm_kernels::library::CpuGlobal { accessor: __rocm_kernels_cpu_global_0 as *const (), race: Some(__rocm_kernels_cpu_global_race_0 as *const ()) }) }"#),
            "{s}"
        );
        assert!(s.contains("ParamKind::GlobalBuffer"));
        assert!(
            s.contains("entry: __rocm_kernels_cpu_entry_0 as *const (), execution: ::rocm_kernels::library::CpuExecution::PerThreadLoop"),
            "{s}"
        );
    }

    #[test]
    fn a_kernel_name_in_two_sources_is_refused_naming_both() {
        let e = manifest(
            "demo",
            &[],
            &[cpu_kernel("k", "a.hip"), cpu_kernel("k", "b.hip")],
            &[],
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("`k` is defined in both `a.hip` and `b.hip`"),
            "{e}"
        );
    }
}
