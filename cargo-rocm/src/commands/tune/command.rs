//! Tuning an external program, as rocm-perf-lab's `autotune --cmd-template` does: each
//! configuration fills the placeholders of a command template (`./app --bm {BLOCK_M}`), the
//! command runs through `sh -c`, and its time is read from its output (`--time-key time_ms`
//! finds the number after the last `time_ms`, `=` or `:` between) or measured around it. A
//! non-zero exit status or a run past the time limit is a failed configuration, never chosen.

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use rocm_tune::{Config, EvalError, Evaluator, Measurement, Value};
use wait_timeout::ChildExt;

/// A space: each parameter with its values, and the restrictions.
pub type SpaceSpec = (Vec<(String, Vec<Value>)>, Vec<String>);

/// Parameters and restrictions of a space file: `{"BLOCK_M": [32, 64], "restrictions": […]}`
/// (rocm-perf-lab's flat form), or `{"parameters": {…}, "restrictions": […]}`.
pub fn parse_space(text: &str) -> Result<SpaceSpec, String> {
    let doc: serde_json::Value =
        serde_json::from_str(text).map_err(|e| format!("not valid JSON: {e}"))?;
    let obj = doc
        .as_object()
        .ok_or("expected a JSON object of parameter names and value lists")?;
    let params_obj = match obj.get("parameters") {
        Some(p) => p.as_object().ok_or("`parameters` must be an object")?,
        None => obj,
    };
    let mut params = Vec::new();
    for (name, values) in params_obj {
        if name == "restrictions" || name == "parameters" {
            continue;
        }
        let list = values
            .as_array()
            .ok_or_else(|| format!("parameter `{name}` must be a list of values"))?;
        let vals = list
            .iter()
            .map(|v| {
                Value::from_json(v).ok_or_else(|| {
                    format!("parameter `{name}`: `{v}` is not a number, string or bool")
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        params.push((name.clone(), vals));
    }
    let restrictions = match obj.get("restrictions") {
        None => Vec::new(),
        Some(r) => r
            .as_array()
            .ok_or("`restrictions` must be a list of expressions")?
            .iter()
            .map(|e| {
                e.as_str()
                    .map(str::to_owned)
                    .ok_or_else(|| format!("restriction `{e}` is not a string"))
            })
            .collect::<Result<_, _>>()?,
    };
    Ok((params, restrictions))
}

/// `NAME=v1,v2,v3` (integers, floats, `true`/`false`, else strings).
pub fn parse_param(arg: &str) -> Result<(String, Vec<Value>), String> {
    let (name, values) = arg
        .split_once('=')
        .ok_or_else(|| format!("`{arg}` is not NAME=v1,v2,…"))?;
    let vals: Vec<Value> = values
        .split(',')
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .map(|v| {
            if let Ok(i) = v.parse::<i64>() {
                Value::Int(i)
            } else if let Ok(f) = v.parse::<f64>() {
                Value::Float(f)
            } else if v == "true" || v == "false" {
                Value::Bool(v == "true")
            } else {
                Value::Str(v.to_owned())
            }
        })
        .collect();
    if name.trim().is_empty() || vals.is_empty() {
        return Err(format!("`{arg}` needs a name and at least one value"));
    }
    Ok((name.trim().to_owned(), vals))
}

/// The placeholders of a template: `{NAME}`.
pub fn placeholders(template: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = template;
    while let Some(start) = rest.find('{') {
        let after = &rest[start + 1..];
        match after.find('}') {
            Some(end) => {
                let name = &after[..end];
                if !name.is_empty()
                    && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                    && !out.iter().any(|n| n == name)
                {
                    out.push(name.to_owned());
                }
                rest = &after[end + 1..];
            }
            None => break,
        }
    }
    out
}

/// The template with each `{NAME}` replaced by the configuration's value.
pub fn fill(template: &str, config: &Config) -> String {
    let mut s = template.to_owned();
    for (name, value) in config.iter() {
        s = s.replace(&format!("{{{name}}}"), &value.to_string());
    }
    s
}

/// The number after the last `key` in `output` (`time_ms: 1.25`, `time_ms=1.25`).
pub fn time_from(output: &str, key: &str) -> Option<f64> {
    let at = output.rfind(key)?;
    let rest = output[at + key.len()..].trim_start_matches([' ', '\t', '=', ':']);
    let end = rest
        .find(|c: char| !(c.is_ascii_digit() || matches!(c, '.' | 'e' | 'E' | '-' | '+')))
        .unwrap_or(rest.len());
    rest[..end].parse().ok()
}

/// Runs a command template per configuration.
pub struct CommandEvaluator {
    pub template: String,
    pub time_key: Option<String>,
    pub iterations: u32,
    pub time_limit: Duration,
    /// Seconds the program reported (or ran), over every sample: its "kernel time".
    pub program_s: f64,
    pub measured: usize,
}

impl CommandEvaluator {
    /// One run: the time in ms, or why it failed.
    fn run_once(&mut self, command: &str) -> Result<f64, EvalError> {
        let started = Instant::now();
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(command)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| EvalError::Fatal(format!("cannot run `sh -c {command}`: {e}")))?;
        // Read both pipes on threads so a chatty program cannot block on a full pipe.
        let mut out = child.stdout.take().expect("piped");
        let mut err = child.stderr.take().expect("piped");
        let out_t = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = out.read_to_string(&mut s);
            s
        });
        let err_t = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = err.read_to_string(&mut s);
            s
        });
        let waited = child
            .wait_timeout(self.time_limit.saturating_sub(started.elapsed()))
            .map_err(|e| EvalError::Fatal(format!("waiting for `{command}`: {e}")))?;
        let Some(status) = waited else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(EvalError::Launch(format!(
                "`{command}` ran longer than the time limit ({:?}) and was killed",
                self.time_limit
            )));
        };
        let wall_ms = started.elapsed().as_secs_f64() * 1e3;
        let stdout = out_t.join().unwrap_or_default();
        let stderr = err_t.join().unwrap_or_default();
        if !status.success() {
            let tail: Vec<&str> = stderr.lines().rev().take(5).collect();
            return Err(EvalError::Launch(format!(
                "`{command}` exited with {status}: {}",
                tail.into_iter().rev().collect::<Vec<_>>().join(" | ")
            )));
        }
        let ms = match &self.time_key {
            None => wall_ms,
            Some(key) => time_from(&format!("{stdout}\n{stderr}"), key).ok_or_else(|| {
                EvalError::Launch(format!(
                    "`{command}` printed no number after `{key}` (its output ends: {})",
                    stdout.lines().last().unwrap_or("")
                ))
            })?,
        };
        self.program_s += ms / 1e3;
        Ok(ms)
    }
}

