//! The end of a run: the table on stdout, ratios between targets, the machine's state, and the
//! medians of several runs (`summarize`).

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::Context as _;
use serde_json::{Map, Value, json};

use crate::common::{median, round2};

fn cell(v: &Value) -> String {
    match v {
        Value::Null => "n/a".into(),
        Value::String(s) => s.clone(),
        Value::Array(a) => a.iter().map(cell).collect::<Vec<_>>().join(", "),
        other => other.to_string(),
    }
}

/// Prints the summary as a Markdown table: one column per target when it has several.
pub fn table(summary: &Value) {
    println!();
    if let Some(targets) = summary["targets"].as_array() {
        let names: Vec<String> = targets.iter().map(|t| cell(&t["target"])).collect();
        println!("| {} | {} |", summary["scenario"].as_str().unwrap_or("measure"), names.join(" | "));
        println!("|---|{}", "---|".repeat(names.len()));
        let mut keys: Vec<&String> = Vec::new();
        for t in targets {
            for k in t.as_object().into_iter().flat_map(Map::keys) {
                if k != "target" && !keys.contains(&k) {
                    keys.push(k);
                }
            }
        }
        for k in keys {
            let row: Vec<String> = targets.iter().map(|t| cell(&t[k.as_str()])).collect();
            println!("| {k} | {} |", row.join(" | "));
        }
        if let Some(ratios) = summary["ratios"].as_object().filter(|r| !r.is_empty()) {
            println!("\n| ratio | value |\n|---|---|");
            for (k, v) in ratios {
                println!("| {k} | {} |", cell(v));
            }
        }
    } else if let Some(obj) = summary.as_object() {
        println!("| measure | value |\n|---|---|");
        for (k, v) in obj {
            if k != "machine" {
                println!("| {k} | {} |", cell(v));
            }
        }
    }
    if let Some(m) = summary.get("machine") {
        println!("\nmachine: {m}");
    }
    println!();
}

fn ratio(a: &Value, b: &Value) -> Value {
    match (a.as_f64(), b.as_f64()) {
        (Some(a), Some(b)) if b > 0.0 => json!(round2(a / b)),
        _ => Value::Null,
    }
}

/// Wraps the per-target results of a socket scenario with the ratios that PERFORMANCE.md asks for.
pub fn with_ratios(scenario: &str, results: Vec<Value>) -> Value {
    let by = |name: &str| results.iter().find(|r| r["target"] == name).cloned().unwrap_or(Value::Null);
    let (agora, baseline, rails) = (by("agora"), by("baseline"), by("rails"));
    let mut ratios = Map::new();
    let mut put = |k: &str, v: Value| {
        if !v.is_null() {
            ratios.insert(k.to_owned(), v);
        }
    };
    put(
        "agora_to_baseline_deliveries_per_cpu_second",
        ratio(&agora["deliveries_per_cpu_second"], &baseline["deliveries_per_cpu_second"]),
    );
    put(
        "agora_to_baseline_deliveries_per_second",
        ratio(&agora["deliveries_per_second"], &baseline["deliveries_per_second"]),
    );
    // In `connections` the percentiles are connect times; in `fanout`, post-to-receive latency.
    let p = if scenario == "connections" { "connect_" } else { "" };
    put(&format!("agora_to_baseline_{p}p50"), ratio(&agora["p50_ms"], &baseline["p50_ms"]));
    put(
        "agora_to_baseline_kib_per_socket",
        ratio(&agora["kib_per_idle_socket"], &baseline["kib_per_idle_socket"]),
    );
    put(&format!("rails_to_agora_{p}p50"), ratio(&rails["p50_ms"], &agora["p50_ms"]));
    put(&format!("rails_to_agora_{p}p95"), ratio(&rails["p95_ms"], &agora["p95_ms"]));
    put("rails_to_agora_kib_per_socket", ratio(&rails["kib_per_idle_socket"], &agora["kib_per_idle_socket"]));
    put(
        "agora_to_rails_deliveries_per_second",
        ratio(&agora["deliveries_per_second"], &rails["deliveries_per_second"]),
    );
    put(
        "agora_to_rails_deliveries_per_cpu_second",
        ratio(&agora["deliveries_per_cpu_second"], &rails["deliveries_per_cpu_second"]),
    );
    json!({ "scenario": scenario, "targets": results, "ratios": ratios })
}

