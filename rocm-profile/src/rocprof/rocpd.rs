//! rocprofv3's rocpd SQLite database, read through its views by name.
//!
//! The schema as rocprofiler-sdk's sources describe it (`rocpd_tables.sql`, `rocpd_views.sql`,
//! `data_views.sql`, `rocpd_metadata.sql`):
//!
//! - `rocpd_metadata` (a view over `rocpd_metadata<uuid>`): `tag`, `value` rows; the tag
//!   `schema_version` holds `3` in the releases read here, and a full version string
//!   (`3.1.0`) with `schema_version_major` beside it in later sources.
//! - `kernels`: one row per dispatch with `name`, `start`, `end`, `duration`, `dispatch_id`,
//!   `grid_x/y/z` (work-items), `workgroup_x/y/z`, `lds_size` (LDS of the dispatch),
//!   `static_lds_size`, ... Two layouts exist under schema 3: an earlier one whose
//!   `rocpd_kernel_dispatch` table has `start`/`end` columns, and a later one with
//!   `start_id`/`end_id` into `rocpd_timestamp` and `sgpr_count`/`arch_vgpr_count` in the view.
//!   Both `kernels` views have the columns read here.
//! - counters: `kernel_pmc_events` (later: `dispatch_id`, `pmc_name`, `pmc_value`) or
//!   `pmc_events` (earlier: `dispatch_id`, `counter_name`, `counter_value`).
//! - `rocpd_info_agent`: `type` (`GPU`), `name` (`gfx942`), `product_name`.
//!
//! Columns are looked up by name (`PRAGMA table_info`), so added columns change nothing; a view
//! or column this reader needs and does not find is an error naming it.

use std::collections::HashMap;
use std::path::Path;

use rocm_kernels_core::Backend;
use rusqlite::{Connection, OpenFlags};

use crate::dispatch::{kernel_name, Collected, Dispatch};
use crate::error::ProfileError;

/// The schema major versions this reader knows.
pub(crate) const SCHEMA_MAJORS: &[u32] = &[3];

/// Read one rocpd database.
pub fn read(path: &Path) -> Result<Collected, ProfileError> {
    let sql = |source| ProfileError::Sqlite {
        path: path.to_owned(),
        source,
    };
    let db = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(sql)?;
    let not_rocpd = |what: &str| {
        ProfileError::malformed(
            path,
            format!("not a rocpd database: it has no {what} (was it written by rocprofv3 --output-format rocpd?)"),
        )
    };
    if !has_object(&db, "rocpd_metadata").map_err(sql)? {
        return Err(not_rocpd("`rocpd_metadata` view"));
    }
    let version = schema_version(&db)
        .map_err(sql)?
        .ok_or_else(|| not_rocpd("`schema_version` in `rocpd_metadata`"))?;
    let major: Option<u32> = version
        .split('.')
        .next()
        .and_then(|m| m.trim().parse().ok());
    if !major.is_some_and(|m| SCHEMA_MAJORS.contains(&m)) {
        return Err(ProfileError::UnknownSchemaVersion {
            path: path.to_owned(),
            found: version,
            supported: SCHEMA_MAJORS
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(", "),
        });
    }
    if !has_object(&db, "kernels").map_err(sql)? {
        return Err(not_rocpd("`kernels` view"));
    }
    let columns = columns_of(&db, "kernels").map_err(sql)?;
    let need = |c: &str| -> Result<String, ProfileError> {
        if columns.iter().any(|x| x == c) {
            Ok(format!("\"{c}\""))
        } else {
            Err(ProfileError::MissingColumn {
                path: path.to_owned(),
                wanted: format!("`{c}` in the `kernels` view"),
                found: columns.join(", "),
            })
        }
    };
    let optional = |c: &str| -> String {
        if columns.iter().any(|x| x == c) {
            format!("\"{c}\"")
        } else {
            "NULL".to_owned()
        }
    };
    let query = format!(
        "SELECT {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {} FROM kernels ORDER BY {}",
        need("name")?,
        need("start")?,
        need("end")?,
        optional("dispatch_id"),
        optional("grid_x"),
        optional("grid_y"),
        optional("grid_z"),
        optional("workgroup_x"),
        optional("workgroup_y"),
        optional("workgroup_z"),
        optional("lds_size"),
        need("start")?,
    );
    let mut out = Collected::new(
        "rocprofv3",
        format!("rocpd database, schema {version}"),
        Backend::Amd,
    );
    let mut by_dispatch: HashMap<i64, usize> = HashMap::new();
    {
        let mut stmt = db.prepare(&query).map_err(sql)?;
        let mut rows = stmt.query([]).map_err(sql)?;
        while let Some(row) = rows.next().map_err(sql)? {
            let name: String = row.get(0).map_err(sql)?;
            let start: i64 = row.get(1).map_err(sql)?;
            let end: i64 = row.get(2).map_err(sql)?;
            let int = |i: usize| row.get::<_, Option<i64>>(i).ok().flatten();
            let mut d = Dispatch::new(kernel_name(&name), (end - start).max(0) as f64);
            d.start_ns = u64::try_from(start).ok();
            let wg = [int(7), int(8), int(9)];
            if let [Some(x), Some(y), Some(z)] = wg {
                let block = [x, y, z].map(|v| u32::try_from(v).unwrap_or(0));
                d.block = Some(block);
                if let [Some(gx), Some(gy), Some(gz)] = [int(4), int(5), int(6)] {
                    d.grid = Some([
                        super::blocks(gx.max(0) as u64, block[0]),
                        super::blocks(gy.max(0) as u64, block[1]),
                        super::blocks(gz.max(0) as u64, block[2]),
                    ]);
                }
            }
            d.shared_bytes = int(10).and_then(|v| u32::try_from(v).ok());
            if let Some(id) = int(3) {
                by_dispatch.insert(id, out.dispatches.len());
            }
            out.dispatches.push(d);
        }
    }
    read_counters(&db, path, &by_dispatch, &mut out).map_err(sql)?;
    read_agent(&db, &mut out).map_err(sql)?;
    Ok(out)
}

