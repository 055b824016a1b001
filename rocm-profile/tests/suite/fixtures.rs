//! Profiler output built by the tests, to the schemas the tools document: no AMD GPU is
//! available to this project, so the rocprofv3 readers are tested on rocpd databases and CSV
//! files written here from rocprofiler-sdk's schema files (`rocpd_tables.sql`, `data_views.sql`,
//! `rocpd_metadata.sql`) and its CSV writer, in the two layouts found in its history, with
//! columns this reader does not use added.

use std::path::Path;

use rusqlite::Connection;

/// One synthetic dispatch: kernel name as the tool prints it, start, duration, block, grid
/// (work-items), LDS, and a counter value.
pub struct Row {
    pub name: &'static str,
    pub start: i64,
    pub duration: i64,
    pub block: u32,
    pub grid_items: u64,
    pub lds: u32,
    pub waves: f64,
}

/// Two kernels, `saxpy` (20 dispatches of about 10 µs) and `block_sum` (10 of about 40 µs),
/// named as rocprofv3 prints them with `--mangled-kernels`.
pub fn rows() -> Vec<Row> {
    let mut out = Vec::new();
    let mut t = 1_000_000i64;
    for i in 0..30 {
        let (name, duration, block, lds) = if i % 3 == 2 {
            ("_Z9block_sumPKfPfi", 40_000 + (i % 5) * 100, 256, 1024)
        } else {
            ("_Z5saxpyifPKfPf", 10_000 + (i % 4) * 50, 256, 0)
        };
        out.push(Row {
            name,
            start: t,
            duration,
            block,
            grid_items: 1 << 20,
            lds,
            waves: 4096.0 + i as f64,
        });
        t += duration + 2_000;
    }
    out
}