/// The machine's state during the run: load averages, CPUs, pinning, time.
pub fn machine(server_cpus: &Option<String>, client_cpus: &Option<String>) -> Value {
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let load: Vec<&str> = load.split_whitespace().take(3).collect();
    let at =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    json!({
        "cpus": std::fs::read_to_string("/proc/cpuinfo").map(|c| c.lines().filter(|l| l.starts_with("processor")).count()).unwrap_or(0),
        "load_1_5_15": load.join(" "), "server_cpus": server_cpus, "client_cpus": client_cpus, "unix_time": at,
    })
}

/// What identifies a row across runs: scenario, target and the sizes that change its meaning.
fn group_key(doc: &Value, row: &Value) -> String {
    let mut key = cell(&doc["scenario"]);
    for k in ["target", "sockets", "concurrency", "posters", "channels", "bots", "writers", "rate"] {
        if let Some(v) = row.get(k).filter(|v| !v.is_null()) {
            key.push_str(&format!(" {k}={}", cell(v)));
        }
    }
    key
}

/// Medians of every numeric field per scenario and target over the summaries in `files`.
pub fn summarize(files: &[PathBuf]) -> anyhow::Result<Value> {
    let mut groups: BTreeMap<String, BTreeMap<String, Vec<f64>>> = BTreeMap::new();
    let mut oks: BTreeMap<String, Vec<bool>> = BTreeMap::new();
    let mut add = |key: String, row: &Value| {
        let g = groups.entry(key.clone()).or_default();
        for (k, v) in row.as_object().into_iter().flatten() {
            if let Some(x) = v.as_f64() {
                g.entry(k.clone()).or_default().push(x);
            }
        }
        if let Some(ok) = row["ok"].as_bool() {
            oks.entry(key).or_default().push(ok);
        }
    };
    for f in files {
        let text = std::fs::read_to_string(f).with_context(|| format!("reading {}", f.display()))?;
        for line in text.lines().filter(|l| l.trim_start().starts_with('{')) {
            let doc: Value =
                serde_json::from_str(line).with_context(|| format!("a summary in {}", f.display()))?;
            match doc["targets"].as_array() {
                Some(targets) => {
                    for t in targets {
                        add(group_key(&doc, t), t);
                    }
                    let sockets = targets.first().map(|t| t["sockets"].clone()).unwrap_or(Value::Null);
                    add(
                        format!("{} ratios sockets={}", cell(&doc["scenario"]), cell(&sockets)),
                        &doc["ratios"],
                    );
                }
                None => add(group_key(&doc, &doc), &doc),
            }
        }
    }
    let mut out = Map::new();
    for (key, fields) in &mut groups {
        let runs = fields.values().map(Vec::len).max().unwrap_or(0);
        if runs == 0 {
            continue;
        }
        println!("\n### {key} (median of {runs} runs)\n\n| measure | median | runs |\n|---|---|---|");
        let mut medians = Map::new();
        for (k, values) in fields.iter_mut() {
            let shown: Vec<String> = values.iter().map(|v| format!("{v}")).collect();
            let m = median(values).map(round2);
            println!("| {k} | {} | {} |", m.map_or("n/a".into(), |m| m.to_string()), shown.join(", "));
            medians.insert(k.clone(), json!(m));
        }
        if let Some(o) = oks.get(key) {
            let all = o.iter().all(|b| *b);
            println!("| all runs ok | {all} | |");
            medians.insert("all_ok".into(), json!(all));
        }
        out.insert(key.clone(), Value::Object(medians));
    }
    Ok(json!({ "scenario": "summarize", "medians": out }))
}