impl Evaluator for CommandEvaluator {
    fn evaluate(&mut self, config: &Config) -> Result<Measurement, EvalError> {
        let command = fill(&self.template, config);
        let times = (0..self.iterations.max(1))
            .map(|_| self.run_once(&command))
            .collect::<Result<Vec<f64>, _>>()?;
        self.measured += 1;
        Ok(Measurement::from_times(times))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spaces_params_and_templates() {
        let (p, r) =
            parse_space(r#"{"BM": [32, 64], "MODE": ["a", "b"], "restrictions": ["BM >= 32"]}"#)
                .unwrap();
        assert_eq!(p.len(), 2);
        assert_eq!(r, ["BM >= 32"]);
        let (p2, _) = parse_space(r#"{"parameters": {"BM": [1]}}"#).unwrap();
        assert_eq!(p2[0].0, "BM");
        assert!(parse_space("[1]").is_err());
        assert!(parse_space(r#"{"BM": 3}"#).unwrap_err().contains("list"));
        assert_eq!(
            parse_param("BM=16,32").unwrap(),
            ("BM".into(), vec![Value::Int(16), Value::Int(32)])
        );
        assert!(parse_param("BM").is_err());
        assert_eq!(
            placeholders("./app --bm {BM} --bn {BN} {BM} {not valid}"),
            ["BM", "BN"]
        );
        assert_eq!(time_from("x\ntime_ms: 1.5\n", "time_ms"), Some(1.5));
        assert_eq!(time_from("time_ms=2e-1 rest", "time_ms"), Some(0.2));
        assert_eq!(time_from("nothing", "time_ms"), None);
    }

    #[test]
    fn commands_run_fail_and_time_out() {
        let space = rocm_tune::SearchSpace::builder()
            .param("X", [1, 2])
            .build()
            .unwrap();
        let mut ev = CommandEvaluator {
            template: "echo time_ms={X}; test {X} -eq 1".into(),
            time_key: Some("time_ms".into()),
            iterations: 2,
            time_limit: Duration::from_secs(10),
            program_s: 0.0,
            measured: 0,
        };
        let ok = ev.evaluate(&space.config(space.id(0).unwrap())).unwrap();
        assert_eq!(ok.times, vec![1.0, 1.0]);
        let failed = ev.evaluate(&space.config(space.id(1).unwrap()));
        assert!(matches!(failed, Err(EvalError::Launch(m)) if m.contains("exited with")));
        ev.template = "sleep 5".into();
        ev.time_limit = Duration::from_millis(100);
        let hung = ev.evaluate(&space.config(space.id(0).unwrap()));
        assert!(matches!(hung, Err(EvalError::Launch(m)) if m.contains("time limit")));
    }
}