/// The layout of the first rocpd releases (schema version "3"): `start`/`end` on the dispatch
/// table, `agent_abs_index` and `corr_id` in the `kernels` view, counters in `pmc_events` as
/// `counter_name`/`counter_value`.
pub fn rocpd_early(path: &Path, schema_version: &str) {
    let db = Connection::open(path).unwrap();
    db.execute_batch(
        "CREATE TABLE rocpd_metadata_u0 (id INTEGER PRIMARY KEY, tag TEXT NOT NULL, value TEXT NOT NULL);
         CREATE TABLE rocpd_info_agent_u0 (id INTEGER PRIMARY KEY, guid TEXT, type TEXT, absolute_index INTEGER, name TEXT, product_name TEXT);
         CREATE TABLE rocpd_info_kernel_symbol_u0 (id INTEGER PRIMARY KEY, guid TEXT, kernel_name TEXT, display_name TEXT, group_segment_size INTEGER, private_segment_size INTEGER, sgpr_count INTEGER, arch_vgpr_count INTEGER, accum_vgpr_count INTEGER);
         CREATE TABLE rocpd_kernel_dispatch_u0 (id INTEGER PRIMARY KEY, guid TEXT, nid INTEGER, pid INTEGER, tid INTEGER, agent_id INTEGER, kernel_id INTEGER, dispatch_id INTEGER, queue_id INTEGER, stream_id INTEGER, start BIGINT NOT NULL, end BIGINT NOT NULL, private_segment_size INTEGER, group_segment_size INTEGER, workgroup_size_x INTEGER, workgroup_size_y INTEGER, workgroup_size_z INTEGER, grid_size_x INTEGER, grid_size_y INTEGER, grid_size_z INTEGER, region_name_id INTEGER, event_id INTEGER);
         CREATE TABLE rocpd_info_pmc_u0 (id INTEGER PRIMARY KEY, guid TEXT, name TEXT NOT NULL);
         CREATE TABLE rocpd_pmc_event_u0 (id INTEGER PRIMARY KEY, guid TEXT, event_id INTEGER, pmc_id INTEGER, value REAL);
         CREATE VIEW rocpd_metadata AS SELECT * FROM rocpd_metadata_u0;
         CREATE VIEW rocpd_info_agent AS SELECT * FROM rocpd_info_agent_u0;
         CREATE VIEW rocpd_info_kernel_symbol AS SELECT * FROM rocpd_info_kernel_symbol_u0;
         CREATE VIEW rocpd_kernel_dispatch AS SELECT * FROM rocpd_kernel_dispatch_u0;
         CREATE VIEW rocpd_info_pmc AS SELECT * FROM rocpd_info_pmc_u0;
         CREATE VIEW rocpd_pmc_event AS SELECT * FROM rocpd_pmc_event_u0;
         CREATE VIEW kernels AS SELECT K.id, K.guid, K.tid, S.display_name AS name, K.nid, K.pid,
             A.absolute_index AS agent_abs_index, A.type AS agent_type, K.kernel_id, K.dispatch_id,
             K.stream_id, K.queue_id, K.start, K.end, (K.end - K.start) AS duration,
             K.grid_size_x AS grid_x, K.grid_size_y AS grid_y, K.grid_size_z AS grid_z,
             K.workgroup_size_x AS workgroup_x, K.workgroup_size_y AS workgroup_y, K.workgroup_size_z AS workgroup_z,
             K.group_segment_size AS lds_size, K.private_segment_size AS scratch_size,
             S.group_segment_size AS static_lds_size, S.private_segment_size AS static_scratch_size,
             K.event_id AS corr_id
           FROM rocpd_kernel_dispatch K
           INNER JOIN rocpd_info_agent A ON A.id = K.agent_id
           INNER JOIN rocpd_info_kernel_symbol S ON S.id = K.kernel_id;
         CREATE VIEW pmc_events AS SELECT E.id, E.guid, E.pmc_id, E.event_id, S.display_name AS name,
             K.dispatch_id, K.start, K.end, I.name AS counter_name, E.value AS counter_value
           FROM rocpd_pmc_event E
           INNER JOIN rocpd_info_pmc I ON I.id = E.pmc_id
           INNER JOIN rocpd_kernel_dispatch K ON K.event_id = E.event_id
           INNER JOIN rocpd_info_kernel_symbol S ON S.id = K.kernel_id;",
    )
    .unwrap();
    db.execute(
        "INSERT INTO rocpd_metadata_u0 (tag, value) VALUES ('schema_version', ?1), ('uuid', 'u0')",
        [schema_version],
    )
    .unwrap();
    db.execute_batch(
        "INSERT INTO rocpd_info_agent_u0 VALUES (1, 'g', 'CPU', 0, 'AMD EPYC', 'AMD EPYC'), (2, 'g', 'GPU', 1, 'gfx90a', 'AMD Instinct MI210');
         INSERT INTO rocpd_info_pmc_u0 VALUES (1, 'g', 'SQ_WAVES');",
    )
    .unwrap();
    let mut symbols: Vec<&str> = Vec::new();
    for (i, r) in rows().iter().enumerate() {
        let kernel = kernel_id(&db, "rocpd_info_kernel_symbol_u0", &mut symbols, r);
        db.execute(
            "INSERT INTO rocpd_kernel_dispatch_u0 (guid, nid, pid, tid, agent_id, kernel_id, dispatch_id, queue_id, stream_id, start, end, private_segment_size, group_segment_size, workgroup_size_x, workgroup_size_y, workgroup_size_z, grid_size_x, grid_size_y, grid_size_z, event_id) VALUES ('g', 1, 1, 1, 2, ?1, ?2, 1, 0, ?3, ?4, 0, ?5, ?6, 1, 1, ?7, 1, 1, ?8)",
            rusqlite::params![kernel, (i + 1) as i64, r.start, r.start + r.duration, r.lds, r.block, r.grid_items as i64, (100 + i) as i64],
        )
        .unwrap();
        db.execute(
            "INSERT INTO rocpd_pmc_event_u0 (guid, event_id, pmc_id, value) VALUES ('g', ?1, 1, ?2)",
            rusqlite::params![(100 + i) as i64, r.waves],
        )
        .unwrap();
    }
}