fn has_object(db: &Connection, name: &str) -> rusqlite::Result<bool> {
    db.query_row(
        "SELECT COUNT(*) FROM sqlite_master WHERE name = ?1 AND type IN ('view', 'table')",
        [name],
        |r| r.get::<_, i64>(0),
    )
    .map(|n| n > 0)
}

fn columns_of(db: &Connection, name: &str) -> rusqlite::Result<Vec<String>> {
    let mut stmt = db.prepare(&format!("PRAGMA table_info(\"{name}\")"))?;
    let names = stmt.query_map([], |r| r.get::<_, String>(1))?;
    names.collect()
}

/// `schema_version_major` where present, else `schema_version`.
fn schema_version(db: &Connection) -> rusqlite::Result<Option<String>> {
    let tag = |t: &str| -> rusqlite::Result<Option<String>> {
        let mut stmt = db.prepare("SELECT value FROM rocpd_metadata WHERE tag = ?1")?;
        let mut rows = stmt.query([t])?;
        Ok(match rows.next()? {
            Some(r) => Some(r.get::<_, rusqlite::types::Value>(0).map(|v| match v {
                rusqlite::types::Value::Integer(i) => i.to_string(),
                rusqlite::types::Value::Real(f) => f.to_string(),
                rusqlite::types::Value::Text(t) => t,
                _ => String::new(),
            })?),
            None => None,
        })
    };
    let full = tag("schema_version")?;
    Ok(match (tag("schema_version_major")?, full) {
        (Some(major), Some(full)) if !full.starts_with(major.as_str()) => {
            Some(format!("{major} ({full})"))
        }
        (_, Some(full)) => Some(full),
        (major, None) => major,
    })
}

/// Counters, joined to their dispatch by `dispatch_id`.
fn read_counters(
    db: &Connection,
    path: &Path,
    by_dispatch: &HashMap<i64, usize>,
    out: &mut Collected,
) -> rusqlite::Result<()> {
    for (view, name, value) in [
        ("kernel_pmc_events", "pmc_name", "pmc_value"),
        ("pmc_events", "counter_name", "counter_value"),
    ] {
        if !has_object(db, view)? {
            continue;
        }
        let columns = columns_of(db, view)?;
        if ![name, value, "dispatch_id"]
            .iter()
            .all(|c| columns.iter().any(|x| x == c))
        {
            continue;
        }
        let mut stmt = db.prepare(&format!(
            "SELECT dispatch_id, \"{name}\", \"{value}\" FROM \"{view}\""
        ))?;
        let mut rows = stmt.query([])?;
        let mut orphans = 0;
        while let Some(row) = rows.next()? {
            let id: i64 = row.get(0)?;
            let counter: String = row.get(1)?;
            let v: f64 = row.get::<_, Option<f64>>(2)?.unwrap_or(f64::NAN);
            match by_dispatch.get(&id) {
                Some(&i) => {
                    *out.dispatches[i].counters.entry(counter).or_insert(0.0) += v;
                }
                None => orphans += 1,
            }
        }
        if orphans > 0 {
            out.notes.push(format!(
                "{}: {orphans} counter value(s) name a dispatch the `kernels` view does not list; they are left out",
                path.display()
            ));
        }
        return Ok(());
    }
    Ok(())
}

fn read_agent(db: &Connection, out: &mut Collected) -> rusqlite::Result<()> {
    if !has_object(db, "rocpd_info_agent")? {
        return Ok(());
    }
    let columns = columns_of(db, "rocpd_info_agent")?;
    let has = |c: &str| columns.iter().any(|x| x == c);
    if !(has("type") && has("name")) {
        return Ok(());
    }
    let product = if has("product_name") {
        "product_name"
    } else {
        "name"
    };
    let mut stmt = db.prepare(&format!(
        "SELECT name, \"{product}\" FROM rocpd_info_agent WHERE type = 'GPU' ORDER BY id"
    ))?;
    let mut rows = stmt.query([])?;
    if let Some(row) = rows.next()? {
        out.arch = row.get::<_, Option<String>>(0)?;
        out.device = row.get::<_, Option<String>>(1)?;
    }
    Ok(())
}