/// The later layout: timestamps in `rocpd_timestamp`, tracks for agents, `sgpr_count` and
/// friends in the `kernels` view, a full version string with `schema_version_major`, counters
/// in `kernel_pmc_events` as `pmc_name`/`pmc_value` (and a `pmc_events` view without a dispatch
/// id), and columns this reader does not know.
pub fn rocpd_late(path: &Path) {
    let db = Connection::open(path).unwrap();
    db.execute_batch(
        "CREATE TABLE rocpd_metadata_u1 (id INTEGER PRIMARY KEY, tag TEXT NOT NULL, value TEXT NOT NULL);
         CREATE TABLE rocpd_info_agent_u1 (id INTEGER PRIMARY KEY, guid TEXT, type TEXT, absolute_index INTEGER, logical_index INTEGER, name TEXT, product_name TEXT, extdata TEXT);
         CREATE TABLE rocpd_info_kernel_symbol_u1 (id INTEGER PRIMARY KEY, guid TEXT, kernel_name TEXT, display_name TEXT, group_segment_size INTEGER, private_segment_size INTEGER, sgpr_count INTEGER, arch_vgpr_count INTEGER, accum_vgpr_count INTEGER);
         CREATE TABLE rocpd_track_u1 (id INTEGER PRIMARY KEY, guid TEXT, agent_id INTEGER, queue_id INTEGER);
         CREATE TABLE rocpd_timestamp_u1 (id INTEGER PRIMARY KEY, guid TEXT, value BIGINT NOT NULL, phase INTEGER, track_id INTEGER);
         CREATE TABLE rocpd_kernel_dispatch_u1 (id INTEGER PRIMARY KEY, guid TEXT, track_id INTEGER, kernel_id INTEGER, dispatch_id INTEGER, start_id INTEGER, end_id INTEGER, private_segment_size INTEGER, group_segment_size INTEGER, workgroup_size_x INTEGER, workgroup_size_y INTEGER, workgroup_size_z INTEGER, grid_size_x INTEGER, grid_size_y INTEGER, grid_size_z INTEGER, region_name_id INTEGER, event_id INTEGER, extdata TEXT);
         CREATE TABLE rocpd_info_pmc_u1 (id INTEGER PRIMARY KEY, guid TEXT, name TEXT NOT NULL, symbol TEXT);
         CREATE TABLE rocpd_pmc_event_u1 (id INTEGER PRIMARY KEY, guid TEXT, event_id INTEGER, pmc_id INTEGER, value REAL);
         CREATE VIEW rocpd_metadata AS SELECT * FROM rocpd_metadata_u1;
         CREATE VIEW rocpd_info_agent AS SELECT * FROM rocpd_info_agent_u1;
         CREATE VIEW rocpd_info_kernel_symbol AS SELECT * FROM rocpd_info_kernel_symbol_u1;
         CREATE VIEW rocpd_track AS SELECT * FROM rocpd_track_u1;
         CREATE VIEW rocpd_timestamp AS SELECT * FROM rocpd_timestamp_u1;
         CREATE VIEW rocpd_kernel_dispatch AS SELECT * FROM rocpd_kernel_dispatch_u1;
         CREATE VIEW rocpd_info_pmc AS SELECT * FROM rocpd_info_pmc_u1;
         CREATE VIEW rocpd_pmc_event AS SELECT * FROM rocpd_pmc_event_u1;
         CREATE VIEW kernels AS SELECT K.id, K.guid, 'KERNEL_DISPATCH' AS category, S.display_name AS name,
             T.agent_id, A.absolute_index AS agent_absolute_index, A.logical_index AS agent_logical_index,
             NULL AS code_object_id, K.kernel_id, K.dispatch_id,
             T.queue_id, DS.value AS start, DE.value AS end, (DE.value - DS.value) AS duration,
             K.event_id, K.track_id,
             K.grid_size_x AS grid_x, K.grid_size_y AS grid_y, K.grid_size_z AS grid_z,
             K.workgroup_size_x AS workgroup_x, K.workgroup_size_y AS workgroup_y, K.workgroup_size_z AS workgroup_z,
             K.group_segment_size AS lds_size, K.private_segment_size AS scratch_size,
             S.arch_vgpr_count AS vgpr_count, S.accum_vgpr_count, S.sgpr_count,
             S.group_segment_size AS static_lds_size, S.private_segment_size AS static_scratch_size,
             K.event_id AS correlation_id, K.extdata
           FROM rocpd_kernel_dispatch K
           INNER JOIN rocpd_track T ON T.id = K.track_id
           INNER JOIN rocpd_info_agent A ON A.id = T.agent_id
           INNER JOIN rocpd_info_kernel_symbol S ON S.id = K.kernel_id
           INNER JOIN rocpd_timestamp DS ON DS.id = K.start_id
           INNER JOIN rocpd_timestamp DE ON DE.id = K.end_id;
         CREATE VIEW pmc_events AS SELECT E.id, E.guid, E.pmc_id, E.event_id, I.name, I.symbol, E.value
           FROM rocpd_pmc_event E INNER JOIN rocpd_info_pmc I ON I.id = E.pmc_id;
         CREATE VIEW kernel_pmc_events AS SELECT K.id, K.name, K.dispatch_id, K.start, K.end, K.duration,
             E.pmc_id, E.name AS pmc_name, E.symbol AS pmc_symbol, E.value AS pmc_value
           FROM kernels K INNER JOIN pmc_events E ON E.event_id = K.event_id;",
    )
    .unwrap();
    db.execute_batch(
        "INSERT INTO rocpd_metadata_u1 (tag, value) VALUES ('schema_version', '3.1.0'), ('schema_version_major', '3'), ('schema_version_minor', '1'), ('uuid', 'u1');
         INSERT INTO rocpd_info_agent_u1 VALUES (1, 'g', 'CPU', 0, 0, 'AMD EPYC', 'AMD EPYC', '{}'), (2, 'g', 'GPU', 1, 0, 'gfx90a', 'AMD Instinct MI210', '{}');
         INSERT INTO rocpd_track_u1 VALUES (1, 'g', 2, 1);
         INSERT INTO rocpd_info_pmc_u1 VALUES (1, 'g', 'SQ_WAVES', 'SQ_WAVES');",
    )
    .unwrap();
    let mut symbols: Vec<&str> = Vec::new();
    for (i, r) in rows().iter().enumerate() {
        let kernel = kernel_id(&db, "rocpd_info_kernel_symbol_u1", &mut symbols, r);
        let (s, e) = (2 * i as i64 + 1, 2 * i as i64 + 2);
        db.execute(
            "INSERT INTO rocpd_timestamp_u1 (id, guid, value, phase, track_id) VALUES (?1, 'g', ?2, 1, 1), (?3, 'g', ?4, 2, 1)",
            rusqlite::params![s, r.start, e, r.start + r.duration],
        )
        .unwrap();
        db.execute(
            "INSERT INTO rocpd_kernel_dispatch_u1 (guid, track_id, kernel_id, dispatch_id, start_id, end_id, private_segment_size, group_segment_size, workgroup_size_x, workgroup_size_y, workgroup_size_z, grid_size_x, grid_size_y, grid_size_z, event_id, extdata) VALUES ('g', 1, ?1, ?2, ?3, ?4, 0, ?5, ?6, 1, 1, ?7, 1, 1, ?8, '{}')",
            rusqlite::params![kernel, (i + 1) as i64, s, e, r.lds, r.block, r.grid_items as i64, (100 + i) as i64],
        )
        .unwrap();
        db.execute(
            "INSERT INTO rocpd_pmc_event_u1 (guid, event_id, pmc_id, value) VALUES ('g', ?1, 1, ?2)",
            rusqlite::params![(100 + i) as i64, r.waves],
        )
        .unwrap();
    }
}

/// `kernel_trace.csv` as rocprofiler-sdk 0.5 (ROCm 6.3) writes it, demangled names with
/// parameter lists.
pub fn csv_early(dir: &Path) {
    let mut t = String::from("\"Kind\",\"Agent_Id\",\"Queue_Id\",\"Thread_Id\",\"Dispatch_Id\",\"Kernel_Id\",\"Kernel_Name\",\"Correlation_Id\",\"Start_Timestamp\",\"End_Timestamp\",\"Private_Segment_Size\",\"Group_Segment_Size\",\"Workgroup_Size_X\",\"Workgroup_Size_Y\",\"Workgroup_Size_Z\",\"Grid_Size_X\",\"Grid_Size_Y\",\"Grid_Size_Z\"\n");
    for (i, r) in rows().iter().enumerate() {
        let name = demangled(r.name);
        t += &format!(
            "\"KERNEL_DISPATCH\",4,1,77,{},{},\"{name}\",{},{},{},0,{},{},1,1,{},1,1\n",
            i + 1,
            if r.lds > 0 { 2 } else { 1 },
            i + 1,
            r.start,
            r.start + r.duration,
            r.lds,
            r.block,
            r.grid_items
        );
    }
    std::fs::write(dir.join("1234_kernel_trace.csv"), t).unwrap();
    let mut c = String::from("\"Correlation_Id\",\"Dispatch_Id\",\"Agent_Id\",\"Queue_Id\",\"Process_Id\",\"Thread_Id\",\"Grid_Size\",\"Kernel_Id\",\"Kernel_Name\",\"Workgroup_Size\",\"LDS_Block_Size\",\"Scratch_Size\",\"VGPR_Count\",\"SGPR_Count\",\"Counter_Name\",\"Counter_Value\"\n");
    for (i, r) in rows().iter().enumerate() {
        c += &format!(
            "{},{},4,1,1234,77,{},1,\"{}\",{},{},0,8,16,\"SQ_WAVES\",{}\n",
            i + 1,
            i + 1,
            r.grid_items,
            demangled(r.name),
            r.block,
            r.lds,
            r.waves
        );
    }
    std::fs::write(dir.join("1234_counter_collection.csv"), c).unwrap();
}

/// `kernel_trace.csv` as later releases write it: `Stream_Id`, register counts, renamed LDS and
/// scratch columns, columns in another order, mangled names.
pub fn csv_late(dir: &Path) {
    let mut t = String::from("\"Kind\",\"Agent_Id\",\"Queue_Id\",\"Stream_Id\",\"Thread_Id\",\"Dispatch_Id\",\"Kernel_Id\",\"Kernel_Name\",\"Correlation_Id\",\"Start_Timestamp\",\"End_Timestamp\",\"LDS_Block_Size\",\"Scratch_Size\",\"VGPR_Count\",\"Accum_VGPR_Count\",\"SGPR_Count\",\"Workgroup_Size_X\",\"Workgroup_Size_Y\",\"Workgroup_Size_Z\",\"Grid_Size_X\",\"Grid_Size_Y\",\"Grid_Size_Z\"\n");
    for (i, r) in rows().iter().enumerate() {
        t += &format!(
            "\"KERNEL_DISPATCH\",\"Agent 4\",1,0,77,{},1,\"{}\",{},{},{},{},0,8,0,16,{},1,1,{},1,1\n",
            i + 1,
            r.name,
            i + 1,
            r.start,
            r.start + r.duration,
            r.lds,
            r.block,
            r.grid_items
        );
    }
    std::fs::write(dir.join("host_5678_kernel_trace.csv"), t).unwrap();
    std::fs::write(
        dir.join("host_5678_agent_info.csv"),
        "\"Node_Id\",\"Logical_Node_Id\",\"Agent_Type\",\"Name\",\"Product_Name\"\n0,0,\"CPU\",\"AMD EPYC\",\"AMD EPYC\"\n1,1,\"GPU\",\"gfx90a\",\"AMD Instinct MI210\"\n",
    )
    .unwrap();
}

/// The id of a row's kernel in a `rocpd_info_kernel_symbol` table, inserting it the first time.
fn kernel_id(db: &Connection, table: &str, symbols: &mut Vec<&'static str>, r: &Row) -> i64 {
    if let Some(k) = symbols.iter().position(|s| *s == r.name) {
        return k as i64 + 1;
    }
    symbols.push(r.name);
    db.execute(
        &format!("INSERT INTO {table} (id, guid, kernel_name, display_name, group_segment_size, private_segment_size) VALUES (?1, 'g', ?2, ?2, ?3, 0)"),
        rusqlite::params![symbols.len() as i64, r.name, r.lds],
    )
    .unwrap();
    symbols.len() as i64
}

fn demangled(symbol: &str) -> &'static str {
    match symbol {
        "_Z5saxpyifPKfPf" => "saxpy(int, float, float const*, float*)",
        _ => "block_sum(float const*, float*, int)",
    }
}

/// ncu's CSV (details page, long format) for the same two kernels, with `==PROF==` chatter.
pub fn ncu_csv() -> String {
    let mut s = String::from("==PROF== Connected to process 4242 (/x/bench)\n\"ID\",\"Process ID\",\"Process Name\",\"Host Name\",\"Kernel Name\",\"Context\",\"Stream\",\"Block Size\",\"Grid Size\",\"Device\",\"CC\",\"Section Name\",\"Metric Name\",\"Metric Unit\",\"Metric Value\"\n");
    for (i, r) in rows().iter().enumerate() {
        let pre = format!(
            "\"{i}\",\"4242\",\"bench\",\"127.0.0.1\",\"{}\",\"1\",\"7\",\"({}, 1, 1)\",\"({}, 1, 1)\",\"0\",\"9.0\",\"Command line profiler metrics\"",
            r.name,
            r.block,
            r.grid_items / u64::from(r.block)
        );
        s += &format!(
            "{pre},\"gpu__time_duration.sum\",\"usecond\",\"{:.3}\"\n",
            r.duration as f64 / 1e3
        );
        s += &format!("{pre},\"launch__registers_per_thread\",\"register/thread\",\"16\"\n");
        s += &format!("{pre},\"sm__maximum_warps_per_active_cycle_pct\",\"%\",\"100\"\n");
        s += &format!("{pre},\"dram__bytes.sum\",\"Mbyte\",\"12.58\"\n");
    }
    s += "==PROF== Disconnected from process 4242\n";
    s
}
